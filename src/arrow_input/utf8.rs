//! The full check of an input column, with a faster check of string columns.
//!
//! Arrow's `validate_full` checks each string's offsets and UTF-8 through a
//! chain of closures per row; for the 36-byte ids of a real store that was
//! about a tenth of reading a records table. A string column is checked here
//! for what reading it needs, in two tight passes: the offsets (in bounds,
//! never decreasing), then the bytes they span, which for ids and keys are
//! nearly always ASCII. Bytes that are not all ASCII must be UTF-8 with every
//! offset on a character boundary: then every string, null slots included,
//! is UTF-8.
//!
//! Two differences from Arrow, on purpose. Arrow refuses an empty string whose
//! offset falls inside a character when the whole buffer is UTF-8 (and
//! accepts it when the buffer is not). The rule here is per string: an empty
//! string is valid wherever it points, and reads as `""` either way. And an
//! array of no rows is not held to an offset within its values, which an
//! imported empty slice cannot meet (see `no_strings`).

use arrow_data::ArrayData;
use arrow_schema::{ArrowError, DataType};

/// What `ArrayData::validate_full` checks, of any array; of a string array,
/// its layout and null count as Arrow checks them, then [`strings`].
///
/// # Errors
/// The first problem found, in Arrow's words.
pub(super) fn validate_fully(data: &ArrayData) -> Result<(), ArrowError> {
    let width = match data.data_type() {
        DataType::Utf8 => 4,
        DataType::LargeUtf8 => 8,
        DataType::Dictionary(key, _) => return dictionary(data, key),
        _ => return data.validate_full(),
    };
    if data.is_empty() {
        return no_strings(data, width);
    }
    // The layout (buffer sizes, offset), then the null count, as Arrow does.
    data.validate()?;
    data.validate_nulls()?;
    let (Some(offsets), Some(values)) = (data.buffers().first(), data.buffers().get(1)) else {
        return Err(invalid("a string array lacks its buffers"));
    };
    let first = data.offset().saturating_mul(width);
    let count = data.len().saturating_add(1);
    let offsets = offsets
        .as_slice()
        .get(first..first.saturating_add(count.saturating_mul(width)))
        .ok_or_else(|| invalid("the offsets buffer is too short"))?;
    strings(offsets, width, values.as_slice())
}

/// What a string array of no rows needs: its two buffers, and the one
/// offset its position names. Not Arrow's check that this offset lies
/// within the values: the C data interface carries no buffer sizes, and
/// arrow-rs's importer sizes the values of an empty array as 0 bytes. So an
/// empty slice of a producer's array (a chunk of a chunked column, a sliced
/// table: valid Arrow, which pyarrow's full validation accepts) keeps its
/// place in the offsets, past the strings before it, over values of 0 bytes,
/// and Arrow's check refused it (issue 35). No byte of it is ever read.
fn no_strings(data: &ArrayData, width: usize) -> Result<(), ArrowError> {
    let slot = data.offset().saturating_mul(width);
    let holds_its_offset = data
        .buffers()
        .first()
        .is_some_and(|offsets| offsets.len() >= slot.saturating_add(width));
    if data.buffers().len() != 2 || !holds_its_offset {
        return Err(invalid("an empty string array lacks its offset"));
    }
    Ok(())
}

