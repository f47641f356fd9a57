//! The CP-1600 core: every instruction, flag rule and jzIntv cycle count.
//!
//! One `step` fetches the 10-bit opcode, dispatches on its top four bits and
//! handles the addressing mode inline; nothing allocates. R7 is incremented
//! as each word is fetched, which makes immediate operands exactly "@R7 with
//! post-increment" and makes R7 read as the next word's address when it is a
//! source operand.

use crate::memory::{Memory, Region};

/// Address the EXEC's interrupt vector lives at; interrupt entry jumps here.
pub const INTERRUPT_VECTOR: u16 = 0x1004;

/// Set in [`Cpu::exec`]'s result when a check stopped the CPU ([`Cpu::fault`]
/// says which). The low bits are the cycles of what did execute: 0 when the
/// instruction was refused before it changed anything.
pub const FAULT: u32 = 1 << 31;

/// Set in [`Cpu::exec`]'s result by HLT beside its cycles, so a run loop
/// learns of the halt from the value it tests anyway rather than loading
/// [`CpuState::halted`] after every instruction.
pub const HALTED: u32 = 1 << 30;

/// The most cycles one [`Cpu::exec`] can return, its flags aside: the
/// longest instruction (an indirect MVI after SDBD, 14) followed by
/// interrupt entry (12), rounded up. A run loop may execute
/// `(cycle_end - cycles) / MAX_EXEC_CYCLES` instructions without checking
/// the cycle limit.
pub const MAX_EXEC_CYCLES: u32 = 32;

/// Something a real console would not survive, caught before it happens
/// (only while [`Cpu::checks`] is on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The opcode fetch at `pc` found nothing mapped: the PC left the
    /// program. The instruction is not executed; the PC stays at `pc`.
    Unmapped {
        /// Where the fetch was.
        pc: u16,
    },
    /// The instruction at `pc` would push to (`push`) or pull from `addr`
    /// through R6, and `addr` is not RAM. Not executed.
    Stack {
        /// The instruction refused.
        pc: u16,
        /// The stack address it would use.
        addr: u16,
        /// A push (else a pull).
        push: bool,
    },
    /// An interrupt was due but its push of the PC would go to `addr`,
    /// outside RAM; it stays pending. The instruction before it executed.
    InterruptStack {
        /// Where the PC would be pushed.
        addr: u16,
    },
}

/// Registers, flags and counters: everything but memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuState {
    /// R0-R7; R6 is the stack pointer, R7 the program counter.
    pub r: [u16; 8],
    /// Sign flag.
    pub s: bool,
    /// Zero flag.
    pub z: bool,
    /// Overflow flag.
    pub ov: bool,
    /// Carry flag.
    pub c: bool,
    /// Interrupts enabled.
    pub i: bool,
    /// The next instruction is prefixed by SDBD.
    pub d: bool,
    /// Stopped by HLT: nothing executes until the state is changed.
    pub halted: bool,
    /// Cycles since the reset, with jzIntv's counts.
    pub cycles: u64,
    /// Instructions executed since the reset.
    pub instructions: u64,
}

impl CpuState {
    /// The status word as GSWD builds it (S, Z, OV, C in bits 7–4, repeated in 15–12).
    pub fn status_word(&self) -> u16 {
        let n = (self.s as u16) << 3 | (self.z as u16) << 2 | (self.ov as u16) << 1 | self.c as u16;
        (n << 4) | (n << 12)
    }
}

/// A CPU attached to its memory.
#[derive(Clone)]
pub struct Cpu {
    /// Registers, flags and counters.
    pub st: CpuState,
    /// The memory map and its contents.
    pub mem: Memory,
    /// A pending INTRM request, taken after the next interruptible
    /// instruction once interrupts are enabled.
    pub irq: bool,
    /// External branch condition inputs (EBCA0–3) that BEXT compares with.
    pub ext: u8,
    /// Refuse to run from unmapped memory or with a stack outside RAM
    /// (default on); off, the CPU runs on as the bare chip would.
    pub checks: bool,
    /// Why the last `exec` returned [`FAULT`].
    pub fault: Option<Fault>,
    /// An interrupt was entered (so a fetch failing at $1004 is its doing).
    pub irq_entered: bool,
}

impl Default for Cpu {
    fn default() -> Self {
        Self::new()
    }
}

impl Cpu {
    /// A CPU with registers 0 (PC 0), the standard memory map (both RAMs,
    /// nothing loaded) and the checks on.
    pub fn new() -> Self {
        Cpu {
            st: CpuState::default(),
            mem: Memory::new(),
            irq: false,
            ext: 0,
            checks: true,
            fault: None,
            irq_entered: false,
        }
    }

