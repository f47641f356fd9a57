//! The STIC's picture (AY-3-8900, the Intellivision's video chip): what the
//! screen shows for a machine's memory, as palette indices and as the PNG
//! an agent sees.
//!
//! Drawn from the registers and memory the STIC reads each frame:
//!
//! - **BACKTAB** ($0200-$02EF): 20×12 cards of 8×8 pixels. In colour-stack
//!   mode (selected by reading $0021) a card is a GROM or GRAM picture in
//!   its own foreground colour on the colour stack's current colour
//!   ($0028-$002B), which bit 13 advances; bits 12:11 = 10 make a
//!   coloured-squares card (four 4×4 squares, colour 7 meaning the stack's).
//!   In foreground/background mode (selected by writing $0021) each card
//!   carries both colours and picks among 64 cards.
//! - **GRAM** ($3800-$39FF, 64 cards written by the program) and **GROM**
//!   ($3000-$37FF, 256 cards in ROM). The GROM is Mattel's and copyrighted:
//!   it is drawn only from the user's own image (`grom_path`); without it
//!   cards 0-94 are drawn from a public-domain stand-in font as the ASCII
//!   characters they hold (card `n` is character `n + 32`) and the rest as
//!   hatched boxes, and the caption says so.
//! - **MOBs** ($0000-$0017): eight moving objects, each a GRAM or GROM card
//!   (two, one above the other, when 16 rows tall), 1× or 2× wide, ½× to
//!   4× tall, mirrored either way; MOB 0 is in front of MOB 7, and a MOB
//!   with its priority bit set passes behind the cards' foreground pixels.
//! - The **border** colour ($002C), the scroll delays ($0030, $0031, 0-7
//!   pixels) and the border extension ($0032: the left column, the top
//!   row).
//!
//! The picture is 176 pixels by 112 rows (the 160×96 display inside an
//! 8-pixel border) at twice the vertical resolution, as MOBs may be
//! positioned and sized in half rows: 176×224 cells.
//! Not drawn: collisions (registers the program reads), and the display
//! enable's blanking, which the caption reports instead.

use crate::memory::Memory;

/// The Intellivision's 16 colours (jzIntv's palette), by STIC number.
pub const PALETTE: [[u8; 3]; 16] = [
    [0x00, 0x00, 0x00], // 0 black
    [0x00, 0x2D, 0xFF], // 1 blue
    [0xFF, 0x3D, 0x10], // 2 red
    [0xC9, 0xCF, 0xAB], // 3 tan
    [0x38, 0x6B, 0x3F], // 4 dark green
    [0x00, 0xA7, 0x56], // 5 green
    [0xFA, 0xEA, 0x50], // 6 yellow
    [0xFF, 0xFC, 0xFF], // 7 white
    [0xBD, 0xAC, 0xC8], // 8 grey
    [0x24, 0xB8, 0xFF], // 9 cyan
    [0xFF, 0xB4, 0x1F], // 10 orange
    [0x54, 0x6E, 0x00], // 11 brown
    [0xFF, 0x4E, 0x57], // 12 pink
    [0xA4, 0x96, 0xFF], // 13 light blue
    [0x75, 0xCC, 0x80], // 14 yellow-green
    [0xB5, 0x1A, 0x58], // 15 purple
];

/// The colours' names, for captions.
pub const COLOUR_NAMES: [&str; 16] = [
    "black",
    "blue",
    "red",
    "tan",
    "dark green",
    "green",
    "yellow",
    "white",
    "grey",
    "cyan",
    "orange",
    "brown",
    "pink",
    "light blue",
    "yellow-green",
    "purple",
];

/// Picture width in pixels: the display and its border.
pub const WIDTH: usize = 8 + 160 + 8;
/// Picture height in half rows: the display and its border, twice.
pub const HEIGHT: usize = 2 * (8 + 96 + 8);
/// BACKTAB's first word.
pub const BACKTAB: u16 = 0x0200;
/// GROM's first word.
pub const GROM: u16 = 0x3000;
/// GRAM's first word.
pub const GRAM: u16 = 0x3800;
/// PNG pixels per picture pixel across and per half row down.
const SCALE: (usize, usize) = (4, 2);

