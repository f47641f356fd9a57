//! `benchtop:host/sampling` and `benchtop:host/roots`: asking the calling
//! client's model and its roots, in whichever form the client has (see
//! `mcp::rounds` for 2026-07-28 clients).

use super::{PluginState, bindings};
use crate::runtime::context::{ClientReply, ClientRequest};
use bindings::benchtop::host::{roots, sampling};

impl PluginState {
    /// Makes `request` of the calling client under `key`: its reply, or
    /// why it cannot be made.
    async fn ask_client(&mut self, key: String, request: ClientRequest) -> ClientReply {
        if let Err(why) = crate::wit::names::check_tool_name(&key) {
            return ClientReply::Unsupported(why.replace("tool name", "request key"));
        }
        let Some(requester) = self.call.as_ref().and_then(|c| c.ctx.request.clone()) else {
            return ClientReply::Unsupported("no MCP client is making this call".into());
        };
        self.waiting_for_client(requester(key, request))
            .await
            .unwrap_or_else(|| {
                ClientReply::Unsupported("the client did not answer within 10 minutes".into())
            })
    }
}

impl sampling::Host for PluginState {
    async fn create_message(
        &mut self,
        key: String,
        messages: Vec<sampling::Message>,
        system_prompt: Option<String>,
        max_tokens: u32,
    ) -> sampling::Reply {
        let request = ClientRequest::Sample {
            messages: messages
                .into_iter()
                .map(|m| (m.role == sampling::Role::User, m.text))
                .collect(),
            system_prompt,
            max_tokens,
        };
        match self.ask_client(key, request).await {
            ClientReply::Sampled { text, model } => {
                sampling::Reply::Text(sampling::Completion { text, model })
            }
            ClientReply::Pending => sampling::Reply::Pending,
            ClientReply::Refused(why) => sampling::Reply::Refused(why),
            ClientReply::Roots(_) => {
                sampling::Reply::Unsupported("the client answered with roots".into())
            }
            ClientReply::Unsupported(why) => sampling::Reply::Unsupported(why),
        }
    }
}

impl roots::Host for PluginState {
    async fn list_roots(&mut self, key: String) -> roots::Listing {
        match self.ask_client(key, ClientRequest::Roots).await {
            ClientReply::Roots(list) => roots::Listing::Roots(
                list.into_iter()
                    .map(|(uri, name)| roots::Root { uri, name })
                    .collect(),
            ),
            ClientReply::Pending => roots::Listing::Pending,
            ClientReply::Refused(why) | ClientReply::Unsupported(why) => {
                roots::Listing::Unsupported(why)
            }
            ClientReply::Sampled { .. } => {
                roots::Listing::Unsupported("the client answered with a completion".into())
            }
        }
    }
}
