//! The batch form against single resolutions, chunking, and refused stores.

use super::*;
use crate::resolve::{resolve, Record, ScopeRef, Tombstone, TombstoneIndex};
use crate::test_support::{record, set_of};

fn context(user: &'static str, conversation: &'static str) -> Context<'static> {
    Context {
        now: 10,
        user_id: user,
        character_id: Some("c"),
        conversation_id: Some(conversation),
        scene_id: None,
    }
}

fn ok<T>(result: Result<T, Broken>) -> T {
    match result {
        Ok(value) => value,
        Err(broken) => panic!("{broken}"),
    }
}

fn store_of(set: &CandidateSet<'static>) -> Store<'static> {
    match Store::from_candidates(set) {
        Ok(store) => store,
        Err(refused) => panic!("unexpected {refused:?}"),
    }
}

/// Each context's (active ids, excluded (id, reason)).
type Listed = Vec<(Vec<String>, Vec<(String, Reason)>)>;

fn listed(store: &Store<'_>, chunks: &[DecisionChunk]) -> Listed {
    let name = |row: u32| store.id(row).unwrap_or("?").to_owned();
    chunks
        .iter()
        .flat_map(DecisionChunk::per_context)
        .map(|(rows, outcomes)| {
            let mut active = Vec::new();
            let mut excluded = Vec::new();
            for (&row, outcome) in rows.iter().zip(outcomes) {
                match outcome {
                    None => active.push(name(row)),
                    Some(reason) => excluded.push((name(row), *reason)),
                }
            }
            (active, excluded)
        })
        .collect()
}

#[test]
fn each_context_sees_only_its_scopes_and_equals_a_single_resolve() {
    let records = [
        record("u1-pet", "pet", ScopeRef::user("u1")),
        record("u2-pet", "pet", ScopeRef::user("u2")),
        Record {
            supersedes: Some("u1-pet"),
            version: 2,
            ..record("k1-pet", "pet2", ScopeRef::conversation("k1"))
        },
        record("k2-x", "x", ScopeRef::conversation("k2")),
        record("u1-c-x", "x", ScopeRef::character("u1", "c")),
        Record {
            supersedes: Some("nobody"),
            ..record("k1-y", "y", ScopeRef::conversation("k1"))
        },
        Record {
            version: 0,
            ..record("k1-y-old", "y", ScopeRef::conversation("k1"))
        },
    ];
    let set = set_of(&records);
    let store = store_of(&set);
    let contexts: Vec<Context<'static>> = [("u1", "k1"), ("u1", "k2"), ("u2", "k1"), ("u3", "k9")]
        .iter()
        .map(|&(user, conversation)| context(user, conversation))
        .collect();
    let tombstones = [Tombstone {
        key: "x",
        scope: ScopeRef::conversation("k2"),
        blocks_sources_before: 0,
        user_wide: false,
        sources: None,
    }];
    let index = TombstoneIndex::new(&tombstones);
    let batch = listed(
        &store,
        &ok(resolve_contexts(
            &store,
            &contexts,
            &store.index_tombstones(&tombstones),
            true,
        )),
    );
    assert_eq!(batch.len(), contexts.len());
    for (context, (active, excluded)) in contexts.iter().zip(&batch) {
        let single = ok(resolve(&set, context, &index));
        let name = |row: usize| records[row].id.to_owned();
        let single_active: Vec<String> = single.active.iter().map(|&r| name(r)).collect();
        let single_excluded: Vec<(String, Reason)> = single
            .excluded
            .iter()
            .filter(|(_, r)| *r != Reason::Scope)
            .map(|&(row, reason)| (name(row), reason))
            .collect();
        assert_eq!(active, &single_active);
        assert_eq!(excluded, &single_excluded);
    }
    // u1 in k1: the conversation's correction hides the user-level record;
    // "character:u1:c" sorts before "conversation:k1".
    assert_eq!(batch[0].0, ["u1-c-x", "k1-pet", "k1-y"]);
    assert_eq!(batch[1].0, ["u1-c-x", "u1-pet"]);
    assert!(batch[1].1.contains(&("k2-x".to_owned(), Reason::Forgotten)));
    assert_eq!(batch[3], (vec![], vec![]));
}

#[test]
fn without_exclusions_only_winners_are_listed() {
    let set = set_of(&[
        record("a", "k", ScopeRef::user("u1")),
        Record {
            version: 0,
            ..record("b", "k", ScopeRef::user("u1"))
        },
    ]);
    let store = store_of(&set);
    let chunks = ok(resolve_contexts(
        &store,
        &[context("u1", "k1")],
        &StoreTombstones::default(),
        false,
    ));
    assert_eq!(listed(&store, &chunks), [(vec!["a".to_owned()], vec![])]);
}

#[test]
fn many_contexts_come_back_in_order_across_chunks() {
    let set = set_of(&[record("a", "k", ScopeRef::user("u1"))]);
    let store = store_of(&set);
    let contexts: Vec<Context<'static>> = (0..CHUNK * 2 + 7)
        .map(|n| context(if n % 3 == 0 { "u1" } else { "u2" }, "k"))
        .collect();
    let chunks = ok(resolve_contexts(
        &store,
        &contexts,
        &StoreTombstones::default(),
        false,
    ));
    let batch = listed(&store, &chunks);
    assert_eq!(batch.len(), contexts.len());
    for (n, (active, _)) in batch.iter().enumerate() {
        assert_eq!(active.len(), usize::from(n % 3 == 0), "context {n}");
    }
    let covered: Vec<usize> = chunks.iter().flat_map(|c| c.contexts.clone()).collect();
    assert_eq!(covered, (0..contexts.len()).collect::<Vec<_>>());
}

#[test]
fn duplicate_ids_are_refused() {
    let set = set_of(&[
        record("a", "k", ScopeRef::user("u1")),
        record("b", "k", ScopeRef::user("u1")),
        record("a", "j", ScopeRef::user("u2")),
    ]);
    assert_eq!(
        Store::from_candidates(&set).err(),
        Some(DuplicateId {
            earlier: 0,
            later: 2
        })
    );
}

#[test]
fn no_contexts_and_no_records() {
    let store = store_of(&CandidateSet::default());
    let none = ok(resolve_contexts(
        &store,
        &[],
        &StoreTombstones::default(),
        true,
    ));
    assert!(listed(&store, &none).is_empty());
    let one = ok(resolve_contexts(
        &store,
        &[context("u", "k")],
        &StoreTombstones::default(),
        true,
    ));
    assert_eq!(listed(&store, &one), [(vec![], vec![])]);
}

#[test]
fn owned_conversation_records_reach_only_their_owner() {
    // Two users both call their first conversation "k1".
    let records = [
        record("mine", "place", ScopeRef::conversation("k1").owned_by("u1")),
        record(
            "theirs",
            "place",
            ScopeRef::conversation("k1").owned_by("u2"),
        ),
        record("shared", "topic", ScopeRef::conversation("k1")),
        Record {
            version: 2,
            ..record(
                "shared-owned",
                "topic",
                ScopeRef::conversation("k1").owned_by("u1"),
            )
        },
    ];
    let set = set_of(&records);
    let store = store_of(&set);
    let contexts = [
        context("u1", "k1"),
        context("u2", "k1"),
        context("u3", "k1"),
    ];
    let tombstones = [Tombstone {
        key: "topic",
        scope: ScopeRef::conversation("k1").owned_by("u1"),
        blocks_sources_before: 0,
        user_wide: false,
        sources: None,
    }];
    let batch = listed(
        &store,
        &ok(resolve_contexts(
            &store,
            &contexts,
            &store.index_tombstones(&tombstones),
            true,
        )),
    );
    let index = TombstoneIndex::new(&tombstones);
    for (context, (active, excluded)) in contexts.iter().zip(&batch) {
        let single = ok(resolve(&set, context, &index));
        let name = |row: usize| records[row].id.to_owned();
        assert_eq!(
            active,
            &single.active.iter().map(|&r| name(r)).collect::<Vec<_>>()
        );
        let single_excluded: Vec<(String, Reason)> = single
            .excluded
            .iter()
            .filter(|(_, r)| *r != Reason::Scope)
            .map(|&(row, reason)| (name(row), reason))
            .collect();
        assert_eq!(excluded, &single_excluded);
    }
    // u1: its own place; the owned "topic" is another scope than the shared
    // one (two groups, two winners), and the tombstone on it forgets only it.
    assert_eq!(batch[0].0, ["shared", "mine"]);
    assert!(batch[0]
        .1
        .contains(&("shared-owned".to_owned(), Reason::Forgotten)));
    assert_eq!(batch[1].0, ["shared", "theirs"]);
    assert_eq!(batch[2], (vec!["shared".to_owned()], vec![]));
}
