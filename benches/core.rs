//! Criterion benches of the Rust core alone: `resolve` over prepared columnar
//! candidate sets of 20, 200 and 2,000 records, the per-turn sizes of the
//! Python benchmarks, with the same kind of mix (several scopes, chains,
//! expired, future-dated and forgotten records, a few tombstones).
//!
//! Also the same sets with every candidate in the context's scopes, resolved
//! from a candidate set and from a prepared set, and the mixed sets resolved
//! from packed records as `mr.resolve` does (its id sort included).
//!
//! Run: `cargo bench --bench core`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use memresolve::model::{Authority, Status};
use memresolve::resolve::order::rows_by_id;
use memresolve::resolve::prepared::{PreparedScratch, PreparedSet};
use memresolve::resolve::{
    resolve, resolve_packed_in_id_order, CandidateSet, Context, PackedRecord, Record, ScopeRef,
    Tombstone, TombstoneIndex,
};

const DAY: i64 = 86_400_000_000;
const NOW: i64 = 20_000 * DAY;

/// A small deterministic generator (`SplitMix64`), so the bench needs no `rand`.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const SCOPES: [ScopeRef<'static>; 7] = [
    ScopeRef {
        kind: memresolve::model::ScopeKind::User,
        first: "u-1",
        second: "",
        owner: None,
    },
    ScopeRef {
        kind: memresolve::model::ScopeKind::Character,
        first: "u-1",
        second: "c-1",
        owner: None,
    },
    ScopeRef {
        kind: memresolve::model::ScopeKind::Character,
        first: "u-1",
        second: "c-2",
        owner: None,
    },
    ScopeRef {
        kind: memresolve::model::ScopeKind::Conversation,
        first: "k-1",
        second: "",
        owner: None,
    },
    ScopeRef {
        kind: memresolve::model::ScopeKind::Conversation,
        first: "k-0",
        second: "",
        owner: None,
    },
    ScopeRef {
        kind: memresolve::model::ScopeKind::Scene,
        first: "k-1",
        second: "s-1",
        owner: None,
    },
    ScopeRef {
        kind: memresolve::model::ScopeKind::Scene,
        first: "k-1",
        second: "s-0",
        owner: None,
    },
];
const AUTHORITIES: [Authority; 4] = [
    Authority::ModelInferred,
    Authority::RuleExtracted,
    Authority::UserConfirmed,
    Authority::UserCorrected,
];

struct Workload {
    ids: Vec<String>,
    keys: Vec<String>,
    picks: Vec<(usize, usize, u64, Option<usize>)>,
}

/// The scopes of `SCOPES` the bench context sees.
const IN_SCOPE: [usize; 4] = [0, 1, 3, 5];

/// `count` records over `scopes` (indices into [`SCOPES`]).
fn workload(count: usize, scopes: &[usize]) -> Workload {
    let mut rng = SplitMix(7);
    let ids: Vec<String> = (0..count).map(|n| format!("mem-{n:06}")).collect();
    let keys: Vec<String> = (0..(count / 3).max(1))
        .map(|n| format!("slot.{n}"))
        .collect();
    let mut last_in_group = std::collections::HashMap::new();
    let mut picks = Vec::with_capacity(count);
    for row in 0..count {
        let pick = usize::try_from(rng.below(scopes.len() as u64)).unwrap_or(0);
        let scope = scopes.get(pick).copied().unwrap_or(0);
        let key = usize::try_from(rng.below(keys.len() as u64)).unwrap_or(0);
        let link = last_in_group
            .insert((scope, key), row)
            .filter(|_| rng.chance(80));
        picks.push((scope, key, rng.next(), link));
    }
    Workload { ids, keys, picks }
}

fn candidates(work: &Workload) -> CandidateSet<'_> {
    let mut set = CandidateSet::with_capacity(work.picks.len());
    for (row, &(scope, key, bits, link)) in work.picks.iter().enumerate() {
        let start = NOW - i64::try_from(bits % (90 * DAY as u64)).unwrap_or(0);
        set.push(Record {
            id: &work.ids[row],
            key: &work.keys[key],
            scope: SCOPES[scope],
            status: if bits % 50 == 0 {
                Status::Forgotten
            } else {
                Status::Active
            },
            authority: AUTHORITIES[usize::try_from(bits >> 60).unwrap_or(0) % 4],
            version: i64::try_from((bits >> 40) % 4).unwrap_or(0) + 1,
            valid_from: if bits % 33 == 0 { NOW + DAY } else { start },
            valid_until: (bits % 10 == 0).then_some(start + 30 * DAY),
            observed_at: None,
            supersedes: link.map(|l| work.ids[l].as_str()),
        });
    }
    set
}

