//! `resolve_rows`: the native backend's kernel. Reads the native storage of
//! each record, the context and the tombstones, runs the Rust pipeline (with
//! the interpreter released for large inputs) and returns row indices.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::cache::Package;
use super::convert::{normalized_datetime_micros, scope_fields, utc_datetime_micros, OwnedScope};
use super::errors::guarded;
use super::record::RecordCore;
use super::rows::{row_number, rows_of, Rows};
use super::sources::{blocked, blocked_rows, read_sources};
use super::InternalError;
use crate::error::{ErrorKind, InputError};
use std::sync::Mutex;

use crate::resolve::order::rows_by_id;
use crate::resolve::prepared::{PreparedScratch, PreparedSet, Refused};
use crate::resolve::{
    resolve_packed_in_id_order, CandidateSet, Context, PackedRecord, SourceHashes, SourceIndex,
    Tombstone, TombstoneIndex,
};

/// From this many candidates on, the pipeline runs with the interpreter
/// released: below it, resolving takes about as long as releasing and
/// re-acquiring, so other threads would gain nothing.
const DETACH_FROM: usize = 512;

fn instant(package: &Package, value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match utc_datetime_micros(package, value) {
        Some(micros) => Ok(micros),
        None => normalized_datetime_micros(value),
    }
}

/// The exact `str` attribute `name` of `object`, owned. Names are interned
/// (`intern!`): a name built per call costs more than the read it names.
fn text(object: &Bound<'_, PyAny>, name: &Bound<'_, PyString>) -> PyResult<String> {
    Ok(object
        .getattr(name)?
        .cast::<PyString>()?
        .to_str()?
        .to_owned())
}

/// The `str` or `None` attribute `name` of `object`, owned.
fn optional_text(
    object: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
) -> PyResult<Option<String>> {
    let value = object.getattr(name)?;
    if value.is_none() {
        return Ok(None);
    }
    Ok(Some(value.cast::<PyString>()?.to_str()?.to_owned()))
}

/// The context's fields, owned (it is one object per call).
struct OwnedContext {
    now: i64,
    user_id: String,
    character_id: Option<String>,
    conversation_id: Option<String>,
    scene_id: Option<String>,
}

impl OwnedContext {
    fn read(package: &Package, context: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = context.py();
        Ok(Self {
            now: instant(package, &context.getattr(intern!(py, "now"))?)?,
            user_id: text(context, intern!(py, "user_id"))?,
            character_id: optional_text(context, intern!(py, "character_id"))?,
            conversation_id: optional_text(context, intern!(py, "conversation_id"))?,
            scene_id: optional_text(context, intern!(py, "scene_id"))?,
        })
    }

    fn borrow(&self) -> Context<'_> {
        Context {
            now: self.now,
            user_id: &self.user_id,
            character_id: self.character_id.as_deref(),
            conversation_id: self.conversation_id.as_deref(),
            scene_id: self.scene_id.as_deref(),
        }
    }
}

#[derive(Clone)]
pub(super) struct OwnedTombstone {
    key: String,
    scope: OwnedScope,
    blocks_sources_before: i64,
    user_wide: bool,
    sources: Option<SourceHashes>,
}

impl OwnedTombstone {
    fn read(package: &Package, tombstone: &Bound<'_, PyAny>, row: usize) -> PyResult<Self> {
        let py = tombstone.py();
        let scope = tombstone.getattr(intern!(py, "scope"))?;
        let scope = if let Some(scope) = scope_fields(package, &scope)? {
            scope
        } else {
            // Altered since it was built: the rule raises the reference's
            // error, or gives the scope back normalised (plain `str` ids).
            let checked = package
                .check_tombstone_scope
                .bind(tombstone.py())
                .call1((tombstone, row))?;
            scope_fields(package, &checked)?.ok_or_else(|| {
                InternalError::new_err(
                    "a tombstone scope passed its rule but not the native reader",
                )
            })?
        };
        Ok(Self {
            key: text(tombstone, intern!(py, "key"))?,
            scope,
            blocks_sources_before: instant(
                package,
                &tombstone.getattr(intern!(py, "blocks_sources_before"))?,
            )?,
            // Checked a bool on a user scope when the tombstone was built.
            user_wide: tombstone.getattr(intern!(py, "user_wide"))?.is_truthy()?,
            sources: read_sources(tombstone, row)?,
        })
    }

    /// Whether it blocks records by the messages they cite.
    pub(super) fn has_sources(&self) -> bool {
        self.sources.is_some()
    }

    pub(super) fn borrow(&self) -> Tombstone<'_> {
        Tombstone {
            key: &self.key,
            scope: self.scope.borrow(),
            blocks_sources_before: self.blocks_sources_before,
            user_wide: self.user_wide,
            sources: self.sources.as_ref(),
        }
    }
}

