//! The screen: video memory laid out as the BIOS lays it out, INT 10h, the
//! VGA DAC and status ports, and a screenshot of what the monitor shows.
//!
//! Video memory is ordinary memory of the machine (text at B800h, or B000h
//! in mode 7; CGA graphics at B800h; VGA mode 13h at A000h) and the BIOS
//! state lives in the BIOS data area (mode at 0449h, cursors at 0450h), so
//! snapshots carry both. The DAC (256 colours) is the one piece of state
//! outside memory: it lives in the CPU's [`crate::ports::Ports`].
//!
//! Rendered: text modes 00h–03h and 07h, CGA 04h–06h and VGA 13h. Planar
//! EGA/VGA modes (0Dh–12h) are set but not drawn: a screenshot says so.

use crate::cpu::{AX, BP, BX, CX, Cpu, DX, ES};
use raster::{Canvas, Rgb};

/// BIOS data area fields (linear addresses).
const BDA_MODE: u32 = 0x449;
const BDA_COLUMNS: u32 = 0x44A;
const BDA_PAGE_SIZE: u32 = 0x44C;
const BDA_PAGE_START: u32 = 0x44E;
const BDA_CURSORS: u32 = 0x450;
const BDA_CURSOR_SHAPE: u32 = 0x460;
const BDA_PAGE: u32 = 0x462;
const BDA_ROWS: u32 = 0x484;
const BDA_CHAR_HEIGHT: u32 = 0x485;

/// Every screenshot is this size: text cells are 8×16 (16×16 in 40-column
/// modes), 200-line graphics modes are doubled.
pub const SHOT_WIDTH: usize = 640;
/// See [`SHOT_WIDTH`].
pub const SHOT_HEIGHT: usize = 400;

/// How a video mode lays its picture out in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Character and attribute pairs at `segment`.
    Text {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
        /// Segment of page 0.
        segment: u16,
    },
    /// 320×200, 2 bits a pixel, even lines at B800:0000, odd at B800:2000.
    Cga4,
    /// 640×200, 1 bit a pixel, interlaced as [`Layout::Cga4`].
    Cga2,
    /// 320×200, one byte a pixel (a DAC index) at A000:0000.
    Vga256,
    /// A mode this emulator sets but does not draw (EGA/VGA planar).
    Planar,
}

/// The layout of mode `mode`.
pub fn layout(mode: u8) -> Layout {
    match mode {
        0x00 | 0x01 => Layout::Text {
            cols: 40,
            rows: 25,
            segment: 0xB800,
        },
        0x02 | 0x03 => Layout::Text {
            cols: 80,
            rows: 25,
            segment: 0xB800,
        },
        0x07 => Layout::Text {
            cols: 80,
            rows: 25,
            segment: 0xB000,
        },
        0x04 | 0x05 => Layout::Cga4,
        0x06 => Layout::Cga2,
        0x13 => Layout::Vga256,
        _ => Layout::Planar,
    }
}

/// The current video mode (BIOS data area).
pub fn mode(cpu: &Cpu) -> u8 {
    cpu.rb(BDA_MODE) & 0x7F
}

/// The BIOS's cursor of `page`: (row, column).
pub fn cursor(cpu: &Cpu, page: u8) -> (u8, u8) {
    let at = BDA_CURSORS + 2 * u32::from(page & 7);
    (cpu.rb(at + 1), cpu.rb(at))
}

fn set_cursor(cpu: &mut Cpu, page: u8, (row, col): (u8, u8)) {
    let at = BDA_CURSORS + 2 * u32::from(page & 7);
    cpu.wb(at, col);
    cpu.wb(at + 1, row);
}

fn word(cpu: &Cpu, at: u32) -> u16 {
    u16::from(cpu.rb(at)) | u16::from(cpu.rb(at + 1)) << 8
}

fn set_word(cpu: &mut Cpu, at: u32, v: u16) {
    cpu.wb(at, v as u8);
    cpu.wb(at + 1, (v >> 8) as u8);
}

/// Sets mode `mode` as INT 10h AH=00h does: the BIOS data area, the DAC,
/// and (unless bit 7 of `mode` is set) cleared video memory.
pub fn set_mode(cpu: &mut Cpu, mode: u8) {
    let keep = mode & 0x80 != 0;
    let mode = mode & 0x7F;
    cpu.wb(BDA_MODE, mode);
    let (cols, page_size) = match layout(mode) {
        Layout::Text { cols, .. } => (cols, if cols == 40 { 0x800 } else { 0x1000 }),
        Layout::Cga2 => (80, 0x4000),
        Layout::Cga4 => (40, 0x4000),
        Layout::Vga256 => (40, 0),
        Layout::Planar => (80, 0),
    };
    set_word(cpu, BDA_COLUMNS, cols);
    set_word(cpu, BDA_PAGE_SIZE, page_size);
    set_word(cpu, BDA_PAGE_START, 0);
    for at in BDA_CURSORS..BDA_CURSORS + 16 {
        cpu.wb(at, 0);
    }
    set_word(cpu, BDA_CURSOR_SHAPE, 0x0607);
    cpu.wb(BDA_PAGE, 0);
    cpu.wb(BDA_ROWS, 24);
    let text = matches!(layout(mode), Layout::Text { .. });
    set_word(cpu, BDA_CHAR_HEIGHT, if text { 16 } else { 8 });
    if mode == 0x13 {
        cpu.io.load_vga_palette();
    } else {
        cpu.io.load_text_palette();
    }
    cpu.io.cga_select = 0x30;
    if keep {
        return;
    }
    match layout(mode) {
        Layout::Text { segment, .. } => blank_text(cpu, segment, 0x8000),
        Layout::Cga4 | Layout::Cga2 => fill(cpu, Cpu::lin(0xB800, 0), 0x4000),
        Layout::Vga256 | Layout::Planar => fill(cpu, Cpu::lin(0xA000, 0), 0x10000),
    }
}

