//! Plugins from OCI registries, signed.
//!
//! A plugin component travels as an OCI artifact the way the WebAssembly
//! OCI convention stores it (one `application/wasm` layer, a
//! `application/vnd.wasm.config.v0+json` config), so other tools pull it
//! too. Signatures are cosign's, key-based: a simple-signing payload
//! naming the manifest digest, signed with an ECDSA P-256 key and stored
//! under the `sha256-<digest>.sig` tag, so `cosign sign --key` and `cosign
//! verify --key` interoperate.
//!
//! A pull is verified before anything is returned: the layer's bytes must
//! have the digest the manifest names, and, unless the trust policy opts
//! out for the repository, a signature by one of the policy's keys must
//! name that manifest. Plain HTTP is used for loopback registries only.

mod reference;
mod trust;

pub use reference::Source;
pub use trust::{TrustPolicy, TrustRule};

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use sha2::{Digest, Sha256};
use sigstore::cosign::verification_constraint::{PublicKeyVerifier, VerificationConstraintVec};
use sigstore::cosign::{
    ClientBuilder, Constraint, CosignCapabilities, SignatureLayer, constraint::PrivateKeySigner,
};
use sigstore::crypto::SigningScheme;
use sigstore::registry::{Auth, OciReference};
use std::path::PathBuf;

/// Media type of the component layer (WebAssembly OCI convention).
pub const WASM_LAYER: &str = "application/wasm";
/// Media type of the artifact's config (WebAssembly OCI convention).
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";

/// What went wrong with a registry, a key or a component.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The reference is not `oci://HOST/REPOSITORY[:TAG|@DIGEST]`.
    #[error("`{0}` is not an OCI reference: write oci://HOST/REPOSITORY:TAG (or @sha256:DIGEST)")]
    Reference(String),
    /// The registry refused or could not be reached.
    #[error("{reference}: the registry answered: {message}")]
    Registry {
        /// The reference.
        reference: String,
        /// What the registry or the connection said.
        message: String,
    },
    /// The artifact holds no component layer.
    #[error("{0} holds no `application/wasm` layer: it is not a WebAssembly component artifact")]
    NotWasm(String),
    /// The bytes pulled are not the ones the manifest names.
    #[error(
        "{reference}: the component's bytes have digest {found}, the manifest names {expected}: it was altered in the registry or in transit, so it is refused"
    )]
    Tampered {
        /// The reference.
        reference: String,
        /// The digest the manifest names.
        expected: String,
        /// The digest of the bytes received.
        found: String,
    },
    /// No trust rule covers the repository.
    #[error(
        "{0}: no [[trust]] rule in the config covers this repository, so its signature cannot be checked and it is refused. Add one naming the signer's public key (keys = [\"cosign.pub\"]), or opt out for it with skip_signature = true"
    )]
    NoRule(String),
    /// No signature by a trusted key names the manifest.
    #[error(
        "{reference}: {why}. Expected a cosign signature (tag {tag}) by one of {keys}. Sign it with `benchtop plugin sign {reference} --key KEY`, or trust its signer's public key in a [[trust]] rule for this repository"
    )]
    Untrusted {
        /// The reference.
        reference: String,
        /// Unsigned, or signed by whom.
        why: String,
        /// The signature tag looked at.
        tag: String,
        /// The trusted keys, listed.
        keys: String,
    },
    /// A key file could not be read or used.
    #[error("key {path}: {message}")]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why it cannot be used.
        message: String,
    },
}

/// A component pulled and verified.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The component's bytes.
    pub bytes: Vec<u8>,
    /// Digest of the manifest pulled (`sha256:…`): what a signature names.
    pub manifest_digest: String,
    /// Digest of the component layer (`sha256:…`).
    pub layer_digest: String,
    /// Who signed it.
    pub signer: Signer,
}

/// Who vouches for a pulled component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// A signature by this trusted public key file.
    Key(PathBuf),
    /// The trust policy opts out of signatures for the repository.
    NotChecked,
}

impl std::fmt::Display for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signer::Key(path) => write!(f, "key {}", path.display()),
            Signer::NotChecked => f.write_str("not checked (skip_signature)"),
        }
    }
}

