//! The Pod Security Standards checks as of Kubernetes v1.30 (kube's `pod-security-admission/policy`),
//! and the registry that picks which of them a level at a version runs, in which order.
//!
//! Each check reads a pod's `metadata` and `spec` in their JSON form, so the same checks run on
//! a pod and on a controller's pod template. A check that fails gives kube's `forbiddenReason`
//! (short, what the namespace-wide warning lists) and `forbiddenDetail` (which containers,
//! which values), worded exactly as kube words them, quirks included: the messages are what
//! users and tests match on.
//!
//! A check has one or more revisions, each from a minimum policy version; a level at version
//! `v1.N` runs, of every check of that level (restricted includes baseline), the newest revision
//! not newer than `N`. A restricted revision may *override* baseline checks it supersedes
//! (`restrictedVolumes` replaces `hostPathVolumes`), so a restricted namespace does not report
//! both. Results come baseline checks first, then restricted ones, each group sorted by check
//! id (byte order, as Go's `sort.Strings`): that order is the order of the Forbidden message.
//!
//! Go's nil and JSON's absent-or-null mean the same here; a field of the wrong JSON type reads
//! as unset (the apiserver decoded the object already, so that only happens to hand-made input).

use std::collections::BTreeSet;

use apimachinery::validation::field::go_quote;
use serde_json::{Map, Value};

use super::policy::{Level, LevelVersion, Version};

/// The newest minimum version of any check in v1.30 (the sysctls added in 1.29): `latest`, and
/// any newer pinned version, evaluate as this one.
pub const MAX_CHECK_VERSION: i64 = 29;

/// A failed check: kube's `CheckResult` with `Allowed: false`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The check's id (`privileged`, `runAsNonRoot`, ...).
    pub check: &'static str,
    /// Short reason (`allowPrivilegeEscalation != false`).
    pub reason: String,
    /// What exactly is wrong (`container "c" must set securityContext.allowPrivilegeEscalation=false`);
    /// may be empty.
    pub detail: String,
}

/// A check revision's verdict: `None` allows, `Some((reason, detail))` forbids.
type Verdict = Option<(String, String)>;
/// One revision of a check, over the pod's `metadata` and `spec`.
type CheckFn = fn(&Value, &Value) -> Verdict;

/// One revision of a check.
struct Revision {
    /// The first `v1.N` it applies to.
    min_minor: i64,
    run: CheckFn,
    /// Baseline checks this restricted revision replaces at the versions it applies to.
    overrides: &'static [&'static str],
}

/// A check and its revisions, oldest first.
struct Check {
    id: &'static str,
    level: Level,
    revisions: &'static [Revision],
}

const fn rev(min_minor: i64, run: CheckFn) -> Revision {
    Revision { min_minor, run, overrides: &[] }
}

const fn rev_over(min_minor: i64, run: CheckFn, overrides: &'static [&'static str]) -> Revision {
    Revision { min_minor, run, overrides }
}

