//! The cacher's read-path conformance suite on the embedded store, each case over a fresh store
//! in its own temp dir.

use cacher::conformance::Fixture;
use storage::Storage;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};

/// A fresh store in its own temp dir, which the fixture keeps alive.
async fn fresh_store() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).expect("open");
    Fixture::with_guard(store, dir)
}

cacher::cacher_read_path_tests!(fresh_store);

/// The suite's cache-only assertion for consistent reads applies to backends with prompt
/// progress notifications: the embedded store must be one, or that case proves less here.
#[test]
fn embedded_progress_is_prompt() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).expect("open");
    assert!(store.prompt_progress());
}
