//! Issue 37: what an Intellivision program shows and takes. A program
//! written here draws through GRAM, BACKTAB (GRAM and GROM cards, a
//! coloured-squares card, the colour stack advanced) and a MOB, enables
//! the display in its VBLANK handler and waits for two frames; the picture
//! is checked cell by cell against the STIC's rules. A second program
//! branches on the hand controller's keypad.

use cp1600::asm::assemble;
use cp1600::results::Json;
use cp1600::stic::{self, Picture};
use cp1600::tools::{LoadOptions, Sessions};

fn ok(_: u64, _: u64, _: &str) -> bool {
    true
}

/// Writes `bytes` to a file of its own (tests run in parallel: two
/// writing one name would read each other's half-written files).
fn write(name: &str, bytes: &[u8]) -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("cp1600-screen-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn bytes(words: &[u16]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// A stand-in EXEC: the stack, then the cartridge at $5000; the VBLANK
/// interrupt at $1004 jumps to the cartridge's handler at $5100.
fn exec() -> String {
    let src =
        " ORG $1000\n J init\n ORG $1004\n J $5100\n ORG $1010\ninit: MVII #$02F0, R6\n J $5000\n";
    let mut image = assemble(src).unwrap().words;
    image.resize(4096, 0);
    write("exec.bin", &bytes(&image))
}

const X: [u8; 8] = [0x81, 0x42, 0x24, 0x18, 0x18, 0x24, 0x42, 0x81];

const DRAW: &str = "
 ORG $5000
 MVII #gram, R5
 MVII #$3800, R4
 MVII #8, R1
g: MVI@ R5, R0
 MVO@ R0, R4
 DECR R1
 BNEQ g
 MVII #$0802, R0   ; card 0: GRAM 0, red
 MVO R0, $0200
 MVII #$32D1, R0   ; card 2: coloured squares blue, red, tan, green
 MVO R0, $0202
 MVII #$210E, R0   ; card 21: advance the stack; GROM 33 ('A'), yellow
 MVO R0, $0215
 CLRR R0           ; the STIC powers up all ones: MOBs off,
 MVII #$0000, R4
 MVII #24, R1
c: MVO@ R0, R4
 DECR R1
 BNEQ c
 CLRR R0           ; no delays,
 MVO R0, $0030     ; no border extension, stack black, cyan
 MVO R0, $0031
 MVO R0, $0032
 MVO R0, $0028
 MVII #9, R0
 MVO R0, $0029
 MVII #8, R0       ; border grey
 MVO R0, $002C
 MVII #$0228, R0   ; MOB 0: visible, x 40
 MVO R0, $0000
 MVII #$011E, R0   ; y 30, 8 rows of 2 half rows
 MVO R0, $0008
 MVII #$0805, R0   ; GRAM 0, green
 MVO R0, $0010
 EIS
w: MVI $0300, R0
 CMPI #2, R0
 BLT w
 HLT
gram: DECLE $81, $42, $24, $18, $18, $24, $42, $81
 ORG $5100
 MVO R0, $0020     ; display on
 MVI $0021, R0     ; colour-stack mode
 MVI $0300, R0
 INCR R0
 MVO R0, $0300
 PULR R7
";

fn session_with(program: &str) -> Sessions {
    let rom = write(
        &format!("p{}.bin", program.len()),
        &assemble(program).unwrap().to_bytes(),
    );
    let mut s = Sessions::new();
    s.create_session(None).unwrap();
    s.load_rom(
        None,
        &rom,
        &LoadOptions {
            exec_path: Some(exec()),
            ..Default::default()
        },
    )
    .unwrap();
    s
}

/// The cell at display pixel (`x`, `y`), top half row.
fn pixel(p: &Picture, x: usize, y: usize) -> u8 {
    p.at(8 + x, 2 * (8 + y))
}

#[test]
fn a_program_drawing_cards_and_a_mob_shows_as_the_stic_rules_say() {
    let mut s = session_with(DRAW);
    // Before any frame, the program has not run: the screen is blank.
    let frames = s.run_frames(None, Some(5), None, &mut ok).unwrap().json();
    assert_eq!(frames["run"]["reason"], "halted", "{frames}");
    // The second VBLANK's handler counts to 2: one whole frame ran, and
    // the program halted in the next.
    assert_eq!(frames["frames"], 1, "{frames}");
    assert_eq!(frames["display_enabled"], 1, "{frames}");
    let (_, p, shown) = s.picture(None).unwrap();
    assert!(shown);
    assert_eq!(p.mode, stic::Mode::ColourStack);
    assert_eq!(p.at(0, 0), 8, "the border is grey");
    assert_eq!(p.at(8 + 160, 2 * 50), 8, "the right border");
    for (py, row) in X.iter().enumerate() {
        for px in 0..8 {
            let on = row & (0x80 >> px) != 0;
            // Card 0: GRAM 0 in red on the stack's first colour (black).
            assert_eq!(
                pixel(&p, px, py),
                if on { 2 } else { 0 },
                "card 0 at {px},{py}"
            );
            // Both half rows of a card's pixel.
            assert_eq!(p.at(8 + px, 2 * (8 + py) + 1), pixel(&p, px, py));
        }
    }
    // Card 1 is GROM card 0 (a space) on black.
    assert!((8..16).all(|x| (0..8).all(|y| pixel(&p, x, y) == 0)));
    // Card 2: coloured squares, blue/red over tan/green, 4x4 each.
    for (x, y, c) in [
        (16, 0, 1),
        (20, 0, 2),
        (16, 4, 3),
        (20, 4, 5),
        (19, 3, 1),
        (23, 7, 5),
    ] {
        assert_eq!(pixel(&p, x, y), c, "square at {x},{y}");
    }
    // Card 21 (row 1, column 1) advanced the stack to cyan; GROM is not
    // loaded, so its 'A' is the stand-in font's, in yellow.
    let a = raster::glyph('A').unwrap();
    for (py, row) in a.iter().enumerate() {
        for px in 0..8 {
            let on = row & (1 << px) != 0;
            assert_eq!(
                pixel(&p, 8 + px, 8 + py),
                if on { 6 } else { 9 },
                "A at {px},{py}"
            );
        }
    }
    // Later cards keep the stack's cyan.
    assert_eq!(pixel(&p, 159, 95), 9);
    // MOB 0 at (40, 30): GRAM 0 in green, each row two half rows, over the
    // cyan background where its pixels are off.
    for (r, row) in X.iter().enumerate() {
        for px in 0..8 {
            let on = row & (0x80 >> px) != 0;
            for dy in 0..2 {
                assert_eq!(
                    p.at(40 + px, 60 + 2 * r + dy),
                    if on { 5 } else { 9 },
                    "MOB at {px},{r}"
                );
            }
        }
    }
    assert_eq!(p.mobs.len(), 1);
    assert_eq!((p.mobs[0].x, p.mobs[0].y, p.mobs[0].size), (40, 30, (8, 8)));
    let caption = stic::caption(&p, shown);
    assert!(caption.contains("GROM: not loaded"), "{caption}");
    assert!(
        caption.contains("MOB 0: at (40, 30), GRAM card 0, green, 8×8 px"),
        "{caption}"
    );
    let shot = s.screenshot(None).unwrap();
    assert!(shot.png.starts_with(b"\x89PNG"));
}

#[test]
fn a_mob_behind_the_cards_passes_under_their_foreground() {
    let mut s = session_with(DRAW);
    s.run_frames(None, Some(5), None, &mut ok).unwrap();
    // MOB 0 behind the cards, doubled in width, over card 0's red X.
    s.write_memory(None, 0x0000, &[0x0600 | 8]).unwrap();
    s.write_memory(None, 0x0008, &[0x0100 | 8]).unwrap();
    s.write_memory(None, 0x0010, &[0x2000 | 0x0800 | 5])
        .unwrap();
    let (_, p, _) = s.picture(None).unwrap();
    // Where card 0's X is on, the red stays; where off, the green MOB shows.
    assert_eq!(p.at(8, 16), 2, "behind the card's foreground");
    assert_eq!(p.at(9, 16), 5, "the doubled MOB pixel over the background");
    assert_eq!(p.mobs[0].size, (16, 8));
}

const KEYS: &str = "
 ORG $5000
l: MVI $01FF, R0
 COMR R0
 ANDI #$FF, R0
 CMPI #$42, R0
 BEQ five
 MVII #$AA, R1
 MVO R1, $0301
 B l
five: MVII #$55, R1
 MVO R1, $0301
 HLT
";

#[test]
fn the_keypad_drives_a_programs_branch() {
    let mut s = session_with(KEYS);
    let r = s
        .run(None, Some(2000), Some(false), &mut ok)
        .unwrap()
        .json();
    assert_eq!(r["reason"], "max_cycles_reached", "{r}");
    let m = s.examine_memory(None, 0x0301, Some(1)).unwrap().json();
    assert!(
        m.to_string().contains("170") || m.to_string().contains("AA"),
        "{m}"
    );
    let set = s.controller(None, 0, None, Some("5"), &[]).unwrap().json();
    assert_eq!(set["reads"], 0xFFBD, "{set}");
    assert_eq!(set["pressed"][0], "key 5");
    let r = s
        .run(None, Some(2000), Some(false), &mut ok)
        .unwrap()
        .json();
    assert_eq!(r["reason"], "halted", "{r}");
    let m = s.examine_memory(None, 0x0301, Some(1)).unwrap().json();
    assert!(
        m.to_string().contains("85") || m.to_string().contains("55"),
        "{m}"
    );
    // Bad names say what is accepted; nothing given releases.
    let e = s.controller(None, 0, Some("up"), None, &[]).unwrap_err();
    assert!(e.message.contains("NNE"), "{}", e.message);
    let set = s.controller(None, 1, None, None, &[]).unwrap().json();
    assert_eq!(set["reads"], 0xFFFF);
    let set = s
        .controller(None, 1, Some("ne"), None, &["top".into()])
        .unwrap()
        .json();
    assert_eq!(set["reads"], 0xFF00 | u16::from(!(0x16u8 | 0xA0)) as u64);
}
