//! Comparing large byte slices inside the sandbox.
//!
//! `==` on byte slices calls `memcmp`, which on `wasm32-wasip2` is
//! wasi-libc's byte-at-a-time loop: comparing two 1 MiB ROM images that
//! way took about 3 ms of every patch. These compare eight bytes at a time,
//! which the compiler turns into 64-bit loads natively and in WebAssembly.

/// Whether `a` and `b` hold the same bytes.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    // Whole 64-byte blocks without a branch per word, then the tail.
    let (a_blocks, a_tail) = a.as_chunks::<64>();
    let (b_blocks, b_tail) = b.as_chunks::<64>();
    same_blocks(a_blocks, b_blocks) && a_tail.iter().zip(b_tail).all(|(x, y)| x == y)
}

/// Whether two runs of blocks (of one length) are equal: each block's
/// words folded by xor and or (vector compares, once compiled).
#[cfg(not(target_arch = "wasm32"))]
fn same_blocks(a: &[[u8; 64]], b: &[[u8; 64]]) -> bool {
    a.iter().zip(b).all(|(x, y)| {
        let (x, _) = x.as_chunks::<8>();
        let (y, _) = y.as_chunks::<8>();
        x.iter().zip(y).fold(0, |d, (x, y)| {
            d | (u64::from_ne_bytes(*x) ^ u64::from_ne_bytes(*y))
        }) == 0
    })
}

/// [`same_blocks`] in a component: four `v128` xors and one `any_true` a
/// block. Only this loop is built with SIMD: whether whole components gain
/// from it could not be told apart from the bench machine's noise.
///
/// `simd128` is a feature of every engine benchtop's components target
/// (wasmtime enables it by default, as do browsers); an engine without it
/// rejects the module when loading it, so this is safe to call.
#[cfg(target_arch = "wasm32")]
#[target_feature(enable = "simd128")]
fn same_blocks(a: &[[u8; 64]], b: &[[u8; 64]]) -> bool {
    use core::arch::wasm32::{v128, v128_any_true, v128_or, v128_xor};
    // 16 bytes of a block; `read_unaligned` is one `v128.load`.
    let lane = |x: &[u8; 64], i: usize| {
        // SAFETY: `i < 4`, so the 16 bytes read are inside `x`.
        unsafe { x.as_ptr().add(16 * i).cast::<v128>().read_unaligned() }
    };
    a.iter().zip(b).all(|(x, y)| {
        let d = |i| v128_xor(lane(x, i), lane(y, i));
        !v128_any_true(v128_or(v128_or(d(0), d(1)), v128_or(d(2), d(3))))
    })
}

/// The offsets where `before` and `after` differ, in order, over their
/// common length: equal stretches are skipped eight bytes at a time.
pub fn differences<'a>(before: &'a [u8], after: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    const BLOCK: usize = 64;
    let len = before.len().min(after.len());
    (0..len.div_ceil(BLOCK)).flat_map(move |block| {
        let start = block * BLOCK;
        let end = (start + BLOCK).min(len);
        // An equal block yields an empty range: it costs one `same`.
        let scan = if same(&before[start..end], &after[start..end]) {
            start..start
        } else {
            start..end
        };
        scan.filter(move |&i| before[i] != after[i])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_compares_whole_words_and_the_tail() {
        let a: Vec<u8> = (0..=255).collect();
        let mut b = a.clone();
        assert!(same(&a, &b));
        b[255] ^= 1; // the last of 32 whole words
        assert!(!same(&a, &b));
        let (c, d) = (&a[..13], &mut b[..13].to_vec());
        assert!(same(c, d));
        d[12] ^= 0x80; // the 5-byte tail
        assert!(!same(c, d));
        assert!(!same(&a[..3], &a[..4]));
    }

    #[test]
    fn differences_are_every_differing_offset_in_order() {
        let before = vec![7u8; 1000];
        let mut after = before.clone();
        for i in [0, 63, 64, 65, 500, 999] {
            after[i] = 1;
        }
        let found: Vec<usize> = differences(&before, &after).collect();
        assert_eq!(found, [0, 63, 64, 65, 500, 999]);
        let plain: Vec<usize> = (0..1000).filter(|&i| before[i] != after[i]).collect();
        assert_eq!(found, plain);
        assert_eq!(differences(&before, &before).count(), 0);
        // Over the common length only.
        assert_eq!(differences(&before[..10], &after).collect::<Vec<_>>(), [0]);
    }
}