/// The display as a PC hands it to DOS: mode 03h (80×25 colour text), the
/// first page blank (the other pages are left zero, as unused memory is:
/// a snapshot then carries one page of screen, not eight).
pub fn power_on(cpu: &mut Cpu) {
    set_mode(cpu, 0x83);
    blank_text(cpu, 0xB800, 4000);
}

/// Zeroes `len` bytes of video memory from linear `base` (below 1 MiB).
/// One slice fill: a program may set a mode in a loop.
fn fill(cpu: &mut Cpu, base: u32, len: u32) {
    let start = base as usize;
    cpu.mem[start..start + len as usize].fill(0);
}

/// Blanks `len` bytes of text memory at `segment`: spaces, attribute 07h.
fn blank_text(cpu: &mut Cpu, segment: u16, len: u32) {
    let start = Cpu::lin(segment, 0) as usize;
    for cell in cpu.mem[start..start + len as usize].chunks_exact_mut(2) {
        cell.copy_from_slice(&[b' ', 0x07]);
    }
}

/// Where text cell (row, col) of `page` is, in the current text mode.
fn cell_at(cpu: &Cpu, page: u8, row: u16, col: u16) -> Option<u32> {
    let Layout::Text { cols, segment, .. } = layout(mode(cpu)) else {
        return None;
    };
    let page_size = u32::from(word(cpu, BDA_PAGE_SIZE));
    let offset =
        u32::from(page & 7) * page_size + (u32::from(row) * u32::from(cols) + u32::from(col)) * 2;
    Some(Cpu::lin(segment, 0) + (offset & 0x7FFF))
}

/// Columns and rows of the current mode's text grid (graphics modes keep
/// an 8×8 character grid).
fn grid(cpu: &Cpu) -> (u16, u16) {
    match layout(mode(cpu)) {
        Layout::Text { cols, rows, .. } => (cols, rows),
        Layout::Cga2 => (80, 25),
        _ => (40, 25),
    }
}

/// Writes one pixel in a graphics mode (bit 7 of `color` XORs in the CGA
/// modes, as the BIOS does).
pub fn put_pixel(cpu: &mut Cpu, x: u16, y: u16, color: u8) {
    match layout(mode(cpu)) {
        Layout::Vga256 if x < 320 && y < 200 => {
            cpu.wb(
                Cpu::lin(0xA000, 0) + u32::from(y) * 320 + u32::from(x),
                color,
            );
        }
        Layout::Cga4 if x < 320 && y < 200 => {
            let at = cga_byte(x / 4, y);
            let shift = 6 - (x % 4) * 2;
            let old = cpu.rb(at);
            let bits = (color & 3) << shift;
            let new = if color & 0x80 != 0 {
                old ^ bits
            } else {
                old & !(3 << shift) | bits
            };
            cpu.wb(at, new);
        }
        Layout::Cga2 if x < 640 && y < 200 => {
            let at = cga_byte(x / 8, y);
            let bit = 0x80 >> (x % 8);
            let old = cpu.rb(at);
            let new = match (color & 0x80 != 0, color & 1 != 0) {
                (true, true) => old ^ bit,
                (true, false) => old,
                (false, true) => old | bit,
                (false, false) => old & !bit,
            };
            cpu.wb(at, new);
        }
        _ => {}
    }
}

/// Reads one pixel in a graphics mode.
pub fn get_pixel(cpu: &Cpu, x: u16, y: u16) -> u8 {
    match layout(mode(cpu)) {
        Layout::Vga256 if x < 320 && y < 200 => {
            cpu.rb(Cpu::lin(0xA000, 0) + u32::from(y) * 320 + u32::from(x))
        }
        Layout::Cga4 if x < 320 && y < 200 => cpu.rb(cga_byte(x / 4, y)) >> (6 - (x % 4) * 2) & 3,
        Layout::Cga2 if x < 640 && y < 200 => cpu.rb(cga_byte(x / 8, y)) >> (7 - x % 8) & 1,
        _ => 0,
    }
}

/// Where pixel line `y` of character columns `left..=right` lies in a
/// graphics mode's memory: (linear start, length), one run of bytes.
fn graphics_span(cpu: &Cpu, y: u16, left: u16, right: u16) -> Option<(usize, usize)> {
    let cols = right - left + 1;
    let (start, len) = match layout(mode(cpu)) {
        Layout::Vga256 if y < 200 => (
            Cpu::lin(0xA000, 0) + u32::from(y) * 320 + u32::from(left) * 8,
            cols * 8,
        ),
        Layout::Cga4 if y < 200 => (cga_byte(left * 2, y), cols * 2),
        Layout::Cga2 if y < 200 => (cga_byte(left, y), cols),
        _ => return None,
    };
    Some((start as usize, usize::from(len)))
}

