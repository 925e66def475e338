//! The CEL type of a schema node, as kube's `SchemaDeclType` gives it, for type checking
//! expressions over objects of a kind: `x-kubernetes-int-or-string` is `dyn`, an object with
//! `additionalProperties` a map, one with `properties` an object whose fields are looked up as
//! they are selected, strings by format (`byte` bytes, `duration`, `date`/`date-time`
//! timestamps). A node with no type (free-form content) has no type here either.

use std::sync::Arc;

use super::Node;
use kube_cel::types::{FieldSource, Object, Type};

/// The fields of a schema object node.
#[derive(Debug)]
struct SchemaFields(Node<'static>);

impl FieldSource for SchemaFields {
    fn field(&self, owner: &str, field: &str) -> Option<Type> {
        self.0.property(field).map(|n| cel_type(n, &format!("{owner}.{field}")))
    }
}

/// The CEL type of `node`, objects named `name` (`Deployment`) and their nested objects after
/// their path (`Deployment.spec`).
pub fn cel_type(node: Node<'static>, name: &str) -> Type {
    if node.is_int_or_string() {
        return Type::Dyn;
    }
    match node.type_name() {
        Some("object") => {
            if let Some(values) = node.additional_properties() {
                return Type::map(Type::String, cel_type(values, name));
            }
            if node.raw().get("properties").and_then(|p| p.as_object()).is_some_and(|p| !p.is_empty()) {
                return Type::Object(Object::Lazy { name: name.into(), fields: Arc::new(SchemaFields(node)) });
            }
            Type::Dyn
        }
        Some("array") => Type::list(node.items().map_or(Type::Dyn, |i| cel_type(i, name))),
        Some("string") => match node.format() {
            Some("byte") => Type::Bytes,
            Some("duration") => Type::Duration,
            Some("date" | "date-time") => Type::Timestamp,
            _ => Type::String,
        },
        Some("boolean") => Type::Bool,
        Some("number") => Type::Double,
        Some("integer") => Type::Int,
        _ => Type::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_nodes_become_cel_types_as_kube_maps_them() {
        let d = cel_type(super::super::kind_node("apps", "v1", "Deployment").unwrap(), "Deployment");
        assert_eq!(d.to_string(), "Deployment");
        assert_eq!(d.field_path("spec.replicas").unwrap().to_string(), "int");
        assert_eq!(d.field_path("spec.paused").unwrap().to_string(), "bool");
        assert_eq!(d.field_path("metadata.labels").unwrap().to_string(), "map(string, string)");
        assert_eq!(d.field_path("metadata.creationTimestamp").unwrap().to_string(), "timestamp");
        assert_eq!(
            d.field_path("spec.template.spec.containers").unwrap().to_string(),
            "list(Deployment.spec.template.spec.containers)"
        );
        assert!(matches!(d.field_path("spec.strategy.rollingUpdate.maxSurge").unwrap(), Type::Dyn), "int-or-string");
        assert!(d.field_path("spec.nope").is_none());
    }
}
