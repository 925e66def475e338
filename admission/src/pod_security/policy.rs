//! Levels, policy versions and the namespace labels that choose them (kube's
//! `pod-security-admission/api`).
//!
//! A namespace names up to three level/version pairs, one per mode (`enforce`, `audit`, `warn`).
//! A label that is missing takes the configured default; a label that does not parse still
//! yields a policy (kube evaluates with *something* rather than nothing) plus a field error the
//! namespace write is refused with: an unparseable enforce level fails closed (`restricted`),
//! unparseable audit and warn levels fail open (`privileged`), an unparseable version is
//! `latest`.

use std::cmp::Ordering;
use std::fmt;

use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Bad, Path};
use serde_json::Value;

/// The prefix of the namespace labels and of the audit annotations.
pub const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
/// The enforce level label.
pub const ENFORCE_LEVEL_LABEL: &str = "pod-security.kubernetes.io/enforce";
/// The enforce version label.
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";
/// The audit level label.
pub const AUDIT_LEVEL_LABEL: &str = "pod-security.kubernetes.io/audit";
/// The audit version label.
pub const AUDIT_VERSION_LABEL: &str = "pod-security.kubernetes.io/audit-version";
/// The warn level label.
pub const WARN_LEVEL_LABEL: &str = "pod-security.kubernetes.io/warn";
/// The warn version label.
pub const WARN_VERSION_LABEL: &str = "pod-security.kubernetes.io/warn-version";

/// A Pod Security Standards level, from least to most strict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// No restrictions.
    Privileged,
    /// Prevents known privilege escalations.
    Baseline,
    /// Hardened best practice; includes baseline.
    Restricted,
}

impl Level {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// kube's `ParseLevel`; the error is the field error's detail.
    pub fn parse(s: &str) -> Result<Level, &'static str> {
        match s {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err("must be one of privileged, baseline, restricted"),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy version: `latest`, or the standards as of Kubernetes `v1.N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// The newest checks this server knows (v1.30's, whose newest check version is 1.29).
    Latest,
    /// `v1.N`: the checks as they stood in that minor release.
    Minor(i64),
}

impl Version {
    /// kube's `ParseVersion`: `latest` or `v1.N` (no leading zeros); the error is the field
    /// error's detail.
    pub fn parse(s: &str) -> Result<Version, &'static str> {
        const DETAIL: &str = r#"must be "latest" or "v1.x""#;
        if s == "latest" {
            return Ok(Version::Latest);
        }
        let digits = s.strip_prefix("v1.").ok_or(DETAIL)?;
        let well_formed = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if !well_formed {
            return Err(DETAIL);
        }
        // Go's Atoi on 64 bits: anything past i64 fails the same way.
        digits.parse::<i64>().map(Version::Minor).map_err(|_| DETAIL)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// `latest` is newer than every numbered version, even future ones (kube's `Older`).
impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Version::Latest, Version::Latest) => Ordering::Equal,
            (Version::Latest, _) => Ordering::Greater,
            (_, Version::Latest) => Ordering::Less,
            (Version::Minor(a), Version::Minor(b)) => a.cmp(b),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::Minor(m) => write!(f, "v1.{m}"),
        }
    }
}

/// A level at a version: what one mode evaluates. Prints as `restricted:latest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    /// The level.
    pub level: Level,
    /// The version of the level's checks.
    pub version: Version,
}

impl LevelVersion {
    /// `level` at `version`.
    pub fn new(level: Level, version: Version) -> Self {
        LevelVersion { level, version }
    }

    /// `privileged:latest`, kube's default for every mode.
    pub fn privileged() -> Self {
        LevelVersion::new(Level::Privileged, Version::Latest)
    }

    /// kube's `Equivalent`: both privileged (whatever the versions), or the same pair.
    pub fn equivalent(&self, other: &LevelVersion) -> bool {
        (self.level == Level::Privileged && other.level == Level::Privileged) || self == other
    }
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level, self.version)
    }
}

/// The three modes of a namespace's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Violations refuse pods.
    pub enforce: LevelVersion,
    /// Violations are recorded in the audit event.
    pub audit: LevelVersion,
    /// Violations are returned as warnings.
    pub warn: LevelVersion,
}

impl Default for Policy {
    /// kube's configuration default: `privileged:latest` for all three modes.
    fn default() -> Self {
        let p = LevelVersion::privileged();
        Policy { enforce: p, audit: p, warn: p }
    }
}