/// The byte of CGA memory holding byte column `bx` of line `y`.
fn cga_byte(bx: u16, y: u16) -> u32 {
    Cpu::lin(0xB800, 0) + u32::from(y & 1) * 0x2000 + u32::from(y / 2) * 80 + u32::from(bx)
}

/// Draws character `ch` at text cell (row, col) in a graphics mode, in
/// `color`, with the 8×8 font.
fn draw_char(cpu: &mut Cpu, row: u16, col: u16, ch: u8, color: u8) {
    let glyph = glyph(ch);
    if layout(mode(cpu)) == Layout::Vga256 {
        // A byte a pixel: each glyph line is 8 bytes of memory.
        for (dy, bits) in glyph.iter().enumerate() {
            let Some((start, _)) = graphics_span(cpu, row * 8 + dy as u16, col, col) else {
                continue;
            };
            for dx in 0..8 {
                if bits >> dx & 1 == 1 {
                    cpu.mem[start + dx] = color;
                } else {
                    cpu.mem[start + dx] = 0;
                }
            }
        }
        return;
    }
    for (dy, bits) in glyph.iter().enumerate() {
        for dx in 0..8u16 {
            let on = bits >> dx & 1 == 1;
            let (x, y) = (col * 8 + dx, row * 8 + dy as u16);
            if on {
                put_pixel(cpu, x, y, color);
            } else if color & 0x80 == 0 {
                put_pixel(cpu, x, y, 0);
            }
        }
    }
}

/// The 8×8 bitmap of code page 437 character `ch` (a blank for the few the
/// font lacks).
fn glyph(ch: u8) -> [u8; 8] {
    raster::glyph(crate::cp437::to_char(ch)).unwrap_or([0; 8])
}

/// Writes `ch` (with `attr`, or the cell's own attribute when none) at
/// the cursor of `page`, `count` times, without moving the cursor.
fn write_chars(cpu: &mut Cpu, page: u8, ch: u8, attr: Option<u8>, count: u16, color: u8) {
    let (cols, rows) = grid(cpu);
    let (row, col) = cursor(cpu, page);
    let start = u32::from(row.min((rows - 1) as u8)) * u32::from(cols) + u32::from(col);
    let end = (start + u32::from(count)).min(u32::from(rows) * u32::from(cols));
    for n in start..end {
        let (r, c) = ((n / u32::from(cols)) as u16, (n % u32::from(cols)) as u16);
        match cell_at(cpu, page, r, c) {
            Some(at) => {
                cpu.wb(at, ch);
                if let Some(a) = attr {
                    cpu.wb(at + 1, a);
                }
            }
            None => draw_char(cpu, r, c, ch, color),
        }
    }
}

/// Scrolls the window (`top`, `left`)–(`bottom`, `right`) of the active
/// page up (or down) by `lines` (0: clear it), filling with `attr`.
fn scroll(
    cpu: &mut Cpu,
    up: bool,
    lines: u8,
    attr: u8,
    (top, left): (u8, u8),
    (bottom, right): (u8, u8),
) {
    let (cols, rows) = grid(cpu);
    let bottom = u16::from(bottom).min(rows - 1);
    let right = u16::from(right).min(cols - 1);
    let (top, left) = (u16::from(top), u16::from(left));
    if top > bottom || left > right {
        return;
    }
    let height = bottom - top + 1;
    let lines = if lines == 0 || u16::from(lines) > height {
        height
    } else {
        u16::from(lines)
    };
    let page = cpu.rb(BDA_PAGE);
    let text = cell_at(cpu, page, 0, 0).is_some();
    if text && left == 0 && right + 1 == cols {
        // Whole text rows are one run of memory: moved in one copy (a
        // program printing line after line scrolls on every one).
        let row_bytes = usize::from(cols) * 2;
        let start = cell_at(cpu, page, top, 0).expect("a text mode") as usize;
        let (kept, moved) = (usize::from(height - lines), usize::from(lines) * row_bytes);
        let (blank_from, blank_to) = if up {
            cpu.mem
                .copy_within(start + moved..start + moved + kept * row_bytes, start);
            (
                start + kept * row_bytes,
                start + usize::from(height) * row_bytes,
            )
        } else {
            cpu.mem
                .copy_within(start..start + kept * row_bytes, start + moved);
            (start, start + moved)
        };
        for cell in cpu.mem[blank_from..blank_to].chunks_exact_mut(2) {
            cell.copy_from_slice(&[b' ', attr]);
        }
        return;
    }
    let mode = mode(cpu);
    // A row of the window is one run of text memory, or 8 runs (its pixel
    // lines) of graphics memory: moved and filled a run at a time.
    let spans = |cpu: &Cpu, r: u16| -> Vec<(usize, usize)> {
        if text {
            let start = cell_at(cpu, page, r, left).expect("a text mode") as usize;
            vec![(start, usize::from(right - left + 1) * 2)]
        } else {
            (0..8)
                .filter_map(|dy| graphics_span(cpu, r * 8 + dy, left, right))
                .collect()
        }
    };
    let copy_row = |cpu: &mut Cpu, from: u16, to: u16| {
        for ((src, len), (dst, _)) in spans(cpu, from).into_iter().zip(spans(cpu, to)) {
            cpu.mem.copy_within(src..src + len, dst);
        }
    };
    let blank_row = |cpu: &mut Cpu, r: u16| {
        for (start, len) in spans(cpu, r) {
            let run = &mut cpu.mem[start..start + len];
            if text {
                for cell in run.chunks_exact_mut(2) {
                    cell.copy_from_slice(&[b' ', attr]);
                }
            } else {
                // The fill colour, repeated over a byte's pixels.
                run.fill(match layout(mode) {
                    Layout::Cga4 => (attr & 3) * 0x55,
                    Layout::Cga2 => (attr & 1) * 0xFF,
                    _ => attr,
                });
            }
        }
    };
    if up {
        for r in top..=bottom {
            if r + lines <= bottom {
                copy_row(cpu, r + lines, r);
            } else {
                blank_row(cpu, r);
            }
        }
    } else {
        for r in (top..=bottom).rev() {
            if r >= top + lines {
                copy_row(cpu, r - lines, r);
            } else {
                blank_row(cpu, r);
            }
        }
    }
}

