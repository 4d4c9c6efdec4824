//! What a per-turn call hands back to Python: the winners as the records
//! given, and the exclusions as two byte strings (rows, reason codes), after
//! checking that the core gave every candidate exactly one outcome.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use super::InternalError;
use crate::error::{ErrorKind, InputError};
use crate::resolve::Resolution;

/// Every candidate has exactly one outcome: the core guarantees it, and a
/// broken guarantee must be an exception, never a silently wrong answer.
fn check_partition(resolution: &Resolution, candidates: usize) -> PyResult<()> {
    let mut seen = vec![false; candidates];
    let rows = resolution
        .active
        .iter()
        .copied()
        .chain(resolution.excluded.iter().map(|&(row, _)| row));
    let mut count = 0_usize;
    for row in rows {
        match seen.get_mut(row) {
            Some(slot) if !*slot => *slot = true,
            _ => {
                return Err(InternalError::new_err(
                    "the native kernel reported a candidate twice or an unknown row",
                ))
            }
        }
        count += 1;
    }
    if count == candidates {
        Ok(())
    } else {
        Err(InternalError::new_err(
            "the native kernel did not account for every candidate",
        ))
    }
}

pub(super) fn row_number(row: usize) -> PyResult<u32> {
    u32::try_from(row).map_err(|_| {
        super::errors::invalid_input(&InputError {
            kind: ErrorKind::OutOfRange,
            field: "records".to_owned(),
            row: None,
            record_id: None,
            message: "records: more than 2**32 - 1 candidates in one call".to_owned(),
        })
    })
}

/// The result of a call: `(winning records, excluded rows as native-endian u32
/// bytes, excluded reason codes as bytes)`, in the canonical order.
pub(super) type Rows<'py> = (
    Bound<'py, PyTuple>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// The winners as records and the exclusions as bytes: see [`Rows`].
pub(super) fn rows_of<'py>(
    records: &Bound<'py, PyTuple>,
    resolution: &Resolution,
) -> PyResult<Rows<'py>> {
    let py = records.py();
    check_partition(resolution, records.len())?;
    let winners = resolution
        .active
        .iter()
        .map(|&row| records.get_item(row))
        .collect::<PyResult<Vec<_>>>()?;
    let active = PyTuple::new(py, winners)?;
    let mut rows = Vec::with_capacity(resolution.excluded.len() * 4);
    let mut reasons = Vec::with_capacity(resolution.excluded.len());
    for &(row, reason) in &resolution.excluded {
        rows.extend_from_slice(&row_number(row)?.to_ne_bytes());
        reasons.push(reason as u8);
    }
    Ok((active, PyBytes::new(py, &rows), PyBytes::new(py, &reasons)))
}