/// Every check, baseline then restricted, each group in id byte order (the evaluation order).
static CHECKS: &[Check] = &[
    Check { id: "appArmorProfile", level: Level::Baseline, revisions: &[rev(0, app_armor_profile_1_0)] },
    Check { id: "capabilities_baseline", level: Level::Baseline, revisions: &[rev(0, capabilities_baseline_1_0)] },
    Check { id: "hostNamespaces", level: Level::Baseline, revisions: &[rev(0, host_namespaces_1_0)] },
    Check { id: "hostPathVolumes", level: Level::Baseline, revisions: &[rev(0, host_path_volumes_1_0)] },
    Check { id: "hostPorts", level: Level::Baseline, revisions: &[rev(0, host_ports_1_0)] },
    Check { id: "privileged", level: Level::Baseline, revisions: &[rev(0, privileged_1_0)] },
    Check { id: "procMount", level: Level::Baseline, revisions: &[rev(0, proc_mount_1_0)] },
    Check { id: "seLinuxOptions", level: Level::Baseline, revisions: &[rev(0, se_linux_options_1_0)] },
    Check {
        id: "seccompProfile_baseline",
        level: Level::Baseline,
        revisions: &[rev(0, seccomp_profile_baseline_1_0), rev(19, seccomp_profile_baseline_1_19)],
    },
    Check {
        id: "sysctls",
        level: Level::Baseline,
        revisions: &[rev(0, sysctls_1_0), rev(27, sysctls_1_27), rev(29, sysctls_1_29)],
    },
    Check { id: "windowsHostProcess", level: Level::Baseline, revisions: &[rev(0, windows_host_process_1_0)] },
    Check {
        id: "allowPrivilegeEscalation",
        level: Level::Restricted,
        revisions: &[rev(8, allow_privilege_escalation_1_8), rev(25, allow_privilege_escalation_1_25)],
    },
    Check {
        id: "capabilities_restricted",
        level: Level::Restricted,
        revisions: &[
            rev_over(22, capabilities_restricted_1_22, &["capabilities_baseline"]),
            rev_over(25, capabilities_restricted_1_25, &["capabilities_baseline"]),
        ],
    },
    Check {
        id: "restrictedVolumes",
        level: Level::Restricted,
        revisions: &[rev_over(0, restricted_volumes_1_0, &["hostPathVolumes"])],
    },
    Check { id: "runAsNonRoot", level: Level::Restricted, revisions: &[rev(0, run_as_non_root_1_0)] },
    Check { id: "runAsUser", level: Level::Restricted, revisions: &[rev(23, run_as_user_1_23)] },
    Check {
        id: "seccompProfile_restricted",
        level: Level::Restricted,
        revisions: &[
            rev_over(19, seccomp_profile_restricted_1_19, &["seccompProfile_baseline"]),
            rev_over(25, seccomp_profile_restricted_1_25, &["seccompProfile_baseline"]),
        ],
    },
];

/// The ids of the checks `lv` runs, in evaluation order.
pub fn check_ids(lv: LevelVersion) -> Vec<&'static str> {
    selected(lv).map(|(check, _)| check.id).collect()
}

/// Runs `lv`'s checks on a pod (or pod template) and returns the failures in kube's order.
/// `metadata` and `spec` are the JSON `metadata` and `spec` (absent parts may be `Null`).
pub fn evaluate(lv: LevelVersion, metadata: &Value, spec: &Value) -> Vec<Violation> {
    selected(lv)
        .filter_map(|(check, revision)| {
            (revision.run)(metadata, spec).map(|(reason, detail)| Violation { check: check.id, reason, detail })
        })
        .collect()
}

/// The checks and revisions `lv` runs, in evaluation order (kube's `checkRegistry`).
fn selected(lv: LevelVersion) -> impl Iterator<Item = (&'static Check, &'static Revision)> {
    let minor = match lv.version {
        Version::Minor(m) if m < MAX_CHECK_VERSION => m,
        _ => MAX_CHECK_VERSION,
    };
    let revision_at = move |check: &'static Check| check.revisions.iter().rev().find(|r| r.min_minor <= minor);
    // Baseline checks replaced by a restricted revision in force at this version.
    let overridden: Vec<&'static str> = if lv.level == Level::Restricted {
        CHECKS
            .iter()
            .filter(|c| c.level == Level::Restricted)
            .filter_map(revision_at)
            .flat_map(|r| r.overrides.iter().copied())
            .collect()
    } else {
        Vec::new()
    };
    CHECKS
        .iter()
        .filter(move |c| match lv.level {
            Level::Privileged => false,
            Level::Baseline => c.level == Level::Baseline,
            Level::Restricted => c.level == Level::Restricted || !overridden.contains(&c.id),
        })
        .filter_map(move |c| revision_at(c).map(|r| (c, r)))
}

// ---------------------------------------------------------------- reading pods

/// Every container, as kube's `visitContainers` visits them: init, regular, ephemeral.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| spec.get(list).and_then(Value::as_array).into_iter().flatten())
}

fn name(container: &Value) -> &str {
    container.get("name").and_then(Value::as_str).unwrap_or("")
}

