//! A real-mode 8086 / 80186 interpreter.
//!
//! Flags are computed eagerly into one FLAGS word: real-mode programs read
//! flags often enough (Jcc after nearly every ALU op) that lazy flags buy
//! little here, and eager flags keep every instruction self-contained.
//! The core knows nothing about DOS: an `INT n` whose vector still points at
//! the service stub for `n` stops the run loop with [`Exit::Service`], and
//! the machine layer performs the service natively.

/// Flag bits.
pub const CF: u16 = 0x0001;
/// Parity flag.
pub const PF: u16 = 0x0004;
/// Auxiliary (BCD half) carry flag.
pub const AF: u16 = 0x0010;
/// Zero flag.
pub const ZF: u16 = 0x0040;
/// Sign flag.
pub const SF: u16 = 0x0080;
/// Trap (single-step) flag.
pub const TF: u16 = 0x0100;
/// Interrupt-enable flag.
pub const IF: u16 = 0x0200;
/// Direction flag (string ops count down).
pub const DF: u16 = 0x0400;
/// Overflow flag.
pub const OF: u16 = 0x0800;
const ARITH: u16 = CF | PF | AF | ZF | SF | OF;

/// Register indices in ModR/M encoding order.
pub const AX: usize = 0;
/// CX (CL/CH).
pub const CX: usize = 1;
/// DX (DL/DH).
pub const DX: usize = 2;
/// BX (BL/BH).
pub const BX: usize = 3;
/// SP.
pub const SP: usize = 4;
/// BP.
pub const BP: usize = 5;
/// SI.
pub const SI: usize = 6;
/// DI.
pub const DI: usize = 7;

/// Segment register indices in encoding order.
pub const ES: usize = 0;
/// CS.
pub const CS: usize = 1;
/// SS.
pub const SS: usize = 2;
/// DS.
pub const DS: usize = 3;

/// The real-mode address space: 1 MiB (addresses wrap at 20 bits, no A20).
pub const MEM_SIZE: usize = 1 << 20;
const MEM_MASK: u32 = (MEM_SIZE as u32) - 1;

/// Segment of the service stubs that the default interrupt vectors point at
/// (vector n → STUB_SEGMENT:n). Each stub byte is an IRET so that a program
/// chaining to an "old" vector with a far call returns harmlessly.
pub const STUB_SEGMENT: u16 = 0xF000;

/// Which processor the core behaves as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Intel 8086: 60–6F/C0/C1/C8/C9 alias other opcodes, shift counts
    /// unmasked, divide errors push the next instruction's address.
    I8086,
    /// Intel 80186: PUSHA/POPA, BOUND, PUSH imm, IMUL imm, INS/OUTS, shifts
    /// by imm8, ENTER/LEAVE; counts masked to 5 bits; faults push the
    /// faulting instruction.
    I80186,
}

impl Model {
    /// The model's name as results print it: `8086` or `80186`.
    pub fn name(self) -> &'static str {
        match self {
            Model::I8086 => "8086",
            Model::I80186 => "80186",
        }
    }
}

/// Why the run loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The instruction budget is used up.
    Budget,
    /// HLT executed (IP is past it).
    Halt,
    /// `INT n` (or a CPU exception) reached the service stub of vector n;
    /// IP already points past the instruction.
    Service(u8),
    /// The next instruction is at an execution breakpoint.
    Breakpoint,
    /// The instruction just executed made a data access an access
    /// breakpoint watches.
    Watch(crate::watch::Access),
}

/// An 8086/80186 CPU and its 1 MiB of memory.
pub struct Cpu {
    /// General registers, indexed by [`AX`]..[`DI`].
    pub regs: [u16; 8],
    /// Segment registers, indexed by [`ES`]..[`DS`].
    pub sregs: [u16; 4],
    /// Instruction pointer.
    pub ip: u16,
    /// FLAGS ([`CF`] and the other bits).
    pub flags: u16,
    /// The memory, one byte per linear address.
    pub mem: Box<[u8; MEM_SIZE]>,
    /// What it decodes: 8086 aliases or 80186 instructions.
    pub model: Model,
    /// Total instructions executed (a REP string op counts once).
    pub instructions: u64,
    /// When true, `INT n` through an untouched stub vector exits with
    /// [`Exit::Service`] instead of entering the stub.
    pub services: bool,
    /// Address of the instruction being executed (start, prefixes included).
    pub insn_cs: u16,
    /// Offset of the instruction being executed (with `insn_cs`).
    pub insn_ip: u16,
    /// Set by control transfers that the tracker cares about.
    pub last_event: Event,
    /// The devices behind `IN` and `OUT` (the display's ports), boxed:
    /// the palette would otherwise sit among the fields every instruction
    /// touches.
    pub io: Box<crate::ports::Ports>,
    /// Memory and port ranges whose data accesses stop a run (access
    /// breakpoints), when the machine has any.
    pub watch: Option<Box<crate::watch::Watch>>,
    seg_override: Option<usize>,
    rep: u8,
}

/// Control-flow events of the last instruction, for the tracker. Cleared at
/// the start of every instruction (one store), filled only by CALL/INT/RET.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Event {
    /// No control transfer the tracker records.
    #[default]
    None,
    /// A CALL to the new CS:IP.
    Call,
    /// An INT instruction (not a fault) to the new CS:IP, or serviced natively.
    Int(u8),
    /// A CPU exception (divide error, BOUND, invalid opcode) entered.
    Fault(u8),
    /// IRET.
    Iret,
    /// RET / RETF.
    Ret,
}

/// Whether `op` is one [`Cpu::alu_or_mov`] runs.
#[inline(always)]
fn is_alu_or_mov(op: u8) -> bool {
    op & 0xC4 == 0 || op & 0xF4 == 0x80
}

/// A decoded r/m operand.
#[derive(Clone, Copy)]
enum Rm {
    Reg(usize),
    Mem(u32, u16),
}

#[inline(always)]
fn parity(v: u32) -> u16 {
    if (v as u8).count_ones() & 1 == 0 {
        PF
    } else {
        0
    }
}

#[inline(always)]
fn szp<const W: bool>(r: u32) -> u16 {
    let (mask, sign) = if W { (0xFFFF, 0x8000) } else { (0xFF, 0x80) };
    let r = r & mask;
    let mut f = parity(r);
    if r == 0 {
        f |= ZF;
    }
    if r & sign != 0 {
        f |= SF;
    }
    f
}

impl Default for Cpu {
    fn default() -> Self {
        Self::new(Model::I80186)
    }
}

impl Cpu {
    /// A CPU in reset state (all registers 0) with zeroed memory.
    pub fn new(model: Model) -> Self {
        Cpu {
            regs: [0; 8],
            sregs: [0; 4],
            ip: 0,
            flags: 0xF002,
            mem: vec![0u8; MEM_SIZE]
                .into_boxed_slice()
                .try_into()
                .expect("MEM_SIZE bytes"),
            model,
            instructions: 0,
            services: false,
            insn_cs: 0,
            insn_ip: 0,
            last_event: Event::None,
            io: Box::default(),
            watch: None,
            seg_override: None,
            rep: 0,
        }
    }

    // ----- memory -------------------------------------------------------

    /// The linear address of `seg:off`, wrapped at 1 MiB.
    #[inline(always)]
    pub fn lin(seg: u16, off: u16) -> u32 {
        ((seg as u32) << 4).wrapping_add(off as u32) & MEM_MASK
    }

    /// Reads the byte at a linear address.
    #[inline(always)]
    pub fn rb(&self, addr: u32) -> u8 {
        self.mem[(addr & MEM_MASK) as usize]
    }

    /// Writes the byte at a linear address.
    #[inline(always)]
    pub fn wb(&mut self, addr: u32, v: u8) {
        self.mem[(addr & MEM_MASK) as usize] = v;
    }

    /// A data read of the byte at `base + off` (an access watch sees it).
    #[inline(always)]
    fn rb_at(&self, base: u32, off: u16) -> u8 {
        let a = base.wrapping_add(off as u32);
        if let Some(w) = &self.watch {
            w.memory(a & MEM_MASK, false);
        }
        self.rb(a)
    }

    /// A data read of the word at `base + off`, wrapping within the segment.
    #[inline(always)]
    fn rw_at(&self, base: u32, off: u16) -> u16 {
        let a = base.wrapping_add(off as u32) & MEM_MASK;
        if off != 0xFFFF && a != MEM_MASK {
            if let Some(w) = &self.watch {
                w.memory(a, false);
                w.memory(a + 1, false);
            }
            u16::from_le_bytes([self.mem[a as usize], self.mem[a as usize + 1]])
        } else {
            self.rb_at(base, off) as u16 | (self.rb_at(base, off.wrapping_add(1)) as u16) << 8
        }
    }

