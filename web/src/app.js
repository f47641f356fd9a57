// The web bench: load a program into the cp1600 or x86_inspect component,
// step and run it, and show its state — through the same exported functions
// the MCP tools map to (tool names below are the MCP names).

import { call, events, writeFile, WORKSPACE } from "./runtime.js";

const $ = (id) => document.getElementById(id);
const hex = (n, digits) => n.toString(16).toUpperCase().padStart(digits, "0");
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

let logCount = 0;
function logLine(text) {
    const el = $("log");
    el.textContent += `${String(++logCount).padStart(3, " ")}  ${text}\n`;
    el.scrollTop = el.scrollHeight;
}
events.onLog = (level, message) => logLine(`[${level}] ${message}`);
events.onProgress = (done, total, message) => {
    $("status").textContent = `${message} ${done}${total ? `/${total}` : ""}`;
};

/** Parses "$5003", "0x5003", "5003h" or a decimal number. */
function parseNumber(text) {
    const t = text.trim();
    let m;
    if ((m = /^(?:\$|0x)([0-9a-f]+)$/i.exec(t)) || (m = /^([0-9a-f]+)h$/i.exec(t))) return parseInt(m[1], 16);
    if (/^\d+$/.test(t)) return parseInt(t, 10);
    throw new Error(`not a number: ${text}`);
}

// --- CP-1600 ------------------------------------------------------------------

const SESSION = "web";
const cp1600 = {
    name: "cp1600",
    budgetLabel: "cycles",
    budget: 10000,
    memAddress: null,
    segments: [],
    call: (tool, args = {}, opts) => call("cp1600", tool, { session_id: SESSION, ...args }, opts),
    async load(path) {
        const { sessions } = await call("cp1600", "cp1600_list_sessions", {}, { record: false });
        if (!sessions.some((s) => s.session_id === SESSION)) await call("cp1600", "cp1600_create_session", { session_id: SESSION });
        const r = await this.call("cp1600_load_rom", { rom_path: path });
        this.segments = r.segments;
        this.memAddress = r.load_address;
        return `${r.format}, ${r.rom_size} bytes at $${hex(r.load_address, 4)}, entry $${hex(r.entry_point, 4)}`;
    },
    async step(count) {
        const r = await this.call("cp1600_step", { count }, { bigints: ["count"] });
        return `executed ${r.executed}, PC $${hex(r.pc, 4)}${r.halted ? ", halted" : ""}`;
    },
    async run(budget) {
        const r = await this.call("cp1600_run", { max_cycles: budget }, { bigints: ["max_cycles"] });
        return `${r.reason} after ${r.executed} instructions, PC $${hex(r.pc, 4)}`;
    },
    async view() {
        const state = await this.call("cp1600_get_state");
        const { breakpoints } = await this.call("cp1600_list_breakpoints");
        const pc = state.pc;
        // Disassemble from the start of the loaded segment holding PC, so
        // instructions before PC decode at their real boundaries.
        const seg = this.segments.find((s) => pc >= s.start && pc <= s.end);
        const start = seg ? Math.max(seg.start, pc - 200) : pc;
        const { disassembly } = await this.call("cp1600_disassemble", { start_address: start, end_address: Math.min(seg ? Math.max(seg.end, pc) : 65535, Math.max(pc, start) + 24) });
        const at = Math.max(0, disassembly.findIndex((d) => d.address === pc));
        const window = disassembly.slice(Math.max(0, at - 8), at + 12);
        const mem = this.memAddress ?? pc;
        const { memory } = await this.call("cp1600_examine_memory", { start_address: mem, count: 64 });
        const rows = [];
        for (let i = 0; i < memory.length; i += 8) {
            rows.push(`$${hex(memory[i].address, 4)}  ${memory.slice(i, i + 8).map((w) => hex(w.value, 4)).join(" ")}`);
        }
        return {
            registers: Object.entries(state.registers).map(([k, v]) => [k, v, `$${hex(v, 4)}`, k === "R6" ? "SP" : k === "R7" ? "PC" : ""]),
            flags: Object.entries(state.flags).map(([k, v]) => [k, v]).concat([["I", state.interrupts_enabled], ["HALT", state.halted]]),
            counters: `cycles ${state.cycles} · instructions ${state.instructions}`,
            disassembly: window.map((d) => ({
                address: `$${hex(d.address, 4)}`,
                raw: hex(d.raw, 4),
                text: `${d.opcode} ${d.operands}`.trim(),
                pc: d.address === pc,
                bp: breakpoints.includes(d.address),
            })),
            memory: rows.join("\n"),
            memAddress: `$${hex(mem, 4)}`,
            breakpoints: breakpoints.map((a) => ({ label: `$${hex(a, 4)}`, remove: () => this.call("cp1600_clear_breakpoint", { address: a }) })),
            screen: await this.call("cp1600_screenshot"),
        };
    },
    async frames(n) {
        const r = await this.call("cp1600_run_frames", { frames: n });
        return `${r.frames} frames (display enabled in ${r.display_enabled}), ${r.run.reason} at PC $${hex(r.run.pc, 4)}`;
    },
    async controller(hold) {
        const r = await this.call("cp1600_controller", { controller: "left", ...hold });
        return r.pressed.length ? `holding ${r.pressed.join(", ")}` : "controller released";
    },
    addBreakpoint: (text) => cp1600.call("cp1600_set_breakpoint", { address: parseNumber(text) }),
    clearBreakpoints: () => cp1600.call("cp1600_clear_breakpoint"),
    setMemory(text) {
        this.memAddress = parseNumber(text);
    },
};