/// Registry credentials from `BENCHTOP_REGISTRY_USER` and
/// `BENCHTOP_REGISTRY_PASSWORD`, else anonymous.
fn auth() -> (RegistryAuth, Auth) {
    match (
        std::env::var("BENCHTOP_REGISTRY_USER"),
        std::env::var("BENCHTOP_REGISTRY_PASSWORD"),
    ) {
        (Ok(user), Ok(password)) => (
            RegistryAuth::Basic(user.clone(), password.clone()),
            Auth::Basic(user, password),
        ),
        _ => (RegistryAuth::Anonymous, Auth::Anonymous),
    }
}

/// Plain HTTP for a loopback registry (as container tools allow for
/// localhost), TLS for every other.
fn protocol(source: &Source) -> ClientProtocol {
    if source.is_loopback() {
        ClientProtocol::HttpsExcept(vec![source.registry().to_owned()])
    } else {
        ClientProtocol::Https
    }
}

fn client(source: &Source) -> oci_client::Client {
    oci_client::Client::new(ClientConfig {
        protocol: protocol(source),
        ..ClientConfig::default()
    })
}

fn cosign_client(source: &Source) -> Result<sigstore::cosign::Client, Error> {
    let protocol = match protocol(source) {
        ClientProtocol::HttpsExcept(hosts) => {
            sigstore::registry::ClientProtocol::HttpsExcept(hosts)
        }
        _ => sigstore::registry::ClientProtocol::Https,
    };
    ClientBuilder::default()
        .with_oci_client_config(sigstore::registry::ClientConfig {
            protocol,
            ..Default::default()
        })
        .build()
        .map_err(|e| registry_error(source, e))
}

fn registry_error(source: &Source, e: impl std::fmt::Display) -> Error {
    Error::Registry {
        reference: source.to_string(),
        message: e.to_string(),
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    digest_name(&Sha256::digest(bytes).into())
}

/// `sha256:<hex>` of a SHA-256 already taken.
pub fn digest_name(sha256: &[u8; 32]) -> String {
    let hex: String = sha256.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Pushes a component to `source`; returns the manifest's digest.
pub async fn push(component: &[u8], source: &Source) -> Result<String, Error> {
    let layer = ImageLayer::new(component.to_vec(), WASM_LAYER.to_owned(), None);
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer.sha256_digest()],
        "component": {"exports": [], "imports": []},
    });
    let config = Config::new(
        serde_json::to_vec(&config).expect("a JSON value serializes"),
        WASM_CONFIG.to_owned(),
        None,
    );
    let manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
    let client = client(source);
    let (auth, _) = auth();
    let reference = source.reference();
    client
        .push(&reference, &[layer], config, &auth, Some(manifest))
        .await
        .map_err(|e| registry_error(source, e))?;
    client
        .fetch_manifest_digest(&reference, &auth)
        .await
        .map_err(|e| registry_error(source, e))
}

/// Signs the manifest `source` names with the cosign private key `key_pem`
/// (encrypted with `password`, or plain when it is empty); returns the
/// signed manifest digest.
pub async fn sign(
    source: &Source,
    key_pem: &[u8],
    password: &[u8],
    key_path: &std::path::Path,
) -> Result<String, Error> {
    let signer = PrivateKeySigner::new_with_raw(
        key_pem.to_vec().into(),
        password.to_vec().into(),
        &SigningScheme::ECDSA_P256_SHA256_ASN1,
    )
    .map_err(|e| Error::Key {
        path: key_path.to_owned(),
        message: format!("{e} (is BENCHTOP_KEY_PASSWORD or COSIGN_PASSWORD its password?)"),
    })?;
    let (oci_auth, cosign_auth) = auth();
    let digest = client(source)
        .fetch_manifest_digest(&source.reference(), &oci_auth)
        .await
        .map_err(|e| registry_error(source, e))?;
    let image = source.pinned(&digest)?;
    let mut cosign = cosign_client(source)?;
    let (signature_image, signed_digest) = cosign
        .triangulate(&image, &cosign_auth)
        .await
        .map_err(|e| registry_error(source, e))?;
    let mut layer = SignatureLayer::new_unsigned(&image, &signed_digest)
        .map_err(|e| registry_error(source, e))?;
    signer
        .add_constraint(&mut layer)
        .map_err(|e| registry_error(source, e))?;
    cosign
        .push_signature(None, &cosign_auth, &signature_image, vec![layer])
        .await
        .map_err(|e| registry_error(source, e))?;
    Ok(signed_digest)
}

