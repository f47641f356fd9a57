//! `benchtop:host/blobs`: bytes one plugin hands another by handle, so a
//! ROM image or a definitions file crosses a served interface as one copy
//! in and one out, not as a dynamic value per byte (see `peers`).

use super::{PluginState, bindings};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes one plugin instance may keep at once.
pub const MAX_BYTES_PER_OWNER: usize = 256 << 20;
/// Blobs one plugin instance may keep at once.
pub const MAX_BLOBS_PER_OWNER: usize = 4096;

/// Every kept blob, host-wide: a handle kept by one plugin is read by
/// another.
#[derive(Default)]
pub struct BlobStore {
    kept: Mutex<Kept>,
    owners: AtomicU64,
}

#[derive(Default)]
struct Kept {
    blobs: HashMap<u64, Blob>,
    /// `(bytes, blobs)` each owner keeps now.
    totals: HashMap<u64, (usize, usize)>,
}

struct Blob {
    owner: u64,
    /// The lifted list itself: an `Arc<[u8]>` would copy it once more
    /// (a 1 MiB ROM image crosses on every patch's checksum fix).
    bytes: Arc<Vec<u8>>,
}

impl BlobStore {
    /// A new owner: one plugin instance. Its blobs go when the owner is
    /// dropped.
    pub fn owner(self: &Arc<Self>) -> BlobOwner {
        BlobOwner {
            id: self.owners.fetch_add(1, Ordering::Relaxed),
            store: self.clone(),
        }
    }

    fn keep(&self, owner: u64, bytes: Vec<u8>) -> Result<u64, String> {
        let mut kept = self.kept.lock().expect("blob store poisoned");
        let (total, count) = kept.totals.get(&owner).copied().unwrap_or_default();
        if count >= MAX_BLOBS_PER_OWNER {
            return Err(format!(
                "this plugin keeps {count} blobs, the most it may: release the ones no longer needed"
            ));
        }
        if total + bytes.len() > MAX_BYTES_PER_OWNER {
            return Err(format!(
                "keeping {} more bytes would pass this plugin's {} MiB of blobs ({total} kept): release the ones no longer needed",
                bytes.len(),
                MAX_BYTES_PER_OWNER >> 20
            ));
        }
        // Random, so a handle cannot be guessed: it is the capability.
        let handle = loop {
            let h = getrandom::u64().map_err(|e| format!("no randomness for a handle: {e}"))?;
            if !kept.blobs.contains_key(&h) {
                break h;
            }
        };
        kept.totals.insert(owner, (total + bytes.len(), count + 1));
        kept.blobs.insert(
            handle,
            Blob {
                owner,
                bytes: Arc::new(bytes),
            },
        );
        Ok(handle)
    }

    fn get(&self, handle: u64) -> Result<Arc<Vec<u8>>, String> {
        let kept = self.kept.lock().expect("blob store poisoned");
        kept.blobs
            .get(&handle)
            .map(|b| b.bytes.clone())
            .ok_or_else(|| {
                format!("no blob {handle:#x} is kept: it was released, or its plugin reloaded")
            })
    }

    fn release(&self, owner: u64, handle: u64) {
        let mut kept = self.kept.lock().expect("blob store poisoned");
        if kept.blobs.get(&handle).is_some_and(|b| b.owner == owner) {
            let blob = kept.blobs.remove(&handle).expect("checked above");
            let totals = kept.totals.entry(owner).or_default();
            totals.0 -= blob.bytes.len();
            totals.1 -= 1;
        }
    }

    fn release_all(&self, owner: u64) {
        let mut kept = self.kept.lock().expect("blob store poisoned");
        kept.blobs.retain(|_, b| b.owner != owner);
        kept.totals.remove(&owner);
    }

    /// Keeps `bytes` for the host itself, to hand a plugin by handle:
    /// released when the returned owner is dropped.
    pub fn put(self: &Arc<Self>, bytes: Vec<u8>) -> Result<(BlobOwner, u64), String> {
        let owner = self.owner();
        let handle = self.keep(owner.id, bytes)?;
        Ok((owner, handle))
    }

    /// Takes blob `handle` out of the store, whoever kept it: the host
    /// receiving bytes a plugin kept for it.
    pub fn take(&self, handle: u64) -> Result<Arc<Vec<u8>>, String> {
        let mut kept = self.kept.lock().expect("blob store poisoned");
        let blob = kept.blobs.remove(&handle).ok_or_else(|| {
            format!("no blob {handle:#x} is kept: it was released, or its plugin reloaded")
        })?;
        if let Some(totals) = kept.totals.get_mut(&blob.owner) {
            totals.0 -= blob.bytes.len();
            totals.1 -= 1;
        }
        Ok(blob.bytes)
    }

    /// Bytes kept by all owners now.
    pub fn bytes_kept(&self) -> usize {
        let kept = self.kept.lock().expect("blob store poisoned");
        kept.totals.values().map(|(bytes, _)| bytes).sum()
    }
}

/// The blobs of one plugin instance, released when it ends.
pub struct BlobOwner {
    id: u64,
    store: Arc<BlobStore>,
}

impl Drop for BlobOwner {
    fn drop(&mut self) {
        self.store.release_all(self.id);
    }
}

impl bindings::benchtop::host::blobs::Host for PluginState {
    fn keep(&mut self, bytes: Vec<u8>) -> Result<u64, String> {
        self.blobs.store.keep(self.blobs.id, bytes)
    }

    fn read(&mut self, handle: u64, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        let bytes = self.blobs.store.get(handle)?;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let end = start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        Ok(bytes[start..end.min(bytes.len())].to_vec())
    }

    fn size(&mut self, handle: u64) -> Result<u64, String> {
        Ok(self.blobs.store.get(handle)?.len() as u64)
    }

    fn release(&mut self, handle: u64) {
        self.blobs.store.release(self.blobs.id, handle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_read_by_handle_and_go_with_their_owner() {
        let store = Arc::new(BlobStore::default());
        let a = store.owner();
        let b = store.owner();
        let h = store.keep(a.id, b"0123456789".to_vec()).unwrap();
        assert_eq!(&*store.get(h).unwrap(), b"0123456789");
        // Only the owner releases.
        store.release(b.id, h);
        assert!(store.get(h).is_ok());
        store.release(a.id, h);
        assert!(store.get(h).unwrap_err().contains("released"));
        store.keep(a.id, vec![0; 100]).unwrap();
        store.keep(b.id, vec![0; 50]).unwrap();
        assert_eq!(store.bytes_kept(), 150);
        drop(a);
        assert_eq!(store.bytes_kept(), 50);
    }

    #[test]
    fn an_owner_cannot_keep_without_bound() {
        let store = Arc::new(BlobStore::default());
        let a = store.owner();
        let err = store
            .keep(a.id, vec![0; MAX_BYTES_PER_OWNER + 1])
            .unwrap_err();
        assert!(err.contains("256 MiB"), "{err}");
        for _ in 0..MAX_BLOBS_PER_OWNER {
            store.keep(a.id, Vec::new()).unwrap();
        }
        let err = store.keep(a.id, Vec::new()).unwrap_err();
        assert!(err.contains("4096 blobs"), "{err}");
    }
}
