//! NetworkPolicy and EndpointSlice: the rules users hit, with kube 1.30's field paths and
//! messages (kube: `pkg/apis/networking/validation`, `pkg/apis/discovery/validation`).

use std::collections::HashSet;

use serde_json::Value;

use super::field::{self, Bad, Path};
use super::{arr, meta, names, s};
use apimachinery::error::Cause;

const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];

/// `ValidateNetworkPolicyPort`.
fn policy_port(port: &Value, path: &Path, out: &mut Vec<Cause>) {
    if let Some(p) = port.get("protocol").and_then(Value::as_str).filter(|p| !PROTOCOLS.contains(p)) {
        out.push(field::not_supported(&path.child("protocol"), Bad::s(p), &PROTOCOLS));
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    let end_path = path.child("endPort");
    match port.get("port").filter(|p| !p.is_null()) {
        Some(Value::String(name)) => {
            if let Some(e) = end {
                out.push(field::invalid(&end_path, Bad::Int(e), "may not be specified when `port` is non-numeric"));
            }
            for m in names::port_name(name) {
                out.push(field::invalid(&path.child("port"), Bad::s(name), &m));
            }
        }
        Some(number) => {
            let n = number.as_i64().unwrap_or(0);
            for m in names::port_num(n) {
                out.push(field::invalid(&path.child("port"), Bad::Int(n), &m));
            }
            if let Some(e) = end {
                if e < n {
                    out.push(field::invalid(&end_path, Bad::Int(e), "must be greater than or equal to `port`"));
                }
                for m in names::port_num(e) {
                    out.push(field::invalid(&end_path, Bad::Int(e), &m));
                }
            }
        }
        None => {
            if let Some(e) = end {
                out.push(field::invalid(&end_path, Bad::Int(e), "may not be specified when `port` is not specified"));
            }
        }
    }
}

/// A CIDR as Go's `ParseCIDRSloppy` reads it: the network address and the prefix length.
fn parse_cidr(value: &str) -> Option<(std::net::IpAddr, u8)> {
    if !names::is_cidr(value) {
        return None;
    }
    let (ip, bits) = value.split_once('/')?;
    Some((names::parse_ip(ip)?, bits.parse().ok()?))
}

/// Whether `ip` lies in the network `net`/`bits`.
fn contains((net, bits): (std::net::IpAddr, u8), ip: std::net::IpAddr) -> bool {
    match (net, ip) {
        (std::net::IpAddr::V4(n), std::net::IpAddr::V4(i)) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(n) & mask == u32::from(i) & mask
        }
        (std::net::IpAddr::V6(n), std::net::IpAddr::V6(i)) => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

/// `ValidateIPBlock`: a CIDR, and exceptions strictly inside it.
fn ip_block(block: &Value, path: &Path, out: &mut Vec<Cause>) {
    let cidr = s(block, "cidr");
    let cidr_path = path.child("cidr");
    if cidr.is_empty() {
        out.push(field::required(&cidr_path, ""));
        return;
    }
    let Some(net) = parse_cidr(cidr) else {
        out.push(field::invalid(&cidr_path, Bad::s(cidr), "not a valid CIDR"));
        return;
    };
    for (i, except) in arr(block, "except").iter().enumerate() {
        let except = except.as_str().unwrap_or("");
        let except_path = path.child("except").index(i);
        let Some(inner) = parse_cidr(except) else {
            out.push(field::invalid(&except_path, Bad::s(except), "not a valid CIDR"));
            return;
        };
        if !contains(net, inner.0) || net.1 >= inner.1 {
            out.push(field::invalid(&except_path, Bad::s(except), "must be a strict subset of `cidr`"));
        }
    }
}

/// `ValidateNetworkPolicyPeer`: exactly one kind of peer, or selectors without an ipBlock.
fn policy_peer(peer: &Value, path: &Path, out: &mut Vec<Cause>) {
    let mut peers = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = peer.get(key).filter(|v| !v.is_null()) {
            peers += 1;
            out.extend(meta::validate_label_selector(Some(sel), &path.child(key)));
        }
    }
    let block = peer.get("ipBlock").filter(|v| !v.is_null());
    if let Some(b) = block {
        peers += 1;
        ip_block(b, &path.child("ipBlock"), out);
    }
    if peers == 0 {
        out.push(field::required(path, "must specify a peer"));
    } else if peers > 1 && block.is_some() {
        out.push(field::forbidden(path, "may not specify both ipBlock and another peer"));
    }
}

/// `ValidateNetworkPolicySpec`.
pub fn network_policy(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    out.extend(meta::validate_label_selector(spec.get("podSelector"), &sp.child("podSelector")));
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in arr(spec, direction).iter().enumerate() {
            let rule_path = sp.child(direction).index(i);
            for (j, port) in arr(rule, "ports").iter().enumerate() {
                policy_port(port, &rule_path.child("ports").index(j), &mut out);
            }
            for (j, peer) in arr(rule, peers).iter().enumerate() {
                policy_peer(peer, &rule_path.child(peers).index(j), &mut out);
            }
        }
    }
    let types = arr(spec, "policyTypes");
    let allowed = ["Ingress", "Egress"];
    if types.len() > allowed.len() {
        let listed: Vec<String> = types.iter().map(|t| field::go_quote(t.as_str().unwrap_or(""))).collect();
        let value = format!("&[]networking.PolicyType{{{}}}", listed.join(", "));
        out.push(field::invalid(
            &sp.child("policyTypes"),
            Bad::Raw(value),
            "may not specify more than two policyTypes",
        ));
        return out;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if !allowed.contains(&t) {
            out.push(field::not_supported(&sp.child("policyTypes").index(i), Bad::s(t), &allowed));
        }
    }
    out
}