// --- x86 ----------------------------------------------------------------------

const x86 = {
    name: "x86_inspect",
    budgetLabel: "instructions",
    budget: 1000000,
    memAddress: null,
    past: [],
    call: (tool, args = {}, opts) => call("x86_inspect", tool, args, opts),
    async load(path) {
        const r = await this.call("x86_load_program", { path });
        this.memAddress = null;
        this.past = [];
        return `${r.format} ${r.size} bytes, ${r.cpu}, entry ${r.entry_point} (machine ${r.machine})`;
    },
    async step(count) {
        const r = await this.call("x86_step", { count });
        this.past = r.executed.slice(-4);
        return `executed ${r.instructions}, next ${r.next_instruction?.address ?? "?"} ${r.stop_reason ?? ""}`.trim();
    },
    async run(budget) {
        const r = await this.call("x86_run", { max_instructions: budget }, { bigints: ["max_instructions"] });
        this.past = [];
        return `${r.stop_reason}${r.exit_code !== undefined ? ` (exit code ${r.exit_code})` : ""} after ${r.instructions} instructions at ${r.address}`;
    },
    async view() {
        const regs = await this.call("read_cpu_registers");
        const { breakpoints } = await this.call("x86_list_breakpoints");
        const { instructions } = await this.call("x86_read_disassembly", { instruction_count: 14 });
        const bpLinear = new Set(breakpoints.map((b) => b.linear));
        const cs = regs.segments.CS, ip = regs.instructionPointer.IP;
        const here = cs * 16 + ip;
        const mem = this.memAddress ?? (here & ~0xf);
        const { data } = await this.call("read_memory", { address: mem, length: 128 });
        const rows = [];
        for (let i = 0; i < data.length / 2; i += 16) {
            const bytes = data.slice(i * 2, i * 2 + 32).match(/../g);
            const ascii = bytes.map((b) => { const c = parseInt(b, 16); return c >= 32 && c < 127 ? String.fromCharCode(c) : "."; }).join("");
            rows.push(`${hex(mem + i, 5)}  ${bytes.join(" ")}  ${ascii}`);
        }
        const consoleState = await this.call("x86_read_console", {});
        const { functions, totalCount } = await this.call("list_functions", { limit: 50 });
        const f = regs.flags;
        const flagNames = [["CF", "CarryFlag"], ["PF", "ParityFlag"], ["AF", "AuxiliaryFlag"], ["ZF", "ZeroFlag"], ["SF", "SignFlag"], ["TF", "TrapFlag"], ["IF", "InterruptFlag"], ["DF", "DirectionFlag"], ["OF", "OverflowFlag"]];
        const line = (d, extra) => ({ address: d.address, raw: d.bytes, text: d.asm, bp: bpLinear.has(d.linear), ...extra });
        return {
            registers: [
                ...Object.entries(regs.generalPurpose).map(([k, v]) => [k, v, hex(v, 4)]),
                ...Object.entries(regs.segments).map(([k, v]) => [k, v, hex(v, 4)]),
                ["IP", ip, hex(ip, 4)],
            ],
            flags: flagNames.filter(([, key]) => key in f).map(([short, key]) => [short, f[key], key]),
            counters: `CS:IP ${hex(cs, 4)}:${hex(ip, 4)} · linear ${hex(here, 5)}`,
            disassembly: [
                ...this.past.filter((d) => d.linear !== here).map((d) => line(d, { past: true })),
                ...instructions.map((d, i) => line(d, { pc: i === 0 })),
            ],
            memory: rows.join("\n"),
            memAddress: hex(mem, 5),
            breakpoints: breakpoints.map((b) => ({ label: `#${b.id} ${hex(b.linear, 5)}`, remove: () => this.call("x86_remove_breakpoint", { id: b.id }) })),
            console: [consoleState.stdout, consoleState.stderr && `[stderr]\n${consoleState.stderr}`, consoleState.screen && `[screen]\n${consoleState.screen}`].filter(Boolean).join("\n"),
            functions: { list: functions, total: totalCount },
            screen: await this.call("x86_screenshot", {}),
        };
    },
    async press(key) {
        const r = await this.call("x86_write_console_input", { keys: [key] });
        return `queued ${key} (${r.queued} bytes)`;
    },
    addBreakpoint(text) {
        const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(text.trim());
        return m
            ? this.call("x86_add_breakpoint", { segment: parseInt(m[1], 16), offset: parseInt(m[2], 16) })
            : this.call("x86_add_breakpoint", { address: parseNumber(text) });
    },
    async clearBreakpoints() {
        const { breakpoints } = await this.call("x86_list_breakpoints");
        for (const b of breakpoints) await this.call("x86_remove_breakpoint", { id: b.id });
    },
    setMemory(text) {
        const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(text.trim());
        this.memAddress = m ? parseInt(m[1], 16) * 16 + parseInt(m[2], 16) : parseNumber(text);
    },
};

