// benchtop's view side of MCP Apps (io.modelcontextprotocol/ui, protocol
// 2026-01-26, as @modelcontextprotocol/ext-apps 2.0.4 speaks it): JSON-RPC
// 2.0 over postMessage with the client (the parent frame). Written by hand
// rather than inlining the SDK's app-with-deps bundle (540 KB with zod) so a
// view stays a few KB and has nothing to load: the view asks `ui/initialize`,
// says `ui/notifications/initialized`, then receives tool input/results and
// may call the server's tools with `tools/call`.
"use strict";
const Bridge = (() => {
  const PROTOCOL_VERSION = "2026-01-26";
  const TIMEOUT_MS = 60000;
  const pending = new Map();
  const handlers = new Map();
  let nextId = 1;
  let hostContext = {};

  function send(message) {
    window.parent.postMessage(message, "*");
  }

  window.addEventListener("message", (event) => {
    // Only the client that framed this view speaks to it.
    if (event.source !== window.parent) return;
    const m = event.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.method === undefined && m.id !== undefined) {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.error) p.reject(new Error(m.error.message || "error " + m.error.code));
      else p.resolve(m.result);
      return;
    }
    if (typeof m.method !== "string") return;
    if (m.id !== undefined) {
      // Requests from the client: teardown and ping get an empty result.
      if (m.method === "ui/resource-teardown" || m.method === "ping") {
        send({ jsonrpc: "2.0", id: m.id, result: {} });
      } else {
        send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found: " + m.method } });
      }
      return;
    }
    if (m.method === "ui/notifications/host-context-changed") {
      applyContext(m.params || {});
    }
    for (const fn of handlers.get(m.method) || []) {
      try { fn(m.params || {}); } catch (e) { console.error(e); }
    }
  });

  function request(method, params) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(method + ": no answer from the client in " + TIMEOUT_MS / 1000 + " s"));
      }, TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer });
      send({ jsonrpc: "2.0", id, method, params });
    });
  }

  function notify(method, params) {
    send({ jsonrpc: "2.0", method, params: params || {} });
  }

  // The client's theme: `data-theme` for the view's CSS, and any CSS
  // variables it offers (styles.variables).
  function applyContext(ctx) {
    hostContext = Object.assign({}, hostContext, ctx);
    const root = document.documentElement;
    if (ctx.theme) root.dataset.theme = ctx.theme;
    const vars = ctx.styles && ctx.styles.variables;
    if (vars) for (const [k, v] of Object.entries(vars)) if (v) root.style.setProperty(k, v);
  }

  // Tells the client the content's size whenever it changes, so the frame fits.
  function watchSize() {
    let last = "";
    const report = () => {
      // The root's box is the content's height (scrollHeight would be at
      // least the frame's, so the frame could never shrink).
      const el = document.documentElement;
      const width = Math.ceil(el.scrollWidth), height = Math.ceil(el.getBoundingClientRect().height);
      const key = width + "x" + height;
      if (key === last) return;
      last = key;
      notify("ui/notifications/size-changed", { width, height });
    };
    new ResizeObserver(report).observe(document.documentElement);
    report();
  }

  return {
    /** Registers `fn(params)` for a notification from the client. */
    on(method, fn) {
      if (!handlers.has(method)) handlers.set(method, []);
      handlers.get(method).push(fn);
    },
    /** The handshake; resolves to the client's initialize result. */
    async connect(name, version) {
      const result = await request("ui/initialize", {
        appInfo: { name, version },
        appCapabilities: {},
        protocolVersion: PROTOCOL_VERSION,
      });
      applyContext((result && result.hostContext) || {});
      notify("ui/notifications/initialized", {});
      watchSize();
      return result;
    },
    /** Calls one of the server's tools through the client; resolves to its CallToolResult. */
    callTool(name, args) {
      return request("tools/call", { name, arguments: args || {} });
    },
    /** The text blocks of a CallToolResult, joined. */
    text(result) {
      return ((result && result.content) || [])
        .filter((b) => b && b.type === "text")
        .map((b) => b.text)
        .join("\n");
    },
    get hostContext() { return hostContext; },
  };
})();
