//! The conformance suite's fixture tools.

use std::time::Duration;

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

use benchtop::host::content::{Block, Image};
use benchtop::host::{log, progress};
use exports::benchtop_test::conformance::fixtures::Guest;

/// A 1x1 red pixel.
const RED_PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Fixtures;

impl Guest for Fixtures {
    fn test_simple_text() -> String {
        "This is a simple text response for testing.".into()
    }

    fn test_image_content() -> Vec<Block> {
        vec![Block::Image(Image {
            mime_type: "image/png".into(),
            data: RED_PIXEL_PNG.to_vec(),
        })]
    }

    fn test_error_handling() -> Result<String, String> {
        Err("This tool intentionally returns an error for testing".into())
    }

    fn test_tool_with_progress() -> String {
        for done in [0, 50, 100] {
            progress::report(done, 100, "");
            if done < 100 {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        "Progress test completed".into()
    }

    fn test_tool_with_logging() -> String {
        for (i, message) in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        .iter()
        .enumerate()
        {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            log::write(log::Level::Info, message);
        }
        "Logging test completed".into()
    }
}

#[cfg(target_arch = "wasm32")]
export!(Fixtures);
