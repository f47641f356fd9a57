//! "Did you mean" support for names an agent mistyped.
//!
//! The host ranks tool names with it and plugins rank their own names
//! (columns, table names), so both kinds of hint agree on what is close.

/// Levenshtein distance between two strings, in characters (not bytes):
/// the fewest insertions, deletions and substitutions that turn `a` into
/// `b`. Takes O(|a|·|b|) time and O(|b|) memory, so callers compare short
/// names, not documents.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("rpm", ""), 3);
        assert_eq!(edit_distance("Knock", "Knok"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("ümlaut", "umlaut"), 1);
        assert_eq!(edit_distance("read_tabel", "read_table"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("flaw", "lawn"), 2);
    }

    #[test]
    fn is_symmetric() {
        for (a, b) in [
            ("kitten", "sitting"),
            ("", "x"),
            ("rpm", "RPM"),
            ("ab", "ba"),
        ] {
            assert_eq!(edit_distance(a, b), edit_distance(b, a), "{a} {b}");
        }
    }
}
