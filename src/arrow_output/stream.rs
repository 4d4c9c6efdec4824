//! A batch result built context by context and handed over as it goes:
//! whole, or in groups of about a given size, so that a call whose contexts
//! see many records each never holds its whole output (it can be far larger
//! than the records).

use std::ops::Range;

use arrow_array::RecordBatch;
use rayon::prelude::*;

use super::{decision_batch, output_schema};
use crate::arrow_input::Values;
use crate::batch::owner_order::{in_input_order, owner_order};
use crate::batch::{
    resolve_chunks, resolve_contexts, DecisionChunk, Store, StoreTombstones, CHUNK,
};
use crate::error::{Broken, Error};
use crate::resolve::Context;

/// Where a result goes: called with output batches in order.
pub type Flush<'f> = dyn FnMut(Vec<RecordBatch>) -> Result<(), Error> + 'f;

/// What resolving every context of a call reads.
pub struct Decisions<'d, 'a> {
    pub store: &'d Store<'a>,
    pub context_ids: &'d [&'d str],
    pub contexts: &'d [Context<'d>],
    pub tombstones: &'d StoreTombstones,
    pub include_excluded: bool,
    pub values: Option<&'d Values<'d>>,
}

impl Decisions<'_, '_> {
    fn build(&self, ids: &[&str], chunk: &DecisionChunk) -> Result<RecordBatch, Broken> {
        let schema = output_schema(self.values.is_some());
        decision_batch(&schema, ids, self.store, chunk, self.values)
    }

    /// Every context's output, in order: one batch per chunk of contexts,
    /// resolved and built in parallel.
    ///
    /// # Errors
    /// [`Broken`] for a bug.
    pub fn whole(&self) -> Result<Vec<RecordBatch>, Error> {
        let reordered = (self.contexts.len() >= REORDER_FROM)
            .then(|| owner_order(self.contexts))
            .flatten();
        let chunks = match reordered {
            None => resolve_contexts(
                self.store,
                self.contexts,
                self.tombstones,
                self.include_excluded,
            )?,
            Some(order) => {
                let by_owner: Vec<Context<'_>> = order
                    .iter()
                    .filter_map(|&at| self.contexts.get(at).copied())
                    .collect();
                let resolved = resolve_contexts(
                    self.store,
                    &by_owner,
                    self.tombstones,
                    self.include_excluded,
                )?;
                in_input_order(&resolved, &order, CHUNK)?
            }
        };
        let batches: Result<Vec<RecordBatch>, Broken> = if chunks.len() > 1 {
            chunks
                .par_iter()
                .map(|c| self.build(self.context_ids, c))
                .collect()
        } else {
            chunks
                .iter()
                .map(|c| self.build(self.context_ids, c))
                .collect()
        };
        Ok(batches?)
    }

    /// Every context's output, in order, handed to `flush` in groups of
    /// `flush_bytes` of Arrow or more (the last may be smaller). Contexts are
    /// resolved a window at a time, in chunks, and built a group of chunks at
    /// a time, both in parallel.
    ///
    /// # Errors
    /// What `flush` returns, or [`Broken`] for a bug.
    pub fn stream(&self, flush_bytes: usize, flush: &mut Flush<'_>) -> Result<(), Error> {
        // A window's decisions (about 6 bytes a row) are held until its output
        // is built: windows are cut by the rows their contexts can see, which
        // bound their output rows. Its chunks are cut by the most their output
        // can take (every row each context can see, with its texts), so that
        // one chunk's output stays within a flush however long ids and values
        // are; a group of chunks is built at a time.
        let text_bytes = self.text_bytes_by_scope();
        let seen: Vec<Seen> = self
            .contexts
            .par_iter()
            .zip(self.context_ids.par_iter())
            .map(|(context, id)| self.seen(context, id, &text_bytes))
            .collect();
        let rows: Vec<usize> = seen.iter().map(|s| s.rows).collect();
        let rows_per_window = (flush_bytes / DECISION_BYTES).max(1);
        let mut output = Streamed::new(flush_bytes);
        let mut first = 0;
        while first < self.contexts.len() {
            let end = window_end(&rows, first, rows_per_window);
            let (contexts, ids, window) = (
                self.contexts.get(first..end).unwrap_or(&[]),
                self.context_ids.get(first..end).unwrap_or(&[]),
                seen.get(first..end).unwrap_or(&[]),
            );
            let ranges = chunk_ranges(window, flush_bytes);
            let weights: Vec<usize> = ranges
                .iter()
                .map(|range| window.get(range.clone()).map_or(0, total_weight))
                .collect();
            let chunks = resolve_chunks(
                self.store,
                contexts,
                &ranges,
                self.tombstones,
                self.include_excluded,
            )?;
            let (mut rest, mut rest_weights): (&[DecisionChunk], &[usize]) = (&chunks, &weights);
            while !rest.is_empty() {
                let count = output.group_len(rest, rest_weights);
                let (group, after) = rest.split_at(count);
                let batches: Result<Vec<RecordBatch>, Broken> =
                    group.par_iter().map(|c| self.build(ids, c)).collect();
                output.add(batches?, flush)?;
                rest = after;
                rest_weights = rest_weights.get(count..).unwrap_or(&[]);
            }
            first = end;
        }
        output.finish(flush)
    }
}

