//! Reading a string column of an Arrow table in place: `string`,
//! `large_string`, `string_view` and dictionary-encoded strings, chunked and
//! sliced. Rows are visited chunk by chunk, never copied into a row-sized
//! buffer, and strings are borrowed from the Arrow buffers.

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowDictionaryKeyType;
use arrow_array::{downcast_dictionary_array, Array, ArrayRef};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType;

/// The strings of one chunk.
pub(super) enum Texts<'t> {
    Utf8(&'t arrow_array::StringArray),
    Large(&'t arrow_array::LargeStringArray),
    View(&'t arrow_array::StringViewArray),
}

impl<'t> Texts<'t> {
    pub(super) fn of(array: &'t dyn Array) -> Option<Self> {
        if let Some(strings) = array.as_string_opt::<i32>() {
            Some(Self::Utf8(strings))
        } else if let Some(strings) = array.as_string_opt::<i64>() {
            Some(Self::Large(strings))
        } else {
            array.as_string_view_opt().map(Self::View)
        }
    }

    fn get(&self, index: usize) -> Option<&'t str> {
        // The length first: `is_valid` past the end would panic.
        let in_range = match self {
            Self::Utf8(a) => index < a.len() && a.is_valid(index),
            Self::Large(a) => index < a.len() && a.is_valid(index),
            Self::View(a) => index < a.len() && a.is_valid(index),
        };
        if !in_range {
            return None;
        }
        Some(match self {
            Self::Utf8(a) => a.value(index),
            Self::Large(a) => a.value(index),
            Self::View(a) => a.value(index),
        })
    }
}

/// The strings of one chunk, plain or dictionary-encoded, or a chunk of the
/// Arrow `null` type (every row null: what producers export for a column
/// they only ever saw nulls in).
pub(super) enum TextChunk<'t> {
    Nulls(usize),
    Plain(Texts<'t>),
    Dictionary(DictionaryChunk<'t>),
}

impl<'t> TextChunk<'t> {
    pub(super) fn of(array: &'t ArrayRef) -> Option<Self> {
        if array.data_type() == &arrow_schema::DataType::Null {
            return Some(Self::Nulls(array.len()));
        }
        if array.as_any_dictionary_opt().is_some() {
            return DictionaryChunk::of(array.as_ref()).map(Self::Dictionary);
        }
        Texts::of(array.as_ref()).map(Self::Plain)
    }

    pub(super) fn get(&self, index: usize) -> Option<&'t str> {
        match self {
            Self::Nulls(_) => None,
            Self::Plain(texts) => texts.get(index),
            Self::Dictionary(chunk) => chunk.get(index),
        }
    }
}

/// A string column over all chunks, read in place: rows are visited chunk by
/// chunk, never copied into a row-sized buffer.
pub struct TextColumn<'t> {
    pub(super) chunks: Vec<TextChunk<'t>>,
}

impl TextChunk<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Nulls(len) => *len,
            Self::Plain(Texts::Utf8(a)) => a.len(),
            Self::Plain(Texts::Large(a)) => a.len(),
            Self::Plain(Texts::View(a)) => a.len(),
            Self::Dictionary(chunk) => chunk.len(),
        }
    }
}

