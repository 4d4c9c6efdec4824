//! The contexts table: each row's `context_id` and retrieval context.

use super::{Checked, Table};
use crate::error::ErrorKind;
use crate::resolve::hash::{map_with_capacity, Map};
use crate::resolve::Context;

/// Each row's `context_id` and context, in row order.
///
/// # Errors
/// The first broken rule, column by column, then the first `context_id`
/// that repeats an earlier row's (its rows would be indistinguishable).
pub fn read_contexts<'t>(table: &Table<'t>) -> Checked<(Vec<&'t str>, Vec<Context<'t>>)> {
    let context_ids = table.required_texts("context_id", false)?;
    let now = table.required_instants("now")?;
    let users = table.required_texts("user_id", true)?;
    let characters = table.nullable_texts("character_id", true)?;
    let conversations = table.nullable_texts("conversation_id", true)?;
    let scenes = table.optional_texts("scene_id", true)?;
    // A scene belongs to one conversation (`docs/spec.md` §1.4).
    if let Some(row) = scenes
        .iter()
        .zip(&conversations)
        .position(|(scene, conversation)| scene.is_some() && conversation.is_none())
    {
        return Err(table.fail(
            "scene_id",
            ErrorKind::Inconsistent,
            "names a scene but conversation_id is null (a scene belongs to one conversation)",
            Some(row),
        ));
    }
    let contexts = now
        .into_iter()
        .zip(users)
        .zip(characters)
        .zip(conversations)
        .zip(scenes)
        .map(
            |((((now, user_id), character_id), conversation_id), scene_id)| Context {
                now,
                user_id,
                character_id,
                conversation_id,
                scene_id,
            },
        )
        .collect();
    let mut first_row_of: Map<&str, usize> = map_with_capacity(context_ids.len());
    for (row, id) in context_ids.iter().enumerate() {
        let earlier = *first_row_of.entry(id).or_insert(row);
        if earlier != row {
            return Err(table.fail(
                "context_id",
                ErrorKind::DuplicateId,
                format_args!(
                    "repeats the context_id of row {}",
                    earlier + table.row_offset
                ),
                Some(row),
            ));
        }
    }
    Ok((context_ids, contexts))
}
