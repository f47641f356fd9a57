//! The native reference server for `make bench`: the kitchen-sink component's
//! trivial `hello` tool served directly by an rmcp `ServerHandler` over
//! stdio, so the transport benchmark can compare benchtop with no component
//! in between. Run by the `native_hello` binary (and by `bench` itself,
//! re-executed with [`NATIVE_HELLO_ARG`]).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;

/// The argument that makes the `bench` binary act as the native server.
pub const NATIVE_HELLO_ARG: &str = "--serve-native-hello";

/// What kitchen-sink's `hello` returns.
pub const HELLO_TEXT: &str = "hello from kitchen-sink";

/// One tool, `hello`, with no arguments.
#[derive(Clone)]
pub struct NativeHello {
    tool: Tool,
}

impl Default for NativeHello {
    fn default() -> Self {
        let schema =
            serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!("a JSON object literal")
        };
        Self {
            tool: Tool::new(
                "hello",
                "Takes no arguments and says hello.",
                Arc::new(schema),
            ),
        }
    }
}

impl ServerHandler for NativeHello {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("native-hello", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "hello").then(|| self.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "hello" {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(HELLO_TEXT)]).into())
    }
}

/// Serves [`NativeHello`] on stdin/stdout until the client closes.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let server = NativeHello::default()
        .serve(rmcp::transport::stdio())
        .await?;
    server.waiting().await?;
    Ok(())
}
