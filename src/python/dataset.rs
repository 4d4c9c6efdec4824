//! `Router`: the native half of the streamed batch job (`memresolve._dataset._resolve_job`).
//! Each batch of the input is checked by every rule of the batch form (rows
//! numbered in the whole input) and routed to the parts of its owners
//! (`crate::partition`); the Python half writes each part's rows to its
//! spill files, then resolves part by part with `resolve_batch`.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::batch::{import, Imported};
use crate::arrow_input::{
    check_records, id_hashes, lasting_edges, read_contexts, read_tombstones, read_values, Table,
};
use crate::error::{Broken, Error};
use crate::partition::{ConversationParts, Partitioner};
use crate::resolve::ScopeRef;

/// Rows grouped by part: the row numbers, part after part, and where each
/// part's rows end (one entry per part).
struct Routed {
    rows: Vec<u32>,
    ends: Vec<u32>,
}

impl Routed {
    /// Groups `(part, row)` pairs by part, keeping their order within a
    /// part (rows ascend: pairs come in row order). A counting sort: parts
    /// are few, and a comparison sort of each batch's pairs was 7% of routing.
    fn group(parts: u32, pairs: &[(u32, u32)]) -> Result<Self, Broken> {
        let mut next = vec![0_u32; parts as usize];
        for &(part, _) in pairs {
            *next
                .get_mut(part as usize)
                .ok_or(Broken("a row was routed past the last part"))? += 1;
        }
        let mut ends = Vec::with_capacity(next.len());
        let mut total = 0_u32;
        for count in &mut next {
            let start = total;
            total += *count;
            ends.push(total);
            *count = start; // now where the part's next row goes
        }
        debug_assert!(
            pairs
                .windows(2)
                .all(|pair| matches!(pair, [a, b] if a.1 <= b.1)),
            "pairs come in row order, so rows ascend within each part"
        );
        let mut rows = vec![0_u32; pairs.len()];
        for &(part, row) in pairs {
            let slot = next
                .get_mut(part as usize)
                .ok_or(Broken("a row was routed past the last part"))?;
            *rows
                .get_mut(*slot as usize)
                .ok_or(Broken("a part's rows overflow the batch"))? = row;
            *slot += 1;
        }
        Ok(Self { rows, ends })
    }
}

fn u32_bytes<'py>(py: Python<'py>, values: &[u32]) -> Bound<'py, PyBytes> {
    let mut bytes = Vec::with_capacity(values.len() * 4);
    for value in values {
        bytes.extend_from_slice(&value.to_ne_bytes());
    }
    PyBytes::new(py, &bytes)
}

fn hash_bytes<'py>(py: Python<'py>, hashes: &[(u64, u64)]) -> Bound<'py, PyBytes> {
    let mut bytes = Vec::with_capacity(hashes.len() * 16);
    for (high, low) in hashes {
        bytes.extend_from_slice(&high.to_ne_bytes());
        bytes.extend_from_slice(&low.to_ne_bytes());
    }
    PyBytes::new(py, &bytes)
}

fn row_number(row: usize) -> Result<u32, Broken> {
    u32::try_from(row).map_err(|_| Broken("a batch has more than 2^32 rows"))
}

/// Routes the input of a batch job to parts, checking it on the way.
#[pyclass(frozen, module = "memresolve._native")]
pub(crate) struct Router {
    conversations: Mutex<ConversationParts>,
    parts: u32,
    /// Records are checked for `resolve_batch(..., with_values=True)` too
    /// (`value` and `confidence`), so every row is, whichever part it reaches.
    with_values: bool,
}

impl Router {
    fn conversations(&self) -> std::sync::MutexGuard<'_, ConversationParts> {
        self.conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

type Bytes<'py> = Bound<'py, PyBytes>;

#[pymethods]
impl Router {
    #[new]
    #[pyo3(signature = (parts, seed, with_values = false))]
    fn new(parts: u32, seed: u64, with_values: bool) -> Self {
        let partitioner = Partitioner::new(parts, seed);
        Self {
            conversations: Mutex::new(ConversationParts::new(partitioner)),
            parts: partitioner.parts(),
            with_values,
        }
    }

    /// The number of parts.
    #[getter]
    fn parts(&self) -> u32 {
        self.parts
    }

    /// Checks a batch of contexts, rows `row_offset..` of the input, and
    /// notes which parts name which conversations (route contexts before
    /// records). Returns the rows by part, where each part ends, and the
    /// `context_id` hashes in row order.
    fn contexts<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        row_offset: usize,
    ) -> PyResult<(Bytes<'py>, Bytes<'py>, Bytes<'py>)> {
        let imported = import(batch, "contexts")?;
        let (routed, hashes) = detached(py, || -> Result<_, Error> {
            let table = table("contexts", &imported).starting_at(row_offset);
            let (_, contexts) = read_contexts(&table)?;
            let mut conversations = self.conversations();
            let mut pairs = Vec::with_capacity(contexts.len());
            for (row, context) in contexts.iter().enumerate() {
                let part = conversations.add_context(context.user_id, context.conversation_id);
                pairs.push((part, row_number(row)?));
            }
            Ok((
                Routed::group(self.parts, &pairs)?,
                id_hashes(&table, "context_id")?,
            ))
        })?;
        Ok((
            u32_bytes(py, &routed.rows),
            u32_bytes(py, &routed.ends),
            hash_bytes(py, &hashes),
        ))
    }

