// Browser test of the web bench: `benchtop serve --http` serves web/dist and
// MCP; headless Chromium drives the page (a CP-1600 sample, a DOS sample and
// a DOS program chosen through the file input), and after every action the
// registers the page shows must equal what the MCP tools return for the same
// program on the server, in the same run. Saves docs/web-bench.png.
//
// Usage: node test/web.test.mjs   (after `make web`; needs /usr/bin/chromium)
// Env: BENCHTOP_BIN (default target/debug/benchtop), CHROMIUM (default /usr/bin/chromium).

import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { McpClient } from "./mcp.mjs";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");
const repo = join(web, "..");
const bin = process.env.BENCHTOP_BIN || join(repo, "target", "debug", "benchtop");
const work = mkdtempSync(join(tmpdir(), "benchtop-web-"));

let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
    if (ok) {
        passed++;
        console.log(`ok   ${name}`);
    } else {
        failed++;
        console.log(`FAIL ${name}${detail ? `\n     ${detail}` : ""}`);
    }
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
let server = null;
// A failure before or outside the checks (server or browser would not start)
// still ends with the summary line.
process.on("uncaughtException", (e) => {
    console.log(`FAIL ${e.stack ?? e}`);
    console.log(`web: ${passed} passed, ${failed + 1} failed`);
    server?.kill();
    process.exit(1);
});

// --- the server ---------------------------------------------------------------

mkdirSync(join(work, "plugins"));
for (const p of ["cp1600", "x86_inspect"]) copyFileSync(join(repo, "target", "plugins", `${p}.wasm`), join(work, "plugins", `${p}.wasm`));
const samples = join(repo, "samples");
server = spawn(bin, [
    "serve", "--http", "127.0.0.1:0", "--plugins", join(work, "plugins"),
    "--workspace", samples, "--allow", `${samples}:ro`, "--no-watch", "--web", join(web, "dist"),
], { stdio: ["ignore", "ignore", "pipe"] });
let serverLog = "";
const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`benchtop did not start:\n${serverLog}`)), 30000);
    server.stderr.on("data", (d) => {
        serverLog += d;
        const m = /benchtop: web bench (http:\/\/\S+)\r?\n/.exec(serverLog);
        if (m) {
            clearTimeout(timer);
            resolve(m[1]);
        }
    });
    server.on("exit", (code) => reject(new Error(`benchtop exited (${code}):\n${serverLog}`)));
});
const mcp = new McpClient(new URL("mcp", base).href);
await mcp.initialize();

// --- the browser --------------------------------------------------------------

const profile = mkdtempSync(join(tmpdir(), "benchtop-web-chromium-"));
const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1440, height: 960 },
    args: [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
});
const page = await browser.newPage();
const pageErrors = [];
const requests = [];
page.on("request", (r) => requests.push(r.url()));
page.on("pageerror", (e) => pageErrors.push(e.message));
page.on("console", (m) => m.type() === "error" && pageErrors.push(m.text()));

/** Clicks a button and waits until the page has finished that action. */
async function act(selector) {
    const before = Number(await page.getAttribute("body", "data-actions"));
    await page.click(selector);
    await page.waitForFunction((n) => Number(document.body.dataset.actions) > n && document.body.dataset.busy === "0", before, { timeout: 60000 });
    const status = await page.textContent("#status");
    if (await page.$("#status.error")) throw new Error(`page reported: ${status}`);
    return status;
}
/** The registers the page shows: {name: number}. */
const shownRegisters = () => page.$$eval("#registers tr[data-reg]", (rows) => Object.fromEntries(rows.map((r) => [r.dataset.reg, Number(r.dataset.value)])));
const shownFlags = () => page.$$eval("#flags [data-flag]", (els) => Object.fromEntries(els.map((e) => [e.dataset.flag, e.dataset.value === "true"])));

async function loadSample(name) {
    await page.selectOption("#sample", name);
    return act("#load-sample");
}

