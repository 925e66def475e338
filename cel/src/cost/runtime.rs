//! What a call costs at run time: cel-go's `CostTracker.costCall`, with the sets extension's
//! trackers first and kube's `library.CostEstimator.CallCost` before cel-go's defaults, as
//! kube's environment stacks them.

use crate::error::EvalResult;
use crate::ext::Ext;
use crate::value::Value;

/// cel-go's `common.StringTraversalCostFactor`.
pub const TRAVERSAL: f64 = 0.1;
/// cel-go's `common.RegexStringLengthCostFactor`.
pub const REGEX: f64 = 0.25;

fn ceil(x: f64) -> u64 {
    x.ceil() as u64
}

fn size(v: &Value) -> u64 {
    v.actual_size()
}

/// kube's `traversalCost`: a tenth per byte of strings, 1 per other scalar, summed through
/// lists and maps (keys included). Truncated, not rounded up, as kube's is.
fn traversal_cost(v: &Value) -> u64 {
    match v {
        Value::String(s) => (s.len() as f64 * TRAVERSAL) as u64,
        Value::Bytes(b) => (b.len() as f64 * TRAVERSAL) as u64,
        Value::List(l) => l.items.iter().map(traversal_cost).sum(),
        Value::Map(m) => m.entries.iter().map(|(k, v)| traversal_cost(&k.to_value()) + traversal_cost(v)).sum(),
        _ => 1,
    }
}

/// kube's selector cost: a parse of the string into requirements.
fn selector_cost(len: u64) -> u64 {
    let parse = ceil(len as f64 * TRAVERSAL);
    let requirements = ceil(len as f64 * 0.5);
    let per = ceil(requirements as f64 * 50.0);
    10 + parse + per
}

/// kube's `CallCost`, `None` where kube has no estimate.
fn kube_call_cost(function: &str, overload: Option<&str>, args: &[Value], result: &EvalResult) -> Option<u64> {
    let traverse = |i: usize| args.get(i).map(|a| ceil(size(a) as f64 * TRAVERSAL));
    match function {
        "check" => Some(350_000),
        "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace" | "name" | "allowed"
        | "reason" | "error" | "errored" => Some(1),
        "fieldSelector" | "labelSelector" => args.get(1).map(|a| selector_cost(size(a))),
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => Some(args.first().map_or(0, traversal_cost)),
        "url" | "lowerAscii" | "upperAscii" | "substring" | "trim" | "jsonpatch.escapeKey" => traverse(0),
        "replace" | "split" => args.first().map(|a| ceil(size(a) as f64 * 2.0 * TRAVERSAL)),
        "join" => {
            let result_size = match result {
                Ok(v) => size(v),
                Err(_) => 1,
            };
            (!args.is_empty()).then(|| ceil(result_size as f64 * 2.0 * TRAVERSAL))
        }
        "find" | "findAll" => (args.len() >= 2).then(|| {
            let s = ceil((1.0 + size(&args[0]) as f64) * TRAVERSAL);
            let r = ceil(size(&args[1]) as f64 * REGEX);
            s * r
        }),
        "cidr" | "isIP" | "isCIDR" => traverse(0),
        "ip" => {
            if args.is_empty() {
                None
            } else if overload == Some("cidr_ip") {
                Some(1)
            } else {
                traverse(0)
            }
        }
        "ip.isCanonical" => args.first().map(|a| ceil(size(a) as f64 * 2.0 * TRAVERSAL)),
        "masked"
        | "prefixLength"
        | "family"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast" => Some(1),
        "containsIP" | "containsCIDR" if args.len() >= 2 => {
            let cidr = size(&args[0]);
            let other = size(&args[1]);
            let mut cost = ceil((cidr + cidr) as f64 * TRAVERSAL);
            if function == "containsCIDR" {
                cost += ceil(cidr as f64 * TRAVERSAL) + 1;
            }
            if matches!(overload, Some("cidr_contains_ip_string" | "cidr_contains_cidr_string")) {
                cost += ceil(other as f64 * TRAVERSAL);
            }
            Some(cost)
        }
        "quantity" | "isQuantity" => traverse(0),
        "validate" => match args {
            [Value::Ext(Ext::Format(f)), s, ..] => {
                let str_cost = ceil((1.0 + size(s) as f64) * TRAVERSAL);
                let regex_cost = ceil(f.max_regex_size as f64 * REGEX);
                Some(str_cost * regex_cost)
            }
            _ => None,
        },
        "format.named" => Some(1),
        "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan" | "isLessThan" | "compareTo"
        | "add" | "sub" => Some(1),
        "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath" | "getQuery" => Some(1),
        "_==_" => match args.first() {
            Some(Value::Ext(_)) if args.len() == 2 => Some(1),
            _ => None,
        },
        _ => None,
    }
}

