//! Strings that must live as long as the process: the catalogue's printers and field labels
//! take `&'static str`, since built-in kinds name theirs in constants. A custom resource's
//! names are interned, so a CRD created and deleted again and again costs its strings once.

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex};

use apimachinery::selector::fields::FieldLabels;

static STRINGS: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);
static LABELS: LazyLock<Mutex<HashMap<Vec<&'static str>, &'static FieldLabels>>> = LazyLock::new(Mutex::default);

/// The one `'static` field label table accepting `labels` (each its own canonical name).
pub fn field_labels(labels: &[&str]) -> &'static FieldLabels {
    let key: Vec<&'static str> = labels.iter().map(|l| intern(l)).collect();
    let mut tables = LABELS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(held) = tables.get(&key) {
        return held;
    }
    let pairs: &'static [(&'static str, &'static str)] = Box::leak(key.iter().map(|l| (*l, *l)).collect());
    let held: &'static FieldLabels = Box::leak(Box::new(FieldLabels::custom(pairs)));
    tables.insert(key, held);
    held
}

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
