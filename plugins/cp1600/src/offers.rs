//! What the plugin offers beyond tools (Contract 6): read-only resources
//! on a client's sessions, the `cp1600_debug` prompt and completion of
//! session ids. Each resource is built on the document of the tool that
//! shows the same thing, so a resource and its tool never disagree.

use crate::results::Json;
use crate::tools::{DISASM_DEFAULT_SPAN, Look, MEMORY_MAX, Sessions, ToolError};
use std::fmt::Write as _;

/// Trace entries the trace resource shows (the newest ones).
pub const TRACE_ENTRIES: u32 = 64;
/// Words per hex dump line.
const WORDS_PER_LINE: usize = 8;
/// The prompt quotes at most this many characters of the symptom, so a
/// pasted log cannot make the prompt unbounded.
const SYMPTOM_MAX: usize = 2000;

/// A URI's session id: never empty, as an empty id would mean "the active
/// session" to the tools, and a URI names one session explicitly.
fn named(session_id: &str) -> Result<&str, ToolError> {
    if session_id.is_empty() {
        return Err(ToolError::new(
            "SESSION_NOT_FOUND",
            "the URI names no session; see cp1600_list_sessions for yours",
        ));
    }
    Ok(session_id)
}

/// An address in a URI: decimal (as the tools take it), or hex as `$5000`
/// or `0x5000` (as listings print it).
pub fn parse_address(what: &str, text: &str) -> Result<u16, ToolError> {
    let hex = text
        .strip_prefix('$')
        .or_else(|| text.strip_prefix("0x"))
        .or_else(|| text.strip_prefix("0X"));
    let parsed = match hex {
        Some(h) if !h.is_empty() && h.len() <= 4 => u16::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None if !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit()) => {
            text.parse::<u16>().ok()
        }
        None => None,
    };
    parsed.ok_or_else(|| {
        ToolError::invalid(format!(
            "{what} `{}` is not an address: give 0-65535 in decimal, or hex as $5000 or 0x5000",
            plugin_kit::text::clip(text)
        ))
    })
}

/// `cp1600://sessions/{session_id}/state`.
pub fn state(s: &mut Sessions, session_id: &str) -> Result<String, ToolError> {
    Ok(s.state_document(named(session_id)?)?.json().to_string())
}

/// `cp1600://sessions/{session_id}/memory/{start}/{end}`: a hex dump,
/// `end` inclusive, at most [`MEMORY_MAX`] words.
pub fn memory(
    s: &mut Sessions,
    session_id: &str,
    start: &str,
    end: &str,
) -> Result<String, ToolError> {
    let id = named(session_id)?;
    // The session first, so an unknown id answers the same whatever the range.
    s.read_words(id, 0, 0)?;
    let (a, b) = (parse_address("start", start)?, parse_address("end", end)?);
    if b < a {
        return Err(ToolError::invalid(format!(
            "end ${b:04X} is below start ${a:04X}; the range is start/end, both inclusive"
        )));
    }
    let count = b as u32 - a as u32 + 1;
    if count > MEMORY_MAX {
        let last = a as u32 + MEMORY_MAX - 1;
        return Err(ToolError::invalid(format!(
            "${a:04X}-${b:04X} is {count} words; a read shows at most {MEMORY_MAX}: read ${a:04X}-${last:04X} first (…/memory/{a}/{last}), then the rest"
        )));
    }
    let words = s.read_words(id, a, count as u16)?;
    Ok(hex_dump(id, a, &words))
}

/// Eight words per line, each line led by its address, all in hex.
fn hex_dump(id: &str, start: u16, words: &[u16]) -> String {
    let end = start as u32 + words.len() as u32 - 1;
    let mut out = format!(
        "session {id}: ${start:04X}-${end:04X} ({} words, hex)\n",
        words.len()
    );
    for (i, line) in words.chunks(WORDS_PER_LINE).enumerate() {
        let at = start as usize + i * WORDS_PER_LINE;
        let _ = write!(out, "${at:04X}:");
        for w in line {
            let _ = write!(out, " {w:04X}");
        }
        out.push('\n');
    }
    out
}

/// `cp1600://sessions/{session_id}/disassembly/{address}`.
pub fn disassembly(s: &mut Sessions, session_id: &str, address: &str) -> Result<String, ToolError> {
    let id = named(session_id)?;
    s.read_words(id, 0, 0)?;
    let a = parse_address("address", address)?;
    let end = a.saturating_add(DISASM_DEFAULT_SPAN);
    Ok(s.disassemble(Some(id), a, Some(end))?.json().to_string())
}

