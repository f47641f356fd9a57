//! Why a run stopped, in words an agent can act on: a check's diagnosis
//! (a jump to no code, running off the code, a stack outside RAM, an idle
//! loop waiting for VBLANK) as the address, the instruction there and what
//! it means on an Intellivision.

use crate::cart;
use crate::disasm::{disassemble, disassemble_range};
use crate::machine::{Diagnosis, Machine};
use crate::memory::Region;
use crate::results::*;

/// The instruction at `pc` as text.
pub(crate) fn instruction_at(m: &Machine, pc: u16) -> String {
    disassemble(|a| m.cpu.mem.read(a), pc, false).text()
}

/// `$XXXX` plus what an Intellivision has there, when nothing is mapped.
fn place(m: &Machine, addr: u16) -> String {
    match (m.cpu.mem.region(addr), cart::area_name(addr)) {
        (Region::Unmapped, Some(area)) => format!("${addr:04X} ({area}, not loaded here)"),
        (Region::Unmapped, None) => format!("${addr:04X}, where nothing is mapped"),
        (Region::Stic, Some(area)) => format!("${addr:04X} ({area}, not code)"),
        (r, _) => format!("${addr:04X} ({})", r.name()),
    }
}

/// A check's stop as {address, instruction, message} (+ target or loop).
pub(crate) fn describe_diagnosis(m: &Machine, d: &Diagnosis) -> Stop {
    // Every stop names its address, instruction and message; a jump also
    // its target, a loop its range.
    let stop = |address: u16, instruction: Option<String>, message: String| Stop {
        address,
        instruction,
        message: Some(message),
        target: None,
        idle_loop: None,
    };
    let st = &m.cpu.st;
    match *d {
        Diagnosis::NoCode {
            at,
            from,
            interrupt,
            fell_through,
        } => {
            let exec_hint = if (0x1000..=0x1FFF).contains(&at) {
                " The EXEC is the console's ROM: pass exec_path (your own image of it) to cp1600_load_rom, or start the cartridge without it (start \"header\")."
            } else {
                ""
            };
            let Some(from) = from else {
                return stop(
                    at,
                    None,
                    format!(
                        "the PC is at {}: there is no code to run. Set R7 with cp1600_write_registers or reload.{exec_hint}",
                        place(m, at)
                    ),
                );
            };
            let text = instruction_at(m, from);
            let message = if interrupt {
                format!(
                    "an interrupt after `{text}` at ${from:04X} entered $1004, the EXEC's interrupt vector, and no EXEC is loaded.{exec_hint}"
                )
            } else if fell_through {
                format!(
                    "execution ran past the end of the code: `{text}` at ${from:04X} is followed by {}",
                    place(m, at)
                )
            } else {
                let via_stack = if text.starts_with("PULR R7") {
                    format!(" (the word it pulled from the stack at ${:04X})", st.r[6])
                } else {
                    String::new()
                };
                format!(
                    "`{text}` at ${from:04X} jumped to {}{via_stack}: no code there.{exec_hint}",
                    place(m, at)
                )
            };
            Stop {
                target: Some(at),
                ..stop(from, Some(text), message)
            }
        }
        Diagnosis::Stack { pc, addr, push } => {
            let text = instruction_at(m, pc);
            stop(
                pc,
                Some(text.clone()),
                format!(
                    "`{text}` would {} {} through R6 = ${:04X}, which is not RAM: the stack pointer was never set (the EXEC sets R6 = $02F1 before a cartridge runs) or went astray. Not executed; set R6 with cp1600_write_registers, or load with start \"header\".",
                    if push { "push to" } else { "pull from" },
                    place(m, addr),
                    st.r[6],
                ),
            )
        }
        Diagnosis::InterruptStack { pc, addr } => stop(
            pc,
            Some(instruction_at(m, pc)),
            format!(
                "an interrupt is due but pushing the PC would write to {}, which is not RAM (R6 = ${:04X}); it stays pending. Set R6 with cp1600_write_registers.",
                place(m, addr),
                st.r[6]
            ),
        ),
        Diagnosis::Spin { start, end, cycles } => {
            let text = instruction_at(m, end);
            Stop {
                idle_loop: Some(Span { start, end }),
                ..stop(
                    end,
                    Some(text),
                    format!(
                        "the loop ${start:04X}-${end:04X} has gone round for {cycles} cycles (over a second of console time) with interrupts on: it is waiting for the VBLANK interrupt, which the STIC raises 60 times a second on a console and nothing raises here. Raise one with cp1600_interrupt (it enters $1004, the EXEC's handler), or pass checks false to keep spinning."
                    ),
                )
            }
        }
        Diagnosis::Idle { start, end } => {
            let text = instruction_at(m, end);
            let body = disassemble_range(|a| m.cpu.mem.read(a), start, end, 16);
            let mut polled: Vec<String> = Vec::new();
            for ins in &body {
                // Direct reads (MVI/ADD/CMP/AND/XOR $addr): what a wait loop polls.
                let op = ins.words[0] & 0x3FF;
                if op >= 0x280 && (op >> 3) & 7 == 0 && ins.words.len() > 1 && polled.len() < 4 {
                    polled.push(place(m, ins.words[1]));
                }
            }
            let waits = if polled.is_empty() {
                "it reads nothing that could change".to_string()
            } else {
                format!(
                    "it polls {}, which nothing in the loop changes",
                    polled.join(", ")
                )
            };
            let interrupts = if st.i {
                "interrupts are on: on a console the VBLANK interrupt (60 a second) would end the wait; raise one with cp1600_interrupt (it enters $1004, the EXEC's handler)"
            } else {
                "interrupts are off, so on a console only a hardware register this emulator does not model could end it"
            };
            Stop {
                idle_loop: Some(Span { start, end }),
                ..stop(
                    end,
                    Some(text),
                    format!(
                        "the loop ${start:04X}-${end:04X} came round with every register and all memory unchanged: {waits}; {interrupts}. Pass checks false to run it anyway."
                    ),
                )
            }
        }
    }
}