/// What `validate_full` checks of a dictionary array: its layout and null
/// count, every non-null key within the values, and the values in full (by
/// [`validate_fully`], so string values take the two-pass check too). The
/// keys are checked as one min and max, not key by key with a branch each.
fn dictionary(data: &ArrayData, key: &DataType) -> Result<(), ArrowError> {
    let Some(values) = data.child_data().first() else {
        return Err(invalid("a dictionary array lacks its values"));
    };
    if values.is_empty() {
        return empty_dictionary(data, values);
    }
    data.validate()?;
    data.validate_nulls()?;
    let in_bounds = match key {
        DataType::Int8 => {
            keys_within::<1>(data, values.len(), |[b]| i64::from(i8::from_ne_bytes([b])))
        }
        DataType::UInt8 => keys_within::<1>(data, values.len(), |[b]| i64::from(b)),
        DataType::Int16 => {
            keys_within::<2>(data, values.len(), |raw| i64::from(i16::from_ne_bytes(raw)))
        }
        DataType::UInt16 => {
            keys_within::<2>(data, values.len(), |raw| i64::from(u16::from_ne_bytes(raw)))
        }
        DataType::Int32 => {
            keys_within::<4>(data, values.len(), |raw| i64::from(i32::from_ne_bytes(raw)))
        }
        DataType::UInt32 => {
            keys_within::<4>(data, values.len(), |raw| i64::from(u32::from_ne_bytes(raw)))
        }
        DataType::Int64 => keys_within::<8>(data, values.len(), i64::from_ne_bytes),
        // Past i64::MAX reads as -1: out of bounds, as Arrow has it.
        DataType::UInt64 => keys_within::<8>(data, values.len(), |raw| {
            i64::try_from(u64::from_ne_bytes(raw)).unwrap_or(-1)
        }),
        _ => false,
    };
    if !in_bounds {
        // Arrow's own check says which key is out (or refuses the key type);
        // it also has the last word on the rare arrays this quick test doubts
        // (all keys null over an empty dictionary).
        return data.validate_full();
    }
    for (index, child) in data.child_data().iter().enumerate() {
        validate_fully(child).map_err(|error| {
            ArrowError::InvalidArgumentError(format!(
                "{} child #{index} invalid: {error}",
                data.data_type()
            ))
        })?;
    }
    Ok(())
}

/// A dictionary array over no values (a chunk whose rows are all null):
/// valid when its values are (as an empty array, by [`validate_fully`]) and
/// every key is null. Arrow's checks are run on the same array over an
/// empty array built here: they read its values too, and would refuse an
/// empty string array as the importer makes it (see [`no_strings`]). The
/// rows are the same: over no values, each is null.
fn empty_dictionary(data: &ArrayData, values: &ArrayData) -> Result<(), ArrowError> {
    validate_fully(values)?;
    let empty = ArrayData::new_empty(values.data_type());
    // `build` runs Arrow's full check: the layout, the nulls, every key in bounds.
    data.clone()
        .into_builder()
        .child_data(vec![empty])
        .build()?;
    Ok(())
}

/// The lowest and highest of `keys`.
fn key_range(keys: impl Iterator<Item = i64>) -> (i64, i64) {
    keys.fold((i64::MAX, i64::MIN), |(lo, hi), key| {
        (lo.min(key), hi.max(key))
    })
}

/// Whether every non-null key of a dictionary array (`WIDTH` bytes each,
/// native order) is below `count`.
fn keys_within<const WIDTH: usize>(
    data: &ArrayData,
    count: usize,
    decode: impl Fn([u8; WIDTH]) -> i64,
) -> bool {
    let Some(buffer) = data.buffers().first() else {
        return false;
    };
    let first = data.offset().saturating_mul(WIDTH);
    let Some(bytes) = buffer
        .as_slice()
        .get(first..first.saturating_add(data.len().saturating_mul(WIDTH)))
    else {
        return false;
    };
    let keys = bytes.chunks_exact(WIDTH).map(|raw| {
        let mut key = [0_u8; WIDTH];
        key.copy_from_slice(raw);
        decode(key)
    });
    let within = |(lowest, highest): (i64, i64)| {
        lowest >= 0 && usize::try_from(highest).is_ok_and(|highest| highest < count)
    };
    // Null slots usually hold 0 (what writers put there): every slot in
    // bounds settles it without reading the validity bits.
    if data.is_empty() || within(key_range(keys.clone())) {
        return true;
    }
    // A null slot may hold anything: it counts as key 0.
    match data.nulls().filter(|nulls| nulls.null_count() > 0) {
        None => false,
        Some(nulls) => within(key_range(keys.zip(nulls.iter()).map(|(key, valid)| {
            if valid {
                key
            } else {
                0
            }
        }))),
    }
}

