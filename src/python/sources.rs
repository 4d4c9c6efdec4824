//! The binding's side of blocking by cited messages (`docs/spec.md` §2.3):
//! a tombstone's salt and hashes read from Python, and which candidates they
//! block, decided from the records' `source_message_ids` before the pipeline
//! runs. Without a tombstone that has hashes nothing here reads a record.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::record::RecordCore;
use crate::error::{ErrorKind, InputError};
use crate::resolve::source_hashes::BadSource;
use crate::resolve::{SourceHashes, SourceIndex, Tombstone};

/// A tombstone's `source_salt` and `blocked_sources` (`None`: no hash).
///
/// # Errors
/// The fields were altered since the tombstone was built into something its
/// rules refuse.
pub(super) fn read_sources(
    tombstone: &Bound<'_, PyAny>,
    row: usize,
) -> PyResult<Option<SourceHashes>> {
    let py = tombstone.py();
    let hashes = tombstone.getattr(intern!(py, "blocked_sources"))?;
    if hashes.is_empty()? {
        return Ok(None);
    }
    let salt = tombstone.getattr(intern!(py, "source_salt"))?;
    let bad = |field: &str, problem: &str| {
        super::errors::invalid_input(&InputError {
            kind: ErrorKind::Malformed,
            field: field.to_owned(),
            row: Some(row),
            record_id: None,
            message: format!("tombstones[{row}]: {field} {problem}"),
        })
    };
    let Ok(salt) = salt.cast::<PyString>() else {
        return Err(bad(
            "source_salt",
            "must be a salt when blocked_sources is not empty",
        ));
    };
    let mut texts = Vec::new();
    for hash in hashes.try_iter()? {
        texts.push(hash?.cast::<PyString>()?.to_str()?.to_owned());
    }
    match SourceHashes::parse(salt.to_str()?, texts.iter().map(String::as_str)) {
        Ok(parsed) => Ok(Some(parsed)),
        Err(BadSource::Salt) => Err(bad(
            "source_salt",
            "must be 16 to 64 bytes as lowercase hex (32 to 128 digits)",
        )),
        Err(BadSource::Hash(_)) => Err(bad(
            "blocked_sources",
            "must hold SHA-256 digests as 64 lowercase hex digits",
        )),
    }
}

/// The message ids `core`'s record cites.
fn cited_by(core: &Bound<'_, RecordCore>) -> PyResult<Vec<String>> {
    let py = core.py();
    let sources = core.get().python_fields().source_message_ids.bind(py);
    let tuple = sources.cast::<PyTuple>()?;
    tuple
        .iter()
        .map(|id| Ok(id.cast::<PyString>()?.to_str()?.to_owned()))
        .collect()
}

/// Whether `index` blocks `core`'s record by the messages it cites.
pub(super) fn blocked(index: &SourceIndex<'_>, core: &Bound<'_, RecordCore>) -> PyResult<bool> {
    let record = core.get().native().record();
    if !index.may_block(&record.scope, record.key) {
        return Ok(false);
    }
    let cited = cited_by(core)?;
    let cited: Vec<&str> = cited.iter().map(String::as_str).collect();
    Ok(index.blocks(&record.scope, record.key, &cited))
}

/// By row, the candidates `tombstones` block by the messages they cite;
/// empty when no tombstone has hashes (no record is read then).
pub(super) fn blocked_rows(
    cores: &[Bound<'_, RecordCore>],
    tombstones: &[Tombstone<'_>],
) -> PyResult<Vec<bool>> {
    let index = SourceIndex::new(tombstones);
    if index.is_empty() {
        return Ok(Vec::new());
    }
    cores.iter().map(|core| blocked(&index, core)).collect()
}
