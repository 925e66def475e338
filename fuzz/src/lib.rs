//! What the fuzz targets share: the fixed objects patches are applied to, and a small runtime
//! for the decoders behind async interfaces.
//!
//! Each target in `fuzz_targets/` is named for what it decodes and asserts what holds of every
//! input (never a panic; round trips where a printer exists; results within the server's
//! bounds), so a finding is a behaviour, not only a crash.
//!
//! # Layout
//! - this module: the fixed objects patches are applied to, the small runtime ([`block_on`]),
//!   and the checks every target makes of what it decoded (storable, or refused).
//! - [`targets`]: the targets' bodies, one module per decoder, and the tests that replay each
//!   committed corpus.

pub mod targets;

use serde_json::{Value, json};

/// The deepest object the server stores: what its JSON decoder reads back.
pub const MAX_NESTING: usize = apimachinery::object::MAX_NESTING;

/// The object every patch target patches: a Deployment with a container list (merge keys), a
/// map, and a `managedFields` entry, so strategic directives and apply have something to act on.
pub fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "5a1c2c4e-0000-4000-8000-000000000001",
            "resourceVersion": "7",
            "labels": {"app": "web", "tier": "front"},
            "finalizers": ["a/b"],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "nginx", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                         "env": [{"name": "A", "value": "1"}]},
                        {"name": "side", "image": "busybox", "args": ["sleep", "1"]},
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                },
            },
        },
    })
}

/// Parses `data` as JSON if it is, for targets that want a value rather than bytes.
pub fn json_value(data: &[u8]) -> Option<Value> {
    serde_json::from_slice(data).ok()
}

/// A current-thread runtime for a decoder behind an async interface.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    thread_local! {
        static RT: tokio::runtime::Runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    }
    RT.with(|rt| rt.block_on(f))
}

/// Asserts that what a write made is either storable (below) or refused by the validation
/// every write passes (what the server adds, such as managedFields, can nest past a body's
/// bound).
pub fn assert_storable_or_refused(v: &Value) {
    if apimachinery::object::nesting(v) <= MAX_NESTING {
        return assert_storable(v);
    }
    let def = apimachinery::catalogue::ResourceDef::new(
        "example.com",
        "v1",
        "widgets",
        "Widget",
        apimachinery::catalogue::DefaultStrategy,
    );
    let causes = def.validate(v);
    assert!(
        causes.iter().any(|c| c.message.contains("levels deep, past the")),
        "a too-deep result passes validation: {causes:?}"
    );
}

/// Asserts that `v` survives the server's own encode/decode (what `EncodedObject::value` does
/// with every stored object) and nests no deeper than a body may.
pub fn assert_storable(v: &Value) {
    let depth = apimachinery::object::nesting(v);
    assert!(depth <= MAX_NESTING, "a result nests {depth} deep, past {MAX_NESTING}");
    let bytes = serde_json::to_vec(v).expect("a value encodes");
    let back: Value = serde_json::from_slice(&bytes).expect("an encoded value decodes again");
    assert_eq!(&back, v);
}
