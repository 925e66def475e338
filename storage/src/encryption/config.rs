//! kube-apiserver's `--encryption-provider-config` file (`apiserver.config.k8s.io/v1`,
//! `EncryptionConfiguration`): parsing, kube's validation and its rules for which providers
//! apply to which resource.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use serde::Deserialize;
use zeroize::Zeroizing;

use super::transformer::{Algorithm, NamedKey, Provider, aggregate};

/// The file's `apiVersion`.
const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// The file's `kind`.
const KIND: &str = "EncryptionConfiguration";

/// A group and resource as kube parses `resources` entries (`schema.ParseGroupResource`):
/// `secrets` is core, `deployments.apps` is `apps`; `*` as resource or group is a wildcard.
#[derive(Clone, Debug, PartialEq, Eq)]
struct GroupResource {
    group: String,
    resource: String,
}

impl GroupResource {
    /// Splits at the first dot: resource before it, group after.
    fn parse(s: &str) -> GroupResource {
        let (resource, group) = s.split_once('.').unwrap_or((s, ""));
        GroupResource { group: group.to_string(), resource: resource.to_string() }
    }

    /// `*.*`, which matches every resource.
    fn is_any(&self) -> bool {
        self.group == "*" && self.resource == "*"
    }

    /// The name kube's errors use (`grYAMLString`): `secrets`, `deployments.apps`, `*.`.
    fn yaml(&self) -> String {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "*") => "*.".to_string(),
            ("", r) => r.to_string(),
            (g, r) => format!("{r}.{g}"),
        }
    }
}

/// The file as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileV1 {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    resources: Vec<ResourceV1>,
}

/// One entry of `resources`.
#[derive(Deserialize)]
struct ResourceV1 {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderV1>,
}

/// One entry of `providers`: exactly one field must be set.
#[derive(Deserialize)]
struct ProviderV1 {
    aesgcm: Option<KeysV1>,
    aescbc: Option<KeysV1>,
    secretbox: Option<KeysV1>,
    identity: Option<serde::de::IgnoredAny>,
    kms: Option<KmsV1>,
}

impl ProviderV1 {
    /// The provider fields present, in kube's order.
    fn present(&self) -> Vec<&'static str> {
        [
            ("kms", self.kms.is_some()),
            ("aesgcm", self.aesgcm.is_some()),
            ("aescbc", self.aescbc.is_some()),
            ("secretbox", self.secretbox.is_some()),
            ("identity", self.identity.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }
}

/// `keys` of a key-based provider.
#[derive(Deserialize)]
struct KeysV1 {
    #[serde(default)]
    keys: Vec<KeyV1>,
}

/// One named key; `secret` is base64.
#[derive(Deserialize)]
struct KeyV1 {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// What a rejected `kms` provider is named by.
#[derive(Deserialize)]
struct KmsV1 {
    #[serde(default)]
    name: String,
}

/// A validated encryption configuration with its keys loaded: for every group/resource the
/// configuration names, the providers in the order kube uses them (the first writes, all read).
///
/// It is built once from the file, like kube's static transformers: a changed file takes effect
/// on restart. Its `Debug` output never shows secrets.
#[derive(Clone, Debug)]
pub struct EncryptionConfig {
    /// Resource (or wildcard) to its providers, in the order entries first named them.
    overrides: Vec<(GroupResource, Vec<Arc<Provider>>)>,
}

impl EncryptionConfig {
    /// Reads and validates the file at `path`, as kube-apiserver's
    /// `--encryption-provider-config`; errors name the file and say what is wrong in kube's words.
    pub fn load(path: impl AsRef<Path>) -> Result<EncryptionConfig, String> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("error reading encryption provider configuration file {path:?}: {e}"))?;
        if text.trim().is_empty() {
            return Err(format!("encryption provider configuration file {path:?} is empty"));
        }
        Self::parse(&text).map_err(|e| format!("encryption provider configuration file {path:?}: {e}"))
    }

