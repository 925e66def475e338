//! The `admissionregistration.k8s.io` printers: webhook configurations, validating admission
//! policies and their bindings.

use serde_json::Value;

use super::{AGE, NAME, StaticPrinter, age, arr, at, col, name, s};
use apimachinery::table::{Column, Row};

const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
    AGE,
];

/// `printMutatingWebhook` and `printValidatingWebhook`: how many webhooks.
pub static WEBHOOK_CONFIGURATIONS: StaticPrinter = StaticPrinter {
    columns: WEBHOOK_COLUMNS,
    row: |obj, now| Row::cells(vec![name(obj), (arr(obj, "webhooks").len() as i64).into(), age(obj, now)]),
};

/// `printValidatingAdmissionPolicy`: how many validations, and the param kind as
/// `apiVersion/kind` (`<unset>` without one).
pub static VALIDATING_ADMISSION_POLICIES: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col(
            "Validations",
            "integer",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
        AGE,
    ],
    row: |obj, now| {
        let param_kind = match at(obj, "spec.paramKind") {
            Some(pk) => format!("{}/{}", s(pk, "apiVersion"), s(pk, "kind")),
            None => "<unset>".to_string(),
        };
        Row::cells(vec![
            name(obj),
            (arr(obj, "spec.validations").len() as i64).into(),
            param_kind.into(),
            age(obj, now),
        ])
    },
};

/// `printValidatingAdmissionPolicyBinding`: the policy, and the param as `namespace/name`
/// (`*/name` without a namespace), its selector, or `<unset>`.
pub static VALIDATING_ADMISSION_POLICY_BINDINGS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
        col("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
        AGE,
    ],
    row: |obj, now| {
        let param = match at(obj, "spec.paramRef") {
            None => "<unset>".to_string(),
            Some(pr) => {
                let (ns, pname) = (s(pr, "namespace"), s(pr, "name"));
                match (pname, at(pr, "selector")) {
                    ("", Some(sel)) => label_selector_string(sel),
                    ("", None) => "<unset>".to_string(),
                    (n, _) if ns.is_empty() => format!("*/{n}"),
                    (n, _) => format!("{ns}/{n}"),
                }
            }
        };
        Row::cells(vec![name(obj), s(obj, "spec.policyName").into(), param.into(), age(obj, now)])
    },
};

/// `(*metav1.LabelSelector).String()`, the gogo-protobuf rendering kube's printer uses:
/// `&LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}`.
fn label_selector_string(sel: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k, v.as_str().unwrap_or(""))).collect())
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = arr(sel, "matchExpressions")
        .iter()
        .map(|e| {
            let values: Vec<&str> = arr(e, "values").iter().map(|v| v.as_str().unwrap_or("")).collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                s(e, "key"),
                s(e, "operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}
