// The benchtop plugin components in a browser: instantiates the jco-transpiled
// cp1600 and x86_inspect components with the imports benchtop's host would
// give them — WASI from the vendored preview2-shim (browser build) with an
// in-memory filesystem this module owns, and benchtop:host progress/log/caller in JS —
// and calls the same exported functions the MCP tools map to.

import * as cli from "./vendor/preview2-shim/cli.js";
import * as clocks from "./vendor/preview2-shim/clocks.js";
import * as io from "./vendor/preview2-shim/io.js";
import * as random from "./vendor/preview2-shim/random.js";
import { createFilesystem, InMemoryFilesystemAdapter } from "./vendor/preview2-shim/filesystem.js";

/** The workspace directory the plugins see (the only preopen). */
export const WORKSPACE = "/workspace";

// The in-memory file tree behind `wasi:filesystem` (shim's FileData shape:
// directories are `{dir: {...}}`, files `{source: Uint8Array}`).
const tree = { dir: {} };
const filesystem = createFilesystem({
    adapter: new InMemoryFilesystemAdapter(),
    preopens: { [WORKSPACE]: tree },
});

/** Writes `bytes` at `path` (relative to the workspace), creating directories. */
export function writeFile(path, bytes) {
    const parts = path.split("/").filter((p) => p && p !== ".");
    const name = parts.pop();
    let dir = tree;
    for (const p of parts) {
        dir.dir[p] ??= { dir: {} };
        dir = dir.dir[p];
    }
    dir.dir[name] = { source: new Uint8Array(bytes) };
    return `${WORKSPACE}/${[...parts, name].join("/")}`;
}

/** Listeners for `benchtop:host/log` writes and progress reports. */
export const events = { onLog: (level, message) => {}, onProgress: (done, total, message) => {} };
let cancelRequested = false;
/** Asks the current long call (a run) to stop at its next progress check. */
export function cancel() {
    cancelRequested = true;
}

// What benchtop's host offers (wit/host/host.wit).
const progress = {
    report(done, total, message) {
        events.onProgress(done, total, message);
        return !cancelRequested;
    },
    cancelled() {
        return cancelRequested;
    },
};
const log = {
    write(level, message) {
        events.onLog(level, message);
    },
};
// The page is the plugins' one client: every session and machine is its own.
const caller = {
    id: () => "web",
};

// The plugins' settings, as the host passes them (crates/plugin-kit paths).
const environment = {
    getEnvironment: () => [
        ["BENCHTOP_WORKSPACE", WORKSPACE],
        ["BENCHTOP_ALLOWED_DIRS", `rw ${WORKSPACE}`],
    ],
    getArguments: () => [],
    initialCwd: () => WORKSPACE,
};

// Resource change notices: the page has no subscribers (it reads the
// state it shows after every call), so there is no one to tell.
const resources = {
    changed: (_uri) => {},
    changedForCaller: (_uri) => {},
};

// One page, one replica: there is no state store to tell what a call
// changed (benchtop:host/durable), and blobs only pass the snapshots the
// host would move (benchtop:host/durable-state), which the page never asks.
const durable = {
    changed: (_handle) => {},
    closed: (_handle) => {},
};
const kept = new Map();
let nextBlob = 1n;
const blobs = {
    keep(bytes) {
        const handle = nextBlob++;
        kept.set(handle, new Uint8Array(bytes));
        return handle;
    },
    read(handle, offset, len) {
        const bytes = kept.get(handle);
        if (!bytes) throw `no blob ${handle} is kept`;
        const from = Number(offset);
        return bytes.subarray(from, from + Number(len > BigInt(bytes.length) ? BigInt(bytes.length) : len));
    },
    size(handle) {
        const bytes = kept.get(handle);
        if (!bytes) throw `no blob ${handle} is kept`;
        return BigInt(bytes.length);
    },
    release(handle) {
        kept.delete(handle);
    },
};

// The page asks no one during a call: plugins fall back to their argument.
const elicit = {
    ask: (_message, _schema) => ({ tag: "unsupported" }),
    askKeyed: (_key, _message, _schema) => ({ tag: "unsupported" }),
    canAsk: () => false,
};