/// A non-null object field (a Go pointer to a struct that is set).
fn obj<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// `securityContext` of a container or of the pod spec.
fn security_context(v: &Value) -> Option<&Map<String, Value>> {
    obj(v, "securityContext")
}

/// A field of a set `securityContext`, if that field is set (not null).
fn sc_field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    security_context(v).and_then(|sc| sc.get(key)).filter(|f| !f.is_null())
}

fn sc_bool(v: &Value, key: &str) -> Option<bool> {
    sc_field(v, key).and_then(Value::as_bool)
}

/// A string field of a set object: Go's zero value `""` when unset.
fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

fn annotations(metadata: &Value) -> Option<&Map<String, Value>> {
    obj(metadata, "annotations")
}

fn annotation<'a>(metadata: &'a Value, key: &str) -> Option<&'a str> {
    annotations(metadata).and_then(|a| a.get(key)).and_then(Value::as_str)
}

/// `pod.spec.os.name == "windows"`: the restricted checks from 1.25 skip Windows pods, which
/// API validation already keeps from setting the Linux-only fields.
fn is_windows(spec: &Value) -> bool {
    obj(spec, "os").is_some_and(|os| str_of(os, "name") == "windows")
}

// ---------------------------------------------------------------- wording helpers

/// kube's `pluralize`.
fn pluralize<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// kube's `joinQuote`: `"a", "b"` (no escaping, as kube's plain quoting).
fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| format!("\"{}\"", s.as_ref())).collect();
    items.join(", ")
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase(names: &[String]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

/// Pushes `containers "a", "b"` onto `setters` when any container is bad.
fn push_containers(setters: &mut Vec<String>, names: &[String]) {
    if !names.is_empty() {
        setters.push(containers_phrase(names));
    }
}

fn forbid(reason: impl Into<String>, detail: impl Into<String>) -> Verdict {
    Some((reason.into(), detail.into()))
}

// ---------------------------------------------------------------- baseline

/// AppArmor (1.0; the fields since 1.30): profile types `RuntimeDefault` or `Localhost` only,
/// and the beta annotations `runtime/default`, `localhost/*` or empty.
fn app_armor_profile_1_0(metadata: &Value, spec: &Value) -> Verdict {
    const ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
    let allowed_type = |p: &Map<String, Value>| matches!(str_of(p, "type"), "RuntimeDefault" | "Localhost");
    let mut setters = Vec::new();
    let mut bad_values = BTreeSet::new();
    if let Some(p) = sc_field(spec, "appArmorProfile").and_then(Value::as_object).filter(|p| !allowed_type(p)) {
        setters.push("pod".to_string());
        bad_values.insert(str_of(p, "type").to_string());
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        if let Some(p) = sc_field(c, "appArmorProfile").and_then(Value::as_object).filter(|p| !allowed_type(p)) {
            bad_containers.push(name(c).to_string());
            bad_values.insert(str_of(p, "type").to_string());
        }
    }
    push_containers(&mut setters, &bad_containers);
    let mut forbidden_annotations: Vec<String> = annotations(metadata)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(ANNOTATION_PREFIX))
        .filter_map(|(k, v)| {
            let v = v.as_str().unwrap_or("");
            let allowed = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
            (!allowed).then(|| format!("{k}={}", go_quote(v)))
        })
        .collect();
    let mut bad_list: Vec<String> = bad_values.into_iter().collect();
    if !forbidden_annotations.is_empty() {
        forbidden_annotations.sort();
        setters.push(pluralize("annotation", "annotations", forbidden_annotations.len()).to_string());
        bad_list.extend(forbidden_annotations);
    }
    if setters.is_empty() {
        return None;
    }
    // kube quotes the already-quoted annotation values again: `"key="unconfined""`.
    forbid(
        pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", bad_list.len()),
        format!("{} must not set AppArmor profile type to {}", setters.join(" and "), join_quote(&bad_list)),
    )
}

/// Capabilities kube's default container runtime set grants; adding anything else is forbidden.
const DEFAULT_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn capability_list<'a>(container: &'a Value, list: &str) -> impl Iterator<Item = &'a str> {
    sc_field(container, "capabilities")
        .and_then(|c| c.get(list))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| c.as_str().unwrap_or(""))
}

