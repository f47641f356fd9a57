//! Which keys may sign which repositories: the config file's `[[trust]]`
//! rules.

use crate::Source;
use serde::Deserialize;
use std::path::PathBuf;

/// One rule: a repository pattern and who may sign it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TrustRule {
    /// `HOST/REPOSITORY`, or a prefix ending in `*`
    /// (`ghcr.io/acme/*`).
    pub repository: String,
    /// Public keys (cosign PEM files) any of which may sign.
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// Accept this repository's components unsigned: an explicit opt-out.
    #[serde(default)]
    pub skip_signature: bool,
}

/// Every rule; the most specific that matches a source applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustPolicy {
    /// The rules, as the config lists them.
    pub rules: Vec<TrustRule>,
}

impl TrustRule {
    fn matches(&self, repository: &str) -> bool {
        match self.repository.strip_suffix('*') {
            Some(prefix) => repository.starts_with(prefix),
            None => repository == self.repository,
        }
    }
}

impl TrustPolicy {
    /// The rule for `source`: an exact match, else the longest matching
    /// prefix; none when no rule covers it (the pull is refused).
    pub fn rule_for(&self, source: &Source) -> Option<&TrustRule> {
        let repository = format!("{}/{}", source.registry(), source.repository());
        self.rules
            .iter()
            .filter(|r| r.matches(&repository))
            .max_by_key(|r| (!r.repository.ends_with('*'), r.repository.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(repository: &str, skip: bool) -> TrustRule {
        TrustRule {
            repository: repository.into(),
            keys: vec![PathBuf::from(format!("{repository}.pub"))],
            skip_signature: skip,
        }
    }

    #[test]
    fn the_most_specific_rule_applies() {
        let policy = TrustPolicy {
            rules: vec![
                rule("ghcr.io/*", false),
                rule("ghcr.io/acme/*", true),
                rule("ghcr.io/acme/xdf", false),
            ],
        };
        let at = |s: &str| {
            policy
                .rule_for(&Source::parse(s).unwrap())
                .map(|r| r.repository.as_str())
        };
        assert_eq!(at("oci://ghcr.io/acme/xdf:1"), Some("ghcr.io/acme/xdf"));
        assert_eq!(at("oci://ghcr.io/acme/a2l:1"), Some("ghcr.io/acme/*"));
        assert_eq!(at("oci://ghcr.io/other/x:1"), Some("ghcr.io/*"));
        assert_eq!(at("oci://quay.io/acme/xdf:1"), None);
    }
}
