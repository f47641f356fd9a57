//! Function catalogue and dynamic control-flow graph, in the manner of
//! Spice86's FunctionCatalogue and CfgCpu.
//!
//! Only consulted when a machine has tracking on: the machine then runs a
//! per-instruction loop that calls [`Tracker::before`] and
//! [`Tracker::after`]; with tracking off none of this is touched.

use std::collections::{BTreeSet, HashMap};

use crate::cpu::{Cpu, Event, MEM_SIZE, STUB_SEGMENT};
use crate::disasm;

/// A segment:offset address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegOff(pub u16, pub u16);

impl std::fmt::Display for SegOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04X}:{:04X}", self.0, self.1)
    }
}

/// One function of the catalogue.
pub struct FunctionInfo {
    /// Its entry address.
    pub address: SegOff,
    /// A name made from how it was reached (the entry, or the target's address).
    pub name: String,
    /// CALL/INT instructions that targeted this entry.
    pub called_count: u64,
    /// Call sites, at most [`MAX_CALLERS`].
    pub callers: BTreeSet<SegOff>,
}

/// One instruction node. Self-modifying code yields several nodes at one
/// address (variants), distinguished by their byte signature.
pub struct Node {
    /// Where the instruction starts.
    pub address: SegOff,
    /// Its length in bytes.
    pub len: u8,
    /// Up to the first 8 instruction bytes, little-endian.
    pub signature: u64,
    /// Nodes executed right after it, at most [`MAX_SUCCESSORS`].
    pub successors: Vec<u32>,
    /// Number of nodes that lead here.
    pub predecessors: u32,
    /// Next variant at the same linear address (u32::MAX: none).
    next_variant: u32,
    /// The recorded successor that followed it most recently (u32::MAX:
    /// none): [`Tracker::before`]'s guess at what runs next.
    last_successor: u32,
    /// Whether [`Tracker::before`]'s fast path may take it: it is the
    /// only node at its linear address (so finding it by address and
    /// signature is finding what [`Tracker::node_at`] would), and its
    /// 8-byte window wraps neither its segment nor the 1 MiB space (so
    /// one load reads it).
    fast: bool,
    /// Masks the window to the signature's bytes (`len` of them, 1 to 8).
    mask: u64,
    /// Times it executed.
    pub executions: u64,
}

/// An execution context: the program, or a CPU-fault handler it entered.
#[derive(Clone, Copy, Debug)]
pub struct Context {
    /// Nesting depth (0: the program).
    pub depth: u32,
    /// Where the context began.
    pub entry_point: SegOff,
    /// The node it executed last.
    pub last_executed: Option<u32>,
}

const NONE: u32 = u32::MAX;

/// A node index as an `Option` (NONE: none).
fn some_node(i: u32) -> Option<u32> {
    (i != NONE).then_some(i)
}

/// Bounds on what tracking keeps, so that no guest program (a huge code
/// path, code rewriting itself in a loop, a storm of faults) can grow the
/// plugin without limit or make each instruction slower than the last.
/// Past a bound the tracker stops recording that kind of thing and counts
/// what it left out.
pub const MAX_NODES: usize = 200_000;
/// Variants (distinct byte signatures) recorded at one address.
pub const MAX_VARIANTS: usize = 16;
/// Successor edges recorded per node.
pub const MAX_SUCCESSORS: usize = 16;
/// Functions kept in the catalogue.
pub const MAX_FUNCTIONS: usize = 65_536;
/// Distinct callers remembered per function (the count stays exact).
pub const MAX_CALLERS: usize = 16;
/// Nested fault contexts (a fault inside a handler, and so on).
pub const MAX_CONTEXTS: usize = 64;
/// Entry points kept.
pub const MAX_ENTRY_POINTS: usize = 4096;

/// What tracking left out because a bound was reached.
#[derive(Default, Clone, Copy, Debug)]
pub struct Dropped {
    /// Executions of instructions that got no node (node or variant bound).
    pub instructions: u64,
    /// Successor edges not recorded (per-node bound).
    pub edges: u64,
    /// Calls to functions past the catalogue bound.
    pub calls: u64,
    /// Fault contexts not recorded (nesting bound).
    pub contexts: u64,
}

impl Dropped {
    /// Whether anything was left out.
    pub fn any(&self) -> bool {
        self.instructions + self.edges + self.calls + self.contexts > 0
    }
}

