//! The conformance suite on the embedded store, each case in a fresh temp dir. Embedded-only
//! behaviour (reopen, torn tails, compaction on disk, crashes) is in `embedded.rs`.

use storage::conformance::Fixture;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};

/// A fresh store in its own temp dir, which the fixture keeps alive.
async fn fresh_store() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).expect("open");
    Fixture::with_guard(store, dir)
}

storage::conformance_tests!(fresh_store);
