//! The examples for plugin authors (`examples/`), each through a real MCP
//! client: what its README says it shows is what a client gets.

// resources/subscribe is legacy-only in MCP 2026-07-28, but it is what the
// clients in the field send, and what the notes example shows.
#![allow(deprecated)]

use e2e::{Asker, Server, coded_error, examples, heard, is_error, json as result_json, text};
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CompleteRequestParams, ElicitationAction,
    GetPromptRequestParams, Reference, SubscribeRequestParams,
};
use serde_json::{Value, json};

/// A server with every example loaded from `target/examples`.
async fn start() -> Server {
    Server::start(&["--plugins", examples().to_str().unwrap()]).await
}

#[tokio::test]
async fn units_converts_with_a_typed_result_and_typed_errors() {
    let s = start().await;
    let tool = s
        .tools()
        .await
        .into_iter()
        .find(|t| t.name == "convert_pressure")
        .expect("convert_pressure listed");
    let schema = serde_json::to_value(tool.output_schema.expect("an outputSchema")).unwrap();
    assert_eq!(
        schema["required"],
        json!(["value", "unit", "text"]),
        "{schema}"
    );
    let r = s
        .ok(
            "convert_pressure",
            json!({"value": 14.7, "from": "PSI", "to": "kpa"}),
        )
        .await;
    let out = result_json(&r);
    assert!(
        (out["value"].as_f64().unwrap() - 101.35).abs() < 0.01,
        "{out}"
    );
    assert_eq!(out["text"], "14.7 psi = 101.35 kPa");
    let r = s
        .err(
            "convert_pressure",
            json!({"value": 1, "from": "atm", "to": "kpa"}),
        )
        .await;
    let (code, message) = coded_error(&r);
    assert_eq!(code, "UNKNOWN_UNIT");
    assert!(message.contains("kpa, psi or bar"), "{message}");
    s.stop().await;
}

#[tokio::test]
async fn notes_serves_a_template_and_tells_its_subscribers() {
    let s = start().await;
    assert!(
        s.template_uris()
            .await
            .contains(&"notes://{name}".to_owned())
    );
    s.client
        .subscribe(SubscribeRequestParams::new("notes://oil"))
        .await
        .unwrap();
    s.ok(
        "write_note",
        json!({"name": "oil", "text": "5W-40, changed at 80,000 km"}),
    )
    .await;
    s.ok("write_note", json!({"name": "tyres", "text": "rotated"}))
        .await;
    assert_eq!(heard(&s).await, ["notes://oil"], "only the subscribed note");
    let (body, _) = s.read_text("notes://oil").await.unwrap();
    assert_eq!(body, "5W-40, changed at 80,000 km");
    let e = s.read_text("notes://brakes").await.unwrap_err();
    assert!(e.contains("no note named `brakes`"), "{e}");
    let r = s
        .err("write_note", json!({"name": "Oil Change", "text": "x"}))
        .await;
    assert_eq!(coded_error(&r).0, "BAD_NAME");
    s.stop().await;
}