/// Checks the strings of `offsets` (`width` bytes each, native order) into
/// `values`: each offset within `values`, none below the one before, and
/// every string UTF-8.
fn strings(offsets: &[u8], width: usize, values: &[u8]) -> Result<(), ArrowError> {
    match width {
        4 => strings_of::<4>(offsets, values, |raw| i64::from(i32::from_ne_bytes(raw))),
        _ => strings_of::<8>(offsets, values, i64::from_ne_bytes),
    }
}

fn strings_of<const WIDTH: usize>(
    offsets: &[u8],
    values: &[u8],
    decode: impl Fn([u8; WIDTH]) -> i64 + Copy,
) -> Result<(), ArrowError> {
    let positions = || {
        offsets
            .chunks_exact(WIDTH)
            .map(move |chunk| <[u8; WIDTH]>::try_from(chunk).map_or(-1, decode))
    };
    // One branch-free pass: from 0 up, never decreasing, within the values.
    let limit = i64::try_from(values.len()).unwrap_or(i64::MAX);
    let mut previous = 0_i64;
    let mut broken = 0_u8;
    for position in positions() {
        broken |= u8::from(position < previous) | u8::from(position > limit);
        previous = position;
    }
    if broken != 0 {
        return Err(offsets_error(positions(), limit));
    }
    let as_index = |position: i64| usize::try_from(position).unwrap_or(0);
    let (Some(start), end) = (positions().next().map(as_index), as_index(previous)) else {
        return Ok(());
    };
    let spanned = values
        .get(start..end)
        .ok_or_else(|| invalid("offsets out of bounds"))?;
    if spanned.is_ascii() {
        return Ok(());
    }
    let decoded = || positions().map(as_index);
    if std::str::from_utf8(spanned).is_err() {
        return Err(first_bad_string(&decoded().collect::<Vec<_>>(), values));
    }
    // Valid as a whole, so each string is valid when it starts and ends on
    // a character boundary: never on a continuation byte (0b10xx_xxxx).
    let continuation = |at: usize| {
        values
            .get(at)
            .is_some_and(|byte| (0x80..0xc0).contains(byte))
    };
    match decoded().position(|at| at < end && continuation(at)) {
        Some(index) => Err(invalid(&format!(
            "incomplete utf-8 byte sequence from index {}",
            index.saturating_sub(1)
        ))),
        None => Ok(()),
    }
}

/// The error naming the first bad offset, as Arrow words it.
fn offsets_error(positions: impl Iterator<Item = i64>, limit: i64) -> ArrowError {
    let mut previous = 0_i64;
    for (index, position) in positions.enumerate() {
        if position > limit || position < 0 {
            return invalid(&format!(
                "Offset invariant failure: offset at position {index} out of bounds: \
                 {position} > {limit}"
            ));
        }
        if position < previous {
            return invalid(&format!(
                "Offset invariant failure: non-monotonic offset at slot {}: {previous} > {position}",
                index.saturating_sub(1)
            ));
        }
        previous = position;
    }
    invalid("Offset invariant failure")
}

/// The error naming the first string that is not UTF-8 (the slow path, for
/// a message only).
fn first_bad_string(offsets: &[usize], values: &[u8]) -> ArrowError {
    let bad = offsets.windows(2).enumerate().find_map(|(index, pair)| {
        let (&start, &end) = (pair.first()?, pair.get(1)?);
        let text = values.get(start..end)?;
        std::str::from_utf8(text)
            .err()
            .map(|error| (index, start..end, error))
    });
    match bad {
        Some((index, range, error)) => invalid(&format!(
            "Invalid UTF8 sequence at string index {index} ({range:?}): {error}"
        )),
        // Valid strings, invalid together: a string splits a character.
        None => invalid("incomplete utf-8 byte sequence"),
    }
}