/// Every candidate's native storage, in row order, up to the first row that
/// is not a record (whose error is returned beside them: a repeated id
/// before it must be reported first, as the reference checks row by row). Only an exact `MemoryRecord` is read directly; a
/// subclass (which may override a field) or a record on the pure-Python
/// storage is copied from its attributes, and anything else is rejected, both
/// by `memresolve._model._records.native_core_of`.
pub(super) fn cores<'py>(
    package: &Package,
    records: &Bound<'py, PyTuple>,
) -> PyResult<(Vec<Bound<'py, RecordCore>>, Option<PyErr>)> {
    cores_from(package, records, 0)
}

/// [`cores`] of records that follow `first_row` others (errors name rows
/// counted from those).
fn cores_from<'py>(
    package: &Package,
    records: &Bound<'py, PyTuple>,
    first_row: usize,
) -> PyResult<(Vec<Bound<'py, RecordCore>>, Option<PyErr>)> {
    let py = records.py();
    let memory_record = package.memory_record.bind(py);
    let mut cores = Vec::with_capacity(records.len());
    let mut not_a_record = None;
    for (row, candidate) in records.iter().enumerate() {
        let direct = if candidate.get_type().is(memory_record) {
            candidate.cast::<RecordCore>().ok().cloned()
        } else {
            None
        };
        let core = match direct {
            Some(core) => core,
            None => match package
                .native_core_of
                .bind(py)
                .call1((&candidate, first_row + row))
            {
                Ok(copy) => copy.cast_into::<RecordCore>().map_err(|_| {
                    InternalError::new_err("native_core_of returned something else")
                })?,
                Err(error) => {
                    not_a_record = Some(error);
                    break;
                }
            },
        };
        cores.push(core);
    }
    Ok((cores, not_a_record))
}

/// The candidates' native storage as one candidate set, row for row.
pub(super) fn candidate_set<'c>(
    cores: impl ExactSizeIterator<Item = &'c RecordCore>,
) -> CandidateSet<'c> {
    let mut candidates = CandidateSet::with_capacity(cores.len());
    for core in cores {
        candidates.push(core.native().record());
    }
    candidates
}

/// Every candidate is a record (`not_a_record` is the first that is not) and
/// no two share an id; a repeated id is reported first, as the reference
/// checks row by row.
pub(super) fn check_candidates(
    package: &Package,
    cores: &[Bound<'_, RecordCore>],
    candidates: &CandidateSet<'_>,
    not_a_record: Option<PyErr>,
) -> PyResult<()> {
    if let Some((earlier, row)) = candidates.first_duplicate_id() {
        return Err(repeated_id(package, cores, earlier, row));
    }
    not_a_record.map_or(Ok(()), Err)
}

/// The reference's error for the id of row `row` repeating row `earlier`'s.
fn repeated_id(
    package: &Package,
    cores: &[Bound<'_, RecordCore>],
    earlier: usize,
    row: usize,
) -> PyErr {
    let Some(core) = cores.get(row) else {
        return InternalError::new_err("a repeated id names no candidate");
    };
    repeated_id_of(package, core, earlier, row)
}

/// The reference's error for `core`, at row `row`, repeating row `earlier`'s id.
fn repeated_id_of(
    package: &Package,
    core: &Bound<'_, RecordCore>,
    earlier: usize,
    row: usize,
) -> PyErr {
    let py = core.py();
    match package
        .duplicate_id_error
        .bind(py)
        .call1((core.get().id_object(py), earlier, row))
    {
        Ok(error) => PyErr::from_value(error),
        Err(error) => error,
    }
}

pub(super) fn read_tombstones(
    package: &Package,
    tombstones: &Bound<'_, PyTuple>,
) -> PyResult<Vec<OwnedTombstone>> {
    tombstones
        .iter()
        .enumerate()
        .map(|(row, tombstone)| OwnedTombstone::read(package, &tombstone, row))
        .collect()
}

/// Resolves checked candidates (`packed`, the storage of `records`, row for
/// row; `by_id`, their rows in id order).
fn resolve_packed<'py>(
    package: &Package,
    records: &Bound<'py, PyTuple>,
    cores: &[Bound<'py, RecordCore>],
    packed: &[&PackedRecord],
    by_id: &[usize],
    context: &Bound<'py, PyAny>,
    tombstones: &[OwnedTombstone],
) -> PyResult<Rows<'py>> {
    let py = records.py();
    let context = OwnedContext::read(package, context)?;
    let borrowed: Vec<Tombstone<'_>> = tombstones.iter().map(OwnedTombstone::borrow).collect();
    let blocked_by_sources = blocked_rows(cores, &borrowed)?;
    let run = || {
        resolve_packed_in_id_order(
            packed,
            &context.borrow(),
            &TombstoneIndex::new(&borrowed),
            &blocked_by_sources,
            by_id,
        )
    };
    let resolution = if packed.len() >= DETACH_FROM {
        py.detach(run)
    } else {
        run()
    }
    .map_err(super::errors::internal)?;

    rows_of(records, &resolution)
}

/// Resolves the candidates: see [`Rows`].
#[pyfunction]
pub(crate) fn resolve_rows<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyTuple>,
    context: &Bound<'py, PyAny>,
    tombstones: &Bound<'py, PyTuple>,
) -> PyResult<Rows<'py>> {
    guarded(|| {
        let package = Package::get(py)?;
        let (cores, not_a_record) = cores(package, records)?;
        // Read where they are: copying them into a `CandidateSet` costs more.
        let packed: Vec<&PackedRecord> = cores.iter().map(|core| core.get().native()).collect();
        // One sort checks the ids and orders the exclusions.
        let by_id = rows_by_id(packed.iter().map(|record| record.id()))
            .map_err(|(earlier, row)| repeated_id(package, &cores, earlier, row))?;
        if let Some(error) = not_a_record {
            return Err(error);
        }
        let tombstones = read_tombstones(package, tombstones)?;
        resolve_packed(
            package,
            records,
            &cores,
            &packed,
            &by_id,
            context,
            &tombstones,
        )
    })
}

