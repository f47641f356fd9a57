//! Haltech NSP CSV exports: a `%DataLog%` line, `Key : Value` lines, then a
//! four-line declaration per channel (`Channel :`, `ID :`, `Type :`,
//! `DisplayMaxMin :`), the log's own start (`Log : 20250718 02:15:46`), and
//! rows with no header line: the time of day, then one raw integer per
//! channel in declaration order. (Another variant has a header line of
//! `Name(Type:Unit)` cells instead of declarations.)
//!
//! Values are raw integers; each channel's `Type` says how NSP shows them.
//! The scales below are the ones the real export proves (see each), so
//! `'Coolant Temperature' > 80` reads as NSP shows it; types without proof
//! stay raw and the log's notes say which.

use crate::column::{Column, null};
use crate::format::{DateKind, Format, TimeUnit};
use crate::plan::{MAX_COLUMNS, Plan, Scale, too_many_columns};

const RAW: Scale = Scale {
    mul: 1.0,
    add: 0.0,
    decimals: 0,
};

/// The scale and unit of a channel `Type`, when the type's scale is known.
///
/// Evidence, from the real export `2025-07-18_0215pm_Log1118.csv`: each
/// type's `DisplayMaxMin` bounds (in raw units) become round numbers
/// (Temperature 4731,2331 = 200 °C, −40 °C; Pressure 31013,1013 = 3000, 0 kPa
/// gauge; AFR 1361,476 = λ 1.361, 0.476, i.e. 20:1 and 7:1; Percentage,
/// Angle and Speed maxima 1000/600/4000 = 100 %, 60°, 400 km/h), and values
/// agree with each other (Engine Pressure Ratio 757 = MAP 767 / 1013; the
/// injector pressure differential 3652 = fuel pressure gauge − MAP gauge, in
/// tenths of a kPa; battery 13042 mV; coolant 3434 = 70.25 °C).
fn scale_of(kind: &str) -> Option<(Scale, &'static str)> {
    let s = |mul, add, decimals| Scale { mul, add, decimals };
    Some(match kind {
        "EngineSpeed" => (RAW, "rpm"),
        "Temperature" => (s(0.1, -273.15, 2), "°C"),
        "BatteryVoltage" => (s(0.001, 0.0, 3), "V"),
        "AFR" => (s(0.001, 0.0, 3), "λ"),
        "Pressure" => (s(0.1, -101.3, 1), "kPa"),
        "AbsPressure" => (s(0.1, 0.0, 1), "kPa"),
        "Percentage" => (s(0.1, 0.0, 1), "%"),
        "Angle" => (s(0.1, 0.0, 1), "°"),
        "Speed" => (s(0.1, 0.0, 1), "km/h"),
        "Ratio" => (s(0.001, 0.0, 3), ""),
        "Time_us" => (RAW, "µs"),
        "Time_ms" => (RAW, "ms"),
        "Raw" | "Gear" => (RAW, ""),
        _ => return None,
    })
}

/// Haltech writes 0x80000000 and codes just above it (−2147483617 is
/// 0x8000001F) for "no value".
fn is_sentinel(v: f64) -> bool {
    (-2_147_483_648.0..=-2_147_483_392.0).contains(&v)
}

/// True when `first_line` is the `%DataLog%` line Haltech NSP starts with.
pub(crate) fn is_haltech(first_line: &[u8]) -> bool {
    first_line.trim_ascii() == b"%DataLog%"
}

/// One declared channel.
#[derive(Default)]
struct Declared {
    name: String,
    kind: String,
}

