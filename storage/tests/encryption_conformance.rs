//! The conformance suite through encryption at rest: the embedded store wrapped by
//! [`EncryptedStorage`] with each key-based provider encrypting `configmaps`, the prefix every
//! case writes under, so every value of every case is encrypted and decrypted on its way.

use storage::ResourceKeys;
use storage::conformance::Fixture;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::encryption::{EncryptedStorage, EncryptionConfig};

/// A fresh embedded store in its own temp dir, encrypting configmaps with `provider`.
fn fixture(provider: &str) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let inner = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).expect("open");
    let config = EncryptionConfig::parse(&format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources: [configmaps]\n  providers: [{provider}, {{identity: {{}}}}]\n"
    ))
    .expect("config");
    let configmaps =
        ResourceKeys { group: String::new(), resource: "configmaps".into(), prefix: "/registry/configmaps/".into() };
    Fixture::with_guard(EncryptedStorage::new(inner, config, &[configmaps]), dir)
}

/// `{<algorithm>: {keys: [...]}}` with a writing key and an older one.
fn keyed(algorithm: &str) -> String {
    format!(
        "{{{algorithm}: {{keys: [{{name: new, secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=}}, \
         {{name: old, secret: ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=}}]}}}}"
    )
}

mod aescbc {
    async fn fresh_store() -> storage::conformance::Fixture {
        super::fixture(&super::keyed("aescbc"))
    }
    storage::conformance_tests!(fresh_store);
}

mod aesgcm {
    async fn fresh_store() -> storage::conformance::Fixture {
        super::fixture(&super::keyed("aesgcm"))
    }
    storage::conformance_tests!(fresh_store);
}

mod secretbox {
    async fn fresh_store() -> storage::conformance::Fixture {
        super::fixture(&super::keyed("secretbox"))
    }
    storage::conformance_tests!(fresh_store);
}