/// Capabilities (1.0): only the default set may be added.
fn capabilities_baseline_1_0(_: &Value, spec: &Value) -> Verdict {
    let mut bad_containers = Vec::new();
    let mut bad_caps = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for cap in capability_list(c, "add") {
            if !DEFAULT_CAPABILITIES.contains(&cap) {
                valid = false;
                bad_caps.insert(cap);
            }
        }
        if !valid {
            bad_containers.push(name(c).to_string());
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbid(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(bad_caps)
        ),
    )
}

/// Host namespaces (1.0): hostNetwork, hostPID, hostIPC must not be true.
fn host_namespaces_1_0(_: &Value, spec: &Value) -> Verdict {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|k| spec.get(*k).and_then(Value::as_bool) == Some(true))
        .map(|k| format!("{k}=true"))
        .collect();
    if set.is_empty() { None } else { forbid("host namespaces", set.join(", ")) }
}

/// A volume's source field if set (`hostPath`, `nfs`, ...): JSON null is unset.
fn volume_has(volume: &Value, source: &str) -> bool {
    volume.get(source).is_some_and(|s| !s.is_null())
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec.get("volumes").and_then(Value::as_array).into_iter().flatten()
}

/// HostPath volumes (1.0): forbidden.
fn host_path_volumes_1_0(_: &Value, spec: &Value) -> Verdict {
    let bad: Vec<String> = volumes(spec).filter(|v| volume_has(v, "hostPath")).map(|v| name(v).to_string()).collect();
    if bad.is_empty() {
        return None;
    }
    forbid("hostPath volumes", format!("{} {}", pluralize("volume", "volumes", bad.len()), join_quote(&bad)))
}

