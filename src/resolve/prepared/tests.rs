//! A prepared set resolves exactly as [`crate::resolve::resolve`] does, in
//! every context, on generated sets where ids, keys and scopes collide.

use super::*;
use crate::model::{Authority, Reason};
use crate::resolve::{resolve, Record, TombstoneIndex};
use crate::test_support::generated::{contexts, random_records, random_tombstones};
use crate::test_support::{self, record, set_of, Rng};

const NOW: i64 = test_support::generated::NOW;

fn prepared(records: &[Record<'static>], tombstones: &[Tombstone<'static>]) -> PreparedSet {
    match PreparedSet::new(&set_of(records), tombstones) {
        Ok(prepared) => prepared,
        Err(refused) => panic!("ids are unique, yet {refused:?}"),
    }
}

#[test]
fn prepared_resolution_equals_resolve_in_every_context() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let contexts = contexts();
    let mut scratch = PreparedScratch::default();
    let mut seen = [0_usize; Reason::ALL.len()];
    for _ in 0..600 {
        let records = random_records(&mut rng);
        let tombstones = random_tombstones(&mut rng);
        let set = set_of(&records);
        // Prepared at once, grown one record at a time from empty, and both.
        let split = rng.below(records.len() + 1);
        let grown = |start: &[Record<'static>]| {
            let mut prepared = prepared(start, &tombstones);
            for record in records.iter().skip(start.len()) {
                if let Err(refused) = prepared.push(record, false) {
                    panic!("ids are unique, yet {refused:?}");
                }
            }
            prepared
        };
        // Prepared with some tombstones, then told the others between pushes.
        let told = rng.below(tombstones.len() + 1);
        let forgetting = || {
            let start = records.get(..split).unwrap_or(&[]);
            let mut prepared = prepared(start, tombstones.get(..told).unwrap_or(&[]));
            let mut later = tombstones.iter().skip(told);
            for record in records.iter().skip(start.len()) {
                if let Some(tombstone) = later.next() {
                    if let Err(broken) = prepared.forget(tombstone) {
                        panic!("{broken}");
                    }
                }
                if let Err(refused) = prepared.push(record, false) {
                    panic!("ids are unique, yet {refused:?}");
                }
            }
            for tombstone in later {
                if let Err(broken) = prepared.forget(tombstone) {
                    panic!("{broken}");
                }
            }
            prepared
        };
        let ways = [
            prepared(&records, &tombstones),
            grown(&[]),
            grown(records.get(..split).unwrap_or(&[])),
            forgetting(),
        ];
        let index = TombstoneIndex::new(&tombstones);
        for context in &contexts {
            let expected = resolve(&set, context, &index).map_err(|b| b.to_string());
            for (way, prepared) in ways.iter().enumerate() {
                let got = prepared
                    .resolve(context, &mut scratch)
                    .map_err(|b| b.to_string());
                assert_eq!(
                    got, expected,
                    "way {way}: {records:?} {tombstones:?} {context:?}"
                );
            }
            if let Ok(resolution) = expected {
                for (_, reason) in resolution.excluded {
                    seen[reason as usize] += 1;
                }
            }
        }
    }
    // The generator reaches every reason, so the comparison covers every stage.
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
}

#[test]
fn a_repeated_id_is_refused_with_its_rows() {
    let base = random_records(&mut Rng(7))
        .first()
        .copied()
        .unwrap_or_else(|| record("x", "k", ScopeRef::user("u")));
    let records = [
        Record { id: "a", ..base },
        Record { id: "b", ..base },
        Record { id: "a", ..base },
    ];
    let refused = PreparedSet::new(&set_of(&records), &[]).map(|_| ());
    assert_eq!(
        refused,
        Err(Refused::RepeatedId {
            earlier: 0,
            later: 2
        })
    );
    // Growing refuses it too, and leaves the set as it was.
    let mut grown = prepared(&records[..2], &[]);
    let before = format!("{grown:?}");
    assert_eq!(
        grown.push(&records[2], false),
        Err(Refused::RepeatedId {
            earlier: 0,
            later: 2
        })
    );
    assert_eq!(format!("{grown:?}"), before);
}

#[test]
fn a_copy_grows_apart_from_its_original() {
    let records = random_records(&mut Rng(11));
    let original = prepared(&records, &[]);
    let before = format!("{original:?}");
    let mut copy = original.clone();
    let extra = Record {
        id: "new",
        supersedes: records.first().map(|r| r.id),
        ..records
            .first()
            .copied()
            .unwrap_or_else(|| record("x", "k", ScopeRef::user("u")))
    };
    assert_eq!(copy.push(&extra, false), Ok(()));
    assert_eq!(copy.len(), original.len() + 1);
    assert_eq!(format!("{original:?}"), before);
}

