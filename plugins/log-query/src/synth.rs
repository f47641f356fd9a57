//! A deterministic synthetic drive (idle, launch, wide-open-throttle pulls,
//! shifts, cruise, deceleration) written in the three log layouts. It makes
//! the sample logs in `samples/logs/` (`cargo run -p log-query --example
//! gen_samples`) and the benchmark's large CSV.

use std::fmt::Write as _;

/// splitmix64: small, seedable, identical on every platform.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Roughly normal noise with standard deviation `sd`.
    pub fn noise(&mut self, sd: f64) -> f64 {
        (self.unit() + self.unit() + self.unit() - 1.5) * 2.0 * sd
    }
}

/// One instant of the drive.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Seconds from the start of the drive (jittered around the nominal
    /// period).
    pub t: f64,
    /// Engine speed in rpm (at least 600, about 7000 at the end of a pull).
    pub rpm: f64,
    /// Engine load on an Evo-style scale, not percent: about 12..20 off
    /// throttle, 230..270 at wide-open throttle.
    pub load: f64,
    /// Knock counts this sample, 0..4 (only under wide-open throttle and high
    /// load).
    pub knock: u32,
    /// Running knock sum, 0..40, decaying slowly while no knock is heard.
    pub knock_sum: u32,
    /// Throttle position in percent, 0..100.
    pub throttle: f64,
    /// Manifold absolute pressure in kPa (at least 15).
    pub map_kpa: f64,
    /// None while the wideband has no reading.
    pub afr: Option<f64>,
    /// Intake air temperature in °C, 30..45.
    pub iat: f64,
    /// Ignition advance in degrees before top dead centre.
    pub timing: f64,
    /// Vehicle speed in km/h.
    pub speed_kmh: f64,
    /// The script's phase: idle, launch, pull1, shift, pull2, lift, cruise,
    /// decel.
    pub phase: &'static str,
}

/// (phase, seconds, rpm at start, rpm at end, throttle %)
const SCRIPT: [(&str, f64, f64, f64, f64); 9] = [
    ("idle", 3.0, 850.0, 850.0, 0.0),
    ("launch", 4.0, 850.0, 2600.0, 35.0),
    ("pull1", 8.0, 2600.0, 7000.0, 100.0),
    ("shift", 1.5, 7000.0, 4300.0, 0.0),
    ("pull2", 6.0, 4300.0, 7000.0, 100.0),
    ("lift", 2.0, 7000.0, 3200.0, 0.0),
    ("cruise", 10.0, 3200.0, 3300.0, 22.0),
    ("decel", 6.0, 3300.0, 900.0, 0.0),
    ("idle", 4.7, 900.0, 850.0, 0.0),
];

