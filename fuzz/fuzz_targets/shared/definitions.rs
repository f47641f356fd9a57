//! What the definition fuzz targets do with a definition once a family
//! has read it: size, look up, read and display every table.

use ecu_model::checksum::Module;
use ecu_model::decode::read_table;
use ecu_model::definition::Definition;
use std::sync::OnceLock;

pub fn rom() -> &'static [u8] {
    static ROM: OnceLock<Vec<u8>> = OnceLock::new();
    ROM.get_or_init(|| {
        // A fixed, varied image: a xorshift byte stream.
        let mut x = 0x2545_F491u32;
        (0..0x1_0000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    })
}

pub fn exercise(def: &Definition) {
    let rom = rom();
    let _ = (
        def.display_name(),
        def.vehicle(),
        def.ecu_id(),
        def.memmodel(),
    );
    for t in &def.tables {
        let _ = (t.dimensions(), t.byte_len(), t.unit());
        let _ = def.table(&t.id);
        if let Ok(data) = read_table(t, rom) {
            for r in 0..data.rows.min(8) {
                for c in 0..data.cols.min(8) {
                    let _ = data.display(r, c);
                }
            }
            for axis in [&data.row_axis, &data.col_axis].into_iter().flatten() {
                let _ = axis.labels.len();
            }
        }
    }
    let _ = def.table("Timing Map");
    let _ = def.checksum_module().map(Module::by_name);
}
