//! Core (`v1`) kinds other than Pod and Events, plus Leases.

use std::collections::BTreeSet;

use base64::Engine;
use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::meta;
use super::{IMMUTABLE, arr, names, s};
use apimachinery::error::Cause;

/// `core.MaxSecretSize`: the cap on a Secret's or ConfigMap's data.
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";

fn md(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

fn sorted_keys(v: Option<&Value>) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = v
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn decoded_len(v: &Value) -> usize {
    v.as_str()
        .map(|s| base64::engine::general_purpose::STANDARD.decode(s).map(|b| b.len()).unwrap_or(s.len()))
        .unwrap_or(0)
}

/// `ValidateConfigMap`.
pub fn validate_config_map(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    let mut total = 0;
    let binary = obj.get("binaryData").and_then(Value::as_object);
    for (k, v) in sorted_keys(obj.get("data")) {
        let p = Path::new("data").key(&k);
        out.extend(names::config_map_key(&k).into_iter().map(|m| field::invalid(&p, Bad::s(&k), &m)));
        if binary.is_some_and(|b| b.contains_key(&k)) {
            out.push(field::invalid(&p, Bad::s(&k), "duplicate of key present in binaryData"));
        }
        total += v.as_str().map_or(0, str::len);
    }
    for (k, v) in sorted_keys(obj.get("binaryData")) {
        let p = Path::new("binaryData").key(&k);
        out.extend(names::config_map_key(&k).into_iter().map(|m| field::invalid(&p, Bad::s(&k), &m)));
        total += decoded_len(&v);
    }
    if total > MAX_SECRET_SIZE {
        out.push(field::too_long(&Path::new(""), MAX_SECRET_SIZE));
    }
    out
}

fn immutable_data(new: &Value, old: &Value, keys: &[&str], out: &mut Vec<Cause>) {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        out.push(field::forbidden(&Path::new("immutable"), IMMUTABLE_SET));
    }
    for key in keys {
        let norm = |v: &Value| v.get(*key).filter(|d| d.as_object().is_some_and(|m| !m.is_empty())).cloned();
        if norm(new) != norm(old) {
            out.push(field::forbidden(&Path::new(key), IMMUTABLE_SET));
        }
    }
}

/// `ValidateConfigMapUpdate`.
pub fn validate_config_map_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    immutable_data(new, old, &["data", "binaryData"], &mut out);
    out.extend(validate_config_map(new));
    out
}