/// The function catalogue and dynamic control-flow graph of a machine.
pub struct Tracker {
    /// Functions by entry address.
    pub functions: HashMap<SegOff, FunctionInfo>,
    /// Instruction nodes in discovery order.
    pub nodes: Vec<Node>,
    /// First node per linear address.
    by_addr: Vec<u32>,
    /// The context stack; the last is the current one, whose
    /// `last_executed` is kept in `top_last` instead ([`Self::contexts`]).
    contexts: Vec<Context>,
    /// Entry points of every context ever entered.
    pub entry_points: BTreeSet<SegOff>,
    /// Distinct edges recorded.
    pub edges: u64,
    /// Addresses holding more than one variant (self-modified code).
    pub variant_addresses: u64,
    pending_entry: bool,
    current: u32,
    /// The current context's last executed node (NONE: none), kept here
    /// rather than in the context stack: [`Self::before`]'s fast path
    /// then stores one field instead of finding the stack's top. Written
    /// back to the stack when a fault enters a new context.
    top_last: u32,
    /// The node that followed the current context's last executed one
    /// the last time (that node's `last_successor`), read when it ran:
    /// [`Self::before`]'s fast path then starts from one field instead of
    /// a chain of loads through the context stack. NONE when the fast
    /// path cannot apply (no last node, or a new context's entry pending).
    next_guess: u32,
    /// What bounds left out.
    pub dropped: Dropped,
    /// Fault contexts entered past [`MAX_CONTEXTS`] and not yet left.
    unrecorded_depth: u32,
    /// Tests turn [`Self::before`]'s fast path off to compare its records
    /// with the slow path's.
    #[cfg(test)]
    pub(crate) slow_only: bool,
}

/// The mask of a signature of an instruction `len` bytes long: its first
/// bytes, at least one and at most eight.
fn signature_mask(len: u8) -> u64 {
    u64::MAX >> (64 - 8 * len.clamp(1, 8) as u32)
}

/// Whether the 8 bytes from `a` wrap neither the segment offset nor the
/// 1 MiB space, so that one load reads them.
fn one_window(a: SegOff) -> bool {
    Cpu::lin(a.0, a.1) as usize + 8 <= MEM_SIZE && a.1 <= 0xFFF8
}

/// The first `len` (at most 8) instruction bytes at `a`, little-endian.
#[inline(always)]
fn signature(cpu: &Cpu, a: SegOff, len: u8) -> u64 {
    let lin = Cpu::lin(a.0, a.1) as usize;
    let n = len.clamp(1, 8) as u32;
    let mask = signature_mask(len);
    if one_window(a) {
        let bytes: [u8; 8] = cpu.mem[lin..lin + 8].try_into().expect("8-byte window");
        return u64::from_le_bytes(bytes) & mask;
    }
    let mut s = 0u64;
    for i in 0..n {
        let b = cpu.rb(Cpu::lin(a.0, a.1.wrapping_add(i as u16)));
        s |= (b as u64) << (8 * i);
    }
    s
}

impl Tracker {
    /// Starts tracking at the program entry (a function named `entry`).
    pub fn new(entry: SegOff) -> Self {
        let mut t = Tracker {
            functions: HashMap::new(),
            nodes: Vec::new(),
            by_addr: vec![NONE; MEM_SIZE],
            contexts: vec![Context {
                depth: 0,
                entry_point: entry,
                last_executed: None,
            }],
            entry_points: BTreeSet::new(),
            edges: 0,
            variant_addresses: 0,
            pending_entry: false,
            current: NONE,
            top_last: NONE,
            next_guess: NONE,
            dropped: Dropped::default(),
            unrecorded_depth: 0,
            #[cfg(test)]
            slow_only: false,
        };
        t.entry_points.insert(entry);
        t.functions.insert(
            entry,
            FunctionInfo {
                address: entry,
                name: "entry".into(),
                called_count: 0,
                callers: BTreeSet::new(),
            },
        );
        t
    }

