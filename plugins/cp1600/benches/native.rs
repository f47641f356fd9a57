//! Native throughput of the core on a loop-heavy program (memory traffic,
//! ALU, shifts, taken and untaken branches). Prints one markdown table row.

use cp1600::machine::Machine;
use std::time::Instant;

/// The words of `samples/cp1600/bench-loop.asm`:
/// loop: INCR R0 / ADDR R0,R1 / SLL R1 / MVO R1,$0200 / MVI $0200,R2 /
/// XORR R2,R3 / DECR R5 / BNEQ loop / B start
const PROGRAM: [u16; 16] = [
    0x02BD, 0x0000, 0x0008, 0x00C1, 0x0049, 0x0241, 0x0200, 0x0282, 0x0200, 0x01D3, 0x0015, 0x022C,
    0x000A, 0x0220, 0x000E, 0x0000,
];

fn main() {
    let n: u64 = std::env::var("CP1600_BENCH_INSTRUCTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000_000);
    // Best of three: the machine is shared, and the best run is the one
    // least disturbed by other processes.
    let best = (0..3).map(|_| measure(n)).fold(0.0, f64::max);
    println!("| cp1600 native | {best:.0} | Minstr/s |");
}

/// Runs `n` instructions of the loop and returns millions per second.
fn measure(n: u64) -> f64 {
    let mut m = Machine::new();
    for (i, w) in PROGRAM.iter().enumerate() {
        m.cpu.mem.load_word(0x5000 + i as u16, *w);
    }
    m.cpu.reset_to(0x5000);
    let t = Instant::now();
    let r = m.run_count(n);
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(r.executed, n);
    n as f64 / secs / 1e6
}