try {
    await page.goto(base);
    await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });

    // --- CP-1600: 02-counter-loop.bin ---------------------------------------
    const rom = "cp1600/02-counter-loop.bin";
    await loadSample(rom);
    await mcp.call("cp1600_create_session", { session_id: "mcp" });
    await mcp.call("cp1600_load_rom", { session_id: "mcp", rom_path: rom });
    const cpState = () => mcp.call("cp1600_get_state", { session_id: "mcp" });
    const cpCompare = async (label) => {
        const want = await cpState();
        const regs = await shownRegisters();
        check(`cp1600 ${label}: registers match cp1600_get_state`, same(regs, want.registers), `page ${JSON.stringify(regs)} mcp ${JSON.stringify(want.registers)}`);
        const flags = await shownFlags();
        const wantFlags = { ...want.flags, I: want.interrupts_enabled, HALT: want.halted };
        check(`cp1600 ${label}: flags match`, same(flags, wantFlags), `page ${JSON.stringify(flags)} mcp ${JSON.stringify(wantFlags)}`);
        const pcRow = await page.textContent("#disassembly tr.pc td");
        check(`cp1600 ${label}: disassembly marks PC`, pcRow === `$${want.pc.toString(16).toUpperCase().padStart(4, "0")}`, `row ${pcRow}, pc ${want.pc}`);
        return want;
    };
    await cpCompare("after load");

    await page.fill("#step-count", "5");
    await act("#step");
    await mcp.call("cp1600_step", { session_id: "mcp", count: 5 });
    await cpCompare("after 5 steps");

    // A breakpoint at the MVO after the loop ($5007), then run into it.
    await page.fill("#bp-address", "$5007");
    await act("#bp-add");
    await mcp.call("cp1600_set_breakpoint", { session_id: "mcp", address: 0x5007 });
    const bps = await page.$$eval("#breakpoints li", (lis) => lis.map((l) => l.firstChild.textContent));
    check("cp1600 breakpoint listed", same(bps, ["$5007"]), JSON.stringify(bps));
    const status = await act("#run");
    const mcpRun = await mcp.call("cp1600_run", { session_id: "mcp", max_cycles: 10000 });
    check("cp1600 run stops at the breakpoint", status.startsWith("breakpoint") && mcpRun.reason === "breakpoint", `page "${status}", mcp ${mcpRun.reason}`);
    const atBp = await cpCompare("at breakpoint");
    check("cp1600 stopped at $5007", atBp.pc === 0x5007, `pc ${atBp.pc}`);

    await act("#bp-clear");
    await act("#run");
    await mcp.call("cp1600_clear_breakpoint", { session_id: "mcp" });
    await mcp.call("cp1600_run", { session_id: "mcp", max_cycles: 10000 });
    const halted = await cpCompare("halted");
    check("cp1600 ran to HLT with R0 = 10", halted.halted && halted.registers.R0 === 10, JSON.stringify(halted.registers));
    const sticCaption = await page.textContent("#screen-caption");
    check("cp1600 screen: the component's cp1600_screenshot, a PNG with the STIC caption",
        (await page.getAttribute("#screen", "src")).startsWith("blob:") && sticCaption.includes("STIC: colour-stack mode")
        && await page.$eval("#screen", (img) => img.complete && img.naturalWidth === 704 && img.naturalHeight === 448), sticCaption.slice(0, 100));
    const mem = await mcp.call("cp1600_examine_memory", { session_id: "mcp", start_address: 0x200, count: 1 });
    await page.fill("#mem-address", "$0200");
    await act("#mem-go");
    const memText = await page.textContent("#memory");
    const firstWord = memText.split("\n")[0].split(/\s+/)[1];
    check("cp1600 memory view matches cp1600_examine_memory", parseInt(firstWord, 16) === mem.memory[0].value, `page ${firstWord}, mcp ${mem.memory[0].value}`);

    // --- DOS: greet.com ------------------------------------------------------
    const x86Compare = async (label) => {
        const want = await mcp.call("read_cpu_registers", { machine });
        const flat = { ...want.generalPurpose, ...want.segments, ...want.instructionPointer };
        const regs = await shownRegisters();
        check(`x86 ${label}: registers match read_cpu_registers`, same(Object.keys(regs).sort(), Object.keys(flat).sort()) && Object.entries(flat).every(([k, v]) => regs[k] === v), `page ${JSON.stringify(regs)} mcp ${JSON.stringify(flat)}`);
        const flags = await page.$$eval("#flags [data-flag]", (els) => Object.fromEntries(els.map((e) => [e.title, e.dataset.value === "true"])));
        check(`x86 ${label}: flags match`, Object.entries(want.flags).every(([k, v]) => flags[k] === v), `page ${JSON.stringify(flags)} mcp ${JSON.stringify(want.flags)}`);
        return want;
    };
    await loadSample("dos/greet.com");
    let { machine } = await mcp.call("x86_load_program", { path: "dos/greet.com" });
    await x86Compare("greet.com after load");
    await page.fill("#step-count", "3");
    await act("#step");
    await mcp.call("x86_step", { machine, count: 3 });
    await x86Compare("greet.com after 3 steps");
    const cur = await page.textContent("#disassembly tr.pc td:last-child");
    const dis = await mcp.call("x86_read_disassembly", { machine, instruction_count: 1 });
    check("x86 disassembly at CS:IP matches x86_read_disassembly", cur === dis.instructions[0].asm, `page ${cur}, mcp ${dis.instructions[0].asm}`);
    await act("#run");
    await mcp.call("x86_run", { machine });
    await x86Compare("greet.com after run");
    const consoleMcp = await mcp.call("x86_read_console", { machine });
    const consolePage = await page.textContent("#console");
    check("x86 console shows the program's stdout", consolePage === consoleMcp.stdout && consolePage.includes("Hello from benchtop"), JSON.stringify(consolePage));
    const x86Caption = await page.textContent("#screen-caption");
    check("x86 screen: the text screen shows the program's greeting, as x86_screenshot's caption does",
        x86Caption.includes("mode: 03h") && x86Caption.includes("Hello from benchtop")
        && await page.$eval("#screen", (img) => img.complete && img.naturalWidth === 640), x86Caption.slice(0, 160));
    await act("[data-x86key='up']");
    check("x86 key button queues the key in the component", (await page.textContent("#status")).startsWith("queued up (2 bytes)"), await page.textContent("#status"));
    const fnsMcp = await mcp.call("list_functions", { machine, limit: 50 });
    const fnsPage = await page.$$eval("#functions tr[data-function]", (rows) => rows.map((r) => r.dataset.function));
    check("x86 function catalogue matches list_functions", same(fnsPage, fnsMcp.functions.map((f) => f.address)), `page ${fnsPage} mcp ${fnsMcp.functions.map((f) => f.address)}`);

    // --- DOS: a user's file (sums.com through the file input) ---------------
    await page.setInputFiles("#file", join(samples, "dos", "sums.com"));
    await page.waitForFunction(() => document.body.dataset.busy === "0" && document.getElementById("program").dataset.path?.endsWith("upload/sums.com"), null, { timeout: 30000 });
    ({ machine } = await mcp.call("x86_load_program", { path: "dos/sums.com" }));
    await page.fill("#bp-address", "0087:0109");
    await act("#bp-add");
    await mcp.call("x86_add_breakpoint", { machine, segment: 0x87, offset: 0x109 });
    await act("#run");
    const r = await mcp.call("x86_run", { machine });
    await x86Compare(`uploaded sums.com at breakpoint (${r.stop_reason} ${r.address})`);
    check("x86 run stops at the breakpoint", r.stop_reason === "breakpoint" && (await page.textContent("#status")).startsWith("breakpoint"), await page.textContent("#status"));
    // Run on from the breakpoint to the exit (the breakpoint stays set).
    await act("#run");
    const end = await mcp.call("x86_run", { machine });
    await x86Compare(`uploaded sums.com after run (${end.stop_reason})`);
    const sumsOut = await mcp.call("x86_read_console", { machine });
    check("x86 uploaded program's console matches x86_read_console", (await page.textContent("#console")) === sumsOut.stdout && sumsOut.stdout.includes("5050"), sumsOut.stdout);
    const sumsFns = await mcp.call("list_functions", { machine, limit: 50 });
    const sumsPage = await page.$$eval("#functions tr[data-function]", (rows) => rows.map((r) => r.dataset.function));
    check("x86 uploaded program's functions match list_functions", same(sumsPage, sumsFns.functions.map((f) => f.address)), `page ${sumsPage}`);
    await page.fill("#bp-address", "");
    await page.screenshot({ path: join(repo, "docs", "web-bench.png") });
    await act("#bp-clear");
    check("x86 breakpoints cleared", (await page.$$("#breakpoints li")).length === 0);

    // blob: URLs are the page's own screenshots, made in the page.
    const foreign = requests.filter((u) => !u.startsWith(base) && !u.startsWith("data:") && !u.startsWith(`blob:${base}`));
    check("the page loads nothing from elsewhere", foreign.length === 0, foreign.join(", "));
    check("no page errors", pageErrors.length === 0, pageErrors.join("; "));
} catch (e) {
    check(`browser test ran to the end`, false, e.stack);
    await page.screenshot({ path: join(work, "failure.png") }).catch(() => {});
} finally {
    await browser.close();
    server.kill();
    rmSync(profile, { recursive: true, force: true });
    if (failed === 0) rmSync(work, { recursive: true, force: true });
    else console.log(`(left ${work} for inspection)`);
}
console.log(`web: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