/// The plan of a `%DataLog%` export whose preamble declares its channels;
/// `None` when it declares none (the header-line variant, read as any CSV
/// and then [`from_header`]).
pub(crate) fn plan(text: &[u8], whole: bool) -> Option<Result<Plan, String>> {
    let mut channels: Vec<Declared> = Vec::new();
    let mut log_start: Option<String> = None;
    let (mut software, mut number) = (String::new(), String::new());
    let mut at = 0;
    let mut body = None;
    let mut started = false;
    while at < text.len() {
        let end = text[at..].iter().position(|&c| c == b'\n');
        let Some(len) = end.or_else(|| whole.then_some(text.len() - at)) else {
            break;
        };
        let line = String::from_utf8_lossy(&text[at..at + len]);
        let line = line.trim_end_matches('\r');
        if !started {
            // Blank lines, then `%DataLog%` itself.
            started = is_haltech(line.as_bytes());
        } else if !line.trim().is_empty() {
            match line.split_once(" : ") {
                Some((key, value)) => {
                    let value = value.trim().to_string();
                    match key.trim() {
                        "Channel" => {
                            if channels.len() == MAX_COLUMNS {
                                return Some(Err(too_many_columns(MAX_COLUMNS + 1, true)));
                            }
                            channels.push(Declared {
                                name: value,
                                kind: String::new(),
                            });
                        }
                        "Type" => {
                            if let Some(c) = channels.last_mut() {
                                c.kind = value;
                            }
                        }
                        "Log" => log_start = Some(value),
                        "Software" | "SoftwareVersion" => {
                            if !software.is_empty() {
                                software.push(' ');
                            }
                            software.push_str(&value);
                        }
                        "Log Number" => number = value,
                        _ => {}
                    }
                }
                None => {
                    body = Some(at);
                    break;
                }
            }
        }
        at += len + 1;
    }
    if channels.is_empty() {
        return None;
    }
    let Some(body_start) = body.or(whole.then_some(text.len())) else {
        return Some(Err(format!(
            "its Haltech %DataLog% preamble declares {} channels and runs past the first {} \
             KiB without reaching the data; log fewer channels or export the log again",
            channels.len(),
            text.len() >> 10
        )));
    };
    let mut names = vec!["Time".to_string()];
    let mut units = vec![String::new()];
    let mut scales = vec![None];
    let mut raw_kinds: Vec<String> = Vec::new();
    for c in &channels {
        names.push(c.name.trim().to_string());
        match scale_of(&c.kind) {
            Some((scale, unit)) => {
                units.push(unit.to_string());
                scales.push(Some(scale));
            }
            None => {
                units.push(String::new());
                scales.push(Some(RAW));
                if !raw_kinds.contains(&c.kind) {
                    raw_kinds.push(c.kind.clone());
                }
            }
        }
    }
    let first_row = String::from_utf8_lossy(&text[body_start..text.len().min(body_start + 64)])
        .split([',', '\n'])
        .next()
        .map(str::to_string);
    let date = log_start
        .as_deref()
        .and_then(|s| start_date(s, first_row.as_deref()));
    let mut source = if software.is_empty() {
        "Haltech NSP".to_string()
    } else {
        software
    };
    if !number.is_empty() {
        source.push_str(&format!(", log {number}"));
    }
    Some(Ok(Plan {
        format: Format::Haltech,
        delimiter: b',',
        body_start,
        names,
        units,
        hidden: Vec::new(),
        time: Some((0, TimeUnit::Clock)),
        date,
        date_kind: DateKind::Local,
        scales,
        notes: vec![scale_note(&raw_kinds)],
        source: Some(plugin_kit::text::head(&source, 120)),
    }))
}

/// What the notes say of the scaling.
fn scale_note(raw_kinds: &[String]) -> String {
    let mut note = "Haltech values are scaled by channel type as NSP shows them (Temperature \
                    °C, Pressure kPa gauge, AbsPressure kPa, BatteryVoltage V, AFR λ, \
                    Percentage %, Angle °, Speed km/h, Ratio); no-value codes \
                    (−2147483617…) are empty cells"
        .to_string();
    if !raw_kinds.is_empty() {
        let shown: Vec<&str> = raw_kinds.iter().take(12).map(String::as_str).collect();
        note.push_str(&format!(
            "; types of unproven scale stay raw: {}{}",
            shown.join(", "),
            if raw_kinds.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        ));
    }
    note
}