    /// The node of the instruction at `a`, created on first sight; NONE
    /// when a bound keeps it from being recorded.
    #[inline(always)]
    fn node_at(&mut self, cpu: &Cpu, a: SegOff) -> u32 {
        let lin = Cpu::lin(a.0, a.1) as usize;
        let mut idx = self.by_addr[lin];
        let mut last = NONE;
        let mut chain = 0;
        while idx != NONE {
            let n = &self.nodes[idx as usize];
            if n.address == a && signature(cpu, a, n.len) == n.signature {
                return idx;
            }
            last = idx;
            idx = n.next_variant;
            chain += 1;
        }
        if chain >= MAX_VARIANTS || self.nodes.len() >= MAX_NODES {
            return NONE;
        }
        let read = |o: u16| cpu.rb(Cpu::lin(a.0, o));
        let len = disasm::decode(&read, a.1, cpu.model).len;
        let new = self.nodes.len() as u32;
        self.nodes.push(Node {
            address: a,
            len,
            signature: signature(cpu, a, len),
            successors: Vec::new(),
            predecessors: 0,
            next_variant: NONE,
            last_successor: NONE,
            fast: last == NONE && one_window(a),
            mask: signature_mask(len),
            executions: 0,
        });
        if last == NONE {
            self.by_addr[lin] = new;
        } else {
            let head = self.by_addr[lin] as usize;
            if self.nodes[head].next_variant == NONE {
                self.variant_addresses += 1;
            }
            self.nodes[head].fast = false;
            self.nodes[last as usize].next_variant = new;
        }
        new
    }

    /// Records the instruction about to execute at CS:IP (inlined into
    /// the run loop: see [`Self::after`]).
    #[inline(always)]
    pub fn before(&mut self, cpu: &Cpu) {
        let a = SegOff(cpu.sregs[crate::cpu::CS], cpu.ip);
        #[cfg(test)]
        if self.slow_only {
            return self.before_slow(cpu, a);
        }
        // Fast path, most instructions of a loop: the instruction that
        // followed the last one last time is here again, unchanged. Its
        // edge is recorded already; only its count moves.
        let guess = self.next_guess;
        if let Some(n) = self.nodes.get_mut(guess as usize)
            && n.fast
            && n.address == a
            && let lin = Cpu::lin(a.0, a.1) as usize
            && let Some(window) = cpu.mem.get(lin..lin + 8)
            && u64::from_le_bytes(window.try_into().expect("8 bytes")) & n.mask == n.signature
        {
            n.executions += 1;
            self.next_guess = n.last_successor;
            self.current = guess;
            self.top_last = guess;
            return;
        }
        self.before_slow(cpu, a);
    }

    /// [`Self::before`] when the fast path does not apply.
    #[inline(never)]
    fn before_slow(&mut self, cpu: &Cpu, a: SegOff) {
        let idx = self.node_at(cpu, a);
        if self.pending_entry {
            let ctx = self
                .contexts
                .last_mut()
                .expect("context stack is never empty");
            ctx.entry_point = a;
            if self.entry_points.len() < MAX_ENTRY_POINTS {
                self.entry_points.insert(a);
            }
            self.pending_entry = false;
        }
        if idx == NONE {
            // Not recorded: the next edge starts afresh.
            self.dropped.instructions += 1;
            self.top_last = NONE;
            self.next_guess = NONE;
            return;
        }
        let prev = self.top_last;
        if prev != NONE {
            let from = &mut self.nodes[prev as usize];
            if from.successors.contains(&idx) {
                from.last_successor = idx;
            } else if from.successors.len() < MAX_SUCCESSORS {
                from.successors.push(idx);
                from.last_successor = idx;
                self.edges += 1;
                self.nodes[idx as usize].predecessors += 1;
            } else {
                self.dropped.edges += 1;
            }
        }
        self.top_last = idx;
        let node = &mut self.nodes[idx as usize];
        node.executions += 1;
        self.next_guess = node.last_successor;
        self.current = idx;
    }

    fn enter(&mut self, target: SegOff, caller: SegOff, name: impl FnOnce() -> String) {
        if self.functions.len() >= MAX_FUNCTIONS && !self.functions.contains_key(&target) {
            self.dropped.calls += 1;
            return;
        }
        let f = self
            .functions
            .entry(target)
            .or_insert_with(|| FunctionInfo {
                address: target,
                name: name(),
                called_count: 0,
                callers: BTreeSet::new(),
            });
        f.called_count += 1;
        if f.callers.len() < MAX_CALLERS {
            f.callers.insert(caller);
        }
    }

