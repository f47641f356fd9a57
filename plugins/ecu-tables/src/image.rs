//! How a ROM file maps to the address space its definition uses: EcuFlash
//! `.srf` containers hold the image inside chunks, and H8/539F reads start
//! at ECU address 0x10000. Tables read and patch a *view* addressed as the
//! definition addresses; [`Layout::to_file`] turns a patched view back into
//! the same kind of file.

use crate::memmodel;
use std::path::Path;

/// Where the image sits in the file and where the file sits in the ECU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// ECU address of the image's first byte (H8/539F: 0x10000).
    pub base: usize,
    /// `.srf` container: the bytes before and after the image.
    pub srf: Option<Srf>,
    /// Intel HEX or S-record text: the records the image came from.
    pub records: Option<std::sync::Arc<crate::records::Records>>,
}

/// The parts of an EcuFlash `.srf` file around the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srf {
    /// The header bytes before the image, written back unchanged.
    pub head: Vec<u8>,
    /// The bytes after the image, written back unchanged.
    pub tail: Vec<u8>,
}

impl Layout {
    /// The definition-addressed view of `image`.
    pub fn view(&self, image: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.base + image.len());
        v.resize(self.base, 0);
        v.extend_from_slice(image);
        v
    }

    /// The file bytes for a (patched) view: the padding below `base`
    /// dropped, the `.srf` chunks put back around the image.
    pub fn to_file(&self, view: &[u8]) -> Vec<u8> {
        let image = &view[self.base.min(view.len())..];
        if let Some(records) = &self.records {
            return records.to_file(image);
        }
        match &self.srf {
            None => image.to_vec(),
            Some(srf) => {
                let mut out = Vec::with_capacity(srf.head.len() + image.len() + srf.tail.len());
                out.extend_from_slice(&srf.head);
                out.extend_from_slice(image);
                out.extend_from_slice(&srf.tail);
                out
            }
        }
    }

    /// [`to_file`](Self::to_file), taking the view: a plain image at 0 is
    /// already the file, and a patch saves it without a copy.
    pub fn into_file(&self, view: Vec<u8>) -> Vec<u8> {
        if self.base == 0 && self.records.is_none() && self.srf.is_none() {
            view
        } else {
            self.to_file(&view)
        }
    }

    /// Short description for rom_info, None for a plain image at 0.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(records) = &self.records {
            parts.push(format!(
                "{} file: the image is the bytes its records place (0x{:X} bytes from address 0, gaps read as 0xFF); patches are written back as the same records",
                records.format.name(),
                records.end
            ));
        }
        if let Some(srf) = &self.srf {
            parts.push(format!(
                "EcuFlash .srf container: image at file offset {} (0x{:X})",
                srf.head.len(),
                srf.head.len()
            ));
        }
        if self.base > 0 {
            parts.push(format!(
                "file offset 0 is ECU address 0x{:X} (H8/539F)",
                self.base
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The ECU address a plain image of `len` bytes starts at for `memmodel`:
/// 0x10000 for a complete 128 KiB H8/539F read, else 0.
pub fn base_for(memmodel_name: Option<&str>, len: usize) -> usize {
    memmodel_name
        .and_then(memmodel::by_name)
        .filter(|m| m.base > 0 && m.size == len)
        .map_or(0, |m| m.base as usize)
}

const SRF_IMAGE_CHUNK: &[u8; 4] = b"MEMD";
/// The chunks come first; the MEMD header is found within this many bytes.
const SRF_HEADER_SCAN: usize = 64 * 1024;

/// Splits an EcuFlash `.srf` file into (head, image, tail). Files that are
/// not `.srf` (by extension, or by starting with an `INFO` chunk) give None.
///
/// The container is a run of chunks, `INFO`, `DRMI`, `MEML` and `MEMD`, each
/// a four-letter tag and a 32-bit length; the image is `MEMD`'s payload (461
/// bytes in on the real files tried, not at a fixed offset). The length's
/// byte order is taken from whichever reading fits inside the file.
pub fn split_srf(path: &Path, file: &[u8]) -> Result<Option<(usize, usize)>, String> {
    let by_name = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("srf"));
    if !by_name && !file.starts_with(b"INFO") {
        return Ok(None);
    }
    let scan = &file[..file.len().min(SRF_HEADER_SCAN)];
    let Some(at) = scan.windows(4).position(|w| w == SRF_IMAGE_CHUNK) else {
        if !by_name {
            // A raw image that happens to start with "INFO".
            return Ok(None);
        }
        return Err(
            "this .srf file has no MEMD (memory image) chunk; save the ROM from EcuFlash again, or export it as a .bin".into(),
        );
    };
    let start = at + 8;
    let Some(len_bytes) = file.get(at + 4..start) else {
        return Err("this .srf file ends inside its MEMD chunk header".into());
    };
    let len_bytes: [u8; 4] = len_bytes.try_into().expect("four bytes");
    let rest = file.len() - start;
    let fits = |n: u32| n > 0 && n as usize <= rest;
    let len = [u32::from_be_bytes(len_bytes), u32::from_le_bytes(len_bytes)]
        .into_iter()
        .find(|&n| fits(n))
        .ok_or_else(|| {
            format!(
                "the MEMD chunk of this .srf file claims more bytes than the file holds ({rest} after its header); the file is truncated"
            )
        })?;
    Ok(Some((start, len as usize)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A container shaped like the real ones: INFO, DRMI, MEML chunks, then
    /// MEMD with the image starting 461 bytes in, and a trailing chunk.
    pub(crate) fn srf(image: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut chunk = |tag: &[u8; 4], payload: &[u8]| {
            out.extend_from_slice(tag);
            out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            out.extend_from_slice(payload);
        };
        chunk(b"INFO", &[b'i'; 300]);
        chunk(b"DRMI", &[b'd'; 100]);
        chunk(b"MEML", &[0x11; 29]);
        chunk(b"MEMD", image);
        chunk(b"ENDC", b"end");
        out
    }

    #[test]
    fn srf_round_trips_with_the_image_461_bytes_in() {
        let image: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let file = srf(&image);
        let (start, len) = split_srf(Path::new("x.srf"), &file).unwrap().unwrap();
        assert_eq!((start, len), (461, 4096));
        assert_eq!(&file[start..start + len], &image[..]);
        let layout = Layout {
            base: 0,
            records: None,
            srf: Some(Srf {
                head: file[..start].to_vec(),
                tail: file[start + len..].to_vec(),
            }),
        };
        let mut view = layout.view(&file[start..start + len]);
        view[10] ^= 0xFF;
        let back = layout.to_file(&view);
        assert_eq!(layout.into_file(view.clone()), back);
        assert_eq!(back.len(), file.len());
        assert_eq!(back[start + 10], file[start + 10] ^ 0xFF);
        assert_eq!(&back[..start], &file[..start]);
        assert_eq!(&back[start + len..], &file[start + len..]);
        assert!(split_srf(Path::new("x.bin"), &image).unwrap().is_none());
        let err = split_srf(Path::new("x.srf"), &file[..500]).unwrap_err();
        assert!(err.contains("truncated"), "{err}");
        assert!(
            split_srf(Path::new("x.srf"), b"INFO....")
                .unwrap_err()
                .contains("no MEMD")
        );
        assert_eq!(split_srf(Path::new("x.bin"), b"INFO....").unwrap(), None);
        // Recognised by its first chunk whatever the file is called.
        assert_eq!(
            split_srf(Path::new("x.bin"), &file).unwrap(),
            Some((461, 4096))
        );
    }

    #[test]
    fn h8_images_start_at_0x10000() {
        assert_eq!(base_for(Some("H8539F"), 0x2_0000), 0x1_0000);
        assert_eq!(base_for(Some("H8539F"), 0x4_0000), 0);
        assert_eq!(base_for(Some("SH7058"), 0x10_0000), 0);
        let layout = Layout {
            base: 0x1_0000,
            ..Layout::default()
        };
        let view = layout.view(&[1, 2, 3]);
        assert_eq!((view.len(), view[0x1_0000]), (0x1_0003, 1));
        assert_eq!(layout.to_file(&view), [1, 2, 3]);
        assert_eq!(layout.into_file(view), [1, 2, 3]);
        // A plain image at 0 is the file itself.
        assert_eq!(Layout::default().into_file(vec![4, 5]), [4, 5]);
    }
}
