// The emulator view (ui://benchtop/emulator) in the test client: the same
// host page as views.test.mjs (harness.mjs: the ext-apps SDK's AppBridge
// framing the view in headless Chromium), with `benchtop serve` running
// cp1600, x86-inspect and views on a temp copy of samples/. Every check
// compares what the view shows with the tools' own answers; a click on a
// step button must change the server's session. Takes the emulator-*
// screenshots (docs/screenshots/ with VIEWS_SCREENSHOTS=1).
//
// Usage: node emulator.test.mjs   (after `npm ci` and `npm run bundle`)
// Env: see harness.mjs.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { same, startHarness } from "./harness.mjs";

const VIEW = "ui://benchtop/emulator";
const { ws, mcp, ok, check, openView, callWithView, hostCalls, shot, run } = await startHarness({
    label: "emulator view",
    plugins: () => [{ wasm: "cp1600.wasm" }, { wasm: "x86_inspect.wasm" }, { wasm: "views.wasm" }],
});

// The view bumps body[data-ready] after each re-read of the session.
const readyCount = (frame) => frame.evaluate(() => Number(document.body.dataset.ready || 0));
async function afterClick(frame, selector) {
    const before = await readyCount(frame);
    await frame.click(selector);
    await frame.waitForFunction((n) => Number(document.body.dataset.ready || 0) > n, before);
}
const shownRegs = (frame) => frame.$$eval("[data-reg]", (tds) => Object.fromEntries(tds.map((td) => [td.dataset.reg, Number(td.dataset.value)])));
const shownFlags = (frame) => frame.$$eval("[data-flag]", (s) => Object.fromEntries(s.map((e) => [e.dataset.flag, e.dataset.value === "1"])));

