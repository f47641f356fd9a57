//! FNV-1a (64 bit): a small, dependency-free hash for telling contents
//! apart (a capture imported twice, a confirmed change from another). Not
//! for anything an adversary chooses to collide.

/// FNV-1a's starting value.
pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Folds `bytes` into the hash `h` (start from [`OFFSET`]).
pub fn fold(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_vectors() {
        assert_eq!(fold(OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fold(OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fold(fold(OFFSET, b"fo"), b"obar"), fold(OFFSET, b"foobar"));
    }
}