fn invalid(message: &str) -> ArrowError {
    ArrowError::InvalidArgumentError(message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule, string by string, as Arrow states it.
    fn each_string_checked(offsets: &[i64], values: &[u8]) -> bool {
        let in_bounds = offsets
            .iter()
            .all(|&o| usize::try_from(o).is_ok_and(|o| o <= values.len()));
        in_bounds
            && offsets.windows(2).all(|pair| {
                let index = |offset: i64| usize::try_from(offset).unwrap_or(0);
                let (start, end) = (index(pair[0]), index(pair[1]));
                start <= end && std::str::from_utf8(&values[start..end]).is_ok()
            })
    }

    /// Whether our check and the rule agree on these strings; the rule's verdict.
    fn agree(offsets: &[i64], values: &[u8]) -> bool {
        let narrow: Vec<u8> = offsets
            .iter()
            .flat_map(|&o| i32::try_from(o).unwrap_or(-1).to_ne_bytes())
            .collect();
        let wide: Vec<u8> = offsets.iter().flat_map(|&o| o.to_ne_bytes()).collect();
        let expected = each_string_checked(offsets, values);
        for (bytes, width) in [(narrow, 4), (wide, 8)] {
            assert_eq!(
                strings(&bytes, width, values).is_ok(),
                expected,
                "offsets {offsets:?} values {values:?} width {width}"
            );
        }
        expected
    }

    #[test]
    fn valid_string_arrays_pass_whole_sliced_empty_and_with_nulls() {
        use arrow_array::{Array, LargeStringArray, StringArray};
        let texts = [Some("a"), None, Some("é€"), Some(""), Some("😀b")];
        let narrow = StringArray::from(texts.to_vec()).to_data();
        let wide = LargeStringArray::from(texts.to_vec()).to_data();
        for data in [narrow, wide] {
            assert!(validate_fully(&data).is_ok());
            // `ArrayData::slice` keeps the buffers and moves the offset.
            for (start, length) in [(1, 3), (2, 3), (4, 1), (5, 0), (0, 0)] {
                let slice = data.slice(start, length);
                assert_eq!(slice.offset(), start);
                assert!(validate_fully(&slice).is_ok(), "{start}..+{length}");
            }
        }
        assert!(validate_fully(&StringArray::from(Vec::<&str>::new()).to_data()).is_ok());
    }

    #[test]
    fn strings_are_judged_string_by_string() {
        let e = "é".as_bytes();
        let euro = "€".as_bytes();
        let cases: &[(&[i64], &[u8])] = &[
            (&[0, 3, 3, 6], b"abcdef"),
            (&[0], b""),
            (&[], b""),
            (&[2, 4], b"abcdef"),
            (&[0, 2, 4], &[b'a', e[0], e[1], b'b']),
            // A string ends inside a character.
            (&[0, 1, 4], &[e[0], e[1], e[0], e[1]]),
            (&[0, 2, 4], &[e[0], e[1], e[0], e[1]]),
            (&[0, 2], euro),
            (&[0, 3], euro),
            (&[1, 3], euro),
            (&[0, 3], &[b'a', 0xff, b'b']),
            // Bytes no string spans are never read.
            (&[0, 1], &[b'a', 0xff]),
            (&[0, 3, 2], b"abc"),
            (&[0, 7], b"abc"),
            (&[-1, 2], b"abc"),
        ];
        for (offsets, values) in cases {
            agree(offsets, values);
        }
    }

    #[test]
    fn random_strings_are_judged_string_by_string() {
        // xorshift: a fixed sequence, no dependency.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % u64::try_from(below).unwrap_or(1)).unwrap_or(0)
        };
        let signed = |n: usize| i64::try_from(n).unwrap_or(0);
        let alphabet: Vec<u8> = [b"ab".as_slice(), "é€😀¿".as_bytes(), &[0xff, 0x80]].concat();
        let mut valid = 0;
        for _ in 0..20_000 {
            let length = next(12);
            let values: Vec<u8> = (0..length)
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let mut offsets = vec![signed(next(3))];
            for _ in 0..next(5) {
                let step = signed(next(5)) - i64::from(next(10) == 0);
                offsets.push(offsets.last().copied().unwrap_or(0) + step);
            }
            valid += usize::from(agree(&offsets, &values));
        }
        // Both verdicts are common, so a check that always said one would fail.
        assert!((2_000..18_000).contains(&valid), "{valid} valid of 20,000");
    }
}

