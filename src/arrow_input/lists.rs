//! A column of string lists (a record's `source_message_ids`): `list` or
//! `large_list` of any string layout the text reader takes, read only when a
//! tombstone carries hashes (`docs/spec.md` §4.1).

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_schema::DataType;

use super::text::TextChunk;
use super::{Checked, Table};
use crate::error::{ErrorKind, InputError};

const LIST_COLUMN: &str = "a list of strings column";

impl<'t> Table<'t> {
    /// An optional column of string lists, one `Vec` per row (a null row, or
    /// an absent column, reads as empty). A null or empty string inside a
    /// list is an error naming the row.
    pub(super) fn optional_text_lists(&self, column: &str) -> Checked<Vec<Vec<&'t str>>> {
        if !self.has(column) {
            return Ok(vec![Vec::new(); self.rows()]);
        }
        let kind = self.field_type(column)?;
        let item = match &kind {
            DataType::Null => return Ok(vec![Vec::new(); self.rows()]),
            DataType::List(item) | DataType::LargeList(item) => item.data_type().clone(),
            other => return Err(self.wrong_type(column, LIST_COLUMN, other)),
        };
        if !matches!(
            item,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
        ) {
            return Err(self.wrong_type(column, LIST_COLUMN, &kind));
        }
        let mut lists = Vec::with_capacity(self.rows());
        for array in self.chunks(column)? {
            let read = if let Some(list) = array.as_list_opt::<i32>() {
                self.read_lists(column, list, lists.len(), &mut lists)
            } else if let Some(list) = array.as_list_opt::<i64>() {
                self.read_lists(column, list, lists.len(), &mut lists)
            } else {
                Err(self.wrong_type(column, LIST_COLUMN, array.data_type()))
            };
            read?;
        }
        Ok(lists)
    }

    fn read_lists<O: OffsetSizeTrait>(
        &self,
        column: &str,
        list: &'t arrow_array::GenericListArray<O>,
        first_row: usize,
        lists: &mut Vec<Vec<&'t str>>,
    ) -> Checked<()> {
        let values: &'t ArrayRef = list.values();
        let items = TextChunk::of(values)
            .ok_or_else(|| self.wrong_type(column, LIST_COLUMN, list.data_type()))?;
        let offsets = list.value_offsets();
        for index in 0..list.len() {
            let row = first_row + index;
            if list.is_null(index) {
                lists.push(Vec::new());
                continue;
            }
            let bad = |problem: &str| -> InputError {
                self.fail(column, ErrorKind::Malformed, problem, Some(row))
            };
            let (Some(start), Some(end)) = (offsets.get(index), offsets.get(index + 1)) else {
                return Err(bad("has a list whose offsets are out of bounds"));
            };
            let mut cited = Vec::with_capacity(end.as_usize().saturating_sub(start.as_usize()));
            for position in start.as_usize()..end.as_usize() {
                match items.get(position) {
                    None => return Err(bad("holds a null item")),
                    Some("") => {
                        return Err(self.fail(
                            column,
                            ErrorKind::Empty,
                            "holds an empty string; items are non-empty strings",
                            Some(row),
                        ))
                    }
                    Some(text) => cited.push(text),
                }
            }
            lists.push(cited);
        }
        Ok(())
    }
}
