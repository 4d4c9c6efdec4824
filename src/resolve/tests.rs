//! The pipeline end to end: the tutorial's cases and the contract's fixes.

use super::*;
use crate::model::{Authority, Status};

const DAY: i64 = 86_400_000_000;
const NOW: i64 = 100 * DAY;

fn context() -> Context<'static> {
    Context {
        now: NOW,
        user_id: "u1",
        character_id: Some("c1"),
        conversation_id: Some("k1"),
        scene_id: Some("s1"),
    }
}

fn record(id: &'static str, key: &'static str) -> Record<'static> {
    Record {
        id,
        key,
        scope: ScopeRef::character("u1", "c1"),
        status: Status::Active,
        authority: Authority::ModelInferred,
        version: 1,
        valid_from: NOW - 10 * DAY,
        valid_until: None,
        observed_at: None,
        supersedes: None,
    }
}

/// The value of a pipeline call that must succeed.
fn ok<T>(result: Result<T, crate::error::Broken>) -> T {
    match result {
        Ok(value) => value,
        Err(broken) => panic!("{broken}"),
    }
}

fn run(
    records: &[Record<'static>],
    tombstones: &[Tombstone<'static>],
) -> Vec<(&'static str, Option<Reason>)> {
    let mut set = CandidateSet::with_capacity(records.len());
    for record in records {
        set.push(*record);
    }
    let index = TombstoneIndex::new(tombstones);
    let outcomes = ok(decide(&set, &context(), &index));
    records.iter().map(|r| r.id).zip(outcomes).collect()
}

fn outcome_of(results: &[(&str, Option<Reason>)], id: &str) -> Option<Reason> {
    results
        .iter()
        .find(|(rid, _)| *rid == id)
        .and_then(|(_, outcome)| *outcome)
}

#[test]
fn tutorial_a_user_correction_supersedes_the_inferred_value() {
    let inferred = Record {
        authority: Authority::ModelInferred,
        ..record("harbor", "boat.name")
    };
    let corrected = Record {
        authority: Authority::UserCorrected,
        supersedes: Some("harbor"),
        version: 2,
        valid_from: NOW - DAY,
        ..record("marlowe", "boat.name")
    };
    let results = run(&[inferred, corrected], &[]);
    assert_eq!(outcome_of(&results, "harbor"), Some(Reason::Superseded));
    assert_eq!(outcome_of(&results, "marlowe"), None);
}

#[test]
fn tutorial_a_scene_that_ended_is_out_of_scope() {
    let raincoat = Record {
        scope: ScopeRef::scene("k1", "s0"),
        ..record("raincoat", "outfit")
    };
    let results = run(&[raincoat], &[]);
    assert_eq!(outcome_of(&results, "raincoat"), Some(Reason::Scope));
}

#[test]
fn an_expired_correction_brings_the_older_value_back() {
    let old = record("old", "k");
    let fix = Record {
        supersedes: Some("old"),
        valid_until: Some(NOW - DAY),
        ..record("fix", "k")
    };
    let results = run(&[old, fix], &[]);
    assert_eq!(outcome_of(&results, "old"), None);
    assert_eq!(outcome_of(&results, "fix"), Some(Reason::StatusOrTime));
}

#[test]
fn a_forgotten_or_worker_superseded_correction_still_hides_what_it_replaced() {
    let a = record("a", "k");
    let b = Record {
        supersedes: Some("a"),
        status: Status::Superseded,
        ..record("b", "k")
    };
    let c = Record {
        supersedes: Some("b"),
        status: Status::Forgotten,
        ..record("c", "k")
    };
    let results = run(&[a, b, c], &[]);
    assert_eq!(outcome_of(&results, "a"), Some(Reason::Superseded));
    assert_eq!(outcome_of(&results, "b"), Some(Reason::StatusOrTime));
    assert_eq!(outcome_of(&results, "c"), Some(Reason::Forgotten));
}

#[test]
fn stored_expired_and_out_of_scope_records_bear_no_edge() {
    let a = record("a", "k");
    let expired = Record {
        supersedes: Some("a"),
        status: Status::Expired,
        ..record("x", "k2")
    };
    let elsewhere = Record {
        supersedes: Some("a"),
        scope: ScopeRef::user("someone-else"),
        ..record("y", "k3")
    };
    let results = run(&[a, expired, elsewhere], &[]);
    assert_eq!(outcome_of(&results, "a"), None);
}

#[test]
fn cycles_exclude_every_member_and_dangling_edges_nothing() {
    let a = Record {
        supersedes: Some("b"),
        ..record("a", "k")
    };
    let b = Record {
        supersedes: Some("a"),
        ..record("b", "k")
    };
    let me = Record {
        supersedes: Some("me"),
        ..record("me", "k2")
    };
    let dangling = Record {
        supersedes: Some("nobody"),
        ..record("d", "k3")
    };
    let results = run(&[a, b, me, dangling], &[]);
    assert_eq!(outcome_of(&results, "a"), Some(Reason::Superseded));
    assert_eq!(outcome_of(&results, "b"), Some(Reason::Superseded));
    assert_eq!(outcome_of(&results, "me"), Some(Reason::Superseded));
    assert_eq!(outcome_of(&results, "d"), None);
}

#[test]
fn supersession_crosses_keys_and_scopes() {
    let user_level = Record {
        scope: ScopeRef::user("u1"),
        ..record("user-level", "pet")
    };
    let fix = Record {
        supersedes: Some("user-level"),
        ..record("fix", "pet.name")
    };
    let results = run(&[user_level, fix], &[]);
    assert_eq!(outcome_of(&results, "user-level"), Some(Reason::Superseded));
}

#[test]
fn tombstones_decide_on_evidence_time_inclusive() {
    let scope = ScopeRef::character("u1", "c1");
    let tombstone = Tombstone {
        key: "pet",
        scope,
        blocks_sources_before: NOW - 5 * DAY,
        user_wide: false,
        sources: None,
    };
    let at_bound = Record {
        valid_from: NOW - 5 * DAY,
        ..record("at", "pet")
    };
    let after = Record {
        valid_from: NOW - 5 * DAY + 1,
        ..record("after", "pet")
    };
    // A summary made after the forget from old messages stays forgotten...
    let summary = Record {
        valid_from: NOW - DAY,
        observed_at: Some(NOW - 20 * DAY),
        ..record("summary", "pet")
    };
    // ...and a fact re-told after the forget about an old time is not blocked.
    let retold = Record {
        valid_from: NOW - 50 * DAY,
        observed_at: Some(NOW - DAY),
        ..record("retold", "pet")
    };
    let results = run(&[at_bound, after, summary, retold], &[tombstone]);
    assert_eq!(outcome_of(&results, "at"), Some(Reason::Forgotten));
    assert_eq!(outcome_of(&results, "summary"), Some(Reason::Forgotten));
    assert_eq!(outcome_of(&results, "after"), None);
    // Not forgotten: it reaches precedence and loses to the later `valid_from`.
    assert_eq!(
        outcome_of(&results, "retold"),
        Some(Reason::LowerPrecedence)
    );
}

#[test]
fn the_first_excluding_stage_names_the_reason() {
    let stored_forgotten_but_ended = Record {
        status: Status::Forgotten,
        valid_until: Some(NOW),
        ..record("x", "k")
    };
    let results = run(&[stored_forgotten_but_ended], &[]);
    assert_eq!(outcome_of(&results, "x"), Some(Reason::StatusOrTime));
}

#[test]
fn instants_at_now_and_one_microsecond_either_side() {
    let starts_now = Record {
        valid_from: NOW,
        ..record("starts-now", "a")
    };
    let starts_later = Record {
        valid_from: NOW + 1,
        ..record("starts-later", "b")
    };
    let ends_now = Record {
        valid_until: Some(NOW),
        ..record("ends-now", "c")
    };
    let ends_later = Record {
        valid_until: Some(NOW + 1),
        ..record("ends-later", "d")
    };
    let results = run(&[starts_now, starts_later, ends_now, ends_later], &[]);
    assert_eq!(outcome_of(&results, "starts-now"), None);
    assert_eq!(
        outcome_of(&results, "starts-later"),
        Some(Reason::StatusOrTime)
    );
    assert_eq!(outcome_of(&results, "ends-now"), Some(Reason::StatusOrTime));
    assert_eq!(outcome_of(&results, "ends-later"), None);
}

#[test]
fn resolve_orders_winners_by_scope_id_then_key_and_exclusions_by_id() {
    let records = [
        Record {
            scope: ScopeRef::user("u1"),
            ..record("m3", "b")
        },
        Record {
            scope: ScopeRef::user("u1"),
            ..record("m2", "a")
        },
        Record {
            scope: ScopeRef::conversation("k1"),
            ..record("m1", "z")
        },
        Record {
            scope: ScopeRef::user("u2"),
            ..record("m0", "a")
        },
        Record {
            version: 0,
            scope: ScopeRef::user("u1"),
            ..record("m9", "a")
        },
    ];
    let mut set = CandidateSet::with_capacity(records.len());
    for r in records {
        set.push(r);
    }
    let result = ok(resolve(&set, &context(), &TombstoneIndex::default()));
    let active: Vec<_> = result
        .active
        .iter()
        .filter_map(|&row| set.get(row))
        .map(|r| r.id)
        .collect();
    // "conversation:k1" < "user:u1"; then keys "a" < "b".
    assert_eq!(active, ["m1", "m2", "m3"]);
    let excluded: Vec<_> = result
        .excluded
        .iter()
        .filter_map(|&(row, reason)| set.get(row).map(|r| (r.id, reason)))
        .collect();
    assert_eq!(
        excluded,
        [("m0", Reason::Scope), ("m9", Reason::LowerPrecedence)]
    );
    assert_eq!(result.count(Reason::Scope), 1);
}

#[test]
fn empty_input_resolves_to_nothing() {
    let result = ok(resolve(
        &CandidateSet::default(),
        &context(),
        &TombstoneIndex::default(),
    ));
    assert_eq!(result, Resolution::default());
}

#[test]
fn duplicate_ids_are_found_and_never_panic() {
    let mut set = CandidateSet::with_capacity(3);
    set.push(record("a", "k"));
    set.push(record("b", "k"));
    set.push(record("a", "k"));
    assert_eq!(set.first_duplicate_id(), Some((0, 2)));
    let result = ok(resolve(&set, &context(), &TombstoneIndex::default()));
    assert_eq!(result.active.len() + result.excluded.len(), 3);
}

#[test]
fn the_first_duplicate_is_the_earliest_repeat_in_row_order() {
    let mut set = CandidateSet::with_capacity(5);
    for id in ["b", "a", "c", "a", "b"] {
        set.push(record(id, "k"));
    }
    assert_eq!(set.first_duplicate_id(), Some((1, 3)));
    let mut unique = CandidateSet::with_capacity(300_000);
    let ids: Vec<String> = (0..300_000).map(|n| format!("id-{n}")).collect();
    for id in &ids {
        unique.push(Record {
            id,
            ..record("x", "k")
        });
    }
    assert_eq!(unique.first_duplicate_id(), None);
    unique.push(Record {
        id: "id-123456",
        ..record("x", "k")
    });
    assert_eq!(unique.first_duplicate_id(), Some((123_456, 300_000)));
    // The id sort of the per-turn path finds the same repeat, on all cores too.
    let ids_of = |set: &CandidateSet<'_>| order::rows_by_id(set.ids().iter().copied());
    assert_eq!(ids_of(&unique), Err((123_456, 300_000)));
    assert_eq!(ids_of(&set), Err((1, 3)));
}

#[test]
fn one_id_sort_checks_ids_and_orders_exclusions_as_resolve_does() {
    // Every subset of these rows (ids sharing prefixes longer than the 16
    // bytes the sort compares first, repeats, `:` and non-ASCII), in two orders.
    let ids = [
        "abcdefghijklmnop-2",
        "é",
        "abcdefghijklmnop-1",
        "a:b",
        "a",
        "é",
        "abcdefghijklmnop-1",
        "𝔘",
    ];
    for mask in 0_u32..(1 << ids.len()) {
        for reversed in [false, true] {
            let mut chosen: Vec<usize> = (0..ids.len()).filter(|i| mask & (1 << i) != 0).collect();
            if reversed {
                chosen.reverse();
            }
            let mut set = CandidateSet::with_capacity(chosen.len());
            for (n, &i) in chosen.iter().enumerate() {
                let key = if n % 2 == 0 { "k" } else { "k2" };
                set.push(Record {
                    valid_until: (n % 3 == 0).then_some(NOW - 1),
                    ..record(ids[i], key)
                });
            }
            match (
                order::rows_by_id(set.ids().iter().copied()),
                set.first_duplicate_id(),
            ) {
                (Err(repeat), Some(expected)) => assert_eq!(repeat, expected, "{chosen:?}"),
                (Ok(by_id), None) => {
                    let context = context();
                    let index = TombstoneIndex::default();
                    let owned: Vec<PackedRecord> = set
                        .iter()
                        .filter_map(|(_, record)| PackedRecord::new(&record).ok())
                        .collect();
                    let packed: Vec<&PackedRecord> = owned.iter().collect();
                    assert_eq!(
                        ok(resolve_packed_in_id_order(
                            &packed,
                            &context,
                            &index,
                            &[],
                            &by_id
                        )),
                        ok(resolve(&set, &context, &index)),
                        "{chosen:?}"
                    );
                }
                (got, expected) => panic!("{chosen:?}: {got:?} vs {expected:?}"),
            }
        }
    }
}

#[test]
fn results_do_not_depend_on_input_order() {
    let records = [
        Record {
            authority: Authority::UserConfirmed,
            ..record("a", "k")
        },
        Record {
            authority: Authority::UserConfirmed,
            ..record("b", "k")
        },
        Record {
            supersedes: Some("a"),
            valid_until: Some(NOW - 1),
            ..record("c", "k")
        },
        record("d", "k2"),
    ];
    let ids_of = |order: &[usize]| {
        let mut set = CandidateSet::with_capacity(order.len());
        for &i in order {
            if let Some(r) = records.get(i) {
                set.push(*r);
            }
        }
        let result = ok(resolve(&set, &context(), &TombstoneIndex::default()));
        let active: Vec<_> = result
            .active
            .iter()
            .filter_map(|&row| set.get(row))
            .map(|r| r.id)
            .collect();
        let excluded: Vec<_> = result
            .excluded
            .iter()
            .filter_map(|&(row, reason)| set.get(row).map(|r| (r.id, reason)))
            .collect();
        (active, excluded)
    };
    let forward = ids_of(&[0, 1, 2, 3]);
    assert_eq!(forward, ids_of(&[3, 2, 1, 0]));
    assert_eq!(forward, ids_of(&[2, 0, 3, 1]));
    assert_eq!(forward.0, ["a", "d"]);
}
