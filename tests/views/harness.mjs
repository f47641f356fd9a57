// What every *.test.mjs here shares: `benchtop serve` (stdio) on a temp copy
// of samples/ as the MCP server, an MCP client that declares the MCP Apps
// extension, and headless Chromium on the test host page (host/host.mjs: the
// ext-apps SDK's AppBridge framing a view as a client does). Also the
// check/count bookkeeping, screenshots, and a parser of the tools' markdown
// that is independent of the views' own.
//
// Env: BENCHTOP_BIN (default target/debug/benchtop), PLUGINS_DIR (default
// target/plugins), CHROMIUM (default /usr/bin/chromium), VIEWS_SCREENSHOTS
// (1: screenshots go to docs/screenshots, for the README; otherwise to
// tests/views/dist/screenshots, which git ignores, so a test run leaves the
// checkout clean).

import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const bin = process.env.BENCHTOP_BIN || join(repo, "target", "debug", "benchtop");
const pluginsDir = process.env.PLUGINS_DIR || join(repo, "target", "plugins");
export const VIEW_MIME = "text/html;profile=mcp-app";

/** Where screenshots go: docs/screenshots only when asked for. */
function shotsDir() {
    const v = process.env.VIEWS_SCREENSHOTS ?? "";
    if (v === "1") return join(repo, "docs", "screenshots");
    if (v === "" || v === "0") return join(here, "dist", "screenshots");
    throw new Error(`VIEWS_SCREENSHOTS=${JSON.stringify(v)}: set it to 1 to write docs/screenshots, or leave it unset`);
}

// Chromium as the tests run it: headless, no sandbox (containers), and no
// traffic of its own, so that a request the route below did not serve can
// only be a view's. web/test/web.test.mjs launches it with the same list
// (a separate package; keep the two in step).
const CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const HOST = "http://views-test-host.invalid/";

export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
/** The text blocks of a tool result, joined. */
export const text = (r) => r.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");

// --- the tools' markdown, parsed independently of the views' own parser --------

/** The `key: value` lines of a leading `---` block. */
export function frontmatter(t) {
    const m = /^---\n([\s\S]*?)\n---/.exec(t);
    return Object.fromEntries((m ? m[1].split("\n") : []).map((l) => /^(\w+):\s?(.*)$/.exec(l)).filter(Boolean).map((x) => [x[1], x[2]]));
}
/** Every pipe table, with the heading above it: {heading, header, rows}. */
export function mdTables(t) {
    const out = [];
    let heading = "";
    let rows = null;
    for (const line of t.split("\n")) {
        const h = /^#+\s+(.*)$/.exec(line);
        if (h) heading = h[1];
        if (line.startsWith("|")) {
            (rows ??= []).push(line.slice(1, -1).split("|").map((c) => c.trim()));
        } else if (rows) {
            out.push({ heading, header: rows[0], rows: rows.slice(2) });
            rows = null;
        }
    }
    if (rows) out.push({ heading, header: rows[0], rows: rows.slice(2) });
    return out;
}
/** A 2D markdown grid as {"r,c": text}. */
export function cellsOf(table) {
    const out = {};
    table.rows.forEach((r, i) => r.slice(1).forEach((v, j) => { out[`${i},${j}`] = v; }));
    return out;
}

/**
 * Starts the server and the browser. `label` names the suite in its summary
 * line (`<label>: N passed, N failed`, which test.sh adds up); `plugins(ws)`
 * lists the plugins to load as [{ wasm, env? }], `ws` being the scratch
 * workspace (so env paths can point into it).
 */
