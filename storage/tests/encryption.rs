//! Encryption at rest through the decorator, over the embedded store in a temp dir: what each
//! provider stores, how configuration changes read old data (stale, rotation, decryption
//! failures), which keys are encrypted, and loading the configuration file. The storage
//! contract itself is proven by `encryption_conformance.rs`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::encryption::{EncryptedStorage, EncryptionConfig};
use storage::{EventType, Expect, KeyValue, ListOptions, ResourceKeys, Storage, StorageError, WatchItem, WatchStream};

/// 32-byte secrets (the first is bytes 0..32, the one the known answers use).
const K1: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const K2: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
/// 16 bytes.
const K16: &str = "c2VjcmV0IGlzIHNlY3VyZQ==";

const SECRET: &str = "/registry/secrets/default/db";
const PLAIN: &str = "password: hunter2";

/// An embedded store in a fresh temp dir, kept alive by the returned guard.
fn embedded() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).expect("open");
    (dir, store)
}

/// A configuration from its `resources` list.
fn config(resources: &str) -> EncryptionConfig {
    EncryptionConfig::parse(&format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n{resources}"
    ))
    .unwrap_or_else(|e| panic!("config: {e}"))
}

/// `resources` encrypted by `providers` (a YAML flow list).
fn only(resources: &str, providers: &str) -> EncryptionConfig {
    config(&format!("- resources: [{resources}]\n  providers: [{providers}]\n"))
}

/// A key-based provider with keys `(name, secret)`, writing with the first.
fn provider(algorithm: &str, keys: &[(&str, &str)]) -> String {
    let keys: Vec<String> = keys.iter().map(|(n, s)| format!("{{name: {n}, secret: '{s}'}}")).collect();
    format!("{{{algorithm}: {{keys: [{}]}}}}", keys.join(", "))
}

const IDENTITY: &str = "{identity: {}}";

/// The stored resources the tests name, under kube's key layout (the kinds' own storage paths
/// are the gateway's to map, and tested there).
const SERVED: &[(&str, &str, &str)] = &[
    ("", "secrets", "/registry/secrets/"),
    ("", "configmaps", "/registry/configmaps/"),
    ("", "events", "/registry/events/"),
    ("", "services", "/registry/services/specs/"),
    ("", "endpoints", "/registry/services/endpoints/"),
    ("", "nodes", "/registry/minions/"),
    ("", "pods", "/registry/pods/"),
    ("apps", "deployments", "/registry/deployments/"),
    ("apps", "statefulsets", "/registry/statefulsets/"),
    ("batch", "jobs", "/registry/jobs/"),
    ("batch", "cronjobs", "/registry/cronjobs/"),
];

fn served() -> Vec<ResourceKeys> {
    SERVED
        .iter()
        .map(|(g, r, p)| ResourceKeys { group: g.to_string(), resource: r.to_string(), prefix: p.to_string() })
        .collect()
}

