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

/// Values an MCP completion answers with at most (the protocol's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// Completion of a partly typed `value` (prompt arguments, template
/// variables): the candidates starting with it first, then those containing
/// it, case-insensitively, each group sorted and deduplicated; at most
/// [`MAX_COMPLETIONS`]. A path also matches by its last component, so `BT`
/// finds `roms/BT0001.bin`.
pub fn completions(candidates: impl IntoIterator<Item = String>, value: &str) -> Vec<String> {
    let want = value.to_lowercase();
    let (mut starts, mut contains) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for c in candidates {
        let lower = c.to_lowercase();
        let last = lower.rsplit('/').next().unwrap_or(&lower);
        if lower.starts_with(&want) || last.starts_with(&want) {
            starts.insert(c);
        } else if lower.contains(&want) {
            contains.insert(c);
        }
    }
    starts
        .into_iter()
        .chain(contains)
        .take(MAX_COMPLETIONS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_put_prefixes_first_and_are_bounded() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let c = s(&[
            "Fuel Map",
            "Boost Target",
            "Idle Fuel Trim",
            "fuel cut",
            "Fuel Map",
        ]);
        assert_eq!(
            completions(c.clone(), "fu"),
            s(&["Fuel Map", "fuel cut", "Idle Fuel Trim"])
        );
        assert_eq!(completions(c.clone(), "").len(), 4);
        assert!(completions(c, "zzz").is_empty());
        assert_eq!(
            completions((0..500).map(|i| format!("t{i}")), "t").len(),
            MAX_COMPLETIONS
        );
        assert_eq!(
            completions(s(&["roms/BT0001.bin", "x/other.bin"]), "bt"),
            s(&["roms/BT0001.bin"])
        );
    }

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