    /// Records the control-flow event of the instruction just executed.
    /// `serviced`: the INT was handled natively (target = its stub).
    /// Inlined for the common case (no event worth recording): in the
    /// sandbox every call also costs an epoch check at the callee's entry.
    #[inline(always)]
    pub fn after(&mut self, cpu: &Cpu, serviced: Option<u8>) {
        if !matches!(cpu.last_event, Event::None | Event::Ret) {
            self.record_event(cpu, serviced);
        }
    }

    fn record_event(&mut self, cpu: &Cpu, serviced: Option<u8>) {
        let caller = SegOff(cpu.insn_cs, cpu.insn_ip);
        let here = SegOff(cpu.sregs[crate::cpu::CS], cpu.ip);
        match cpu.last_event {
            Event::None | Event::Ret => {}
            Event::Call => self.enter(here, caller, || "unknown".into()),
            Event::Int(n) => {
                let target = if serviced.is_some() {
                    SegOff(STUB_SEGMENT, n as u16)
                } else {
                    here
                };
                self.enter(target, caller, || format!("interrupt_handler_{n:02X}"));
            }
            Event::Fault(n) => {
                let target = if serviced.is_some() {
                    SegOff(STUB_SEGMENT, n as u16)
                } else {
                    here
                };
                self.enter(target, caller, || format!("interrupt_handler_{n:02X}"));
                if serviced.is_none() && self.contexts.len() >= MAX_CONTEXTS {
                    self.dropped.contexts += 1;
                    self.unrecorded_depth += 1;
                } else if serviced.is_none() {
                    // A CPU fault runs its handler in a new execution context.
                    let last = self.top_last;
                    if let Some(top) = self.contexts.last_mut() {
                        top.last_executed = some_node(last);
                    }
                    let depth = self.contexts.len() as u32;
                    self.contexts.push(Context {
                        depth,
                        entry_point: here,
                        last_executed: None,
                    });
                    self.top_last = NONE;
                    self.pending_entry = true;
                    self.next_guess = NONE;
                }
            }
            Event::Iret => {
                if self.unrecorded_depth > 0 {
                    self.unrecorded_depth -= 1;
                } else if self.contexts.len() > 1 {
                    self.contexts.pop();
                    // Back in the interrupted context: its last node, and
                    // that node's guess.
                    let last = self.contexts.last().and_then(|c| c.last_executed);
                    self.top_last = last.unwrap_or(NONE);
                    self.next_guess = match last {
                        Some(prev) if !self.pending_entry => {
                            self.nodes[prev as usize].last_successor
                        }
                        _ => NONE,
                    };
                }
            }
        }
    }

    /// The context executing now.
    pub fn current_context(&self) -> Context {
        self.contexts()
            .last()
            .expect("context stack is never empty")
    }

    /// The context stack, outermost first.
    pub fn contexts(&self) -> impl Iterator<Item = Context> + '_ {
        let top = self.contexts.len() - 1;
        self.contexts.iter().enumerate().map(move |(i, c)| {
            let mut c = *c;
            if i == top {
                c.last_executed = some_node(self.top_last);
            }
            c
        })
    }

    /// The address of the last executed instruction, once one ran.
    pub fn last_executed(&self) -> Option<SegOff> {
        (self.current != NONE).then(|| self.nodes[self.current as usize].address)
    }
}

#[cfg(test)]
impl Tracker {
    /// Everything the tracker recorded, as text, for comparing two runs.
    pub(crate) fn record(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let _ = writeln!(
                out,
                "node {i} {} len {} sig {:x} succ {:?} pred {} runs {} variant {}",
                n.address,
                n.len,
                n.signature,
                n.successors,
                n.predecessors,
                n.executions,
                n.next_variant
            );
        }
        let mut functions: Vec<_> = self.functions.values().collect();
        functions.sort_by_key(|f| f.address);
        for f in functions {
            let _ = writeln!(
                out,
                "function {} {} {} {:?}",
                f.address, f.name, f.called_count, f.callers
            );
        }
        for c in self.contexts() {
            let _ = writeln!(
                out,
                "context {} {} {:?}",
                c.depth, c.entry_point, c.last_executed
            );
        }
        let _ = writeln!(
            out,
            "entries {:?} edges {} variants {} dropped {:?} current {} depth {}",
            self.entry_points,
            self.edges,
            self.variant_addresses,
            self.dropped,
            self.current,
            self.unrecorded_depth
        );
        out
    }
}