/// The cost of a call of `function`, resolved to `overload` when the checker found one, with
/// argument values `args` (the receiver first) and its `result`.
pub fn call_cost(function: &str, overload: Option<&str>, args: &[Value], result: &EvalResult) -> u64 {
    // The sets extension's own trackers come first.
    let sets = match overload {
        Some("list_sets_contains_list" | "list_sets_intersects_list") => Some(1.0),
        Some("list_sets_equivalent_list") => Some(2.0),
        _ => None,
    };
    if let Some(factor) = sets
        && args.len() == 2
    {
        return 1 + (size(&args[0]) as f64 * size(&args[1]) as f64 * factor) as u64;
    }
    if let Some(cost) = kube_call_cost(function, overload, args, result) {
        return cost;
    }
    let traverse = |i: usize| args.get(i).map_or(0, |a| ceil(size(a) as f64 * TRAVERSAL));
    match overload.unwrap_or("") {
        "starts_with_string" | "ends_with_string" | "string_to_bytes" | "bytes_to_string" | "strings_quote"
        | "string_format" => traverse(0),
        "in_list" => args.get(1).map_or(0, size),
        "less_string"
        | "greater_string"
        | "less_equals_string"
        | "greater_equals_string"
        | "less_bytes"
        | "greater_bytes"
        | "less_equals_bytes"
        | "greater_equals_bytes"
        | "equals"
        | "not_equals" => {
            let min = size(&args[0]).min(size(&args[1]));
            ceil(min as f64 * TRAVERSAL)
        }
        "add_string" | "add_bytes" => ceil((size(&args[0]) + size(&args[1])) as f64 * TRAVERSAL),
        "matches_string" => {
            let s = ceil((1.0 + size(&args[0]) as f64) * TRAVERSAL);
            let r = ceil(size(&args[1]) as f64 * REGEX);
            s * r
        }
        "contains_string" => ceil(size(&args[0]) as f64 * TRAVERSAL) * ceil(size(&args[1]) as f64 * TRAVERSAL),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_functions_cost_a_tenth_per_code_point() {
        let s = |n: usize| Value::string("a".repeat(n));
        assert_eq!(call_cost("startsWith", Some("starts_with_string"), &[s(95), s(1)], &Ok(Value::Bool(true))), 10);
        assert_eq!(call_cost("_==_", Some("equals"), &[s(30), s(25)], &Ok(Value::Bool(false))), 3);
        assert_eq!(call_cost("_==_", Some("equals"), &[Value::Int(1), Value::Int(1)], &Ok(Value::Bool(true))), 1);
        assert_eq!(call_cost("matches", Some("matches_string"), &[s(19), s(8)], &Ok(Value::Bool(true))), 4);
        assert_eq!(call_cost("lowerAscii", Some("string_lower_ascii"), &[s(21)], &Ok(s(21))), 3);
        assert_eq!(call_cost("check", Some("resourcecheck_check"), &[], &Ok(Value::Null)), 350_000);
        assert_eq!(call_cost("size", Some("size_string"), &[s(100)], &Ok(Value::Int(100))), 1);
    }

    #[test]
    fn kubes_traversal_truncates() {
        let list = Value::list(vec![Value::string("abcdefghijklmno"), Value::Int(3)]);
        // 15 bytes at a tenth is 1 (truncated), the int 1.
        assert_eq!(call_cost("sum", None, &[list], &Ok(Value::Int(0))), 2);
    }
}