await run(async () => {
    const tools = (await mcp.listTools()).tools;
    const viewOf = Object.fromEntries(tools.map((t) => [t.name, t._meta?.ui?.resourceUri]));
    const named = ["cp1600_load_rom", "cp1600_step", "cp1600_run", "cp1600_run_until", "cp1600_reset", "cp1600_get_state",
        "x86_load_program", "x86_run", "x86_step", "read_cpu_registers"];
    check("the emulators' load, step, run and state tools name the emulator view", named.every((t) => viewOf[t] === VIEW),
        JSON.stringify(named.map((t) => [t, viewOf[t]])));

    // --- cp1600 ---------------------------------------------------------------
    let frame = await openView(VIEW);
    await ok("cp1600_create_session", { session_id: "view" });
    await callWithView("cp1600_load_rom", { session_id: "view", rom_path: "cp1600/06-nested-calls.bin" });
    await frame.waitForSelector("[data-reg='R7']");
    const st0 = await ok("cp1600_get_state", { session_id: "view" });
    check("cp1600: the registers shown are get_state's", same(await shownRegs(frame), st0.registers), JSON.stringify(await shownRegs(frame)));
    const f = await shownFlags(frame);
    check("cp1600: the flags shown are get_state's", f.S === st0.flags.S && f.Z === st0.flags.Z && f.OV === st0.flags.OV && f.C === st0.flags.C, JSON.stringify(f));
    const dis = await ok("cp1600_disassemble", { session_id: "view", start_address: st0.pc, end_address: st0.pc + 8 });
    const pcLine = await frame.textContent("#disasm div.pc");
    check("cp1600: the PC's line is highlighted and reads as cp1600_disassemble does",
        pcLine.includes(dis.disassembly[0].opcode) && pcLine.includes(dis.disassembly[0].operands) && pcLine.startsWith("$" + st0.pc.toString(16).toUpperCase()), pcLine);
    const memText = await frame.textContent("#memory");
    check("cp1600: memory shows $0200 onward", memText.startsWith("$0200: "), memText.slice(0, 80));
    // The STIC's screen, as cp1600_screenshot draws it, with its caption.
    const stic = await mcp.callTool({ name: "cp1600_screenshot", arguments: { session_id: "view" } });
    const sticPng = stic.content.find((c) => c.type === "image").data;
    check("cp1600: the screen shown is cp1600_screenshot's PNG",
        (await frame.getAttribute("#screen", "src")) === "data:image/png;base64," + sticPng && (await frame.textContent("#caption")).includes("STIC:"),
        (await frame.textContent("#caption")).slice(0, 120));
    await shot("emulator-cp1600");

    // Step: the view calls cp1600_step; the server's session moved on.
    await afterClick(frame, "#step");
    const st1 = await ok("cp1600_get_state", { session_id: "view" });
    const calls = await hostCalls();
    check("cp1600: Step calls cp1600_step through the bridge", calls.some((c) => c.name === "cp1600_step" && c.arguments.session_id === "view" && c.arguments.count === 1), JSON.stringify(calls));
    check("cp1600: after Step the server's session executed one instruction", st1.instructions === st0.instructions + 1 && st1.pc !== st0.pc, `${st0.instructions} → ${st1.instructions}`);
    check("cp1600: the view shows the stepped session", same(await shownRegs(frame), st1.registers));

    // Step N.
    await frame.fill("#n", "3");
    await afterClick(frame, "#stepn");
    const st2 = await ok("cp1600_get_state", { session_id: "view" });
    check("cp1600: Step N executes N instructions on the server", st2.instructions === st1.instructions + 3, `${st1.instructions} → ${st2.instructions}`);
    check("cp1600: the view shows it", same(await shownRegs(frame), st2.registers));

    // Breakpoint: clicking a line sets it on the server; Run stops there.
    const lines = await frame.$$eval("#disasm div", (ds) => ds.map((d) => Number(d.dataset.addr)));
    const target = lines.find((a) => a > st2.pc);
    await afterClick(frame, `#disasm div[data-addr='${target}']`);
    const bps = (await ok("cp1600_list_breakpoints", { session_id: "view" })).breakpoints;
    check("cp1600: clicking an instruction sets a breakpoint there on the server", same(bps, [target]), JSON.stringify(bps));
    check("cp1600: the breakpoint is marked", (await frame.getAttribute(`#disasm div[data-addr='${target}']`, "class")).includes("bp"));
    await afterClick(frame, "#run");
    const st3 = await ok("cp1600_get_state", { session_id: "view" });
    check("cp1600: Run stops at the breakpoint", st3.pc === target && (await frame.textContent("#status")).includes("breakpoint"), `pc ${st3.pc}, want ${target}; ${await frame.textContent("#status")}`);
    await shot("emulator-cp1600-breakpoint");
    await afterClick(frame, `#disasm div[data-addr='${target}']`);
    check("cp1600: clicking it again clears it", same((await ok("cp1600_list_breakpoints", { session_id: "view" })).breakpoints, []));

    // Memory: typing an address re-reads the session's memory there.
    await frame.fill("#memaddr", "$5000");
    const readsBefore = await readyCount(frame);
    await frame.press("#memaddr", "Enter");
    await frame.waitForFunction((n) => Number(document.body.dataset.ready || 0) > n, readsBefore);
    const words = (await ok("cp1600_examine_memory", { session_id: "view", start_address: 0x5000, count: 8 })).memory;
    const firstRow = (await frame.textContent("#memory")).split("\n")[0];
    check("cp1600: memory at a typed address shows cp1600_examine_memory's words",
        firstRow === "$5000: " + words.map((w) => w.value.toString(16).toUpperCase().padStart(4, "0")).join(" "), firstRow);
    await frame.fill("#memaddr", "$FFFF");
    const lastReads = await readyCount(frame);
    await frame.press("#memaddr", "Enter");
    await frame.waitForFunction((n) => Number(document.body.dataset.ready || 0) > n, lastReads);
    check("cp1600: an address near the top shows the last 64 words", (await frame.textContent("#memory")).startsWith("$FFC0: ") && (await frame.textContent("#memtitle")).includes("$FFC0"),
        (await frame.textContent("#memory")).slice(0, 40));
    await frame.fill("#memaddr", "nowhere");
    await frame.press("#memaddr", "Enter");
    check("cp1600: a bad memory address is refused in the view", (await frame.getAttribute("#status", "class")) === "error" && (await frame.textContent("#status")).includes("$0200"));

    // Frames and the hand controller, from the screen's pad.
    const beforeFrames = await ok("cp1600_get_state", { session_id: "view" });
    await afterClick(frame, "[data-pad='5']");
    await frame.fill("#n", "2");
    await afterClick(frame, "[data-pad='Frames']");
    const padCalls = await hostCalls();
    check("cp1600: the keypad button holds the key through cp1600_controller",
        padCalls.some((c) => c.name === "cp1600_controller" && c.arguments.key === "5" && c.arguments.controller === "left"), JSON.stringify(padCalls.slice(-3)));
    const afterFrames = await ok("cp1600_get_state", { session_id: "view" });
    check("cp1600: Frames runs frames on the server (cp1600_run_frames) and says how many",
        padCalls.some((c) => c.name === "cp1600_run_frames" && c.arguments.frames === 2) && afterFrames.cycles > beforeFrames.cycles
        && /frames|stopped/.test(await frame.textContent("#status")), await frame.textContent("#status"));

    // A refusal from the server is shown, not swallowed.
    await ok("cp1600_destroy_session", { session_id: "view" });
    await frame.click("#step");
    await frame.waitForSelector("#status.error");
    const refused = await frame.textContent("#status");
    check("cp1600: a tool's refusal (the session is gone) is shown with its code", refused.startsWith("cp1600_step: SESSION_NOT_FOUND"), refused);

    // --- x86 ------------------------------------------------------------------
    frame = await openView(VIEW);
    const loaded = await callWithView("x86_load_program", { path: "dos/greet.com", command_tail: "from the view" });
    const machine = loaded.structuredContent.machine;
    await frame.waitForSelector("[data-reg='IP']");
    const regs = await ok("read_cpu_registers", { machine });
    const want = {
        AX: regs.generalPurpose.EAX & 0xffff, BX: regs.generalPurpose.EBX & 0xffff, CX: regs.generalPurpose.ECX & 0xffff, DX: regs.generalPurpose.EDX & 0xffff,
        SI: regs.generalPurpose.ESI & 0xffff, DI: regs.generalPurpose.EDI & 0xffff, BP: regs.generalPurpose.EBP & 0xffff, SP: regs.generalPurpose.ESP & 0xffff,
        CS: regs.segments.CS, DS: regs.segments.DS, ES: regs.segments.ES, SS: regs.segments.SS, IP: regs.instructionPointer.IP,
    };
    check("x86: the registers shown are read_cpu_registers'", same(await shownRegs(frame), want), JSON.stringify(await shownRegs(frame)));
    const xd = await ok("x86_read_disassembly", { machine, instruction_count: 1 });
    const xpc = await frame.textContent("#disasm div.pc");
    check("x86: the line at CS:IP is highlighted and reads as x86_read_disassembly does", xpc.startsWith(xd.instructions[0].address) && xpc.includes(xd.instructions[0].asm), xpc);
    await afterClick(frame, "#step");
    const regs1 = await ok("read_cpu_registers", { machine });
    check("x86: Step moved the server's machine", regs1.instructionPointer.IP !== regs.instructionPointer.IP, `${regs.instructionPointer.IP} → ${regs1.instructionPointer.IP}`);
    check("x86: the view shows the new IP", (await shownRegs(frame)).IP === regs1.instructionPointer.IP);
    await afterClick(frame, "#run");
    const xshot = await mcp.callTool({ name: "x86_screenshot", arguments: { machine } });
    check("x86: the screen shown is x86_screenshot's PNG, with the text screen in its caption",
        (await frame.getAttribute("#screen", "src")) === "data:image/png;base64," + xshot.content.find((c) => c.type === "image").data
        && (await frame.textContent("#caption")).includes("mode: "), (await frame.textContent("#caption")).slice(0, 120));
    const con = await ok("x86_read_console", { machine });
    const shownConsole = await frame.textContent("#console");
    check("x86: after Run the DOS console shows the program's output (x86_read_console)", con.stdout.length > 0 && shownConsole.startsWith(con.stdout), `${JSON.stringify(shownConsole.slice(0, 200))} vs ${JSON.stringify(con.stdout.slice(0, 200))}`);
    await shot("emulator-x86");

    // A restored snapshot opens in the view as its own machine.
    const snap = await ok("x86_snapshot", { machine });
    frame = await openView(VIEW);
    const restored = (await callWithView("x86_restore_machine", { snapshot: snap.snapshot })).structuredContent;
    await frame.waitForSelector("[data-reg='IP']");
    const rregs = await ok("read_cpu_registers", { machine: restored.machine });
    check("x86: a restored snapshot is shown as the new machine, registers as read_cpu_registers says",
        (await frame.textContent("#target")) === `machine ${restored.machine}` && (await shownRegs(frame)).IP === rregs.instructionPointer.IP && (await shownRegs(frame)).SP === (rregs.generalPurpose.ESP & 0xffff),
        `${await frame.textContent("#target")} ${JSON.stringify(await shownRegs(frame))}`);

    // Keyboard: a program reading a key waits; a line typed in the view
    // reaches the server's machine and the program echoes it.
    // mov ah,1 / int 21h (read a key, echoed) / mov ah,4Ch / int 21h
    writeFileSync(join(ws, "dos", "key.com"), Buffer.from([0xB4, 0x01, 0xCD, 0x21, 0xB4, 0x4C, 0xCD, 0x21]));
    frame = await openView(VIEW);
    const keyMachine = (await callWithView("x86_load_program", { path: "dos/key.com", stdin_open: true })).structuredContent.machine;
    await frame.waitForSelector("[data-reg='IP']");
    await afterClick(frame, "#run");
    check("x86: a program reading the keyboard stops waiting for input", (await frame.textContent("#status")).includes("waiting_for_input"), await frame.textContent("#status"));
    await frame.fill("#kbd", "k");
    await afterClick(frame, "#type");
    const typed = hostCalls().then((cs) => cs.find((c) => c.name === "x86_write_console_input"));
    check("x86: Type queues the line through x86_write_console_input", same((await typed)?.arguments, { machine: keyMachine, text: "k\n" }), JSON.stringify(await typed));
    await afterClick(frame, "#run");
    const keyCon = await ok("x86_read_console", { machine: keyMachine });
    check("x86: the program read the typed key and echoed it", keyCon.stdout === "k" && keyCon.input.consumed === 1 && (await frame.textContent("#console")).startsWith("k"),
        `${JSON.stringify(keyCon.stdout)} consumed ${keyCon.input.consumed}`);
    check("x86: the view shows the input queue as the server has it", (await frame.textContent("#input")).startsWith(`${keyCon.input.pending} bytes queued, ${keyCon.input.consumed} read`), await frame.textContent("#input"));
    // A named key from the screen's pad is queued with its scan code.
    await afterClick(frame, "[data-pad='↑']");
    const keyCall = (await hostCalls()).find((c) => c.name === "x86_write_console_input" && c.arguments.keys);
    check("x86: the arrow button queues the up key through x86_write_console_input", same(keyCall?.arguments, { machine: keyMachine, keys: ["up"] }), JSON.stringify(keyCall));
});
