//! Strings that must live as long as the process: the catalogue's printers and field labels
//! take `&'static str`, since built-in kinds name theirs in constants. A custom resource's
//! names are interned, so a CRD created and deleted again and again costs its strings once.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};

static STRINGS: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);

/// The one `'static` copy of `s`.
pub fn intern(s: &str) -> &'static str {
    let mut strings = STRINGS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(held) = strings.get(s) {
        return held;
    }
    let held: &'static str = Box::leak(s.to_string().into_boxed_str());
    strings.insert(held);
    held
}