const CONTEXT: Context<'static> = Context {
    now: NOW,
    user_id: "u-1",
    character_id: Some("c-1"),
    conversation_id: Some("k-1"),
    scene_id: Some("s-1"),
};

fn tombstones(work: &Workload, count: usize) -> Vec<Tombstone<'_>> {
    (0..(count / 100).max(1))
        .map(|n| Tombstone {
            key: &work.keys[n % work.keys.len()],
            scope: SCOPES[n % SCOPES.len()],
            blocks_sources_before: NOW - 40 * DAY,
            user_wide: false,
            sources: None,
        })
        .collect()
}

/// `resolve` from a candidate set: `core_resolve` over the per-turn mix (some
/// scopes out of the context's), `core_resolve_in_scope` over candidates all
/// in the context's scopes (what a store serves a context).
fn bench_resolve(c: &mut Criterion) {
    let context = CONTEXT;
    let all_scopes: Vec<usize> = (0..SCOPES.len()).collect();
    for (name, scopes) in [
        ("core_resolve", all_scopes.as_slice()),
        ("core_resolve_in_scope", IN_SCOPE.as_slice()),
    ] {
        let mut group = c.benchmark_group(name);
        for count in [20_usize, 200, 2_000] {
            let work = workload(count, scopes);
            let set = candidates(&work);
            let tombstones = tombstones(&work, count);
            group.throughput(Throughput::Elements(count as u64));
            group.bench_with_input(BenchmarkId::from_parameter(count), &set, |b, set| {
                b.iter(|| {
                    let index = TombstoneIndex::new(black_box(&tombstones));
                    resolve(black_box(set), black_box(&context), &index)
                });
            });
        }
        group.finish();
    }
    // What `mr.resolve` runs on records already built: the id sort that checks
    // them, then the pipeline over the records' packed storage, read in place.
    let mut group = c.benchmark_group("core_resolve_packed");
    for count in [20_usize, 200, 2_000] {
        let work = workload(count, &all_scopes);
        let owned: Vec<PackedRecord> = candidates(&work)
            .iter()
            .filter_map(|(_, record)| PackedRecord::new(&record).ok())
            .collect();
        let packed: Vec<&PackedRecord> = owned.iter().collect();
        let tombstones = tombstones(&work, count);
        // Timed below is the check that passes, never its error path.
        assert!(rows_by_id(packed.iter().map(|record| record.id())).is_ok());
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(BenchmarkId::from_parameter(count), &packed, |b, packed| {
            b.iter(|| {
                let by_id = rows_by_id(black_box(packed).iter().map(|record| record.id()))
                    .unwrap_or_default();
                let index = TombstoneIndex::new(black_box(&tombstones));
                resolve_packed_in_id_order(packed, black_box(&context), &index, &[], &by_id)
            });
        });
    }
    group.finish();
    let work = workload(2_000, &all_scopes);
    let set = candidates(&work);
    let index = TombstoneIndex::default();
    c.bench_function("core_decide_only/2000", |b| {
        b.iter(|| memresolve::resolve::decide(black_box(&set), black_box(&context), &index));
    });
}

/// A [`PreparedSet`] (what `MemoryStore` keeps per context) resolving the
/// in-scope candidate sets of `core_resolve_in_scope`.
fn bench_prepared(c: &mut Criterion) {
    let mut group = c.benchmark_group("core_prepared_in_scope");
    for count in [20_usize, 200, 2_000] {
        let work = workload(count, &IN_SCOPE);
        let set = candidates(&work);
        let Ok(prepared) = PreparedSet::new(&set, &tombstones(&work, count)) else {
            return;
        };
        let mut scratch = PreparedScratch::default();
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(BenchmarkId::from_parameter(count), &prepared, |b, set| {
            b.iter(|| set.resolve(black_box(&CONTEXT), &mut scratch));
        });
    }
    group.finish();
}

criterion_group!(benches, bench_resolve, bench_prepared);
criterion_main!(benches);
