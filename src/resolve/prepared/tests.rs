//! A prepared set resolves exactly as [`crate::resolve::resolve`] does, in
//! every context, on generated sets where ids, keys and scopes collide.

use super::*;
use crate::model::{Authority, Reason, Status};
use crate::resolve::{resolve, Record, TombstoneIndex};
use crate::test_support::{self, Rng};

const NOW: i64 = 1_000;

// Ids in an order that differs from row order, with `:` and non-ASCII.
const IDS: [&str; 12] = [
    "m", "b", "a:b", "a", "é", "z", "𝔘", "c%", "A", "ab", "b:", "k",
];
const KEYS: [&str; 3] = ["name", "home", "pet:name"];

fn scopes() -> Vec<ScopeRef<'static>> {
    vec![
        ScopeRef::user("u"),
        ScopeRef::user("v"),
        ScopeRef::character("u", "c"),
        ScopeRef::character("u", "d"),
        ScopeRef::conversation("k"),
        ScopeRef::conversation("k").owned_by("u"),
        ScopeRef::conversation("k").owned_by("v"),
        ScopeRef::conversation("j"),
        ScopeRef::scene("k", "s"),
        ScopeRef::scene("k", "s").owned_by("u"),
        ScopeRef::scene("k", "t"),
    ]
}

fn contexts() -> Vec<Context<'static>> {
    test_support::contexts(
        &[NOW - 1, NOW, NOW + 1, NOW + 100],
        &["u", "v"],
        &["c", "d"],
        &[None, Some("s"), Some("t")],
    )
}

fn random_records(rng: &mut Rng) -> Vec<Record<'static>> {
    let scopes = scopes();
    let ends = [
        None,
        Some(NOW - 10),
        Some(NOW),
        Some(NOW + 1),
        Some(NOW + 50),
    ];
    let statuses = [
        Status::Active,
        Status::Active,
        Status::Active,
        Status::Superseded,
        Status::Expired,
        Status::Forgotten,
    ];
    let authorities = [
        Authority::ModelInferred,
        Authority::RuleExtracted,
        Authority::UserConfirmed,
        Authority::UserCorrected,
    ];
    let count = rng.below(IDS.len() + 1);
    (0..count)
        .map(|row| {
            let valid_from = rng.pick(&[NOW - 20, NOW - 5, NOW, NOW + 1]);
            let named = rng.pick(&IDS);
            Record {
                id: IDS[row],
                key: rng.pick(&KEYS),
                scope: rng.pick(&scopes),
                status: rng.pick(&statuses),
                authority: rng.pick(&authorities),
                version: i64::try_from(rng.below(3)).unwrap_or(0),
                valid_from,
                valid_until: rng.pick(&ends),
                observed_at: rng.pick(&[None, None, Some(NOW - 30), Some(NOW - 3)]),
                // Some name another candidate (or itself), some a missing id.
                supersedes: rng.pick(&[None, None, Some(named), Some("gone")]),
            }
        })
        .collect()
}

fn random_tombstones(rng: &mut Rng) -> Vec<Tombstone<'static>> {
    let scopes = scopes();
    (0..rng.below(4))
        .map(|_| Tombstone {
            key: rng.pick(&["name", "home", "other"]),
            scope: rng.pick(&scopes),
            blocks_sources_before: rng.pick(&[NOW - 30, NOW - 5, NOW, NOW + 10]),
        })
        .collect()
}

fn set_of(records: &[Record<'static>]) -> CandidateSet<'static> {
    let mut set = CandidateSet::with_capacity(records.len());
    for record in records {
        set.push(*record);
    }
    set
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
        let prepared = match PreparedSet::new(&set, &tombstones) {
            Ok(prepared) => prepared,
            Err(repeat) => panic!("ids are unique, yet {repeat:?}"),
        };
        let index = TombstoneIndex::new(&tombstones);
        for context in &contexts {
            let expected = resolve(&set, context, &index).map_err(|b| b.to_string());
            let got = prepared
                .resolve(context, &mut scratch)
                .map_err(|b| b.to_string());
            assert_eq!(got, expected, "{records:?} {tombstones:?} {context:?}");
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
        .unwrap_or(Record {
            id: "x",
            key: "k",
            scope: ScopeRef::user("u"),
            status: Status::Active,
            authority: Authority::ModelInferred,
            version: 1,
            valid_from: NOW,
            valid_until: None,
            observed_at: None,
            supersedes: None,
        });
    let records = [
        Record { id: "a", ..base },
        Record { id: "b", ..base },
        Record { id: "a", ..base },
    ];
    let refused = PreparedSet::new(&set_of(&records), &[]).map(|_| ());
    assert_eq!(
        refused,
        Err(RepeatedId {
            earlier: 0,
            later: 2
        })
    );
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