    /// Parses and validates the YAML (or JSON) text of a configuration file.
    pub fn parse(yaml: &str) -> Result<EncryptionConfig, String> {
        let file: FileV1 = serde_yaml_ng::from_str(yaml)
            .map_err(|e| format!("error decoding encryption provider configuration: {e}"))?;
        let (api_version, kind) = (file.api_version.as_deref().unwrap_or(""), file.kind.as_deref().unwrap_or(""));
        if api_version != API_VERSION || kind != KIND {
            return Err(format!(
                "error decoding encryption provider configuration: expected apiVersion {API_VERSION:?} and kind \
                 {KIND:?}, got {api_version:?} and {kind:?}"
            ));
        }
        let errors = validate(&file);
        if !errors.is_empty() {
            return Err(format!("error while parsing file: {}", aggregate(&errors)));
        }
        build(&file).map_err(|e| format!("error while building transformers: {e}"))
    }

    /// The providers for a resource of `group` (kube's `transformerFromOverrides`): an exact
    /// entry, else `*.<group>`, else `*.*`; `None` when the configuration names none of them.
    pub(super) fn providers_for(&self, group: &str, resource: &str) -> Option<&[Arc<Provider>]> {
        let find = |group: &str, resource: &str| {
            self.overrides.iter().find(|(gr, _)| gr.group == group && gr.resource == resource).map(|(_, p)| &p[..])
        };
        find(group, resource).or_else(|| find(group, "*")).or_else(|| find("*", "*"))
    }
}

/// Go's `%q` of a string.
fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// Go's `%#v` of a `[]string`, as kube's field errors print a resource list.
fn go_strings(list: &[String]) -> String {
    format!("[]string{{{}}}", list.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(", "))
}

/// kube's `field.Required` rendering.
fn required(path: &str, detail: &str) -> String {
    format!("{path}: Required value: {detail}")
}

/// kube's `field.Invalid` rendering; `value` is already rendered.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

/// kube's `ValidateEncryptionConfiguration`, with `kms` rejected as unsupported.
fn validate(file: &FileV1) -> Vec<String> {
    if file.resources.is_empty() {
        return vec![required("resources", "at least one resources is required")];
    }
    let mut errors = Vec::new();
    for (i, entry) in file.resources.iter().enumerate() {
        let r = format!("resources[{i}].resources");
        let p = format!("resources[{i}].providers");
        if entry.resources.is_empty() {
            errors.push(required(&r, &format!("at least one {r} is required")));
        }
        errors.extend(validate_overlap(&entry.resources, &r));
        errors.extend(validate_resource_names(&entry.resources, &r));
        if entry.providers.is_empty() {
            errors.push(required(&p, &format!("at least one {p} is required")));
        }
        for (j, provider) in entry.providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            let present = provider.present();
            if present.len() != 1 {
                let detail = if present.is_empty() {
                    "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
                } else {
                    "more than one provider specified in a single element, should split into different list elements"
                };
                errors.push(invalid(&path, &format!("{{{}}}", present.join(", ")), detail));
                continue;
            }
            if let Some(kms) = &provider.kms {
                errors.push(invalid(
                    &format!("{path}.kms"),
                    &quoted(&kms.name),
                    "KMS providers are not supported by this server; use aescbc, aesgcm or secretbox",
                ));
            }
            if let Some((algorithm, keys)) = keyed(provider) {
                errors.extend(validate_keys(&keys.keys, &format!("{path}.{}.keys", algorithm.name()), algorithm));
            }
        }
    }
    errors
}

/// The key-based provider of an entry, if it is one.
fn keyed(provider: &ProviderV1) -> Option<(Algorithm, &KeysV1)> {
    [
        (Algorithm::AesGcm, &provider.aesgcm),
        (Algorithm::AesCbc, &provider.aescbc),
        (Algorithm::Secretbox, &provider.secretbox),
    ]
    .into_iter()
    .find_map(|(algorithm, keys)| keys.as_ref().map(|k| (algorithm, k)))
}