    /// An instruction fetch: never an access a watch sees.
    #[inline(always)]
    fn code_word(&self, base: u32, off: u16) -> u16 {
        let a = base.wrapping_add(off as u32) & MEM_MASK;
        if off != 0xFFFF && a != MEM_MASK {
            u16::from_le_bytes([self.mem[a as usize], self.mem[a as usize + 1]])
        } else {
            self.rb(a) as u16 | (self.rb(base.wrapping_add(off.wrapping_add(1) as u32)) as u16) << 8
        }
    }

    /// A data write of the byte at `base + off` (an access watch sees it).
    #[inline(always)]
    fn wb_at(&mut self, base: u32, off: u16, v: u8) {
        let a = base.wrapping_add(off as u32);
        if let Some(w) = &self.watch {
            w.memory(a & MEM_MASK, true);
        }
        self.wb(a, v)
    }

    #[inline(always)]
    fn ww_at(&mut self, base: u32, off: u16, v: u16) {
        self.wb_at(base, off, v as u8);
        self.wb_at(base, off.wrapping_add(1), (v >> 8) as u8);
    }

    /// An `IN` from `port` (an access watch sees it).
    #[inline(always)]
    fn port_in(&mut self, port: u16) -> u8 {
        if let Some(w) = &self.watch {
            w.port(port, false);
        }
        self.io.input(port)
    }

    /// An `OUT` to `port` (an access watch sees it).
    #[inline(always)]
    fn port_out(&mut self, port: u16, v: u8) {
        if let Some(w) = &self.watch {
            w.port(port, true);
        }
        self.io.output(port, v)
    }

    /// Reads a word at seg:off with 64 KiB offset wrap.
    pub fn read_word(&self, seg: u16, off: u16) -> u16 {
        self.rw_at((seg as u32) << 4, off)
    }

    /// Writes a word at seg:off with 64 KiB offset wrap.
    pub fn write_word(&mut self, seg: u16, off: u16, v: u16) {
        self.ww_at((seg as u32) << 4, off, v)
    }

    #[inline(always)]
    fn base(&self, s: usize) -> u32 {
        (self.sregs[s] as u32) << 4
    }

    // ----- instruction stream -------------------------------------------

    #[inline(always)]
    fn fetch8(&mut self) -> u8 {
        let v = self.rb(self.base(CS).wrapping_add(self.ip as u32));
        self.ip = self.ip.wrapping_add(1);
        v
    }

    #[inline(always)]
    fn fetch16(&mut self) -> u16 {
        let v = self.code_word(self.base(CS), self.ip);
        self.ip = self.ip.wrapping_add(2);
        v
    }

    // ----- registers ----------------------------------------------------

    /// An 8-bit register by ModR/M number (AL, CL, DL, BL, AH, CH, DH, BH).
    #[inline(always)]
    pub fn r8(&self, r: usize) -> u8 {
        let v = self.regs[r & 3];
        if r & 4 == 0 { v as u8 } else { (v >> 8) as u8 }
    }

    /// Sets an 8-bit register by ModR/M number.
    #[inline(always)]
    pub fn set_r8(&mut self, r: usize, v: u8) {
        let x = &mut self.regs[r & 3];
        if r & 4 == 0 {
            *x = (*x & 0xFF00) | v as u16;
        } else {
            *x = (*x & 0x00FF) | (v as u16) << 8;
        }
    }

    /// Stores FLAGS the way POPF/IRET do: bits 1 and 12–15 read as 1, bits
    /// 3 and 5 as 0.
    #[inline(always)]
    pub fn load_flags(&mut self, v: u16) {
        self.flags = (v & 0x0FD5) | 0xF002;
    }