/// A new cosign key pair: the private key PEM encrypted with `password`
/// (cosign's format) and the public key PEM.
pub fn generate_key_pair(password: &[u8]) -> Result<(String, String), Error> {
    let key_error = |e: sigstore::errors::SigstoreError| Error::Key {
        path: PathBuf::from("(new)"),
        message: e.to_string(),
    };
    let pair = SigningScheme::ECDSA_P256_SHA256_ASN1
        .create_signer()
        .and_then(|s| s.to_sigstore_keypair())
        .map_err(key_error)?;
    let private = pair
        .private_key_to_encrypted_pem(password)
        .map_err(key_error)?
        .to_string();
    let public = pair.public_key_to_pem().map_err(key_error)?;
    Ok((private, public))
}

/// Pulls the component `source` names and verifies it under `policy`.
pub async fn pull(source: &Source, policy: &TrustPolicy) -> Result<Pulled, Error> {
    let rule = policy
        .rule_for(source)
        .ok_or_else(|| Error::NoRule(source.to_string()))?;
    let client = client(source);
    let (oci_auth, cosign_auth) = auth();
    let (manifest, manifest_digest) = client
        .pull_image_manifest(&source.reference(), &oci_auth)
        .await
        .map_err(|e| registry_error(source, e))?;
    // From here on the digest, not the tag: a tag moved meanwhile cannot
    // swap what is verified.
    let pinned = source.pinned(&manifest_digest)?;
    let signer = if rule.skip_signature {
        Signer::NotChecked
    } else {
        verify_signature(source, &pinned, &manifest_digest, rule, &cosign_auth).await?
    };
    let layer = manifest
        .layers
        .iter()
        .find(|l| l.media_type == WASM_LAYER)
        .ok_or_else(|| Error::NotWasm(source.to_string()))?;
    let mut bytes = Vec::new();
    let received = client
        .pull_blob(&source.reference_at(&manifest_digest), layer, &mut bytes)
        .await;
    // oci-client checks the digest as the bytes stream in; so do we, below.
    if let Err(oci_client::errors::OciDistributionError::DigestError(
        oci_client::errors::DigestError::VerificationError { expected, actual },
    )) = &received
    {
        return Err(Error::Tampered {
            reference: source.to_string(),
            expected: expected.clone(),
            found: actual.clone(),
        });
    }
    received.map_err(|e| registry_error(source, e))?;
    let found = digest_of(&bytes);
    if found != layer.digest {
        return Err(Error::Tampered {
            reference: source.to_string(),
            expected: layer.digest.clone(),
            found,
        });
    }
    Ok(Pulled {
        bytes,
        manifest_digest,
        layer_digest: found,
        signer,
    })
}

async fn verify_signature(
    source: &Source,
    pinned: &OciReference,
    manifest_digest: &str,
    rule: &TrustRule,
    auth: &Auth,
) -> Result<Signer, Error> {
    let tag = format!("{}.sig", manifest_digest.replace(':', "-"));
    let keys = rule
        .keys
        .iter()
        .map(|k| k.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let untrusted = |why: String| Error::Untrusted {
        reference: source.to_string(),
        why,
        tag: tag.clone(),
        keys: if keys.is_empty() {
            "(no keys)".into()
        } else {
            keys.clone()
        },
    };
    let mut cosign = cosign_client(source)?;
    let layers = cosign
        .trusted_signature_layers(auth, pinned)
        .await
        .unwrap_or_default();
    // Only signatures that name this very manifest count.
    let layers: Vec<SignatureLayer> = layers
        .into_iter()
        .filter(|l| l.simple_signing.critical.image.docker_manifest_digest == manifest_digest)
        .collect();
    if layers.is_empty() {
        return Err(untrusted("it is not signed".into()));
    }
    for key in &rule.keys {
        let pem = std::fs::read(key).map_err(|e| Error::Key {
            path: key.clone(),
            message: e.to_string(),
        })?;
        let verifier = PublicKeyVerifier::try_from(&pem).map_err(|e| Error::Key {
            path: key.clone(),
            message: format!("not a public key cosign can use: {e}"),
        })?;
        let constraints: VerificationConstraintVec = vec![Box::new(verifier)];
        if sigstore::cosign::verify_constraints(&layers, constraints.iter()).is_ok() {
            return Ok(Signer::Key(key.clone()));
        }
    }
    Err(untrusted(format!(
        "it carries {} signature(s), none by a trusted key",
        layers.len()
    )))
}
