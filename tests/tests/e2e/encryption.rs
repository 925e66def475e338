//! Encryption at rest: secrets are unreadable in the store, correct through the API, and keys
//! rotate by re-writing objects.

use base64::Engine;
use tests::TestServer;

fn key(byte: u8) -> String {
    base64::engine::general_purpose::STANDARD.encode([byte; 32])
}

fn config(keys: &[(&str, u8)]) -> String {
    let keys: String =
        keys.iter().map(|(name, b)| format!("        - name: {name}\n          secret: {}\n", key(*b))).collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n{keys}  - identity: {{}}\n"
    )
}

fn raw_store(s: &TestServer) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(s.data_dir.join("store")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            all.extend(std::fs::read(path).unwrap());
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn secrets_are_encrypted_at_rest_and_keys_rotate() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("encryption.yaml");
    std::fs::write(&cfg, config(&[("key1", 1)])).unwrap();
    let cfg_arg = cfg.to_str().unwrap().to_string();
    let mut s = TestServer::start_with(&["--encryption-provider-config", &cfg_arg]);
    s.kubectl_ok(&["create", "secret", "generic", "db", "--from-literal=password=hunter2-plaintext"]);
    s.kubectl_ok(&["create", "configmap", "open", "--from-literal=note=visible-plaintext"]);
    let raw = raw_store(&s);
    assert!(contains(&raw, "k8s:enc:aescbc:v1:key1:"), "secret stored encrypted");
    assert!(!contains(&raw, "hunter2-plaintext"), "the secret's value never reaches the disk in clear");
    assert!(contains(&raw, "visible-plaintext"), "configmaps are not in the config: stored as they are");
    let value = s.kubectl_ok(&["get", "secret", "db", "-o", "jsonpath={.data.password}"]);
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(value.trim()).unwrap(), b"hunter2-plaintext");

    // Rotate: the new key first, the old one still readable; re-writing moves data to the new key.
    std::fs::write(&cfg, config(&[("key2", 2), ("key1", 1)])).unwrap();
    s.restart();
    let secrets = s.kubectl_ok(&["get", "secrets", "-o", "json"]);
    tests::assert_success("kubectl replace", &s.kubectl_stdin(&["replace", "-f", "-"], &secrets));
    assert!(contains(&raw_store(&s), "k8s:enc:aescbc:v1:key2:"), "the rewrite used the new key");

    // With the old key gone the secret still reads: it was rewritten.
    std::fs::write(&cfg, config(&[("key2", 2)])).unwrap();
    s.restart();
    let value = s.kubectl_ok(&["get", "secret", "db", "-o", "jsonpath={.data.password}"]);
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(value.trim()).unwrap(), b"hunter2-plaintext");
}