/// Simulates `seconds` of driving at `rate_hz` (the script repeats), with
/// timestamps jittered by `jitter` (fraction of the period).
pub fn drive(seed: u64, rate_hz: f64, seconds: f64, jitter: f64) -> Vec<Sample> {
    let mut rng = Rng::new(seed);
    let period: f64 = SCRIPT.iter().map(|s| s.1).sum();
    let n = (seconds * rate_hz).round() as usize;
    let mut out = Vec::with_capacity(n);
    let (mut knock_sum, mut iat, mut speed) = (0u32, 31.0f64, 0.0f64);
    let mut throttle = 0.0f64;
    for i in 0..n {
        let nominal = i as f64 / rate_hz;
        let t = if i == 0 {
            0.0
        } else {
            nominal + rng.noise(jitter / rate_hz)
        };
        let mut tp = nominal % period;
        let mut seg = SCRIPT[SCRIPT.len() - 1];
        for s in SCRIPT {
            if tp < s.1 {
                seg = s;
                break;
            }
            tp -= s.1;
        }
        let (phase, dur, r0, r1, thr) = seg;
        let f = (tp / dur).clamp(0.0, 1.0);
        // Pulls accelerate faster at first; decel falls off smoothly.
        let shape = if phase.starts_with("pull") {
            1.0 - (1.0 - f).powf(1.4)
        } else {
            f
        };
        let rpm = (r0 + (r1 - r0) * shape + rng.noise(if phase == "idle" { 8.0 } else { 15.0 }))
            .max(600.0);
        throttle += (thr - throttle) * 0.25;
        let thr_now = (throttle + rng.noise(0.3)).clamp(0.0, 100.0);
        let wot = thr_now > 90.0;
        let load = if wot {
            230.0 + 40.0 * (rpm / 7000.0) + rng.noise(2.0)
        } else if thr_now < 1.0 {
            if rpm > 1200.0 {
                12.0 + rng.noise(1.0)
            } else {
                20.0 + rng.noise(0.8)
            }
        } else {
            25.0 + thr_now * 1.6 + rng.noise(1.5)
        };
        let map_kpa = (18.0 + load * 0.8 + rng.noise(0.6)).max(15.0);
        let knock = if wot && load > 255.0 && rng.unit() < 0.12 {
            1 + (rng.unit() * 4.0) as u32
        } else {
            0
        };
        knock_sum = (knock_sum + knock).min(40);
        if knock == 0 && rng.unit() < 0.004 && knock_sum > 0 {
            knock_sum -= 1;
        }
        let afr = if i < (rate_hz * 0.6) as usize || rng.unit() < 0.004 {
            None
        } else if thr_now < 1.0 && rpm > 1500.0 {
            Some(21.5 + rng.noise(0.03))
        } else if wot {
            Some(11.4 + rng.noise(0.15))
        } else {
            Some(14.7 + rng.noise(0.2))
        };
        iat = (iat + if wot { 0.004 } else { -0.001 }).clamp(30.0, 45.0) + rng.noise(0.02);
        let timing = (if wot {
            14.0 - (load - 230.0) * 0.08
        } else {
            22.0 + rpm / 1000.0
        }) - knock as f64 * 1.5
            + rng.noise(0.3);
        speed = (speed
            + if wot {
                0.35
            } else if thr_now > 5.0 {
                0.02
            } else {
                -0.08
            } * 100.0
                / rate_hz)
            .clamp(0.0, 190.0);
        out.push(Sample {
            t,
            rpm,
            load,
            knock,
            knock_sum,
            throttle: thr_now,
            map_kpa,
            afr,
            iat,
            timing,
            speed_kmh: speed,
            phase,
        });
    }
    out
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or(String::new(), |x| format!("{x:.decimals$}"))
}

/// A plain logger CSV: `Time` in seconds, then the channels.
pub fn plain_csv(samples: &[Sample]) -> String {
    let mut s =
        String::from("Time,RPM,Load,Knock,Throttle,MAP,Knock Sum,AFR,IAT,Timing,Speed,Phase\n");
    for x in samples {
        let _ = writeln!(
            s,
            "{:.2},{:.0},{:.1},{},{:.1},{:.1},{},{},{:.1},{:.1},{:.1},{}",
            x.t,
            x.rpm,
            x.load,
            x.knock,
            x.throttle,
            x.map_kpa,
            x.knock_sum,
            opt(x.afr, 2),
            x.iat,
            x.timing,
            x.speed_kmh,
            x.phase
        );
    }
    s
}

/// An EvoScan log: bookkeeping columns, `LogEntrySeconds`, EvoScan ids.
pub fn evoscan_csv(samples: &[Sample], date: &str, clock_start: f64) -> String {
    let mut s = String::from(
        "LogID,LogEntryDate,LogEntryTime,LogEntrySeconds,LogNotes,01_LogMark,RPM,Load,TPS,MAP,Knock,KnockSum,AFR,IAT,TimingAdv,WGDC_Active\n",
    );
    let mut last_phase = "";
    for (i, x) in samples.iter().enumerate() {
        let secs = x.t + 0.03125;
        let c = clock_start + secs;
        let clock = format!(
            "{:02}:{:02}:{:08.5}",
            (c / 3600.0) as u32 % 24,
            (c / 60.0) as u32 % 60,
            c % 60.0
        );
        let note = if x.phase != last_phase && x.phase.starts_with("pull") {
            x.phase
        } else {
            ""
        };
        last_phase = x.phase;
        let _ = writeln!(
            s,
            "{},{date},{clock},{secs:.5},{note},{},{:.1},{:.1},{:.4},{:.2},{},{},{},{:.0},{:.1},",
            i + 1,
            !note.is_empty() as u8,
            (x.rpm / 7.8125).round() * 7.8125,
            x.load,
            x.throttle,
            (x.map_kpa - 101.3) * 0.145_038,
            x.knock,
            x.knock_sum,
            opt(x.afr, 2),
            x.iat,
            x.timing
        );
    }
    s
}

