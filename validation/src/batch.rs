//! `batch/v1` validation (`pkg/apis/batch/validation`): Job and CronJob, with the cron
//! schedule parsed as `robfig/cron/v3`'s `ParseStandard` parses it (and worded as it words
//! its errors).

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::meta::{self, Selector};
use super::pod;
use super::{IMMUTABLE, NEGATIVE, names, s};
use apimachinery::error::Cause;

const MAX_PARALLELISM_INDEXED: i64 = 100_000;

fn md(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

fn nonneg(v: &Value, key: &str, path: &Path, out: &mut Vec<Cause>) {
    if let Some(n) = v.get(key).and_then(Value::as_i64).filter(|n| *n < 0) {
        out.push(field::invalid(&path.child(key), Bad::Int(n), NEGATIVE));
    }
}

/// `validateJobSpec`: what a Job and a CronJob's job template share.
fn validate_job_spec(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for key in ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"] {
        nonneg(spec, key, path, &mut out);
    }
    nonneg(spec, "backoffLimitPerIndex", path, &mut out);
    let mode = spec.get("completionMode").and_then(Value::as_str);
    if let Some(mode) = mode {
        if mode != "NonIndexed" && mode != "Indexed" {
            out.push(field::not_supported(&path.child("completionMode"), Bad::s(mode), &["NonIndexed", "Indexed"]));
        }
        if mode == "Indexed" {
            if spec.get("completions").is_none_or(Value::is_null) {
                out.push(field::required(&path.child("completions"), "when completion mode is Indexed"));
            }
            if let Some(p) = spec.get("parallelism").and_then(Value::as_i64)
                && p > MAX_PARALLELISM_INDEXED
            {
                out.push(field::invalid(
                    &path.child("parallelism"),
                    Bad::Int(p),
                    &format!("must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed"),
                ));
            }
        }
    }
    if mode != Some("Indexed") {
        if spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null()) {
            out.push(field::forbidden(&path.child("backoffLimitPerIndex"), "requires indexed completion mode"));
        }
        if spec.get("maxFailedIndexes").is_some_and(|v| !v.is_null()) {
            out.push(field::forbidden(&path.child("maxFailedIndexes"), "requires indexed completion mode"));
        }
    }
    if let Some(prp) = spec.get("podReplacementPolicy").and_then(Value::as_str) {
        let has_failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
        if has_failure_policy && prp != "Failed" {
            out.push(field::not_supported(&path.child("podReplacementPolicy"), Bad::s(prp), &["Failed"]));
        } else if prp != "Failed" && prp != "TerminatingOrFailed" {
            out.push(field::not_supported(
                &path.child("podReplacementPolicy"),
                Bad::s(prp),
                &["TerminatingOrFailed", "Failed"],
            ));
        }
    }
    let template = spec.get("template").cloned().unwrap_or(Value::Object(Map::new()));
    out.extend(pod::validate_pod_template_spec(&template, &path.child("template")));
    let restart_path = path.child("template").child("spec").child("restartPolicy");
    match template.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("") {
        "Always" | "" => out.push(field::required(&restart_path, "valid values: \"OnFailure\", \"Never\"")),
        "OnFailure" if spec.get("podFailurePolicy").is_some_and(|v| !v.is_null()) => out.push(field::invalid(
            &restart_path,
            Bad::s("OnFailure"),
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => {}
        other => out.push(field::not_supported(&restart_path, Bad::s(other), &["OnFailure", "Never"])),
    }
    out
}

/// `ValidateJobSpec`: the job spec plus a selector that matches the template.
fn validate_job_spec_with_selector(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = validate_job_spec(spec, path);
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => out.push(field::required(&path.child("selector"), "")),
        Some(sel) => out.extend(meta::validate_label_selector(Some(sel), &path.child("selector"))),
    }
    let selector = meta::as_selector(spec.get("selector"));
    if selector != Selector::Invalid
        && !meta::selector_matches(&selector, spec.pointer("/template/metadata/labels").and_then(Value::as_object))
    {
        out.push(field::invalid(
            &path.child("template").child("metadata").child("labels"),
            Bad::Raw(field::go_string_map(spec.pointer("/template/metadata/labels").and_then(Value::as_object))),
            "`selector` does not match template `labels`",
        ));
    }
    out
}