/// Host ports (1.0): every `hostPort` must be unset or 0.
fn host_ports_1_0(_: &Value, spec: &Value) -> Verdict {
    let mut bad_containers = Vec::new();
    // Go's sets.String of strconv.Itoa values: sorted as strings.
    let mut ports = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for port in c.get("ports").and_then(Value::as_array).into_iter().flatten() {
            let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host_port != 0 {
                valid = false;
                ports.insert(host_port.to_string());
            }
        }
        if !valid {
            bad_containers.push(name(c).to_string());
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    forbid(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

/// Privileged containers (1.0): `securityContext.privileged` must not be true.
fn privileged_1_0(_: &Value, spec: &Value) -> Verdict {
    let bad: Vec<String> =
        containers(spec).filter(|c| sc_bool(c, "privileged") == Some(true)).map(|c| name(c).to_string()).collect();
    if bad.is_empty() {
        return None;
    }
    forbid("privileged", format!("{} must not set securityContext.privileged=true", containers_phrase(&bad)))
}

/// /proc mount (1.0): `procMount` unset or `Default`.
fn proc_mount_1_0(_: &Value, spec: &Value) -> Verdict {
    let mut bad_containers = Vec::new();
    let mut bad_types = BTreeSet::new();
    for c in containers(spec) {
        if let Some(t) = sc_field(c, "procMount") {
            let t = t.as_str().unwrap_or("");
            if t != "Default" {
                bad_containers.push(name(c).to_string());
                bad_types.insert(t);
            }
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbid(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(bad_types)
        ),
    )
}

/// SELinux (1.0): type empty or one of the container types; user and role unset.
fn se_linux_options_1_0(_: &Value, spec: &Value) -> Verdict {
    const ALLOWED_TYPES: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];
    let mut bad_types = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |opts: &Map<String, Value>| {
        let mut ok = true;
        let t = str_of(opts, "type");
        if !ALLOWED_TYPES.contains(&t) {
            ok = false;
            bad_types.insert(t.to_string());
        }
        if !str_of(opts, "user").is_empty() {
            ok = false;
            set_user = true;
        }
        if !str_of(opts, "role").is_empty() {
            ok = false;
            set_role = true;
        }
        ok
    };
    let mut setters = Vec::new();
    if sc_field(spec, "seLinuxOptions").and_then(Value::as_object).is_some_and(|opts| !valid(opts)) {
        setters.push("pod".to_string());
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        if sc_field(c, "seLinuxOptions").and_then(Value::as_object).is_some_and(|opts| !valid(opts)) {
            bad_containers.push(name(c).to_string());
        }
    }
    push_containers(&mut setters, &bad_containers);
    if setters.is_empty() {
        return None;
    }
    // As in v1.30's kube, the user and role notes are only written when a bad type was also
    // found (kube nests them under that branch; 1.31 moved them out).
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        data.push(format!("{} {}", pluralize("type", "types", bad_types.len()), join_quote(&bad_types)));
        if set_user {
            data.push("user may not be set".to_string());
        }
        if set_role {
            data.push("role may not be set".to_string());
        }
    }
    forbid(
        "seLinuxOptions",
        format!("{} set forbidden securityContext.seLinuxOptions: {}", setters.join(" and "), data.join("; ")),
    )
}

const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// Seccomp annotations (1.0-1.18): `runtime/default`, `docker/default` or `localhost/*`.
fn seccomp_profile_baseline_1_0(metadata: &Value, spec: &Value) -> Verdict {
    let valid = |v: &str| v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/");
    let mut forbidden = BTreeSet::new();
    if let Some(v) = annotation(metadata, SECCOMP_POD_ANNOTATION).filter(|v| !valid(v)) {
        forbidden.insert(format!("{SECCOMP_POD_ANNOTATION}={}", go_quote(v)));
    }
    for c in containers(spec) {
        let key = format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", name(c));
        if let Some(v) = annotation(metadata, &key).filter(|v| !valid(v)) {
            forbidden.insert(format!("{key}={}", go_quote(v)));
        }
    }
    if forbidden.is_empty() {
        return None;
    }
    let list: Vec<String> = forbidden.into_iter().collect();
    forbid(
        "seccompProfile",
        format!("forbidden {} {}", pluralize("annotation", "annotations", list.len()), list.join(", ")),
    )
}

/// Whether a set `seccompProfile` has an allowed type.
fn valid_seccomp(profile: &Map<String, Value>) -> bool {
    matches!(str_of(profile, "type"), "RuntimeDefault" | "Localhost")
}

/// The explicitly bad seccomp setters: `pod` and the containers setting a type other than
/// `RuntimeDefault`/`Localhost`; also whether the pod level sets a good one, and which
/// containers set none.
struct SeccompSetters {
    setters: Vec<String>,
    bad_values: BTreeSet<String>,
    unset_containers: Vec<String>,
    pod_valid: bool,
}

fn seccomp_setters(spec: &Value) -> SeccompSetters {
    let mut s = SeccompSetters {
        setters: Vec::new(),
        bad_values: BTreeSet::new(),
        unset_containers: Vec::new(),
        pod_valid: false,
    };
    if let Some(p) = sc_field(spec, "seccompProfile").and_then(Value::as_object) {
        if valid_seccomp(p) {
            s.pod_valid = true;
        } else {
            s.setters.push("pod".to_string());
            s.bad_values.insert(str_of(p, "type").to_string());
        }
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        match sc_field(c, "seccompProfile").and_then(Value::as_object) {
            Some(p) if !valid_seccomp(p) => {
                bad_containers.push(name(c).to_string());
                s.bad_values.insert(str_of(p, "type").to_string());
            }
            Some(_) => {}
            None => s.unset_containers.push(name(c).to_string()),
        }
    }
    push_containers(&mut s.setters, &bad_containers);
    s
}

fn seccomp_bad_setters(s: &SeccompSetters) -> Verdict {
    if s.setters.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            s.setters.join(" and "),
            join_quote(&s.bad_values)
        ),
    )
}

/// Seccomp fields (1.19+): if set, `RuntimeDefault` or `Localhost`.
fn seccomp_profile_baseline_1_19(_: &Value, spec: &Value) -> Verdict {
    seccomp_bad_setters(&seccomp_setters(spec))
}