/// What a context can see: its candidate rows, and the most its output can
/// take (see [`Decisions::seen`]).
#[derive(Clone, Copy)]
struct Seen {
    rows: usize,
    weight: usize,
}

fn total_weight(seen: &[Seen]) -> usize {
    seen.iter().map(|s| s.weight).fold(0, usize::saturating_add)
}

/// Chunks of a window's contexts: at most [`CHUNK`] contexts each, and no
/// more than weigh `bytes` together (at least one context).
fn chunk_ranges(seen: &[Seen], bytes: usize) -> Vec<Range<usize>> {
    let mut ranges = Vec::with_capacity(seen.len() / CHUNK + 1);
    let (mut start, mut weight) = (0, 0_usize);
    for (index, context) in seen.iter().enumerate() {
        let full = index - start == CHUNK || weight.saturating_add(context.weight) > bytes;
        if index > start && full {
            ranges.push(start..index);
            (start, weight) = (index, 0);
        }
        weight = weight.saturating_add(context.weight);
    }
    if start < seen.len() {
        ranges.push(start..seen.len());
    }
    ranges
}

impl Decisions<'_, '_> {
    /// The text bytes an output row of each scope's records can carry: the
    /// record's id, and with values its key and value.
    fn text_bytes_by_scope(&self) -> Vec<usize> {
        let mut bytes = vec![0_usize; self.store.scopes.len()];
        for (row, &scope) in self.store.scope_numbers.iter().enumerate() {
            let id = self.store.ids.get(row).map_or(0, |id| id.text.len());
            let texts = self
                .values
                .and_then(|values| values.of(row))
                .map_or(0, |(key, value, _)| key.len().saturating_add(value.len()));
            if let Some(total) = bytes.get_mut(scope as usize) {
                *total = total.saturating_add(id).saturating_add(texts);
            }
        }
        bytes
    }

    /// The rows a context can see, and the most its output can take: per
    /// row, its fixed columns and the context's id, and the record's texts.
    fn seen(&self, context: &Context<'_>, id: &str, text_bytes: &[usize]) -> Seen {
        let per_row = ROW_BYTES.saturating_add(id.len());
        let mut seen = Seen { rows: 0, weight: 0 };
        for scope in self.store.scopes_of(context) {
            let rows = self.store.scopes.rows_of(scope).len();
            let texts = text_bytes.get(scope as usize).copied().unwrap_or(0);
            seen.rows = seen.rows.saturating_add(rows);
            seen.weight = seen
                .weight
                .saturating_add(rows.saturating_mul(per_row).saturating_add(texts));
        }
        seen
    }
}

/// What a decision row takes while it waits to be built (row and outcome,
/// with room for the vectors' growth).
const DECISION_BYTES: usize = 8;

/// An output row's bytes besides its texts: its strings' offsets, its codes
/// and their validity.
const ROW_BYTES: usize = 24;

/// The most a group of chunks may weigh, in flushes: with the window's
/// decisions and the output not yet handed over (each less than a flush), a
/// call holds at most three flushes beside what it handed over.
const GROUP_FLUSHES: usize = 1;

/// Where the window from `first` ends: after as many contexts as can see
/// `rows` rows together (at least one, at most [`most_contexts`]).
fn window_end(candidates: &[usize], first: usize, rows: usize) -> usize {
    let last = first.saturating_add(most_contexts()).min(candidates.len());
    let mut seen = 0_usize;
    let mut end = first;
    while end < last {
        let next = candidates.get(end).copied().unwrap_or(0);
        if end > first && seen.saturating_add(next) > rows {
            break;
        }
        seen = seen.saturating_add(next);
        end += 1;
    }
    end
}