/// `validateGeneratedSelector`: with a generated selector, the template must carry the
/// generated labels and the selector must select them.
fn validate_generated_selector(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return out;
    }
    let Some(labels) = spec.pointer("/template/metadata/labels").and_then(Value::as_object) else { return out };
    let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) else { return out };
    let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if uid.is_empty() {
        out.push(field::required(&Path::new("metadata").child("uid"), ""));
    }
    let tp = Path::new("spec").child("template").child("metadata");
    let mut expected = Map::new();
    for (key, want) in [
        ("controller-uid", uid),
        ("job-name", name),
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
    ] {
        match labels.get(key).and_then(Value::as_str) {
            None => out.push(field::required(&tp.child("labels").key(key), &format!("must be '{want}'"))),
            Some(v) if v != want => out.push(field::invalid(
                &tp.child("labels").key(key),
                Bad::Raw(field::go_string_map(Some(labels))),
                &format!("must be '{want}'"),
            )),
            Some(_) => {}
        }
        expected.insert(key.to_string(), Value::String(want.to_string()));
    }
    let selector = meta::as_selector(Some(sel));
    if !meta::selector_matches(&selector, Some(&expected)) {
        out.push(field::invalid(
            &Path::new("spec").child("selector"),
            Bad::Raw(field::go_label_selector(Some(sel))),
            "`selector` not auto-generated",
        ));
    }
    out
}

