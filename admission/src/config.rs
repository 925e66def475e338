//! kube's `--admission-control-config-file`: an `AdmissionConfiguration` that gives plugins
//! their own configuration, inline (`configuration`) or in a file (`path`, relative to the
//! configuration file's directory). YAML or JSON, as kube reads it.
//!
//! ```yaml
//! apiVersion: apiserver.config.k8s.io/v1
//! kind: AdmissionConfiguration
//! plugins:
//! - name: PodSecurity
//!   configuration:
//!     apiVersion: pod-security.admission.config.k8s.io/v1
//!     kind: PodSecurityConfiguration
//!     defaults: {enforce: baseline}
//! ```

use std::path::Path;

use serde_json::Value;

/// The API versions kube reads an `AdmissionConfiguration` in.
const API_VERSIONS: [&str; 3] =
    ["apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1", "apiserver.k8s.io/v1alpha1"];

/// Each plugin's configuration, by kube's plugin name; empty without a file.
#[derive(Debug, Default)]
pub struct AdmissionConfiguration {
    plugins: Vec<(String, Value)>,
}

impl AdmissionConfiguration {
    /// Reads the file at `path` and the plugin files it names.
    pub fn load(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("unable to read admission config {shown}: {e}"))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, dir).map_err(|e| format!("admission config {shown}: {e}"))
    }

    /// An `AdmissionConfiguration` in `text`; `path`s are read relative to `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<Self, String> {
        let config = yaml(text)?;
        expect_kind(&config, &["AdmissionConfiguration"], &API_VERSIONS)?;
        let mut plugins = Vec::new();
        for (i, plugin) in config.get("plugins").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let name = plugin.get("name").and_then(Value::as_str).filter(|n| !n.is_empty());
            let name = name.ok_or_else(|| format!("plugins[{i}].name: Required value"))?.to_string();
            let configuration = match (plugin.get("configuration").filter(|c| !c.is_null()), plugin.get("path")) {
                (Some(inline), _) => inline.clone(),
                (None, Some(Value::String(file))) if !file.is_empty() => {
                    let file = dir.join(file);
                    let text = std::fs::read_to_string(&file)
                        .map_err(|e| format!("unable to read {name} configuration {}: {e}", file.display()))?;
                    yaml(&text).map_err(|e| format!("{name} configuration {}: {e}", file.display()))?
                }
                // A plugin named with nothing to say gets its defaults.
                _ => continue,
            };
            plugins.push((name, configuration));
        }
        Ok(AdmissionConfiguration { plugins })
    }

    /// The configuration given to plugin `name`, if any.
    pub fn plugin(&self, name: &str) -> Option<&Value> {
        self.plugins.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
}

/// Refuses a configuration that is not one of `kinds` in one of `api_versions`.
pub fn expect_kind(config: &Value, kinds: &[&str], api_versions: &[&str]) -> Result<(), String> {
    let api_version = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if kinds.contains(&kind) && api_versions.contains(&api_version) {
        return Ok(());
    }
    Err(format!("expected kind {} in one of {}, got {api_version:?}, kind {kind:?}", kinds[0], api_versions.join(", ")))
}

fn yaml(text: &str) -> Result<Value, String> {
    serde_yaml_ng::from_str(text).map_err(|e| format!("not YAML or JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_are_configured_inline_or_from_a_file_beside_it() {
        let dir = std::env::temp_dir().join(format!("admission-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("quota.yaml"),
            "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\n",
        )
        .unwrap();
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n\
            - name: PodSecurity\n  configuration:\n    kind: PodSecurityConfiguration\n    defaults: {enforce: baseline}\n\
            - name: ResourceQuota\n  path: quota.yaml\n- name: LimitRanger\n";
        let config = AdmissionConfiguration::parse(text, &dir).unwrap();
        assert_eq!(config.plugin("PodSecurity").unwrap()["defaults"]["enforce"], "baseline");
        assert_eq!(config.plugin("ResourceQuota").unwrap()["kind"], "ResourceQuotaConfiguration");
        assert!(config.plugin("LimitRanger").is_none() && config.plugin("Priority").is_none());
        let missing = text.replace("quota.yaml", "nope.yaml");
        let e = AdmissionConfiguration::parse(&missing, &dir).unwrap_err();
        assert!(e.starts_with("unable to read ResourceQuota configuration ") && e.contains("nope.yaml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_kind_or_a_nameless_plugin_is_refused() {
        let e = AdmissionConfiguration::parse("apiVersion: v1\nkind: ConfigMap\n", Path::new(".")).unwrap_err();
        assert!(e.starts_with("expected kind AdmissionConfiguration in one of apiserver.config.k8s.io/v1"), "{e}");
        let e = AdmissionConfiguration::parse(
            r#"{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": [{"path": "x"}]}"#,
            Path::new("."),
        )
        .unwrap_err();
        assert_eq!(e, "plugins[0].name: Required value");
    }
}
