//! Which resource URIs to announce after a call (`benchtop:host/resources`),
//! from the items a client holds (emulator sessions, machines) as they
//! looked before and after it: each item has a few parts a resource shows
//! (its state, its trace, its console), and only the parts that changed
//! are announced, one notice per URI per call however much ran. An item
//! that came or went is announced whole.

use std::collections::BTreeMap;

/// The items a call created or changed (their look differs, or they are
/// new) and the items it ended, from the items as they looked before and
/// after: what a plugin tells the state store (`benchtop:host/durable`).
pub fn item_changes<'a, K: Ord, L: PartialEq>(
    before: &'a [(K, L)],
    after: &'a [(K, L)],
) -> (Vec<&'a K>, Vec<&'a K>) {
    let old: BTreeMap<&K, &L> = before.iter().map(|(k, l)| (k, l)).collect();
    let new: BTreeMap<&K, &L> = after.iter().map(|(k, l)| (k, l)).collect();
    let changed = after
        .iter()
        .filter(|(k, l)| old.get(k).is_none_or(|was| *was != l))
        .map(|(k, _)| k)
        .collect();
    let ended = before
        .iter()
        .filter(|(k, _)| !new.contains_key(k))
        .map(|(k, _)| k)
        .collect();
    (changed, ended)
}

/// The URIs to announce: `differs(was, now)` says which of an item's `N`
/// parts changed, `uri(id, part)` names a part's resource.
pub fn changed_uris<K: Ord, L, const N: usize>(
    before: &[(K, L)],
    after: &[(K, L)],
    differs: impl Fn(&L, &L) -> [bool; N],
    uri: impl Fn(&K, usize) -> String,
) -> Vec<String> {
    let old: BTreeMap<&K, &L> = before.iter().map(|(k, l)| (k, l)).collect();
    let new: BTreeMap<&K, &L> = after.iter().map(|(k, l)| (k, l)).collect();
    let mut uris = Vec::new();
    let mut announce = |k: &K, which: [bool; N]| {
        for (part, changed) in which.into_iter().enumerate() {
            if changed {
                uris.push(uri(k, part));
            }
        }
    };
    for (k, now) in after {
        match old.get(k) {
            Some(was) => announce(k, differs(was, now)),
            None => announce(k, [true; N]),
        }
    }
    for (k, _) in before {
        if !new.contains_key(k) {
            announce(k, [true; N]);
        }
    }
    uris
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_parts_and_whole_items_that_came_or_went() {
        let uri = |id: &u32, part: usize| format!("x://{id}/{}", ["a", "b"][part]);
        let differs = |was: &(u8, u8), now: &(u8, u8)| [was.0 != now.0, was.1 != now.1];
        let before = [(1, (0, 0)), (2, (0, 0))];
        let after = [(1, (0, 1)), (3, (0, 0))];
        assert_eq!(
            changed_uris(&before, &after, differs, uri),
            ["x://1/b", "x://3/a", "x://3/b", "x://2/a", "x://2/b"]
        );
        assert!(changed_uris(&before, &before, differs, uri).is_empty());
    }

    #[test]
    fn item_changes_name_the_new_the_changed_and_the_ended() {
        let before = [("a", 1), ("b", 2), ("c", 3)];
        let after = [("a", 1), ("b", 5), ("d", 4)];
        let (changed, ended) = item_changes(&before, &after);
        assert_eq!(changed, [&"b", &"d"]);
        assert_eq!(ended, [&"c"]);
    }
}
