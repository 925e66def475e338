//! `kubectl get` for custom resources: kube's table convertor from a version's
//! `additionalPrinterColumns` (or an `Age` column when it lists none).

use apimachinery::table::{Column, Printer, Row, human_duration};
use chrono::{DateTime, Utc};
use kinds::printers::NAME;
use serde_json::Value;
use serde_json_path::JsonPath;

use crate::intern::intern;

/// One `additionalPrinterColumns` entry, its path compiled.
struct Extra {
    path: Option<JsonPath>,
    kind: &'static str,
}

/// The printer of one version.
pub struct ColumnPrinter {
    columns: Vec<Column>,
    extras: Vec<Extra>,
}

/// A Kubernetes JSONPath as a CRD writes it (`.spec.replicas`, `{.status.x}`,
/// `.status.conditions[?(@.type=="Ready")].status`), compiled as RFC 9535 JSONPath, which
/// takes the same expressions once rooted at `$`.
pub fn compile(path: &str) -> Option<JsonPath> {
    let inner = path.trim();
    let inner = inner.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(inner);
    let rooted =
        if inner.starts_with('.') || inner.starts_with('[') { format!("${inner}") } else { format!("$.{inner}") };
    JsonPath::parse(&rooted).ok()
}

impl ColumnPrinter {
    /// The printer of a version's `additionalPrinterColumns`.
    pub fn new(columns: Option<&Value>) -> Self {
        let listed = columns.and_then(Value::as_array).filter(|c| !c.is_empty());
        let default = [serde_json::json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})];
        let listed: &[Value] = listed.map_or(&default, |c| c.as_slice());
        let mut out = ColumnPrinter { columns: vec![NAME], extras: Vec::new() };
        for c in listed {
            let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
            let json_path = text("jsonPath");
            let description = match text("description") {
                "" => intern(&format!("Custom resource definition column (in JSONPath format): {json_path}")),
                d => intern(d),
            };
            let kind = intern(text("type"));
            out.columns.push(Column {
                name: intern(text("name")),
                kind,
                format: intern(text("format")),
                description,
                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
            });
            out.extras.push(Extra { path: compile(json_path), kind });
        }
        out
    }
}

/// kube's `cellForJSONValue`, and for strings the JSONPath printer's rendering.
fn cell(kind: &str, value: &Value, now: DateTime<Utc>) -> Value {
    match (kind, value) {
        ("string", Value::String(s)) => s.clone().into(),
        ("string", Value::Null) => Value::Null,
        ("string", other) => other.to_string().into(),
        ("integer", Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).into(),
        ("number", Value::Number(n)) => n.as_f64().into(),
        ("boolean", Value::Bool(b)) => (*b).into(),
        ("date", Value::String(s)) => match DateTime::parse_from_rfc3339(s) {
            Ok(t) => human_duration(now - t.with_timezone(&Utc)).into(),
            Err(_) => "<invalid>".into(),
        },
        _ => Value::Null,
    }
}

impl Printer for ColumnPrinter {
    fn columns(&self) -> &[Column] {
        &self.columns
    }

    fn row(&self, obj: &Value, now: DateTime<Utc>) -> Row {
        let mut cells = vec![obj.pointer("/metadata/name").cloned().unwrap_or_else(|| "".into())];
        for extra in &self.extras {
            let found = extra.path.as_ref().and_then(|p| p.query(obj).all().first().copied().cloned());
            cells.push(found.map_or(Value::Null, |v| cell(extra.kind, &v, now)));
        }
        Row::cells(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_follow_the_crd_and_cells_take_kube_types() {
        let p = ColumnPrinter::new(Some(&json!([
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status",
             "description": "whether it is ready", "priority": 1},
            {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
        ])));
        let names: Vec<_> = p.columns().iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Replicas", "Ready", "Missing"]);
        assert_eq!(
            p.columns()[1].description,
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        assert_eq!((p.columns()[2].description, p.columns()[2].priority), ("whether it is ready", 1));
        let obj = json!({"metadata": {"name": "w"}, "spec": {"replicas": 3},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(p.row(&obj, Utc::now()).cells, [json!("w"), json!(3), json!("True"), Value::Null]);
    }

    #[test]
    fn without_columns_a_custom_resource_prints_its_age() {
        let p = ColumnPrinter::new(None);
        assert_eq!(p.columns()[1].name, "Age");
        let now = Utc::now();
        let created = (now - chrono::TimeDelta::minutes(5)).to_rfc3339();
        let row = p.row(&json!({"metadata": {"name": "w", "creationTimestamp": created}}), now);
        assert_eq!(row.cells, [json!("w"), json!("5m")]);
    }
}
