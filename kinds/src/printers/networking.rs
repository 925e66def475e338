//! Printers of the networking kinds: Ingress, IngressClass, NetworkPolicy, EndpointSlice.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{AGE, NAME, StaticPrinter, age, arr, at, format_label_selector, name, s};
use apimachinery::table::{Column, Row};

pub(super) const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Class",
        kind: "string",
        format: "",
        description: "The name of the IngressClass resource that should be used for additional configuration",
        priority: 0,
    },
    Column {
        name: "Hosts",
        kind: "string",
        format: "",
        description: "Hosts that incoming requests are matched against before the ingress rule",
        priority: 0,
    },
    Column {
        name: "Address",
        kind: "string",
        format: "",
        description: "Address is a list containing ingress points for the load-balancer",
        priority: 0,
    },
    Column {
        name: "Ports",
        kind: "string",
        format: "",
        description: "Ports of TLS configurations that open",
        priority: 0,
    },
    AGE,
];

pub(super) const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Controller",
        kind: "string",
        format: "",
        description: "Controller that is responsible for handling this class",
        priority: 0,
    },
    Column {
        name: "Parameters",
        kind: "string",
        format: "",
        description: "A reference to a resource with additional parameters",
        priority: 0,
    },
    AGE,
];

pub(super) const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Pod-Selector",
        kind: "string",
        format: "",
        description: "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.",
        priority: 0,
    },
    AGE,
];

pub(super) const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "AddressType",
        kind: "string",
        format: "",
        description: "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.",
        priority: 0,
    },
    Column {
        name: "Ports",
        kind: "string",
        format: "",
        description: "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.",
        priority: 0,
    },
    Column {
        name: "Endpoints",
        kind: "string",
        format: "",
        description: "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
        priority: 0,
    },
    AGE,
];

/// `printIngress`: hosts (three, then how many more), load-balancer addresses, ports.
pub static INGRESSES: StaticPrinter = StaticPrinter { columns: INGRESS_COLUMNS, row: ingress_row };

fn ingress_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let rules = arr(obj, "spec.rules");
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for r in rules {
        if hosts.len() == 3 {
            more = true;
        }
        let host = r["host"].as_str().unwrap_or("");
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts = match (hosts.is_empty(), more) {
        (true, _) => "*".to_string(),
        (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - 3),
        (false, false) => hosts.join(","),
    };
    let mut addresses: Vec<&str> = arr(obj, "status.loadBalancer.ingress")
        .iter()
        .filter_map(|i| {
            i["ip"].as_str().filter(|s| !s.is_empty()).or_else(|| i["hostname"].as_str().filter(|s| !s.is_empty()))
        })
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    let ports = if arr(obj, "spec.tls").is_empty() { "80" } else { "80, 443" };
    Row::cells(vec![
        name(obj),
        at(obj, "spec.ingressClassName").and_then(Value::as_str).unwrap_or("<none>").into(),
        hosts.into(),
        addresses.join(",").into(),
        ports.into(),
        age(obj, now),
    ])
}

/// `printIngressClass`: the parameters as `Kind.group/name`.
pub static INGRESS_CLASSES: StaticPrinter = StaticPrinter {
    columns: INGRESS_CLASS_COLUMNS,
    row: |obj, now| {
        let params = match at(obj, "spec.parameters") {
            None => "<none>".to_string(),
            Some(p) => {
                let mut out = p["kind"].as_str().unwrap_or("").to_string();
                if let Some(g) = p.get("apiGroup").and_then(Value::as_str) {
                    out.push('.');
                    out.push_str(g);
                }
                format!("{out}/{}", p["name"].as_str().unwrap_or(""))
            }
        };
        Row::cells(vec![name(obj), s(obj, "spec.controller").into(), params.into(), age(obj, now)])
    },
};

/// `printNetworkPolicy`.
pub static NETWORK_POLICIES: StaticPrinter = StaticPrinter {
    columns: NETWORK_POLICY_COLUMNS,
    row: |obj, now| {
        Row::cells(vec![name(obj), format_label_selector(at(obj, "spec.podSelector")).into(), age(obj, now)])
    },
};

/// Three values, then how many more; `<unset>` for none.
fn list_with_more(values: Vec<String>, count: usize) -> String {
    if count > 3 {
        return format!("{} + {} more...", values[..3].join(","), count - 3);
    }
    if values.is_empty() { "<unset>".to_string() } else { values.join(",") }
}

/// `printEndpointSlice`.
pub static ENDPOINT_SLICES: StaticPrinter = StaticPrinter { columns: ENDPOINT_SLICE_COLUMNS, row: endpoint_slice_row };

fn endpoint_slice_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let ports: Vec<String> = arr(obj, "ports")
        .iter()
        .map(|p| match (p.get("port").and_then(Value::as_i64), p.get("name").and_then(Value::as_str)) {
            (Some(n), _) => n.to_string(),
            (None, Some(n)) => n.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addresses: Vec<String> = arr(obj, "endpoints")
        .iter()
        .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    let (port_count, address_count) = (ports.len(), addresses.len());
    Row::cells(vec![
        name(obj),
        s(obj, "addressType").into(),
        list_with_more(ports.into_iter().take(3).collect(), port_count).into(),
        list_with_more(addresses.into_iter().take(3).collect(), address_count).into(),
        age(obj, now),
    ])
}