/// kube's `validateResourceOverlap`: duplicates, and wildcards overlapping other entries of the
/// same list.
fn validate_overlap(resources: &[String], path: &str) -> Vec<String> {
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            // As kube: the first duplicate pair counts as a duplicate only; later pairs, equal
            // or not, count as overlap when a wildcard covers the other.
            if a == b && !duplicate {
                duplicate = true;
            } else if a.is_any() || (a.group == b.group && (a.resource == "*" || b.resource == "*")) {
                overlap = true;
            }
        }
    }
    let mut errors = Vec::new();
    if duplicate {
        errors.push(invalid(path, &go_strings(resources), "the same resource cannot be specified multiple times"));
    }
    if overlap {
        errors.push(invalid(
            path,
            &go_strings(resources),
            "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as \
             they will be masked",
        ));
    }
    errors
}

/// kube's `validateResourceNames`.
fn validate_resource_names(resources: &[String], path: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (j, res) in resources.iter().enumerate() {
        let gr = GroupResource::parse(res);
        let detail = if res.to_lowercase() != *res {
            "resource name should not contain capital letters"
        } else if res == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        } else if matches!(res.as_str(), "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations") {
            "resources which do not have REST API/s cannot be encrypted"
        } else if gr.group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the \
             config file"
        } else if gr.group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if gr.group == "*" && gr.resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errors.push(invalid(&format!("{path}[{j}]"), &quoted(res), detail));
    }
    errors
}

/// The decoded secret of a key, wiped when dropped.
fn decode_secret(secret: &str) -> Option<Zeroizing<Vec<u8>>> {
    base64::engine::general_purpose::STANDARD.decode(secret).ok().map(Zeroizing::new)
}

/// kube's `validateKeys`: at least one, each named, with a base64 secret of an allowed length.
fn validate_keys(keys: &[KeyV1], path: &str, algorithm: Algorithm) -> Vec<String> {
    if keys.is_empty() {
        return vec![required(path, "at least one keys is required")];
    }
    let mut errors = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let path = format!("{path}[{i}]");
        if key.name.is_empty() {
            errors.push(required(&format!("{path}.name"), "name is a mandatory field for a key"));
        }
        let secret_path = format!("{path}.secret");
        if key.secret.is_empty() {
            errors.push(required(&secret_path, "secret is a mandatory field for a key"));
            continue;
        }
        let Some(secret) = decode_secret(&key.secret) else {
            errors.push(invalid(&secret_path, "\"REDACTED\"", "secrets must be base64 encoded"));
            continue;
        };
        let sizes = algorithm.key_sizes();
        if !sizes.contains(&secret.len()) {
            let sizes = sizes.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
            errors.push(invalid(
                &secret_path,
                "\"REDACTED\"",
                &format!("secret is not of the expected length, got {}, expected one of [{sizes}]", secret.len()),
            ));
        }
    }
    errors
}

/// Loads the keys of one provider entry the validation accepted.
fn build_provider(provider: &ProviderV1) -> Result<Provider, String> {
    let Some((algorithm, config)) = keyed(provider) else { return Ok(Provider::Identity) };
    let mut keys = Vec::with_capacity(config.keys.len());
    for key in &config.keys {
        let secret = decode_secret(&key.secret)
            .ok_or_else(|| format!("could not obtain secret for named key {}: illegal base64 data", key.name))?;
        keys.push(
            NamedKey::new(algorithm, &key.name, &secret)
                .map_err(|e| format!("error while creating cipher for named key {}: {e}", key.name))?,
        );
    }
    Ok(Provider::Keyed { algorithm, keys })
}

/// kube's `getTransformerOverridesAndKMSPluginProbes`: every entry's providers are appended to
/// each resource it names (a resource named again later gains read-only providers), and naming
/// a resource after `*.<group>` or `*.*` already covered it is an error.
fn build(file: &FileV1) -> Result<EncryptionConfig, String> {
    let mut overrides: Vec<(GroupResource, Vec<Arc<Provider>>)> = Vec::new();
    for entry in &file.resources {
        let providers =
            entry.providers.iter().map(|p| build_provider(p).map(Arc::new)).collect::<Result<Vec<_>, _>>()?;
        for name in &entry.resources {
            let gr = GroupResource::parse(name);
            let group_any = GroupResource { group: gr.group.clone(), resource: "*".to_string() };
            let any = GroupResource { group: "*".to_string(), resource: "*".to_string() };
            for masking in [group_any, any] {
                if overrides.iter().any(|(known, _)| *known == masking) {
                    return Err(format!(
                        "resource {} is masked by earlier rule {}",
                        quoted(&gr.yaml()),
                        quoted(&masking.yaml())
                    ));
                }
            }
            match overrides.iter_mut().find(|(known, _)| *known == gr) {
                Some((_, list)) => list.extend(providers.iter().cloned()),
                None => overrides.push((gr, providers.clone())),
            }
        }
    }
    Ok(EncryptionConfig { overrides })
}

