//! Reading a string column of an Arrow table in place: `string`,
//! `large_string`, `string_view` and dictionary-encoded strings, chunked and
//! sliced. Rows are visited chunk by chunk, never copied into a row-sized
//! buffer, and strings are borrowed from the Arrow buffers.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};

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
        let (len, valid) = match self {
            Self::Utf8(a) => (a.len(), a.is_valid(index)),
            Self::Large(a) => (a.len(), a.is_valid(index)),
            Self::View(a) => (a.len(), a.is_valid(index)),
        };
        if index >= len || !valid {
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
    Dictionary {
        array: &'t dyn Array,
        keys: Vec<usize>,
        values: Texts<'t>,
    },
}

impl<'t> TextChunk<'t> {
    pub(super) fn of(array: &'t ArrayRef) -> Option<Self> {
        if array.data_type() == &arrow_schema::DataType::Null {
            return Some(Self::Nulls(array.len()));
        }
        if let Some(dictionary) = array.as_any_dictionary_opt() {
            let values = Texts::of(dictionary.values().as_ref())?;
            // `normalized_keys` asserts on an empty dictionary (every row null).
            let keys = if dictionary.values().is_empty() {
                Vec::new()
            } else {
                dictionary.normalized_keys()
            };
            return Some(Self::Dictionary {
                array: array.as_ref(),
                keys,
                values,
            });
        }
        Texts::of(array.as_ref()).map(Self::Plain)
    }

    fn get(&self, index: usize) -> Option<&'t str> {
        match self {
            Self::Nulls(_) => None,
            Self::Plain(texts) => texts.get(index),
            Self::Dictionary {
                array,
                keys,
                values,
            } => {
                if array.is_null(index) {
                    return None;
                }
                keys.get(index).and_then(|&key| values.get(key))
            }
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
            Self::Dictionary { array, .. } => array.len(),
        }
    }
}

impl<'t> TextColumn<'t> {
    /// Calls `visit(row, text)` on every row in order, stopping at the first
    /// error. The hot loop of reading: each chunk is walked with its own
    /// array type, without nulls to test when it has none.
    pub fn try_for_each<E>(
        &self,
        mut visit: impl FnMut(usize, Option<&'t str>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut base = 0;
        for chunk in &self.chunks {
            match chunk {
                TextChunk::Plain(Texts::Utf8(a)) => visit_strings(a, base, &mut visit)?,
                TextChunk::Plain(Texts::Large(a)) => visit_strings(a, base, &mut visit)?,
                TextChunk::Plain(Texts::View(a)) => {
                    if a.null_count() == 0 {
                        for index in 0..a.len() {
                            visit(base + index, Some(a.value(index)))?;
                        }
                    } else {
                        for (index, text) in a.iter().enumerate() {
                            visit(base + index, text)?;
                        }
                    }
                }
                TextChunk::Nulls(len) => {
                    for index in 0..*len {
                        visit(base + index, None)?;
                    }
                }
                TextChunk::Dictionary { .. } => {
                    for index in 0..chunk.len() {
                        visit(base + index, chunk.get(index))?;
                    }
                }
            }
            base += chunk.len();
        }
        Ok(())
    }
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
