//! What the Rust tests share: a deterministic generator and the contexts of
//! small generated stores. Compiled only for tests.

use crate::resolve::Context;

/// A deterministic generator (xorshift), so the tests need no dependency.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % 1024).unwrap_or(0) % n
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Every context of users `users`, characters `characters` and scenes `scenes`
/// (`None`: no current scene) in conversation `k`, at each instant of `nows`.
pub(crate) fn contexts(
    nows: &[i64],
    users: &[&'static str],
    characters: &[&'static str],
    scenes: &[Option<&'static str>],
) -> Vec<Context<'static>> {
    let mut out = Vec::new();
    for &now in nows {
        for &user_id in users {
            for &character_id in characters {
                for &scene_id in scenes {
                    out.push(Context {
                        now,
                        user_id,
                        character_id,
                        conversation_id: "k",
                        scene_id,
                    });
                }
            }
        }
    }
    out
}