    /// Clears registers, flags and counters and sets the PC.
    pub fn reset_to(&mut self, pc: u16) {
        self.st = CpuState::default();
        self.st.r[7] = pc;
        self.irq = false;
        self.fault = None;
        self.irq_entered = false;
    }

    #[inline(always)]
    fn fetch(&mut self) -> u16 {
        let pc = self.st.r[7];
        self.st.r[7] = pc.wrapping_add(1);
        self.mem.read(pc)
    }

    #[inline(always)]
    fn set_sz(&mut self, v: u16) {
        self.st.s = v & 0x8000 != 0;
        self.st.z = v == 0;
    }

    /// `a + b + cin` setting all four flags; SUB is `a + !b + 1`.
    #[inline(always)]
    fn add_flags(&mut self, a: u16, b: u16, cin: u16) -> u16 {
        let sum = a as u32 + b as u32 + cin as u32;
        let r = sum as u16;
        self.st.c = sum > 0xFFFF;
        self.st.ov = (a ^ r) & (b ^ r) & 0x8000 != 0;
        self.set_sz(r);
        r
    }

    #[inline(always)]
    fn cond(&self, ccc: u16) -> bool {
        let st = &self.st;
        match ccc & 7 {
            0 => true,
            1 => st.c,
            2 => st.ov,
            3 => !st.s,
            4 => st.z,
            5 => st.s != st.ov,
            6 => st.z || (st.s != st.ov),
            _ => st.s != st.c,
        }
    }

    /// Executes one instruction (nothing when halted); returns the fault
    /// that stopped it, if any (see [`FAULT`]).
    #[inline(always)]
    pub fn step(&mut self) -> Option<Fault> {
        if self.st.halted {
            return None;
        }
        let cycles = self.exec();
        let ran = cycles & !(FAULT | HALTED);
        if ran != 0 {
            // Saturating: a restored session may start near the end (up
            // to 2^63); wrapping would make every difference nonsense.
            self.st.cycles = self.st.cycles.saturating_add(ran as u64);
            self.st.instructions = self.st.instructions.saturating_add(1);
        }
        if cycles & FAULT != 0 {
            self.fault
        } else {
            None
        }
    }

    /// Refuses the instruction at `pc` before it changed anything but the
    /// fetch (undone here), recording why.
    #[cold]
    fn refuse(&mut self, pc: u16, d: bool, fault: Fault) -> u32 {
        self.st.r[7] = pc;
        self.st.d = d;
        self.fault = Some(fault);
        FAULT
    }

    /// Refuses the instruction just fetched, whose push (or pull) through
    /// R6 would touch `addr`, outside RAM.
    #[cold]
    fn refuse_stack(&mut self, addr: u16, push: bool, d: bool) -> u32 {
        let pc = self.st.r[7].wrapping_sub(1);
        self.refuse(pc, d, Fault::Stack { pc, addr, push })
    }

    /// Executes one instruction and returns its cycles, without touching
    /// the cycle and instruction counters (the caller keeps them, so a run
    /// loop can hold them in locals). Interrupt entry cycles are included.
    #[inline(always)]
    pub fn exec(&mut self) -> u32 {
        let word = self.fetch();
        // Real opcodes are 10 bits; only a word with high bits set can be
        // a fetch from nowhere (see `refuse_unmapped`). In a component the
        // opcode is the word itself where it has none: with the mask on
        // every path LLVM sinks it into each family comparison below and
        // Cranelift computes it again before each (bench-loop.bin 291 ->
        // 307 M instructions a second). Natively that form is 20% slower,
        // so there the mask stays.
        #[cfg(target_arch = "wasm32")]
        let op = if word > 0x3FF {
            if self.checks
                && let Some(refused) = self.refuse_unmapped()
            {
                return refused;
            }
            word & 0x3FF
        } else {
            word
        };
        #[cfg(not(target_arch = "wasm32"))]
        let op = {
            if word > 0x3FF
                && self.checks
                && let Some(refused) = self.refuse_unmapped()
            {
                return refused;
            }
            word & 0x3FF
        };
        let d = self.st.d;
        self.st.d = false;
        // Comparisons, not a `match`: in a component the match became a
        // bounds-clamped jump table, an indirect jump per instruction.
        let cycles = if op >= 0x280 {
            self.exec_mem(op, d)
        } else if op >= 0x200 {
            if op >= 0x240 {
                self.exec_mvo(op, d)
            } else {
                self.exec_branch(op)
            }
        } else if op >= 0x080 {
            self.exec_reg(op)
        } else if op >= 0x040 {
            self.exec_shift(op)
        } else {
            self.exec_control(op)
        };
        // A refused instruction (FAULT) did not happen, so no interrupt follows it.
        if self.irq && cycles < FAULT {
            return cycles + self.maybe_interrupt(op);
        }
        cycles
    }