#[cfg(test)]
mod dictionary_tests {
    use std::sync::Arc;

    use arrow_array::types::{Int16Type, Int32Type, Int8Type, UInt64Type, UInt8Type};
    use arrow_array::{Array, DictionaryArray, Int32Array, StringArray};
    use arrow_buffer::{NullBuffer, ScalarBuffer};

    use super::{keys_within, validate_fully};

    type Outcome = Result<(), Box<dyn std::error::Error>>;

    fn values() -> Arc<StringArray> {
        Arc::new(StringArray::from(vec![Some("a"), None, Some("é€")]))
    }

    #[test]
    fn valid_dictionaries_pass_for_every_key_type_whole_and_sliced() -> Outcome {
        let texts = [Some("a"), None, Some("é€"), Some("a"), Some("")];
        let arrays: Vec<Arc<dyn Array>> = vec![
            Arc::new(texts.iter().copied().collect::<DictionaryArray<Int8Type>>()),
            Arc::new(
                texts
                    .iter()
                    .copied()
                    .collect::<DictionaryArray<UInt8Type>>(),
            ),
            Arc::new(
                texts
                    .iter()
                    .copied()
                    .collect::<DictionaryArray<Int16Type>>(),
            ),
            Arc::new(
                texts
                    .iter()
                    .copied()
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
            Arc::new(
                texts
                    .iter()
                    .copied()
                    .collect::<DictionaryArray<UInt64Type>>(),
            ),
        ];
        for array in arrays {
            let data = array.to_data();
            assert!(validate_fully(&data).is_ok(), "{:?}", array.data_type());
            assert!(validate_fully(&data.slice(1, 3)).is_ok());
            assert!(validate_fully(&data.slice(5, 0)).is_ok());
        }
        // Every key null over an empty dictionary: Arrow accepts it, so do we.
        let empty = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(vec![None, None]),
            Arc::new(StringArray::from(Vec::<&str>::new())),
        )?;
        assert!(validate_fully(&empty.to_data()).is_ok());
        Ok(())
    }

    #[test]
    fn keys_are_checked_against_the_values_and_null_slots_are_not() -> Outcome {
        let keys = Int32Array::from(vec![0, 2, 1, 2]);
        let data = DictionaryArray::try_new(keys, values())?.to_data();
        let decode = |raw: [u8; 4]| i64::from(i32::from_ne_bytes(raw));
        assert!(keys_within::<4>(&data, 3, decode));
        assert!(!keys_within::<4>(&data, 2, decode), "key 2 of 2 values");
        assert!(
            keys_within::<4>(&data.slice(0, 1), 1, decode),
            "the slice holds key 0 only"
        );
        assert!(!keys_within::<4>(&data.slice(1, 1), 1, decode));
        // A null slot may hold anything, even a negative key.
        let garbage = Int32Array::new(
            ScalarBuffer::from(vec![1, -7, 99, 0]),
            Some(NullBuffer::from(vec![true, false, false, true])),
        );
        let data = DictionaryArray::try_new(garbage, values())?.to_data();
        assert!(keys_within::<4>(&data, 3, decode));
        assert!(validate_fully(&data).is_ok());
        let negative = Int32Array::from(vec![0, -1]);
        let data = negative.to_data();
        assert!(!keys_within::<4>(&data, 3, decode), "a negative key");
        Ok(())
    }
}