/// Writes `bytes` at the active page's cursor as INT 10h AH=0Eh does:
/// bell, backspace, carriage return and line feed act; other characters
/// are written and the cursor advances, wrapping and scrolling. `color` is
/// the foreground in graphics modes.
pub fn teletype(cpu: &mut Cpu, bytes: &[u8], color: u8) {
    let (cols, rows) = grid(cpu);
    let page = cpu.rb(BDA_PAGE);
    // A text cell is stored directly: DOS console output lands here, and a
    // program may print a 64 KiB string in one call.
    let text = match layout(mode(cpu)) {
        Layout::Text { segment, .. } => Some((
            Cpu::lin(segment, 0) as usize,
            u32::from(page & 7) * u32::from(word(cpu, BDA_PAGE_SIZE)),
        )),
        _ => None,
    };
    let (row, col) = cursor(cpu, page);
    // AH=02h may have put the cursor anywhere (DH=255).
    let (mut row, mut col) = (u16::from(row).min(rows - 1), u16::from(col));
    let last = ((rows - 1) as u8, (cols - 1) as u8);
    for &b in bytes {
        let mut feed = false;
        match b {
            0x07 => {}
            0x08 => col = col.saturating_sub(1),
            b'\r' => col = 0,
            b'\n' => feed = true,
            _ => {
                match text {
                    Some((base, page_start)) => {
                        let cell = u32::from(row) * u32::from(cols) + u32::from(col);
                        let offset = (page_start + cell * 2) & 0x7FFF;
                        cpu.mem[base + offset as usize] = b;
                    }
                    // Past the last column (AH=02h, DL=255) nothing shows.
                    None if col < cols => draw_char(cpu, row, col, b, color),
                    None => {}
                }
                col += 1;
                if col >= cols {
                    col = 0;
                    feed = true;
                }
            }
        }
        if feed {
            if row + 1 >= rows {
                let blank = if text.is_some() { 0x07 } else { 0 };
                scroll(cpu, true, 1, blank, (0, 0), last);
            } else {
                row += 1;
            }
        }
    }
    set_cursor(cpu, page, (row as u8, col.min(255) as u8));
}

/// What one INT 10h call did that the DOS layer records.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Int10 {
    /// Characters the program printed (teletype and character writes), for
    /// the console's screen stream.
    pub printed: Vec<u8>,
    /// The function, when it is one this BIOS does not implement.
    pub unsupported: Option<String>,
}