export async function startHarness({ label, plugins }) {
    const shots = shotsDir();
    let passed = 0;
    let failed = 0;
    function check(name, ok, detail = "") {
        if (ok) {
            passed++;
            console.log(`ok   ${name}`);
        } else {
            failed++;
            console.log(`FAIL ${name}${detail ? `\n     ${String(detail).slice(0, 1500)}` : ""}`);
        }
    }

    // --- the server: a scratch copy of the samples, never samples/ itself -------
    const slug = label.replace(/\W+/g, "-");
    const work = mkdtempSync(join(tmpdir(), `benchtop-${slug}-`));
    const ws = join(work, "ws");
    cpSync(join(repo, "samples"), ws, { recursive: true });
    const toml = (s) => JSON.stringify(s);
    const entries = plugins(ws).map(({ wasm, env }) => {
        const envLine = env ? `\nenv = { ${Object.entries(env).map(([k, v]) => `${k} = ${toml(v)}`).join(", ")} }` : "";
        return `[[plugin]]\npath = ${toml(join(pluginsDir, wasm))}${envLine}\n`;
    });
    writeFileSync(join(work, "benchtop.toml"), `workspace = ${toml(ws)}\nallow = [${toml(ws + ":rw")}]\n${entries.join("")}`);

    let browser = null;
    let mcp = null;
    let profile = null;
    async function finish(code) {
        await browser?.close().catch(() => {});
        await mcp?.close().catch(() => {});
        if (profile) rmSync(profile, { recursive: true, force: true });
        if (failed === 0) rmSync(work, { recursive: true, force: true });
        else console.log(`(left ${work} for inspection)`);
        console.log(`${label}: ${passed} passed, ${failed} failed`);
        process.exit(code);
    }
    process.on("uncaughtException", (e) => {
        failed++;
        console.log(`FAIL ${e.stack ?? e}`);
        finish(1);
    });

    mcp = new Client({ name: `benchtop-${slug}-test`, version: "0.1.0" }, {
        capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [VIEW_MIME] } } },
    });
    await mcp.connect(new StdioClientTransport({ command: bin, args: ["serve", "--config", join(work, "benchtop.toml"), "--no-watch", "--no-cache"], stderr: "ignore" }));
    const call = (name, args) => mcp.callTool({ name, arguments: args });
    /** A call that must succeed; its structuredContent. */
    async function ok(name, args) {
        const r = await call(name, args);
        if (r.isError) throw new Error(`${name}: ${r.content.map((b) => b.text).join(" ")}`);
        return r.structuredContent;
    }

    // --- the browser: the host page, served from a route (no server, no network) ---
    profile = mkdtempSync(join(tmpdir(), `benchtop-${slug}-chromium-`));
    browser = await chromium.launchPersistentContext(profile, {
        executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
        headless: true,
        viewport: { width: 940, height: 760 },
        args: CHROMIUM_ARGS,
    });
    const page = await browser.newPage();
    const pageErrors = [];
    const foreign = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    page.on("console", (m) => m.type() === "error" && pageErrors.push(m.text()));
    await page.route("**/*", (route) => {
        const url = route.request().url();
        if (url === HOST) return route.fulfill({ contentType: "text/html", body: readFileSync(join(here, "host", "host.html")) });
        if (url === HOST + "host.js") return route.fulfill({ contentType: "text/javascript", body: readFileSync(join(here, "dist", "host.js")) });
        if (!url.startsWith("data:") && !url.startsWith("about:")) foreign.push(url);
        return route.abort();
    });
    await page.exposeFunction("mcpCall", async (name, args) => JSON.stringify(await call(name, JSON.parse(args))));
    await page.goto(HOST);

    /** Reads a view's resource and frames it (handshake done); the view's frame. */
    async function openView(uri, theme = "light") {
        const c = (await mcp.readResource({ uri })).contents[0];
        await page.evaluate(([html, meta, th]) => window.host.open(html, meta, th), [c.text, c._meta ?? null, theme]);
        const frame = page.frames().find((f) => f !== page.mainFrame());
        if (!frame) throw new Error(`${uri}: no frame`);
        return frame;
    }
    /** The client's part of a tool call with a view: call it, hand input and result to the view. */
    async function callWithView(name, args) {
        const result = await call(name, args);
        await page.evaluate(([a, r]) => window.host.deliver(a, r), [args, result]);
        return result;
    }
    /** The tools/call requests the current view sent through the bridge. */
    const hostCalls = () => page.evaluate(() => window.host.calls);

    /**
     * A screenshot of the view's frame. A view whose content is much
     * narrower than the host's 900px (a table of few columns) is shown in a
     * frame narrowed to its content, as a client with a narrower window
     * would, so the picture is not a third empty; if narrowing changed the
     * layout (a line wrapped) the frame keeps its full width.
     */
    async function shot(name) {
        mkdirSync(shots, { recursive: true });
        const frame = page.frames().find((f) => f !== page.mainFrame());
        const settle = () => frame.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        // The width the content needs: the right edge of its text and of
        // elements sized by their content, plus the right padding, border
        // and margin of every box around them (block boxes themselves
        // stretch to the frame, so their own edge says nothing).
        const need = await frame.evaluate(() => {
            const de = document.documentElement;
            const extra = (el) => {
                let sum = 0;
                for (let a = el; a && a !== de.parentNode; a = a.parentElement) {
                    const s = getComputedStyle(a);
                    sum += parseFloat(s.paddingRight) + parseFloat(s.borderRightWidth) + parseFloat(s.marginRight);
                }
                return sum;
            };
            let right = 0;
            const range = document.createRange();
            const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let n; (n = texts.nextNode());) {
                if (!n.textContent.trim()) continue;
                range.selectNodeContents(n);
                for (const r of range.getClientRects()) right = Math.max(right, r.right + extra(n.parentElement));
            }
            for (const el of document.body.querySelectorAll("*")) {
                const s = getComputedStyle(el);
                const sized = !["block", "flex", "grid", "list-item", "contents", "none"].includes(s.display) || /^(CANVAS|SVG|IMG)$/i.test(el.tagName);
                const r = el.getBoundingClientRect();
                if (sized && r.width && r.height) right = Math.max(right, r.right + extra(el.parentElement));
            }
            return { right: Math.ceil(right) + 1, width: de.clientWidth, height: de.scrollHeight };
        });
        const view = page.locator("#view");
        const narrow = need.right < need.width * 0.85;
        if (narrow) {
            await view.evaluate((el, w) => { el.style.width = `${w}px`; }, need.right + 2);
            await settle();
            const now = await frame.evaluate(() => ({ height: document.documentElement.scrollHeight, overflow: document.documentElement.scrollWidth > document.documentElement.clientWidth }));
            if (now.height !== need.height || now.overflow) await view.evaluate((el) => { el.style.width = "100%"; });
            await settle();
        }
        await view.screenshot({ path: join(shots, `${name}.png`) });
        if (narrow) {
            await view.evaluate((el) => { el.style.width = "100%"; });
            await settle();
        }
    }

    /**
     * Runs the checks in `body`, then the two every suite ends with; an
     * exception is one failed check (and a screenshot of the page in the
     * work directory). Exits the process with the summary line.
     */
    async function run(body) {
        try {
            await body();
            check("the views load nothing from elsewhere", foreign.length === 0, foreign.join(", "));
            check("no page errors", pageErrors.length === 0, pageErrors.join("; "));
        } catch (e) {
            check(`${label} test ran to the end`, false, e.stack);
            await page.screenshot({ path: join(work, "failure.png") }).catch(() => {});
        }
        await finish(failed === 0 ? 0 : 1);
    }

    return { work, ws, mcp, page, call, ok, check, openView, callWithView, hostCalls, shot, run };
}