    /// Checks a batch of records, rows `row_offset..` of the input, by every
    /// rule but unique ids, and routes each row to the parts of its owners
    /// (none for an unowned conversation no context names). Returns the
    /// rows by part, where each part ends, and the `id` hashes in row order.
    fn records<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        row_offset: usize,
    ) -> PyResult<(Bytes<'py>, Bytes<'py>, Bytes<'py>)> {
        let imported = import(batch, "records")?;
        let (routed, hashes) = detached(py, || -> Result<_, Error> {
            let table = table("records", &imported).starting_at(row_offset);
            let scopes = check_records(&table)?;
            if self.with_values {
                read_values(&table)?;
            }
            let routed = self.route(&scopes)?;
            Ok((routed, id_hashes(&table, "id")?))
        })?;
        Ok((
            u32_bytes(py, &routed.rows),
            u32_bytes(py, &routed.ends),
            hash_bytes(py, &hashes),
        ))
    }

    /// Checks a batch of tombstones, rows `row_offset..`, and routes each row
    /// as records are routed. Returns the rows by part and where each part ends.
    fn tombstones<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        row_offset: usize,
    ) -> PyResult<(Bytes<'py>, Bytes<'py>)> {
        let imported = import(batch, "tombstones")?;
        let routed = detached(py, || -> Result<_, Error> {
            let table = table("tombstones", &imported).starting_at(row_offset);
            let read = read_tombstones(&table)?;
            let scopes: Vec<ScopeRef<'_>> = read
                .tombstones()
                .iter()
                .map(|tombstone| tombstone.scope)
                .collect();
            Ok(self.route(&scopes)?)
        })?;
        Ok((u32_bytes(py, &routed.rows), u32_bytes(py, &routed.ends)))
    }
}

impl Router {
    fn route(&self, scopes: &[ScopeRef<'_>]) -> Result<Routed, Broken> {
        let conversations = self.conversations();
        row_number(scopes.len())?;
        let mut pairs = Vec::with_capacity(scopes.len());
        conversations.route_each(scopes, |row, part| {
            pairs.push((part, u32::try_from(row).unwrap_or(u32::MAX)));
        });
        Routed::group(self.parts, &pairs)
    }
}

/// The part of a record id among `parts`, from its hash.
fn part_of_id(hash: (u64, u64), parts: u32) -> u32 {
    u32::try_from((u128::from(hash.0) * u128::from(parts.max(1))) >> 64).unwrap_or(0)
}

/// Checks a batch of records, rows `row_offset..` of the input, by every
/// rule but unique ids, and routes it for normalisation at `now`
/// (`docs/spec.md` §7.1) by record id: each row to the part of its own id,
/// and each lasting correction also to the part of the id it names, so a
/// part holds every record it decides and every edge that can normalise one.
/// Returns the home rows by part and where each part ends, the copies'
/// rows by part and their ends, and the `id` hashes in row order.
#[pyfunction]
pub(crate) fn route_by_id<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    row_offset: usize,
    parts: u32,
    now: i64,
) -> PyResult<(Bytes<'py>, Bytes<'py>, Bytes<'py>, Bytes<'py>, Bytes<'py>)> {
    let imported = import(batch, "records")?;
    let (home, copies, hashes) = detached(py, || -> Result<_, Error> {
        let table = table("records", &imported).starting_at(row_offset);
        check_records(&table)?;
        let hashes = id_hashes(&table, "id")?;
        let edges = lasting_edges(&table, now)?;
        let mut home = Vec::with_capacity(hashes.len());
        let mut copies = Vec::new();
        for (row, (&hash, edge)) in hashes.iter().zip(&edges).enumerate() {
            let row = row_number(row)?;
            let own = part_of_id(hash, parts);
            home.push((own, row));
            if let Some(target) = edge.map(|target| part_of_id(target, parts)) {
                if target != own {
                    copies.push((target, row));
                }
            }
        }
        Ok((
            Routed::group(parts, &home)?,
            Routed::group(parts, &copies)?,
            hashes,
        ))
    })?;
    Ok((
        u32_bytes(py, &home.rows),
        u32_bytes(py, &home.ends),
        u32_bytes(py, &copies.rows),
        u32_bytes(py, &copies.ends),
        hash_bytes(py, &hashes),
    ))
}

/// Runs `work` with the interpreter released; a panic in it (Arrow's code runs
/// there too) becomes `InternalError`.
fn detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
            .unwrap_or_else(|_| Err(Broken("a panic while routing a batch").into()))
    })
    .map_err(PyErr::from)
}

fn table<'t>(what: &'static str, imported: &'t Imported) -> Table<'t> {
    Table::new(what, imported.0.clone(), &imported.1)
}
