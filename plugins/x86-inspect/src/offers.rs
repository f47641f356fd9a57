//! What the plugin offers beyond tools (Contract 6): read-only resources on
//! a client's machines, the `x86_debug` prompt and completion of machine
//! ids. The registers resource is the read_cpu_registers document, so the
//! two never disagree; memory and console are text views an agent reads at
//! a glance, bounded like the tools.

use crate::console::Stream;
use crate::cpu::Cpu;
use crate::machine::{Machine, MachineId};
use crate::tools::{Look, Session, ToolError};
use std::fmt::Write as _;

/// Most bytes one memory read shows (as read_memory).
pub const MEMORY_MAX: u32 = 4096;
/// Bytes of each console stream's end the console resource shows.
pub const CONSOLE_TAIL: usize = 4096;
const BYTES_PER_LINE: usize = 16;
/// Completion answers at most this many ids (the host's cap too).
const COMPLETION_MAX: usize = 100;
/// The prompt quotes at most this many characters of the symptom.
const SYMPTOM_MAX: usize = 2000;

/// A machine id from a URI or prompt argument: the decimal number
/// x86_list_machines shows. Unknown and other clients' ids fail alike in
/// [`Session::find`].
fn machine<'a>(s: &'a mut Session, text: &str) -> Result<&'a mut Machine, ToolError> {
    let id: MachineId = text
        .parse()
        .ok()
        .filter(|_| text.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            ToolError::new(
                "UNKNOWN_MACHINE",
                format!(
                    "no machine `{}`: a machine id is the number x86_list_machines shows",
                    plugin_kit::text::clip(text)
                ),
            )
        })?;
    s.find(id)
}

/// A segment or offset: 1-4 hex digits, optionally `0x`-prefixed, as
/// addresses print (`0087:0100`).
pub fn parse_hex16(what: &str, text: &str) -> Result<u16, ToolError> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    (!digits.is_empty() && digits.len() <= 4 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u16::from_str_radix(digits, 16).ok())
        .flatten()
        .ok_or_else(|| {
            ToolError::invalid(format!(
                "{what} `{}` is not a 16-bit hex number: write it as addresses print, e.g. 0087 or 0x87",
                plugin_kit::text::clip(text)
            ))
        })
}

/// `x86://machines/{machine}/registers`.
pub fn registers(s: &mut Session, id: &str) -> Result<String, ToolError> {
    let m = machine(s, id)?.id;
    let regs = s.read_cpu_registers(Some(m))?;
    Ok(serde_json::to_string(&regs).expect("registers always serialize"))
}

/// `x86://machines/{machine}/memory/{segment}/{offset}/{length}`.
pub fn memory(
    s: &mut Session,
    id: &str,
    segment: &str,
    offset: &str,
    length: &str,
) -> Result<String, ToolError> {
    // The machine first, so an unknown id answers the same whatever the range.
    let m = machine(s, id)?;
    let seg = parse_hex16("segment", segment)?;
    let off = parse_hex16("offset", offset)?;
    let len = length
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MEMORY_MAX).contains(n) && length.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            ToolError::invalid(format!(
                "length `{}` must be a decimal byte count from 1 to {MEMORY_MAX}; read more in pieces",
                plugin_kit::text::clip(length)
            ))
        })?;
    Ok(hex_dump(m.id, &m.cpu, seg, off, len as usize))
}