#[test]
fn an_empty_set_resolves_to_nothing() {
    let prepared = PreparedSet::new(&CandidateSet::default(), &[]);
    let resolution = prepared.map_err(|e| format!("{e:?}")).and_then(|p| {
        p.resolve(&contexts()[0], &mut PreparedScratch::default())
            .map_err(|b| b.to_string())
    });
    assert_eq!(resolution, Ok(Resolution::default()));
}

#[test]
fn full_ties_go_to_the_smallest_id_however_the_set_grew() {
    let tied = |id: &'static str| Record {
        authority: Authority::UserConfirmed,
        valid_from: NOW - 5,
        ..record(id, "name", ScopeRef::user("u"))
    };
    let context = contexts()[1];
    let mut scratch = PreparedScratch::default();
    // A smaller id in another group comes first, so no tied row has rank 0.
    let elsewhere = Record {
        id: "0",
        key: "other",
        ..tied("0")
    };
    for order in [
        ["b", "d", "a", "c"],
        ["d", "c", "b", "a"],
        ["a", "c", "d", "b"],
    ] {
        // The first tied record prepared with the set, the others pushed.
        let mut set = prepared(&[elsewhere, tied(order[0])], &[]);
        for (pushed, id) in order.iter().enumerate() {
            if pushed > 0 {
                assert_eq!(set.push(&tied(id), false), Ok(()));
            }
            let resolution = set.resolve(&context, &mut scratch);
            let smallest = order.iter().take(pushed + 1).min().copied();
            // Winners by key: "name" before "other"; rows count `elsewhere` first.
            let winner = resolution
                .ok()
                .and_then(|r| r.active.first().copied())
                .and_then(|row| order.get(row.checked_sub(1)?).copied());
            assert_eq!(winner, smallest, "{order:?} after {pushed}");
        }
    }
}

#[test]
fn the_latest_of_several_tombstones_on_a_group_blocks() {
    let blocked = Record {
        authority: Authority::UserConfirmed,
        valid_from: NOW - 20,
        ..record("a", "name", ScopeRef::conversation("k").owned_by("u"))
    };
    let on_it = |bound| Tombstone {
        key: "name",
        scope: blocked.scope,
        blocks_sources_before: bound,
        user_wide: false,
        sources: None,
    };
    // The later bound (NOW - 10) is at or after the evidence (NOW - 20), given
    // before or after the earlier one; the unowned scope's tombstone is another scope's.
    let unowned = Tombstone {
        scope: ScopeRef::conversation("k"),
        ..on_it(NOW)
    };
    let context = contexts()[1];
    for tombstones in [
        [on_it(NOW - 30), on_it(NOW - 10), unowned],
        [on_it(NOW - 10), on_it(NOW - 30), unowned],
    ] {
        let mut grown = prepared(&[], &tombstones);
        assert_eq!(grown.push(&blocked, false), Ok(()));
        // Told the tombstones one by one, before the group exists and after.
        let mut told_first = prepared(&[], &[]);
        let mut told_after = prepared(&[blocked], &[]);
        for tombstone in &tombstones {
            assert_eq!(told_first.forget(tombstone), Ok(()));
            assert_eq!(told_after.forget(tombstone), Ok(()));
        }
        assert_eq!(told_first.push(&blocked, false), Ok(()));
        for set in [
            prepared(&[blocked], &tombstones),
            grown,
            told_first,
            told_after,
        ] {
            let resolution = set.resolve(&context, &mut PreparedScratch::default());
            assert_eq!(
                resolution.map(|r| r.excluded),
                Ok(vec![(0, Reason::Forgotten)])
            );
        }
        let only_earlier = prepared(&[blocked], &[on_it(NOW - 30), unowned]);
        let resolution = only_earlier.resolve(&context, &mut PreparedScratch::default());
        assert_eq!(resolution.map(|r| r.active), Ok(vec![0]));
    }
}

#[test]
fn a_record_stands_in_for_its_row_only_if_resolution_reads_it_alike() {
    let mut rng = Rng(0x5eed_1234_abcd_0002);
    for _ in 0..300 {
        let records = random_records(&mut rng);
        let set = prepared(&records, &[]);
        for (row, record) in records.iter().enumerate() {
            let found = set.row_of_id(record.id);
            assert_eq!(found, u32::try_from(row).ok(), "{records:?}");
            let row = found.unwrap_or(NO_ROW);
            assert!(set.decides_alike(row, record), "{record:?}");
            let changed = [
                Record {
                    version: record.version + 1,
                    ..*record
                },
                Record {
                    key: "another key",
                    ..*record
                },
                Record {
                    scope: ScopeRef::user("w"),
                    ..*record
                },
                Record {
                    supersedes: Some("no such id"),
                    ..*record
                },
                Record {
                    supersedes: None,
                    ..*record
                },
                Record {
                    valid_until: Some(NOW + 7),
                    ..*record
                },
            ];
            for other in &changed {
                if other != record {
                    assert!(!set.decides_alike(row, other), "{record:?} as {other:?}");
                }
            }
        }
        assert_eq!(set.row_of_id("no such id"), None);
    }
}
