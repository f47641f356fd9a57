// The MCP Apps views in a test client: `benchtop serve` (stdio) on a temp
// copy of samples/ is the MCP server; a page in headless Chromium runs the
// ext-apps SDK's AppBridge (host/host.mjs) and frames each view as a client
// does (harness.mjs). Every check compares what the view shows with the
// tool's own answer from the same server. Takes the table and log plot
// screenshots (docs/screenshots/ with VIEWS_SCREENSHOTS=1).
//
// Usage: node views.test.mjs   (after `npm ci` and `npm run bundle`; test.sh does both)
// Env: see harness.mjs.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { VIEW_MIME, cellsOf, frontmatter, mdTables, same, startHarness, text } from "./harness.mjs";

const { ws, mcp, page, call, check, openView, callWithView, hostCalls, shot, run } = await startHarness({
    label: "table and log views",
    plugins: (ws) => [
        { wasm: "ecu_tables.wasm", env: { ECU_DEFINITIONS_PATH: `${ws}/ecu/definitions`, ECU_LOGS_DIR: `${ws}/logs` } },
        { wasm: "ecuflash.wasm" },
        { wasm: "log_query.wasm", env: { ECU_LOGS_DIR: `${ws}/logs` } },
        { wasm: "views.wasm" },
    ],
});
const status = (frame) => frame.textContent("#status");

/**
 * Clicks `selector` until `settled` matches. A view settles its layout
 * after it renders (it reports its size and the host resizes its frame),
 * and a click aimed just before that can miss: about 2 runs in 5 left a
 * cell's editor closed here. Each handler used this way changes the state
 * `settled` looks for at once, so a click that landed is not repeated.
 */
async function clickUntil(frame, selector, settled) {
    for (let attempt = 0; attempt < 5; attempt++) {
        await frame.click(selector);
        try {
            await frame.waitForSelector(settled, { state: "attached", timeout: 1000 });
            return;
        } catch { /* missed: aim again */ }
    }
    throw new Error(`clicking ${selector} never gave ${settled}`);
}