#[tokio::test]
async fn briefing_lists_its_prompt_and_fills_it_in() {
    let s = start().await;
    let prompts = s.client.list_all_prompts().await.unwrap();
    let prompt = prompts
        .iter()
        .find(|p| p.name == "investigate_log")
        .expect("investigate_log listed");
    assert_eq!(
        e2e::prompt_arguments(prompt),
        [
            ("file", Some(true)),
            ("symptom", Some(true)),
            ("channel", Some(false))
        ]
    );
    let mut params = GetPromptRequestParams::new("investigate_log");
    params.arguments = Some(
        json!({"file": "pulls/run1.csv", "symptom": "hesitation at 4000 rpm"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let got = s.client.get_prompt(params).await.unwrap();
    let message = serde_json::to_value(&got.messages[0]).unwrap();
    let body = message["content"]["text"].as_str().unwrap();
    assert!(body.contains("`pulls/run1.csv`") && body.contains("hesitation at 4000 rpm"));
    assert!(body.contains("Start from the channels"), "{body}");
    s.stop().await;
}

#[tokio::test]
async fn colors_completes_a_prompt_argument_and_a_template_variable() {
    let s = start().await;
    let complete = async |reference: Reference, argument: &str, value: &str| {
        s.client
            .complete(CompleteRequestParams::new(
                reference,
                ArgumentInfo::new(argument, value),
            ))
            .await
            .unwrap()
            .completion
            .values
    };
    assert_eq!(
        complete(Reference::for_prompt("paint"), "color", "a").await,
        ["amber", "aqua", "azure"]
    );
    assert_eq!(
        complete(Reference::for_resource("colors://{name}"), "name", "C").await,
        ["crimson", "cyan"]
    );
    assert!(
        complete(Reference::for_prompt("paint"), "color", "zz")
            .await
            .is_empty()
    );
    let (body, _) = s.read_text("colors://teal").await.unwrap();
    assert_eq!(body, "teal: #008080");
    s.stop().await;
}

#[tokio::test]
async fn eraser_asks_first_and_says_how_to_confirm_without_a_user() {
    let dir = examples();
    let args = ["serve", "--plugins", dir.to_str().unwrap()];
    let erase = async |client: &rmcp::service::RunningService<rmcp::RoleClient, Asker>,
                       args: Value| {
        let params = CallToolRequestParams::new("erase_slot")
            .with_arguments(args.as_object().unwrap().clone());
        text(&client.call_tool(params).await.unwrap())
    };
    let (client, asked) = Asker::connect(&args, ElicitationAction::Accept, Some(json!({}))).await;
    assert_eq!(erase(&client, json!({"slot": 3})).await, "slot 3 erased");
    assert_eq!(asked.lock().unwrap().as_slice(), ["Erase slot 3?"]);
    client.cancel().await.unwrap();

    let (client, _) = Asker::connect(&args, ElicitationAction::Decline, None).await;
    assert_eq!(
        erase(&client, json!({"slot": 3})).await,
        "slot 3 kept: the user said no"
    );
    client.cancel().await.unwrap();

    // The same through MCP 2026-07-28's input_required rounds.
    let (client, asked) =
        Asker::connect_2026(&args, ElicitationAction::Accept, Some(json!({}))).await;
    assert_eq!(erase(&client, json!({"slot": 5})).await, "slot 5 erased");
    assert_eq!(asked.lock().unwrap().as_slice(), ["Erase slot 5?"]);
    client.cancel().await.unwrap();

    // A client that cannot ask: the error names the argument to use.
    let s = start().await;
    let r = s.call("erase_slot", json!({"slot": 3})).await;
    assert!(is_error(&r));
    let (code, message) = coded_error(&r);
    assert_eq!(code, "CONFIRMATION_REQUIRED");
    assert!(message.contains("confirm: true"), "{message}");
    let r = s
        .ok("erase_slot", json!({"slot": 3, "confirm": true}))
        .await;
    assert_eq!(text(&r), "slot 3 erased");
    s.stop().await;
}

#[tokio::test]
async fn gauge_names_its_view_and_serves_it() {
    let s = start().await;
    let tool = s
        .tools()
        .await
        .into_iter()
        .find(|t| t.name == "show_boost")
        .expect("show_boost listed");
    let meta = serde_json::to_value(tool.meta.expect("_meta")).unwrap();
    assert_eq!(meta["ui"]["resourceUri"], "ui://gauge/dial", "{meta}");
    let (html, mime) = s.read_text("ui://gauge/dial").await.unwrap();
    assert_eq!(mime, "text/html;profile=mcp-app");
    assert!(html.contains("ui/initialize") && html.contains("ui/notifications/tool-result"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network"
    );
    let out = result_json(&s.ok("show_boost", json!({"kpa": 500})).await);
    assert_eq!(out["kpa"], 300.0, "pinned to full scale: {out}");
    assert_eq!(out["full_scale"], 300.0);
    s.stop().await;
}

/// Every example is in the index a plugin author reads, and the WIT guide
/// points to it.
#[test]
fn every_example_is_indexed() {
    let root = e2e::repo();
    let index = std::fs::read_to_string(root.join("examples/README.md")).unwrap();
    for entry in std::fs::read_dir(root.join("examples")).unwrap() {
        let entry = entry.unwrap();
        if entry.path().join("Cargo.toml").is_file() {
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                index.contains(&format!("]({name}/)")),
                "{name} missing from examples/README.md"
            );
        }
    }
    let guide = std::fs::read_to_string(root.join("wit/README.md")).unwrap();
    assert!(
        guide.contains("../examples/"),
        "wit/README.md links the examples"
    );
}