/// `Log : 20250718 02:15:46` writes a 12-hour clock without am/pm; the
/// rows' time of day is on a 24-hour clock. The date comes from the line,
/// the time from the first row when the two agree modulo 12 hours.
fn start_date(log: &str, first_row_clock: Option<&str>) -> Option<i64> {
    let found = crate::dates::find(log)?;
    let day = found.secs - found.secs.rem_euclid(86_400);
    let stated = found.secs - day;
    let row = first_row_clock
        .and_then(crate::format::parse_clock)
        .map(|s| s.floor() as i64)
        .filter(|s| (0..86_400).contains(s));
    match row {
        Some(r) if (r - stated).rem_euclid(43_200) < 60 || (stated - r).rem_euclid(43_200) < 60 => {
            Some(day + r)
        }
        _ => Some(found.secs),
    }
}

/// The header-line variant: `RPM(EngineSpeed:rpm)` cells become the name
/// `RPM` with its unit, scaled by type. Returns each field's scale.
pub(crate) fn from_header(names: &mut [String], units: &mut Vec<String>) -> Vec<Option<Scale>> {
    units.resize(names.len(), String::new());
    let mut scales = Vec::with_capacity(names.len());
    for (k, name) in names.iter_mut().enumerate() {
        let parsed = name
            .strip_suffix(')')
            .and_then(|n| n.rsplit_once('('))
            .and_then(|(base, inner)| inner.split_once(':').map(|(t, u)| (base, t, u)));
        let Some((base, kind, unit)) = parsed else {
            scales.push(None);
            continue;
        };
        let (base, kind, unit) = (base.trim().to_string(), kind.trim(), unit.trim());
        let is_time = k == 0 && crate::format::time_unit_of(&base).is_some();
        match scale_of(kind).filter(|_| !is_time) {
            Some((scale, known)) => {
                units[k] = if known.is_empty() { unit } else { known }.to_string();
                scales.push(Some(scale));
            }
            None => {
                units[k] = unit.to_string();
                scales.push((!is_time).then_some(RAW));
            }
        }
        *name = base;
    }
    scales
}