/// `cp1600://sessions/{session_id}/trace`: the newest entries.
pub fn trace(s: &mut Sessions, session_id: &str) -> Result<String, ToolError> {
    Ok(
        s.get_trace(Some(named(session_id)?), Some(TRACE_ENTRIES), None)?
            .json()
            .to_string(),
    )
}

/// The URIs to announce after a call, from the caller's sessions as they
/// looked before and after it: `…/state` when the CPU, memory or ROM
/// changed, `…/trace` when the trace did, both for a session that came or
/// went. Memory and disassembly URIs name any range, so they are not
/// announced: a subscriber re-reads them on a state notice. One notice per
/// URI per call however many instructions ran.
pub fn changed_uris(before: &[(String, Look)], after: &[(String, Look)]) -> Vec<String> {
    plugin_kit::changes::changed_uris(
        before,
        after,
        |was, now| [was.state != now.state, was.trace != now.trace],
        |id, part| format!("cp1600://sessions/{id}/{}", ["state", "trace"][part]),
    )
}

/// Completion: the caller's own session ids matching `value` as every
/// plugin matches ([`plugin_kit::suggest::completions`]: prefix first, then
/// containing, case-insensitive, bounded), for any `session_id`; nothing
/// for other arguments (symptoms and addresses are the user's to type).
pub fn complete(s: &Sessions, argument: &str, value: &str) -> Vec<String> {
    if argument != "session_id" {
        return Vec::new();
    }
    plugin_kit::suggest::completions(s.session_ids().map(str::to_owned), value)
}