/// Performs INT 10h (video BIOS) on `cpu`.
pub fn int10(cpu: &mut Cpu) -> Int10 {
    let mut out = Int10::default();
    let ax = cpu.regs[AX];
    let (ah, al) = ((ax >> 8) as u8, ax as u8);
    let (bh, bl) = ((cpu.regs[BX] >> 8) as u8, cpu.regs[BX] as u8);
    let (ch, cl) = ((cpu.regs[CX] >> 8) as u8, cpu.regs[CX] as u8);
    let (dh, dl) = ((cpu.regs[DX] >> 8) as u8, cpu.regs[DX] as u8);
    match ah {
        0x00 => set_mode(cpu, al),
        0x01 => set_word(cpu, BDA_CURSOR_SHAPE, cpu.regs[CX]),
        0x02 => set_cursor(cpu, bh, (dh, dl)),
        0x03 => {
            let (row, col) = cursor(cpu, bh);
            cpu.regs[DX] = u16::from(row) << 8 | u16::from(col);
            cpu.regs[CX] = word(cpu, BDA_CURSOR_SHAPE);
        }
        0x05 => {
            let page = al & 7;
            cpu.wb(BDA_PAGE, page);
            let start = u16::from(page) * word(cpu, BDA_PAGE_SIZE);
            set_word(cpu, BDA_PAGE_START, start);
        }
        0x06 | 0x07 => scroll(cpu, ah == 0x06, al, bh, (ch, cl), (dh, dl)),
        0x08 => {
            let (row, col) = cursor(cpu, bh);
            if let Some(at) = cell_at(cpu, bh, u16::from(row), u16::from(col)) {
                cpu.regs[AX] = u16::from(cpu.rb(at + 1)) << 8 | u16::from(cpu.rb(at));
            }
        }
        0x09 | 0x0A => {
            let attr = (ah == 0x09).then_some(bl);
            write_chars(cpu, bh, al, attr, cpu.regs[CX].min(2000), bl);
            out.printed
                .extend(std::iter::repeat_n(al, usize::from(cpu.regs[CX].min(2000))));
        }
        0x0B => {
            let select = cpu.io.cga_select;
            cpu.io.cga_select = match bh {
                0 => select & 0xE0 | bl & 0x1F,
                _ => select & !0x20 | (bl & 1) << 5,
            };
        }
        0x0C => put_pixel(cpu, cpu.regs[CX], cpu.regs[DX], al),
        0x0D => {
            let v = get_pixel(cpu, cpu.regs[CX], cpu.regs[DX]);
            cpu.regs[AX] = ax & 0xFF00 | u16::from(v);
        }
        0x0E => {
            teletype(cpu, &[al], bl);
            out.printed.push(al);
        }
        0x0F => {
            let cols = word(cpu, BDA_COLUMNS);
            cpu.regs[AX] = cols << 8 | u16::from(cpu.rb(BDA_MODE));
            cpu.regs[BX] = u16::from(cpu.rb(BDA_PAGE)) << 8 | u16::from(bl);
        }
        0x10 => palette(cpu, al),
        0x11 if al == 0x30 => {
            // Font information: character height and rows - 1.
            cpu.regs[CX] = word(cpu, BDA_CHAR_HEIGHT);
            cpu.regs[DX] = cpu.regs[DX] & 0xFF00 | u16::from(cpu.rb(BDA_ROWS));
        }
        0x11 => {}
        0x12 if bl == 0x10 => {
            // EGA information: colour, 256 KiB.
            cpu.regs[BX] = 0x0003;
            cpu.regs[CX] = 0x0009;
        }
        0x12 => {}
        0x13 => {
            write_string(cpu, &mut out);
        }
        0x1A if al == 0x00 => {
            // Display combination: VGA with a colour monitor.
            cpu.regs[AX] = ax & 0xFF00 | 0x1A;
            cpu.regs[BX] = 0x0008;
        }
        _ => out.unsupported = Some(format!("INT 10h AH={ah:02X}h")),
    }
    out
}

/// INT 10h AH=10h: the DAC registers one or a block at a time.
fn palette(cpu: &mut Cpu, al: u8) {
    let bx = usize::from(cpu.regs[BX] & 0xFF);
    match al {
        0x10 => {
            let [r, g, b] = [
                (cpu.regs[DX] >> 8) as u8,
                (cpu.regs[CX] >> 8) as u8,
                cpu.regs[CX] as u8,
            ];
            cpu.io.dac[bx] = [r & 0x3F, g & 0x3F, b & 0x3F];
        }
        0x12 | 0x17 => {
            let count = usize::from(cpu.regs[CX]).min(256 - bx);
            let (es, dx) = (cpu.sregs[ES], cpu.regs[DX]);
            for i in 0..count {
                for k in 0..3 {
                    let at = Cpu::lin(es, dx.wrapping_add((i * 3 + k) as u16));
                    if al == 0x12 {
                        cpu.io.dac[bx + i][k] = cpu.rb(at) & 0x3F;
                    } else {
                        let v = cpu.io.dac[bx + i][k];
                        cpu.wb(at, v);
                    }
                }
            }
        }
        0x15 => {
            let [r, g, b] = cpu.io.dac[bx];
            cpu.regs[DX] = cpu.regs[DX] & 0x00FF | u16::from(r) << 8;
            cpu.regs[CX] = u16::from(g) << 8 | u16::from(b);
        }
        _ => {}
    }
}

/// INT 10h AH=13h: a string from ES:BP at (DH, DL) of page BH, with
/// attribute BL or its own (AL bit 1), moving the cursor when AL bit 0 is
/// set.
fn write_string(cpu: &mut Cpu, out: &mut Int10) {
    let al = cpu.regs[AX] as u8;
    let (page, attr) = ((cpu.regs[BX] >> 8) as u8, cpu.regs[BX] as u8);
    let len = usize::from(cpu.regs[CX]).min(4000);
    let (es, bp) = (cpu.sregs[ES], cpu.regs[BP]);
    let saved = cursor(cpu, page);
    set_cursor(cpu, page, ((cpu.regs[DX] >> 8) as u8, cpu.regs[DX] as u8));
    let with_attrs = al & 2 != 0;
    let step = if with_attrs { 2 } else { 1 };
    for i in 0..len {
        let at = Cpu::lin(es, bp.wrapping_add((i * step) as u16));
        let ch = cpu.rb(at);
        let a = if with_attrs { cpu.rb(at + 1) } else { attr };
        if matches!(ch, 0x07 | 0x08 | b'\r' | b'\n') {
            teletype(cpu, &[ch], a);
        } else {
            write_chars(cpu, page, ch, Some(a), 1, a);
            advance(cpu, page);
        }
        out.printed.push(ch);
    }
    if al & 1 == 0 {
        set_cursor(cpu, page, saved);
    }
}

/// Moves the cursor of `page` one cell on, wrapping and scrolling.
fn advance(cpu: &mut Cpu, page: u8) {
    let (cols, _) = grid(cpu);
    let (row, col) = cursor(cpu, page);
    if u16::from(col) + 1 >= cols {
        set_cursor(cpu, page, (row, 0));
        line_feed(cpu, page);
    } else {
        set_cursor(cpu, page, (row, col + 1));
    }
}

