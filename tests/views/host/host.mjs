// The test host's page script (bundled by esbuild into dist/host.js): the
// ext-apps SDK's host side, as an MCP Apps client runs it. A view is
// framed in a sandboxed iframe (scripts only, opaque origin) with the CSP its
// resource's `_meta.ui.csp` asks for; an AppBridge over a
// PostMessageTransport speaks to it; the view's tools/call requests go to
// the MCP server through `window.mcpCall` (a function the node test exposes).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

/** The CSP a client derives from `_meta.ui.csp`: only the declared domains. */
function cspOf(csp = {}) {
  const list = (domains) => (domains && domains.length ? " " + domains.join(" ") : "");
  const res = list(csp.resourceDomains);
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline'${res}`,
    `style-src 'unsafe-inline'${res}`,
    `img-src data: blob:${res}`,
    `font-src${res || " 'none'"}`,
    `connect-src${list(csp.connectDomains) || " 'none'"}`,
    `frame-src${list(csp.frameDomains) || " 'none'"}`,
  ].join("; ");
}

let bridge = null;
const host = {
  calls: [],
  sizes: [],
  logs: [],
  initialized: false,

  /** Frames `html` and completes the handshake; resolves once the view said initialized. */
  async open(html, meta, theme) {
    if (bridge) await host.close();
    host.calls = [];
    host.sizes = [];
    host.initialized = false;
    const policy = `<meta http-equiv="Content-Security-Policy" content="${cspOf(meta?.ui?.csp)}">`;
    const doc = /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (h) => h + policy) : policy + html;
    // One frame for the page's life, navigated to each view: the test's
    // handle on it (a playwright Frame) stays valid across views.
    let frame = document.getElementById("view");
    if (!frame) {
      frame = document.createElement("iframe");
      frame.id = "view";
      frame.setAttribute("sandbox", "allow-scripts");
      document.getElementById("stage").appendChild(frame);
    }
    frame.style.border = meta?.ui?.prefersBorder ? "1px solid #bbb" : "none";
    frame.style.width = "100%";
    frame.style.height = "600px";
    bridge = new AppBridge(null, { name: "benchtop-views-test-host", version: "0.1.0" },
      { serverTools: {}, logging: {} },
      { hostContext: { theme: theme || "light", displayMode: "inline", platform: "web", containerDimensions: { maxHeight: 900, width: 900 } } });
    bridge.oncalltool = async (params) => {
      host.calls.push({ name: params.name, arguments: params.arguments || {} });
      return JSON.parse(await window.mcpCall(params.name, JSON.stringify(params.arguments || {})));
    };
    bridge.onsizechange = ({ width, height }) => {
      host.sizes.push({ width, height });
      if (height) frame.style.height = Math.min(height + 4, 900) + "px";
    };
    bridge.onloggingmessage = (m) => host.logs.push(m);
    const ready = new Promise((resolve) => { bridge.oninitialized = () => { host.initialized = true; resolve(); }; });
    // The transport must listen before the frame's script runs.
    const loaded = new Promise((resolve) => frame.addEventListener("load", resolve, { once: true }));
    frame.srcdoc = doc;
    await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
    await loaded;
    await ready;
  },

  /** What a client does around a tool call: the arguments, then the result. */
  async deliver(args, result) {
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
  },

  /** The client cancelled the tool call (ui/notifications/tool-cancelled). */
  async cancel(reason) {
    await bridge.sendToolCancelled({ reason });
  },

  /** A theme change, as a client sends it (ui/notifications/host-context-changed). */
  theme(theme) {
    bridge.setHostContext({ theme });
  },

  async close() {
    try { await bridge.teardownResource({}); } catch { /* a view that is gone */ }
    await bridge.close();
    bridge = null;
  },
};
window.host = host;