/// `ValidateJob` (create).
pub fn validate_job(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    out.extend(validate_generated_selector(obj));
    let spec = obj.get("spec").cloned().unwrap_or(Value::Object(Map::new()));
    out.extend(validate_job_spec_with_selector(&spec, &Path::new("spec")));
    if spec.get("completionMode").and_then(Value::as_str) == Some("Indexed")
        && let Some(c) = spec.get("completions").and_then(Value::as_i64).filter(|c| *c > 0)
    {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        let hostname = format!("{name}-{}", c - 1);
        if !names::dns1123_label(&hostname).is_empty() {
            out.push(field::invalid(
                &Path::new("metadata").child("name"),
                Bad::s(name),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    out
}

fn template_mutable_parts_stripped(spec: &Value) -> Value {
    let mut t = spec.get("template").cloned().unwrap_or(Value::Null);
    if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("labels");
        m.remove("annotations");
    }
    if let Some(m) = t.get_mut("spec").and_then(Value::as_object_mut) {
        for k in ["nodeSelector", "affinity", "tolerations", "schedulingGates"] {
            m.remove(k);
        }
    }
    t
}

/// The Job strategy's `ValidateUpdate`: the spec revalidated; selector, completion mode, pod
/// failure policy immutable; completions mutable only for Indexed jobs in step with
/// parallelism; the template immutable except scheduling directives of a suspended job that
/// never started.
pub fn validate_job_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    let empty = Value::Object(Map::new());
    let (ns, os) = (new.get("spec").unwrap_or(&empty), old.get("spec").unwrap_or(&empty));
    let sp = Path::new("spec");
    out.extend(validate_job_spec_with_selector(ns, &sp));
    let indexed = ns.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    if ns.get("completions") != os.get("completions") {
        match (indexed, ns.get("completions").and_then(Value::as_i64)) {
            (false, _) => {
                out.push(field::invalid(&sp.child("completions"), Bad::json(ns.get("completions")), IMMUTABLE))
            }
            (true, Some(c)) if Some(c) != ns.get("parallelism").and_then(Value::as_i64) => out.push(field::invalid(
                &sp.child("completions"),
                Bad::Int(c),
                "can only be modified in tandem with spec.parallelism",
            )),
            _ => {}
        }
    }
    if ns.get("selector") != os.get("selector") {
        out.push(field::invalid(
            &sp.child("selector"),
            Bad::Raw(field::go_label_selector(ns.get("selector"))),
            IMMUTABLE,
        ));
    }
    let suspended_never_started = os.get("suspend").and_then(Value::as_bool) == Some(true)
        && old.pointer("/status/startTime").is_none_or(Value::is_null);
    let template_changed = if suspended_never_started {
        template_mutable_parts_stripped(ns) != template_mutable_parts_stripped(os)
    } else {
        ns.get("template") != os.get("template")
    };
    if template_changed {
        out.extend(pod::immutable_template(ns.get("template"), os.get("template"), &sp.child("template")));
    }
    for key in ["completionMode", "podFailurePolicy", "backoffLimitPerIndex"] {
        if ns.get(key) != os.get(key) {
            let v = ns.get(key);
            let bad = if v.is_some_and(Value::is_object) { Bad::Raw(field::go_struct(v)) } else { Bad::json(v) };
            out.push(field::invalid(&sp.child(key), bad, IMMUTABLE));
        }
    }
    out
}

/// `ValidateCronJobCreate`.
pub fn validate_cronjob(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    let spec = obj.get("spec").cloned().unwrap_or(Value::Object(Map::new()));
    out.extend(validate_cronjob_spec(&spec, None, &Path::new("spec")));
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if name.len() > 52 {
        out.push(field::invalid(
            &Path::new("metadata").child("name"),
            Bad::s(name),
            "must be no more than 52 characters",
        ));
    }
    out
}

/// `ValidateCronJobUpdate`.
pub fn validate_cronjob_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    let spec = new.get("spec").cloned().unwrap_or(Value::Object(Map::new()));
    out.extend(validate_cronjob_spec(&spec, old.get("spec"), &Path::new("spec")));
    out
}

fn validate_cronjob_spec(spec: &Value, old: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let schedule = s(spec, "schedule");
    if schedule.is_empty() {
        out.push(field::required(&path.child("schedule"), ""));
    } else {
        let allow_tz = old.is_some_and(|o| s(o, "schedule").contains("TZ"));
        if let Err(e) = parse_standard(schedule) {
            out.push(field::invalid(&path.child("schedule"), Bad::s(schedule), &e));
        }
        if allow_tz && schedule.contains("TZ") && spec.get("timeZone").is_some_and(|t| !t.is_null()) {
            out.push(field::invalid(
                &path.child("schedule"),
                Bad::s(schedule),
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            out.push(field::invalid(
                &path.child("schedule"),
                Bad::s(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    nonneg(spec, "startingDeadlineSeconds", path, &mut out);
    if old.is_none_or(|o| o.get("timeZone") != spec.get("timeZone"))
        && let Some(tz) = spec.get("timeZone").and_then(Value::as_str)
    {
        out.extend(validate_time_zone(tz, &path.child("timeZone")));
    }
    match s(spec, "concurrencyPolicy") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => out.push(field::required(&path.child("concurrencyPolicy"), "")),
        other => out.push(field::not_supported(
            &path.child("concurrencyPolicy"),
            Bad::s(other),
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let jt = path.child("jobTemplate");
    let job_spec = spec.pointer("/jobTemplate/spec").cloned().unwrap_or(Value::Object(Map::new()));
    out.extend(validate_job_spec(&job_spec, &jt.child("spec")));
    if let Some(sel) = job_spec.get("selector").filter(|s| !s.is_null()) {
        out.push(field::invalid(
            &jt.child("spec").child("selector"),
            Bad::Raw(field::go_label_selector(Some(sel))),
            "`selector` will be auto-generated",
        ));
    }
    if job_spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        out.push(field::not_supported(&jt.child("spec").child("manualSelector"), Bad::Bool(true), &["nil", "false"]));
    }
    nonneg(spec, "successfulJobsHistoryLimit", path, &mut out);
    nonneg(spec, "failedJobsHistoryLimit", path, &mut out);
    out
}

fn validate_time_zone(tz: &str, path: &Path) -> Vec<Cause> {
    if tz.is_empty() {
        return vec![field::invalid(path, Bad::s(tz), "timeZone must be nil or non-empty string")];
    }
    let part_ok = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_+".contains(&b))
    };
    if !tz.split('/').all(part_ok) {
        return vec![field::invalid(path, Bad::s(tz), &format!("unknown time zone {tz}"))];
    }
    if tz.eq_ignore_ascii_case("local") {
        return vec![field::invalid(
            path,
            Bad::s(tz),
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        )];
    }
    Vec::new()
}

struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// Go's `strconv.Atoi` error text.
fn atoi(expr: &str) -> Result<i64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {}: invalid syntax", field::go_quote(expr)));
    }
    expr.parse::<i64>().map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", field::go_quote(expr)))
}

fn must_parse_int(expr: &str) -> Result<u64, String> {
    let n = atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    Ok(n as u64)
}

fn parse_int_or_name(expr: &str, b: &Bounds) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(expr)
}

fn get_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end);
    if low_high[0] == "*" || low_high[0] == "?" {
        start = b.min;
        end = b.max;
    } else {
        start = parse_int_or_name(low_high[0], b)?;
        end = match low_high.len() {
            1 => start,
            2 => parse_int_or_name(low_high[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", b.min));
    }
    if end > b.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", b.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// `cron.ParseStandard`: five fields or a descriptor; `Err` carries robfig/cron's message.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(sp) = spec.find(' ') else { return Err(format!("provided bad location {spec}: unknown time zone")) };
        spec = spec[sp..].trim();
    }
    if let Some(desc) = spec.strip_prefix('@') {
        return match desc {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => Ok(()),
            d if d.starts_with("every ") => {
                let dur = &spec["@every ".len()..];
                if parse_go_duration(dur) {
                    Ok(())
                } else {
                    Err(format!("failed to parse duration {spec}: time: invalid duration {}", field::go_quote(dur)))
                }
            }
            _ => Err(format!("unrecognized descriptor: {spec}")),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    for (f, b) in fields.iter().zip([&MINUTES, &HOURS, &DOM, &MONTHS, &DOW]) {
        for expr in f.split(',').filter(|e| !e.is_empty()) {
            get_range(expr, b)?;
        }
    }
    Ok(())
}

/// Whether Go's `time.ParseDuration` accepts `s` (`1h30m`, `90s`, `1.5h`).
fn parse_go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_end == 0 || rest[..num_end] == *"." {
            return false;
        }
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        if !["ns", "us", "µs", "μs", "ms", "s", "m", "h"].contains(&&rest[..unit_end]) {
            return false;
        }
        rest = &rest[unit_end..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_schedules() {
        assert!(parse_standard("*/5 * * * *").is_ok());
        assert!(parse_standard("0 0 * * MON-FRI").is_ok());
        assert!(parse_standard("@hourly").is_ok());
        assert!(parse_standard("@every 1h30m").is_ok());
        assert_eq!(parse_standard("foo").unwrap_err(), "expected exactly 5 fields, found 1: [foo]");
        assert_eq!(parse_standard("61 * * * *").unwrap_err(), "end of range (61) above maximum (59): 61");
        assert_eq!(
            parse_standard("x * * * *").unwrap_err(),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(parse_standard("@foo").unwrap_err(), "unrecognized descriptor: @foo");
        assert_eq!(parse_standard("* * 0 * *").unwrap_err(), "beginning of range (0) below minimum (1): 0");
    }
}