    /// Refuses the word just fetched, which has bits above an opcode's ten,
    /// when it came from nowhere: unmapped words read $FFFF, and STIC
    /// registers $3xxx (running them is a jump gone astray).
    #[inline(always)]
    fn refuse_unmapped(&mut self) -> Option<u32> {
        let pc = self.st.r[7].wrapping_sub(1);
        if matches!(self.mem.region(pc), Region::Unmapped | Region::Stic) {
            let d = self.st.d;
            return Some(self.refuse(pc, d, Fault::Unmapped { pc }));
        }
        None
    }

    #[cold]
    fn maybe_interrupt(&mut self, op: u16) -> u32 {
        if self.st.i && !self.st.d && !self.st.halted && interruptible(op) {
            let sp = self.st.r[6];
            if self.checks && !self.mem.is_ram(sp) {
                self.fault = Some(Fault::InterruptStack { addr: sp });
                return FAULT;
            }
            self.irq = false;
            self.irq_entered = true;
            self.mem.write(sp, self.st.r[7]);
            self.st.r[6] = sp.wrapping_add(1);
            self.st.r[7] = INTERRUPT_VECTOR;
            return 12;
        }
        0
    }

    #[inline(always)]
    fn exec_control(&mut self, op: u16) -> u32 {
        let dd = (op & 7) as usize;
        let extra = (dd >= 6) as u32;
        // INCR and DECR, the commonest, before the `match` (a jump table
        // in a component).
        if (0x008..=0x017).contains(&op) {
            let r = self.st.r[dd];
            let v = if op < 0x010 {
                r.wrapping_add(1)
            } else {
                r.wrapping_sub(1)
            };
            self.st.r[dd] = v;
            self.set_sz(v);
            return 6 + extra;
        }
        match op {
            0x000 => {
                // jzIntv leaves the PC on the HLT itself.
                self.st.r[7] = self.st.r[7].wrapping_sub(1);
                self.st.halted = true;
                4 | HALTED
            }
            0x001 => {
                self.st.d = true;
                4
            }
            0x002 => {
                self.st.i = true;
                4
            }
            0x003 => {
                self.st.i = false;
                4
            }
            0x004 => {
                let w2 = self.fetch();
                let w3 = self.fetch();
                let target = ((w2 & 0xFC) << 8) | (w3 & 0x3FF);
                let rr = (w2 >> 8) & 3;
                if rr != 3 {
                    self.st.r[4 + rr as usize] = self.st.r[7];
                }
                match w2 & 3 {
                    1 => self.st.i = true,
                    2 => self.st.i = false,
                    _ => {}
                }
                self.st.r[7] = target;
                13
            }
            0x005 => 4,
            0x006 => {
                self.st.c = false;
                4
            }
            0x007 => {
                self.st.c = true;
                4
            }
            0x008..=0x017 => unreachable!("INCR and DECR are run above"),
            0x018..=0x01F => {
                let v = !self.st.r[dd];
                self.st.r[dd] = v;
                self.set_sz(v);
                6 + extra
            }
            0x020..=0x027 => {
                let v = self.add_flags(0, !self.st.r[dd], 1);
                self.st.r[dd] = v;
                6 + extra
            }
            0x028..=0x02F => {
                let v = self.add_flags(self.st.r[dd], 0, self.st.c as u16);
                self.st.r[dd] = v;
                6 + extra
            }
            0x030..=0x033 => {
                self.st.r[dd & 3] = self.st.status_word();
                6
            }
            0x034..=0x037 => 6, // NOP, SIN
            _ => {
                let v = self.st.r[dd];
                self.st.s = v & 0x80 != 0;
                self.st.z = v & 0x40 != 0;
                self.st.ov = v & 0x20 != 0;
                self.st.c = v & 0x10 != 0;
                6
            }
        }
    }