await run(async () => {
    // --- discovery: tools name their views; views carry their _meta ----------
    const tools = (await mcp.listTools()).tools;
    const viewOf = Object.fromEntries(tools.map((t) => [t.name, t._meta?.ui?.resourceUri]));
    check("plot_log names ui://benchtop/log-plot", viewOf.plot_log === "ui://benchtop/log-plot", JSON.stringify(viewOf.plot_log));
    for (const t of ["read_table", "patch_table", "overlay_log"]) {
        check(`${t} names ui://benchtop/ecu-table`, viewOf[t] === "ui://benchtop/ecu-table", JSON.stringify(viewOf[t]));
    }
    const listed = (await mcp.listResources()).resources.filter((r) => r.uri.startsWith("ui://"));
    const uris = listed.map((r) => r.uri);
    check("the table and log views are listed as MCP Apps resources",
        uris.includes("ui://benchtop/ecu-table") && uris.includes("ui://benchtop/log-plot") && listed.every((r) => r.mimeType === VIEW_MIME),
        JSON.stringify(listed.map((r) => [r.uri, r.mimeType])));
    for (const r of listed) {
        const read = (await mcp.readResource({ uri: r.uri })).contents[0];
        const ui = read._meta?.ui ?? {};
        check(`${r.uri}: read as ${VIEW_MIME} with a CSP of no outside domains and prefersBorder`,
            read.mimeType === VIEW_MIME && same(ui.csp?.connectDomains, []) && same(ui.csp?.resourceDomains, []) && ui.prefersBorder === true && same(r._meta, read._meta),
            JSON.stringify(read._meta));
    }

    // --- ECU table: read_table -------------------------------------------------
    const rom = "ecu/BT000001.bin";
    const table = "Ignition Timing Base Map";
    let frame = await openView("ui://benchtop/ecu-table");
    check("ecu-table: handshake (ui/initialize, initialized)", await page.evaluate(() => window.host.initialized));
    const read = await callWithView("read_table", { rom, table });
    await frame.waitForSelector("#grid td[data-row]");
    const readMd = mdTables(text(read))[0];
    const fm = frontmatter(text(read));
    const shown = await frame.$$eval("#grid td[data-row]", (tds) => Object.fromEntries(tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.value])));
    const shownText = await frame.$$eval("#grid td[data-row]", (tds) => tds.map((td) => td.textContent));
    check("ecu-table: every cell shows read_table's value", same(shown, cellsOf(readMd)) && same(shownText, Object.values(cellsOf(readMd))),
        `view ${JSON.stringify(shown).slice(0, 300)}`);
    const xs = await frame.$$eval("#grid tr:nth-child(2) th", (ths) => ths.slice(1).map((t) => t.textContent));
    const ys = await frame.$$eval("#grid tr", (trs) => trs.slice(2).map((tr) => tr.querySelector("th:not(.yaxis)").textContent));
    check("ecu-table: axes show read_table's breakpoints", same(xs, readMd.header.slice(1)) && same(ys, readMd.rows.map((r) => r[0])), `${xs} / ${ys}`);
    check("ecu-table: a table shown whole has no pager", !(await frame.isVisible("#pager")));
    const axisText = await frame.textContent("#grid");
    const meta = await frame.textContent("#meta");
    check("ecu-table: axis names with units and the value unit", axisText.includes(fm.x_axis) && axisText.includes(fm.y_axis) && meta.includes(`unit: ${fm.unit}`), `${fm.x_axis} ${fm.y_axis} ${meta}`);
    const colors = await frame.$$eval("#grid td[data-row]", (tds) => new Set(tds.map((td) => td.style.background)).size);
    check("ecu-table: cells are coloured by value (heatmap)", colors > 10, `${colors} colours`);
    check("ecu-table: the view reported its size", (await page.evaluate(() => window.host.sizes.length)) > 0);
    await shot("ecu-table");

    // --- patch_table by the agent: the changed cells are highlighted ----------
    const patch = await callWithView("patch_table", { rom, table, op: "add", value: 0.5, rows_where: "3000..3500", cols_where: "40..60" });
    await frame.waitForFunction(() => document.querySelectorAll("#grid td.changed").length > 0);
    const after = cellsOf(mdTables(text(patch))[0]);
    const before = cellsOf(readMd);
    const reallyChanged = Object.keys(after).filter((k) => after[k] !== before[k]).sort();
    const marked = (await frame.$$eval("#grid td.changed", (tds) => tds.map((td) => `${td.dataset.row},${td.dataset.col}`))).sort();
    check("ecu-table: after patch_table, exactly the changed cells are highlighted", reallyChanged.length === 4 && same(marked, reallyChanged), `marked ${marked} changed ${reallyChanged}`);
    const shownAfter = await frame.$$eval("#grid td[data-row]", (tds) => Object.fromEntries(tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.value])));
    check("ecu-table: the view shows patch_table's values", same(shownAfter, after));
    await shot("ecu-table-patched");

    // --- a patch the view did not see the table before: the answer says where ---
    frame = await openView("ui://benchtop/ecu-table");
    const pre = cellsOf(mdTables(text(await call("read_table", { rom, table })))[0]);
    const wide = await callWithView("patch_table", { rom, table, op: "add", value: -0.5, rows_where: "2000..3000" });
    await frame.waitForFunction(() => document.querySelectorAll("#grid td.changed").length > 0);
    const post = cellsOf(mdTables(text(wide))[0]);
    const wideChanged = Object.keys(post).filter((k) => post[k] !== pre[k]).sort();
    const wideMarked = (await frame.$$eval("#grid td.changed", (tds) => tds.map((td) => `${td.dataset.row},${td.dataset.col}`))).sort();
    check("ecu-table: a patch of more cells than its answer lists is highlighted from its rows_where note",
        /and \d+ more/.test(frontmatter(text(wide)).operation) && wideChanged.length === 30 && same(wideMarked, wideChanged), `marked ${wideMarked.length}, changed ${wideChanged.length}`);

    // --- an edit in the view: refused without confirmation, applied with it ---
    frame = await openView("ui://benchtop/ecu-table");
    const fresh = await callWithView("read_table", { rom, table });
    await frame.waitForSelector("#grid td[data-row]");
    const target = { row: 7, col: 2 };
    const old = cellsOf(mdTables(text(fresh))[0])[`${target.row},${target.col}`];
    const next = (Number(old) + 1.5).toFixed(1);
    await clickUntil(frame, `#grid td[data-row="${target.row}"][data-col="${target.col}"]`, "#editor.open");
    await frame.fill("#edit-value", next);
    await clickUntil(frame, "#edit-patch", "#confirm.open");
    const confirmText = await frame.textContent("#confirm-text");
    check("ecu-table: an edit asks for confirmation first, naming cell and value", confirmText.includes(`[${target.row},${target.col}]`) && confirmText.includes(next), confirmText);
    await clickUntil(frame, "#confirm-no", "#confirm:not(.open)");
    const unchanged = cellsOf(mdTables(text(await call("read_table", { rom, table })))[0])[`${target.row},${target.col}`];
    check("ecu-table: a cancelled edit calls no tool and leaves the ROM as it was",
        (await hostCalls()).length === 0 && unchanged === old && (await status(frame)).includes("cancelled"), `calls ${JSON.stringify(await hostCalls())}, cell ${unchanged}`);
    await clickUntil(frame, "#edit-patch", "#confirm.open");
    await clickUntil(frame, "#confirm-yes", "#confirm:not(.open)");
    await frame.waitForFunction(() => /patched/.test(document.getElementById("status").textContent) || document.getElementById("status").className === "error");
    const calls = await hostCalls();
    check("ecu-table: a confirmed edit calls patch_table through the bridge (set on one cell)",
        calls.length === 1 && calls[0].name === "patch_table" && same(calls[0].arguments, { rom, table, op: "set", value: Number(next), row: target.row, col: target.col }), JSON.stringify(calls));
    const readBack = cellsOf(mdTables(text(await call("read_table", { rom, table })))[0])[`${target.row},${target.col}`];
    const cellNow = await frame.$eval(`#grid td[data-row="${target.row}"][data-col="${target.col}"]`, (td) => [td.dataset.value, td.classList.contains("changed")]);
    check("ecu-table: the edit is in the ROM (read_table) and highlighted in the view", readBack === next && cellNow[0] === next && cellNow[1] && (await frame.$$("#grid td.changed")).length === 1,
        `read_table ${readBack}, view ${cellNow}, want ${next}`);
    // A value the scaling refuses: the view shows patch_table's refusal.
    await frame.focus(`#grid td[data-row="0"][data-col="0"]`);
    await frame.press(`#grid td[data-row="0"][data-col="0"]`, "Enter");
    check("ecu-table: a cell opens its editor from the keyboard too", (await frame.textContent("#edit-where")).startsWith("Cell [0,0]"), await frame.textContent("#edit-where"));
    await frame.fill("#edit-value", "1000000");
    await clickUntil(frame, "#edit-patch", "#confirm.open");
    await clickUntil(frame, "#confirm-yes", "#confirm:not(.open)");
    await frame.waitForSelector("#status.error");
    const refusal = await status(frame);
    check("ecu-table: a refused patch shows patch_table's refusal", /^patch_table refused: \S+/.test(refusal), refusal);

    // --- a refusal the agent got is shown as one, the table kept -------------------
    const refused = await callWithView("patch_table", { rom, table, op: "set", value: 1, row: 99, col: 0 });
    await frame.waitForSelector("#status.error");
    check("ecu-table: a patch_table refusal delivered by the client is shown, the table kept",
        refused.isError && (await status(frame)).startsWith("patch_table refused: ") && (await status(frame)).includes(text(refused).slice(0, 40)) && (await frame.$$("#grid td[data-row]")).length > 0,
        await status(frame));

    // --- propose_patch: marked over the table, applied only when confirmed -------
    frame = await openView("ui://benchtop/ecu-table");
    const propArgs = { rom, table, file: "log-2026-02-22T14-30-00-000Z.csv", filter: "Knock > 0", op: "add", value: -1, clamp_to_edges: true };
    const prop = await callWithView("propose_patch", propArgs);
    await frame.waitForFunction(() => document.querySelectorAll("#grid td.proposed").length > 0 || document.getElementById("status").className === "error", null, { timeout: 30000 });
    const propMd = mdTables(text(prop)).find((x) => /proposed/i.test(x.heading));
    const propWant = Object.fromEntries(propMd.rows.map((r) => [`${r[0]},${r[1]}`, r[propMd.header.indexOf("New")]]));
    const propShown = await frame.$$eval("#grid td.proposed", (tds) => Object.fromEntries(tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.proposed])));
    check("ecu-table: propose_patch's cells and new values are marked on the table", Object.keys(propWant).length > 0 && same(propShown, propWant),
        `view ${JSON.stringify(propShown)} tool ${JSON.stringify(propWant)} ${await status(frame)}`);
    await shot("ecu-table-proposal");
    const applyArgs = JSON.parse(/```json\n([\s\S]*?)\n```/.exec(text(prop))[1]);
    await clickUntil(frame, "#apply", "#apply-confirm.open");
    await clickUntil(frame, "#apply-no", "#apply-confirm:not(.open)");
    const propCalls = await hostCalls();
    check("ecu-table: a cancelled proposal writes nothing (only read_table was called)",
        propCalls.every((c) => c.name === "read_table") && (await status(frame)).includes("cancelled"), JSON.stringify(propCalls));
    const beforeApply = cellsOf(mdTables(text(await call("read_table", { rom, table })))[0]);
    await clickUntil(frame, "#apply", "#apply-confirm.open");
    await clickUntil(frame, "#apply-yes", "#apply-confirm:not(.open)");
    await frame.waitForFunction(() => /patched/.test(document.getElementById("status").textContent) || document.getElementById("status").className === "error");
    const applyCall = (await hostCalls()).filter((c) => c.name === "patch_table");
    const afterApply = cellsOf(mdTables(text(await call("read_table", { rom, table })))[0]);
    const applied = Object.keys(afterApply).filter((k) => afterApply[k] !== beforeApply[k]).sort();
    const appliedMarked = (await frame.$$eval("#grid td.changed", (tds) => tds.map((td) => `${td.dataset.row},${td.dataset.col}`))).sort();
    check("ecu-table: a confirmed proposal calls patch_table with the answer's arguments; the ROM holds the new values",
        applyCall.length === 1 && same(applyCall[0].arguments, applyArgs) && same(applied, Object.keys(propWant).sort()) && applied.every((k) => afterApply[k] === propWant[k]) && same(appliedMarked, applied),
        `call ${JSON.stringify(applyCall)} changed ${applied} marked ${appliedMarked} status ${await status(frame)}`);

    // --- a proposal past the diff's 100 rows: counted and outlined from its arguments ---
    // The sample table has 120 cells, so the diff is cut here as propose_patch
    // cuts it past MAX_DIFF_ROWS: its first rows, then "N more cells not shown".
    frame = await openView("ui://benchtop/ecu-table");
    const bigArgs = { rom, table, filter: "1", op: "add", value: -1, clamp_to_edges: true };
    const big = await call("propose_patch", bigArgs);
    const bigText = text(big);
    const bigApply = JSON.parse(/```json\n([\s\S]*?)\n```/.exec(bigText)[1]);
    const keep = 10;
    const lines = bigText.split("\n");
    const firstRow = lines.findIndex((l) => /^\|[-| ]+\|$/.test(l)) + 1;
    const lastRow = lines.findIndex((l, i) => i >= firstRow && !l.startsWith("|"));
    const cut = [...lines.slice(0, firstRow + keep), "", `${lastRow - firstRow - keep} more cells not shown; the arguments below list them all.`, ...lines.slice(lastRow)].join("\n");
    const capped = { ...big, content: [{ type: "text", text: cut }] };
    await page.evaluate(([a, r]) => window.host.deliver(a, r), [bigArgs, capped]);
    await frame.waitForFunction(() => document.getElementById("proposal").classList.contains("open") || document.getElementById("status").className === "error", null, { timeout: 30000 });
    const bigCells = bigApply.cells.map(([r, c]) => `${r},${c}`).sort();
    const bigMarked = await frame.$$eval("#grid td.proposed", (tds) => tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.proposed ?? null]));
    const cutMd = mdTables(cut).find((x) => /proposed/i.test(x.heading));
    const cutWant = Object.fromEntries(cutMd.rows.map((r) => [`${r[0]},${r[1]}`, r[cutMd.header.indexOf("New")]]));
    check("ecu-table: a proposal whose diff is cut outlines every cell of its patch_table arguments",
        bigCells.length > keep && cutMd.rows.length === keep && same(bigMarked.map((x) => x[0]).sort(), bigCells) &&
        bigMarked.every(([k, v]) => (k in cutWant ? v === cutWant[k] : v === null)),
        `marked ${bigMarked.length} of ${bigCells.length}: ${JSON.stringify(bigMarked).slice(0, 300)}`);
    await clickUntil(frame, "#apply", "#apply-confirm.open");
    const bigConfirm = await frame.textContent("#apply-text");
    check("ecu-table: the apply confirmation counts the cells written and says how many are shown",
        bigConfirm.startsWith(`Write ${bigCells.length} cells of ${table}`) && bigConfirm.includes(`all ${bigCells.length} outlined`) && bigConfirm.includes(`${keep} listed with new values`),
        bigConfirm);
    await clickUntil(frame, "#apply-no", "#apply-confirm:not(.open)");
    check("ecu-table: cancelling it writes nothing", (await hostCalls()).every((c) => c.name === "read_table"), JSON.stringify(await hostCalls()));

    // --- 1D table --------------------------------------------------------------
    const idle = await callWithView("read_table", { rom, table: "Idle Speed Target" });
    await frame.waitForFunction(() => document.getElementById("title").textContent === "Idle Speed Target");
    const idleRows = mdTables(text(idle))[0].rows;
    const idleShown = await frame.$$eval("#grid td[data-row]", (tds) => tds.map((td) => [Number(td.dataset.row), Number(td.dataset.col), td.dataset.value]));
    check("ecu-table: a 1D table shows each breakpoint's value at its row index", same(idleShown, idleRows.map((r, i) => [i, 0, r[1]])), JSON.stringify(idleShown));

    // --- a window of a table: indices stay absolute, as patch_table takes them ---
    const win = await callWithView("read_table", { rom, table, row_start: 3, row_count: 4, col_start: 2, col_count: 5 });
    await frame.waitForFunction(() => document.querySelectorAll("#grid td[data-row]").length === 20);
    const winMd = mdTables(text(win))[0];
    const winWant = {};
    winMd.rows.forEach((r, i) => r.slice(1).forEach((v, j) => { winWant[`${i + 3},${j + 2}`] = v; }));
    const winShown = await frame.$$eval("#grid td[data-row]", (tds) => Object.fromEntries(tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.value])));
    check("ecu-table: a window of a table keeps read_table's absolute indices", same(winShown, winWant), JSON.stringify(winShown).slice(0, 300));

    // The pager reads the next rows of the same size through the bridge.
    await frame.click("#rows-next");
    await frame.waitForFunction(() => document.querySelector("#grid td[data-row]")?.dataset.row === "7");
    const nextMd = mdTables(text(await call("read_table", { rom, table, row_start: 7, row_count: 4, col_start: 2, col_count: 5 })))[0];
    const nextWant = {};
    nextMd.rows.forEach((r, i) => r.slice(1).forEach((v, j) => { nextWant[`${i + 7},${j + 2}`] = v; }));
    const nextShown = await frame.$$eval("#grid td[data-row]", (tds) => Object.fromEntries(tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.value])));
    const pageCall = (await hostCalls()).at(-1);
    check("ecu-table: the pager shows read_table's next window",
        same(nextShown, nextWant) && pageCall?.name === "read_table" && pageCall.arguments.row_start === 7 && (await frame.textContent("#pager-rows")) === "rows 7–10 of 12",
        `${JSON.stringify(nextShown).slice(0, 200)} ${JSON.stringify(pageCall)} ${await frame.textContent("#pager-rows")}`);

    // --- overlay_log: hits and a channel's mean/max per cell ----------------------
    const ov = await callWithView("overlay_log", { rom, table, file: "log-2026-02-22T14-30-00-000Z.csv", channels: ["Knock"], stats: ["mean", "max"] });
    await frame.waitForFunction(() => document.querySelectorAll("#grid td[data-hits]").length > 0);
    const ovTables = mdTables(text(ov));
    const hitsWant = cellsOf(ovTables.find((t) => /samples per cell/i.test(t.heading)));
    const hitsShown = await frame.$$eval("#grid td[data-row]", (tds) => Object.fromEntries(tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.hits])));
    check("ecu-table: overlay hits per cell equal overlay_log's samples per cell", same(hitsShown, hitsWant), JSON.stringify(hitsShown).slice(0, 200));
    check("ecu-table: an overlay has no pager (it is not a window of read_table)", !(await frame.isVisible("#pager")));
    const layers = await frame.$$eval("#layer option", (os) => os.map((o) => o.textContent));
    check("ecu-table: overlay layers are overlay_log's grids", same(layers, ovTables.map((t) => t.heading)), JSON.stringify(layers));
    const maxIdx = layers.findIndex((l) => /knock: max/i.test(l));
    await frame.selectOption("#layer", String(maxIdx));
    const maxShown = await frame.$$eval("#grid td[data-row]", (tds) => Object.fromEntries(tds.map((td) => [`${td.dataset.row},${td.dataset.col}`, td.dataset.value])));
    check("ecu-table: the Knock max layer shows overlay_log's per-cell max", maxIdx > 0 && same(maxShown, cellsOf(ovTables[maxIdx])));
    await frame.selectOption("#layer", "0");
    await shot("ecu-table-overlay");

    await page.evaluate(() => window.host.cancel("user stopped it"));
    await frame.waitForFunction(() => /cancelled/.test(document.getElementById("status").textContent));
    check("ecu-table: a cancelled tool call is said so", (await status(frame)) === "the tool call was cancelled: user stopped it", await status(frame));

    // --- log plot, in the client's dark theme ------------------------------------
    frame = await openView("ui://benchtop/log-plot", "dark");
    check("log-plot: takes the client's theme from the host context", (await frame.evaluate(() => document.documentElement.dataset.theme)) === "dark");
    const bad = await callWithView("plot_log", { file: "no-such.csv" });
    await frame.waitForSelector("#status.error");
    check("log-plot: plot_log's refusal is shown", bad.isError && (await status(frame)).startsWith("plot_log refused: "), await status(frame));
    const file = "log-2026-02-22T14-30-00-000Z.csv";
    const filter = "Knock > 0";
    const plot = await callWithView("plot_log", { file, filter });
    await frame.waitForSelector("#chart[data-ready='1']", { timeout: 60000 });
    const summary = text(plot);
    const wantMatches = Number(/Highlighted \(red\): (\d+) rows/.exec(summary)[1]);
    const info = await frame.evaluate(() => ({ ...document.getElementById("chart").dataset }));
    check("log-plot: highlighted matches equal plot_log's count", Number(info.matches) === wantMatches, `${info.matches} vs ${wantMatches}`);
    const panels = [...summary.matchAll(/(?:Panels: |; )(.+?) -?[\d.]+…-?[\d.]+/g)].map((m) => m[1]);
    check("log-plot: one panel per plot_log panel", same(info.channels.split("\t"), panels), `${info.channels} vs ${panels}`);
    const viewCalls = await hostCalls();
    check("log-plot: rows come through the bridge from query_logs", viewCalls.length >= 2 && viewCalls.every((c) => c.name === "query_logs" && c.arguments.file === file), JSON.stringify(viewCalls));
    // Hover: the values shown are the log's row at that time (query_logs).
    const box = await frame.locator("#chart").boundingBox();
    await page.mouse.move(box.x + box.width * 0.4, box.y + 60);
    await frame.waitForSelector("#hover[data-time]");
    const hover = await frame.evaluate(() => ({ ...document.getElementById("hover").dataset }));
    const t = Number(hover.time);
    const rowAt = await call("query_logs", { file, filter: `Time >= ${t - 0.0005} && Time <= ${t + 0.0005}`, channels: panels });
    const want = mdTables(text(rowAt))[0];
    const got = JSON.parse(hover.values);
    check("log-plot: hover values equal query_logs' row at that time",
        want && want.rows.length === 1 && panels.every((p) => Number(got[p]) === Number(want.rows[0][want.header.indexOf(p)])),
        `hover ${hover.values} at ${t}; query_logs ${JSON.stringify(want?.rows)}`);
    await shot("log-plot");
    // Zoom: a drag selects a time window; the axis follows; reset restores it.
    const full = [Number(info.start), Number(info.end)];
    await page.mouse.move(box.x + box.width * 0.3, box.y + 80);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, box.y + 80, { steps: 5 });
    await page.mouse.up();
    const zoomed = await frame.evaluate(() => [Number(document.getElementById("chart").dataset.start), Number(document.getElementById("chart").dataset.end)]);
    check("log-plot: dragging zooms into a narrower window", zoomed[0] > full[0] && zoomed[1] < full[1] && zoomed[1] - zoomed[0] < (full[1] - full[0]) * 0.4, `${zoomed} in ${full}`);
    await shot("log-plot-zoomed");
    await page.evaluate(() => window.host.theme("light"));
    await frame.waitForFunction(() => document.documentElement.dataset.theme === "light");
    await frame.click("#reset");
    const reset = await frame.evaluate(() => [Number(document.getElementById("chart").dataset.start), Number(document.getElementById("chart").dataset.end)]);
    check("log-plot: reset shows the whole window again", same(reset, full), `${reset} vs ${full}`);

    // A RomRaider log (channel names with spaces and units), a time window, no filter.
    const rr = "romraiderlog_20260221_180000.csv";
    const plot2 = await callWithView("plot_log", { file: rr, start_s: 20, end_s: 40 });
    await frame.waitForFunction((f) => document.getElementById("title").textContent === f && document.getElementById("chart").dataset.ready === "1" || document.getElementById("status").className === "error", rr, { timeout: 60000 });
    check("log-plot: the RomRaider log loads", !(await frame.$("#status.error")), await status(frame));
    const s2 = text(plot2);
    const head2 = /: (\d+) rows, (-?[\d.]+)…(-?[\d.]+) s/.exec(s2);
    const info2 = await frame.evaluate(() => ({ ...document.getElementById("chart").dataset }));
    const panels2 = [...s2.matchAll(/(?:Panels: |; )(.+?) -?[\d.]+…-?[\d.]+/g)].map((m) => m[1]);
    check("log-plot: a windowed plot spans plot_log's window and panels, no matches",
        head2 && Number(info2.start) === Number(head2[2]) && Number(info2.end) === Number(head2[3]) && same(info2.channels.split("\t"), panels2) && info2.matches === "0",
        `view ${info2.start}…${info2.end} ${info2.channels}; plot_log ${head2?.[0]} ${panels2}`);
    await page.mouse.move(box.x + box.width * 0.6, box.y + 60);
    await frame.waitForFunction((old) => document.getElementById("hover").dataset.time && document.getElementById("hover").dataset.values !== old, hover.values);
    const hover2 = await frame.evaluate(() => ({ ...document.getElementById("hover").dataset }));
    const t2 = Number(hover2.time);
    // Its time column is 'Time (msec)', so no time filter: every row, found by time.
    const all2 = mdTables(text(await call("query_logs", { file: rr, filter: "1", channels: panels2, limit: 5000 })))[0];
    const row2 = all2.rows.filter((r) => Number(r[0]) === t2);
    const got2 = JSON.parse(hover2.values);
    check("log-plot: hover on the RomRaider log equals query_logs' row",
        row2.length === 1 && t2 >= 20 && t2 <= 40 && panels2.every((p) => Number(got2[p]) === Number(row2[0][all2.header.indexOf(p)])),
        `hover ${hover2.values} at ${t2}; query_logs ${JSON.stringify(row2)}`);

    // --- a long log: a zoomed window is fetched at full resolution --------------
    // 30000 rows at 50 Hz (RomRaider's 'Time (msec)'), one-row knock spikes on
    // odd rows: the whole-log plot (thinned to 5000 rows, every 6th) has none.
    const long = "romraiderlog_20260301_120000.csv";
    const longRows = ["Time (msec),Engine Speed (rpm),Knock Sum (count)"];
    for (let i = 0; i < 30000; i++) longRows.push(`${i * 20},${Math.round(3000 + 2000 * Math.sin(i / 700) + (i % 7))},${i % 100 === 51 ? 7 : 0}`);
    writeFileSync(join(ws, "logs", long), longRows.join("\n") + "\n");
    const longCh = ["Engine Speed (rpm)", "Knock Sum (count)"];
    await callWithView("plot_log", { file: long, channels: longCh });
    await frame.waitForFunction((f) => document.getElementById("title").textContent === f && document.getElementById("chart").dataset.ready === "1" || document.getElementById("status").className === "error", long, { timeout: 60000 });
    const lInfo = await frame.evaluate(() => ({ ...document.getElementById("chart").dataset }));
    const lFull = [Number(lInfo.start), Number(lInfo.end)];
    const density = Number(lInfo.points) / (lFull[1] - lFull[0]);
    check("log-plot: a long log is drawn thinned to query_logs' 5000 rows", Number(lInfo.points) <= 5000 && Number(lInfo.points) > 4000 && lInfo.detail === "none",
        JSON.stringify(lInfo));
    const lBox = await frame.locator("#chart").boundingBox();
    await page.mouse.move(lBox.x + lBox.width * 0.3, lBox.y + 80);
    await page.mouse.down();
    await page.mouse.move(lBox.x + lBox.width * 0.35, lBox.y + 80, { steps: 5 });
    await page.mouse.up();
    await frame.waitForFunction(() => ["ready", "error"].includes(document.getElementById("chart").dataset.detail), null, { timeout: 30000 });
    const zInfo = await frame.evaluate(() => ({ ...document.getElementById("chart").dataset }));
    const [z0, z1] = [Number(zInfo.start), Number(zInfo.end)];
    const msec = (a, b) => `'Time (msec)' >= ${Math.round(a * 1000)} && 'Time (msec)' <= ${Math.round(b * 1000)}`;
    const inZoom = mdTables(text(await call("query_logs", { file: long, filter: msec(z0, z1), channels: longCh, limit: 5000 })))[0];
    check("log-plot: a zoomed window of a long log draws query_logs' every row in it, more than the thinned density",
        zInfo.detail === "ready" && Number(zInfo.points) === inZoom.rows.length && Number(zInfo.points) > density * (z1 - z0) * 3,
        `view ${zInfo.points} points in ${z0}…${z1} (${zInfo.detail}); query_logs ${inZoom.rows.length}; thinned ${Math.round(density * (z1 - z0))}`);
    // Hover on a knock spike (a row the thinned plot lacks): query_logs' row.
    const spike = inZoom.rows.find((r) => Number(r[inZoom.header.indexOf("Knock Sum (count)")]) === 7);
    const ts = Number(spike[0]);
    const plotW = lBox.width - 64 - 12; // the view's PAD.left and PAD.right
    await page.mouse.move(lBox.x + 64 + (ts - z0) / (z1 - z0) * plotW, lBox.y + 60);
    await frame.waitForFunction((t) => Math.abs(Number(document.getElementById("hover").dataset.time) - t) < 0.05, ts);
    const lHover = await frame.evaluate(() => ({ ...document.getElementById("hover").dataset }));
    const lt = Number(lHover.time);
    const lRow = inZoom.rows.filter((r) => Number(r[0]) === lt);
    const lGot = JSON.parse(lHover.values);
    check("log-plot: hover in a zoomed window equals query_logs' row there, spikes included",
        lRow.length === 1 && longCh.every((c) => Number(lGot[c]) === Number(lRow[0][inZoom.header.indexOf(c)])) && inZoom.rows.some((r) => Number(r[0]) === ts),
        `hover ${lHover.values} at ${lt} (spike at ${ts}); query_logs ${JSON.stringify(lRow)}`);
    // A wider zoom (more than 5000 rows) is thinned within the window, still denser.
    await frame.click("#reset");
    await page.mouse.move(lBox.x + lBox.width * 0.1, lBox.y + 80);
    await page.mouse.down();
    await page.mouse.move(lBox.x + lBox.width * 0.6, lBox.y + 80, { steps: 5 });
    await page.mouse.up();
    await frame.waitForFunction(() => ["ready", "error"].includes(document.getElementById("chart").dataset.detail), null, { timeout: 30000 });
    const wInfo = await frame.evaluate(() => ({ ...document.getElementById("chart").dataset }));
    const wSpan = Number(wInfo.end) - Number(wInfo.start);
    check("log-plot: a wide zoomed window is thinned to about 5000 rows within it",
        wInfo.detail === "ready" && Number(wInfo.points) <= 5000 && Number(wInfo.points) > 4000 && Number(wInfo.points) > density * wSpan * 1.3,
        `view ${wInfo.points} points in ${wSpan} s; thinned ${Math.round(density * wSpan)}`);
    await frame.click("#reset");
    const rInfo = await frame.evaluate(() => ({ ...document.getElementById("chart").dataset }));
    check("log-plot: reset draws the whole log's thinned rows again", rInfo.points === lInfo.points && rInfo.detail === "none", `${rInfo.points} vs ${lInfo.points}`);
});