/// Candidates and tombstones read and checked once, to resolve in many
/// contexts: what a store keeps for a context it serves turn after turn.
/// Reading a record's native storage, checking ids are unique and reading
/// the tombstones cost about as much as deciding, for a few hundred
/// candidates; a prepared set pays them once, and numbers ids, keys and
/// scopes so that a call reads no string per candidate ([`PreparedSet`]).
#[pyclass(module = "memresolve._native", frozen)]
pub(crate) struct PreparedCandidates {
    records: Py<PyTuple>,
    set: PreparedSet,
    /// The tombstones with hashes: a record added later is tested against
    /// them (the set keeps no message id).
    hashed: Vec<OwnedTombstone>,
    /// Buffers reused from call to call (a call that finds them taken by
    /// another thread allocates its own).
    scratch: Mutex<PreparedScratch>,
}

/// A prepared set's refusal, after the ids were checked: a set too large
/// for its numbers, or a bug.
fn refused(refusal: Refused) -> PyErr {
    match refusal {
        Refused::TooLarge => super::errors::invalid_input(&InputError {
            kind: ErrorKind::OutOfRange,
            field: "records".to_owned(),
            row: None,
            record_id: None,
            message: "records: more candidates, or more text in their ids, keys and \
                      supersedes, than one prepared set holds (4 GiB)"
                .to_owned(),
        }),
        Refused::RepeatedId { .. } => {
            InternalError::new_err("checked candidates repeat an id in the prepared set")
        }
        Refused::Broken(broken) => super::errors::internal(broken),
    }
}

#[pymethods]
impl PreparedCandidates {
    #[new]
    fn new(records: &Bound<'_, PyTuple>, tombstones: &Bound<'_, PyTuple>) -> PyResult<Self> {
        guarded(|| {
            let package = Package::get(records.py())?;
            let (cores, not_a_record) = cores(package, records)?;
            let mut candidates = candidate_set(cores.iter().map(Bound::get));
            check_candidates(package, &cores, &candidates, not_a_record)?;
            let tombstones = read_tombstones(package, tombstones)?;
            let borrowed: Vec<Tombstone<'_>> =
                tombstones.iter().map(OwnedTombstone::borrow).collect();
            for (row, is_blocked) in blocked_rows(&cores, &borrowed)?.into_iter().enumerate() {
                if is_blocked {
                    candidates.mark_blocked_by_sources(row);
                }
            }
            let set = PreparedSet::new(&candidates, &borrowed).map_err(refused)?;
            drop(borrowed);
            Ok(Self {
                // Decided on the records' storage (a copy for a subclass or an
                // altered record), answered with the records as given, as `resolve_rows` does.
                records: records.clone().unbind(),
                set,
                hashed: tombstones
                    .into_iter()
                    .filter(OwnedTombstone::has_sources)
                    .collect(),
                scratch: Mutex::new(PreparedScratch::default()),
            })
        })
    }

    /// The candidates, as given.
    #[getter]
    fn records(&self, py: Python<'_>) -> Py<PyTuple> {
        self.records.clone_ref(py)
    }