/// The sysctls v1.0 deems safe.
const SAFE_SYSCTLS_1_0: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];
/// Added in 1.27.
const SAFE_SYSCTLS_1_27: &[&str] = &["net.ipv4.ip_local_reserved_ports"];
/// Added in 1.29.
const SAFE_SYSCTLS_1_29: &[&str] = &[
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

fn sysctls(spec: &Value, safe: &[&[&str]]) -> Verdict {
    let forbidden: Vec<&str> = security_context(spec)
        .and_then(|sc| sc.get("sysctls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| s.get("name").and_then(Value::as_str).unwrap_or(""))
        .filter(|n| !safe.iter().any(|set| set.contains(n)))
        .collect();
    if forbidden.is_empty() { None } else { forbid("forbidden sysctls", forbidden.join(", ")) }
}

/// Sysctls (1.0): the safe set only.
fn sysctls_1_0(_: &Value, spec: &Value) -> Verdict {
    sysctls(spec, &[SAFE_SYSCTLS_1_0])
}

/// Sysctls (1.27): plus `ip_local_reserved_ports`.
fn sysctls_1_27(_: &Value, spec: &Value) -> Verdict {
    sysctls(spec, &[SAFE_SYSCTLS_1_0, SAFE_SYSCTLS_1_27])
}

/// Sysctls (1.29): plus the TCP keepalive and fin timeout ones.
fn sysctls_1_29(_: &Value, spec: &Value) -> Verdict {
    sysctls(spec, &[SAFE_SYSCTLS_1_0, SAFE_SYSCTLS_1_27, SAFE_SYSCTLS_1_29])
}

fn host_process(v: &Value) -> bool {
    sc_field(v, "windowsOptions").and_then(|w| w.get("hostProcess")).and_then(Value::as_bool) == Some(true)
}

/// Windows HostProcess (1.0): `windowsOptions.hostProcess` must not be true.
fn windows_host_process_1_0(_: &Value, spec: &Value) -> Verdict {
    let bad: Vec<String> = containers(spec).filter(|c| host_process(c)).map(|c| name(c).to_string()).collect();
    let mut setters = Vec::new();
    if host_process(spec) {
        setters.push("pod".to_string());
    }
    push_containers(&mut setters, &bad);
    if setters.is_empty() {
        return None;
    }
    forbid(
        "hostProcess",
        format!("{} must not set securityContext.windowsOptions.hostProcess=true", setters.join(" and ")),
    )
}

// ---------------------------------------------------------------- restricted

/// Privilege escalation (1.8): every container sets `allowPrivilegeEscalation: false`.
fn allow_privilege_escalation_1_8(_: &Value, spec: &Value) -> Verdict {
    let bad: Vec<String> = containers(spec)
        .filter(|c| sc_bool(c, "allowPrivilegeEscalation") != Some(false))
        .map(|c| name(c).to_string())
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "allowPrivilegeEscalation != false",
        format!("{} must set securityContext.allowPrivilegeEscalation=false", containers_phrase(&bad)),
    )
}

/// Privilege escalation (1.25): Windows pods exempt.
fn allow_privilege_escalation_1_25(metadata: &Value, spec: &Value) -> Verdict {
    if is_windows(spec) { None } else { allow_privilege_escalation_1_8(metadata, spec) }
}

/// Capabilities (1.22): drop `ALL`, add nothing but `NET_BIND_SERVICE`.
fn capabilities_restricted_1_22(_: &Value, spec: &Value) -> Verdict {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden_caps = BTreeSet::new();
    for c in containers(spec) {
        if sc_field(c, "capabilities").and_then(Value::as_object).is_none() {
            missing_drop_all.push(name(c).to_string());
            continue;
        }
        if !capability_list(c, "drop").any(|cap| cap == "ALL") {
            missing_drop_all.push(name(c).to_string());
        }
        let mut added_forbidden = false;
        for cap in capability_list(c, "add") {
            if cap != "NET_BIND_SERVICE" {
                added_forbidden = true;
                forbidden_caps.insert(cap);
            }
        }
        if added_forbidden {
            adding_forbidden.push(name(c).to_string());
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(&forbidden_caps)
        ));
    }
    if details.is_empty() { None } else { forbid("unrestricted capabilities", details.join("; ")) }
}

/// Capabilities (1.25): Windows pods exempt.
fn capabilities_restricted_1_25(metadata: &Value, spec: &Value) -> Verdict {
    if is_windows(spec) { None } else { capabilities_restricted_1_22(metadata, spec) }
}

/// Volume sources restricted pods may use.
const ALLOWED_VOLUME_SOURCES: &[&str] =
    &["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"];
/// The other v1.30 volume sources, in kube's order of looking (a volume has one).
const RESTRICTED_VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// Volume types (1.0): only the allowed sources. A volume naming no source of v1.30 is allowed:
/// kube decodes unknown fields away and defaults a source-less volume to `emptyDir`.
fn restricted_volumes_1_0(_: &Value, spec: &Value) -> Verdict {
    let mut bad = Vec::new();
    let mut bad_types = BTreeSet::new();
    for v in volumes(spec) {
        if ALLOWED_VOLUME_SOURCES.iter().any(|s| volume_has(v, s)) {
            continue;
        }
        if let Some(source) = RESTRICTED_VOLUME_SOURCES.iter().find(|s| volume_has(v, s)) {
            bad.push(name(v).to_string());
            bad_types.insert(*source);
        }
    }
    if bad.is_empty() {
        return None;
    }
    forbid(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("restricted volume type", "restricted volume types", bad_types.len()),
            join_quote(bad_types)
        ),
    )
}

