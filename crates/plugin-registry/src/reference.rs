//! `oci://HOST/REPOSITORY[:TAG|@DIGEST]`, as users write plugin sources.

use crate::Error;
use oci_client::Reference;
use sigstore::registry::OciReference;

/// A component's place in a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    reference: Reference,
}

impl Source {
    /// Parses `oci://HOST/REPOSITORY[:TAG|@DIGEST]`. The host is required
    /// (no registry is implied) and the tag defaults to `latest`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = || Error::Reference(text.to_owned());
        let rest = text.strip_prefix("oci://").ok_or_else(bad)?;
        let (host, path) = rest.split_once('/').ok_or_else(bad)?;
        let explicit_host = host.contains('.') || host.contains(':') || host == "localhost";
        if !explicit_host || path.is_empty() {
            return Err(bad());
        }
        let reference: Reference = rest.parse().map_err(|_| bad())?;
        if reference.registry() != host {
            return Err(bad());
        }
        Ok(Self { reference })
    }

    /// The registry's host (and port).
    pub fn registry(&self) -> &str {
        self.reference.registry()
    }

    /// The repository within the registry.
    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The repository's last segment: the file name a pulled component
    /// gets (`NAME.wasm`).
    pub fn name(&self) -> &str {
        self.repository()
            .rsplit('/')
            .next()
            .unwrap_or(self.repository())
    }

    /// Whether the registry is on this machine (plain HTTP is allowed).
    pub fn is_loopback(&self) -> bool {
        let host = self.registry();
        let host = if let Some(bracketed) = host.strip_prefix('[') {
            bracketed.split(']').next().unwrap_or("")
        } else {
            host.rsplit_once(':').map_or(host, |(h, _)| h)
        };
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// The OCI client's reference.
    pub fn reference(&self) -> Reference {
        self.reference.clone()
    }

    /// The same repository at manifest `digest`.
    pub fn reference_at(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.registry().to_owned(),
            self.repository().to_owned(),
            digest.to_owned(),
        )
    }

    /// The same repository at manifest `digest`, as cosign names it.
    pub fn pinned(&self, digest: &str) -> Result<OciReference, Error> {
        format!("{}/{}@{digest}", self.registry(), self.repository())
            .parse()
            .map_err(|_| Error::Reference(format!("{self}@{digest}")))
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}", self.reference.whole())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_their_registry() {
        let s = Source::parse("oci://127.0.0.1:5000/acme/xdf-family:1.0").unwrap();
        assert_eq!(s.registry(), "127.0.0.1:5000");
        assert_eq!(s.repository(), "acme/xdf-family");
        assert_eq!(s.name(), "xdf-family");
        assert!(s.is_loopback());
        assert_eq!(s.to_string(), "oci://127.0.0.1:5000/acme/xdf-family:1.0");
        let remote = Source::parse("oci://ghcr.io/acme/plugin").unwrap();
        assert!(!remote.is_loopback());
        assert!(remote.to_string().ends_with(":latest"));
        assert!(Source::parse("oci://localhost/p:1").unwrap().is_loopback());
        for bad in [
            "acme/plugin",
            "oci://acme/plugin",
            "oci://ghcr.io",
            "oci://ghcr.io/",
            "https://ghcr.io/a",
        ] {
            assert!(Source::parse(bad).is_err(), "{bad}");
        }
    }
}