    /// A copy with `records` added after the candidates, checked as the
    /// constructor checks them (rows counted on from the candidates'): the
    /// set grows in place of being prepared again, and this one is unchanged
    /// for whoever still resolves with it.
    fn extended(&self, records: &Bound<'_, PyTuple>) -> PyResult<Self> {
        guarded(|| {
            let py = records.py();
            let package = Package::get(py)?;
            let first_row = self.set.len();
            let (cores, not_a_record) = cores_from(package, records, first_row)?;
            let mut set = self.set.clone();
            let hashed: Vec<Tombstone<'_>> =
                self.hashed.iter().map(OwnedTombstone::borrow).collect();
            let index = SourceIndex::new(&hashed);
            for core in &cores {
                let is_blocked = !index.is_empty() && blocked(&index, core)?;
                match set.push(&core.get().native().record(), is_blocked) {
                    Ok(()) => {}
                    Err(Refused::RepeatedId { earlier, later }) => {
                        return Err(repeated_id_of(package, core, earlier, later));
                    }
                    Err(other) => return Err(refused(other)),
                }
            }
            if let Some(error) = not_a_record {
                return Err(error);
            }
            let all: Vec<_> = self.records.bind(py).iter().chain(records.iter()).collect();
            Ok(Self {
                records: PyTuple::new(py, all)?.unbind(),
                set,
                hashed: self.hashed.clone(),
                scratch: Mutex::new(PreparedScratch::default()),
            })
        })
    }

    /// A copy that also holds `tombstones`, with `records` in place of the
    /// candidates with their ids: what a store's forget leaves (a tombstone,
    /// and the blocked records with their text erased). A stand-in must read
    /// as its candidate does for resolution (id, key, scope, `supersedes`,
    /// facts): only text may differ. This one is unchanged.
    fn forgotten(
        &self,
        tombstones: &Bound<'_, PyTuple>,
        records: &Bound<'_, PyTuple>,
    ) -> PyResult<Self> {
        guarded(|| {
            let py = records.py();
            let package = Package::get(py)?;
            let tombstones = read_tombstones(package, tombstones)?;
            let (cores, not_a_record) = cores(package, records)?;
            if let Some(error) = not_a_record {
                return Err(error);
            }
            let mut set = self.set.clone();
            for tombstone in &tombstones {
                set.forget(&tombstone.borrow())
                    .map_err(super::errors::internal)?;
            }
            // The new hashes, tested against the candidates as they were
            // (a stand-in has its message ids erased).
            let told: Vec<Tombstone<'_>> = tombstones
                .iter()
                .filter(|tombstone| tombstone.has_sources())
                .map(OwnedTombstone::borrow)
                .collect();
            if !told.is_empty() {
                let given = self.records.bind(py);
                let (kept, _) = cores_from(package, given, 0)?;
                for (row, is_blocked) in blocked_rows(&kept, &told)?.into_iter().enumerate() {
                    if is_blocked {
                        set.mark_blocked_by_sources(row_number(row)?);
                    }
                }
            }
            drop(told);
            let mut hashed = self.hashed.clone();
            hashed.extend(tombstones.into_iter().filter(OwnedTombstone::has_sources));
            let mut all: Vec<_> = self.records.bind(py).iter().collect();
            for (core, record) in cores.iter().zip(records.iter()) {
                let stand_in = core.get().native().record();
                let row = set
                    .row_of_id(stand_in.id)
                    .filter(|&row| set.decides_alike(row, &stand_in))
                    .and_then(|row| all.get_mut(row as usize))
                    .ok_or_else(|| {
                        InternalError::new_err(
                            "a stand-in record is no candidate's, or differs from it in \
                             what resolution reads",
                        )
                    })?;
                *row = record;
            }
            Ok(Self {
                records: PyTuple::new(py, all)?.unbind(),
                set,
                hashed,
                scratch: Mutex::new(PreparedScratch::default()),
            })
        })
    }

    /// Resolves the candidates in `context`: see [`Rows`].
    fn resolve_rows<'py>(
        &self,
        py: Python<'py>,
        context: &Bound<'py, PyAny>,
    ) -> PyResult<Rows<'py>> {
        guarded(|| {
            let package = Package::get(py)?;
            let context = OwnedContext::read(package, context)?;
            let run = || match self.scratch.try_lock() {
                Ok(mut scratch) => self.set.resolve(&context.borrow(), &mut scratch),
                Err(_) => self
                    .set
                    .resolve(&context.borrow(), &mut PreparedScratch::default()),
            };
            let resolution = if self.set.len() >= DETACH_FROM {
                py.detach(run)
            } else {
                run()
            }
            .map_err(super::errors::internal)?;
            rows_of(self.records.bind(py), &resolution)
        })
    }
}
