//! Normalisation and the forget sweep on small stores: the named cases of
//! `docs/spec.md` §7, and resolution before and after normalising compared
//! at many instants and contexts.

use super::*;
use crate::batch::Store;
use crate::model::{Authority, Status};
use crate::resolve::{decide, Context, Record, ScopeRef, Tombstone, TombstoneIndex};
use crate::test_support::{self, set_of, Rng};

const NOW: i64 = 100;

fn record(id: &'static str, scope: ScopeRef<'static>) -> Record<'static> {
    test_support::record(id, "pet", scope)
}

fn correction(id: &'static str, scope: ScopeRef<'static>, target: &'static str) -> Record<'static> {
    Record {
        supersedes: Some(target),
        valid_from: 50,
        ..record(id, scope)
    }
}

fn ok<T, E: std::fmt::Debug>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{error:?}"),
    }
}

/// The changes, as (id, new status), by id.
fn changes(
    records: &[Record<'static>],
    tombstones: &[Tombstone<'static>],
) -> Vec<(String, Status)> {
    let set = set_of(records);
    let store = ok(Store::from_candidates(&set));
    let index = store.index_tombstones(tombstones);
    let mut out: Vec<_> = ok(normalize(&store, &index, NOW))
        .into_iter()
        .map(|c| (store.id(c.row).unwrap_or("?").to_owned(), c.status))
        .collect();
    out.sort();
    out
}

fn pair(id: &str, status: Status) -> (String, Status) {
    (id.to_owned(), status)
}

#[test]
fn an_ended_record_is_expired() {
    let ended = Record {
        valid_until: Some(NOW),
        ..record("m1", ScopeRef::user("u"))
    };
    let running = Record {
        valid_until: Some(NOW + 1),
        ..record("m2", ScopeRef::user("u"))
    };
    assert_eq!(
        changes(&[ended, running], &[]),
        [pair("m1", Status::Expired)]
    );
}

#[test]
fn a_lasting_correction_in_the_same_scope_supersedes() {
    let old = record("m1", ScopeRef::user("u"));
    let new = correction("m2", ScopeRef::user("u"), "m1");
    assert_eq!(changes(&[old, new], &[]), [pair("m1", Status::Superseded)]);
}

#[test]
fn an_expiring_or_future_correction_never_normalises() {
    let old = record("m1", ScopeRef::user("u"));
    let expiring = Record {
        valid_until: Some(NOW + 10),
        ..correction("m2", ScopeRef::user("u"), "m1")
    };
    let future = Record {
        valid_from: NOW + 1,
        ..correction("m3", ScopeRef::user("u"), "m1")
    };
    let stored_expired = Record {
        status: Status::Expired,
        ..correction("m4", ScopeRef::user("u"), "m1")
    };
    assert_eq!(changes(&[old, expiring, future, stored_expired], &[]), []);
}

#[test]
fn a_forgotten_or_superseded_correction_still_normalises() {
    for status in [Status::Forgotten, Status::Superseded, Status::Retracted] {
        let old = record("m1", ScopeRef::user("u"));
        let new = Record {
            status,
            ..correction("m2", ScopeRef::user("u"), "m1")
        };
        assert_eq!(changes(&[old, new], &[]), [pair("m1", Status::Superseded)]);
    }
}

#[test]
fn a_retraction_is_never_rewritten_and_retracts_from_its_start() {
    // A retraction (stored `retracted`) is never `active`, so no rule writes
    // over it; its edge hides the record once it has started, not before.
    let old = record("m1", ScopeRef::user("u"));
    let started = Record {
        status: Status::Retracted,
        ..correction("m2", ScopeRef::user("u"), "m1")
    };
    assert_eq!(
        changes(&[old, started], &[]),
        [pair("m1", Status::Superseded)]
    );
    let later = Record {
        valid_from: NOW + 1,
        ..started
    };
    assert_eq!(changes(&[old, later], &[]), []);
    let blocked = Tombstone {
        key: "pet",
        scope: ScopeRef::user("u"),
        blocks_sources_before: NOW,
        user_wide: false,
        sources: None,
    };
    assert_eq!(
        changes(&[old, started], &[blocked]),
        [pair("m1", Status::Forgotten)]
    );
}

#[test]
fn a_user_correction_covers_a_character_never_the_reverse() {
    let character = record("m1", ScopeRef::character("u", "c"));
    let by_user = correction("m2", ScopeRef::user("u"), "m1");
    assert_eq!(
        changes(&[character, by_user], &[]),
        [pair("m1", Status::Superseded)]
    );
    let user = record("m1", ScopeRef::user("u"));
    let by_character = correction("m2", ScopeRef::character("u", "c"), "m1");
    assert_eq!(changes(&[user, by_character], &[]), []);
}

#[test]
fn an_unowned_conversation_covers_owned_scopes_never_the_reverse() {
    let owned = record("m1", ScopeRef::scene("k", "s").owned_by("u"));
    let unowned = correction("m2", ScopeRef::conversation("k"), "m1");
    assert_eq!(
        changes(&[owned, unowned], &[]),
        [pair("m1", Status::Superseded)]
    );
    let unowned = record("m1", ScopeRef::conversation("k"));
    let owned = correction("m2", ScopeRef::conversation("k").owned_by("u"), "m1");
    assert_eq!(changes(&[unowned, owned], &[]), []);
}

#[test]
fn forgotten_comes_first_then_expired_then_superseded() {
    let tombstone = Tombstone {
        key: "pet",
        scope: ScopeRef::user("u"),
        blocks_sources_before: 10,
        user_wide: false,
        sources: None,
    };
    let blocked = Record {
        valid_until: Some(NOW - 1),
        ..record("m1", ScopeRef::user("u"))
    };
    let ended = Record {
        valid_until: Some(NOW - 1),
        valid_from: 20,
        ..record("m2", ScopeRef::user("u"))
    };
    let named = Record {
        valid_from: 20,
        ..record("m3", ScopeRef::user("u"))
    };
    let blocked_and_named = record("m0", ScopeRef::user("u"));
    let bearer1 = correction("m4", ScopeRef::user("u"), "m2");
    let bearer2 = correction("m5", ScopeRef::user("u"), "m3");
    let bearer3 = correction("m6", ScopeRef::user("u"), "m0");
    assert_eq!(
        changes(
            &[
                blocked,
                ended,
                named,
                blocked_and_named,
                bearer1,
                bearer2,
                bearer3
            ],
            &[tombstone]
        ),
        [
            pair("m0", Status::Forgotten),
            pair("m1", Status::Forgotten),
            pair("m2", Status::Expired),
            pair("m3", Status::Superseded),
        ]
    );
}

#[test]
fn a_stored_status_other_than_active_is_kept() {
    let old = Record {
        status: Status::Forgotten,
        ..record("m1", ScopeRef::user("u"))
    };
    let new = correction("m2", ScopeRef::user("u"), "m1");
    assert_eq!(changes(&[old, new], &[]), []);
}

#[test]
fn cycles_and_self_edges_are_superseded() {
    let a = correction("m7", ScopeRef::user("u"), "m8");
    let b = correction("m8", ScopeRef::user("u"), "m7");
    let own = correction("m9", ScopeRef::user("u"), "m9");
    assert_eq!(
        changes(&[a, b, own], &[]),
        [
            pair("m7", Status::Superseded),
            pair("m8", Status::Superseded),
            pair("m9", Status::Superseded),
        ]
    );
}

#[test]
fn the_sweep_names_blocked_and_stored_forgotten_records() {
    let set = set_of(&[
        Record {
            observed_at: Some(5),
            ..record("m1", ScopeRef::user("u"))
        },
        Record {
            observed_at: Some(11),
            ..record("m2", ScopeRef::user("u"))
        },
        Record {
            status: Status::Forgotten,
            ..record("m3", ScopeRef::character("u", "c"))
        },
        record("m4", ScopeRef::character("u", "c")),
    ]);
    let store = ok(Store::from_candidates(&set));
    let tombstones = [Tombstone {
        key: "pet",
        scope: ScopeRef::user("u"),
        blocks_sources_before: 10,
        user_wide: false,
        sources: None,
    }];
    let plan = ok(purge(&store, &store.index_tombstones(&tombstones)));
    assert_eq!(
        plan,
        [
            Purge {
                row: 0,
                cause: PurgeCause::Tombstone
            },
            Purge {
                row: 2,
                cause: PurgeCause::StoredForgotten
            },
        ]
    );
}

// Invariance, exhaustively over small stores ------------------------------------------------

const IDS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

fn scopes() -> Vec<ScopeRef<'static>> {
    vec![
        ScopeRef::user("u"),
        ScopeRef::user("v"),
        ScopeRef::character("u", "c"),
        ScopeRef::character("u", "d"),
        ScopeRef::conversation("k"),
        ScopeRef::conversation("k").owned_by("u"),
        ScopeRef::conversation("k").owned_by("v"),
        ScopeRef::scene("k", "s"),
        ScopeRef::scene("k", "s").owned_by("u"),
    ]
}

fn contexts(now: i64) -> Vec<Context<'static>> {
    test_support::contexts(&[now], &["u", "v"], &["c", "d"], &[None, Some("s")])
}