/// Moves the cursor of `page` down a row, scrolling the screen up at the
/// bottom (blank with attribute 07h in text, colour 0 in graphics).
fn line_feed(cpu: &mut Cpu, page: u8) {
    let (cols, rows) = grid(cpu);
    let (row, col) = cursor(cpu, page);
    if u16::from(row) + 1 >= rows {
        let blank = if cell_at(cpu, page, 0, 0).is_some() {
            0x07
        } else {
            0
        };
        let last = ((rows - 1) as u8, (cols - 1) as u8);
        scroll(cpu, true, 1, blank, (0, 0), last);
        set_cursor(cpu, page, (last.0, col));
    } else {
        set_cursor(cpu, page, (row + 1, col));
    }
}

/// A picture of the screen as the monitor shows it.
#[derive(Debug)]
pub struct Screenshot {
    /// The video mode.
    pub mode: u8,
    /// What the mode is, e.g. `80x25 text`.
    pub description: String,
    /// The picture, [`SHOT_WIDTH`]×[`SHOT_HEIGHT`]; none for modes not
    /// drawn.
    pub image: Option<Canvas>,
    /// In a text mode, the screen's text (lines with trailing blanks
    /// removed, trailing empty lines dropped).
    pub text: Option<String>,
    /// In a text mode, the cursor of the active page: (row, column).
    pub cursor: Option<(u8, u8)>,
}

/// An 8-bit colour from a 6-bit DAC entry.
fn rgb(c: [u8; 3]) -> Rgb {
    c.map(|v| (u16::from(v & 0x3F) * 255 / 63) as u8)
}

/// The DAC entries the 16 text attribute colours go through (the default
/// attribute controller palette).
const ATTRIBUTE_PALETTE: [usize; 16] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
];

/// The screen of `cpu` as the monitor shows it now.
pub fn screenshot(cpu: &Cpu) -> Screenshot {
    let mode = mode(cpu);
    let colour = |i: u8| rgb(cpu.io.dac[ATTRIBUTE_PALETTE[usize::from(i & 15)]]);
    match layout(mode) {
        Layout::Text { cols, rows, .. } => {
            let page = cpu.rb(BDA_PAGE);
            let mut canvas = Canvas::filled(SHOT_WIDTH, SHOT_HEIGHT, [0; 3]);
            let scale_x = SHOT_WIDTH / (usize::from(cols) * 8);
            let mut lines = Vec::with_capacity(usize::from(rows));
            for r in 0..rows {
                let mut line = String::with_capacity(usize::from(cols));
                for c in 0..cols {
                    let at = cell_at(cpu, page, r, c).expect("a text mode");
                    let (ch, attr) = (cpu.rb(at), cpu.rb(at + 1));
                    line.push(crate::cp437::to_char(ch));
                    let (x, y) = (usize::from(c) * 8 * scale_x, usize::from(r) * 16);
                    let (fg, bg) = if mode == 0x07 {
                        let on = if attr & 0x08 != 0 { [255; 3] } else { [170; 3] };
                        match attr & 0x77 {
                            0x00 => ([0; 3], [0; 3]),
                            0x70 => ([0; 3], [170; 3]),
                            _ => (on, [0; 3]),
                        }
                    } else {
                        (colour(attr & 0x0F), colour(attr >> 4 & 0x07))
                    };
                    canvas.fill(x, y, x + 8 * scale_x - 1, y + 15, bg);
                    canvas.glyph(x, y, &glyph(ch), fg, (scale_x, 2));
                }
                lines.push(line.trim_end().to_owned());
            }
            while lines.last().is_some_and(String::is_empty) {
                lines.pop();
            }
            let (row, col) = cursor(cpu, page);
            if row < rows as u8 && col < cols as u8 {
                // The cursor: an underline in the cell's colour.
                let at = cell_at(cpu, page, u16::from(row), u16::from(col)).expect("a text mode");
                let fg = colour(cpu.rb(at + 1) & 0x0F);
                let (x, y) = (usize::from(col) * 8 * scale_x, usize::from(row) * 16);
                canvas.fill(x, y + 13, x + 8 * scale_x - 1, y + 14, fg);
            }
            Screenshot {
                mode,
                description: format!("{cols}x{rows} text"),
                image: Some(canvas),
                text: Some(lines.join("\n")),
                cursor: Some((row, col)),
            }
        }
        Layout::Cga4 => {
            let select = cpu.io.cga_select;
            let base = if select & 0x20 != 0 {
                [3u8, 5, 7]
            } else {
                [2, 4, 6]
            };
            let bright = if select & 0x10 != 0 { 8 } else { 0 };
            let colours = [
                colour(select & 0x0F),
                colour(base[0] + bright),
                colour(base[1] + bright),
                colour(base[2] + bright),
            ];
            Screenshot {
                mode,
                description: "320x200 4-colour CGA graphics".into(),
                image: Some(draw(320, 200, |x, y| {
                    colours[usize::from(get_pixel(cpu, x, y))]
                })),
                text: None,
                cursor: None,
            }
        }
        Layout::Cga2 => Screenshot {
            mode,
            description: "640x200 2-colour CGA graphics".into(),
            image: Some(draw(640, 200, |x, y| {
                if get_pixel(cpu, x, y) == 1 {
                    colour(15)
                } else {
                    [0; 3]
                }
            })),
            text: None,
            cursor: None,
        },
        Layout::Vga256 => Screenshot {
            mode,
            description: "320x200 256-colour VGA graphics".into(),
            image: Some(draw(320, 200, |x, y| {
                rgb(cpu.io.dac[usize::from(get_pixel(cpu, x, y))])
            })),
            text: None,
            cursor: None,
        },
        Layout::Planar => Screenshot {
            mode,
            description: format!(
                "mode {mode:02X}h, an EGA/VGA planar mode this emulator does not draw"
            ),
            image: None,
            text: None,
            cursor: None,
        },
    }
}

