//! Native throughput of the x86 core on fixtures/dos/bench.com (about 90M
//! instructions), with function/CFG tracking off and on. Prints markdown
//! table rows for `make bench`.

use std::path::Path;
use std::time::Instant;

use x86_inspect::cpu::Model;
use x86_inspect::machine::{Machine, StopReason};

/// A fallback loop when the fixture is absent: `mov cx,0 ; l: add ax,cx ;
/// xor bx,ax ; loop l` repeated 64 times, then exit.
fn fallback() -> Vec<u8> {
    let mut code = vec![0xBA, 64, 0]; // mov dx,64
    let outer = code.len();
    code.extend_from_slice(&[0xB9, 0, 0, 0x01, 0xC8, 0x31, 0xC3, 0xE2, 0xFA]);
    code.extend_from_slice(&[0x4A, 0x75, (outer as i32 - (code.len() as i32 + 2)) as u8]); // dec dx ; jnz outer
    code.extend_from_slice(&[0xB8, 0x00, 0x4C, 0xCD, 0x21]);
    code
}

fn measure(path: &Path, image: &[u8], tracking: bool) -> (u64, f64) {
    let mut best = 0.0f64;
    let mut count = 0;
    for _ in 0..3 {
        let mut m = Machine::load(1, path, image, "", Model::I80186, tracking)
            .expect("bench program loads");
        let t = Instant::now();
        let (n, r) = m
            .run(u64::MAX, &mut |_, _| true)
            .expect("bench program runs");
        let secs = t.elapsed().as_secs_f64();
        assert!(
            matches!(r, StopReason::Exited(0)),
            "bench stopped with {r:?}"
        );
        count = n;
        best = best.max(n as f64 / secs / 1e6);
    }
    (count, best)
}

fn main() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dos/bench.com");
    let (path, image) = match std::fs::read(&fixture) {
        Ok(b) => (fixture.clone(), b),
        Err(_) => {
            eprintln!("{} not found; using a built-in loop", fixture.display());
            (std::env::temp_dir().join("BENCH.COM"), fallback())
        }
    };
    let (n, off) = measure(&path, &image, false);
    let (_, on) = measure(&path, &image, true);
    eprintln!("{n} instructions per run");
    println!("| x86 native (tracking off) | {off:.1} | Minstr/s |");
    println!("| x86 native (tracking on) | {on:.1} | Minstr/s |");
}
