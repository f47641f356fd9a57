//! Reading a table's axes and cells out of a ROM image in physical units.

use crate::definition::{Axis, AxisSource, Table};
use crate::scaling::{Kind, Scaling, Storage, hex_upper};
use std::sync::Arc;

/// Decoded axis breakpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisData {
    /// Display texts (formatted numbers, or static labels).
    pub labels: Vec<String>,
    /// Physical values of a dynamic axis.
    pub values: Option<Vec<f64>>,
    /// Raw stored values of a dynamic axis.
    pub raw: Option<Vec<f64>>,
}

/// One cell's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A number in physical units (bits read as 0/1).
    Num(f64),
    /// A bloblist cell: the matching choice's name, or None with the bytes.
    Blob(Option<String>, Vec<u8>),
}

/// A decoded table: `rows × cols` cells, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct TableData {
    /// Rows shown (the row axis's length, 1 without one).
    pub rows: usize,
    /// Columns shown (the column axis's length, 1 without one).
    pub cols: usize,
    /// The cells in physical units, row-major, `rows × cols`.
    pub cells: Vec<Cell>,
    /// Raw stored numbers (NaN for blob cells).
    pub raw: Vec<f64>,
    /// The row axis's breakpoints, when the table has one.
    pub row_axis: Option<AxisData>,
    /// The column axis's breakpoints, when the table has one.
    pub col_axis: Option<AxisData>,
    /// The scaling the cells were decoded with (for formatting them).
    pub scaling: Arc<Scaling>,
}

impl TableData {
    /// The cell at `row`, `col` (0-based; panics outside the table, like
    /// indexing).
    pub fn cell(&self, row: usize, col: usize) -> &Cell {
        &self.cells[row * self.cols + col]
    }

    /// Physical value, NaN for blob cells.
    pub fn value(&self, row: usize, col: usize) -> f64 {
        match self.cell(row, col) {
            Cell::Num(v) => *v,
            Cell::Blob(..) => f64::NAN,
        }
    }

    /// The cell as the scaling formats it.
    pub fn display(&self, row: usize, col: usize) -> String {
        display_cell(&self.scaling, self.cell(row, col))
    }
}

/// Formats one cell with its scaling.
pub fn display_cell(scaling: &Scaling, cell: &Cell) -> String {
    match cell {
        Cell::Num(v) => scaling.display(*v),
        Cell::Blob(Some(name), _) => name.clone(),
        Cell::Blob(None, bytes) => format!("unknown (0x{})", hex_upper(bytes)),
    }
}

/// A table or axis that does not fit in the image.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what} at 0x{address:X} needs {len} bytes but the ROM is only {rom_len} bytes")]
pub struct OutOfRom {
    /// What did not fit, e.g. "table `Fuel Map`" or its axis.
    pub what: String,
    /// ECU address it starts at.
    pub address: usize,
    /// Bytes it needs.
    pub len: usize,
    /// Bytes the image has.
    pub rom_len: usize,
}

fn check_span(
    what: impl FnOnce() -> String,
    address: usize,
    len: usize,
    rom: &[u8],
) -> Result<(), OutOfRom> {
    if address.checked_add(len).is_none_or(|end| end > rom.len()) {
        return Err(OutOfRom {
            what: what(),
            address,
            len,
            rom_len: rom.len(),
        });
    }
    Ok(())
}

/// Decodes `table` from `rom`.
pub fn read_table(table: &Table, rom: &[u8]) -> Result<TableData, OutOfRom> {
    check_span(
        || format!("table `{}`", table.id),
        table.address as usize,
        table.byte_len(),
        rom,
    )?;
    let rows = table.rows();
    let cols = table.cols();
    let scaling = &table.scaling;
    let mut cells = Vec::with_capacity(rows * cols);
    let mut raw = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        for c in 0..cols {
            let (cell, rv) = read_cell(table, rom, r, c);
            cells.push(cell);
            raw.push(rv);
        }
    }
    Ok(TableData {
        rows,
        cols,
        cells,
        raw,
        row_axis: table
            .row_axis
            .as_ref()
            .map(|a| read_axis(a, rom))
            .transpose()?,
        col_axis: table
            .col_axis
            .as_ref()
            .map(|a| read_axis(a, rom))
            .transpose()?,
        scaling: scaling.clone(),
    })
}

/// Bit tables: the cell stored i-th (swapxy/flip applied) is bit (n-1-i)
/// of the big-endian bit string, so the first label (`bit.15`) is the most
/// significant bit, and with swapxy each column is one 16-bit word.
pub fn bit_position(table: &Table, row: usize, col: usize) -> (usize, u8) {
    let n = table.rows() * table.cols();
    let index = table.storage_index(row, col);
    let bit = n - 1 - index;
    let byte_len = n.div_ceil(8);
    let byte = table.address as usize + byte_len - 1 - bit / 8;
    (byte, 1u8 << (bit % 8))
}

fn read_cell(table: &Table, rom: &[u8], row: usize, col: usize) -> (Cell, f64) {
    let scaling = &table.scaling;
    match (&scaling.kind, scaling.storage) {
        (Kind::Bit, _) => {
            let (byte, mask) = bit_position(table, row, col);
            let v = f64::from(u8::from(rom[byte] & mask != 0));
            (Cell::Num(v), v)
        }
        (Kind::Blobs(_), Storage::Blob(len)) => {
            let at = table.cell_offset(row, col);
            let bytes = rom[at..at + len].to_vec();
            let name = scaling.blob_name(&bytes).map(str::to_string);
            (Cell::Blob(name, bytes), f64::NAN)
        }
        _ => {
            let at = table.cell_offset(row, col);
            let rv = scaling.storage.read(scaling.endian, &rom[at..]);
            (Cell::Num(scaling.to_physical(rv)), rv)
        }
    }
}

fn read_axis(axis: &Axis, rom: &[u8]) -> Result<AxisData, OutOfRom> {
    match &axis.source {
        AxisSource::Static(labels) => Ok(AxisData {
            labels: labels.clone(),
            values: None,
            raw: None,
        }),
        AxisSource::Dynamic {
            address,
            elements,
            scaling,
        } => {
            let size = scaling.storage.size();
            check_span(
                || format!("axis `{}`", axis.label()),
                *address as usize,
                elements * size,
                rom,
            )?;
            if let Storage::Blob(len) = scaling.storage {
                // Choice names only: no numbers (NaN would make two equal
                // axes compare unequal in diff_tables).
                let labels = (0..*elements)
                    .map(|i| {
                        let stored = if axis.flip { elements - 1 - i } else { i };
                        let at = *address as usize + stored * len;
                        let bytes = &rom[at..at + len];
                        display_cell(
                            scaling,
                            &Cell::Blob(
                                scaling.blob_name(bytes).map(str::to_string),
                                bytes.to_vec(),
                            ),
                        )
                    })
                    .collect();
                return Ok(AxisData {
                    labels,
                    values: None,
                    raw: None,
                });
            }
            let mut raw = Vec::with_capacity(*elements);
            let mut values = Vec::with_capacity(*elements);
            let mut labels = Vec::with_capacity(*elements);
            for i in 0..*elements {
                let stored = if axis.flip { elements - 1 - i } else { i };
                let at = *address as usize + stored * size;
                let rv = scaling.storage.read(scaling.endian, &rom[at..]);
                let v = scaling.to_physical(rv);
                raw.push(rv);
                values.push(v);
                labels.push(scaling.display(v));
            }
            Ok(AxisData {
                labels,
                values: Some(values),
                raw: Some(raw),
            })
        }
    }
}