/// A `w`×`h` picture scaled to the screenshot size.
fn draw(w: u16, h: u16, pixel: impl Fn(u16, u16) -> Rgb) -> Canvas {
    let (sx, sy) = (SHOT_WIDTH / usize::from(w), SHOT_HEIGHT / usize::from(h));
    let mut canvas = Canvas::filled(SHOT_WIDTH, SHOT_HEIGHT, [0; 3]);
    for y in 0..h {
        for x in 0..w {
            let c = pixel(x, y);
            let (px, py) = (usize::from(x) * sx, usize::from(y) * sy);
            canvas.fill(px, py, px + sx - 1, py + sy - 1, c);
        }
    }
    canvas
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Model;

    fn pc() -> Cpu {
        let mut cpu = Cpu::new(Model::I80186);
        power_on(&mut cpu);
        cpu
    }

    fn cell(cpu: &Cpu, row: u16, col: u16) -> (u8, u8) {
        let at = cell_at(cpu, 0, row, col).unwrap();
        (cpu.rb(at), cpu.rb(at + 1))
    }

    fn call(cpu: &mut Cpu, ax: u16, bx: u16, cx: u16, dx: u16) -> Int10 {
        cpu.regs[AX] = ax;
        cpu.regs[BX] = bx;
        cpu.regs[CX] = cx;
        cpu.regs[DX] = dx;
        int10(cpu)
    }

    #[test]
    fn teletype_writes_wraps_and_scrolls_the_text_screen() {
        let mut cpu = pc();
        teletype(&mut cpu, b"AB\r\nC", 7);
        assert_eq!(cell(&cpu, 0, 0), (b'A', 0x07));
        assert_eq!(cell(&cpu, 0, 1), (b'B', 0x07));
        assert_eq!(cell(&cpu, 1, 0), (b'C', 0x07));
        assert_eq!(cursor(&cpu, 0), (1, 1));
        // 25 more lines: the first ones scroll off the top.
        for n in 0..25 {
            teletype(&mut cpu, format!("\r\nline {n}").as_bytes(), 7);
        }
        assert_eq!(cell(&cpu, 24, 5), (b'2', 0x07));
        assert_eq!(cell(&cpu, 0, 5), (b'0', 0x07), "line 0 is now on top");
        assert_eq!(cursor(&cpu, 0), (24, 7));
        // A row past the screen (AH=02h, DH=255) is pulled back.
        call(&mut cpu, 0x0200, 0, 0, 0xFF00);
        call(&mut cpu, 0x0E0A, 0, 0, 0);
        assert_eq!(cursor(&cpu, 0).0, 24);
    }

    #[test]
    fn characters_attributes_and_windows_follow_the_bios() {
        let mut cpu = pc();
        call(&mut cpu, 0x0200, 0, 0, 0x0203);
        call(&mut cpu, 0x0941, 0x001E, 3, 0);
        assert_eq!(cell(&cpu, 2, 3), (b'A', 0x1E));
        assert_eq!(cell(&cpu, 2, 5), (b'A', 0x1E));
        assert_eq!(cell(&cpu, 2, 6), (b' ', 0x07));
        assert_eq!(cursor(&cpu, 0), (2, 3), "AH=09h leaves the cursor");
        let read = call(&mut cpu, 0x0800, 0, 0, 0);
        assert!(read.printed.is_empty());
        assert_eq!(cpu.regs[AX], 0x1E41);
        // Scroll rows 2..=3 up one line in columns 0..=9 with attribute 70h.
        call(&mut cpu, 0x0601, 0x7000, 0x0200, 0x0309);
        assert_eq!(cell(&cpu, 2, 3), (b' ', 0x07));
        assert_eq!(cell(&cpu, 3, 3), (b' ', 0x70));
        assert_eq!(cell(&cpu, 2, 10), (b' ', 0x07), "outside the window");
        // The whole screen down two lines, with attribute 1Fh.
        call(&mut cpu, 0x0200, 0, 0, 0x0000);
        call(&mut cpu, 0x0A5A, 0, 1, 0);
        call(&mut cpu, 0x0702, 0x1F00, 0x0000, 0x184F);
        assert_eq!(cell(&cpu, 2, 0), (b'Z', 0x07));
        assert_eq!(cell(&cpu, 1, 0), (b' ', 0x1F));
        assert_eq!(cell(&cpu, 0, 79), (b' ', 0x1F));
        let unknown = call(&mut cpu, 0x4F00, 0, 0, 0);
        assert_eq!(unknown.unsupported.as_deref(), Some("INT 10h AH=4Fh"));
    }

    #[test]
    fn mode_13h_pixels_go_through_the_program_palette() {
        let mut cpu = pc();
        call(&mut cpu, 0x0013, 0, 0, 0);
        assert_eq!(mode(&cpu), 0x13);
        assert_eq!(cpu.io.dac[40], [0x3F, 0, 0], "the default palette's red");
        call(&mut cpu, 0x0C05, 0, 10, 20);
        assert_eq!(cpu.rb(0xA0000 + 20 * 320 + 10), 5);
        call(&mut cpu, 0x0D00, 0, 10, 20);
        assert_eq!(cpu.regs[AX] & 0xFF, 5);
        // Colour 5 reprogrammed through the DAC ports.
        cpu.io.output(0x3C8, 5);
        for v in [0x3F, 0x20, 0x00] {
            cpu.io.output(0x3C9, v);
        }
        let shot = screenshot(&cpu);
        let image = shot.image.unwrap();
        assert_eq!(image.get(20, 40), Some([255, 129, 0]));
        assert_eq!(image.get(21, 41), Some([255, 129, 0]), "pixels are doubled");
        assert_eq!(image.get(22, 40), Some([0, 0, 0]));
        assert_eq!(shot.text, None);
        // Reading the DAC back, and the status register's alternation.
        cpu.io.output(0x3C7, 5);
        assert_eq!(cpu.io.input(0x3C9), 0x3F);
        let a = cpu.io.input(0x3DA) & 8;
        let b = cpu.io.input(0x3DA) & 8;
        assert_ne!(a, b);
    }

    #[test]
    fn graphics_teletype_draws_glyphs_and_scrolls_pixel_rows() {
        let mut cpu = pc();
        call(&mut cpu, 0x0013, 0, 0, 0);
        call(&mut cpu, 0x0E41, 0x000E, 0, 0);
        let lit = (0..8)
            .flat_map(|y| (0..8).map(move |x| (x, y)))
            .filter(|&(x, y)| get_pixel(&cpu, x, y) == 0x0E)
            .count();
        assert!(lit > 10, "an \"A\" in colour 0Eh: {lit} pixels");
        // A line feed on the last row scrolls every pixel line up by 8.
        call(&mut cpu, 0x0C03, 0, 5, 199);
        call(&mut cpu, 0x0200, 0, 0, 0x1800);
        call(&mut cpu, 0x0E0A, 0, 0, 0);
        assert_eq!(get_pixel(&cpu, 5, 191), 3);
        assert_eq!(get_pixel(&cpu, 5, 199), 0);
        assert_eq!(cursor(&cpu, 0), (24, 0));
    }

    #[test]
    fn cga_modes_pack_pixels_and_interlace_lines() {
        let mut cpu = pc();
        call(&mut cpu, 0x0004, 0, 0, 0);
        call(&mut cpu, 0x0C03, 0, 1, 1);
        assert_eq!(
            cpu.rb(0xB8000 + 0x2000),
            0b0011_0000,
            "odd line, second pixel"
        );
        call(&mut cpu, 0x0D00, 0, 1, 1);
        assert_eq!(cpu.regs[AX] & 0xFF, 3);
        // Colour 3 of palette 1, bright: white.
        let image = screenshot(&cpu).image.unwrap();
        assert_eq!(image.get(2, 2), Some([255, 255, 255]));
        call(&mut cpu, 0x0006, 0, 0, 0);
        call(&mut cpu, 0x0C01, 0, 9, 0);
        assert_eq!(cpu.rb(0xB8001), 0b0100_0000);
    }

    #[test]
    fn a_text_screenshot_has_the_text_the_colours_and_the_cursor() {
        let mut cpu = pc();
        teletype(&mut cpu, b"Hi \xC9\xCD\xBB", 7);
        call(&mut cpu, 0x0200, 0, 0, 0x0104);
        call(&mut cpu, 0x0958, 0x004E, 1, 0);
        let shot = screenshot(&cpu);
        assert_eq!(shot.description, "80x25 text");
        assert_eq!(shot.text.as_deref(), Some("Hi ╔═╗\n    X"));
        assert_eq!(shot.cursor, Some((1, 4)));
        let image = shot.image.unwrap();
        assert_eq!((image.width(), image.height()), (SHOT_WIDTH, SHOT_HEIGHT));
        // Cell (1, 4): red background, yellow "X" strokes.
        let (x0, y0) = (4 * 8, 16);
        assert_eq!(image.get(x0, y0 + 15), Some([170, 0, 0]));
        let yellow = (0..8)
            .flat_map(|dx| (0..16).map(move |dy| (x0 + dx, y0 + dy)))
            .filter(|&(x, y)| image.get(x, y) == Some([255, 255, 85]))
            .count();
        assert!(yellow > 10, "{yellow}");
        assert!(image.encode().unwrap().starts_with(b"\x89PNG"));
    }

    #[test]
    fn planar_modes_are_named_not_drawn() {
        let mut cpu = pc();
        call(&mut cpu, 0x0012, 0, 0, 0);
        let shot = screenshot(&cpu);
        assert!(shot.image.is_none());
        assert!(shot.description.contains("planar"), "{}", shot.description);
    }
}