// --- the page -----------------------------------------------------------------

let bench = null; // the active emulator (cp1600 or x86)
let loadedPath = null;
let actions = 0;

function pick(path) {
    return /\.(com|exe)$/i.test(path) ? x86 : cp1600;
}

function render(v) {
    $("registers").innerHTML = v.registers
        .map(([k, n, text, alias]) => `<tr data-reg="${k}" data-value="${n}"><td>${k}</td><td class="hex">${text}</td><td class="dec">${n}</td><td class="alias">${alias ?? ""}</td></tr>`)
        .join("");
    $("flags").innerHTML = v.flags
        .map(([k, on, title]) => `<span class="flag${on ? " on" : ""}" data-flag="${k}" data-value="${on}" title="${title ?? k}">${k}</span>`)
        .join("");
    $("counters").textContent = v.counters;
    $("disassembly").innerHTML = v.disassembly
        .map((d) => `<tr class="${d.pc ? "pc" : ""}${d.bp ? " bp" : ""}${d.past ? " past" : ""}"><td>${esc(d.address)}</td><td class="raw">${esc(d.raw)}</td><td>${esc(d.text)}</td></tr>`)
        .join("");
    $("memory").textContent = v.memory;
    $("mem-address").value = v.memAddress;
    const ul = $("breakpoints");
    ul.innerHTML = "";
    for (const b of v.breakpoints) {
        const li = document.createElement("li");
        li.textContent = b.label;
        const rm = document.createElement("button");
        rm.textContent = "×";
        rm.title = "remove";
        rm.onclick = () => act(`remove breakpoint ${b.label}`, b.remove);
        li.append(rm);
        ul.append(li);
    }
    $("console").textContent = v.console ?? "";
    // The screenshot tools answer content blocks: a caption, then a PNG.
    const blocks = v.screen ?? [];
    const image = blocks.find((b) => b.image)?.image;
    $("screen-caption").textContent = blocks.filter((b) => b.text !== undefined).map((b) => b.text).join("\n");
    if (image) {
        const old = $("screen").src;
        $("screen").src = URL.createObjectURL(new Blob([Uint8Array.from(image.data)], { type: image.mime_type }));
        if (old.startsWith("blob:")) URL.revokeObjectURL(old);
    }
    $("functions").innerHTML = v.functions
        ? v.functions.list.map((f) => `<tr data-function="${esc(f.address)}"><td>${esc(f.address)}</td><td>${f.calledCount}×</td><td>${esc(f.name)}</td></tr>`).join("") +
          (v.functions.total > v.functions.list.length ? `<tr><td colspan="3">… ${v.functions.total - v.functions.list.length} more</td></tr>` : "")
        : "";
}