/// The largest window of contexts: while their rows are few, windows this
/// large keep every thread busy between the waits at their ends.
fn most_contexts() -> usize {
    CHUNK * WINDOW_CHUNKS_PER_THREAD * rayon::current_num_threads().max(1)
}

/// From this many contexts on, a call whose contexts are not grouped by user
/// resolves them owner by owner ([`owner_order`]); below, the reordering
/// would cost more than it saves.
const REORDER_FROM: usize = 64;

/// Chunks of contexts resolved at a time, per thread, when the result is
/// handed over as it goes, while their rows are few (see [`window_end`]).
const WINDOW_CHUNKS_PER_THREAD: usize = 32;

/// The output of a streamed call: batches held until they make about
/// `flush_bytes`, then handed over.
struct Streamed {
    flush_bytes: usize,
    pending: Vec<RecordBatch>,
    pending_bytes: usize,
    /// Arrow bytes an output row took so far (none yet: a first group is one chunk).
    bytes_per_row: Option<usize>,
}

impl Streamed {
    fn new(flush_bytes: usize) -> Self {
        Self {
            flush_bytes,
            pending: Vec::new(),
            pending_bytes: 0,
            bytes_per_row: None,
        }
    }

    /// How many of `chunks` to build next: as many as fill what is left
    /// before a flush, by their rows, and at least one; never more than
    /// [`GROUP_FLUSHES`] flushes by their `weights` (the most their output can
    /// take), lest rows far longer than the ones before fill memory.
    fn group_len(&self, chunks: &[DecisionChunk], weights: &[usize]) -> usize {
        let Some(bytes_per_row) = self.bytes_per_row else {
            return 1;
        };
        let room = self.flush_bytes.saturating_sub(self.pending_bytes);
        let most = self.flush_bytes.saturating_mul(GROUP_FLUSHES);
        let (mut bytes, mut weight) = (0_usize, 0_usize);
        let mut count = 0;
        for (chunk, &next) in chunks.iter().zip(weights) {
            if count > 0 && (bytes >= room || weight.saturating_add(next) > most) {
                break;
            }
            bytes = bytes.saturating_add(chunk.rows.len().saturating_mul(bytes_per_row));
            weight = weight.saturating_add(next);
            count += 1;
        }
        count.max(1)
    }