fn random_store(rng: &mut Rng) -> Vec<Record<'static>> {
    let scopes = scopes();
    let times = [
        None,
        Some(NOW - 10),
        Some(NOW),
        Some(NOW + 1),
        Some(NOW + 20),
    ];
    let statuses = [
        Status::Active,
        Status::Active,
        Status::Superseded,
        Status::Expired,
        Status::Forgotten,
    ];
    let count = 1 + rng.below(IDS.len());
    (0..count)
        .map(|index| Record {
            id: IDS[index],
            key: rng.pick(&["pet", "pet", "home"]),
            scope: rng.pick(&scopes),
            status: rng.pick(&statuses),
            authority: rng.pick(&Authority::ALL),
            version: i64::try_from(rng.below(3)).unwrap_or(0),
            valid_from: rng.pick(&[0, NOW - 5, NOW, NOW + 5]),
            valid_until: rng.pick(&times),
            observed_at: rng.pick(&[None, Some(3), Some(NOW + 3)]),
            supersedes: if rng.below(2) == 0 {
                None
            } else {
                Some(rng.pick(&IDS))
            },
        })
        .collect()
}

/// Each record's outcome in `context` (None: a winner), by position.
fn outcomes(
    records: &[Record<'static>],
    context: &Context<'static>,
    tombstones: &[Tombstone<'static>],
) -> Vec<Option<crate::model::Reason>> {
    ok(decide(
        &set_of(records),
        context,
        &TombstoneIndex::new(tombstones),
    ))
}

#[test]
fn normalising_never_changes_a_later_resolution() {
    use crate::model::Reason;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let instants = [NOW, NOW + 1, NOW + 5, NOW + 20, NOW + 1000];
    for _ in 0..3000 {
        let records = random_store(&mut rng);
        let tombstones: Vec<Tombstone<'static>> = (0..rng.below(3))
            .map(|_| Tombstone {
                key: rng.pick(&["pet", "home"]),
                scope: rng.pick(&scopes()),
                blocks_sources_before: rng.pick(&[0, 3, NOW]),
                user_wide: false,
                sources: None,
            })
            .collect();
        let set = set_of(&records);
        let store = ok(Store::from_candidates(&set));
        let written = ok(normalize(&store, &store.index_tombstones(&tombstones), NOW));
        let mut after = records.clone();
        for change in &written {
            after[change.row as usize].status = change.status;
        }
        for &t in &instants {
            for context in contexts(t) {
                let before = outcomes(&records, &context, &tombstones);
                let later = outcomes(&after, &context, &tombstones);
                for (row, (b, a)) in before.iter().zip(&later).enumerate() {
                    let written_superseded = written
                        .iter()
                        .any(|c| c.row as usize == row && c.status == Status::Superseded);
                    let allowed = b == a
                        || (written_superseded
                            && *b == Some(Reason::Superseded)
                            && *a == Some(Reason::StatusOrTime));
                    assert!(
                        allowed,
                        "{records:?} {tombstones:?} at {t}: row {row} {b:?} -> {a:?}"
                    );
                }
            }
        }
        // Idempotent: a second pass writes nothing.
        let set = set_of(&after);
        let again = ok(Store::from_candidates(&set));
        assert_eq!(
            ok(normalize(&again, &again.index_tombstones(&tombstones), NOW)),
            []
        );
    }
}
