//! Reading Python values the binding accepts without calling back into
//! Python: exact `str`, exact UTC `datetime`, the scope classes. Anything else
//! goes to the reference's rules (see `record.rs`).

use pyo3::prelude::*;
use pyo3::types::{
    PyDateAccess, PyDateTime, PyDelta, PyDeltaAccess, PyString, PyTimeAccess, PyTzInfoAccess,
};

use super::cache::Package;
use crate::model::{IdColumn, ScopeKind};
use crate::resolve::ScopeRef;

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The wall-clock fields of a datetime as microseconds since the epoch, as if UTC.
fn wall_clock_micros(moment: &Bound<'_, PyDateTime>) -> i64 {
    let days = days_from_civil(
        i64::from(moment.get_year()),
        i64::from(moment.get_month()),
        i64::from(moment.get_day()),
    );
    let seconds = i64::from(moment.get_hour()) * 3_600
        + i64::from(moment.get_minute()) * 60
        + i64::from(moment.get_second());
    // datetime's range (years 1-9999) keeps this far inside i64.
    days * MICROS_PER_DAY + seconds * MICROS_PER_SECOND + i64::from(moment.get_microsecond())
}

fn delta_micros(delta: &Bound<'_, PyDelta>) -> i64 {
    i64::from(delta.get_days()) * MICROS_PER_DAY
        + i64::from(delta.get_seconds()) * MICROS_PER_SECOND
        + i64::from(delta.get_microseconds())
}

/// An exact `datetime` whose tzinfo is `timezone.utc` (and `fold` 0): its
/// microseconds since the epoch. Such a value is already in the form the reference's rules
/// produce, so it is stored as given.
pub(crate) fn utc_datetime_micros(package: &Package, value: &Bound<'_, PyAny>) -> Option<i64> {
    let moment = value.cast_exact::<PyDateTime>().ok()?;
    if moment.get_fold() {
        return None; // the rules rebuild it with fold=0
    }
    let tzinfo = moment.get_tzinfo()?;
    tzinfo.is(&package.utc).then(|| wall_clock_micros(moment))
}

/// Microseconds since the epoch of an aware `datetime` the reference's rules
/// produced (a plain `datetime` with a fixed-offset `timezone`).
pub(crate) fn normalized_datetime_micros(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    let moment = value.cast::<PyDateTime>()?;
    let offset = match moment.call_method0(pyo3::intern!(value.py(), "utcoffset"))? {
        delta if delta.is_none() => {
            return Err(super::InternalError::new_err(
                "a checked instant has no UTC offset",
            ))
        }
        delta => delta_micros(delta.cast::<PyDelta>()?),
    };
    Ok(wall_clock_micros(moment) - offset)
}

/// An exact `str` that is valid Unicode, as UTF-8 (`None`: let the rules decide).
pub(crate) fn exact_text<'a>(value: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    value.cast_exact::<PyString>().ok()?.to_str().ok()
}

/// A scope read from a Python scope object, owned.
#[derive(Clone)]
pub(crate) struct OwnedScope {
    pub kind: ScopeKind,
    pub first: String,
    pub second: String,
    pub owner: Option<String>,
}

impl OwnedScope {
    pub(crate) fn borrow(&self) -> ScopeRef<'_> {
        ScopeRef {
            kind: self.kind,
            first: &self.first,
            second: &self.second,
            owner: self.owner.as_deref(),
        }
    }
}

/// The kind, ids and owner of a scope object of one of the four exact scope
/// classes whose ids are exact, valid, non-empty `str` and whose owner is
/// `None` or such a `str` (`None`: let the rules decide; a scope is checked
/// when built, but a frozen object can still be altered).
pub(crate) fn scope_fields(
    package: &Package,
    scope: &Bound<'_, PyAny>,
) -> PyResult<Option<OwnedScope>> {
    let Some(kind) = package.scope_kind(scope) else {
        return Ok(None);
    };
    let text_of = |column: IdColumn| -> PyResult<Option<String>> {
        let value = scope.getattr(package.id_column_name(scope.py(), column))?;
        Ok(exact_text(&value)
            .filter(|text| !text.is_empty())
            .map(str::to_owned))
    };
    let mut fields = [String::new(), String::new()];
    for (slot, &column) in fields.iter_mut().zip(kind.id_columns()) {
        match text_of(column)? {
            Some(text) => *slot = text,
            None => return Ok(None),
        }
    }
    let owner = match kind.owner_column() {
        None => None,
        Some(column) => {
            let value = scope.getattr(package.id_column_name(scope.py(), column))?;
            if value.is_none() {
                None
            } else {
                match text_of(column)? {
                    Some(owner) => Some(owner),
                    None => return Ok(None),
                }
            }
        }
    };
    let [first, second] = fields;
    Ok(Some(OwnedScope {
        kind,
        first,
        second,
        owner,
    }))
}

#[cfg(test)]
mod tests {
    use super::days_from_civil;

    #[test]
    fn civil_days_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(1, 1, 1), -719_162);
        assert_eq!(days_from_civil(9999, 12, 31), 2_932_896);
        assert_eq!(
            days_from_civil(2024, 2, 29) + 1,
            days_from_civil(2024, 3, 1)
        );
    }
}