/// How BACKTAB is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Colour stack (the power-on mode; reading $0021 selects it).
    ColourStack,
    /// Foreground/background (writing $0021 selects it).
    ForegroundBackground,
}

/// One MOB as drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mob {
    /// 0-7.
    pub index: u8,
    /// X and Y registers' coordinates (8, 8 is the display's top left).
    pub x: u8,
    /// See `x`.
    pub y: u8,
    /// The card drawn (the first of two when 16 rows tall).
    pub card: u16,
    /// From GRAM (else GROM).
    pub gram: bool,
    /// Colour number.
    pub colour: u8,
    /// Width and height in picture pixels.
    pub size: (u8, u8),
    /// Behind the cards' foreground.
    pub behind: bool,
}

/// The picture and what it shows.
#[derive(Clone, Debug)]
pub struct Picture {
    /// Palette indices, [`WIDTH`] × [`HEIGHT`] (half rows).
    pub cells: Vec<u8>,
    /// How BACKTAB was read.
    pub mode: Mode,
    /// Border colour.
    pub border: u8,
    /// The GROM was the user's image (else the stand-in).
    pub grom_loaded: bool,
    /// Cards on screen drawn from GRAM and from GROM.
    pub cards: (usize, usize),
    /// Visible MOBs, 0 first.
    pub mobs: Vec<Mob>,
}

impl Picture {
    /// The palette index at picture pixel `x` and half row `y`.
    pub fn at(&self, x: usize, y: usize) -> u8 {
        self.cells[y * WIDTH + x]
    }

    /// The picture as a PNG, each pixel 4 wide and each half row 2 high
    /// (704×448).
    pub fn png(&self) -> Result<Vec<u8>, String> {
        let (sx, sy) = SCALE;
        let mut canvas = raster::Canvas::filled(WIDTH * sx, HEIGHT * sy, [0; 3]);
        for y in 0..HEIGHT {
            for x in 0..WIDTH {
                let c = PALETTE[self.at(x, y) as usize];
                canvas.fill(x * sx, y * sy, x * sx + sx - 1, y * sy + sy - 1, c);
            }
        }
        canvas.encode()
    }
}

/// An 8×8 card's rows (bit 7 leftmost): from GRAM, from the user's GROM,
/// or the stand-in when there is no GROM.
fn card_rows(mem: &Memory, gram: bool, card: u16, grom_loaded: bool) -> [u8; 8] {
    let base = match (gram, grom_loaded) {
        (true, _) => GRAM + (card & 0x3F) * 8,
        (false, true) => GROM + (card & 0xFF) * 8,
        (false, false) => return stand_in(card & 0xFF),
    };
    std::array::from_fn(|r| mem.read(base + r as u16) as u8)
}

/// A GROM card without the GROM: the ASCII character it holds, from the
/// public-domain font, else a hatched box.
fn stand_in(card: u16) -> [u8; 8] {
    let glyph = (card < 95)
        .then(|| char::from_u32(u32::from(card) + 32))
        .flatten()
        .and_then(raster::glyph);
    match glyph {
        // The font puts its leftmost pixel in bit 0, the STIC in bit 7.
        Some(g) => g.map(u8::reverse_bits),
        None => [0xFF, 0x81, 0xA5, 0x99, 0x99, 0xA5, 0x81, 0xFF],
    }
}

