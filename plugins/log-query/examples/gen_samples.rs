//! Regenerates the sample logs in `samples/logs/` (deterministic):
//!
//!     cargo run -p log-query --example gen_samples [-- OUT_DIR]
//!
//! With `--plot`, also renders `docs/plot-log.png` of the newest log (for the README).

use log_query::synth::{drive, evoscan_csv, plain_csv, romraider_csv};
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let plot = args.iter().any(|a| a == "--plot");
    let out = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/logs"));
    std::fs::create_dir_all(&out)?;
    let files = [
        (
            "log-2026-02-22T14-30-00-000Z.csv",
            plain_csv(&drive(11, 100.0, 45.2, 0.0)),
        ),
        (
            "EvoScanDataLog_2026.02.22_10.15.00.csv",
            evoscan_csv(&drive(12, 12.0, 240.0, 0.15), "2026-02-22", 36_900.0),
        ),
        (
            "romraiderlog_20260221_180000.csv",
            romraider_csv(&drive(13, 25.0, 120.0, 0.1)),
        ),
    ];
    for (name, text) in &files {
        std::fs::write(out.join(name), text)?;
        println!(
            "wrote {} ({} lines)",
            out.join(name).display(),
            text.lines().count()
        );
    }
    if plot {
        let data = std::fs::read(out.join(files[0].0))?;
        let log = log_query::reader::parse(&data, files[0].0).map_err(std::io::Error::other)?;
        let args = log_query::plot::PlotArgs {
            channels: Some(vec![
                "RPM".into(),
                "Load".into(),
                "Knock".into(),
                "AFR".into(),
            ]),
            filter: Some("RPM > 3000 && Knock > 0".into()),
            ..Default::default()
        };
        let plot =
            log_query::plot::render(&log, files[0].0, &args).map_err(std::io::Error::other)?;
        let png = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/plot-log.png");
        std::fs::create_dir_all(png.parent().unwrap_or(&out))?;
        std::fs::write(&png, &plot.png)?;
        println!("wrote {}: {}", png.display(), plot.caption);
    }
    Ok(())
}
