//! Code page 437, the PC's text-mode character set: each byte of a text
//! screen as the Unicode character the adapter draws for it (smileys and
//! arrows below 0x20, box drawing and blocks above 0x7F).

/// Bytes 0x00..0x1F: what the adapter draws (NUL as a space).
const LOW: [char; 32] = [
    ' ', '☺', '☻', '♥', '♦', '♣', '♠', '•', '◘', '○', '◙', '♂', '♀', '♪', '♫', '☼', //
    '►', '◄', '↕', '‼', '¶', '§', '▬', '↨', '↑', '↓', '→', '←', '∟', '↔', '▲', '▼',
];

/// Bytes 0x80..0xFF.
const HIGH: [char; 128] = [
    'Ç', 'ü', 'é', 'â', 'ä', 'à', 'å', 'ç', 'ê', 'ë', 'è', 'ï', 'î', 'ì', 'Ä', 'Å', //
    'É', 'æ', 'Æ', 'ô', 'ö', 'ò', 'û', 'ù', 'ÿ', 'Ö', 'Ü', '¢', '£', '¥', '₧', 'ƒ', //
    'á', 'í', 'ó', 'ú', 'ñ', 'Ñ', 'ª', 'º', '¿', '⌐', '¬', '½', '¼', '¡', '«', '»', //
    '░', '▒', '▓', '│', '┤', '╡', '╢', '╖', '╕', '╣', '║', '╗', '╝', '╜', '╛', '┐', //
    '└', '┴', '┬', '├', '─', '┼', '╞', '╟', '╚', '╔', '╩', '╦', '╠', '═', '╬', '╧', //
    '╨', '╤', '╥', '╙', '╘', '╒', '╓', '╫', '╪', '┘', '┌', '█', '▄', '▌', '▐', '▀', //
    'α', 'ß', 'Γ', 'π', 'Σ', 'σ', 'µ', 'τ', 'Φ', 'Θ', 'Ω', 'δ', '∞', 'φ', 'ε', '∩', //
    '≡', '±', '≥', '≤', '⌠', '⌡', '÷', '≈', '°', '∙', '·', '√', 'ⁿ', '²', '■', '\u{a0}',
];

/// The character byte `b` shows on a text screen.
pub fn to_char(b: u8) -> char {
    match b {
        0x00..=0x1F => LOW[b as usize],
        0x7F => '⌂',
        0x80..=0xFF => HIGH[(b - 0x80) as usize],
        _ => b as char,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_map_to_what_the_screen_shows() {
        assert_eq!(to_char(b'A'), 'A');
        assert_eq!(to_char(0x01), '☺');
        assert_eq!(to_char(0xC9), '╔');
        assert_eq!(to_char(0xCD), '═');
        assert_eq!(to_char(0xDB), '█');
        assert_eq!(to_char(0xE3), 'π');
        assert_eq!(to_char(0x00), ' ');
    }
}