const imports = {
    "benchtop:host/progress": progress,
    "benchtop:host/log": log,
    "benchtop:host/caller": caller,
    // Types only (tool-error); a component that uses it imports no functions.
    "benchtop:host/errors": {},
    "benchtop:host/resources": resources,
    "benchtop:host/elicit": elicit,
    "benchtop:host/durable": durable,
    "benchtop:host/blobs": blobs,
    "wasi:cli/environment": environment,
    "wasi:cli/exit": cli.exit,
    "wasi:cli/stdin": cli.stdin,
    "wasi:cli/stdout": cli.stdout,
    "wasi:cli/stderr": cli.stderr,
    "wasi:cli/terminal-input": cli.terminalInput,
    "wasi:cli/terminal-output": cli.terminalOutput,
    "wasi:cli/terminal-stdin": cli.terminalStdin,
    "wasi:cli/terminal-stdout": cli.terminalStdout,
    "wasi:cli/terminal-stderr": cli.terminalStderr,
    "wasi:clocks/monotonic-clock": clocks.monotonicClock,
    "wasi:clocks/wall-clock": clocks.wallClock,
    "wasi:filesystem/types": filesystem.types,
    "wasi:filesystem/preopens": filesystem.preopens,
    "wasi:io/error": io.error,
    "wasi:io/poll": io.poll,
    "wasi:io/streams": io.streams,
    "wasi:random/random": random.random,
    "wasi:random/insecure": random.insecure,
    "wasi:random/insecure-seed": random.insecureSeed,
};

const loaded = {};

/** Instantiates a transpiled plugin (`cp1600` or `x86_inspect`) once; returns its `tools` export. */
export async function plugin(name) {
    if (!loaded[name]) {
        loaded[name] = (async () => {
            const base = new URL(`./gen/${name}/`, import.meta.url);
            const mod = await import(new URL(`${name}.js`, base).href);
            const getCoreModule = (file) => WebAssembly.compileStreaming(fetch(new URL(file, base)));
            const instance = await mod.instantiate(getCoreModule, imports);
            return instance.tools;
        })();
    }
    return loaded[name];
}

const camel = (s) => s.replace(/[-_]([a-z0-9])/g, (_, c) => c.toUpperCase());
const snake = (s) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/-/g, "_");

// Each plugin's `@key` tags (snake_case field name → JSON key), which
// build.mjs reads from the plugin's WIT: jco names fields in camelCase and
// knows nothing of the tags.
const keyMaps = {};
async function keysOf(name) {
    keyMaps[name] ??= fetch(new URL(`./gen/${name}/keys.json`, import.meta.url))
        .then((r) => (r.ok ? r.json() : {}))
        .catch(() => ({}))
        .then(({ keys = {}, enums = [] }) => ({ keys, enums: new Set(enums) }));
    return keyMaps[name];
}

/**
 * A typed result as jco gives it, spelled the way benchtop's host spells it
 * in JSON (docs/design.md, Contract 1): record fields by their `@key` or in
 * snake_case and sorted, a `none` field left out, a variant as `"case"` or
 * `{"case": payload}`, 64-bit integers as numbers, byte lists as arrays.
 */
export function toJson(value, spelling = { keys: {}, enums: new Set() }) {
    const { keys, enums } = spelling;
    if (value === undefined || value === null) return null;
    if (typeof value === "bigint") return Number(value);
    if (typeof value === "string") return enums.has(value) ? snake(value) : value;
    if (Array.isArray(value) || ArrayBuffer.isView(value)) return Array.from(value, (v) => toJson(v, spelling));
    if (typeof value !== "object") return value;
    const fields = Object.keys(value);
    if (typeof value.tag === "string" && fields.every((k) => k === "tag" || k === "val")) {
        const tag = snake(value.tag);
        return value.val === undefined ? tag : { [tag]: toJson(value.val, spelling) };
    }
    // Keys sorted, as the host's JSON has them.
    const entries = fields
        .filter((k) => value[k] !== undefined)
        .map((k) => [keys[snake(k)] ?? snake(k), toJson(value[k], spelling)])
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(entries);
}

/**
 * Calls an exported function by its MCP tool name with MCP-style JSON
 * arguments (snake_case record fields), returning the parsed JSON result.
 * `bigints` lists fields of type u64. A `tool-error` rejects with an Error
 * whose message is `CODE: message`, as benchtop reports it.
 */
export async function call(pluginName, tool, args, { record = true, bigints = [] } = {}) {
    const tools = await plugin(pluginName);
    const fn = tools[camel(tool)];
    if (!fn) throw new Error(`${pluginName} exports no ${tool}`);
    const rec = {};
    for (const [k, v] of Object.entries(args ?? {})) {
        if (v === undefined || v === null) continue;
        rec[camel(k)] = bigints.includes(k) ? BigInt(v) : v;
    }
    cancelRequested = false;
    let out;
    try {
        out = record ? fn(rec) : fn();
    } catch (e) {
        const p = e?.payload;
        if (p && typeof p.code === "string") throw new Error(`${p.code}: ${p.message}`);
        throw e;
    }
    // `@json` tools return JSON text; typed ones a value to spell as JSON.
    return typeof out === "string" ? JSON.parse(out) : toJson(out, await keysOf(pluginName));
}
