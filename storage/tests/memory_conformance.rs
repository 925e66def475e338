//! The conformance suite on the embedded store kept in memory only, the backend the registry's
//! unit tests run on: the same semantics as on disk.

use storage::conformance::Fixture;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};

async fn fresh_store() -> Fixture {
    Fixture::new(EmbeddedStore::in_memory(EmbeddedOptions::default()).expect("start"))
}

storage::conformance_tests!(fresh_store);