/// The picture the STIC shows for `mem` in `mode`.
pub fn render(mem: &Memory, mode: Mode) -> Picture {
    let reg = |r: u16| mem.read(r);
    let border = (reg(0x2C) & 0xF) as u8;
    let stack: [u8; 4] = std::array::from_fn(|i| (reg(0x28 + i as u16) & 0xF) as u8);
    let (hdelay, vdelay) = ((reg(0x30) & 7) as usize, (reg(0x31) & 7) as usize);
    let extend = reg(0x32);
    let grom_loaded = mem.region(GROM) != crate::memory::Region::Unmapped;
    let mut cells = vec![border; WIDTH * HEIGHT];
    // Which cells hold a card's foreground (MOBs with priority pass behind).
    let mut fore = vec![false; WIDTH * HEIGHT];
    let (mut from_gram, mut from_grom) = (0, 0);
    // The display's area, less the border's extensions.
    let left = if extend & 1 != 0 { 16 } else { 8 };
    let top = if extend & 2 != 0 { 2 * 16 } else { 2 * 8 };
    let (right, bottom) = (8 + 160, 2 * (8 + 96));
    let visible = |x: usize, y: usize| (left..right).contains(&x) && (top..bottom).contains(&y);
    let mut put = |cells: &mut Vec<u8>, x: usize, y: usize, c: u8, fg: bool| {
        if visible(x, y) {
            cells[y * WIDTH + x] = c;
            fore[y * WIDTH + x] = fg;
        }
    };
    let mut top_of_stack = 0usize;
    for i in 0..240u16 {
        let w = mem.read(BACKTAB + i);
        let (cx, cy) = ((i % 20) as usize, (i / 20) as usize);
        let x0 = 8 + cx * 8 + hdelay;
        let y0 = 8 + cy * 8 + vdelay;
        let squares = mode == Mode::ColourStack && w & 0x1800 == 0x1000;
        if mode == Mode::ColourStack && !squares && w & 0x2000 != 0 {
            top_of_stack = (top_of_stack + 1) & 3;
        }
        let bg_stack = stack[top_of_stack];
        if squares {
            let colours = [
                w & 7,
                (w >> 3) & 7,
                (w >> 6) & 7,
                ((w >> 9) & 3) | ((w >> 11) & 4),
            ];
            for (q, &c) in colours.iter().enumerate() {
                let (c, fg) = if c == 7 {
                    (bg_stack, false)
                } else {
                    (c as u8, true)
                };
                for py in 0..4 {
                    for px in 0..4 {
                        let (x, y) = (x0 + (q % 2) * 4 + px, y0 + (q / 2) * 4 + py);
                        put(&mut cells, x, 2 * y, c, fg);
                        put(&mut cells, x, 2 * y + 1, c, fg);
                    }
                }
            }
            continue;
        }
        let gram = w & 0x0800 != 0;
        let (card, fg, bg) = match mode {
            Mode::ColourStack => {
                let card = if gram {
                    (w >> 3) & 0x3F
                } else {
                    (w >> 3) & 0xFF
                };
                (card, ((w & 7) | ((w >> 9) & 8)) as u8, bg_stack)
            }
            Mode::ForegroundBackground => (
                (w >> 3) & 0x3F,
                (w & 7) as u8,
                (((w >> 9) & 3) | ((w >> 10) & 4) | ((w >> 10) & 8)) as u8,
            ),
        };
        if gram {
            from_gram += 1;
        } else {
            from_grom += 1;
        }
        let rows = card_rows(mem, gram, card, grom_loaded);
        for (py, row) in rows.iter().enumerate() {
            for px in 0..8 {
                let on = row & (0x80 >> px) != 0;
                let (x, y) = (x0 + px, y0 + py);
                let c = if on { fg } else { bg };
                put(&mut cells, x, 2 * y, c, on);
                put(&mut cells, x, 2 * y + 1, c, on);
            }
        }
    }

    // MOBs: the lowest-numbered MOB with a pixel at a cell decides it.
    let mut claimed = vec![false; WIDTH * HEIGHT];
    let mut mobs = Vec::new();
    for n in 0..8u16 {
        let (xr, yr, ar) = (reg(n), reg(0x08 + n), reg(0x10 + n));
        if xr & 0x0200 == 0 {
            continue; // not visible
        }
        let x = (xr & 0xFF) as usize;
        let y = (yr & 0x7F) as usize;
        let tall = yr & 0x80 != 0;
        let half_rows_per_row = 1usize << ((yr >> 8) & 3);
        let (xflip, yflip) = (yr & 0x0400 != 0, yr & 0x0800 != 0);
        let wide = xr & 0x0400 != 0;
        let gram = ar & 0x0800 != 0;
        let card = if gram {
            (ar >> 3) & 0x3F
        } else {
            (ar >> 3) & 0xFF
        };
        let card = if tall { card & !1 } else { card };
        let colour = ((ar & 7) | ((ar >> 9) & 8)) as u8;
        let behind = ar & 0x2000 != 0;
        let mut rows: Vec<u8> = card_rows(mem, gram, card, grom_loaded).to_vec();
        if tall {
            rows.extend_from_slice(&card_rows(mem, gram, card + 1, grom_loaded));
        }
        if yflip {
            rows.reverse();
        }
        let px_w = if wide { 2 } else { 1 };
        for (r, row) in rows.iter().enumerate() {
            for px in 0..8 {
                let bit = if xflip { px } else { 7 - px };
                if row >> bit & 1 == 0 {
                    continue;
                }
                for dx in 0..px_w {
                    for dy in 0..half_rows_per_row {
                        let cx = x + hdelay + px * px_w + dx;
                        let cy = 2 * (y + vdelay) + r * half_rows_per_row + dy;
                        if cx >= WIDTH || cy >= HEIGHT || !visible(cx, cy) {
                            continue;
                        }
                        let at = cy * WIDTH + cx;
                        if claimed[at] {
                            continue;
                        }
                        claimed[at] = true;
                        if !(behind && fore[at]) {
                            cells[at] = colour;
                        }
                    }
                }
            }
        }
        mobs.push(Mob {
            index: n as u8,
            x: x as u8,
            y: y as u8,
            card,
            gram,
            colour,
            size: (
                (8 * px_w) as u8,
                ((rows.len() * half_rows_per_row) / 2).max(1) as u8,
            ),
            behind,
        });
    }
    Picture {
        cells,
        mode,
        border,
        grom_loaded,
        cards: (from_gram, from_grom),
        mobs,
    }
}

