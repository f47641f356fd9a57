// A minimal MCP client over streamable HTTP with plain fetch: initialize,
// notifications/initialized, then tools/call with the Mcp-Session-Id header.
export class McpClient {
    constructor(url) {
        this.url = url;
        this.session = null;
        this.nextId = 1;
    }

    async #post(body) {
        const headers = {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
        };
        if (this.session) headers["mcp-session-id"] = this.session;
        const res = await fetch(this.url, { method: "POST", headers, body: JSON.stringify(body) });
        if (!res.ok && res.status !== 202) throw new Error(`MCP ${body.method}: HTTP ${res.status} ${await res.text()}`);
        this.session = res.headers.get("mcp-session-id") ?? this.session;
        if (body.id === undefined) return null;
        const type = res.headers.get("content-type") ?? "";
        const text = await res.text();
        let messages;
        if (type.includes("text/event-stream")) {
            messages = text.split(/\r?\n\r?\n/).map((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
        } else {
            messages = [JSON.parse(text)];
        }
        const reply = messages.find((m) => m.id === body.id);
        if (!reply) throw new Error(`MCP ${body.method}: no reply in ${text.slice(0, 500)}`);
        if (reply.error) throw new Error(`MCP ${body.method}: ${JSON.stringify(reply.error)}`);
        return reply.result;
    }

    async initialize() {
        const result = await this.#post({
            jsonrpc: "2.0", id: this.nextId++, method: "initialize",
            params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "benchtop-web-test", version: "0.1.0" } },
        });
        await this.#post({ jsonrpc: "2.0", method: "notifications/initialized" });
        return result;
    }

    /** Calls a tool; returns its structured content (or parsed text); throws on isError. */
    async call(name, args = {}) {
        const result = await this.#post({ jsonrpc: "2.0", id: this.nextId++, method: "tools/call", params: { name, arguments: args } });
        const text = result.content?.map((c) => c.text ?? "").join("") ?? "";
        if (result.isError) throw new Error(`${name}: ${text}`);
        return result.structuredContent ?? JSON.parse(text);
    }
}