/// `IsFullyQualifiedDomainName`: at least two dot-separated labels (a trailing dot allowed).
fn fully_qualified_domain_name(name: &str, path: &Path) -> Option<Cause> {
    if name.is_empty() {
        return Some(field::required(path, ""));
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = names::dns1123_subdomain(name);
    if !errs.is_empty() {
        return Some(field::invalid(path, Bad::s(name), &errs.join(",")));
    }
    if name.split('.').count() < 2 {
        return Some(field::invalid(
            path,
            Bad::s(name),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    name.split('.').find_map(|label| {
        let errs = names::dns1123_label(label);
        (!errs.is_empty()).then(|| field::invalid(path, Bad::s(label), &errs.join(",")))
    })
}

/// One address of an EndpointSlice, checked as its `addressType` says.
fn slice_address(address: &str, address_type: &str, path: &Path, out: &mut Vec<Cause>) {
    let family = |v4: bool| {
        let ip = names::parse_ip(address);
        match ip {
            Some(std::net::IpAddr::V4(_)) if v4 => None,
            Some(std::net::IpAddr::V6(_)) if !v4 => None,
            _ => Some(if v4 { "must be a valid IPv4 address" } else { "must be a valid IPv6 address" }),
        }
    };
    match address_type {
        "IPv4" | "IPv6" => {
            if let Some(m) = family(address_type == "IPv4") {
                out.push(field::invalid(path, Bad::s(address), m));
            }
            if names::parse_ip(address).is_none() {
                out.push(field::invalid(path, Bad::s(address), "must be a valid IP address"));
            } else {
                out.extend(super::core::non_special_ip(address, path));
            }
        }
        "FQDN" => out.extend(fully_qualified_domain_name(address, path)),
        _ => {}
    }
}

/// `ValidateEndpointSlice` (create: the deprecated `IP` address type is refused).
pub fn endpoint_slice(obj: &Value, update: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let address_type = s(obj, "addressType");
    let mut types = vec!["FQDN", "IPv4", "IPv6"];
    if update {
        types.insert(0, "IP");
    }
    if address_type.is_empty() {
        out.push(field::required(&Path::new("addressType"), ""));
    } else if !types.contains(&address_type) {
        out.push(field::not_supported(&Path::new("addressType"), Bad::s(address_type), &types));
    }

    let ep_path = Path::new("endpoints");
    let endpoints = arr(obj, "endpoints");
    if endpoints.len() > 1000 {
        out.push(field::too_many(&ep_path, endpoints.len(), 1000));
    } else {
        for (i, ep) in endpoints.iter().enumerate() {
            let idx = ep_path.index(i);
            let addr_path = idx.child("addresses");
            let addresses = arr(ep, "addresses");
            if addresses.is_empty() {
                out.push(field::required(&addr_path, "must contain at least 1 address"));
            } else if addresses.len() > 100 {
                out.push(field::too_many(&addr_path, addresses.len(), 100));
            }
            for (j, a) in addresses.iter().enumerate() {
                slice_address(a.as_str().unwrap_or(""), address_type, &addr_path.index(j), &mut out);
            }
            if let Some(hostname) = ep.get("hostname").and_then(Value::as_str) {
                for m in names::dns1123_label(hostname) {
                    out.push(field::invalid(&idx.child("hostname"), Bad::s(hostname), &m));
                }
            }
        }
    }

    let ports_path = Path::new("ports");
    let ports = arr(obj, "ports");
    if ports.len() > 100 {
        out.push(field::too_many(&ports_path, ports.len(), 100));
        return out;
    }
    let mut seen = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let idx = ports_path.index(i);
        let name = s(port, "name");
        if !name.is_empty() {
            for m in names::dns1123_label(name) {
                out.push(field::invalid(&idx.child("name"), Bad::s(name), &m));
            }
        }
        if !seen.insert(name) {
            out.push(field::duplicate(&idx.child("name"), Bad::s(name)));
        }
        match port.get("protocol").and_then(Value::as_str) {
            None => out.push(field::required(&idx.child("protocol"), "")),
            Some(p) if !PROTOCOLS.contains(&p) => {
                out.push(field::not_supported(&idx.child("protocol"), Bad::s(p), &["SCTP", "TCP", "UDP"]))
            }
            Some(_) => {}
        }
        if let Some(app) = port.get("appProtocol").and_then(Value::as_str) {
            for m in names::qualified_name(app) {
                out.push(field::invalid(&idx.child("appProtocol"), Bad::s(app), &m));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::test_kinds::{create_causes, def, pairs};

    fn causes(resource: &str, obj: Value) -> Vec<(String, String)> {
        let group = if resource == "networkpolicies" { "networking.k8s.io" } else { "discovery.k8s.io" };
        create_causes(group, resource, obj)
    }

    #[test]
    fn network_policy_ports_peers_and_types() {
        let np = json!({"spec": {
            "podSelector": {},
            "ingress": [{
                "ports": [{"port": 80, "endPort": 70}, {"port": "http", "endPort": 90}, {"endPort": 5}, {"protocol": "ICMP", "port": 0}],
                "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24", "10.0.1.0/24"]}, "podSelector": {}}]
            }],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0"}}]}],
            "policyTypes": ["Ingress", "Sideways"]
        }});
        assert_eq!(
            causes("networkpolicies", np),
            pairs(&[
                ("spec.ingress[0].ports[0].endPort", "Invalid value: 70: must be greater than or equal to `port`"),
                (
                    "spec.ingress[0].ports[1].endPort",
                    "Invalid value: 90: may not be specified when `port` is non-numeric"
                ),
                (
                    "spec.ingress[0].ports[2].endPort",
                    "Invalid value: 5: may not be specified when `port` is not specified"
                ),
                (
                    "spec.ingress[0].ports[3].protocol",
                    "Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\""
                ),
                ("spec.ingress[0].ports[3].port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
                ("spec.ingress[0].from[0]", "Required value: must specify a peer"),
                (
                    "spec.ingress[0].from[1].ipBlock.except[0]",
                    "Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`"
                ),
                ("spec.ingress[0].from[1]", "Forbidden: may not specify both ipBlock and another peer"),
                ("spec.egress[0].to[0].ipBlock.cidr", "Invalid value: \"10.0.0.0\": not a valid CIDR"),
                ("spec.policyTypes[1]", "Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\""),
            ])
        );
        let ok = json!({"spec": {"podSelector": {"matchLabels": {"app": "db"}},
            "ingress": [{"from": [{"ipBlock": {"cidr": "fd00::/48", "except": ["fd00:0:0:1::/64"]}}, {"namespaceSelector": {}, "podSelector": {}}],
                         "ports": [{"port": 5432, "endPort": 5440}]}]}});
        assert_eq!(causes("networkpolicies", ok), vec![]);
    }

    #[test]
    fn endpoint_slice_addresses_and_ports() {
        let slice = json!({
            "addressType": "IPv4",
            "endpoints": [{"addresses": []}, {"addresses": ["10.0.0.1", "fd00::1", "127.0.0.1", "nope"], "hostname": "Bad_Host"}],
            "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81, "protocol": "ICMP"}, {"name": "x", "appProtocol": "a b"}]
        });
        let got = causes("endpointslices", slice);
        let expected = pairs(&[
            ("endpoints[0].addresses", "Required value: must contain at least 1 address"),
            ("endpoints[1].addresses[1]", "Invalid value: \"fd00::1\": must be a valid IPv4 address"),
            (
                "endpoints[1].addresses[2]",
                "Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            ),
            ("endpoints[1].addresses[3]", "Invalid value: \"nope\": must be a valid IPv4 address"),
            ("endpoints[1].addresses[3]", "Invalid value: \"nope\": must be a valid IP address"),
        ]);
        assert_eq!(got[..5], expected[..], "{got:#?}");
        assert_eq!(got[5].0, "endpoints[1].hostname");
        assert!(
            got[5].1.starts_with("Invalid value: \"Bad_Host\": a lowercase RFC 1123 label must consist of"),
            "{}",
            got[5].1
        );
        assert_eq!(got[6], ("ports[1].name".into(), "Duplicate value: \"http\"".into()));
        assert_eq!(
            got[7],
            (
                "ports[1].protocol".into(),
                "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into()
            )
        );
        assert_eq!(got[8].0, "ports[2].appProtocol");
        assert_eq!(got.len(), 9, "{got:#?}");

        let fqdn = json!({"addressType": "FQDN", "endpoints": [{"addresses": ["example.com.", "localhost"]}]});
        assert_eq!(
            causes("endpointslices", fqdn),
            pairs(&[(
                "endpoints[0].addresses[1]",
                "Invalid value: \"localhost\": should be a domain with at least two segments separated by dots"
            )])
        );
        let legacy = json!({"addressType": "IP", "endpoints": []});
        assert_eq!(
            causes("endpointslices", legacy.clone()),
            pairs(&[("addressType", "Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"")])
        );
        // The deprecated type stays writable on objects that have it.
        let d = def("discovery.k8s.io", "endpointslices");
        let mut old = legacy;
        old["metadata"] = json!({"name": "x", "namespace": "default", "resourceVersion": "1"});
        assert_eq!(d.validate_update(&old, &old), vec![]);
    }
}