/// A RomRaider logger CSV with `;` separators and decimal commas (a
/// European-locale PC), whose header changes mid-file when a parameter is
/// added. Rows without an AFR reading are skipped, as RomRaider does.
pub fn romraider_csv(samples: &[Sample]) -> String {
    let base = "Time (msec);Engine Speed (rpm);Engine Load (%);Knock Count (count);Throttle Opening Angle (%);Manifold Absolute Pressure (kPa);Knock Sum (count);A/F Sensor #1 (AFR);Intake Air Temperature (C)";
    let mut s = format!("{base}\n");
    let change_at = samples.len() / 2;
    let t0 = samples.first().map_or(0.0, |x| x.t);
    for (i, x) in samples.iter().enumerate() {
        if i == change_at {
            let _ = writeln!(s, "{base};Ignition Total Timing (degrees)");
        }
        let Some(afr) = x.afr else { continue };
        let mut line = format!(
            "{:.0};{:.0};{:.2};{};{:.2};{:.2};{};{:.2};{:.0}",
            (x.t - t0) * 1000.0,
            x.rpm,
            x.load / 2.7,
            x.knock,
            x.throttle,
            x.map_kpa,
            x.knock_sum,
            afr,
            x.iat
        );
        if i >= change_at {
            let _ = write!(line, ";{:.1}", x.timing);
        }
        s.push_str(&line.replace('.', ","));
        s.push('\n');
    }
    s
}

/// The benchmark's CSV: `Time` plus 12 numeric channels, streamed to `out`.
pub fn write_bench_csv(out: &mut impl std::io::Write, rows: usize) -> std::io::Result<()> {
    writeln!(
        out,
        "Time,RPM,Load,Knock,Throttle,MAP,KnockSum,AFR,IAT,Timing,Speed,Boost,Battery"
    )?;
    let mut line = String::with_capacity(128);
    let mut rng = Rng::new(7);
    let chunk = 100_000;
    let mut done = 0;
    while done < rows {
        let n = chunk.min(rows - done);
        let samples = drive(done as u64 + 1, 100.0, n as f64 / 100.0, 0.0);
        for (k, x) in samples.iter().enumerate() {
            line.clear();
            let t = (done + k) as f64 / 100.0;
            let _ = write!(
                line,
                "{t:.2},{:.0},{:.1},{},{:.1},{:.1},{},{:.2},{:.1},{:.1},{:.1},{:.2},{:.2}",
                x.rpm,
                x.load,
                x.knock,
                x.throttle,
                x.map_kpa,
                x.knock_sum,
                x.afr.unwrap_or(14.7),
                x.iat,
                x.timing,
                x.speed_kmh,
                (x.map_kpa - 101.3) * 0.145_038,
                13.8 + rng.noise(0.1)
            );
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader;

    #[test]
    fn generated_logs_read_back() {
        let d = drive(1, 100.0, 45.2, 0.0);
        assert_eq!(d.len(), 4520);
        assert!(d.iter().any(|x| x.knock > 0));
        let plain = reader::parse(plain_csv(&d).as_bytes(), "log.csv").unwrap();
        assert_eq!(plain.rows(), 4520);
        assert!((plain.sample_rate_hz().unwrap() - 100.0).abs() < 0.01);
        let evo = reader::parse(
            evoscan_csv(&drive(2, 12.0, 30.0, 0.15), "2026-02-21", 64_800.0).as_bytes(),
            "EvoScanDataLog_2026.02.21_18.00.00.csv",
        )
        .unwrap();
        assert_eq!(evo.format, reader::Format::EvoScan);
        assert_eq!(evo.column("WGDC_Active").unwrap().special, evo.rows());
        let rr = reader::parse(
            romraider_csv(&drive(3, 25.0, 30.0, 0.1)).as_bytes(),
            "romraiderlog_20260222_101500.csv",
        )
        .unwrap();
        assert_eq!(rr.delimiter, b';');
        assert_eq!(rr.header_changes, 1);
        assert!(rr.column("Ignition Total Timing (degrees)").is_some());
        assert!(rr.column("Engine Speed (rpm)").unwrap().special == 0);
        let mut big = Vec::new();
        write_bench_csv(&mut big, 1000).unwrap();
        let b = reader::parse(&big, "bench.csv").unwrap();
        assert_eq!((b.rows(), b.channels().len()), (1000, 12));
    }
}