/** Runs one user action, then refreshes every panel from the component. */
async function act(what, fn) {
    document.body.dataset.busy = "1";
    $("status").classList.remove("error");
    $("status").textContent = `${what}…`;
    for (const b of document.querySelectorAll("button")) b.disabled = true;
    // Let the page paint "busy" before a long synchronous call.
    await new Promise((r) => setTimeout(r, 0));
    try {
        const said = await fn();
        if (bench && loadedPath) render(await bench.view());
        $("status").textContent = typeof said === "string" ? said : `${what}: done`;
        if (typeof said === "string") logLine(`${what}: ${said}`);
    } catch (e) {
        $("status").textContent = e.message;
        $("status").classList.add("error");
        logLine(`${what}: ${e.message}`);
        console.error(e);
    } finally {
        for (const b of document.querySelectorAll("button")) b.disabled = false;
        document.body.dataset.busy = "0";
        document.body.dataset.actions = String(++actions);
    }
}

async function loadPath(path, label) {
    bench = pick(path);
    loadedPath = path;
    document.body.className = bench === x86 ? "x86" : "cp1600";
    $("budget-label").textContent = bench.budgetLabel;
    $("budget").value = bench.budget;
    $("program").textContent = `${label} → ${bench.name}`;
    $("program").dataset.path = path;
    return bench.load(path);
}

async function loadSample() {
    const name = $("sample").value;
    const res = await fetch(`samples/${name}`);
    if (!res.ok) throw new Error(`fetching samples/${name}: HTTP ${res.status}`);
    writeFile(name, await res.arrayBuffer());
    return loadPath(`${WORKSPACE}/${name}`, name);
}

async function loadUpload(files) {
    // Every chosen file goes into the in-memory filesystem (so a .bin finds
    // its .cfg beside it); the program is the first .bin/.rom/.com/.exe.
    let program = null;
    for (const f of files) {
        const path = writeFile(`upload/${f.name}`, await f.arrayBuffer());
        if (!program && /\.(bin|rom|com|exe)$/i.test(f.name)) program = { path, name: f.name };
    }
    if (!program) throw new Error("choose a .bin or .rom (CP-1600), or a .com or .exe (DOS) file");
    return loadPath(program.path, program.name);
}

const need = () => {
    if (!bench) throw new Error("load a program first");
};

async function main() {
    const samples = await (await fetch("samples/index.json")).json();
    $("sample").innerHTML = samples.map((s) => `<option value="${esc(s)}">${esc(s)}</option>`).join("");
    $("load-sample").onclick = () => act(`load ${$("sample").value}`, loadSample);
    $("file").onchange = (e) => e.target.files.length && act("load file", () => loadUpload([...e.target.files]));
    $("step").onclick = () => act("step", () => (need(), bench.step(Math.max(1, parseInt($("step-count").value, 10) || 1))));
    $("run").onclick = () => act("run", () => (need(), bench.run(Math.max(1, parseInt($("budget").value, 10) || bench.budget))));
    $("reload").onclick = () => act("reload", () => (need(), bench.load(loadedPath)));
    $("bp-add").onclick = () => act("add breakpoint", async () => (need(), await bench.addBreakpoint($("bp-address").value)));
    $("bp-clear").onclick = () => act("clear breakpoints", async () => (need(), await bench.clearBreakpoints()));
    $("mem-go").onclick = () => act("memory", async () => (need(), bench.setMemory($("mem-address").value)));
    $("frames").onclick = () => act("60 frames", () => (need(), cp1600.frames(60)));
    for (const b of document.querySelectorAll(".cp1600-pad [data-key], .cp1600-pad [data-disc], .cp1600-pad [data-release]")) {
        const hold = b.dataset.key ? { key: b.dataset.key } : b.dataset.disc ? { disc: b.dataset.disc } : {};
        b.onclick = () => act(b.title, () => (need(), cp1600.controller(hold)));
    }
    for (const b of document.querySelectorAll("[data-x86key]")) {
        b.onclick = () => act(`key ${b.dataset.x86key}`, () => (need(), x86.press(b.dataset.x86key)));
    }
    const params = new URLSearchParams(location.search);
    const initial = params.get("sample");
    if (initial && samples.includes(initial)) {
        $("sample").value = initial;
        await act(`load ${initial}`, loadSample);
    } else {
        document.body.dataset.actions = "0";
    }
    document.body.dataset.ready = "1";
}

main().catch((e) => {
    $("status").textContent = e.message;
    $("status").classList.add("error");
    console.error(e);
});