impl Policy {
    /// Every mode privileged: nothing to evaluate.
    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn].iter().all(|lv| lv.level == Level::Privileged)
    }

    /// All three modes [`LevelVersion::equivalent`].
    pub fn equivalent(&self, other: &Policy) -> bool {
        self.enforce.equivalent(&other.enforce)
            && self.audit.equivalent(&other.audit)
            && self.warn.equivalent(&other.warn)
    }
}

/// A namespace's policy as kube resolves it from its labels (`PolicyToEvaluate`).
#[derive(Clone, Debug, PartialEq)]
pub struct NamespacePolicy {
    /// The policy to evaluate, always usable, even when `errors` is not empty.
    pub policy: Policy,
    /// One `FieldValueInvalid` per unparseable label, in kube's order (enforce, enforce-version,
    /// audit, audit-version, warn, warn-version).
    pub errors: Vec<Cause>,
}

impl NamespacePolicy {
    /// Resolves `labels` (a namespace's `metadata.labels`, absent or null for none) over
    /// `defaults`.
    pub fn from_labels(labels: Option<&Value>, defaults: &Policy) -> Self {
        let mut p = *defaults;
        let mut errors = Vec::new();
        let labels = labels.and_then(Value::as_object);
        let label = |key: &str| labels.and_then(|l| l.get(key)).map(|v| v.as_str().unwrap_or(""));
        let path = Path::new("metadata").child("labels");
        let mut invalid = |key: &str, value: &str, detail: &str| {
            errors.push(field::invalid(&path.key(key), Bad::s(value), detail));
        };
        // Each mode: the level falls back to `on_bad_level`, the version to latest.
        let mut resolve = |lv: &mut LevelVersion, level_key: &str, version_key: &str, on_bad_level: Level| {
            if let Some(v) = label(level_key) {
                lv.level = Level::parse(v).unwrap_or_else(|detail| {
                    invalid(level_key, v, detail);
                    on_bad_level
                });
            }
            if let Some(v) = label(version_key) {
                lv.version = Version::parse(v).unwrap_or_else(|detail| {
                    invalid(version_key, v, detail);
                    Version::Latest
                });
            }
        };
        resolve(&mut p.enforce, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL, Level::Restricted);
        resolve(&mut p.audit, AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL, Level::Privileged);
        resolve(&mut p.warn, WARN_LEVEL_LABEL, WARN_VERSION_LABEL, Level::Privileged);
        NamespacePolicy { policy: p, errors }
    }