    #[inline(always)]
    fn exec_shift(&mut self, op: u16) -> u32 {
        let rr = (op & 3) as usize;
        let two = op & 4 != 0;
        let v = self.st.r[rr];
        let (c, ov) = (self.st.c as u16, self.st.ov as u16);
        // (result, sign taken from bit 15 rather than bit 7)
        let (r, left) = match (op >> 3) & 7 {
            0 => {
                let r = if two {
                    (v & 0xFF) | (v << 8)
                } else {
                    v.rotate_left(8)
                };
                (r, false)
            }
            1 => (if two { v << 2 } else { v << 1 }, true),
            2 => {
                self.st.c = v & 0x8000 != 0;
                if two {
                    self.st.ov = v & 0x4000 != 0;
                    ((v << 2) | (c << 1) | ov, true)
                } else {
                    ((v << 1) | c, true)
                }
            }
            3 => {
                self.st.c = v & 0x8000 != 0;
                if two {
                    self.st.ov = v & 0x4000 != 0;
                    (v << 2, true)
                } else {
                    (v << 1, true)
                }
            }
            4 => (if two { v >> 2 } else { v >> 1 }, false),
            5 => (((v as i16) >> (1 + two as u32)) as u16, false),
            6 => {
                self.st.c = v & 1 != 0;
                if two {
                    self.st.ov = v & 2 != 0;
                    ((v >> 2) | (c << 14) | (ov << 15), false)
                } else {
                    ((v >> 1) | (c << 15), false)
                }
            }
            _ => {
                self.st.c = v & 1 != 0;
                if two {
                    self.st.ov = v & 2 != 0;
                }
                (((v as i16) >> (1 + two as u32)) as u16, false)
            }
        };
        self.st.r[rr] = r;
        self.st.s = if left { r & 0x8000 != 0 } else { r & 0x80 != 0 };
        self.st.z = r == 0;
        6 + 2 * two as u32
    }

    #[inline(always)]
    fn exec_reg(&mut self, op: u16) -> u32 {
        let ss = ((op >> 3) & 7) as usize;
        let dd = (op & 7) as usize;
        let a = self.st.r[ss];
        let b = self.st.r[dd];
        match op >> 6 {
            2 => {
                self.st.r[dd] = a;
                self.set_sz(a);
            }
            3 => self.st.r[dd] = self.add_flags(b, a, 0),
            4 => self.st.r[dd] = self.add_flags(b, !a, 1),
            5 => {
                self.add_flags(b, !a, 1);
            }
            6 => {
                let v = a & b;
                self.st.r[dd] = v;
                self.set_sz(v);
            }
            _ => {
                let v = a ^ b;
                self.st.r[dd] = v;
                self.set_sz(v);
            }
        }
        6 + (dd >= 6) as u32
    }

    #[inline(always)]
    fn exec_branch(&mut self, op: u16) -> u32 {
        let disp = self.fetch();
        let taken = if op & 0x10 != 0 {
            (op & 0xF) as u8 == self.ext
        } else {
            self.cond(op) != (op & 8 != 0)
        };
        if !taken {
            return 7;
        }
        let next = self.st.r[7];
        self.st.r[7] = if op & 0x20 != 0 {
            next.wrapping_sub(disp).wrapping_sub(1)
        } else {
            next.wrapping_add(disp)
        };
        9
    }

    #[inline(always)]
    fn exec_mvo(&mut self, op: u16, d: bool) -> u32 {
        let mmm = ((op >> 3) & 7) as usize;
        let ss = (op & 7) as usize;
        match mmm {
            0 => {
                let addr = self.fetch();
                self.mem.write(addr, self.st.r[ss]);
                11
            }
            1..=3 => {
                self.mem.write(self.st.r[mmm], self.st.r[ss]);
                9
            }
            _ => {
                let p = self.st.r[mmm];
                if mmm == 6 && self.checks && !self.mem.is_ram(p) {
                    return self.refuse_stack(p, true, d);
                }
                let v = self.st.r[ss];
                self.st.r[mmm] = p.wrapping_add(1);
                self.mem.write(p, v);
                9
            }
        }
    }

    /// MVI and the ALU ops with a memory operand (direct, indirect, stack, immediate).
    #[inline(always)]
    fn exec_mem(&mut self, op: u16, d: bool) -> u32 {
        let mmm = ((op >> 3) & 7) as usize;
        let dd = (op & 7) as usize;
        let extra = (dd >= 6) as u32;
        let (val, cycles) = match mmm {
            0 => {
                let addr = self.fetch();
                (self.mem.read_data(addr), 10 + extra + 3 * d as u32)
            }
            6 => {
                let p = self.st.r[6].wrapping_sub(1);
                if self.checks && !self.mem.is_ram(p) {
                    return self.refuse_stack(p, false, d);
                }
                self.st.r[6] = p;
                (self.mem.read_data(p), 12)
            }
            _ => {
                let p = self.st.r[mmm];
                let inc = (mmm >= 4) as u16;
                let base = if mmm == 7 { 8 + extra } else { 8 };
                if d {
                    let lo = self.mem.read_data(p) & 0xFF;
                    let p2 = p.wrapping_add(inc);
                    let hi = self.mem.read_data(p2) & 0xFF;
                    self.st.r[mmm] = p2.wrapping_add(inc);
                    (lo | (hi << 8), base + 2)
                } else {
                    self.st.r[mmm] = p.wrapping_add(inc);
                    (self.mem.read_data(p), base)
                }
            }
        };
        let b = self.st.r[dd];
        match op >> 6 {
            10 => self.st.r[dd] = val,
            11 => self.st.r[dd] = self.add_flags(b, val, 0),
            12 => self.st.r[dd] = self.add_flags(b, !val, 1),
            13 => {
                self.add_flags(b, !val, 1);
            }
            14 => {
                let v = b & val;
                self.st.r[dd] = v;
                self.set_sz(v);
            }
            _ => {
                let v = b ^ val;
                self.st.r[dd] = v;
                self.set_sz(v);
            }
        }
        cycles
    }
}