/// Applies each column's scale to its loaded cells (the columns in field
/// order, as a plan lays them out); no-value codes become empty.
pub(crate) fn apply_scales(columns: &mut [Column], scales: &[Option<Scale>]) {
    for (c, scale) in columns.iter_mut().zip(scales) {
        let Some(scale) = scale else { continue };
        if !c.loaded {
            continue;
        }
        let mut emptied = 0;
        for v in &mut c.values {
            if v.is_nan() {
                continue;
            }
            if is_sentinel(*v) {
                *v = null();
                emptied += 1;
            } else if *scale != RAW {
                *v = crate::format::round_to(*v * scale.mul + scale.add, scale.decimals);
            }
        }
        c.special += emptied;
        c.decimals = c.decimals.max(scale.decimals);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Cell;
    use crate::reader::parse;

    const NSP: &str = "%DataLog%\nDataLogVersion : 1.1\nSoftware : Haltech NSP\nSoftwareVersion : 1.2.3\nDownloadDateTime : 20250718 04:09:48\nChannel : RPM\nID : 1\nType : EngineSpeed\nDisplayMaxMin : 20000,0\nChannel : Coolant Temperature\nID : 2\nType : Temperature\nDisplayMaxMin : 4731,2331\nChannel : Device Battery Voltage \nID : 3\nType : BatteryVoltage\nDisplayMaxMin : 18000,6500\nChannel : Undriven Wheel Speed\nID : 4\nType : Speed\nDisplayMaxMin : 4000,0\nChannel : Calculated Air Mass Per Cylinder\nID : 5\nType : MassPerCyl\nDisplayMaxMin : 100000,0\nLog Source : 20\nLog Number : 1118\nLog : 20250718 02:15:46\n14:15:46.000,1225,3434,13042,-2147483617,198\n14:15:46.020,1312,3438,13052,-2147483617,201\n14:15:46.040,1394,3436,13060,125,205\n";

    #[test]
    fn declared_channels_scaled_by_type_from_wherever_the_data_starts() {
        let log = parse(NSP.as_bytes(), "2025-07-18_0215pm_Log1118.csv").unwrap();
        assert_eq!(log.format, Format::Haltech);
        assert_eq!(log.rows(), 3);
        assert_eq!(
            log.channels(),
            [
                "RPM",
                "Coolant Temperature",
                "Device Battery Voltage",
                "Undriven Wheel Speed",
                "Calculated Air Mass Per Cylinder"
            ]
        );
        assert_eq!(log.time(), [0.0, 0.02, 0.04]);
        let cell = |c: &str, r| log.column(c).unwrap().cell(r);
        assert_eq!(cell("RPM", 1), Cell::Num(1312.0));
        assert_eq!(cell("Coolant Temperature", 0), Cell::Num(70.25));
        assert_eq!(log.column("Coolant Temperature").unwrap().unit, "°C");
        assert_eq!(cell("Device Battery Voltage", 0), Cell::Num(13.042));
        assert_eq!(cell("Undriven Wheel Speed", 0), Cell::Null);
        assert_eq!(cell("Undriven Wheel Speed", 2), Cell::Num(12.5));
        assert_eq!(
            cell("Calculated Air Mass Per Cylinder", 2),
            Cell::Num(205.0)
        );
        assert!(
            log.notes[0].contains("stay raw: MassPerCyl"),
            "{:?}",
            log.notes
        );
        assert_eq!(log.source.as_deref(), Some("Haltech NSP 1.2.3, log 1118"));
        // `Log :` says 02:15:46 on a 12-hour clock; the rows say 14:15:46.
        let d = crate::logs::LogDate::local(log.start_date.unwrap());
        assert_eq!(d.display(), "2025-07-18 14:15");
    }

    #[test]
    fn a_preamble_longer_than_the_usual_head_is_read() {
        let mut text = String::from("%DataLog%\nSoftware : Haltech NSP\n");
        for k in 0..2000 {
            text += &format!(
                "Channel : Channel number {k}\nID : {k}\nType : Raw\nDisplayMaxMin : 1,0\n"
            );
        }
        text += "Log : 20250718 02:15:46\n";
        for r in 0..3 {
            text += &format!("14:15:4{r}.000{}\n", ",7".repeat(2000));
        }
        assert!(text.len() > crate::detect::HEAD);
        let log = parse(text.as_bytes(), "big.csv").unwrap();
        assert_eq!((log.rows(), log.channels().len()), (3, 2000));
        assert!((log.duration_s().unwrap() - 2.0).abs() < 1e-9);
        // In pieces as well.
        let source = crate::reader::Trickle {
            data: text.as_bytes(),
            most: 1000,
        };
        let pieces = crate::reader::read_columns(
            source,
            text.len() as u64,
            "big.csv",
            &crate::reader::Need::All,
        )
        .unwrap();
        assert_eq!(pieces.rows(), 3);
    }

    #[test]
    fn the_header_line_variant() {
        let csv = "%DataLog%\n\nTime(Time_ms:ms),RPM(EngineSpeed:rpm),MAP(AbsPressure:kPa),Mystery(Thing:zz)\n14:15:46.000,1225,1013,5\n14:15:46.050,1300,1020,6\n";
        let log = parse(csv.as_bytes(), "h.csv").unwrap();
        assert_eq!(log.format, Format::Haltech);
        assert_eq!(log.channels(), ["RPM", "MAP", "Mystery"]);
        assert_eq!(log.column("MAP").unwrap().cell(1), Cell::Num(102.0));
        assert_eq!(log.column("MAP").unwrap().unit, "kPa");
        assert_eq!(log.column("Mystery").unwrap().unit, "zz");
        assert_eq!(log.time(), [0.0, 0.05]);
    }
}