/// Sixteen bytes a line, each line led by its `SSSS:OOOO` and followed by
/// its printable characters; the offset wraps at 64 KiB as real mode does.
fn hex_dump(id: MachineId, cpu: &Cpu, seg: u16, off: u16, len: usize) -> String {
    let mut out = format!("machine {id}: {seg:04X}:{off:04X}, {len} bytes (hex)\n");
    for line in 0..len.div_ceil(BYTES_PER_LINE) {
        let first = line * BYTES_PER_LINE;
        let n = BYTES_PER_LINE.min(len - first);
        let at = off.wrapping_add(first as u16);
        let bytes: Vec<u8> = (0..n)
            .map(|i| cpu.rb(Cpu::lin(seg, at.wrapping_add(i as u16))))
            .collect();
        let _ = write!(out, "{seg:04X}:{at:04X} ");
        for b in &bytes {
            let _ = write!(out, " {b:02X}");
        }
        let pad = (BYTES_PER_LINE - n) * 3;
        let chars: String = bytes
            .iter()
            .map(|&b| {
                if (0x20..0x7F).contains(&b) {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        let _ = writeln!(out, "{:pad$}  |{chars}|", "");
    }
    out
}

/// `x86://machines/{machine}/console`: where the machine stands, then the
/// end of stdout, and of stderr and the screen when they hold anything.
pub fn console(s: &mut Session, id: &str) -> Result<String, ToolError> {
    let m = machine(s, id)?;
    let mut out = status_line(m);
    out.push('\n');
    for (name, stream) in [
        ("stdout", &m.dos.stdout),
        ("stderr", &m.dos.stderr),
        ("screen", &m.dos.screen),
    ] {
        if name != "stdout" && stream.total() == 0 {
            continue;
        }
        tail(&mut out, name, stream);
    }
    Ok(out)
}

fn tail(out: &mut String, name: &str, s: &Stream) {
    let (bytes, start) = s.read(s.total().saturating_sub(CONSOLE_TAIL as u64), CONSOLE_TAIL);
    let total = s.total();
    if start == 0 {
        let _ = writeln!(out, "--- {name}: {total} bytes ---");
    } else {
        let _ = writeln!(
            out,
            "--- {name}: the last {} of {total} bytes (x86_read_console with offset for earlier ones) ---",
            bytes.len()
        );
    }
    out.extend(bytes.iter().map(|&b| b as char));
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        out.push('\n');
    }
}

/// `machine N (PROGRAM): STATE at CS:IP after N instructions`.
fn status_line(m: &Machine) -> String {
    let exit = m
        .exit_code
        .map(|c| format!(" with exit code {c}"))
        .unwrap_or_default();
    format!(
        "machine {} ({}, {}): {}{exit} at {} after {} instructions",
        m.id,
        m.program.path.display(),
        m.cpu.model.name(),
        m.state_name(),
        m.cs_ip(),
        m.cpu.instructions
    )
}

/// The URIs to announce after a call, from the caller's machines as they
/// looked before and after it: `…/registers` when the CPU or memory
/// changed, `…/console` when the status line, output or input did, both for
/// a machine that came, went or was reloaded. Memory URIs name any range,
/// so they are not announced: a subscriber re-reads them on a registers
/// notice. One notice per URI per call however many instructions ran.
pub fn changed_uris(before: &[(MachineId, Look)], after: &[(MachineId, Look)]) -> Vec<String> {
    plugin_kit::changes::changed_uris(
        before,
        after,
        |was, now| [was.registers != now.registers, was.console != now.console],
        |id, part| format!("x86://machines/{id}/{}", ["registers", "console"][part]),
    )
}

/// Completion: the caller's own machine ids starting with `value`, for any
/// `machine`; nothing for other arguments.
pub fn complete(s: &Session, argument: &str, value: &str) -> Vec<String> {
    if argument != "machine" {
        return Vec::new();
    }
    s.machine_ids()
        .map(|id| id.to_string())
        .filter(|id| id.starts_with(value))
        .take(COMPLETION_MAX)
        .collect()
}

/// The `x86_debug` prompt: a method of investigation naming the real tools
/// (in backquotes), and where the machine stands when one is named.
pub fn debug_prompt(
    s: &mut Session,
    symptom: &str,
    machine_id: Option<&str>,
) -> Result<String, ToolError> {
    let symptom = plugin_kit::text::head(symptom.trim(), SYMPTOM_MAX);
    let mut out = format!(
        "Debug a DOS program running in the benchtop x86-inspect emulator (real-mode 8086/80186 PC with DOS services).\n\nSymptom: {symptom}\n\n"
    );
    let id = match machine_id.filter(|m| !m.is_empty()) {
        Some(text) => {
            let m = machine(s, text)?;
            let _ = writeln!(
                out,
                "{}. Pass machine {} to every tool below.\n",
                status_line(m),
                m.id
            );
            m.id.to_string()
        }
        None => {
            out.push_str(
                "First find the machine: `x86_list_machines` shows yours; if there is none, `x86_load_program` (keep tracking on, the default). Pass its machine id to every tool below.\n\n",
            );
            "MACHINE".to_owned()
        }
    };
    out.push_str(
        "Investigate in this order, saying what each step showed before taking the next:\n\
1. What did it do? `x86_read_console` (stdout, stderr, screen, INT 21h call counts, unsupported services), and the stop_reason of the last `x86_run`.\n\
2. Where is it? `read_cpu_registers`, then `x86_read_disassembly` at CS:IP.\n\
3. Which code ran? `list_functions` (every CALL and INT target with call counts) and `read_cfg_cpu_graph` (the control-flow graph; self-modified code shows as extra nodes).\n\
4. Stop before it goes wrong: `x86_add_breakpoint` at a suspect segment and offset, `x86_load_program` again with the same machine to restart, `x86_run` to the breakpoint, then `x86_step` one instruction at a time; `x86_list_breakpoints` and `x86_remove_breakpoint` to tidy up.\n\
5. Check the data: `read_memory` (linear address = segment × 16 + offset) for variables, buffers and the stack at SS:SP.\n\
6. Test a fix in place: `x86_write_memory` or `x86_write_registers`, then `x86_run` again; a program waiting for input gets it from `x86_write_console_input`.\n\n",
    );
    let _ = writeln!(
        out,
        "Read-only views of the machine: x86://machines/{id}/registers, x86://machines/{id}/memory/SEGMENT/OFFSET/LENGTH (segment and offset in hex, length 1-{MEMORY_MAX}), x86://machines/{id}/console (the last {} KiB of each stream).\n",
        CONSOLE_TAIL / 1024
    );
    out.push_str(
        "Finish with the cause, the instruction and address responsible, and the evidence (console output, register and memory values).",
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Model;
    use crate::tools::Clients;

    // mov dx,010Ah ; mov ah,9 ; int 21h ; mov ax,4C00h ; int 21h ; "Hi!\r\n$"
    const HELLO: [u8; 18] = [
        0xBA, 0x0C, 0x01, 0xB4, 0x09, 0xCD, 0x21, 0xB8, 0x00, 0x4C, 0xCD, 0x21, b'H', b'i', b'!',
        b'\r', b'\n', b'$',
    ];

    fn loaded(s: &mut Session) -> String {
        let dir = std::env::temp_dir().join(format!("x86-inspect-offers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("HELLO.COM");
        std::fs::write(&p, HELLO).unwrap();
        let v: serde_json::Value =
            serde_json::to_value(s.load_program(&p, None, Model::I80186, true, None).unwrap())
                .unwrap();
        v["machine"].as_u64().unwrap().to_string()
    }

    #[test]
    fn hex16_is_hex_as_addresses_print() {
        assert_eq!(parse_hex16("segment", "0087").unwrap(), 0x87);
        assert_eq!(parse_hex16("segment", "0x87").unwrap(), 0x87);
        assert_eq!(parse_hex16("offset", "FFFF").unwrap(), 0xFFFF);
        for bad in ["", "0x", "10000", "12G", "-1", "1 2"] {
            let e = parse_hex16("offset", bad).unwrap_err();
            assert_eq!(e.code, "INVALID_ARGUMENT", "{bad}");
            assert!(
                e.message.contains("offset") && e.message.contains("0087"),
                "{e:?}"
            );
        }
    }

    #[test]
    fn memory_dumps_sixteen_bytes_a_line_with_characters() {
        let mut s = Session::default();
        let id = loaded(&mut s);
        let dump = memory(&mut s, &id, "0087", "0100", "18").unwrap();
        let lines: Vec<&str> = dump.lines().collect();
        assert_eq!(lines[0], format!("machine {id}: 0087:0100, 18 bytes (hex)"));
        assert_eq!(
            lines[1],
            "0087:0100  BA 0C 01 B4 09 CD 21 B8 00 4C CD 21 48 69 21 0D  |......!..L.!Hi!.|"
        );
        assert_eq!(
            lines[2],
            format!("0087:0110  0A 24{}  |.$|", " ".repeat(14 * 3))
        );
        // The offset wraps within the segment.
        let wrap = memory(&mut s, &id, "0087", "FFFF", "2").unwrap();
        assert!(
            wrap.lines().nth(1).unwrap().starts_with("0087:FFFF "),
            "{wrap}"
        );
        assert_eq!(
            memory(&mut s, &id, "0", "0", "4096")
                .unwrap()
                .lines()
                .count(),
            257
        );
    }

    #[test]
    fn bad_ranges_and_ids_say_what_to_do() {
        let mut s = Session::default();
        let id = loaded(&mut s);
        for len in ["0", "4097", "x", "+5"] {
            let e = memory(&mut s, &id, "0", "0", len).unwrap_err();
            assert!(e.message.contains("1 to 4096"), "{len}: {e:?}");
        }
        let e = memory(&mut s, &id, "zz", "0", "1").unwrap_err();
        assert!(e.message.contains("segment `zz`"), "{e:?}");
        // An unknown machine wins over a bad range.
        let e = memory(&mut s, "12", "zz", "0", "1").unwrap_err();
        assert_eq!(e.code, "UNKNOWN_MACHINE");
        for bad in ["", "abc", "+1", "-1"] {
            assert_eq!(registers(&mut s, bad).unwrap_err().code, "UNKNOWN_MACHINE");
        }
    }

    #[test]
    fn console_shows_the_status_and_the_end_of_each_stream() {
        let mut s = Session::default();
        let id = loaded(&mut s);
        let before = console(&mut s, &id).unwrap();
        assert!(
            before.contains("ready at 0087:0100 after 0 instructions"),
            "{before}"
        );
        assert!(before.ends_with("--- stdout: 0 bytes ---\n"), "{before}");
        s.run(Some(10_000), None, &mut |_, _| true).unwrap();
        let after = console(&mut s, &id).unwrap();
        assert!(after.contains("exited with exit code 0"), "{after}");
        assert!(
            after.ends_with("--- stdout: 5 bytes ---\nHi!\r\n"),
            "{after}"
        );
        assert!(
            !after.contains("stderr") && !after.contains("screen"),
            "{after}"
        );
    }

    #[test]
    fn a_long_stream_shows_only_its_bounded_end() {
        let mut stream = Stream::new(1 << 20);
        stream.extend(&vec![b'x'; 10_000]);
        stream.extend(b"end");
        let mut out = String::new();
        tail(&mut out, "stdout", &stream);
        assert!(
            out.starts_with("--- stdout: the last 4096 of 10003 bytes"),
            "{out}"
        );
        assert!(out.ends_with("xend\n") && out.len() < CONSOLE_TAIL + 200);
    }

    #[test]
    fn registers_are_the_tools_document() {
        let mut s = Session::default();
        let id = loaded(&mut s);
        let v: serde_json::Value = serde_json::from_str(&registers(&mut s, &id).unwrap()).unwrap();
        assert_eq!(v["instructionPointer"]["IP"], 0x100);
    }

    #[test]
    fn another_clients_machine_answers_like_an_unknown_one() {
        let mut clients = Clients::default();
        let id = clients.with("alice", loaded);
        let theirs = clients.with("bob", |s| registers(s, &id).unwrap_err());
        let unknown = clients.with("bob", |s| registers(s, "77").unwrap_err());
        assert_eq!(theirs.code, unknown.code);
        assert_eq!(
            theirs.message.replace(&id, "X"),
            unknown.message.replace("77", "X")
        );
        assert!(
            clients
                .with("bob", |s| complete(s, "machine", ""))
                .is_empty()
        );
        assert_eq!(
            clients.with("alice", |s| complete(s, "machine", "")),
            vec![id.clone()]
        );
        assert_eq!(
            clients.with("alice", |s| complete(s, "machine", &id[..1])),
            vec![id.clone()]
        );
        assert!(
            clients
                .with("alice", |s| complete(s, "symptom", ""))
                .is_empty()
        );
        assert!(
            clients
                .with("alice", |s| complete(s, "machine", "x"))
                .is_empty()
        );
    }

    /// Every backquoted word of the prompt is a real tool: the WIT names them.
    #[test]
    fn the_prompt_names_only_real_tools_and_the_machine() {
        let wit = include_str!("../../../wit/x86-inspect/x86-inspect.wit");
        let mut s = Session::default();
        let id = loaded(&mut s);
        for text in [
            debug_prompt(&mut s, "never exits", Some(&id)).unwrap(),
            debug_prompt(&mut s, "never exits", None).unwrap(),
        ] {
            let names: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
            assert!(names.len() >= 14, "{text}");
            for n in names {
                let wit_name = format!("    {}: func", n.replace('_', "-"));
                assert!(wit.contains(&wit_name), "{n} is not a tool");
            }
            assert!(text.contains("Symptom: never exits"));
        }
        let with_id = debug_prompt(&mut s, "x", Some(&id)).unwrap();
        assert!(
            with_id.contains(&format!("x86://machines/{id}/console")),
            "{with_id}"
        );
        assert!(with_id.contains("ready at 0087:0100"), "{with_id}");
        assert_eq!(
            debug_prompt(&mut s, "x", Some("5")).unwrap_err().code,
            "UNKNOWN_MACHINE"
        );
        let long = "y".repeat(10_000);
        assert!(debug_prompt(&mut s, &long, None).unwrap().len() < SYMPTOM_MAX + 3000);
    }

    /// The URIs a call on `s` announces.
    fn announced(s: &mut Session, f: impl FnOnce(&mut Session)) -> Vec<String> {
        let before = s.looks();
        f(s);
        changed_uris(&before, &s.looks())
    }

    #[test]
    fn calls_announce_only_the_uris_they_changed() {
        let mut s = Session::default();
        let mut id = String::new();
        let load = announced(&mut s, |s| id = loaded(s));
        let m: MachineId = id.parse().unwrap();
        let regs = format!("x86://machines/{id}/registers");
        let console = format!("x86://machines/{id}/console");
        assert_eq!(load, [regs.clone(), console.clone()]);
        let read = announced(&mut s, |s| {
            s.read_cpu_registers(Some(m)).unwrap();
            s.read_memory(0x100, 16, Some(m)).unwrap();
            console_of(s, &id);
        });
        assert!(read.is_empty(), "{read:?}");
        let poke = announced(&mut s, |s| {
            s.write_memory(0x9000, "90", Some(m)).unwrap();
        });
        assert_eq!(poke, [regs.as_str()], "memory shows through registers");
        let typed = announced(&mut s, |s| {
            s.write_console_input(Some("x"), None, Some(m)).unwrap();
        });
        assert_eq!(typed, [console.as_str()]);
        let step = announced(&mut s, |s| {
            s.step(Some(1), false, Some(m)).unwrap();
        });
        assert_eq!(step, [regs.clone(), console.clone()], "status line moved");
        let run = announced(&mut s, |s| {
            s.run(None, Some(m), &mut |_, _| true).unwrap();
        });
        assert_eq!(run, [regs.clone(), console.clone()]);
        assert!(console_of(&mut s, &id).contains("Hi!"));
        let again = announced(&mut s, |s| {
            s.run(None, Some(m), &mut |_, _| true).ok();
        });
        assert!(again.is_empty(), "an exited machine stays put: {again:?}");
        let gone = announced(&mut s, |s| {
            s.remove_machine(m).unwrap();
        });
        assert_eq!(gone, [regs, console]);
    }

    fn console_of(s: &mut Session, id: &str) -> String {
        console(s, id).unwrap()
    }
}