    fn add(&mut self, batches: Vec<RecordBatch>, flush: &mut Flush<'_>) -> Result<(), Error> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        if let Some(per_row) = bytes.checked_div(rows) {
            self.bytes_per_row = Some(per_row.max(1));
        }
        self.pending.extend(batches);
        self.pending_bytes = self.pending_bytes.saturating_add(bytes);
        if self.pending_bytes >= self.flush_bytes {
            self.pending_bytes = 0;
            flush(std::mem::take(&mut self.pending))?;
        }
        Ok(())
    }

    fn finish(self, flush: &mut Flush<'_>) -> Result<(), Error> {
        if self.pending.is_empty() {
            return Ok(());
        }
        flush(self.pending)
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as StdError;

    use super::*;
    use crate::resolve::{CandidateSet, ScopeRef};
    use crate::test_support::{record, set_of};

    /// A store of `users` users with `per_user` records each, their ids
    /// padded to `id_bytes`, and `contexts_per_user` contexts for each user
    /// (ids leaked: test data).
    fn fan_out(
        users: usize,
        per_user: usize,
        contexts_per_user: usize,
        id_bytes: usize,
    ) -> (
        CandidateSet<'static>,
        Vec<Context<'static>>,
        Vec<&'static str>,
    ) {
        let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
        let mut records = Vec::new();
        let mut contexts = Vec::new();
        let mut ids = Vec::new();
        for user in 0..users {
            let user_id = leak(format!("u{user}"));
            for n in 0..per_user {
                records.push(record(
                    leak(format!("m{user}-{n}-{}", "x".repeat(id_bytes))),
                    leak(format!("k{n}")),
                    ScopeRef::user(user_id),
                ));
            }
            for n in 0..contexts_per_user {
                ids.push(leak(format!("ctx{user}-{n}")));
                contexts.push(Context {
                    now: 10,
                    user_id,
                    character_id: Some("c"),
                    conversation_id: Some(leak(format!("k{user}-{n}"))),
                    scene_id: None,
                });
            }
        }
        (set_of(&records), contexts, ids)
    }

    fn decisions_of<'d>(
        store: &'d Store<'static>,
        tombstones: &'d StoreTombstones,
        contexts: &'d [Context<'d>],
        ids: &'d [&'d str],
        include_excluded: bool,
    ) -> Decisions<'d, 'static> {
        Decisions {
            store,
            context_ids: ids,
            contexts,
            tombstones,
            include_excluded,
            values: None,
        }
    }

    /// Every flush's batches, and the rows of each.
    fn streamed(
        decisions: &Decisions<'_, '_>,
        flush_bytes: usize,
    ) -> Result<Vec<Vec<RecordBatch>>, Error> {
        let mut flushed = Vec::new();
        decisions.stream(flush_bytes, &mut |batches| {
            flushed.push(batches);
            Ok(())
        })?;
        Ok(flushed)
    }

    #[test]
    fn a_stream_is_the_whole_result_in_groups() -> Result<(), Box<dyn StdError>> {
        let (set, contexts, ids) = fan_out(3, 40, 700, 0);
        let store = Store::from_candidates(&set).map_err(|_| "duplicate id")?;
        let tombstones = StoreTombstones::default();
        let decisions = decisions_of(&store, &tombstones, &contexts, &ids, true);
        let whole = decisions.whole()?;
        let rows =
            |batches: &[RecordBatch]| batches.iter().map(RecordBatch::num_rows).sum::<usize>();
        assert_eq!(rows(&whole), 3 * 40 * 700);
        let concat = |batches: &[RecordBatch]| arrow_select_concat(batches);
        let total: usize = whole.iter().map(RecordBatch::get_array_memory_size).sum();
        for flush_bytes in [1, total / 2, 1 << 30] {
            let flushed = streamed(&decisions, flush_bytes)?;
            let all: Vec<RecordBatch> = flushed.iter().flatten().cloned().collect();
            assert_eq!(concat(&all), concat(&whole), "{flush_bytes}");
            // Each group but the last holds at least what was asked for.
            let sizes: Vec<usize> = flushed
                .iter()
                .map(|batches| batches.iter().map(RecordBatch::get_array_memory_size).sum())
                .collect();
            let (last, before) = sizes.split_last().ok_or("no flush")?;
            assert!(before.iter().all(|&size| size >= flush_bytes), "{sizes:?}");
            assert!(*last > 0);
            match flush_bytes {
                // A window as small as one context: each its own group.
                1 => assert_eq!(flushed.len(), contexts.len()),
                // Everything fits in one group.
                _ if flush_bytes == 1 << 30 => assert_eq!(flushed.len(), 1),
                // Half the whole: two groups, or three where chunks straddle.
                _ => assert!((2..=3).contains(&flushed.len()), "{}", flushed.len()),
            }
        }
        Ok(())
    }

    /// The rows of `batches` as (context, record, decision code) triples.
    fn arrow_select_concat(batches: &[RecordBatch]) -> Vec<(String, String, i8)> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::Int8Type;
        let mut rows = Vec::new();
        for batch in batches {
            let (Some(contexts), Some(records), Some(decisions)) = (
                batch.column(0).as_string_opt::<i32>(),
                batch.column(1).as_string_opt::<i32>(),
                batch.column(2).as_dictionary_opt::<Int8Type>(),
            ) else {
                return Vec::new();
            };
            for row in 0..batch.num_rows() {
                rows.push((
                    contexts.value(row).to_owned(),
                    records.value(row).to_owned(),
                    decisions.keys().value(row),
                ));
            }
        }
        rows
    }

    #[test]
    fn contexts_not_grouped_by_user_are_answered_in_input_order() -> Result<(), Box<dyn StdError>> {
        // 7 users x 40 contexts, given user after user and then dealt out
        // round-robin: the second are resolved owner by owner, put back in order.
        let (set, grouped, grouped_ids) = fan_out(7, 12, 40, 0);
        let store = Store::from_candidates(&set).map_err(|_| "duplicate id")?;
        let tombstones = StoreTombstones::default();
        let dealt: Vec<usize> = (0..40)
            .flat_map(|n| (0..7).map(move |u| u * 40 + n))
            .collect();
        let contexts: Vec<Context<'static>> = dealt.iter().map(|&at| grouped[at]).collect();
        let ids: Vec<&str> = dealt.iter().map(|&at| grouped_ids[at]).collect();
        assert!(owner_order(&contexts).is_some() && contexts.len() >= REORDER_FROM);
        let got =
            arrow_select_concat(&decisions_of(&store, &tombstones, &contexts, &ids, true).whole()?);
        let expected = arrow_select_concat(
            &decisions_of(&store, &tombstones, &grouped, &grouped_ids, true).whole()?,
        );
        let by_context = |rows: &[(String, String, i8)]| {
            let mut map = std::collections::BTreeMap::<String, Vec<(String, i8)>>::new();
            for (context, record, code) in rows {
                map.entry(context.clone())
                    .or_default()
                    .push((record.clone(), *code));
            }
            map
        };
        assert_eq!(by_context(&got), by_context(&expected));
        let mut order: Vec<&str> = got.iter().map(|(context, _, _)| context.as_str()).collect();
        order.dedup();
        assert_eq!(order, ids);
        Ok(())
    }

    #[test]
    fn a_failed_flush_stops_the_stream() -> Result<(), Box<dyn StdError>> {
        let (set, contexts, ids) = fan_out(2, 10, 600, 0);
        let store = Store::from_candidates(&set).map_err(|_| "duplicate id")?;
        let tombstones = StoreTombstones::default();
        let decisions = decisions_of(&store, &tombstones, &contexts, &ids, false);
        let mut calls = 0;
        let outcome = decisions.stream(1, &mut |_| {
            calls += 1;
            Err(Broken("the sink failed").into())
        });
        assert!(outcome.is_err());
        assert_eq!(calls, 1);
        Ok(())
    }

    #[test]
    fn long_ids_make_smaller_chunks() -> Result<(), Box<dyn StdError>> {
        // Two records with 20 kB ids, seen by each of 600 contexts: 24 MB of
        // output in all, from a store of 40 kB. Windows cut by rows alone
        // built 512 contexts' output (17 MB) before handing any over.
        let (set, contexts, ids) = fan_out(1, 2, 600, 20_000);
        let store = Store::from_candidates(&set).map_err(|_| "duplicate id")?;
        let tombstones = StoreTombstones::default();
        let decisions = decisions_of(&store, &tombstones, &contexts, &ids, true);
        let flush_bytes = 200_000;
        let flushed = streamed(&decisions, flush_bytes)?;
        let sizes: Vec<usize> = flushed
            .iter()
            .map(|batches| batches.iter().map(RecordBatch::get_array_memory_size).sum())
            .collect();
        // What was pending, below a flush, and a group's output, at most a flush.
        assert!(
            sizes.iter().all(|&size| size <= 2 * flush_bytes + 65_536),
            "{sizes:?}"
        );
        let rows: usize = flushed.iter().flatten().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, 1_200);
        Ok(())
    }

    #[test]
    fn chunks_end_at_a_chunk_of_contexts_or_their_weight() {
        let seen = |weights: &[usize]| -> Vec<Seen> {
            weights
                .iter()
                .map(|&weight| Seen { rows: 1, weight })
                .collect()
        };
        assert_eq!(
            chunk_ranges(&seen(&[3, 3, 3, 10, 0, 1]), 6),
            [0..2, 2..3, 3..4, 4..6]
        );
        assert_eq!(chunk_ranges(&seen(&[]), 6), Vec::<Range<usize>>::new());
        let light = seen(&vec![1; CHUNK * 2 + 1]);
        assert_eq!(
            chunk_ranges(&light, usize::MAX),
            [0..CHUNK, CHUNK..2 * CHUNK, 2 * CHUNK..2 * CHUNK + 1]
        );
    }

    #[test]
    fn windows_end_where_their_contexts_see_enough_rows() {
        let candidates = [3, 3, 3, 10, 0, 0, 1];
        assert_eq!(window_end(&candidates, 0, 6), 2);
        assert_eq!(window_end(&candidates, 0, 5), 1);
        // One context more than the rows: a window of it alone.
        assert_eq!(window_end(&candidates, 3, 5), 4);
        assert_eq!(window_end(&candidates, 4, 5), 7);
        assert_eq!(window_end(&candidates, 7, 5), 7);
        let many = vec![0; most_contexts() + 5];
        assert_eq!(window_end(&many, 0, 1), most_contexts());
    }
}