/// The `cp1600_debug` prompt: a method of investigation with the real tool
/// names, and the session's state when one is named.
pub fn debug_prompt(
    s: &mut Sessions,
    symptom: &str,
    session_id: Option<&str>,
) -> Result<String, ToolError> {
    let symptom = plugin_kit::text::head(symptom.trim(), SYMPTOM_MAX);
    let mut out = format!(
        "Debug a CP-1600 (Intellivision) program running in the benchtop cp1600 emulator.\n\nSymptom: {symptom}\n\n"
    );
    let id = match session_id.filter(|id| !id.is_empty()) {
        Some(id) => {
            let st = s.state_document(id)?;
            let _ = writeln!(
                out,
                "Session `{id}` is {} at PC ${:04X} after {} instructions ({} cycles); ROM: {}. Pass session_id \"{id}\" to every tool below.\n",
                st.status.json().as_str().unwrap_or("?"),
                st.cpu.pc,
                st.cpu.instructions,
                st.cpu.cycles,
                st.rom_path.as_deref().unwrap_or("none loaded"),
            );
            id.to_owned()
        }
        None => {
            out.push_str(
                "First find the session: cp1600_list_sessions shows yours; if there is none, cp1600_create_session then cp1600_load_rom. Pass its session_id to every tool below.\n\n",
            );
            "SESSION".to_owned()
        }
    };
    out.push_str(
        "Investigate in this order, saying what each step showed before taking the next:\n\
1. Where is it? cp1600_get_state (registers, flags, halted, cycles), then cp1600_disassemble from a few words before the PC.\n\
2. How did it get there? cp1600_configure_trace with enabled true, cp1600_reset with preserve_rom true, run again with cp1600_run or cp1600_step, and read the last instructions with cp1600_get_trace.\n\
3. Stop before it goes wrong: cp1600_set_breakpoint at a suspect address, or cp1600_run_until with pc, register and register_value, or address and memory_value; then cp1600_step one instruction at a time and compare registers with what the code expects.\n\
4. Check the data: cp1600_examine_memory for variables and the stack (R6 is the stack pointer), cp1600_memory_map for what is RAM, ROM or unmapped.\n\
5. Test a fix in place: cp1600_write_memory or cp1600_write_registers, then run again.\n\
A run that stops on a check (code-less address, stack fault) names the address and instruction that caused it: start there.\n\n",
    );
    let _ = writeln!(
        out,
        "Read-only views of the session: cp1600://sessions/{id}/state, cp1600://sessions/{id}/memory/START/END (inclusive, at most {MEMORY_MAX} words), cp1600://sessions/{id}/disassembly/ADDRESS, cp1600://sessions/{id}/trace (the newest {TRACE_ENTRIES} entries). Addresses: decimal, or hex as $5000.\n"
    );
    out.push_str(
        "Finish with the cause, the instruction and address responsible, and the evidence (trace lines, register and memory values).",
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Clients, RegisterWrite};

    fn with_session(id: &str) -> Sessions {
        let mut s = Sessions::new();
        s.create_session(Some(id)).unwrap();
        s
    }

    #[test]
    fn addresses_are_decimal_or_dollar_or_0x_hex() {
        assert_eq!(parse_address("start", "20480").unwrap(), 0x5000);
        assert_eq!(parse_address("start", "$5000").unwrap(), 0x5000);
        assert_eq!(parse_address("start", "0x5000").unwrap(), 0x5000);
        assert_eq!(parse_address("start", "$ffff").unwrap(), 0xFFFF);
        for bad in [
            "", "$", "0x", "65536", "$10000", "-1", "12a", "5000h", "$50 0",
        ] {
            let e = parse_address("start", bad).unwrap_err();
            assert_eq!(e.code, "INVALID_ARGUMENT", "{bad}");
            assert!(
                e.message.contains("start") && e.message.contains("$5000"),
                "{e:?}"
            );
        }
    }

    #[test]
    fn memory_dumps_the_inclusive_range_eight_words_a_line() {
        let mut s = with_session("a");
        let values: Vec<u16> = (1..=10).collect();
        s.write_memory(Some("a"), 0x0200, &values).unwrap();
        let dump = memory(&mut s, "a", "$0200", "521").unwrap();
        assert_eq!(
            dump,
            "session a: $0200-$0209 (10 words, hex)\n\
             $0200: 0001 0002 0003 0004 0005 0006 0007 0008\n\
             $0208: 0009 000A\n"
        );
        let one = memory(&mut s, "a", "0xFFFF", "$FFFF").unwrap();
        assert_eq!(one.lines().count(), 2, "{one}");
    }

    #[test]
    fn memory_ranges_are_bounded_and_bad_ones_say_what_to_do() {
        let mut s = with_session("a");
        let full = memory(&mut s, "a", "0", "1023").unwrap();
        assert_eq!(full.lines().count(), 1 + 1024 / WORDS_PER_LINE);
        let e = memory(&mut s, "a", "0", "1024").unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT");
        assert!(
            e.message.contains("1025 words") && e.message.contains("/memory/0/1023"),
            "{e:?}"
        );
        let e = memory(&mut s, "a", "$5010", "$5000").unwrap_err();
        assert!(e.message.contains("below"), "{e:?}");
        let e = memory(&mut s, "a", "x", "1").unwrap_err();
        assert!(e.message.contains("start `x`"), "{e:?}");
        // An unknown session wins over a bad range: it answers the same either way.
        let e = memory(&mut s, "b", "x", "1").unwrap_err();
        assert_eq!(e.code, "SESSION_NOT_FOUND");
    }

    #[test]
    fn an_empty_id_is_not_the_active_session() {
        let mut s = with_session("a");
        for e in [
            state(&mut s, "").unwrap_err(),
            trace(&mut s, "").unwrap_err(),
            memory(&mut s, "", "0", "1").unwrap_err(),
            disassembly(&mut s, "", "0").unwrap_err(),
        ] {
            assert_eq!(e.code, "SESSION_NOT_FOUND");
        }
    }

    #[test]
    fn state_disassembly_and_trace_are_the_tools_documents() {
        let mut s = with_session("a");
        let st: serde_json::Value = serde_json::from_str(&state(&mut s, "a").unwrap()).unwrap();
        assert_eq!(st["status"], "idle");
        assert_eq!(st["session_id"], "a");
        assert!(
            st["registers"]["R7"].is_u64() && st["rom_path"].is_null(),
            "{st}"
        );
        let d: serde_json::Value =
            serde_json::from_str(&disassembly(&mut s, "a", "$1000").unwrap()).unwrap();
        assert_eq!(d["disassembly"][0]["address"], 0x1000);
        let t: serde_json::Value = serde_json::from_str(&trace(&mut s, "a").unwrap()).unwrap();
        assert!(t["trace"].as_array().unwrap().is_empty());
        assert!(
            t["note"]
                .as_str()
                .unwrap()
                .contains("cp1600_configure_trace")
        );
    }

    #[test]
    fn another_clients_session_answers_like_an_unknown_one() {
        let mut clients = Clients::new();
        clients.with("alice", |s| s.create_session(Some("mine")).unwrap());
        let theirs = clients.with("bob", |s| state(s, "mine").unwrap_err());
        let unknown = clients.with("bob", |s| state(s, "nothing").unwrap_err());
        assert_eq!(theirs.code, unknown.code);
        assert_eq!(
            theirs.message.replace("mine", "X"),
            unknown.message.replace("nothing", "X")
        );
        assert!(
            clients
                .with("bob", |s| complete(s, "session_id", ""))
                .is_empty()
        );
        assert_eq!(
            clients.with("alice", |s| complete(s, "session_id", "m")),
            ["mine"]
        );
    }

    #[test]
    fn completion_matches_session_ids_only_prefixes_first() {
        let mut s = Sessions::new();
        for id in ["game", "gamma", "test", "endgame"] {
            s.create_session(Some(id)).unwrap();
        }
        // Prefixes, then ids containing the value, case-insensitively.
        assert_eq!(
            complete(&s, "session_id", "GA"),
            ["game", "gamma", "endgame"]
        );
        assert_eq!(
            complete(&s, "session_id", ""),
            ["endgame", "game", "gamma", "test"]
        );
        assert!(complete(&s, "session_id", "x").is_empty());
        assert!(complete(&s, "symptom", "").is_empty());
    }

    /// Every `cp1600_…` word of the prompt is a real tool: the WIT names them.
    #[test]
    fn the_prompt_names_only_real_tools_and_the_session() {
        let wit = include_str!("../../../wit/cp1600/cp1600.wit");
        let mut s = with_session("dbg");
        for text in [
            debug_prompt(&mut s, "hangs", Some("dbg")).unwrap(),
            debug_prompt(&mut s, "hangs", None).unwrap(),
        ] {
            let names: Vec<&str> = text
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("cp1600_"))
                .collect();
            assert!(names.len() >= 10, "{text}");
            for n in names {
                let wit_name = format!("{}: func", n.replace('_', "-"));
                assert!(wit.contains(&wit_name), "{n} is not a tool");
            }
            assert!(text.contains("Symptom: hangs"));
        }
        let with_id = debug_prompt(&mut s, "x", Some("dbg")).unwrap();
        assert!(
            with_id.contains("Session `dbg` is idle")
                && with_id.contains("cp1600://sessions/dbg/state")
        );
        let e = debug_prompt(&mut s, "x", Some("other")).unwrap_err();
        assert_eq!(e.code, "SESSION_NOT_FOUND");
        let long = "y".repeat(10_000);
        assert!(debug_prompt(&mut s, &long, None).unwrap().len() < SYMPTOM_MAX + 3000);
    }

    /// The URIs a call on `s` announces.
    fn announced(s: &mut Sessions, f: impl FnOnce(&mut Sessions)) -> Vec<String> {
        let before = s.looks();
        f(s);
        changed_uris(&before, &s.looks())
    }

    #[test]
    fn calls_announce_only_the_uris_they_changed() {
        let mut s = with_session("a");
        s.create_session(Some("b")).unwrap();
        // NOP NOP NOP in RAM at $0200 in session a (b stays untouched).
        let poke = announced(&mut s, |s| {
            s.write_memory(Some("a"), 0x0200, &[0x034, 0x034, 0x034])
                .unwrap();
        });
        assert_eq!(poke, ["cp1600://sessions/a/state"]);
        let pc = announced(&mut s, |s| {
            let mut w = RegisterWrite::default();
            w.r[7] = Some(0x0200);
            s.write_registers(Some("a"), &w).unwrap();
        });
        assert_eq!(pc, ["cp1600://sessions/a/state"]);
        let read = announced(&mut s, |s| {
            s.get_state(Some("a")).unwrap();
            s.examine_memory(Some("a"), 0x5000, Some(3)).unwrap();
        });
        assert!(read.is_empty(), "{read:?}");
        let step = announced(&mut s, |s| {
            s.step(Some("a"), Some(2), None, &mut |_, _, _| true)
                .unwrap();
        });
        assert_eq!(step, ["cp1600://sessions/a/state"], "tracing is off");
        s.configure_trace(Some("a"), true, None).unwrap();
        let traced = announced(&mut s, |s| {
            s.step(Some("a"), Some(1), None, &mut |_, _, _| true)
                .unwrap();
        });
        assert_eq!(
            traced,
            ["cp1600://sessions/a/state", "cp1600://sessions/a/trace"]
        );
        let reset = announced(&mut s, |s| {
            s.reset(Some("a"), None).unwrap();
        });
        assert_eq!(
            reset,
            ["cp1600://sessions/a/state", "cp1600://sessions/a/trace"]
        );
        let interrupt = announced(&mut s, |s| {
            s.interrupt(Some("a")).unwrap();
        });
        assert_eq!(interrupt, ["cp1600://sessions/a/state"]);
        let gone = announced(&mut s, |s| {
            s.destroy_session("b").unwrap();
        });
        assert_eq!(
            gone,
            ["cp1600://sessions/b/state", "cp1600://sessions/b/trace"]
        );
        let failed = announced(&mut s, |s| {
            s.step(Some("nope"), None, None, &mut |_, _, _| true)
                .unwrap_err();
        });
        assert!(failed.is_empty(), "{failed:?}");
    }
}
