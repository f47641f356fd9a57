//! `ble-bridge-sim`: a simulated web-ble-bridge for the ble-buffer plugin.

use ble_bridge_sim::{SimConfig, run_forever};
use clap::Parser;

/// A web-ble-bridge simulator: WebSocket server with a scripted BLE device.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Port on 127.0.0.1.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The simulated device's name.
    #[arg(long, default_value = "CS108Reader2603A7")]
    device: String,
    /// Scripted packets per second (0 = as fast as clients take them).
    #[arg(long, default_value_t = 20)]
    rate: u32,
    /// Scripted packets in all (0 = without end).
    #[arg(long, default_value_t = 0)]
    count: u64,
    /// An unsolicited notification after every N exchanges (0 = none).
    #[arg(long, default_value_t = 4)]
    notify_every: u32,
    /// Start scripted traffic only once a log-stream client connects.
    #[arg(long)]
    wait_for_client: bool,
    /// No scripted app: the device stays free for device clients and scans.
    #[arg(long)]
    idle: bool,
    /// Print connections and log lines to stderr.
    #[arg(long, short)]
    verbose: bool,
}

fn main() -> std::io::Result<()> {
    let a = Args::parse();
    run_forever(SimConfig {
        port: a.port,
        device_name: a.device,
        rate: a.rate,
        count: a.count,
        notify_every: a.notify_every,
        wait_for_client: a.wait_for_client,
        auto_connect: !a.idle,
        verbose: a.verbose,
        ..SimConfig::default()
    })
}
