//! Example plugin: one prompt, `investigate_log`.
//!
//! A prompt is a template the user picks in their client; the text it
//! returns becomes the user's message to the agent. Name the tools the
//! agent should use: the prompt is the playbook.

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use exports::benchtop_example::briefing::prompts::Guest;

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Briefing;

impl Guest for Briefing {
    fn investigate_log(file: String, symptom: String, channel: Option<String>) -> String {
        let start = match channel {
            Some(channel) => format!("Start from the `{channel}` channel."),
            None => "Start from the channels that move when the symptom appears.".into(),
        };
        format!(
            "The driver reports: {symptom}.\n\n\
             Investigate the datalog `{file}`:\n\
             1. List its channels and duration with `list_logs`.\n\
             2. {start}\n\
             3. Find the rows where the symptom shows with `query_logs` and a filter.\n\
             4. Say what you found, with the rows as evidence, and what to change."
        )
    }
}

// Off wasm the generated export symbols clash with the native linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Briefing);
