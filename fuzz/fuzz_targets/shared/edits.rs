//! Edits of a real payload, for the snapshot targets: random bytes rarely
//! get past a snapshot's first fields, edits of a real one reach them all.

/// `base` edited by `edits`: its first four bytes cut the payload
/// (little-endian, modulo its length + 1; 0 keeps it whole), then each
/// group of five bytes is an offset (four bytes, modulo the length) and a
/// value XORed in there.
pub fn edited(base: &[u8], edits: &[u8]) -> Vec<u8> {
    let mut payload = base.to_vec();
    let Some((cut, rest)) = edits.split_first_chunk::<4>() else {
        return payload;
    };
    let cut = u32::from_le_bytes(*cut) as usize % (payload.len() + 1);
    if cut > 0 {
        payload.truncate(cut);
    }
    for edit in rest.chunks_exact(5) {
        if payload.is_empty() {
            break;
        }
        let at = u32::from_le_bytes([edit[0], edit[1], edit[2], edit[3]]) as usize;
        let at = at % payload.len();
        payload[at] ^= edit[4];
    }
    payload
}
