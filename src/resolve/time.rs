//! Stage 2, `status-or-time`: outside the validity interval, or stored as
//! `superseded`, `expired` or `retracted`.

use crate::model::Status;

/// `valid_from <= now < valid_until` (half-open; no end means open-ended).
#[must_use]
pub fn in_validity_interval(valid_from: i64, valid_until: Option<i64>, now: i64) -> bool {
    valid_from <= now && valid_until.is_none_or(|until| now < until)
}

/// Stage 2's test, given the interval test already computed.
#[must_use]
pub fn excluded_by_status_or_time(in_interval: bool, status: Status) -> bool {
    !in_interval
        || matches!(
            status,
            Status::Superseded | Status::Expired | Status::Retracted
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_half_open() {
        assert!(in_validity_interval(10, None, 10));
        assert!(!in_validity_interval(10, None, 9));
        assert!(in_validity_interval(10, Some(11), 10));
        assert!(!in_validity_interval(10, Some(20), 20));
        assert!(in_validity_interval(10, Some(20), 19));
    }

    #[test]
    fn an_end_at_or_before_the_start_is_never_eligible() {
        for now in [-1, 0, 5, 10, 11] {
            assert!(!in_validity_interval(10, Some(10), now));
            assert!(!in_validity_interval(10, Some(3), now));
        }
    }

    #[test]
    fn extreme_instants_do_not_overflow() {
        assert!(in_validity_interval(i64::MIN, None, i64::MIN));
        assert!(!in_validity_interval(i64::MAX, Some(i64::MIN), 0));
    }

    #[test]
    fn stored_superseded_or_expired_is_excluded_even_in_time() {
        assert!(!excluded_by_status_or_time(true, Status::Active));
        assert!(!excluded_by_status_or_time(true, Status::Forgotten));
        assert!(excluded_by_status_or_time(true, Status::Superseded));
        assert!(excluded_by_status_or_time(true, Status::Expired));
        assert!(excluded_by_status_or_time(true, Status::Retracted));
        assert!(excluded_by_status_or_time(false, Status::Active));
    }
}