fn encrypted(inner: &Arc<dyn Storage>, config: EncryptionConfig) -> Arc<dyn Storage> {
    EncryptedStorage::new(Arc::clone(inner), config, &served())
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The bytes the inner store holds at `key`.
async fn raw(inner: &Arc<dyn Storage>, key: &str) -> Bytes {
    inner.get(key).await.unwrap().0.unwrap_or_else(|| panic!("{key} exists")).value
}

async fn get(store: &Arc<dyn Storage>, key: &str) -> KeyValue {
    store.get(key).await.unwrap().0.unwrap_or_else(|| panic!("{key} exists"))
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

async fn next_item(w: &mut WatchStream) -> Option<WatchItem> {
    tokio::time::timeout(Duration::from_secs(10), w.items.recv()).await.expect("a watch item in time")
}

async fn next_event(w: &mut WatchStream) -> storage::Event {
    match next_item(w).await {
        Some(WatchItem::Event(e)) => e,
        other => panic!("expected an event, got {other:?}"),
    }
}

#[tokio::test]
async fn every_provider_round_trips_and_stores_only_ciphertext() {
    for (algorithm, secret, prefix) in [
        ("aescbc", K16, "k8s:enc:aescbc:v1:key1:"),
        ("aesgcm", K1, "k8s:enc:aesgcm:v1:key1:"),
        ("secretbox", K1, "k8s:enc:secretbox:v1:key1:"),
    ] {
        let (_dir, inner) = embedded();
        let store = encrypted(&inner, only("secrets", &provider(algorithm, &[("key1", secret)])));
        assert!(store.describe().ends_with(" with encryption at rest"), "{}", store.describe());
        let mut w = store.watch("/registry/secrets/", 0).await.unwrap();

        let v1 = store.put(SECRET, b(PLAIN), Expect::Absent).await.unwrap();
        assert_eq!((v1.value.clone(), v1.stale), (b(PLAIN), false));
        let stored = raw(&inner, SECRET).await;
        assert!(stored.starts_with(prefix.as_bytes()), "{algorithm}: {stored:?}");
        assert!(!contains(&stored, "hunter2"), "{algorithm}: no plaintext on disk");
        assert_eq!(get(&store, SECRET).await, v1);

        let v2 = store.put(SECRET, b("password: hunter3"), Expect::ModRevision(v1.mod_revision)).await.unwrap();
        let other = store.put("/registry/secrets/kube-system/token", b("token: abc"), Expect::Absent).await.unwrap();
        let listed = store.list("/registry/secrets/", ListOptions::default()).await.unwrap();
        assert_eq!(listed.items, [v2.clone(), other.clone()], "{algorithm}: list decrypts");
        let at_v1 =
            store.list("/registry/secrets/", ListOptions { revision: Some(v1.mod_revision), ..Default::default() });
        assert_eq!(at_v1.await.unwrap().items, std::slice::from_ref(&v1), "{algorithm}: history decrypts");

        match store.put(SECRET, b("x"), Expect::ModRevision(v1.mod_revision)).await {
            Err(StorageError::Conflict { current: Some(current), .. }) => assert_eq!(*current, v2),
            other => panic!("{algorithm}: expected a conflict with the current value, got {other:?}"),
        }
        let (deleted, at) = store.delete(SECRET, Some(v2.mod_revision)).await.unwrap();
        assert_eq!(deleted, v2, "{algorithm}: delete returns the plaintext");

        let e = next_event(&mut w).await;
        assert_eq!((e.kind, &e.kv, &e.prev), (EventType::Added, &v1, &None));
        let e = next_event(&mut w).await;
        assert_eq!((e.kind, &e.kv, e.prev.as_ref()), (EventType::Modified, &v2, Some(&v1)), "{algorithm}: prev");
        assert_eq!(next_event(&mut w).await.kv, other);
        let e = next_event(&mut w).await;
        assert_eq!(e.kind, EventType::Deleted);
        assert_eq!(e.kv, KeyValue { mod_revision: at, ..v2.clone() });
        assert_eq!(e.prev, Some(v2.clone()));

        let mut replay = store.watch("/registry/secrets/", v1.mod_revision - 1).await.unwrap();
        assert_eq!(next_event(&mut replay).await.kv, v1, "{algorithm}: replay decrypts");
    }
}

#[tokio::test]
async fn large_lists_decrypt_in_full() {
    // Over a MiB of ciphertext: decrypted on a blocking thread, with the same result.
    let (_dir, inner) = embedded();
    let store = encrypted(&inner, only("secrets", &provider("aesgcm", &[("key1", K1)])));
    let mut written = Vec::new();
    for i in 0..4u8 {
        let value = Bytes::from(vec![b'a' + i; 400 * 1024]);
        written.push(store.put(&format!("/registry/secrets/default/big{i}"), value, Expect::Absent).await.unwrap());
    }
    assert_eq!(store.list("/registry/secrets/", ListOptions::default()).await.unwrap().items, written);
    let wrong = encrypted(&inner, only("secrets", &provider("aesgcm", &[("key1", K2)])));
    let err = wrong.list("/registry/secrets/", ListOptions::default()).await.unwrap_err();
    assert!(matches!(err, StorageError::Corrupt { key, .. } if key == "/registry/secrets/default/big0"));
}

#[tokio::test]
async fn values_kube_wrote_read_back() {
    // The known answers of the unit tests, at the key kube authenticated them with: values
    // laid out by hand as kube-apiserver stores them, read through the decorator.
    let key = "/registry/secrets/default/kat";
    let plain = b("the plaintext of a secret at rest");
    for (algorithm, secret, hex) in [
        (
            "aescbc",
            K1,
            "6b38733a656e633a6165736362633a76313a6b6579313aa0a1a2a3a4a5a6a7a8a9aaabacadaeaf45c33478fccf25829da806f3af5f3f91ebf27d83cb49ca74f8ad3702d56d66e6740eb0efc8be1ff08829ffd4981d5f32",
        ),
        (
            "aesgcm",
            K1,
            "6b38733a656e633a61657367636d3a76313a6b6579313ab0b1b2b3b4b5b6b7b8b9babbed3d3f8b9ca1da36298cf2dab97de7a4a45d69a1704dfd502aeee3857cf09765711d2fa6ce482b90d00aa61e28b5bf2df4",
        ),
        (
            "secretbox",
            K2,
            "6b38733a656e633a736563726574626f783a76313a6b6579313ac0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7815b8f5ec1db5f9516e078f9b60145651f3830467259de374898224f5a15224ac660ca768c09663b396d4fd82613e77510",
        ),
    ] {
        let (_dir, inner) = embedded();
        let bytes: Vec<u8> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        inner.put(key, bytes.into(), Expect::Absent).await.unwrap();
        let store = encrypted(&inner, only("secrets", &provider(algorithm, &[("key1", secret)])));
        let kv = get(&store, key).await;
        assert_eq!((kv.value, kv.stale), (plain.clone(), false), "{algorithm}");
    }
}

#[tokio::test]
async fn identity_first_reads_encrypted_data_as_stale_and_rewrites_it_plain() {
    let (_dir, inner) = embedded();
    let aescbc = provider("aescbc", &[("key1", K1)]);
    let before = encrypted(&inner, only("secrets", &aescbc));
    let written = before.put(SECRET, b(PLAIN), Expect::Absent).await.unwrap();

    let decrypting = encrypted(&inner, only("secrets", &format!("{IDENTITY}, {aescbc}")));
    let read = get(&decrypting, SECRET).await;
    assert_eq!(read, KeyValue { stale: true, ..written.clone() }, "readable, and stale");
    let listed = decrypting.list("/registry/secrets/", ListOptions::default()).await.unwrap();
    assert!(listed.items[0].stale);

    let rewritten = decrypting.put(SECRET, read.value, Expect::ModRevision(read.mod_revision)).await.unwrap();
    assert_eq!(raw(&inner, SECRET).await, b(PLAIN), "identity writes plaintext");
    assert!(!get(&decrypting, SECRET).await.stale);
    // As in kube, plaintext needs identity among the providers to be read at all.
    assert!(
        matches!(before.get(SECRET).await, Err(StorageError::Corrupt { message, .. }) if message.ends_with("no matching prefix found"))
    );
    let encrypting = encrypted(&inner, only("secrets", &format!("{aescbc}, {IDENTITY}")));
    assert_eq!(get(&encrypting, SECRET).await, KeyValue { stale: true, ..rewritten }, "aescbc-first reads it as stale");
}

#[tokio::test]
async fn rotation_reads_the_old_key_as_stale_until_a_rewrite() {
    let (_dir, inner) = embedded();
    let old = encrypted(&inner, only("secrets", &provider("aesgcm", &[("key1", K1)])));
    let mut written = Vec::new();
    for name in ["a", "b", "c"] {
        written.push(old.put(&format!("/registry/secrets/default/{name}"), b(name), Expect::Absent).await.unwrap());
    }

    // Step 1 of kube's rotation: the new key first, the old one second.
    let rotated = encrypted(&inner, only("secrets", &provider("aesgcm", &[("key2", K2), ("key1", K1)])));
    // Step 2: `kubectl get secrets -A -o json | kubectl replace -f -` rewrites what is stale.
    let listed = rotated.list("/registry/secrets/", ListOptions::default()).await.unwrap();
    assert!(listed.items.iter().all(|kv| kv.stale), "all read through the old key");
    for kv in listed.items.into_iter().filter(|kv| kv.stale) {
        rotated.put(&kv.key, kv.value, Expect::ModRevision(kv.mod_revision)).await.unwrap();
    }
    for kv in &written {
        assert!(raw(&inner, &kv.key).await.starts_with(b"k8s:enc:aesgcm:v1:key2:"));
        let now = get(&rotated, &kv.key).await;
        assert_eq!((now.value.clone(), now.stale), (kv.value.clone(), false));
    }

    // Step 3: the old key can go.
    let new_only = encrypted(&inner, only("secrets", &provider("aesgcm", &[("key2", K2)])));
    assert_eq!(get(&new_only, &written[0].key).await.value, b("a"));

    // Moving between providers works the same way.
    let to_secretbox = encrypted(
        &inner,
        only("secrets", &format!("{}, {}", provider("secretbox", &[("sb", K1)]), provider("aesgcm", &[("key2", K2)]))),
    );
    let kv = get(&to_secretbox, &written[0].key).await;
    assert!(kv.stale);
    to_secretbox.put(&kv.key, kv.value, Expect::ModRevision(kv.mod_revision)).await.unwrap();
    assert!(raw(&inner, &kv.key).await.starts_with(b"k8s:enc:secretbox:v1:sb:"));
    assert!(!get(&to_secretbox, &kv.key).await.stale);
}

#[tokio::test]
async fn only_the_named_resources_are_encrypted() {
    let (_dir, inner) = embedded();
    let store = encrypted(&inner, only("secrets", &provider("aescbc", &[("key1", K1)])));
    store.put(SECRET, b(PLAIN), Expect::Absent).await.unwrap();
    let cm = "/registry/configmaps/default/settings";
    let written = store.put(cm, b(PLAIN), Expect::Absent).await.unwrap();
    assert_eq!(raw(&inner, cm).await, b(PLAIN), "configmaps stay plaintext");
    assert_eq!(get(&store, cm).await, written);
    assert!(raw(&inner, SECRET).await.starts_with(b"k8s:enc:aescbc:v1:key1:"));
    let outside = "/other/secrets/default/db";
    store.put(outside, b(PLAIN), Expect::Absent).await.unwrap();
    assert_eq!(raw(&inner, outside).await, b(PLAIN), "keys outside the storage prefix stay plaintext");

    // Resource names, groups and wildcards select the resources' key prefixes.
    let aesgcm = provider("aesgcm", &[("key1", K1)]);
    let store = encrypted(
        &inner,
        config(&format!(
            "- resources: [deployments.apps, events, services, nodes]\n  providers: [{aesgcm}]\n\
             - resources: ['*.batch']\n  providers: [{aesgcm}]\n"
        )),
    );
    for (key, encrypt) in [
        ("/registry/deployments/default/web", true),
        ("/registry/events/default/e1", true),
        ("/registry/services/specs/default/web", true),
        ("/registry/minions/node-1", true),
        ("/registry/jobs/default/j", true),
        ("/registry/cronjobs/default/cj", true),
        ("/registry/services/endpoints/default/web", false),
        ("/registry/statefulsets/default/db", false),
        ("/registry/pods/default/p", false),
    ] {
        store.put(key, b(PLAIN), Expect::Absent).await.unwrap();
        assert_eq!(raw(&inner, key).await.starts_with(b"k8s:enc:"), encrypt, "{key}");
        assert_eq!(get(&store, key).await.value, b(PLAIN));
    }
}

#[tokio::test]
async fn unreadable_values_are_corrupt_naming_the_key() {
    let (_dir, inner) = embedded();
    let right = encrypted(&inner, only("secrets", &provider("aesgcm", &[("key1", K1)])));
    let written = right.put(SECRET, b(PLAIN), Expect::Absent).await.unwrap();
    let wrong = encrypted(&inner, only("secrets", &provider("aesgcm", &[("key1", K2)])));
    let expected = StorageError::Corrupt {
        key: SECRET.to_string(),
        message: r#"failed to decrypt data: aesgcm key "key1": message authentication failed"#.to_string(),
    };
    assert_eq!(wrong.get(SECRET).await, Err(expected.clone()));
    assert_eq!(wrong.list("/registry/secrets/", ListOptions::default()).await, Err(expected.clone()));
    assert_eq!(
        expected.to_string(),
        r#"stored object at /registry/secrets/default/db is corrupt: failed to decrypt data: aesgcm key "key1": message authentication failed"#
    );

    // A watch delivering it ends with the error, as kube's watcher does.
    let mut w = wrong.watch("/registry/secrets/", written.mod_revision - 1).await.unwrap();
    assert_eq!(next_item(&mut w).await, Some(WatchItem::Error(expected.clone())));
    assert_eq!(next_item(&mut w).await, None);

    // A value moved to another key does not authenticate (aesgcm binds the key).
    let moved = "/registry/secrets/default/copy";
    inner.put(moved, raw(&inner, SECRET).await, Expect::Absent).await.unwrap();
    assert!(matches!(right.get(moved).await, Err(StorageError::Corrupt { key, .. }) if key == moved));

    // A key of a resource the configuration does not name refuses encrypted bytes (kube's
    // default identity transformer).
    let unnamed = encrypted(&inner, only("configmaps", &provider("aesgcm", &[("key1", K1)])));
    assert_eq!(
        unnamed.get(SECRET).await,
        Err(StorageError::Corrupt {
            key: SECRET.to_string(),
            message: "identity transformer tried to read encrypted data".to_string()
        })
    );
    let no_prefix = encrypted(&inner, only("secrets", &provider("secretbox", &[("key1", K1)])));
    assert_eq!(
        no_prefix.get(SECRET).await,
        Err(StorageError::Corrupt {
            key: SECRET.to_string(),
            message: "failed to decrypt data: no matching prefix found".to_string()
        })
    );

    // Deleting an unreadable key works, and says the value could not be read.
    match wrong.delete(SECRET, None).await {
        Err(StorageError::Corrupt { key, message }) => {
            assert_eq!(key, SECRET);
            assert!(message.ends_with("(the key was deleted)"), "{message}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(inner.get(SECRET).await.unwrap().0, None);
}

#[tokio::test]
async fn conflict_with_an_unreadable_current_value_carries_none() {
    let (_dir, inner) = embedded();
    let right = encrypted(&inner, only("secrets", &provider("secretbox", &[("key1", K1)])));
    right.put(SECRET, b(PLAIN), Expect::Absent).await.unwrap();
    let wrong = encrypted(&inner, only("secrets", &provider("secretbox", &[("key1", K2)])));
    assert_eq!(
        wrong.put(SECRET, b("x"), Expect::Absent).await,
        Err(StorageError::AlreadyExists { key: SECRET.to_string() })
    );
    assert_eq!(
        wrong.put(SECRET, b("x"), Expect::ModRevision(1_000)).await,
        Err(StorageError::Conflict { key: SECRET.to_string(), current: None })
    );
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn loads_a_realistic_configuration_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "encryption.yaml",
        &format!(
            r#"---
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources:
      - secrets
      - configmaps
    providers:
      - aesgcm:
          keys:
            - name: key2
              secret: {K2}
            - name: key1
              secret: {K1}
      - identity: {{}}
  - resources:
      - events
    providers:
      - identity: {{}}
  - resources:
      - '*.apps'
      - '*.'
    providers:
      - secretbox:
          keys:
            - name: sb1
              secret: {K1}
"#
        ),
    );
    let config = EncryptionConfig::load(&path).unwrap();
    let (_store_dir, inner) = embedded();
    let store = encrypted(&inner, config);
    for (key, prefix) in [
        (SECRET, &b"k8s:enc:aesgcm:v1:key2:"[..]),
        ("/registry/configmaps/default/c", b"k8s:enc:aesgcm:v1:key2:"),
        ("/registry/deployments/default/d", b"k8s:enc:secretbox:v1:sb1:"),
        ("/registry/pods/default/p", b"k8s:enc:secretbox:v1:sb1:"),
        ("/registry/events/default/e", b"plain"),
    ] {
        store.put(key, b("plain"), Expect::Absent).await.unwrap();
        assert!(raw(&inner, key).await.starts_with(prefix), "{key}");
    }

    let missing = EncryptionConfig::load(dir.path().join("absent.yaml")).unwrap_err();
    assert!(missing.starts_with("error reading encryption provider configuration file"), "{missing}");
    let empty = EncryptionConfig::load(write(dir.path(), "empty.yaml", "\n")).unwrap_err();
    assert!(empty.ends_with("empty.yaml\" is empty"), "{empty}");
    let kms = write(
        dir.path(),
        "kms.yaml",
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  \
         providers:\n  - kms: {apiVersion: v2, name: vault, endpoint: unix:///tmp/kms.sock}\n",
    );
    let err = EncryptionConfig::load(&kms).unwrap_err();
    assert!(err.contains("kms.yaml\": error while parsing file: resources[0].providers[0].kms"), "{err}");
    assert!(err.contains("KMS providers are not supported"), "{err}");
}