    /// The errors as kube's `ErrorList.ToAggregate()` prints them (one error plain, several in
    /// brackets, repeats once), or `None` when the labels parsed.
    pub fn error_text(&self) -> Option<String> {
        if self.errors.is_empty() {
            return None;
        }
        let mut msgs: Vec<String> = Vec::new();
        for c in &self.errors {
            let m = format!("{}: {}", c.field, c.message);
            if !msgs.contains(&m) {
                msgs.push(m);
            }
        }
        Some(if msgs.len() == 1 { msgs.swap_remove(0) } else { format!("[{}]", msgs.join(", ")) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lv(level: Level, version: Version) -> LevelVersion {
        LevelVersion::new(level, version)
    }

    #[test]
    fn versions_parse_as_kube_does() {
        assert_eq!(Version::parse("latest"), Ok(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Ok(Version::Minor(0)));
        assert_eq!(Version::parse("v1.25"), Ok(Version::Minor(25)));
        for bad in ["", "v1", "v1.", "v1.01", "v2.0", "1.25", "v1.2x", "Latest", "v1.-1", "v1.99999999999999999999"] {
            assert_eq!(Version::parse(bad), Err(r#"must be "latest" or "v1.x""#), "{bad}");
        }
        assert!(Version::Minor(30) < Version::Latest);
        assert!(Version::Minor(9) < Version::Minor(10));
        assert_eq!(Version::Minor(18).to_string(), "v1.18");
    }

    #[test]
    fn missing_labels_take_the_defaults() {
        let p = NamespacePolicy::from_labels(None, &Policy::default());
        assert_eq!(p.policy, Policy::default());
        assert!(p.errors.is_empty());
        assert_eq!(p.policy.enforce.to_string(), "privileged:latest");
        let p = NamespacePolicy::from_labels(Some(&json!({"app": "x"})), &Policy::default());
        assert_eq!(p.policy, Policy::default());
    }

    #[test]
    fn labels_choose_each_mode() {
        let labels = json!({
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/enforce-version": "v1.24",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": "latest",
        });
        let p = NamespacePolicy::from_labels(Some(&labels), &Policy::default());
        assert!(p.errors.is_empty());
        assert_eq!(p.policy.enforce, lv(Level::Baseline, Version::Minor(24)));
        assert_eq!(p.policy.audit, lv(Level::Restricted, Version::Latest));
        assert_eq!(p.policy.warn, lv(Level::Restricted, Version::Latest));
        // A version alone keeps the default level.
        let p = NamespacePolicy::from_labels(
            Some(&json!({"pod-security.kubernetes.io/enforce-version": "v1.20"})),
            &Policy::default(),
        );
        assert_eq!(p.policy.enforce, lv(Level::Privileged, Version::Minor(20)));
    }

    #[test]
    fn bad_labels_fail_closed_for_enforce_open_for_audit_and_warn() {
        let labels = json!({
            "pod-security.kubernetes.io/enforce": "strict",
            "pod-security.kubernetes.io/enforce-version": "1.25",
            "pod-security.kubernetes.io/audit": "",
            "pod-security.kubernetes.io/warn": "Baseline",
            "pod-security.kubernetes.io/warn-version": "v1.x",
        });
        let p = NamespacePolicy::from_labels(Some(&labels), &Policy::default());
        assert_eq!(p.policy.enforce, lv(Level::Restricted, Version::Latest));
        assert_eq!(p.policy.audit, lv(Level::Privileged, Version::Latest));
        assert_eq!(p.policy.warn, lv(Level::Privileged, Version::Latest));
        let got: Vec<(&str, &str)> = p.errors.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect();
        assert_eq!(
            got,
            [
                (
                    "metadata.labels[pod-security.kubernetes.io/enforce]",
                    r#"Invalid value: "strict": must be one of privileged, baseline, restricted"#
                ),
                (
                    "metadata.labels[pod-security.kubernetes.io/enforce-version]",
                    r#"Invalid value: "1.25": must be "latest" or "v1.x""#
                ),
                (
                    "metadata.labels[pod-security.kubernetes.io/audit]",
                    r#"Invalid value: "": must be one of privileged, baseline, restricted"#
                ),
                (
                    "metadata.labels[pod-security.kubernetes.io/warn]",
                    r#"Invalid value: "Baseline": must be one of privileged, baseline, restricted"#
                ),
                (
                    "metadata.labels[pod-security.kubernetes.io/warn-version]",
                    r#"Invalid value: "v1.x": must be "latest" or "v1.x""#
                ),
            ]
        );
        assert!(p.errors.iter().all(|c| c.reason == "FieldValueInvalid"));
        let text = p.error_text().unwrap();
        assert!(
            text.starts_with(r#"[metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": "#),
            "{text}"
        );
        assert!(text.ends_with(r#"Invalid value: "v1.x": must be "latest" or "v1.x"]"#), "{text}");
    }

    #[test]
    fn one_error_prints_without_brackets() {
        let p = NamespacePolicy::from_labels(
            Some(&json!({"pod-security.kubernetes.io/enforce": "foo"})),
            &Policy::default(),
        );
        assert_eq!(
            p.error_text().as_deref(),
            Some(
                r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted"#
            )
        );
    }

    #[test]
    fn configured_defaults_fill_missing_labels() {
        let defaults = Policy {
            enforce: lv(Level::Baseline, Version::Minor(25)),
            audit: lv(Level::Restricted, Version::Latest),
            warn: lv(Level::Restricted, Version::Latest),
        };
        let p =
            NamespacePolicy::from_labels(Some(&json!({"pod-security.kubernetes.io/enforce": "restricted"})), &defaults);
        assert_eq!(p.policy.enforce, lv(Level::Restricted, Version::Minor(25)));
        assert_eq!(p.policy.audit, defaults.audit);
    }

    #[test]
    fn equivalence_ignores_privileged_versions() {
        let a = lv(Level::Privileged, Version::Minor(20));
        assert!(a.equivalent(&LevelVersion::privileged()));
        assert!(!lv(Level::Baseline, Version::Minor(20)).equivalent(&lv(Level::Baseline, Version::Latest)));
        assert!(Policy::default().fully_privileged());
    }
}