    #[inline(always)]
    fn set_flag(&mut self, f: u16, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    #[inline(always)]
    fn flag(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    // ----- stack --------------------------------------------------------

    /// Pushes a word at SS:SP-2.
    #[inline(always)]
    pub fn push(&mut self, v: u16) {
        let sp = self.regs[SP].wrapping_sub(2);
        self.regs[SP] = sp;
        self.ww_at(self.base(SS), sp, v);
    }

    /// Pops the word at SS:SP.
    #[inline(always)]
    pub fn pop(&mut self) -> u16 {
        let sp = self.regs[SP];
        let v = self.rw_at(self.base(SS), sp);
        self.regs[SP] = sp.wrapping_add(2);
        v
    }

    /// A word `IN`: the port, then the next.
    fn in16(&mut self, port: u16) -> u16 {
        let lo = self.port_in(port);
        let hi = self.port_in(port.wrapping_add(1));
        u16::from(lo) | u16::from(hi) << 8
    }

    /// `OUT` of AL (or AX: AL to `port`, AH to the next).
    fn out(&mut self, port: u16, word: bool) {
        let ax = self.regs[AX];
        self.port_out(port, ax as u8);
        if word {
            self.port_out(port.wrapping_add(1), (ax >> 8) as u8);
        }
    }

    // ----- ModR/M -------------------------------------------------------

    #[inline(always)]
    fn seg_or(&self, default: usize) -> u32 {
        self.base(self.seg_override.unwrap_or(default))
    }

    #[inline(always)]
    fn decode_rm(&mut self, modrm: u8) -> Rm {
        let md = modrm >> 6;
        let rm = (modrm & 7) as usize;
        if md == 3 {
            return Rm::Reg(rm);
        }
        // Base, index (its mask 0 when there is none) and default
        // segment of each r/m: looked up, not matched, since in wasm a
        // `match` on it is an indirect jump per memory operand.
        const FORMS: [(usize, usize, u16, usize); 8] = [
            (BX, SI, 0xFFFF, DS),
            (BX, DI, 0xFFFF, DS),
            (BP, SI, 0xFFFF, SS),
            (BP, DI, 0xFFFF, SS),
            (SI, SI, 0, DS),
            (DI, DI, 0, DS),
            (BP, BP, 0, SS),
            (BX, BX, 0, DS),
        ];
        let (base, index, mask, mut def) = FORMS[rm];
        let mut off = self.regs[base].wrapping_add(self.regs[index] & mask);
        if md == 1 {
            off = off.wrapping_add(self.fetch8() as i8 as u16);
        } else if md == 2 {
            off = off.wrapping_add(self.fetch16());
        } else if rm == 6 {
            // mod 00, r/m 110: a direct address, in DS.
            off = self.fetch16();
            def = DS;
        }
        Rm::Mem(self.seg_or(def), off)
    }

    #[inline(always)]
    fn read_rm8(&self, rm: Rm) -> u8 {
        match rm {
            Rm::Reg(r) => self.r8(r),
            Rm::Mem(b, o) => self.rb_at(b, o),
        }
    }

    #[inline(always)]
    fn read_rm16(&self, rm: Rm) -> u16 {
        match rm {
            Rm::Reg(r) => self.regs[r],
            Rm::Mem(b, o) => self.rw_at(b, o),
        }
    }

    #[inline(always)]
    fn write_rm8(&mut self, rm: Rm, v: u8) {
        match rm {
            Rm::Reg(r) => self.set_r8(r, v),
            Rm::Mem(b, o) => self.wb_at(b, o, v),
        }
    }

    #[inline(always)]
    fn write_rm16(&mut self, rm: Rm, v: u16) {
        match rm {
            Rm::Reg(r) => self.regs[r] = v,
            Rm::Mem(b, o) => self.ww_at(b, o, v),
        }
    }

    #[inline(always)]
    fn read_rm<const W: bool>(&self, rm: Rm) -> u32 {
        if W {
            self.read_rm16(rm) as u32
        } else {
            self.read_rm8(rm) as u32
        }
    }

    #[inline(always)]
    fn write_rm<const W: bool>(&mut self, rm: Rm, v: u32) {
        if W {
            self.write_rm16(rm, v as u16)
        } else {
            self.write_rm8(rm, v as u8)
        }
    }

    #[inline(always)]
    fn reg<const W: bool>(&self, r: usize) -> u32 {
        if W {
            self.regs[r] as u32
        } else {
            self.r8(r) as u32
        }
    }

    #[inline(always)]
    fn set_reg<const W: bool>(&mut self, r: usize, v: u32) {
        if W {
            self.regs[r] = v as u16
        } else {
            self.set_r8(r, v as u8)
        }
    }

    // ----- ALU ----------------------------------------------------------

    /// ADD OR ADC SBB AND SUB XOR CMP (op 0..7); returns the result (CMP's
    /// result is not written back by the callers).
    #[inline(always)]
    fn alu<const W: bool>(&mut self, op: u8, a: u32, b: u32) -> u32 {
        match op {
            0 => self.alu_k::<W, 0>(a, b),
            1 => self.alu_k::<W, 1>(a, b),
            2 => self.alu_k::<W, 2>(a, b),
            3 => self.alu_k::<W, 3>(a, b),
            4 => self.alu_k::<W, 4>(a, b),
            5 => self.alu_k::<W, 5>(a, b),
            6 => self.alu_k::<W, 6>(a, b),
            _ => self.alu_k::<W, 7>(a, b),
        }
    }

    #[inline(always)]
    fn alu_k<const W: bool, const OP: u8>(&mut self, a: u32, b: u32) -> u32 {
        let op = OP;
        let (mask, sign) = if W {
            (0xFFFFu32, 0x8000u32)
        } else {
            (0xFF, 0x80)
        };
        let mut f = self.flags & !ARITH;
        let r = match op {
            0 | 2 => {
                let c = if op == 2 { (self.flags & CF) as u32 } else { 0 };
                let r = a + b + c;
                if r > mask {
                    f |= CF;
                }
                if (r ^ a) & (r ^ b) & sign != 0 {
                    f |= OF;
                }
                if (a ^ b ^ r) & 0x10 != 0 {
                    f |= AF;
                }
                r & mask
            }
            3 | 5 | 7 => {
                let c = if op == 3 { (self.flags & CF) as u32 } else { 0 };
                let r = a.wrapping_sub(b).wrapping_sub(c);
                if b + c > a {
                    f |= CF;
                }
                if (a ^ b) & (a ^ r) & sign != 0 {
                    f |= OF;
                }
                if (a ^ b ^ r) & 0x10 != 0 {
                    f |= AF;
                }
                r & mask
            }
            1 => a | b,
            4 => a & b,
            _ => a ^ b,
        };
        self.flags = f | szp::<W>(r);
        r
    }

    #[inline(always)]
    fn inc_dec<const W: bool>(&mut self, a: u32, dec: bool) -> u32 {
        let cf = self.flags & CF;
        let r = self.alu::<W>(if dec { 5 } else { 0 }, a, 1);
        self.flags = (self.flags & !CF) | cf;
        r
    }

    /// Group 2: ROL ROR RCL RCR SHL SHR SETMO SAR by `count`. The
    /// commonest, a rotate or shift by one, runs inline; the rest in
    /// [`Self::shift_any`] (in wasm a call costs about what such a shift
    /// does).
    #[inline(always)]
    fn shift<const W: bool>(&mut self, op: u8, a: u32, count: u8) -> u32 {
        if count == 1 && matches!(op, 0 | 1 | 4 | 5 | 7) {
            self.shift_by_one::<W>(op, a)
        } else {
            self.shift_any::<W>(op, a, count)
        }
    }

    /// ROL, ROR, SHL, SHR or SAR (`op` 0, 1, 4, 5, 7) by one, as
    /// [`Self::shift_any`] does them.
    #[inline(always)]
    fn shift_by_one<const W: bool>(&mut self, op: u8, a: u32) -> u32 {
        let (mask, sign) = if W {
            (0xFFFFu32, 0x8000u32)
        } else {
            (0xFF, 0x80)
        };
        let (r, cf, of) = match op {
            0 => {
                let cf = a & sign != 0;
                let r = ((a << 1) | cf as u32) & mask;
                (r, cf, (r & sign != 0) != cf)
            }
            1 => {
                let cf = a & 1 != 0;
                let r = (a >> 1) | if cf { sign } else { 0 };
                (r, cf, (r ^ (r << 1)) & sign != 0)
            }
            4 => {
                let cf = a & sign != 0;
                let r = (a << 1) & mask;
                (r, cf, (r & sign != 0) != cf)
            }
            5 => (a >> 1, a & 1 != 0, a & sign != 0),
            _ => ((a >> 1) | (a & sign), a & 1 != 0, false),
        };
        let mut f = self.flags & !(CF | OF);
        if op >= 4 {
            // Shifts set SF, ZF and PF, and the 8086 leaves AF set.
            f = (f & !ARITH) | szp::<W>(r) | AF;
        }
        if cf {
            f |= CF;
        }
        if of {
            f |= OF;
        }
        self.flags = f;
        r
    }

    /// [`Self::shift`] by any count.
    fn shift_any<const W: bool>(&mut self, op: u8, a: u32, count: u8) -> u32 {
        let (mask, sign, bits) = if W {
            (0xFFFFu32, 0x8000u32, 16u32)
        } else {
            (0xFF, 0x80, 8)
        };
        if count == 0 {
            return a;
        }
        let mut r = a;
        let mut cf = self.flag(CF);
        let of;
        match op {
            0 => {
                for _ in 0..count {
                    cf = r & sign != 0;
                    r = ((r << 1) | cf as u32) & mask;
                }
                of = ((r & sign) != 0) != cf;
            }
            1 => {
                for _ in 0..count {
                    cf = r & 1 != 0;
                    r = (r >> 1) | if cf { sign } else { 0 };
                }
                of = ((r ^ (r << 1)) & sign) != 0;
            }
            2 => {
                for _ in 0..count {
                    let c = r & sign != 0;
                    r = ((r << 1) | cf as u32) & mask;
                    cf = c;
                }
                of = ((r & sign) != 0) != cf;
            }
            3 => {
                for _ in 0..count {
                    let c = r & 1 != 0;
                    r = (r >> 1) | if cf { sign } else { 0 };
                    cf = c;
                }
                of = ((r ^ (r << 1)) & sign) != 0;
            }
            _ => {
                match op {
                    4 => {
                        let c = count as u32;
                        cf = c <= bits && (a << (c - 1)) & sign != 0;
                        r = if c > bits { 0 } else { (a << c) & mask };
                        of = ((r & sign) != 0) != cf;
                    }
                    5 => {
                        let c = count as u32;
                        cf = c <= bits && (a >> (c - 1)) & 1 != 0;
                        r = if c >= bits { 0 } else { a >> c };
                        of = a & sign != 0;
                    }
                    6 => {
                        // SETMO: the 8086 sets the operand to all ones.
                        r = mask;
                        cf = false;
                        of = false;
                    }
                    _ => {
                        let c = (count as u32).min(bits);
                        let s = if W {
                            a as u16 as i16 as i32
                        } else {
                            a as u8 as i8 as i32
                        };
                        cf = (s >> (c - 1)) & 1 != 0;
                        r = (s >> c.min(bits - 1)) as u32 & mask;
                        if c >= bits {
                            r = if s < 0 { mask } else { 0 };
                        }
                        of = false;
                    }
                }
                let mut f = self.flags & !ARITH;
                f |= szp::<W>(r);
                if cf {
                    f |= CF;
                }
                if of {
                    f |= OF;
                }
                if op == 4 || op == 5 || op == 7 {
                    // The 8086 leaves AF set after shifts (undefined officially).
                    f |= AF;
                }
                self.flags = f;
                return r;
            }
        }
        self.set_flag(CF, cf);
        self.set_flag(OF, of);
        r
    }

    // ----- interrupts ---------------------------------------------------

    /// Enters interrupt `n` through the IVT, or exits for native service
    /// when the vector is untouched. `ret_ip` is the IP to push.
    fn interrupt(&mut self, n: u8, ret_ip: u16) -> Option<Exit> {
        let off = self.rw_at(0, n as u16 * 4);
        let seg = self.rw_at(0, n as u16 * 4 + 2);
        if self.services && seg == STUB_SEGMENT && off == n as u16 {
            self.ip = ret_ip;
            return Some(Exit::Service(n));
        }
        let flags = self.flags;
        self.push(flags);
        let cs = self.sregs[CS];
        self.push(cs);
        self.push(ret_ip);
        self.flags &= !(IF | TF);
        self.sregs[CS] = seg;
        self.ip = off;
        None
    }

    /// A hardware interrupt request (IRQ) for vector `n`: taken now, between
    /// instructions, when interrupts are enabled; false when IF is clear.
    pub fn hardware_interrupt(&mut self, n: u8) -> bool {
        if self.flags & IF == 0 {
            return false;
        }
        let off = self.read_word(0, u16::from(n) * 4);
        let seg = self.read_word(0, u16::from(n) * 4 + 2);
        let (flags, cs, ip) = (self.flags, self.sregs[CS], self.ip);
        self.push(flags);
        self.push(cs);
        self.push(ip);
        self.flags &= !(IF | TF);
        self.sregs[CS] = seg;
        self.ip = off;
        true
    }

    fn fault(&mut self, n: u8) -> Option<Exit> {
        self.last_event = Event::Fault(n);
        let ret = match self.model {
            Model::I8086 => self.ip,
            Model::I80186 => self.insn_ip,
        };
        self.interrupt(n, ret)
    }

    // ----- execution ----------------------------------------------------

    /// Runs until `budget` instructions have executed or something stops it.
    /// `breakpoints`, when given, is a bitmap over linear addresses checked
    /// before every instruction (except the first when `resume` is set, so
    /// that a run can continue from a breakpoint).
    pub fn run(&mut self, budget: u64, breakpoints: Option<&[u64]>, resume: bool) -> (u64, Exit) {
        // In a component at a fixed address (see `plugin_kit::placed`):
        // tracking off, bench.com ran 134.2 -> 145.1 M instructions a second.
        plugin_kit::placed::run_placed(self, |cpu| cpu.run_here(budget, breakpoints, resume))
    }

    /// [`Self::run`] on this CPU where it is.
    #[inline(always)]
    fn run_here(&mut self, budget: u64, breakpoints: Option<&[u64]>, resume: bool) -> (u64, Exit) {
        // The instruction counter is kept in a local and stored once, and
        // `last_event` (read only by the tracker, which steps on its own) is
        // not reset: two stores fewer per instruction is worth ~5% in wasm.
        let mut n = 0;
        let exit = match breakpoints {
            None => loop {
                if n == budget {
                    break Exit::Budget;
                }
                n += 1;
                if let Some(e) = self.execute_one() {
                    break e;
                }
            },
            Some(bp) => loop {
                if n == budget {
                    break Exit::Budget;
                }
                let a = Self::lin(self.sregs[CS], self.ip) as usize;
                if (n > 0 || !resume) && bp[a >> 6] & (1 << (a & 63)) != 0 {
                    break Exit::Breakpoint;
                }
                n += 1;
                if let Some(e) = self.execute_one() {
                    break e;
                }
                // An access breakpoint stops after the instruction.
                if let Some(w) = &self.watch
                    && let Some(hit) = w.take_hit()
                {
                    break Exit::Watch(hit);
                }
            },
        };
        self.instructions += n;
        (n, exit)
    }

    /// Executes one instruction (prefixes and all REP iterations included),
    /// recording its control-flow event in `last_event`.
    #[inline(always)]
    pub fn step(&mut self) -> Option<Exit> {
        self.instructions += 1;
        self.last_event = Event::None;
        self.execute_one()
    }

    /// One instruction, without the bookkeeping `step` adds.
    #[inline(always)]
    fn execute_one(&mut self) -> Option<Exit> {
        self.insn_cs = self.sregs[CS];
        self.insn_ip = self.ip;
        self.seg_override = None;
        self.rep = 0;
        // The 8086 has no limit on prefixes, so a segment of nothing else
        // would be one instruction that never ends and a run that never
        // returns; it ends after 64 KiB of them, the stream having come
        // round (docs/design.md, "An instruction of prefixes ends").
        let mut prefixes = 0u32;
        // Two bit tests, not a `match`: in wasm the match became a jump
        // table, an indirect jump before every instruction.
        loop {
            let op = self.fetch8();
            if op & 0xE7 == 0x26 {
                // ES: CS: SS: DS: (26 2E 36 3E)
                self.seg_override = Some(((op >> 3) & 3) as usize);
            } else if op & 0xFC == 0xF0 {
                // LOCK (F0, and F1, its alias), REPNE F2, REP F3
                if op >= 0xF2 {
                    self.rep = op;
                }
            } else if self.run_common(op) {
                return None;
            } else {
                return self.exec(op);
            }
            prefixes += 1;
            if prefixes == 0x1_0000 {
                return None;
            }
        }
    }

    /// Runs `op` (its prefixes read) when it is one of the commonest
    /// instructions, and says whether it did: ALU and MOV with a ModR/M
    /// operand, Jcc, INC/DEC and PUSH/POP of a register, MOV of an
    /// immediate to a register, shifts and rotates. `exec` runs them the
    /// same way (it decodes every opcode); running them here spares them
    /// its call, which in wasm costs more than most of them (a function of
    /// over 100 KiB saves and restores five registers and checks the stack
    /// and the epoch). Bit tests, not a `match`: in wasm a `match` becomes
    /// an indirect jump.
    #[inline(always)]
    fn run_common(&mut self, op: u8) -> bool {
        if is_alu_or_mov(op) {
            self.alu_or_mov(op);
        } else if op & 0xF0 == 0x70 {
            self.jcc(op);
        } else if op & 0xF0 == 0x40 {
            self.inc_dec_reg(op);
        } else if op & 0xF0 == 0x50 {
            self.push_pop_reg(op);
        } else if op & 0xF0 == 0xB0 {
            self.mov_reg_imm(op);
        } else if op & 0xFC == 0xD0 {
            self.shift_rm(op);
        } else {
            return false;
        }
        true
    }

    /// Jcc (70–7F).
    #[inline(always)]
    fn jcc(&mut self, op: u8) {
        let c = self.cond(op & 0xF);
        self.jump_rel8(c);
    }

    /// INC (40–47) or DEC (48–4F) of a word register.
    #[inline(always)]
    fn inc_dec_reg(&mut self, op: u8) {
        let r = (op & 7) as usize;
        self.regs[r] = self.inc_dec::<true>(self.regs[r] as u32, op & 8 != 0) as u16;
    }

    /// PUSH (50–57) or POP (58–5F) of a word register.
    #[inline(always)]
    fn push_pop_reg(&mut self, op: u8) {
        let r = (op & 7) as usize;
        if op & 8 == 0 {
            // PUSH SP pushes the decremented value on the 8086/80186.
            let sp = self.regs[SP].wrapping_sub(2);
            self.regs[SP] = sp;
            let v = self.regs[r];
            self.ww_at(self.base(SS), sp, v);
        } else {
            let v = self.pop();
            self.regs[r] = v;
        }
    }

    /// MOV of an immediate to a byte (B0–B7) or word (B8–BF) register.
    #[inline(always)]
    fn mov_reg_imm(&mut self, op: u8) {
        let r = (op & 7) as usize;
        if op & 8 == 0 {
            let v = self.fetch8();
            self.set_r8(r, v);
        } else {
            self.regs[r] = self.fetch16();
        }
    }

    /// ALU with a register and an r/m operand (00–3B, the forms with a
    /// ModR/M byte), ALU with an r/m operand and an immediate (80–83), and
    /// MOV between a register and an r/m operand (88–8B).
    #[inline(always)]
    fn alu_or_mov(&mut self, op: u8) {
        if op & 1 != 0 {
            self.alu_or_mov_sized::<true>(op)
        } else {
            self.alu_or_mov_sized::<false>(op)
        }
    }

    /// [`Self::alu_or_mov`] on words (`W`) or bytes.
    #[inline(always)]
    fn alu_or_mov_sized<const W: bool>(&mut self, op: u8) {
        let modrm = self.fetch8();
        let reg = ((modrm >> 3) & 7) as usize;
        let rm = self.decode_rm(modrm);
        // Bit 1 of the opcode: the register is the destination.
        let to_reg = op & 2 != 0;
        if op & 0xFC == 0x80 {
            let alu = reg as u8;
            let a = self.read_rm::<W>(rm);
            let b = match op {
                0x81 => self.fetch16() as u32,
                0x83 => self.fetch8() as i8 as u16 as u32,
                _ => self.fetch8() as u32,
            };
            let r = self.alu::<W>(alu, a, b);
            if alu != 7 {
                self.write_rm::<W>(rm, r);
            }
        } else if op & 0xFC == 0x88 {
            if to_reg {
                let v = self.read_rm::<W>(rm);
                self.set_reg::<W>(reg, v);
            } else {
                self.write_rm::<W>(rm, self.reg::<W>(reg));
            }
        } else {
            let alu = op >> 3;
            let (m, r) = (self.read_rm::<W>(rm), self.reg::<W>(reg));
            if to_reg {
                let v = self.alu::<W>(alu, r, m);
                if alu != 7 {
                    self.set_reg::<W>(reg, v);
                }
            } else {
                let v = self.alu::<W>(alu, m, r);
                if alu != 7 {
                    self.write_rm::<W>(rm, v);
                }
            }
        }
    }

    #[inline(always)]
    fn cond(&self, c: u8) -> bool {
        let f = self.flags;
        let r = match c >> 1 {
            0 => f & OF != 0,
            1 => f & CF != 0,
            2 => f & ZF != 0,
            3 => f & (CF | ZF) != 0,
            4 => f & SF != 0,
            5 => f & PF != 0,
            6 => (f & SF != 0) != (f & OF != 0),
            _ => f & ZF != 0 || ((f & SF != 0) != (f & OF != 0)),
        };
        r != (c & 1 != 0)
    }

    #[inline(always)]
    fn jump_rel8(&mut self, take: bool) {
        let d = self.fetch8() as i8 as u16;
        if take {
            self.ip = self.ip.wrapping_add(d);
        }
    }

    /// Group 2 by 1 (D0, D1) or by CL (D2, D3).
    #[inline(always)]
    fn shift_rm(&mut self, op: u8) {
        let modrm = self.fetch8();
        let rm = self.decode_rm(modrm);
        let count = if op & 2 == 0 {
            1
        } else if self.model == Model::I80186 {
            self.regs[CX] as u8 & 0x1F
        } else {
            self.regs[CX] as u8
        };
        self.group2(op & 1 != 0, modrm, rm, count);
    }

    /// ALU on the accumulator and an immediate (04, 05, 0C, ... 3D).
    #[inline(always)]
    fn alu_acc_imm<const W: bool, const OP: u8>(&mut self) {
        let b = if W {
            self.fetch16() as u32
        } else {
            self.fetch8() as u32
        };
        let a = self.reg::<W>(AX);
        let r = self.alu_k::<W, OP>(a, b);
        if OP != 7 {
            self.set_reg::<W>(AX, r);
        }
    }

    #[inline]
    fn exec(&mut self, op: u8) -> Option<Exit> {
        match op {
            0x00..=0x03
            | 0x08..=0x0B
            | 0x10..=0x13
            | 0x18..=0x1B
            | 0x20..=0x23
            | 0x28..=0x2B
            | 0x30..=0x33
            | 0x38..=0x3B
            | 0x80..=0x83
            | 0x88..=0x8B => self.alu_or_mov(op),
            0x04 => self.alu_acc_imm::<false, 0>(),
            0x05 => self.alu_acc_imm::<true, 0>(),
            0x0C => self.alu_acc_imm::<false, 1>(),
            0x0D => self.alu_acc_imm::<true, 1>(),
            0x14 => self.alu_acc_imm::<false, 2>(),
            0x15 => self.alu_acc_imm::<true, 2>(),
            0x1C => self.alu_acc_imm::<false, 3>(),
            0x1D => self.alu_acc_imm::<true, 3>(),
            0x24 => self.alu_acc_imm::<false, 4>(),
            0x25 => self.alu_acc_imm::<true, 4>(),
            0x2C => self.alu_acc_imm::<false, 5>(),
            0x2D => self.alu_acc_imm::<true, 5>(),
            0x34 => self.alu_acc_imm::<false, 6>(),
            0x35 => self.alu_acc_imm::<true, 6>(),
            0x3C => self.alu_acc_imm::<false, 7>(),
            0x3D => self.alu_acc_imm::<true, 7>(),
            0x06 | 0x0E | 0x16 | 0x1E => {
                let v = self.sregs[(op >> 3) as usize];
                self.push(v);
            }
            0x07 | 0x17 | 0x1F => {
                let v = self.pop();
                self.sregs[(op >> 3) as usize] = v;
            }
            0x0F if self.model == Model::I8086 => {
                let v = self.pop();
                self.sregs[CS] = v;
            }
            0x0F => return self.fault(6),
            0x27 | 0x2F => self.daa_das(op == 0x2F),
            0x37 | 0x3F => self.aaa_aas(op == 0x3F),
            0x40..=0x4F => self.inc_dec_reg(op),
            0x50..=0x5F => self.push_pop_reg(op),
            0x60..=0x6F | 0xC0 | 0xC1 | 0xC8 | 0xC9 => return self.exec_186(op),
            0x70..=0x7F => self.jcc(op),
            0x84 | 0x85 => {
                let modrm = self.fetch8();
                let reg = ((modrm >> 3) & 7) as usize;
                let rm = self.decode_rm(modrm);
                if op == 0x84 {
                    let (a, b) = (self.read_rm8(rm) as u32, self.r8(reg) as u32);
                    self.alu::<false>(4, a, b);
                } else {
                    let (a, b) = (self.read_rm16(rm) as u32, self.regs[reg] as u32);
                    self.alu::<true>(4, a, b);
                }
            }
            0x86 | 0x87 => {
                let modrm = self.fetch8();
                let reg = ((modrm >> 3) & 7) as usize;
                let rm = self.decode_rm(modrm);
                if op == 0x86 {
                    let a = self.read_rm8(rm);
                    let b = self.r8(reg);
                    self.write_rm8(rm, b);
                    self.set_r8(reg, a);
                } else {
                    let a = self.read_rm16(rm);
                    let b = self.regs[reg];
                    self.write_rm16(rm, b);
                    self.regs[reg] = a;
                }
            }
            0x8C => {
                let modrm = self.fetch8();
                let s = ((modrm >> 3) & 3) as usize;
                let rm = self.decode_rm(modrm);
                self.write_rm16(rm, self.sregs[s]);
            }
            0x8D => {
                let modrm = self.fetch8();
                let reg = ((modrm >> 3) & 7) as usize;
                if let Rm::Mem(_, o) = self.decode_rm(modrm) {
                    self.regs[reg] = o;
                }
            }
            0x8E => {
                let modrm = self.fetch8();
                let s = ((modrm >> 3) & 3) as usize;
                let rm = self.decode_rm(modrm);
                self.sregs[s] = self.read_rm16(rm);
            }
            0x8F => {
                let modrm = self.fetch8();
                // SP is incremented before the destination address is used.
                let v = self.pop();
                let rm = self.decode_rm(modrm);
                self.write_rm16(rm, v);
            }
            0x90 => {}
            0x91..=0x97 => self.regs.swap(AX, (op & 7) as usize),
            0x98 => self.regs[AX] = self.regs[AX] as u8 as i8 as i16 as u16,
            0x99 => {
                self.regs[DX] = if self.regs[AX] & 0x8000 != 0 {
                    0xFFFF
                } else {
                    0
                }
            }
            0x9A => {
                let off = self.fetch16();
                let seg = self.fetch16();
                let cs = self.sregs[CS];
                self.push(cs);
                let ip = self.ip;
                self.push(ip);
                self.sregs[CS] = seg;
                self.ip = off;
                self.last_event = Event::Call;
            }
            0x9B => {}
            0x9C => {
                let f = self.flags;
                self.push(f);
            }
            0x9D => {
                let v = self.pop();
                self.load_flags(v);
            }
            0x9E => {
                let ah = (self.regs[AX] >> 8) & 0xD5;
                self.flags = (self.flags & 0xFF00) | ah | 2;
            }
            0x9F => {
                let f = (self.flags & 0xD5) | 2;
                self.set_r8(4, f as u8);
            }
            0xA0..=0xA3 => {
                let off = self.fetch16();
                let b = self.seg_or(DS);
                match op {
                    0xA0 => {
                        let v = self.rb_at(b, off);
                        self.set_r8(0, v)
                    }
                    0xA1 => self.regs[AX] = self.rw_at(b, off),
                    0xA2 => self.wb_at(b, off, self.regs[AX] as u8),
                    _ => self.ww_at(b, off, self.regs[AX]),
                }
            }
            0xA4..=0xA7 | 0xAA..=0xAF => self.string_op(op),
            0xA8 => {
                let b = self.fetch8() as u32;
                let a = self.regs[AX] as u8 as u32;
                self.alu::<false>(4, a, b);
            }
            0xA9 => {
                let b = self.fetch16() as u32;
                let a = self.regs[AX] as u32;
                self.alu::<true>(4, a, b);
            }
            0xB0..=0xBF => self.mov_reg_imm(op),
            0xC2 => {
                let n = self.fetch16();
                self.ip = self.pop();
                self.regs[SP] = self.regs[SP].wrapping_add(n);
                self.last_event = Event::Ret;
            }
            0xC3 => {
                self.ip = self.pop();
                self.last_event = Event::Ret;
            }
            0xC4 | 0xC5 => {
                let modrm = self.fetch8();
                let reg = ((modrm >> 3) & 7) as usize;
                let (b, o) = match self.decode_rm(modrm) {
                    Rm::Mem(b, o) => (b, o),
                    // Undefined on hardware; behave as if the operand were at DS:reg.
                    Rm::Reg(r) => (self.base(DS), self.regs[r]),
                };
                self.regs[reg] = self.rw_at(b, o);
                self.sregs[if op == 0xC4 { ES } else { DS }] = self.rw_at(b, o.wrapping_add(2));
            }
            0xC6 => {
                let modrm = self.fetch8();
                let rm = self.decode_rm(modrm);
                let v = self.fetch8();
                self.write_rm8(rm, v);
            }
            0xC7 => {
                let modrm = self.fetch8();
                let rm = self.decode_rm(modrm);
                let v = self.fetch16();
                self.write_rm16(rm, v);
            }
            0xCA => {
                let n = self.fetch16();
                self.ip = self.pop();
                self.sregs[CS] = self.pop();
                self.regs[SP] = self.regs[SP].wrapping_add(n);
                self.last_event = Event::Ret;
            }
            0xCB => {
                self.ip = self.pop();
                self.sregs[CS] = self.pop();
                self.last_event = Event::Ret;
            }
            0xCC => {
                self.last_event = Event::Int(3);
                return self.interrupt(3, self.ip);
            }
            0xCD => {
                let n = self.fetch8();
                self.last_event = Event::Int(n);
                return self.interrupt(n, self.ip);
            }
            0xCE => {
                if self.flag(OF) {
                    self.last_event = Event::Int(4);
                    return self.interrupt(4, self.ip);
                }
            }
            0xCF => {
                self.ip = self.pop();
                self.sregs[CS] = self.pop();
                let f = self.pop();
                self.load_flags(f);
                self.last_event = Event::Iret;
            }
            0xD0..=0xD3 => self.shift_rm(op),
            0xD4 => {
                let base = self.fetch8();
                if base == 0 {
                    return self.fault(0);
                }
                let al = self.regs[AX] as u8;
                let r = al % base;
                self.regs[AX] = ((al / base) as u16) << 8 | r as u16;
                self.flags = (self.flags & !ARITH) | szp::<false>(r as u32);
            }
            0xD5 => {
                let base = self.fetch8();
                let al = self.regs[AX] as u8 as u32;
                let ah = (self.regs[AX] >> 8) as u32;
                // The 8086 adds AH*base to AL with ADD flag semantics.
                let r = self.alu::<false>(0, al, (ah * base as u32) & 0xFF);
                self.regs[AX] = r as u16;
            }
            0xD6 => {
                let v = if self.flag(CF) { 0xFF } else { 0 };
                self.set_r8(0, v);
            }
            0xD7 => {
                let b = self.seg_or(DS);
                let off = self.regs[BX].wrapping_add(self.regs[AX] & 0xFF);
                let v = self.rb_at(b, off);
                self.set_r8(0, v);
            }
            0xD8..=0xDF => {
                // No coprocessor: decode the operand and do nothing.
                let modrm = self.fetch8();
                self.decode_rm(modrm);
            }
            0xE0..=0xE2 => {
                let cx = self.regs[CX].wrapping_sub(1);
                self.regs[CX] = cx;
                let z = self.flag(ZF);
                let take = cx != 0
                    && match op {
                        0xE0 => !z,
                        0xE1 => z,
                        _ => true,
                    };
                self.jump_rel8(take);
            }
            0xE3 => {
                let take = self.regs[CX] == 0;
                self.jump_rel8(take);
            }
            0xE4 => {
                let port = u16::from(self.fetch8());
                let v = self.port_in(port);
                self.set_r8(0, v);
            }
            0xE5 => {
                let port = u16::from(self.fetch8());
                self.regs[AX] = self.in16(port);
            }
            0xE6 | 0xE7 => {
                let port = u16::from(self.fetch8());
                self.out(port, op == 0xE7);
            }
            0xE8 => {
                let d = self.fetch16();
                let ip = self.ip;
                self.push(ip);
                self.ip = ip.wrapping_add(d);
                self.last_event = Event::Call;
            }
            0xE9 => {
                let d = self.fetch16();
                self.ip = self.ip.wrapping_add(d);
            }
            0xEA => {
                let off = self.fetch16();
                let seg = self.fetch16();
                self.sregs[CS] = seg;
                self.ip = off;
            }
            0xEB => self.jump_rel8(true),
            0xEC => {
                let v = self.port_in(self.regs[DX]);
                self.set_r8(0, v);
            }
            0xED => self.regs[AX] = self.in16(self.regs[DX]),
            0xEE | 0xEF => self.out(self.regs[DX], op == 0xEF),
            0xF4 => return Some(Exit::Halt),
            0xF5 => self.flags ^= CF,
            0xF6 | 0xF7 => return self.group3(op == 0xF7),
            0xF8 => self.flags &= !CF,
            0xF9 => self.flags |= CF,
            0xFA => self.flags &= !IF,
            0xFB => self.flags |= IF,
            0xFC => self.flags &= !DF,
            0xFD => self.flags |= DF,
            0xFE => {
                let modrm = self.fetch8();
                let rm = self.decode_rm(modrm);
                let a = self.read_rm8(rm) as u32;
                let r = self.inc_dec::<false>(a, modrm & 0x38 != 0);
                self.write_rm8(rm, r as u8);
            }
            0xFF => self.group5(),
            _ => return self.fault(6),
        }
        None
    }

    /// Opcodes the 80186 added; the 8086 decodes them as aliases.
    #[cold]
    fn exec_186(&mut self, op: u8) -> Option<Exit> {
        if self.model == Model::I8086 {
            let alias = match op {
                0x60..=0x6F => op + 0x10,
                0xC0 => 0xC2,
                0xC1 => 0xC3,
                0xC8 => 0xCA,
                _ => 0xCB,
            };
            return self.exec(alias);
        }
        match op {
            0x60 => {
                let sp = self.regs[SP];
                for r in 0..8 {
                    let v = if r == SP { sp } else { self.regs[r] };
                    self.push(v);
                }
            }
            0x61 => {
                for r in (0..8).rev() {
                    let v = self.pop();
                    if r != SP {
                        self.regs[r] = v;
                    }
                }
            }
            0x62 => {
                let modrm = self.fetch8();
                let reg = ((modrm >> 3) & 7) as usize;
                match self.decode_rm(modrm) {
                    Rm::Reg(_) => return self.fault(6),
                    Rm::Mem(b, o) => {
                        let lo = self.rw_at(b, o) as i16;
                        let hi = self.rw_at(b, o.wrapping_add(2)) as i16;
                        let v = self.regs[reg] as i16;
                        if v < lo || v > hi {
                            return self.fault(5);
                        }
                    }
                }
            }
            0x63..=0x67 => return self.fault(6),
            0x68 => {
                let v = self.fetch16();
                self.push(v);
            }
            0x6A => {
                let v = self.fetch8() as i8 as u16;
                self.push(v);
            }
            0x69 | 0x6B => {
                let modrm = self.fetch8();
                let reg = ((modrm >> 3) & 7) as usize;
                let rm = self.decode_rm(modrm);
                let a = self.read_rm16(rm) as i16 as i32;
                let b = if op == 0x69 {
                    self.fetch16() as i16 as i32
                } else {
                    self.fetch8() as i8 as i32
                };
                let r = a * b;
                self.regs[reg] = r as u16;
                let over = r != r as i16 as i32;
                self.flags = (self.flags & !ARITH) | szp::<true>(r as u32);
                self.set_flag(CF, over);
                self.set_flag(OF, over);
            }
            0x6C..=0x6F => self.string_op(op),
            0xC0 | 0xC1 => {
                let modrm = self.fetch8();
                let rm = self.decode_rm(modrm);
                let count = self.fetch8() & 0x1F;
                self.group2(op & 1 != 0, modrm, rm, count);
            }
            0xC8 => {
                let size = self.fetch16();
                let level = self.fetch8() & 0x1F;
                let bp = self.regs[BP];
                self.push(bp);
                let frame = self.regs[SP];
                if level > 0 {
                    let mut bp = self.regs[BP];
                    for _ in 1..level {
                        bp = bp.wrapping_sub(2);
                        let v = self.rw_at(self.base(SS), bp);
                        self.push(v);
                    }
                    self.push(frame);
                }
                self.regs[BP] = frame;
                self.regs[SP] = self.regs[SP].wrapping_sub(size);
            }
            0xC9 => {
                self.regs[SP] = self.regs[BP];
                self.regs[BP] = self.pop();
            }
            _ => return self.fault(6),
        }
        None
    }

    #[inline(always)]
    fn group2(&mut self, word: bool, modrm: u8, rm: Rm, count: u8) {
        let mut sub = (modrm >> 3) & 7;
        if sub == 6 && self.model == Model::I80186 {
            // Only the 8086 has SETMO; later CPUs decode reg 6 as SHL.
            sub = 4;
        }
        if word {
            let a = self.read_rm16(rm) as u32;
            let r = self.shift::<true>(sub, a, count);
            self.write_rm16(rm, r as u16);
        } else {
            let a = self.read_rm8(rm) as u32;
            let r = self.shift::<false>(sub, a, count);
            self.write_rm8(rm, r as u8);
        }
    }

    fn group3(&mut self, word: bool) -> Option<Exit> {
        let modrm = self.fetch8();
        let sub = (modrm >> 3) & 7;
        let rm = self.decode_rm(modrm);
        match sub {
            0 | 1 => {
                if word {
                    let a = self.read_rm16(rm) as u32;
                    let b = self.fetch16() as u32;
                    self.alu::<true>(4, a, b);
                } else {
                    let a = self.read_rm8(rm) as u32;
                    let b = self.fetch8() as u32;
                    self.alu::<false>(4, a, b);
                }
            }
            2 => {
                if word {
                    let v = !self.read_rm16(rm);
                    self.write_rm16(rm, v);
                } else {
                    let v = !self.read_rm8(rm);
                    self.write_rm8(rm, v);
                }
            }
            3 => {
                if word {
                    let a = self.read_rm16(rm) as u32;
                    let r = self.alu::<true>(5, 0, a);
                    self.write_rm16(rm, r as u16);
                } else {
                    let a = self.read_rm8(rm) as u32;
                    let r = self.alu::<false>(5, 0, a);
                    self.write_rm8(rm, r as u8);
                }
            }
            4 | 5 => {
                let signed = sub == 5;
                let negate = self.rep != 0 && self.model == Model::I8086;
                let (lo, hi, over) = if word {
                    let b = self.read_rm16(rm);
                    let a = self.regs[AX];
                    let p = if signed {
                        (a as i16 as i32 * b as i16 as i32) as u32
                    } else {
                        a as u32 * b as u32
                    };
                    let p = if negate && signed {
                        p.wrapping_neg()
                    } else {
                        p
                    };
                    self.regs[AX] = p as u16;
                    self.regs[DX] = (p >> 16) as u16;
                    let over = if signed {
                        p as i32 != p as u16 as i16 as i32
                    } else {
                        p >> 16 != 0
                    };
                    (p & 0xFFFF, p >> 16, over)
                } else {
                    let b = self.read_rm8(rm);
                    let a = self.regs[AX] as u8;
                    let p = if signed {
                        (a as i8 as i16 * b as i8 as i16) as u16
                    } else {
                        a as u16 * b as u16
                    };
                    let p = if negate && signed {
                        p.wrapping_neg()
                    } else {
                        p
                    };
                    self.regs[AX] = p;
                    let over = if signed {
                        p as i16 != p as u8 as i8 as i16
                    } else {
                        p >> 8 != 0
                    };
                    (p as u8 as u32, (p >> 8) as u32, over)
                };
                // The 8086 sets SZP from the high half; ZF is clear (per hardware captures).
                let _ = lo;
                let mut f = self.flags & !ARITH;
                f |= if word {
                    szp::<true>(hi)
                } else {
                    szp::<false>(hi)
                } & !ZF;
                if over {
                    f |= CF | OF;
                }
                self.flags = f;
            }
            _ => return self.divide(word, sub == 7, rm),
        }
        None
    }

    fn divide(&mut self, word: bool, signed: bool, rm: Rm) -> Option<Exit> {
        let negate = self.rep != 0 && self.model == Model::I8086;
        let min_q: i32 = if self.model == Model::I8086 { 1 } else { 0 };
        if word {
            let d = self.read_rm16(rm);
            let n = (self.regs[DX] as u32) << 16 | self.regs[AX] as u32;
            if d == 0 {
                return self.fault(0);
            }
            if signed {
                let (n, d) = (n as i32 as i64, d as i16 as i64);
                let mut q = n / d;
                let r = n % d;
                if negate {
                    q = -q;
                }
                if q > 0x7FFF || q < -0x8000 + min_q as i64 {
                    return self.fault(0);
                }
                self.regs[AX] = q as u16;
                self.regs[DX] = r as u16;
            } else {
                let q = n / d as u32;
                if q > 0xFFFF {
                    return self.fault(0);
                }
                self.regs[AX] = q as u16;
                self.regs[DX] = (n % d as u32) as u16;
            }
        } else {
            let d = self.read_rm8(rm);
            let n = self.regs[AX];
            if d == 0 {
                return self.fault(0);
            }
            if signed {
                let (n, d) = (n as i16 as i32, d as i8 as i32);
                let mut q = n / d;
                let r = n % d;
                if negate {
                    q = -q;
                }
                if q > 0x7F || q < -0x80 + min_q {
                    return self.fault(0);
                }
                self.regs[AX] = (r as u8 as u16) << 8 | q as u8 as u16;
            } else {
                let q = n / d as u16;
                if q > 0xFF {
                    return self.fault(0);
                }
                self.regs[AX] = ((n % d as u16) << 8) | q;
            }
        }
        None
    }

    fn group5(&mut self) {
        let modrm = self.fetch8();
        let sub = (modrm >> 3) & 7;
        let rm = self.decode_rm(modrm);
        match sub {
            0 | 1 => {
                let a = self.read_rm16(rm) as u32;
                let r = self.inc_dec::<true>(a, sub == 1);
                self.write_rm16(rm, r as u16);
            }
            2 => {
                let t = self.read_rm16(rm);
                let ip = self.ip;
                self.push(ip);
                self.ip = t;
                self.last_event = Event::Call;
            }
            3 | 5 => {
                let (b, o) = match rm {
                    Rm::Mem(b, o) => (b, o),
                    Rm::Reg(r) => (self.base(DS), self.regs[r]),
                };
                let off = self.rw_at(b, o);
                let seg = self.rw_at(b, o.wrapping_add(2));
                if sub == 3 {
                    let cs = self.sregs[CS];
                    self.push(cs);
                    let ip = self.ip;
                    self.push(ip);
                    self.last_event = Event::Call;
                }
                self.sregs[CS] = seg;
                self.ip = off;
            }
            4 => self.ip = self.read_rm16(rm),
            _ => {
                // PUSH r/m (FF.7 aliases FF.6). PUSH SP pushes the new SP.
                let sp = self.regs[SP].wrapping_sub(2);
                self.regs[SP] = sp;
                let v = self.read_rm16(rm);
                self.ww_at(self.base(SS), sp, v);
            }
        }
    }

    fn daa_das(&mut self, sub: bool) {
        let al = self.regs[AX] as u8;
        let old_cf = self.flag(CF);
        let old_af = self.flag(AF);
        let mut r = al;
        let mut cf = false;
        let mut af = false;
        if al & 0x0F > 9 || old_af {
            r = if sub {
                r.wrapping_sub(6)
            } else {
                r.wrapping_add(6)
            };
            af = true;
        }
        // The 8086 compares against 0x9F when AF was set.
        let limit = if old_af { 0x9F } else { 0x99 };
        if al > limit || old_cf {
            r = if sub {
                r.wrapping_sub(0x60)
            } else {
                r.wrapping_add(0x60)
            };
            cf = true;
        }
        self.set_r8(0, r);
        let mut f = (self.flags & !ARITH) | szp::<false>(r as u32);
        if cf {
            f |= CF;
        }
        if af {
            f |= AF;
        }
        // OF (undefined) as the adder leaves it.
        if !sub && (al ^ r) & r & 0x80 != 0 || sub && (al ^ r) & al & 0x80 != 0 {
            f |= OF;
        }
        self.flags = f;
    }

    fn aaa_aas(&mut self, sub: bool) {
        let al = self.regs[AX] as u8;
        let mut ax = self.regs[AX];
        let adjust = al & 0x0F > 9 || self.flag(AF);
        if adjust {
            // The 8086 adjusts AL and AH separately (no carry between them).
            let (lo, hi) = if sub {
                (
                    (ax as u8).wrapping_sub(6),
                    ((ax >> 8) as u8).wrapping_sub(1),
                )
            } else {
                (
                    (ax as u8).wrapping_add(6),
                    ((ax >> 8) as u8).wrapping_add(1),
                )
            };
            ax = (hi as u16) << 8 | lo as u16;
        }
        ax = (ax & 0xFF00) | (ax & 0x0F);
        self.regs[AX] = ax;
        let mut f = self.flags & !ARITH;
        f |= szp::<false>(ax as u8 as u32) & !PF;
        f |= parity(ax as u8 as u32);
        if adjust {
            f |= AF | CF;
        }
        self.flags = f;
    }

    // ----- string instructions -------------------------------------------

    fn string_op(&mut self, op: u8) {
        let word = op & 1 != 0;
        let delta: u16 = match (word, self.flag(DF)) {
            (false, false) => 1,
            (true, false) => 2,
            (false, true) => 0xFFFF,
            (true, true) => 0xFFFE,
        };
        let src = self.seg_or(DS);
        let es = self.base(ES);
        let rep = self.rep;
        // CMPS/SCAS honour REPE/REPNE; the rest repeat on either prefix.
        let cmp = matches!(op, 0xA6 | 0xA7 | 0xAE | 0xAF);
        loop {
            if rep != 0 && self.regs[CX] == 0 {
                break;
            }
            let (si, di) = (self.regs[SI], self.regs[DI]);
            match op {
                0x6C => {
                    let v = self.port_in(self.regs[DX]);
                    self.wb_at(es, di, v);
                }
                0x6D => {
                    let v = self.in16(self.regs[DX]);
                    self.ww_at(es, di, v);
                }
                0x6E => {
                    let v = self.rb_at(src, si);
                    self.port_out(self.regs[DX], v);
                }
                0x6F => {
                    let v = self.rw_at(src, si);
                    let port = self.regs[DX];
                    self.port_out(port, v as u8);
                    self.port_out(port.wrapping_add(1), (v >> 8) as u8);
                }
                0xA4 => {
                    let v = self.rb_at(src, si);
                    self.wb_at(es, di, v);
                }
                0xA5 => {
                    let v = self.rw_at(src, si);
                    self.ww_at(es, di, v);
                }
                0xA6 => {
                    let (a, b) = (self.rb_at(src, si) as u32, self.rb_at(es, di) as u32);
                    self.alu::<false>(7, a, b);
                }
                0xA7 => {
                    let (a, b) = (self.rw_at(src, si) as u32, self.rw_at(es, di) as u32);
                    self.alu::<true>(7, a, b);
                }
                0xAA => self.wb_at(es, di, self.regs[AX] as u8),
                0xAB => self.ww_at(es, di, self.regs[AX]),
                0xAC => {
                    let v = self.rb_at(src, si);
                    self.set_r8(0, v);
                }
                0xAD => self.regs[AX] = self.rw_at(src, si),
                0xAE => {
                    let (a, b) = (self.regs[AX] as u8 as u32, self.rb_at(es, di) as u32);
                    self.alu::<false>(7, a, b);
                }
                _ => {
                    let (a, b) = (self.regs[AX] as u32, self.rw_at(es, di) as u32);
                    self.alu::<true>(7, a, b);
                }
            }
            // Which index registers move.
            match op {
                0x6E | 0x6F | 0xAC | 0xAD => self.regs[SI] = si.wrapping_add(delta),
                0x6C | 0x6D | 0xAA | 0xAB | 0xAE | 0xAF => self.regs[DI] = di.wrapping_add(delta),
                _ => {
                    self.regs[SI] = si.wrapping_add(delta);
                    self.regs[DI] = di.wrapping_add(delta);
                }
            }
            if rep == 0 {
                break;
            }
            self.regs[CX] = self.regs[CX].wrapping_sub(1);
            if cmp && (self.flag(ZF) != (rep == 0xF3)) {
                break;
            }
        }
    }
}

/// Bytes per memory page in a snapshot: only pages holding a non-zero byte
/// are written.
const SNAPSHOT_PAGE: usize = 4096;

impl Cpu {
    /// Writes registers, model, counters and the non-zero memory pages (a
    /// snapshot, taken between instructions).
    pub(crate) fn save(&self, w: &mut plugin_kit::blob::Writer) {
        for v in self.regs.iter().chain(&self.sregs) {
            w.u16(*v);
        }
        w.u16(self.ip).u16(self.flags);
        w.u8(match self.model {
            Model::I8086 => 0,
            Model::I80186 => 1,
        });
        w.u64(self.instructions).u8(self.services as u8);
        w.u16(self.insn_cs).u16(self.insn_ip);
        let pages: Vec<usize> = (0..MEM_SIZE / SNAPSHOT_PAGE)
            .filter(|p| {
                self.mem[p * SNAPSHOT_PAGE..(p + 1) * SNAPSHOT_PAGE]
                    .iter()
                    .any(|b| *b != 0)
            })
            .collect();
        w.u16(pages.len() as u16);
        for p in pages {
            w.u16(p as u16);
            w.0.extend_from_slice(&self.mem[p * SNAPSHOT_PAGE..(p + 1) * SNAPSHOT_PAGE]);
        }
    }

    /// Reads what [`Cpu::save`] wrote.
    pub(crate) fn restore(r: &mut plugin_kit::blob::Reader) -> Result<Cpu, String> {
        let mut regs = [0u16; 12];
        for v in &mut regs {
            *v = r.u16("registers")?;
        }
        let ip = r.u16("IP")?;
        let flags = r.u16("FLAGS")?;
        let model = match r.u8("CPU model")? {
            0 => Model::I8086,
            1 => Model::I80186,
            n => return Err(format!("CPU model {n} is neither 0 (8086) nor 1 (80186)")),
        };
        let mut cpu = Cpu::new(model);
        cpu.regs.copy_from_slice(&regs[..8]);
        cpu.sregs.copy_from_slice(&regs[8..]);
        cpu.ip = ip;
        cpu.flags = flags;
        cpu.instructions = r.u64("instruction count")?;
        cpu.services = r.u8("services flag")? != 0;
        cpu.insn_cs = r.u16("instruction address")?;
        cpu.insn_ip = r.u16("instruction address")?;
        let n = r.u16("page count")? as usize;
        let mut last = None;
        for _ in 0..n {
            let p = r.u16("memory page")? as usize;
            if p >= MEM_SIZE / SNAPSHOT_PAGE || last.is_some_and(|l| p <= l) {
                return Err(format!("memory page {p} is out of range or out of order"));
            }
            last = Some(p);
            let bytes = r.bytes(SNAPSHOT_PAGE, "memory page")?;
            cpu.mem[p * SNAPSHOT_PAGE..(p + 1) * SNAPSHOT_PAGE].copy_from_slice(bytes);
        }
        Ok(cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline rotates and shifts by one give the general path's result
    /// and flags, for every byte, words across their range, and flags
    /// clear or set before.
    #[test]
    fn shifts_by_one_match_the_general_path() {
        let mut c = Cpu::new(Model::I80186);
        for op in [0, 1, 4, 5, 7] {
            for before in [0, ARITH | DF] {
                for a in 0..=0xFFu32 {
                    c.flags = before;
                    let fast = c.shift_by_one::<false>(op, a);
                    let fast_flags = c.flags;
                    c.flags = before;
                    assert_eq!(
                        (fast, fast_flags),
                        (c.shift_any::<false>(op, a, 1), c.flags)
                    );
                }
                for a in (0..=0xFFFFu32).step_by(97).chain([0x7FFF, 0x8000, 0xFFFF]) {
                    c.flags = before;
                    let fast = c.shift_by_one::<true>(op, a);
                    let fast_flags = c.flags;
                    c.flags = before;
                    assert_eq!((fast, fast_flags), (c.shift_any::<true>(op, a, 1), c.flags));
                }
            }
        }
    }

    fn cpu_with(code: &[u8]) -> Cpu {
        let mut c = Cpu::new(Model::I80186);
        c.sregs = [0x100, 0x100, 0x100, 0x100];
        c.regs[SP] = 0xFFFE;
        c.ip = 0x100;
        for (i, b) in code.iter().enumerate() {
            c.mem[0x1100 + i] = *b;
        }
        c
    }

    #[test]
    fn add_sets_flags() {
        // mov al,0xFF ; add al,1
        let mut c = cpu_with(&[0xB0, 0xFF, 0x04, 0x01]);
        c.step();
        c.step();
        assert_eq!(c.regs[AX] & 0xFF, 0);
        assert!(c.flags & CF != 0 && c.flags & ZF != 0 && c.flags & AF != 0);
    }

    #[test]
    fn call_and_ret_round_trip() {
        // call +1 ; hlt ; ret
        let mut c = cpu_with(&[0xE8, 0x01, 0x00, 0xF4, 0xC3]);
        c.step();
        assert_eq!(c.ip, 0x104);
        assert_eq!(c.last_event, Event::Call);
        c.step();
        assert_eq!(c.ip, 0x103);
        assert_eq!(c.step(), Some(Exit::Halt));
    }

    #[test]
    fn rep_movsb_copies() {
        // mov si,0x200 ; mov di,0x300 ; mov cx,3 ; rep movsb
        let mut c = cpu_with(&[0xBE, 0, 2, 0xBF, 0, 3, 0xB9, 3, 0, 0xF3, 0xA4]);
        c.mem[0x1200..0x1203].copy_from_slice(b"abc");
        let (n, _) = c.run(4, None, false);
        assert_eq!(n, 4);
        assert_eq!(&c.mem[0x1300..0x1303], b"abc");
        assert_eq!(c.regs[CX], 0);
    }

    #[test]
    fn a_segment_of_prefixes_does_not_hang_a_run() {
        let mut c = cpu_with(&[]);
        let cs = (c.sregs[CS] as usize) << 4;
        c.mem[cs..cs + 0x1_0000].fill(0x26);
        assert_eq!(c.run(3, None, false), (3, Exit::Budget));
        // mov al,1 after three prefixes still runs as one instruction
        let mut c = cpu_with(&[0x26, 0xF3, 0x2E, 0xB0, 0x01, 0xF4]);
        assert_eq!(c.run(2, None, false), (2, Exit::Halt));
        assert_eq!(c.regs[AX] & 0xFF, 1);
    }

    #[test]
    fn divide_by_zero_enters_int0() {
        // div bl with bl=0; vector 0 -> 0000:0400
        let mut c = cpu_with(&[0xF6, 0xF3]);
        c.mem[0] = 0x00;
        c.mem[1] = 0x04;
        c.step();
        assert_eq!((c.sregs[CS], c.ip), (0, 0x400));
        assert_eq!(c.last_event, Event::Fault(0));
    }
}
