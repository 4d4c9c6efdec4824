//! Stage 5, `lower-precedence`: within each (scope, key) group of survivors,
//! every record but the first by authority rank descending, then `version`
//! descending, then `valid_from` descending, then `id` ascending by code point.
//!
//! Groups are never sorted: one pass keeps the best row per group, a second
//! marks the others, so the stage is linear in the number of candidates.

use std::cmp::Ordering;

use super::candidates::{CandidateSet, Record};
use super::hash::{map_with_capacity, Map};
use crate::model::{Reason, ScopeKind};

/// The precedence order: `Less` means `a` comes first (wins). Total when ids
/// are unique, because ids are compared last.
#[must_use]
pub fn compare(a: &Record<'_>, b: &Record<'_>) -> Ordering {
    b.authority
        .cmp(&a.authority)
        .then_with(|| b.version.cmp(&a.version))
        .then_with(|| b.valid_from.cmp(&a.valid_from))
        .then_with(|| a.id.as_bytes().cmp(b.id.as_bytes()))
}

/// Marks `LowerPrecedence` on every survivor (`None` outcome) that is not the
/// first of its group; the winners keep `None`. Survivors must be in scope of
/// one context (stage 1 guarantees it).
pub fn exclude_losers(candidates: &CandidateSet<'_>, outcomes: &mut [Option<Reason>]) {
    let survivors = outcomes.iter().filter(|outcome| outcome.is_none()).count();
    if survivors < 2 {
        return;
    }
    // The best record of each group so far. Survivors are in scope, so their
    // scope is the context's scope of their kind: (kind, key) names the group.
    // Values are rows (small entries keep the table in cache); a challenger is
    // compared with the current best through the columns.
    let mut best: Map<(ScopeKind, &str), usize> = map_with_capacity(survivors);
    for ((row, record), outcome) in candidates.iter().zip(outcomes.iter_mut()) {
        if outcome.is_some() {
            continue;
        }
        // Every survivor loses unless it is its group's best at the end.
        *outcome = Some(Reason::LowerPrecedence);
        best.entry((record.scope.kind, record.key))
            .and_modify(|current| {
                let beats_current = candidates
                    .get(*current)
                    .is_none_or(|incumbent| compare(&record, &incumbent) == Ordering::Less);
                if beats_current {
                    *current = row;
                }
            })
            .or_insert(row);
    }
    for row in best.into_values() {
        if let Some(outcome) = outcomes.get_mut(row) {
            *outcome = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::candidates::ScopeRef;
    use super::*;
    use crate::model::{Authority, Status};

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
        assert_eq!(compare(&strong, &newer_version), Ordering::Less);
        let later = record("x", Authority::UserConfirmed, 9, 5);
        assert_eq!(compare(&later, &newer_version), Ordering::Less);
        let same_but_id = record("a", Authority::UserConfirmed, 9, 5);
        assert_eq!(compare(&same_but_id, &later), Ordering::Less);
        assert_eq!(compare(&later, &later), Ordering::Equal);
    }

    #[test]
    fn ids_compare_by_code_point_not_locale() {
        // "Z" (U+005A) < "a" (U+0061) < "é" (U+00E9) < "𝔘" (U+1D518).
        let ids = ["𝔘", "é", "a", "Z"];
        let mut records: Vec<_> = ids
            .iter()
            .map(|id| record(id, Authority::ModelInferred, 1, 0))
            .collect();
        records.sort_by(compare);
        let order: Vec<_> = records.iter().map(|r| r.id).collect();
        assert_eq!(order, ["Z", "a", "é", "𝔘"]);
    }

    #[test]
    fn extreme_versions_compare_without_overflow() {
        let low = record("a", Authority::ModelInferred, i64::MIN, 0);
        let high = record("b", Authority::ModelInferred, i64::MAX, 0);
        assert_eq!(compare(&high, &low), Ordering::Less);
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
        exclude_losers(&set, &mut outcomes);
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