impl<'t> TextColumn<'t> {
    /// Calls `visit(row, text)` on every row in order, stopping at the first
    /// error. The hot loop of reading: each chunk is walked with its own
    /// array type, without nulls to test when it has none.
    pub fn try_for_each<E>(
        &self,
        visit: impl FnMut(usize, Option<&'t str>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.try_for_each_mapped(|_, text| Ok(text), visit)
    }

    /// Calls `visit(row, map(text))` on every row in order (`None` for a
    /// null row), stopping at the first error. `map` runs once per row of a
    /// plain chunk, but once per distinct value of a dictionary chunk, on
    /// the first row that uses it, and its result serves every later row
    /// with that value (in later chunks too, while they share the
    /// dictionary): what is checked or interned per value costs per value.
    /// A `map` error is reported at that first row, which is where reading
    /// row by row would report it.
    pub fn try_for_each_mapped<T: Copy, E>(
        &self,
        mut map: impl FnMut(usize, &'t str) -> Result<T, E>,
        mut visit: impl FnMut(usize, Option<T>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut memo = Memo::default();
        let mut base = 0;
        let rows: usize = self.chunks.iter().map(TextChunk::len).sum();
        for chunk in &self.chunks {
            let mut each = |row: usize, text: Option<&'t str>| {
                let mapped = match text {
                    Some(text) => Some(map(row, text)?),
                    None => None,
                };
                visit(row, mapped)
            };
            match chunk {
                TextChunk::Plain(Texts::Utf8(a)) => visit_strings(a, base, &mut each)?,
                TextChunk::Plain(Texts::Large(a)) => visit_strings(a, base, &mut each)?,
                TextChunk::Plain(Texts::View(a)) => {
                    if a.null_count() == 0 {
                        for index in 0..a.len() {
                            each(base + index, Some(a.value(index)))?;
                        }
                    } else {
                        for (index, text) in a.iter().enumerate() {
                            each(base + index, text)?;
                        }
                    }
                }
                TextChunk::Nulls(len) => {
                    for index in 0..*len {
                        visit(base + index, None)?;
                    }
                }
                TextChunk::Dictionary(dictionary) => {
                    // A dictionary far larger than the rows left is not worth a
                    // table per value: its rows are mapped one by one.
                    if memo.fits(dictionary, rows - base) {
                        let memo = memo.for_dictionary(dictionary);
                        dictionary.try_for_each_key(|index, key| {
                            let row = base + index;
                            let Some(key) = key else {
                                return visit(row, None);
                            };
                            let mapped = match memo.get(key).copied().flatten() {
                                Some(mapped) => Some(mapped),
                                None => match dictionary.values.get(key) {
                                    Some(text) => {
                                        let mapped = map(row, text)?;
                                        if let Some(slot) = memo.get_mut(key) {
                                            *slot = Some(mapped);
                                        }
                                        Some(mapped)
                                    }
                                    None => None, // a null value in the dictionary
                                },
                            };
                            visit(row, mapped)
                        })?;
                    } else {
                        dictionary.try_for_each_key(|index, key| {
                            each(base + index, key.and_then(|key| dictionary.values.get(key)))
                        })?;
                    }
                }
            }
            base += chunk.len();
        }
        Ok(())
    }
}

/// The rows of a dictionary-encoded string chunk: typed keys into its values.
pub(super) struct DictionaryChunk<'t> {
    array: &'t dyn Array,
    values: Texts<'t>,
}

impl<'t> DictionaryChunk<'t> {
    /// The chunk, if it is a dictionary of strings with integer keys (any other
    /// key type is no string column, and its rows could not be visited).
    fn of(array: &'t dyn Array) -> Option<Self> {
        let dictionary = array.as_any_dictionary_opt()?;
        let DataType::Dictionary(key, _) = array.data_type() else {
            return None;
        };
        if !key.is_dictionary_key_type() {
            return None;
        }
        Some(Self {
            array,
            values: Texts::of(dictionary.values().as_ref())?,
        })
    }

    fn len(&self) -> usize {
        self.array.len()
    }

    /// How many values the dictionary holds.
    fn values_len(&self) -> usize {
        match self.values {
            Texts::Utf8(a) => a.len(),
            Texts::Large(a) => a.len(),
            Texts::View(a) => a.len(),
        }
    }

    /// The string at `index` (`None` for a null row or a null value).
    fn get(&self, index: usize) -> Option<&'t str> {
        key_at(self.array, index).and_then(|key| self.values.get(key))
    }

    /// Calls `visit(row, key)` on every row's key in order (`None` for a null row).
    fn try_for_each_key<E>(
        &self,
        mut visit: impl FnMut(usize, Option<usize>) -> Result<(), E>,
    ) -> Result<(), E> {
        for_each_key(self.array, &mut visit)
    }

    /// What tells this dictionary's values apart from another chunk's: the
    /// same buffers, offset and length hold the same strings (every chunk of
    /// a table is alive while it is read, so no address is reused).
    fn identity(&self) -> Identity {
        let data = match self.values {
            Texts::Utf8(a) => a.to_data(),
            Texts::Large(a) => a.to_data(),
            Texts::View(a) => a.to_data(),
        };
        Identity {
            buffers: data
                .buffers()
                .iter()
                .map(arrow_buffer::Buffer::as_ptr)
                .collect(),
            nulls: data.nulls().map(|n| (n.buffer().as_ptr(), n.offset())),
            offset: data.offset(),
            len: data.len(),
        }
    }
}

/// See [`DictionaryChunk::identity`].
#[derive(PartialEq, Eq)]
struct Identity {
    buffers: Vec<*const u8>,
    nulls: Option<(*const u8, usize)>,
    offset: usize,
    len: usize,
}

