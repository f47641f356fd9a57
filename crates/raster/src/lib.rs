//! A small RGB raster for plugins that draw: lines, rectangles, text in the
//! public-domain 8×8 bitmap font of `font8x8`, and PNG encoding. It needs
//! no system fonts and runs unchanged inside a component (log-query's
//! plots, the emulators' screens).

/// An RGB colour.
pub type Rgb = [u8; 3];

/// An RGB raster, 3 bytes per pixel, rows top to bottom.
pub struct Canvas {
    w: usize,
    h: usize,
    px: Vec<u8>,
}

impl std::fmt::Debug for Canvas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Canvas({}x{})", self.w, self.h)
    }
}

impl Canvas {
    /// A white canvas of `w`×`h` pixels.
    pub fn new(w: usize, h: usize) -> Self {
        Self::filled(w, h, [255; 3])
    }

    /// A canvas of `w`×`h` pixels, all `c`.
    pub fn filled(w: usize, h: usize, c: Rgb) -> Self {
        let mut px = Vec::with_capacity(w * h * 3);
        for _ in 0..w * h {
            px.extend_from_slice(&c);
        }
        Canvas { w, h, px }
    }

    /// Width in pixels.
    pub fn width(&self) -> usize {
        self.w
    }

    /// Height in pixels.
    pub fn height(&self) -> usize {
        self.h
    }

    /// The pixel at (`x`, `y`), if inside.
    pub fn get(&self, x: usize, y: usize) -> Option<Rgb> {
        (x < self.w && y < self.h).then(|| {
            let i = (y * self.w + x) * 3;
            [self.px[i], self.px[i + 1], self.px[i + 2]]
        })
    }

    /// Sets one pixel; outside the canvas, nothing.
    #[inline]
    pub fn set(&mut self, x: isize, y: isize, c: Rgb) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            let i = (y as usize * self.w + x as usize) * 3;
            self.px[i..i + 3].copy_from_slice(&c);
        }
    }

    /// A horizontal line from `x0` to `x1` inclusive.
    pub fn hline(&mut self, x0: usize, x1: usize, y: usize, c: Rgb) {
        for x in x0..=x1 {
            self.set(x as isize, y as isize, c);
        }
    }

    /// A vertical line from `y0` to `y1` inclusive.
    pub fn vline(&mut self, x: usize, y0: usize, y1: usize, c: Rgb) {
        for y in y0..=y1 {
            self.set(x as isize, y as isize, c);
        }
    }

    /// A rectangle's outline, corners inclusive.
    pub fn rect(&mut self, x0: usize, y0: usize, x1: usize, y1: usize, c: Rgb) {
        self.hline(x0, x1, y0, c);
        self.hline(x0, x1, y1, c);
        self.vline(x0, y0, y1, c);
        self.vline(x1, y0, y1, c);
    }

    /// A filled rectangle, corners inclusive.
    pub fn fill(&mut self, x0: usize, y0: usize, x1: usize, y1: usize, c: Rgb) {
        for y in y0..=y1 {
            self.hline(x0, x1, y, c);
        }
    }

    /// Bresenham, two pixels thick so a trace reads well at 1:1.
    pub fn line(&mut self, x0: isize, y0: isize, x1: isize, y1: isize, c: Rgb) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y, c);
            self.set(x + 1, y, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// `s` at (`x`, `y`) in colour `c`, each font pixel `scale` pixels
    /// square; characters the font lacks are drawn as `?`.
    pub fn text(&mut self, x: usize, y: usize, s: &str, c: Rgb, scale: usize) {
        for (k, ch) in s.chars().enumerate() {
            let glyph = glyph(ch).unwrap_or_else(|| glyph('?').expect("ASCII is in the font"));
            self.glyph(x + k * 8 * scale, y, &glyph, c, (scale, scale));
        }
    }

    /// The set bits of `glyph` (row by row, least significant bit
    /// leftmost) at (`x`, `y`), each font pixel `sx`×`sy` pixels.
    pub fn glyph(&mut self, x: usize, y: usize, glyph: &[u8; 8], c: Rgb, (sx, sy): (usize, usize)) {
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..8 {
                if bits >> col & 1 == 1 {
                    for dy in 0..sy {
                        for dx in 0..sx {
                            self.set(
                                (x + col * sx + dx) as isize,
                                (y + row * sy + dy) as isize,
                                c,
                            );
                        }
                    }
                }
            }
        }
    }

    /// The canvas as a PNG (8-bit RGB).
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        let failed = |e: png::EncodingError| format!("PNG encoding failed: {e}");
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.w as u32, self.h as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            // fdeflate's PNG-tuned mode: screens and plots are flat colour,
            // which it packs about as well as the balanced mode, in a
            // fraction of the time.
            enc.set_compression(png::Compression::Fast);
            let mut writer = enc.write_header().map_err(failed)?;
            writer.write_image_data(&self.px).map_err(failed)?;
        }
        Ok(out)
    }
}

/// The 8×8 bitmap of `ch` in `font8x8` (ASCII, Latin-1, box drawing,
/// blocks, Greek and a few symbols), rows top to bottom, least
/// significant bit leftmost; none when the font lacks it.
pub fn glyph(ch: char) -> Option<[u8; 8]> {
    use font8x8::legacy::{
        BASIC_LEGACY, BLOCK_LEGACY, BOX_LEGACY, GREEK_LEGACY, LATIN_LEGACY, MISC_LEGACY,
    };
    let c = ch as usize;
    let lookup = |table: &[[u8; 8]], first: usize| table.get(c.checked_sub(first)?).copied();
    match c {
        0..=0x7F => lookup(&BASIC_LEGACY, 0),
        0xA0..=0xFF => lookup(&LATIN_LEGACY, 0xA0),
        0x2500..=0x257F => lookup(&BOX_LEGACY, 0x2500),
        0x2580..=0x259F => lookup(&BLOCK_LEGACY, 0x2580),
        0x390..=0x3C9 => lookup(&GREEK_LEGACY, 0x390),
        0x20A7 => Some(MISC_LEGACY[0]),
        0x192 => Some(MISC_LEGACY[1]),
        0x2310 => Some(MISC_LEGACY[4]),
        0x2264 => Some(MISC_LEGACY[5]),
        0x2265 => Some(MISC_LEGACY[6]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawing_and_encoding_round_trip() {
        let mut c = Canvas::filled(16, 8, [0, 0, 0]);
        c.text(0, 0, "A", [255, 255, 255], 1);
        c.fill(8, 0, 15, 7, [10, 20, 30]);
        assert_eq!(c.get(12, 4), Some([10, 20, 30]));
        assert_eq!(c.get(16, 0), None);
        let png = c.encode().unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (16, 8));
        // The top-left pixel of "A" in font8x8 is off; its second row's
        // middle is on.
        let lit: usize = (0..8)
            .flat_map(|y| (0..8).map(move |x| (x, y)))
            .filter(|&(x, y)| buf[(y * 16 + x) * 3] == 255)
            .count();
        assert!(lit > 10, "{lit}");
    }

    #[test]
    fn glyphs_cover_ascii_boxes_and_blocks() {
        assert!(glyph('A').is_some());
        assert!(glyph('═').is_some());
        assert_eq!(glyph('█'), Some([0xFF; 8]));
        assert!(glyph('é').is_some());
        assert!(glyph('π').is_some());
        assert_eq!(glyph('☃'), None);
    }
}