/// Non-root (1.0): `runAsNonRoot: true` on the pod or on every container, never false.
fn run_as_non_root_1_0(_: &Value, spec: &Value) -> Verdict {
    let mut setters = Vec::new();
    let mut pod_non_root = false;
    match sc_bool(spec, "runAsNonRoot") {
        Some(false) => setters.push("pod".to_string()),
        Some(true) => pod_non_root = true,
        None => {}
    }
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for c in containers(spec) {
        match sc_bool(c, "runAsNonRoot") {
            Some(false) => explicitly_bad.push(name(c).to_string()),
            Some(true) => {}
            None if !pod_non_root => implicitly_bad.push(name(c).to_string()),
            None => {}
        }
    }
    push_containers(&mut setters, &explicitly_bad);
    if !setters.is_empty() {
        return forbid(
            "runAsNonRoot != true",
            format!("{} must not set securityContext.runAsNonRoot=false", setters.join(" and ")),
        );
    }
    if !implicitly_bad.is_empty() {
        return forbid(
            "runAsNonRoot != true",
            format!("pod or {} must set securityContext.runAsNonRoot=true", containers_phrase(&implicitly_bad)),
        );
    }
    None
}

fn runs_as_root(v: &Value) -> bool {
    sc_field(v, "runAsUser").and_then(Value::as_i64) == Some(0)
}

/// Non-root user (1.23): `runAsUser` must not be 0 on the pod or any container.
fn run_as_user_1_23(_: &Value, spec: &Value) -> Verdict {
    let mut setters = Vec::new();
    if runs_as_root(spec) {
        setters.push("pod".to_string());
    }
    let bad: Vec<String> = containers(spec).filter(|c| runs_as_root(c)).map(|c| name(c).to_string()).collect();
    push_containers(&mut setters, &bad);
    if setters.is_empty() {
        return None;
    }
    forbid("runAsUser=0", format!("{} must not set runAsUser=0", setters.join(" and ")))
}

/// Seccomp (1.19): the pod or every container sets `RuntimeDefault` or `Localhost`.
fn seccomp_profile_restricted_1_19(_: &Value, spec: &Value) -> Verdict {
    let s = seccomp_setters(spec);
    if let Some(v) = seccomp_bad_setters(&s) {
        return Some(v);
    }
    if s.pod_valid || s.unset_containers.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            containers_phrase(&s.unset_containers)
        ),
    )
}

/// Seccomp (1.25): Windows pods exempt.
fn seccomp_profile_restricted_1_25(metadata: &Value, spec: &Value) -> Verdict {
    if is_windows(spec) { None } else { seccomp_profile_restricted_1_19(metadata, spec) }
}

#[cfg(test)]
mod tests;
