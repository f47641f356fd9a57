// Builds web/dist: the two benchtop plugin components (target/plugins/*.wasm,
// exactly as the MCP server loads them) transpiled by jco into ES modules,
// the preview2-shim's browser build vendored beside them, the page's own
// modules, and the bundled samples. Prints the transpiled modules' sizes.
import { gzipSync } from "node:zlib";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { transpile } from "@bytecodealliance/jco-transpile";

const web = dirname(fileURLToPath(import.meta.url));
const repo = join(web, "..");
const dist = join(web, "dist");
const plugins = process.env.BENCHTOP_PLUGINS_DIR || join(repo, "target", "plugins");
const components = ["cp1600", "x86_inspect"];

for (const name of components) {
    const wasm = join(plugins, `${name}.wasm`);
    if (!existsSync(wasm)) {
        console.error(`web: ${wasm} is missing; build the plugins first (make plugins)`);
        process.exit(1);
    }
}
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

// 1. The components, transpiled by jco (its transpile library, the code
//    behind `jco transpile`). `instantiation: "async"` makes each module a
//    factory taking its imports, so the page supplies WASI (the shim, with its
//    own in-memory filesystem) and benchtop:host (progress, log, caller) itself.
for (const name of components) {
    const out = join(dist, "gen", name);
    const { files } = await transpile(join(plugins, `${name}.wasm`), {
        name, outDir: out, instantiation: "async", minify: true,
    });
    for (const [path, bytes] of Object.entries(files)) {
        // Type declarations are of no use to the page.
        if (path.endsWith(".d.ts")) continue;
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, bytes);
    }
}

// 1b. Each component's `@key` tags, from its WIT (the single source): the
//     page spells typed results with them, as the host does.
for (const name of components) {
    const wit = readFileSync(join(repo, "wit", name.replace(/_/g, "-"), `${name.replace(/_/g, "-")}.wit`), "utf8");
    writeFileSync(join(dist, "gen", name, "keys.json"), JSON.stringify(witKeys(wit, name)) + "\n");
}

/**
 * What the page needs to spell a WIT file's values as the host does (see
 * host/src/shape.rs): `keys`, each `@key` tag by snake_case field name, and
 * `enums`, the kebab-case enum cases (jco gives them as they are; the host
 * writes them in snake_case).
 */
function witKeys(wit, name) {
    const enums = new Set();
    for (const m of wit.matchAll(/\benum\s+[a-z0-9-]+\s*\{([^}]*)\}/g)) {
        for (const raw of m[1].replace(/\/\/.*$/gm, "").split(",")) {
            const c = raw.trim().replace(/^%/, "");
            if (c.includes("-")) enums.add(c);
        }
    }
    const keys = {};
    let pending = null;
    for (const line of wit.split("\n")) {
        const doc = line.match(/^\s*\/\/\/\s*@key\s+(\S+)/);
        if (doc) { pending = doc[1]; continue; }
        if (/^\s*\/\//.test(line)) continue;
        const field = line.match(/^\s*%?([a-zA-Z][a-zA-Z0-9-]*)\s*:/);
        if (pending && field) {
            const snake = field[1].toLowerCase().replace(/-/g, "_");
            if (keys[snake] !== undefined && keys[snake] !== pending) {
                throw new Error(`web: ${name}'s WIT gives field ${field[1]} two @keys (${keys[snake]}, ${pending}); the page cannot tell them apart`);
            }
            keys[snake] = pending;
        }
        pending = null;
    }
    return { keys, enums: [...enums].sort() };
}

// 2. The WASI shim's browser build (plain ES modules, no bare imports).
cpSync(join(web, "node_modules", "@bytecodealliance", "preview2-shim", "dist", "browser"),
    join(dist, "vendor", "preview2-shim"), { recursive: true });
for (const f of readdirSync(join(dist, "vendor", "preview2-shim"))) {
    if (f.endsWith(".d.ts")) rmSync(join(dist, "vendor", "preview2-shim", f));
}

// 3. The page.
cpSync(join(web, "src"), dist, { recursive: true });

// 4. Bundled samples, fetched by the page from the served directory.
const samples = [];
for (const [dir, ext] of [["cp1600", ".bin"], ["dos", ".com"]]) {
    mkdirSync(join(dist, "samples", dir), { recursive: true });
    for (const f of readdirSync(join(repo, "samples", dir)).sort()) {
        if (!f.endsWith(ext)) continue;
        cpSync(join(repo, "samples", dir, f), join(dist, "samples", dir, f));
        samples.push(`${dir}/${f}`);
    }
}
writeFileSync(join(dist, "samples", "index.json"), JSON.stringify(samples, null, 1) + "\n");

// Sizes of the transpiled modules.
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
for (const name of components) {
    const dir = join(dist, "gen", name);
    let total = 0;
    let gz = 0;
    const parts = [];
    for (const f of readdirSync(dir).sort()) {
        const bytes = readFileSync(join(dir, f));
        total += bytes.length;
        gz += gzipSync(bytes, { level: 9 }).length;
        parts.push(`${f} ${kib(bytes.length)}`);
    }
    const src = statSync(join(plugins, `${name}.wasm`)).size;
    console.log(`web: ${name}.wasm (${kib(src)}) -> gen/${name}/: ${parts.join(", ")}; total ${kib(total)} (${kib(gz)} gzipped)`);
}
console.log(`web: built ${dist} (${samples.length} samples)`);