/// `ValidateSecret`, including the per-type required keys.
pub fn validate_secret(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    let dp = Path::new("data");
    let data = obj.get("data").and_then(Value::as_object);
    let mut total = 0;
    for (k, v) in sorted_keys(obj.get("data")) {
        out.extend(names::config_map_key(&k).into_iter().map(|m| field::invalid(&dp.key(&k), Bad::s(&k), &m)));
        total += decoded_len(&v);
    }
    if total > MAX_SECRET_SIZE {
        out.push(field::too_long(&dp, MAX_SECRET_SIZE));
    }
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let get = |k: &str| data.and_then(|d| d.get(k)).and_then(Value::as_str);
    let json_ok = |k: &str| {
        get(k)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .is_some_and(|b| serde_json::from_slice::<Map<String, Value>>(&b).is_ok())
    };
    match s(obj, "type") {
        "kubernetes.io/service-account-token" => {
            let name = obj.pointer("/metadata/annotations/kubernetes.io~1service-account.name").and_then(Value::as_str);
            if name.unwrap_or("").is_empty() {
                out.push(field::required(
                    &Path::new("metadata").child("annotations").key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => {
            if !has(".dockercfg") {
                out.push(field::required(&dp.key(".dockercfg"), ""));
            } else if !json_ok(".dockercfg") {
                out.push(field::invalid(
                    &dp.key(".dockercfg"),
                    Bad::s("<secret contents redacted>"),
                    "invalid character in JSON",
                ));
            }
        }
        "kubernetes.io/dockerconfigjson" => {
            if !has(".dockerconfigjson") {
                out.push(field::required(&dp.key(".dockerconfigjson"), ""));
            } else if !json_ok(".dockerconfigjson") {
                out.push(field::invalid(
                    &dp.key(".dockerconfigjson"),
                    Bad::s("<secret contents redacted>"),
                    "invalid character in JSON",
                ));
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            out.push(field::required(&dp.key("username"), ""));
            out.push(field::required(&dp.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if get("ssh-privatekey").unwrap_or("").is_empty() => {
            out.push(field::required(&dp.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            if !has("tls.crt") {
                out.push(field::required(&dp.key("tls.crt"), ""));
            }
            if !has("tls.key") {
                out.push(field::required(&dp.key("tls.key"), ""));
            }
        }
        _ => {}
    }
    out
}

/// `ValidateSecretUpdate`.
pub fn validate_secret_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    if s(new, "type") != s(old, "type") {
        out.push(field::invalid(&Path::new("type"), Bad::s(s(new, "type")), IMMUTABLE));
    }
    immutable_data(new, old, &["data"], &mut out);
    out.extend(validate_secret(new));
    out
}

/// `ValidateServiceAccount`.
pub fn validate_service_account(obj: &Value) -> Vec<Cause> {
    meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true)
}

fn validate_kube_finalizer(f: &str, path: &Path) -> Vec<Cause> {
    let mut out: Vec<Cause> =
        names::qualified_name(f).into_iter().map(|m| field::invalid(path, Bad::s(f), &m)).collect();
    if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
        out.push(field::invalid(
            path,
            Bad::s(f),
            "name is neither a standard finalizer name nor is it fully qualified",
        ));
    }
    out
}

/// `ValidateNamespace`.
pub fn validate_namespace(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), false, names::name_is_dns_label, &Path::new("metadata"), true);
    let fp = Path::new("spec").child("finalizers");
    for f in obj.pointer("/spec/finalizers").and_then(Value::as_array).into_iter().flatten() {
        out.extend(validate_kube_finalizer(f.as_str().unwrap_or(""), &fp));
    }
    out
}

/// `ValidateNamespaceUpdate` (the finalizers and status were carried over by
/// [`crate::defaults::prepare_for_update`]).
pub fn validate_namespace_update(new: &Value, old: &Value) -> Vec<Cause> {
    meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true)
}

fn is_headless(spec: &Value) -> bool {
    let ips = arr(spec, "clusterIPs");
    ips.len() == 1 && ips[0] == "None"
}

fn service_port_go(p: &Value) -> String {
    format!(
        "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
        field::go_quote(s(p, "protocol")),
        p.get("port").and_then(Value::as_i64).unwrap_or(0)
    )
}

pub(crate) fn non_special_ip(ip: &str, path: &Path) -> Vec<Cause> {
    let Some(addr) = names::parse_ip(ip) else { return Vec::new() };
    let msg = match addr {
        std::net::IpAddr::V4(v4) => {
            if v4.is_unspecified() {
                Some("may not be unspecified (0.0.0.0)")
            } else if v4.is_loopback() {
                Some("may not be in the loopback range (127.0.0.0/8, ::1/128)")
            } else if v4.is_link_local() {
                Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
            } else if v4.octets()[..3] == [224, 0, 0] {
                Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
            } else {
                None
            }
        }
        std::net::IpAddr::V6(v6) => {
            let seg = v6.segments();
            if v6.is_unspecified() {
                Some("may not be unspecified (::)")
            } else if v6.is_loopback() {
                Some("may not be in the loopback range (127.0.0.0/8, ::1/128)")
            } else if seg[0] & 0xffc0 == 0xfe80 {
                Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
            } else if seg[0] == 0xff02 {
                Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
            } else {
                None
            }
        }
    };
    msg.map(|m| vec![field::invalid(path, Bad::s(ip), m)]).unwrap_or_default()
}

/// `ValidateService`.
pub fn validate_service(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns1035_label, &Path::new("metadata"), true);
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let sp = Path::new("spec");
    let ty = s(spec, "type");
    let headless = is_headless(spec);
    let ports = arr(spec, "ports");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        out.push(field::required(&sp.child("ports"), ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless => out.push(field::invalid(
            &sp.child("clusterIPs").index(0),
            Bad::s("None"),
            &format!("may not be set to 'None' for {ty} services"),
        )),
        "ExternalName" => {
            if !arr(spec, "clusterIPs").is_empty() {
                out.push(field::forbidden(&sp.child("clusterIPs"), "may not be set for ExternalName services"));
            }
            if !arr(spec, "ipFamilies").is_empty() {
                out.push(field::forbidden(&sp.child("ipFamilies"), "may not be set for ExternalName services"));
            }
            if spec.get("ipFamilyPolicy").is_some_and(|v| !v.is_null()) {
                out.push(field::forbidden(&sp.child("ipFamilyPolicy"), "may not be set for ExternalName services"));
            }
            let cname = s(spec, "externalName").trim_end_matches('.');
            if cname.is_empty() {
                out.push(field::required(&sp.child("externalName"), ""));
            } else {
                out.extend(
                    names::dns1123_subdomain(cname)
                        .into_iter()
                        .map(|m| field::invalid(&sp.child("externalName"), Bad::s(cname), &m)),
                );
            }
        }
        _ => {}
    }
    let mut port_names = BTreeSet::new();
    for (idx, p) in ports.iter().enumerate() {
        let pp = sp.child("ports").index(idx);
        let name = s(p, "name");
        if ports.len() > 1 && name.is_empty() {
            out.push(field::required(&pp.child("name"), ""));
        } else if !name.is_empty() {
            out.extend(
                names::dns1123_label(name).into_iter().map(|m| field::invalid(&pp.child("name"), Bad::s(name), &m)),
            );
            if !port_names.insert(name.to_string()) {
                out.push(field::duplicate(&pp.child("name"), Bad::s(name)));
            }
        }
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        out.extend(names::port_num(port).into_iter().map(|m| field::invalid(&pp.child("port"), Bad::Int(port), &m)));
        let proto = s(p, "protocol");
        if proto.is_empty() {
            out.push(field::required(&pp.child("protocol"), ""));
        } else if !PROTOCOLS.contains(&proto) {
            out.push(field::not_supported(&pp.child("protocol"), Bad::s(proto), PROTOCOLS));
        }
        out.extend(super::pod::validate_port_num_or_name(p.get("targetPort"), &pp.child("targetPort")));
        if let Some(ap) = p.get("appProtocol").and_then(Value::as_str) {
            out.extend(
                names::qualified_name(ap).into_iter().map(|m| field::invalid(&pp.child("appProtocol"), Bad::s(ap), &m)),
            );
        }
    }
    out.extend(meta::validate_labels(spec.get("selector"), &sp.child("selector")));
    match s(spec, "sessionAffinity") {
        "" => out.push(field::required(&sp.child("sessionAffinity"), "")),
        "ClientIP" => {
            let t = spec.pointer("/sessionAffinityConfig/clientIP/timeoutSeconds").and_then(Value::as_i64);
            match t {
                None => out.push(field::required(
                    &sp.child("sessionAffinityConfig").child("clientIP").child("timeoutSeconds"),
                    "",
                )),
                Some(t) if !(1..=86400).contains(&t) => out.push(field::invalid(
                    &sp.child("sessionAffinityConfig").child("clientIP").child("timeoutSeconds"),
                    Bad::Int(t),
                    "must be greater than 0 and less than 86400",
                )),
                _ => {}
            }
        }
        "None" => {
            if spec.get("sessionAffinityConfig").is_some_and(|v| !v.is_null()) {
                out.push(field::forbidden(
                    &sp.child("sessionAffinityConfig"),
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => out.push(field::not_supported(&sp.child("sessionAffinity"), Bad::s(other), &["ClientIP", "None"])),
    }
    out.extend(validate_cluster_ips(spec, ty));
    for (idx, ip) in arr(spec, "externalIPs").iter().enumerate() {
        let ip = ip.as_str().unwrap_or("");
        let p = sp.child("externalIPs").index(idx);
        if !names::is_ip(ip) {
            out.push(field::invalid(&p, Bad::s(ip), names::IP_ERR));
        } else {
            out.extend(non_special_ip(ip, &p));
        }
    }
    const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if ty.is_empty() {
        out.push(field::required(&sp.child("type"), ""));
    } else if !TYPES.contains(&ty) {
        out.push(field::not_supported(&sp.child("type"), Bad::s(ty), TYPES));
    }
    if ty == "ClusterIP" {
        for (idx, p) in ports.iter().enumerate() {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                out.push(field::forbidden(
                    &sp.child("ports").index(idx).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = BTreeSet::new();
    for (idx, p) in ports.iter().enumerate() {
        let np = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if np == 0 {
            continue;
        }
        if !node_ports.insert((s(p, "protocol").to_string(), np)) {
            out.push(field::duplicate(&sp.child("ports").index(idx).child("nodePort"), Bad::Int(np)));
        }
    }
    let mut seen_ports = BTreeSet::new();
    for (idx, p) in ports.iter().enumerate() {
        let key = (s(p, "protocol").to_string(), p.get("port").and_then(Value::as_i64).unwrap_or(0));
        if !seen_ports.insert(key) {
            out.push(field::duplicate(&sp.child("ports").index(idx), Bad::Raw(service_port_go(p))));
        }
    }
    for (idx, cidr) in arr(spec, "loadBalancerSourceRanges").iter().enumerate() {
        let c = cidr.as_str().unwrap_or("").trim();
        if !names::is_cidr(c) {
            out.push(field::invalid(
                &sp.child("loadBalancerSourceRanges").index(idx),
                Bad::s(cidr.as_str().unwrap_or("")),
                "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 ",
            ));
        }
    }
    if ty != "LoadBalancer" && !arr(spec, "loadBalancerSourceRanges").is_empty() {
        out.push(field::forbidden(
            &sp.child("loadBalancerSourceRanges"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    let externally =
        ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && !arr(spec, "externalIPs").is_empty());
    let etp = spec.get("externalTrafficPolicy").and_then(Value::as_str).unwrap_or("");
    if !externally && !etp.is_empty() {
        out.push(field::invalid(
            &sp.child("externalTrafficPolicy"),
            Bad::s(etp),
            "may only be set for externally-accessible services",
        ));
    } else if externally {
        if etp.is_empty() {
            out.push(field::required(&sp.child("externalTrafficPolicy"), ""));
        } else if etp != "Cluster" && etp != "Local" {
            out.push(field::not_supported(&sp.child("externalTrafficPolicy"), Bad::s(etp), &["Cluster", "Local"]));
        }
    }
    if let Some(h) = spec.get("healthCheckNodePort").and_then(Value::as_i64).filter(|h| *h != 0)
        && !(ty == "LoadBalancer" && etp == "Local")
    {
        out.push(field::invalid(
            &sp.child("healthCheckNodePort"),
            Bad::Int(h),
            "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
        ));
    }
    match spec.get("internalTrafficPolicy").and_then(Value::as_str) {
        None if matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP") => {
            out.push(field::required(&sp.child("internalTrafficPolicy"), ""))
        }
        Some(itp) if itp != "Cluster" && itp != "Local" => {
            out.push(field::not_supported(&sp.child("internalTrafficPolicy"), Bad::s(itp), &["Cluster", "Local"]))
        }
        _ => {}
    }
    if ty == "LoadBalancer" {
        if let Some(c) = spec.get("loadBalancerClass").and_then(Value::as_str) {
            out.extend(
                names::qualified_name(c)
                    .into_iter()
                    .map(|m| field::invalid(&sp.child("loadBalancerClass"), Bad::s(c), &m)),
            );
        }
    } else if spec.get("loadBalancerClass").is_some_and(|v| !v.is_null()) {
        out.push(field::forbidden(&sp.child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"));
    }
    if ty != "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_some_and(|v| !v.is_null()) {
        out.push(field::forbidden(
            &sp.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    out
}

/// `ValidateServiceClusterIPsRelatedFields`.
fn validate_cluster_ips(spec: &Value, ty: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    if ty == "ExternalName" {
        return out;
    }
    let sp = Path::new("spec");
    let ips_path = sp.child("clusterIPs");
    let ips = arr(spec, "clusterIPs");
    let ips_go = || Bad::Raw(field::go_string_slice(spec.get("clusterIPs")));
    let cluster_ip = s(spec, "clusterIP");
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            out.push(field::required(&ips_path, ""));
        } else if ips[0].as_str() != Some(cluster_ip) {
            out.push(field::invalid(&ips_path, ips_go(), "first value must match `clusterIP`"));
        }
    } else if !ips.is_empty() {
        out.push(field::invalid(&ips_path, ips_go(), "must be empty when `clusterIP` is not specified"));
    }
    let families = arr(spec, "ipFamilies");
    let mut seen = BTreeSet::new();
    for (idx, f) in families.iter().enumerate() {
        let f = f.as_str().unwrap_or("");
        if f != "IPv4" && f != "IPv6" {
            out.push(field::not_supported(&sp.child("ipFamilies").index(idx), Bad::s(f), &["IPv4", "IPv6"]));
        }
        if !seen.insert(f) {
            out.push(field::duplicate(&sp.child("ipFamilies").index(idx), Bad::s(f)));
        }
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").and_then(Value::as_str) {
        if !["SingleStack", "PreferDualStack", "RequireDualStack"].contains(&policy) {
            out.push(field::not_supported(
                &sp.child("ipFamilyPolicy"),
                Bad::s(policy),
                &["PreferDualStack", "RequireDualStack", "SingleStack"],
            ));
        }
        if policy == "SingleStack" {
            if ips.len() == 2 {
                out.push(field::invalid(
                    &sp.child("ipFamilyPolicy"),
                    Bad::s(policy),
                    "must be RequireDualStack or PreferDualStack when multiple 'clusterIPs' are specified",
                ));
            }
            if families.len() == 2 {
                out.push(field::invalid(
                    &sp.child("ipFamilyPolicy"),
                    Bad::s(policy),
                    "must be RequireDualStack or PreferDualStack when multiple 'ipFamilies' are specified",
                ));
            }
        }
    }
    let mut invalid = false;
    for (idx, ip) in ips.iter().enumerate() {
        let ip = ip.as_str().unwrap_or("");
        if idx == 0 && ip == "None" {
            if ips.len() > 1 {
                invalid = true;
                out.push(field::invalid(&ips_path, ips_go(), "'None' must be the first and only value"));
            }
            continue;
        }
        if !names::is_ip(ip) {
            invalid = true;
            out.push(field::invalid(&ips_path.index(idx), Bad::s(ip), names::IP_ERR));
        }
    }
    if ips.len() > 2 {
        out.push(field::invalid(&ips_path, ips_go(), "may only hold up to 2 values"));
    }
    if invalid {
        return out;
    }
    if ips.len() == 2 {
        let fam = |v: &Value| v.as_str().unwrap_or("").contains(':');
        if fam(&ips[0]) == fam(&ips[1]) {
            out.push(field::invalid(&ips_path, ips_go(), "may specify no more than one IP for each IP family"));
        }
    }
    if !is_headless(spec) {
        for (idx, ip) in ips.iter().enumerate().take(families.len()) {
            let v6 = ip.as_str().unwrap_or("").contains(':');
            match families[idx].as_str() {
                Some("IPv4") if v6 => out.push(field::invalid(
                    &ips_path.index(idx),
                    Bad::json(Some(ip)),
                    &format!("expected an IPv4 value as indicated by `ipFamilies[{idx}]`"),
                )),
                Some("IPv6") if !v6 => out.push(field::invalid(
                    &ips_path.index(idx),
                    Bad::json(Some(ip)),
                    &format!("expected an IPv6 value as indicated by `ipFamilies[{idx}]`"),
                )),
                _ => {}
            }
        }
    }
    out
}

/// `ValidateServiceUpdate`: cluster IPs and families may not change once set (except to or
/// from ExternalName), load balancer class may not change, then the new service revalidated.
pub fn validate_service_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    let empty = Value::Object(Map::new());
    let (ns, os) = (new.get("spec").unwrap_or(&empty), old.get("spec").unwrap_or(&empty));
    let (nt, ot) = (s(ns, "type"), s(os, "type"));
    let ips_bad = || Bad::Raw(field::go_string_slice(ns.get("clusterIPs")));
    let ips0 = Path::new("spec").child("clusterIPs").index(0);
    if nt != "ExternalName" && ot != "ExternalName" && !(is_headless(ns) && is_headless(os)) {
        let (n, o) = (arr(ns, "clusterIPs"), arr(os, "clusterIPs"));
        if n.len() == o.len() {
            for (idx, ip) in o.iter().enumerate() {
                if ip != &n[idx] {
                    out.push(field::invalid(
                        &Path::new("spec").child("clusterIPs").index(idx),
                        ips_bad(),
                        "may not change once set",
                    ));
                }
            }
        } else if o.len() > n.len() {
            if n.is_empty() {
                out.push(field::invalid(&ips0, ips_bad(), "primary clusterIP can not be unset"));
            }
            if !o.is_empty() && !n.is_empty() && n[0] != o[0] {
                out.push(field::invalid(&ips0, ips_bad(), "may not change once set"));
            }
            if n.len() == 1 && ns.get("ipFamilyPolicy").and_then(Value::as_str) != Some("SingleStack") {
                out.push(field::invalid(
                    &Path::new("spec").child("ipFamilyPolicy"),
                    Bad::json(ns.get("ipFamilyPolicy")),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                ));
            }
        } else if !o.is_empty() && n[0] != o[0] {
            out.push(field::invalid(&ips0, ips_bad(), "may not change once set"));
        }
    }
    if nt != "ExternalName" && ot != "ExternalName" && is_headless(ns) == is_headless(os) && !is_headless(ns) {
        let (n, o) = (arr(ns, "ipFamilies"), arr(os, "ipFamilies"));
        let fam_bad = || Bad::Raw(field::go_string_slice(ns.get("ipFamilies")));
        let fam0 = Path::new("spec").child("ipFamilies").index(0);
        if n.len() == o.len() {
            if n != o {
                out.push(field::invalid(&fam0, fam_bad(), "may not change once set"));
            }
        } else if o.len() > n.len() {
            if !n.is_empty() && n[0] != o[0] {
                out.push(field::invalid(&fam0, ips_bad(), "may not change once set"));
            }
        } else if !o.is_empty() && n[0] != o[0] {
            out.push(field::invalid(&fam0, ips_bad(), "may not change once set"));
        }
    }
    if nt == "LoadBalancer" && ot == "LoadBalancer" && ns.get("loadBalancerClass") != os.get("loadBalancerClass") {
        out.push(field::invalid(
            &Path::new("spec").child("loadBalancerClass"),
            Bad::json(ns.get("loadBalancerClass")),
            "may not change once set",
        ));
    }
    out.extend(validate_service(new));
    out
}

/// `ValidateEndpoints`.
pub fn validate_endpoints(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    let sp = Path::new("subsets");
    for (idx, subset) in arr(obj, "subsets").iter().enumerate() {
        let p = sp.index(idx);
        if arr(subset, "addresses").is_empty() && arr(subset, "notReadyAddresses").is_empty() {
            out.push(field::required(&p, "must specify `addresses` or `notReadyAddresses`"));
        }
        for list in ["addresses", "notReadyAddresses"] {
            for (ai, a) in arr(subset, list).iter().enumerate() {
                let ap = p.child(list).index(ai);
                let ip = s(a, "ip");
                if !names::is_ip(ip) {
                    out.push(field::invalid(&ap.child("ip"), Bad::s(ip), names::IP_ERR));
                }
                let host = s(a, "hostname");
                if !host.is_empty() {
                    out.extend(
                        names::dns1123_label(host)
                            .into_iter()
                            .map(|m| field::invalid(&ap.child("hostname"), Bad::s(host), &m)),
                    );
                }
                if let Some(node) = a.get("nodeName").and_then(Value::as_str) {
                    out.extend(
                        names::name_is_dns_subdomain(node, false)
                            .into_iter()
                            .map(|m| field::invalid(&ap.child("nodeName"), Bad::s(node), &m)),
                    );
                }
                out.extend(non_special_ip(ip, &ap.child("ip")));
            }
        }
        let ports = arr(subset, "ports");
        for (pi, port) in ports.iter().enumerate() {
            let pp = p.child("ports").index(pi);
            let name = s(port, "name");
            if ports.len() > 1 && name.is_empty() {
                out.push(field::required(&pp.child("name"), ""));
            } else if !name.is_empty() {
                out.extend(
                    names::dns1123_label(name).into_iter().map(|m| field::invalid(&pp.child("name"), Bad::s(name), &m)),
                );
            }
            let n = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            out.extend(names::port_num(n).into_iter().map(|m| field::invalid(&pp.child("port"), Bad::Int(n), &m)));
            let proto = s(port, "protocol");
            if proto.is_empty() {
                out.push(field::required(&pp.child("protocol"), ""));
            } else if !PROTOCOLS.contains(&proto) {
                out.push(field::not_supported(&pp.child("protocol"), Bad::s(proto), PROTOCOLS));
            }
        }
    }
    out
}

/// `ValidateNode`: name, taints, pod CIDRs, resource quantities.
pub fn validate_node(obj: &Value) -> Vec<Cause> {
    let mp = Path::new("metadata");
    let mut out = meta::validate_object_meta(md(obj), false, names::name_is_dns_subdomain, &mp, true);
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    out.extend(super::pod::validate_node_taints(arr(spec, "taints"), &mp.child("taints")));
    out.extend(validate_node_resources(obj));
    let cidrs = arr(spec, "podCIDRs");
    let cp = Path::new("spec").child("podCIDRs");
    for (idx, c) in cidrs.iter().enumerate() {
        if !names::is_cidr(c.as_str().unwrap_or("")) {
            out.push(field::invalid(
                &cp.index(idx),
                Bad::Raw(field::go_string_slice(spec.get("podCIDRs"))),
                "must be valid CIDR",
            ));
        }
    }
    if cidrs.len() > 1 {
        let v6 = |c: &Value| c.as_str().unwrap_or("").contains(':');
        if cidrs.len() > 2 || v6(&cidrs[0]) == v6(&cidrs[1]) {
            out.push(field::invalid(
                &cp,
                Bad::Raw(field::go_string_slice(spec.get("podCIDRs"))),
                "may specify no more than one CIDR for each IP family",
            ));
        }
    }
    out
}

fn validate_node_resources(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for list in ["capacity", "allocatable"] {
        for (k, v) in sorted_keys(obj.pointer(&format!("/status/{list}"))) {
            let p = Path::new("status").child(list).child(&k);
            match kube_cel::quantity::from_json(&v) {
                Err(e) => out.push(field::invalid(&p, Bad::json(Some(&v)), e)),
                Ok(q) if q.nanos < 0 => out.push(field::invalid(&p, Bad::Str(q.canonical()), super::NEGATIVE)),
                Ok(_) => {}
            }
        }
    }
    out
}

/// `ValidateNodeUpdate`: pod CIDRs and providerID may only go from unset to set.
pub fn validate_node_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mp = Path::new("metadata");
    let mut out = meta::validate_object_meta_update(md(new), md(old), &mp, true);
    out.extend(validate_node_resources(new));
    let mut seen = Vec::new();
    for (idx, a) in new.pointer("/status/addresses").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if seen.contains(&a) {
            out.push(field::duplicate(
                &Path::new("status").child("addresses").index(idx),
                Bad::Raw(field::go_struct(Some(a))),
            ));
        }
        seen.push(a);
    }
    let (n, o) = (new.pointer("/spec/podCIDRs"), old.pointer("/spec/podCIDRs"));
    let old_cidrs = o.and_then(Value::as_array).map_or(0, Vec::len);
    if old_cidrs > 0 && n != o {
        out.push(field::forbidden(
            &Path::new("spec").child("podCIDRs"),
            "node updates may not change podCIDR except from \"\" to valid",
        ));
    }
    let old_provider = old.pointer("/spec/providerID").and_then(Value::as_str).unwrap_or("");
    if !old_provider.is_empty() && new.pointer("/spec/providerID").and_then(Value::as_str).unwrap_or("") != old_provider
    {
        out.push(field::forbidden(
            &Path::new("spec").child("providerID"),
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    let empty = Value::Object(Map::new());
    out.extend(super::pod::validate_node_taints(arr(new.get("spec").unwrap_or(&empty), "taints"), &mp.child("taints")));
    out
}
