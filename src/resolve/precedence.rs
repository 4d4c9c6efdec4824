//! Stage 5, `lower-precedence`: within each (scope, key) group of survivors,
//! every record but the first by authority rank descending, then `version`
//! descending, then `valid_from` descending, then `id` ascending by code point.
//!
//! Groups are never sorted: one pass keeps the best row per group, a second
//! marks the others, so the stage is linear in the number of candidates.

use std::cmp::Ordering;

use super::candidates::Facts;
use super::candidates::Slot;
use super::hash::{map_with_capacity, Map};
use super::view::Candidates;
use crate::error::Broken;
use crate::model::Reason;

/// The precedence order: `Less` means `a` comes first (wins). Total when ids
/// are unique, because ids (`by_id`, asked only on a full tie) come last.
#[must_use]
pub fn compare(a: &Facts, b: &Facts, by_id: impl FnOnce() -> Ordering) -> Ordering {
    b.authority
        .cmp(&a.authority)
        .then_with(|| b.version.cmp(&a.version))
        .then_with(|| b.valid_from.cmp(&a.valid_from))
        .then_with(by_id)
}

/// The best candidate of each (scope slot, key) group so far, with its
/// facts: a table from group to a slot of a dense list, so that reading the
/// winners walks the groups, not the table's capacity.
pub struct BestOfGroups<K> {
    slots: Map<(Slot, K), usize>,
    best: Vec<(usize, Facts)>,
}

impl<K> Default for BestOfGroups<K> {
    fn default() -> Self {
        Self {
            slots: map_with_capacity(0),
            best: Vec::new(),
        }
    }
}

/// Marks `LowerPrecedence` on every survivor (`None` outcome) that is not the
/// best of its group; the winners keep `None`. `survivors` lists the
/// candidates that passed stages 1-3 with their (scope slot, key) group (in
/// scope, their scope is the context's scope of their slot, so (slot, key)
/// names the group); those excluded since are skipped. `best` is scratch space.
///
/// # Errors
/// [`Broken`] when a survivor has no outcome slot or no facts (a bug).
pub fn exclude_losers<C: Candidates>(
    candidates: &C,
    survivors: &[(usize, Slot, C::Key)],
    outcomes: &mut [Option<Reason>],
    groups: &mut BestOfGroups<C::Key>,
) -> Result<(), Broken> {
    const MISSING: Broken = Broken("a survivor has no outcome or no facts");
    let BestOfGroups { slots, best } = groups;
    slots.clear();
    slots.reserve(survivors.len());
    best.clear();
    for &(index, slot, key) in survivors {
        let outcome = outcomes.get_mut(index).ok_or(MISSING)?;
        if outcome.is_some() {
            continue; // excluded at stage 4 since
        }
        let facts = candidates.facts(index).ok_or(MISSING)?;
        // Every survivor loses unless it is its group's best at the end.
        *outcome = Some(Reason::LowerPrecedence);
        let position = *slots.entry((slot, key)).or_insert_with(|| {
            best.push((index, facts));
            best.len() - 1
        });
        if let Some((current, current_facts)) = best.get_mut(position) {
            let by_id = || candidates.compare_ids(index, *current);
            if *current != index && compare(&facts, current_facts, by_id) == Ordering::Less {
                *current = index;
                *current_facts = facts;
            }
        }
    }
    for &(index, _) in best.iter() {
        *outcomes.get_mut(index).ok_or(MISSING)? = None;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::candidates::{CandidateSet, Context, Record, ScopeRef};
    use super::super::view::ContextCandidates;
    use super::super::TombstoneIndex;
    use super::*;
    use crate::model::{Authority, Status};

    fn by_facts(a: &Record<'_>, b: &Record<'_>) -> Ordering {
        let facts = |r: &Record<'_>| Facts {
            status: r.status,
            authority: r.authority,
            version: r.version,
            valid_from: r.valid_from,
            valid_until: r.valid_until,
            observed_at: r.observed_at,
        };
        compare(&facts(a), &facts(b), || {
            a.id.as_bytes().cmp(b.id.as_bytes())
        })
    }

    fn record(
        id: &'static str,
        authority: Authority,
        version: i64,
        valid_from: i64,
    ) -> Record<'static> {
        Record {
            id,
            key: "k",
            scope: ScopeRef::user("u"),
            status: Status::Active,
            authority,
            version,
            valid_from,
            valid_until: None,
            observed_at: None,
            supersedes: None,
        }
    }

    #[test]
    fn authority_beats_version_beats_recency_beats_id() {
        let strong = record("z", Authority::UserCorrected, 1, 0);
        let newer_version = record("y", Authority::UserConfirmed, 9, 0);
        assert_eq!(by_facts(&strong, &newer_version), Ordering::Less);
        let later = record("x", Authority::UserConfirmed, 9, 5);
        assert_eq!(by_facts(&later, &newer_version), Ordering::Less);
        let same_but_id = record("a", Authority::UserConfirmed, 9, 5);
        assert_eq!(by_facts(&same_but_id, &later), Ordering::Less);
        assert_eq!(by_facts(&later, &later), Ordering::Equal);
    }

    #[test]
    fn ids_compare_by_code_point_not_locale() {
        // "Z" (U+005A) < "a" (U+0061) < "é" (U+00E9) < "𝔘" (U+1D518).
        let ids = ["𝔘", "é", "a", "Z"];
        let mut records: Vec<_> = ids
            .iter()
            .map(|id| record(id, Authority::ModelInferred, 1, 0))
            .collect();
        records.sort_by(by_facts);
        let order: Vec<_> = records.iter().map(|r| r.id).collect();
        assert_eq!(order, ["Z", "a", "é", "𝔘"]);
    }

    #[test]
    fn extreme_versions_compare_without_overflow() {
        let low = record("a", Authority::ModelInferred, i64::MIN, 0);
        let high = record("b", Authority::ModelInferred, i64::MAX, 0);
        assert_eq!(by_facts(&high, &low), Ordering::Less);
    }

    #[test]
    fn one_winner_per_group_and_other_groups_untouched() {
        let mut set = CandidateSet::with_capacity(4);
        set.push(record("old", Authority::ModelInferred, 1, 0));
        set.push(record("new", Authority::ModelInferred, 2, 0));
        let mut elsewhere = record("elsewhere", Authority::ModelInferred, 1, 0);
        elsewhere.key = "other";
        set.push(elsewhere);
        set.push(record("excluded-earlier", Authority::UserCorrected, 9, 0));
        let mut outcomes = vec![None, None, None, Some(Reason::Forgotten)];
        let context = Context {
            now: 0,
            user_id: "u",
            character_id: Some("c"),
            conversation_id: Some("k"),
            scene_id: None,
        };
        let index = TombstoneIndex::default();
        let view = ContextCandidates::new(&set, &context, &index);
        let survivors: Vec<_> = [0, 1, 2]
            .into_iter()
            .map(|row| (row, ScopeRef::user("u").slot(), set.keys()[row]))
            .collect();
        let done = exclude_losers(
            &view,
            &survivors,
            &mut outcomes,
            &mut BestOfGroups::default(),
        );
        assert_eq!(done, Ok(()));
        assert_eq!(
            outcomes,
            [
                Some(Reason::LowerPrecedence),
                None,
                None,
                Some(Reason::Forgotten)
            ]
        );
    }
}
