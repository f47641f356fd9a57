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

pub struct FunctionInfo {
    pub address: SegOff,
    pub name: String,
    /// CALL/INT instructions that targeted this entry.
    pub called_count: u64,
    pub callers: BTreeSet<SegOff>,
}

/// One instruction node. Self-modifying code yields several nodes at one
/// address (variants), distinguished by their byte signature.
pub struct Node {
    pub address: SegOff,
    pub len: u8,
    /// Up to the first 8 instruction bytes, little-endian.
    pub signature: u64,
    pub successors: Vec<u32>,
    pub predecessors: u32,
    /// Next variant at the same linear address (u32::MAX: none).
    next_variant: u32,
    pub executions: u64,
}

pub struct Context {
    pub depth: u32,
    pub entry_point: SegOff,
    pub last_executed: Option<u32>,
}

const NONE: u32 = u32::MAX;

pub struct Tracker {
    pub functions: HashMap<SegOff, FunctionInfo>,
    pub nodes: Vec<Node>,
    /// First node per linear address.
    by_addr: Vec<u32>,
    pub contexts: Vec<Context>,
    /// Entry points of every context ever entered.
    pub entry_points: BTreeSet<SegOff>,
    pub edges: u64,
    pub variant_addresses: u64,
    pending_entry: bool,
    current: u32,
}

/// The first `len` (at most 8) instruction bytes at `a`, little-endian.
#[inline(always)]
fn signature(cpu: &Cpu, a: SegOff, len: u8) -> u64 {
    let lin = Cpu::lin(a.0, a.1) as usize;
    let n = len.min(8) as u32;
    let mask = if n == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * n)) - 1
    };
    // Fast path: one unaligned load when neither the segment offset nor
    // the 1 MiB space wraps inside the window.
    if lin + 8 <= MEM_SIZE && a.1 <= 0xFFF8 {
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

    #[inline(always)]
    fn node_at(&mut self, cpu: &Cpu, a: SegOff) -> u32 {
        let lin = Cpu::lin(a.0, a.1) as usize;
        let mut idx = self.by_addr[lin];
        let mut last = NONE;
        while idx != NONE {
            let n = &self.nodes[idx as usize];
            if n.address == a && signature(cpu, a, n.len) == n.signature {
                return idx;
            }
            last = idx;
            idx = n.next_variant;
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
            executions: 0,
        });
        if last == NONE {
            self.by_addr[lin] = new;
        } else {
            if self.nodes[self.by_addr[lin] as usize].next_variant == NONE {
                self.variant_addresses += 1;
            }
            self.nodes[last as usize].next_variant = new;
        }
        new
    }

    /// Records the instruction about to execute at CS:IP.
    #[inline]
    pub fn before(&mut self, cpu: &Cpu) {
        let a = SegOff(cpu.sregs[crate::cpu::CS], cpu.ip);
        let idx = self.node_at(cpu, a);
        let ctx = self
            .contexts
            .last_mut()
            .expect("context stack is never empty");
        if self.pending_entry {
            ctx.entry_point = a;
            self.entry_points.insert(a);
            self.pending_entry = false;
        }
        if let Some(prev) = ctx.last_executed {
            let succ = &mut self.nodes[prev as usize].successors;
            if succ.last() != Some(&idx) && !succ.contains(&idx) {
                succ.push(idx);
                self.edges += 1;
                self.nodes[idx as usize].predecessors += 1;
            }
        }
        ctx.last_executed = Some(idx);
        self.nodes[idx as usize].executions += 1;
        self.current = idx;
    }

    fn enter(&mut self, target: SegOff, caller: SegOff, name: impl FnOnce() -> String) {
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
        f.callers.insert(caller);
    }

    /// Records the control-flow event of the instruction just executed.
    /// `serviced`: the INT was handled natively (target = its stub).
    #[inline]
    pub fn after(&mut self, cpu: &Cpu, serviced: Option<u8>) {
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
                if serviced.is_none() {
                    // A CPU fault runs its handler in a new execution context.
                    let depth = self.contexts.len() as u32;
                    self.contexts.push(Context {
                        depth,
                        entry_point: here,
                        last_executed: None,
                    });
                    self.pending_entry = true;
                }
            }
            Event::Iret => {
                if self.contexts.len() > 1 {
                    self.contexts.pop();
                }
            }
        }
    }

    pub fn current_context(&self) -> &Context {
        self.contexts.last().expect("context stack is never empty")
    }

    pub fn last_executed(&self) -> Option<SegOff> {
        (self.current != NONE).then(|| self.nodes[self.current as usize].address)
    }
}
