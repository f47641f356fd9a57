//! ECUFlash memory models: how big a full read of each ECU is and where
//! the file starts in the ECU's address space.

/// A memory model whose full-read size is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemModel {
    /// ECUFlash's name for the model, e.g. "SH7058".
    pub name: &'static str,
    /// Bytes in a complete read.
    pub size: usize,
    /// ECU address of file offset 0. H8/539F images hold the flash from
    /// 0x10000: the definitions address from there (id at 0x1021A is file
    /// offset 0x21A).
    pub base: u32,
}

/// The models real definitions use, with their ROM sizes. Models not
/// listed (e.g. 68HC16Y5, whose reads vary) get no size check.
const MODELS: &[MemModel] = &[
    MemModel {
        name: "SH7052",
        size: 0x4_0000,
        base: 0,
    },
    MemModel {
        name: "SH7055",
        size: 0x8_0000,
        base: 0,
    },
    MemModel {
        name: "SH7058",
        size: 0x10_0000,
        base: 0,
    },
    MemModel {
        name: "SH7059",
        size: 0x18_0000,
        base: 0,
    },
    MemModel {
        name: "M32186F8",
        size: 0x10_0000,
        base: 0,
    },
    MemModel {
        name: "H8539F",
        size: 0x2_0000,
        base: 0x1_0000,
    },
];

/// Looks a `<memmodel>` up (case-insensitive).
pub fn by_name(name: &str) -> Option<MemModel> {
    let name = name.trim();
    MODELS
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models() {
        assert_eq!(by_name("sh7058").unwrap().size, 1 << 20);
        assert_eq!(by_name("H8539F").unwrap().base, 0x1_0000);
        assert_eq!(by_name("68HC16Y5"), None);
    }
}