/// Each value of the dictionary last read, mapped once it was first used.
struct Memo<T> {
    identity: Option<Identity>,
    mapped: Vec<Option<T>>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Self {
            identity: None,
            mapped: Vec::new(),
        }
    }
}

impl<T: Copy> Memo<T> {
    /// Whether a table of the values of `dictionary` is worth keeping for
    /// `rows` rows: it is the one already kept, or not much larger than them.
    fn fits(&self, dictionary: &DictionaryChunk<'_>, rows: usize) -> bool {
        dictionary.values_len() <= rows.saturating_mul(2).saturating_add(1024)
            || self.identity.as_ref() == Some(&dictionary.identity())
    }

    /// The table of `dictionary`'s values: the one kept if it is the same
    /// dictionary, else a fresh one.
    fn for_dictionary(&mut self, dictionary: &DictionaryChunk<'_>) -> &mut Vec<Option<T>> {
        let identity = dictionary.identity();
        if self.identity.as_ref() != Some(&identity) {
            self.mapped.clear();
            self.mapped.resize(dictionary.values_len(), None);
            self.identity = Some(identity);
        }
        &mut self.mapped
    }
}

/// Calls `visit(row, key)` on every key of a dictionary array, by its key type.
fn for_each_key<E>(
    array: &dyn Array,
    visit: &mut impl FnMut(usize, Option<usize>) -> Result<(), E>,
) -> Result<(), E> {
    downcast_dictionary_array!(
        array => keys_of(array.keys(), visit),
        _ => Ok(()), // not a dictionary: `DictionaryChunk::of` refused it
    )
}

/// The key of one row of a dictionary array (`None` for a null row or past the end).
fn key_at(array: &dyn Array, index: usize) -> Option<usize> {
    downcast_dictionary_array!(
        array => {
            let keys = array.keys();
            (index < keys.len() && keys.is_valid(index)).then(|| keys.value(index).as_usize())
        },
        _ => None,
    )
}

fn keys_of<K: ArrowDictionaryKeyType, E>(
    keys: &arrow_array::PrimitiveArray<K>,
    visit: &mut impl FnMut(usize, Option<usize>) -> Result<(), E>,
) -> Result<(), E> {
    // A negative key cannot be valid (the chunk was validated): as a `usize`
    // it is out of range, and reads as no value.
    match keys.nulls().filter(|nulls| nulls.null_count() > 0) {
        None => {
            for (row, key) in keys.values().iter().enumerate() {
                visit(row, Some(key.as_usize()))?;
            }
        }
        Some(nulls) => {
            for (row, key) in keys.values().iter().enumerate() {
                visit(row, nulls.is_valid(row).then(|| key.as_usize()))?;
            }
        }
    }
    Ok(())
}

fn visit_strings<'t, O: arrow_array::OffsetSizeTrait, E>(
    array: &'t arrow_array::GenericStringArray<O>,
    base: usize,
    visit: &mut impl FnMut(usize, Option<&'t str>) -> Result<(), E>,
) -> Result<(), E> {
    if array.null_count() == 0 {
        for index in 0..array.len() {
            visit(base + index, Some(array.value(index)))?;
        }
    } else {
        for (index, text) in array.iter().enumerate() {
            visit(base + index, text)?;
        }
    }
    Ok(())
}

/// A string column read by row number, for the few rows a caller needs
/// (the values of a batch's winners): each row found by a binary search on
/// the chunks' first rows.
pub struct TextLookup<'t> {
    column: TextColumn<'t>,
    /// The first row of each chunk, ascending.
    starts: Vec<usize>,
}

impl<'t> TextLookup<'t> {
    pub(super) fn new(column: TextColumn<'t>) -> Self {
        let mut starts = Vec::with_capacity(column.chunks.len());
        let mut row = 0;
        for chunk in &column.chunks {
            starts.push(row);
            row += chunk.len();
        }
        Self { column, starts }
    }

    /// The string at `row` (`None` for null or past the end).
    #[must_use]
    pub fn get(&self, row: usize) -> Option<&'t str> {
        let chunk = self
            .starts
            .partition_point(|&start| start <= row)
            .checked_sub(1)?;
        let start = *self.starts.get(chunk)?;
        self.column.chunks.get(chunk)?.get(row - start)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::{Int32Type, UInt8Type};
    use arrow_array::{Array, ArrayRef, DictionaryArray, Int32Array, StringArray};

    use super::{TextChunk, TextColumn};

    type Outcome = Result<(), Box<dyn std::error::Error>>;