/// Whether an interrupt may be taken right after this opcode (GI: SDBD,
/// EIS, DIS, TCI, CLRC, SETC, HLT, MVO in every form, shifts, GSWD and RSWD
/// are not interruptible).
pub fn interruptible(op: u16) -> bool {
    let op = op & 0x3FF;
    !matches!(op, 0x000..=0x003 | 0x005..=0x007 | 0x030..=0x033 | 0x038..=0x07F | 0x240..=0x27F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_with(words: &[u16]) -> Cpu {
        let mut cpu = Cpu::new();
        for (i, w) in words.iter().enumerate() {
            cpu.mem.load_word(0x5000 + i as u16, *w);
        }
        cpu.reset_to(0x5000);
        cpu
    }

    #[test]
    fn rrc_by_two_matches_jzintv_example() {
        // MVII #$1333,R1 ; RRC R1,2
        let mut cpu = cpu_with(&[0x0281 | 0x38, 0x1333, 0x0040 | (6 << 3) | 4 | 1]);
        cpu.step();
        cpu.step();
        assert_eq!(cpu.st.r[1], 0x04CC);
        assert!(cpu.st.s && cpu.st.ov && cpu.st.c && !cpu.st.z);
        assert_eq!(cpu.st.cycles, 8 + 8);
    }

    #[test]
    fn sdbd_immediate_reads_low_byte_first() {
        // SDBD ; MVII #$ABCD,R2 as as1600 assembles it
        let mut cpu = cpu_with(&[0x0001, 0x02BA, 0x00CD, 0x00AB, 0x0000]);
        cpu.step();
        assert!(cpu.st.d);
        cpu.step();
        assert_eq!(cpu.st.r[2], 0xABCD);
        assert_eq!(cpu.st.r[7], 0x5004);
        assert_eq!(cpu.st.cycles, 14);
        cpu.step();
        assert!(cpu.st.halted);
        assert_eq!(cpu.st.r[7], 0x5004);
    }

    /// Issue 38 item 14 through the CPU: `MVI $0021,R0` (the mode
    /// register) gives jzIntv's $3FFF, not the $FFFF of an unmapped word;
    /// `MVO R1,$0028` then `MVI $0028,R2` gives the colour in bits 0-3.
    #[test]
    fn stic_reads_give_the_bits_the_stic_drives() {
        // MVI $0021,R0 ; MVII #$1235,R1 ; MVO R1,$0028 ; MVI $0028,R2 ; HLT
        let mut cpu = cpu_with(&[
            0x0280, 0x0021, 0x02B9, 0x1235, 0x0241, 0x0028, 0x0282, 0x0028, 0x0000,
        ]);
        cpu.step();
        assert_eq!(cpu.st.r[0], 0x3FFF);
        cpu.step();
        cpu.step();
        cpu.step();
        assert_eq!(cpu.st.r[2], 0x3FF5);
    }

    #[test]
    fn interrupt_entry_pushes_pc_and_vectors() {
        // MVII #$02F0,R6 ; EIS ; NOP ; NOP
        let mut cpu = cpu_with(&[0x02BE, 0x02F0, 0x0002, 0x0034, 0x0034]);
        cpu.step();
        cpu.irq = true;
        cpu.step(); // EIS is not interruptible
        assert_eq!(cpu.st.r[7], 0x5003);
        cpu.step(); // NOP, then the interrupt
        assert_eq!(cpu.st.r[7], INTERRUPT_VECTOR);
        assert_eq!(cpu.mem.read(0x02F0), 0x5004);
        assert_eq!(cpu.st.r[6], 0x02F1);
        assert_eq!(cpu.st.cycles, 9 + 4 + 6 + 12);
        assert!(!cpu.irq);
    }
}