#[cfg(test)]
mod tests {
    use super::*;

    const K16: &str = "c2VjcmV0IGlzIHNlY3VyZQ=="; // 16 bytes
    const K32: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn header(body: &str) -> String {
        format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n{body}")
    }

    fn parse_err(body: &str) -> String {
        EncryptionConfig::parse(&header(body)).unwrap_err()
    }

    fn writer_of(config: &EncryptionConfig, group: &str, resource: &str) -> Option<Vec<&'static str>> {
        config.providers_for(group, resource).map(|p| p.iter().map(|p| p.name()).collect())
    }

    #[test]
    fn parses_kubes_documented_example() {
        // The example of kube's `EncryptionConfiguration` type, with `*.*` as the last rule.
        let config = EncryptionConfig::parse(&header(&format!(
            r#"
resources:
- resources:
  - events
  providers:
  - identity: {{}}  # do not encrypt events even though *.* is specified below
- resources:
  - secrets
  - configmaps
  - pandas.awesome.bears.example
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: {K16}
- resources:
  - '*.apps'
  providers:
  - aesgcm:
      keys:
      - name: key2
        secret: {K32}
  - identity: {{}}
- resources:
  - '*.*'
  providers:
  - secretbox:
      keys:
      - name: key3
        secret: {K32}
"#
        )))
        .unwrap();
        assert_eq!(writer_of(&config, "", "events"), Some(vec!["identity"]));
        assert_eq!(writer_of(&config, "", "secrets"), Some(vec!["aescbc"]));
        assert_eq!(writer_of(&config, "apps", "deployments"), Some(vec!["aesgcm", "identity"]));
        assert_eq!(writer_of(&config, "batch", "jobs"), Some(vec!["secretbox"]));
        assert_eq!(writer_of(&config, "", "pods"), Some(vec!["secretbox"]));
        assert!(!format!("{config:?}").contains(K32), "Debug redacts secrets");
    }

    #[test]
    fn exact_names_beat_wildcards_and_unnamed_resources_have_none() {
        let config = EncryptionConfig::parse(&header(&format!(
            "resources:\n- resources: [secrets]\n  providers: [{{aesgcm: {{keys: [{{name: a, secret: {K32}}}]}}}}]\n\
             - resources: ['*.']\n  providers: [{{identity: {{}}}}]\n"
        )))
        .unwrap();
        assert_eq!(writer_of(&config, "", "secrets"), Some(vec!["aesgcm"]));
        assert_eq!(writer_of(&config, "", "configmaps"), Some(vec!["identity"]));
        assert_eq!(writer_of(&config, "apps", "deployments"), None);
    }

    #[test]
    fn a_resource_named_twice_gains_the_later_providers_for_reads() {
        let config = EncryptionConfig::parse(&header(&format!(
            "resources:\n- resources: [secrets]\n  providers: [{{aescbc: {{keys: [{{name: a, secret: {K32}}}]}}}}]\n\
             - resources: [secrets]\n  providers: [{{identity: {{}}}}]\n"
        )))
        .unwrap();
        assert_eq!(writer_of(&config, "", "secrets"), Some(vec!["aescbc", "identity"]));
    }

    #[test]
    fn rejects_what_kube_rejects_in_its_words() {
        let cases: &[(&str, &str)] = &[
            (
                "resources: []",
                "error while parsing file: resources: Required value: at least one resources is required",
            ),
            (
                "resources:\n- providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources: Required value: at least one \
                 resources[0].resources is required",
            ),
            (
                "resources:\n- resources: [secrets]",
                "error while parsing file: resources[0].providers: Required value: at least one \
                 resources[0].providers is required",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{}]",
                "error while parsing file: resources[0].providers[0]: Invalid value: {}: provider does not \
                 contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{identity: {}, aescbc: {keys: []}}]",
                "error while parsing file: resources[0].providers[0]: Invalid value: {aescbc, identity}: more than \
                 one provider specified in a single element, should split into different list elements",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{aescbc: {keys: []}}]",
                "error while parsing file: resources[0].providers[0].aescbc.keys: Required value: at least one keys \
                 is required",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}}]",
                "error while parsing file: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \
                 \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{secretbox: {keys: [{name: k, secret: c2VjcmV0IGlzIHNlY3VyZQ==}]}}]",
                "error while parsing file: resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \
                 \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{aescbc: {keys: [{secret: '!!'}]}}]",
                "error while parsing file: [resources[0].providers[0].aescbc.keys[0].name: Required value: name is \
                 a mandatory field for a key, resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \
                 \"REDACTED\": secrets must be base64 encoded]",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: k}]}}]",
                "error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Required value: secret \
                 is a mandatory field for a key",
            ),
            (
                "resources:\n- resources: [secrets]\n  providers: [{kms: {apiVersion: v2, name: vault, endpoint: 'unix:///kms.sock'}}]",
                "error while parsing file: resources[0].providers[0].kms: Invalid value: \"vault\": KMS providers \
                 are not supported by this server; use aescbc, aesgcm or secretbox",
            ),
            (
                "resources:\n- resources: [secrets, '*.']\n  providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources: Invalid value: []string{\"secrets\", \"*.\"}: \
                 using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed \
                 as they will be masked",
            ),
            (
                "resources:\n- resources: [secrets, secrets]\n  providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources: Invalid value: []string{\"secrets\", \
                 \"secrets\"}: the same resource cannot be specified multiple times",
            ),
            (
                "resources:\n- resources: [Secrets]\n  providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources[0]: Invalid value: \"Secrets\": resource name \
                 should not contain capital letters",
            ),
            (
                "resources:\n- resources: ['*']\n  providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources[0]: Invalid value: \"*\": use '*.' to encrypt all \
                 the resources from core API group or *.* to encrypt all resources",
            ),
            (
                "resources:\n- resources: [events.events.k8s.io]\n  providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources[0]: Invalid value: \"events.events.k8s.io\": \
                 '*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead \
                 in the config file",
            ),
            (
                "resources:\n- resources: [secrets.*]\n  providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources[0]: Invalid value: \"secrets.*\": encrypting the \
                 same resource across groups is not supported",
            ),
            (
                "resources:\n- resources: [serviceipallocations]\n  providers: [{identity: {}}]",
                "error while parsing file: resources[0].resources[0]: Invalid value: \"serviceipallocations\": \
                 resources which do not have REST API/s cannot be encrypted",
            ),
            (
                "resources:\n- resources: ['*.apps']\n  providers: [{identity: {}}]\n\
                 - resources: [deployments.apps]\n  providers: [{identity: {}}]",
                "error while building transformers: resource \"deployments.apps\" is masked by earlier rule \"*.apps\"",
            ),
            (
                "resources:\n- resources: ['*.*']\n  providers: [{identity: {}}]\n\
                 - resources: [secrets]\n  providers: [{identity: {}}]",
                "error while building transformers: resource \"secrets\" is masked by earlier rule \"*.*\"",
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(parse_err(body), *expected, "for\n{body}");
        }
    }

    #[test]
    fn rejects_other_kinds_and_bad_yaml() {
        let wrong = EncryptionConfig::parse("apiVersion: v1\nkind: ConfigMap\nresources: []").unwrap_err();
        assert_eq!(
            wrong,
            "error decoding encryption provider configuration: expected apiVersion \"apiserver.config.k8s.io/v1\" \
             and kind \"EncryptionConfiguration\", got \"v1\" and \"ConfigMap\""
        );
        let bad = EncryptionConfig::parse(&header("resources: {not: a list}")).unwrap_err();
        assert!(bad.starts_with("error decoding encryption provider configuration: resources: invalid type"), "{bad}");
    }
}