/// One line on each thing the picture shows, for the caption an agent
/// reads beside the image.
pub fn caption(p: &Picture, display_enabled: bool) -> String {
    let mut s = format!(
        "STIC: {} mode, border {}; BACKTAB: {} cards from GRAM, {} from GROM\n",
        match p.mode {
            Mode::ColourStack => "colour-stack",
            Mode::ForegroundBackground => "foreground/background",
        },
        COLOUR_NAMES[p.border as usize],
        p.cards.0,
        p.cards.1
    );
    if !display_enabled {
        s.push_str("display: not enabled (a real Intellivision shows a blank screen until the program writes $0020 in its VBLANK handler); drawn anyway\n");
    }
    if !p.grom_loaded && p.cards.1 + p.mobs.iter().filter(|m| !m.gram).count() > 0 {
        s.push_str("GROM: not loaded (it is Mattel's; pass your own image as grom_path to cp1600_load_rom): its cards are drawn as stand-ins, cards 0-94 as the ASCII characters they hold, others as hatched boxes\n");
    }
    if p.mobs.is_empty() {
        s.push_str("MOBs: none visible\n");
    } else {
        for m in &p.mobs {
            s.push_str(&format!(
                "MOB {}: at ({}, {}), {} card {}, {}, {}×{} px{}\n",
                m.index,
                m.x,
                m.y,
                if m.gram { "GRAM" } else { "GROM" },
                m.card,
                COLOUR_NAMES[m.colour as usize],
                m.size.0,
                m.size.1,
                if m.behind { ", behind the cards" } else { "" }
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory as a program leaves it after setting the STIC up: MOBs,
    /// delays, border extension, colour stack and border 0 (the registers
    /// power up all ones), then `words`.
    fn memory(words: &[(u16, u16)]) -> Memory {
        let mut m = Memory::new();
        let setup: Vec<(u16, u16)> = (0..0x18)
            .chain([0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x30, 0x31, 0x32])
            .map(|a| (a, 0))
            .collect();
        for &(a, v) in setup.iter().chain(words) {
            assert!(m.poke(a, v), "{a:#06x} is mapped");
        }
        m
    }

    /// Display pixel (`x`, `y`)'s top half row.
    fn px(p: &Picture, x: usize, y: usize) -> u8 {
        p.at(8 + x, 2 * (8 + y))
    }

    #[test]
    fn foreground_background_cards_carry_both_colours() {
        // GRAM card 1 all on in its top row; card 0 white on purple
        // (background bits 9, 10, 12, 13 all set), card 1 black on cyan
        // (bits 9 and 13: colour 0b1001).
        let m = memory(&[
            (0x3808, 0xFF),
            (0x0200, 7 | 0x0600 | 0x3000),
            (0x0201, 0x0800 | (1 << 3) | 0x0200 | 0x2000),
        ]);
        let p = render(&m, Mode::ForegroundBackground);
        assert_eq!(px(&p, 0, 0), 15, "card 0: GROM card 0 (space) on purple");
        assert_eq!(px(&p, 8, 0), 0, "card 1's top row: black foreground");
        assert_eq!(px(&p, 8, 1), 9, "card 1's other rows: cyan");
        // The same words in colour-stack mode mean other things.
        let p = render(&m, Mode::ColourStack);
        assert_ne!(px(&p, 8, 1), 9);
    }

    #[test]
    fn mobs_flip_stretch_and_the_lower_number_wins() {
        // GRAM card 0: only the top-left pixel on.
        let mut words = vec![(0x3800, 0x80)];
        // MOB 1: at (20, 20), ×4 tall (YSIZE 10: 4 half rows a row),
        // flipped both ways, red.
        words.extend([
            (0x0001, 0x0200 | 20),
            (0x0009, 0x0200 | 0x0C00 | 20),
            (0x0011, 0x0800 | 2),
        ]);
        // MOB 0 at the same place, blue, unflipped: wins where both draw.
        words.extend([
            (0x0000, 0x0200 | 20),
            (0x0008, 0x0200 | 20),
            (0x0010, 0x0800 | 1),
        ]);
        let p = render(&memory(&words), Mode::ColourStack);
        // MOB 0's pixel at its top left, 4 half rows.
        assert!((0..4).all(|dy| p.at(20, 40 + dy) == 1));
        // MOB 1 flipped: its pixel at the bottom right, rows 28-31 of 32.
        assert!(
            (0..4).all(|dy| p.at(27, 40 + 28 + dy) == 2),
            "{:?}",
            (0..8).map(|dy| p.at(27, 60 + dy)).collect::<Vec<_>>()
        );
        assert_eq!(p.mobs.len(), 2);
        assert_eq!(p.mobs[1].size, (8, 16));
    }

    #[test]
    fn delays_and_the_border_extension_move_and_mask_the_cards() {
        // Card 0 from GRAM card 0 (all rows on) in white; delays 3 and 2.
        let mut words: Vec<(u16, u16)> = (0..8).map(|r| (0x3800 + r, 0xFF)).collect();
        words.extend([(0x0200, 0x0800 | 7), (0x0030, 3), (0x0031, 2)]);
        let p = render(&memory(&words), Mode::ColourStack);
        assert_eq!(px(&p, 3, 2), 7, "moved right 3 and down 2");
        assert_eq!(px(&p, 2, 2), 0, "the background left of it");
        // Extending the left border hides the first column of cards.
        words.push((0x0032, 1));
        let p = render(&memory(&words), Mode::ColourStack);
        assert_eq!(px(&p, 3, 2), p.border);
        assert_eq!(px(&p, 8, 2), 7, "the card's last column shows");
    }
}