    fn column(arrays: &[ArrayRef]) -> TextColumn<'_> {
        TextColumn {
            chunks: arrays.iter().filter_map(TextChunk::of).collect(),
        }
    }

    /// Each row's mapped value, and how many times `map` ran.
    fn mapped(column: &TextColumn<'_>) -> (Vec<Option<String>>, usize) {
        let mut calls = 0;
        let mut rows = Vec::new();
        let _: Result<(), ()> = column.try_for_each_mapped(
            |_, text| {
                calls += 1;
                Ok(text)
            },
            |row, text| {
                assert_eq!(row, rows.len());
                rows.push(text.map(str::to_owned));
                Ok(())
            },
        );
        (rows, calls)
    }

    #[test]
    fn dictionary_values_are_mapped_once_and_read_as_their_rows() -> Outcome {
        let values: ArrayRef = Arc::new(StringArray::from(vec![
            Some("x"),
            None,
            Some("y"),
            Some("unused"),
        ]));
        let keys = Int32Array::from(vec![Some(0), Some(2), None, Some(1), Some(0), Some(2)]);
        let first: ArrayRef = Arc::new(DictionaryArray::try_new(keys, Arc::clone(&values))?);
        // The same dictionary again, in a later chunk (a slice shares its buffers).
        let second: ArrayRef = first.slice(3, 3);
        let plain: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None]));
        let other: ArrayRef = Arc::new(
            vec![Some("y"), Some("y")]
                .into_iter()
                .collect::<DictionaryArray<UInt8Type>>(),
        );
        let arrays = [first, second, plain, other];
        let (rows, calls) = mapped(&column(&arrays));
        let expected: Vec<Option<String>> = [
            Some("x"),
            Some("y"),
            None,
            None,
            Some("x"),
            Some("y"), // first
            None,
            Some("x"),
            Some("y"), // second: null value, then memoised
            Some("x"),
            None, // plain: mapped per row
            Some("y"),
            Some("y"), // another dictionary: its own table
        ]
        .iter()
        .map(|t| t.map(str::to_owned))
        .collect();
        assert_eq!(rows, expected);
        // x and y once for the shared dictionary, x for the plain row, y once more.
        assert_eq!(calls, 4);
        assert_eq!(
            column(&arrays).chunks.len(),
            4,
            "every chunk read as strings"
        );
        Ok(())
    }

    #[test]
    fn a_lookup_reads_any_row_of_a_dictionary_chunk() -> Outcome {
        let values: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None, Some("y")]));
        let keys = Int32Array::from(vec![Some(2), None, Some(1), Some(0)]);
        let whole: ArrayRef = Arc::new(DictionaryArray::try_new(keys, values)?);
        let arrays = [Arc::clone(&whole), whole.slice(2, 2)];
        let lookup = super::TextLookup::new(column(&arrays));
        let rows: Vec<Option<&str>> = (0..7).map(|row| lookup.get(row)).collect();
        // y, a null key, a null value, x; then the slice: a null value, x; past the end.
        assert_eq!(
            rows,
            [Some("y"), None, None, Some("x"), None, Some("x"), None]
        );
        Ok(())
    }

    #[test]
    fn a_dictionary_much_larger_than_its_rows_is_read_row_by_row() -> Outcome {
        let big: Vec<String> = (0..5_000).map(|n| format!("v{n}")).collect();
        let values: ArrayRef = Arc::new(StringArray::from_iter_values(&big));
        let keys = Int32Array::from(vec![4_999, 4_999, 7]);
        let array: ArrayRef = Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values)?);
        let arrays = [array];
        let (rows, calls) = mapped(&column(&arrays));
        assert_eq!(
            rows,
            [
                Some("v4999".to_owned()),
                Some("v4999".to_owned()),
                Some("v7".to_owned())
            ]
        );
        assert_eq!(calls, 3, "no table of 5,000 values for 3 rows");
        Ok(())
    }

    #[test]
    fn a_map_error_is_reported_at_the_first_row_with_that_value() {
        let array: ArrayRef = Arc::new(
            vec![Some("ok"), None, Some("bad"), Some("bad")]
                .into_iter()
                .collect::<DictionaryArray<Int32Type>>(),
        );
        let arrays = [array];
        let mut visited = Vec::new();
        let result = column(&arrays).try_for_each_mapped(
            |row, text| if text == "bad" { Err(row) } else { Ok(text) },
            |row, _| {
                visited.push(row);
                Ok(())
            },
        );
        assert_eq!(result, Err(2));
        assert_eq!(visited, [0, 1]);
    }
}
