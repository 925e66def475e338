//! The types the checker reasons with: CEL's own, objects whose fields are declared (kube's
//! `request`, `namespaceObject`, `variables`) or looked up as they are selected (an OpenAPI
//! schema: [`crate::schema::cel_type`]), and two kinds of "anything".
//!
//! cel-go has one `dyn`; this checker needs two. [`Type::Dyn`] is cel-go's `dyn`, what a field
//! of a schemaless `object` is, and kube refuses a validation of that type ("must evaluate to
//! bool"). [`Type::Unknown`] is where this checker has no information cel-go would have (a
//! schema node without a type, a function it types loosely): nothing is ever reported about
//! it, so a gap in the checker can hide an issue but never invent one.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A CEL type as the checker sees it.
#[derive(Clone, Debug)]
pub enum Type {
    /// Nothing is known: accepted everywhere, never reported.
    Unknown,
    /// cel-go's `dyn`: accepted everywhere; known to be dynamic.
    Dyn,
    /// `null_type`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// A type value (`int`, `type(x)`).
    Type,
    /// `list(T)`.
    List(Arc<Type>),
    /// `map(K, V)`.
    Map(Arc<Type>, Arc<Type>),
    /// An object whose fields are known.
    Object(Object),
}

/// An object type: declared fields, or a source that gives them as they are selected (a schema
/// node, whose full tree would be large to build for every kind).
#[derive(Clone, Debug)]
pub enum Object {
    /// Declared fields.
    Fields {
        /// Its name in messages (`kubernetes.AdmissionRequest`).
        name: Arc<str>,
        /// Field name to type.
        fields: Arc<BTreeMap<String, Type>>,
    },
    /// Fields looked up on selection.
    Lazy {
        /// Its name in messages (`Deployment.spec`).
        name: Arc<str>,
        /// Where the fields come from.
        fields: Arc<dyn FieldSource>,
    },
}

/// Gives the fields of an [`Object::Lazy`].
pub trait FieldSource: fmt::Debug + Send + Sync {
    /// The type of field `field` of the object named `owner`, or `None` if it has none.
    fn field(&self, owner: &str, field: &str) -> Option<Type>;
}

impl Object {
    /// The type's name, as messages print it.
    pub fn name(&self) -> &str {
        match self {
            Object::Fields { name, .. } | Object::Lazy { name, .. } => name,
        }
    }

    /// The type of field `field`, or `None` if the type has no such field.
    pub fn field(&self, field: &str) -> Option<Type> {
        match self {
            Object::Fields { fields, .. } => fields.get(field).cloned(),
            Object::Lazy { name, fields } => fields.field(name, field),
        }
    }
}

impl Type {
    /// The type at a dotted field path (`spec.replicas`), for tests that look deep.
    #[cfg(test)]
    pub(crate) fn field_path(&self, path: &str) -> Option<Type> {
        let mut t = self.clone();
        for f in path.split('.') {
            let Type::Object(o) = t else { return None };
            t = o.field(f)?;
        }
        Some(t)
    }

    /// An object type of declared fields.
    pub fn object(name: &str, fields: impl IntoIterator<Item = (&'static str, Type)>) -> Type {
        let fields = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        Type::Object(Object::Fields { name: name.into(), fields: Arc::new(fields) })
    }

    /// An object type of declared fields, given as a map.
    pub fn object_of(name: &str, fields: BTreeMap<String, Type>) -> Type {
        Type::Object(Object::Fields { name: name.into(), fields: Arc::new(fields) })
    }

    /// `list(T)`.
    pub fn list(elem: Type) -> Type {
        Type::List(Arc::new(elem))
    }

    /// `map(K, V)`.
    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Arc::new(key), Arc::new(value))
    }

    /// Whether nothing can be said against it (unknown or `dyn`).
    pub fn is_open(&self) -> bool {
        matches!(self, Type::Unknown | Type::Dyn)
    }

    /// Whether it is `int`, `uint` or `double`.
    pub fn is_numeric(&self) -> bool {
        matches!(self, Type::Int | Type::Uint | Type::Double)
    }

    /// The same kind of type, parameters aside (`list(int)` and `list(string)` are).
    pub fn same_kind(&self, other: &Type) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// Whether the two can be compared for equality without cel-go refusing it outright:
    /// either is open or null, both are numbers, or they are of one kind (objects and maps
    /// are taken as one, as this checker does not tell a schema object from a map).
    pub fn comparable_with(&self, other: &Type) -> bool {
        let mappish = |t: &Type| matches!(t, Type::Map(..) | Type::Object(_));
        self.is_open()
            || other.is_open()
            || matches!(self, Type::Null)
            || matches!(other, Type::Null)
            || (self.is_numeric() && other.is_numeric())
            || (mappish(self) && mappish(other))
            || self.same_kind(other)
    }

    /// The more precise of two types of one value (a list literal's elements, the branches
    /// of a conditional): their type if they agree, else unknown.
    pub fn join(&self, other: &Type) -> Type {
        match (self, other) {
            (Type::Unknown, t) | (t, Type::Unknown) => t.clone(),
            (Type::List(a), Type::List(b)) => Type::list(a.join(b)),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => Type::map(k1.join(k2), v1.join(v2)),
            (Type::Object(a), Type::Object(b)) if a.name() == b.name() => self.clone(),
            (a, b) if a.same_kind(b) && !matches!(a, Type::List(_) | Type::Map(..) | Type::Object(_)) => a.clone(),
            _ => Type::Unknown,
        }
    }
}

/// cel-go's `FormatCelType`: `int`, `list(string)`, `map(string, int)`, `null_type`, an
/// object's name.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Unknown | Type::Dyn => f.write_str("dyn"),
            Type::Null => f.write_str("null_type"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::Type => f.write_str("type"),
            Type::List(e) => write!(f, "list({e})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Object(o) => f.write_str(o.name()),
        }
    }
}

/// kube's `BuildRequestType`: the AdmissionRequest as CEL's `request` (no `uid`, `object` or
/// `oldObject`).
pub fn request_type() -> Type {
    let gvk = || {
        Type::object(
            "kubernetes.GroupVersionKind",
            [("group", Type::String), ("version", Type::String), ("kind", Type::String)],
        )
    };
    let gvr = || {
        Type::object(
            "kubernetes.GroupVersionResource",
            [("group", Type::String), ("version", Type::String), ("resource", Type::String)],
        )
    };
    let user = Type::object(
        "kubernetes.UserInfo",
        [
            ("username", Type::String),
            ("uid", Type::String),
            ("groups", Type::list(Type::String)),
            ("extra", Type::map(Type::String, Type::list(Type::String))),
        ],
    );
    Type::object(
        "kubernetes.AdmissionRequest",
        [
            ("kind", gvk()),
            ("resource", gvr()),
            ("subResource", Type::String),
            ("requestKind", gvk()),
            ("requestResource", gvr()),
            ("requestSubResource", Type::String),
            ("name", Type::String),
            ("namespace", Type::String),
            ("operation", Type::String),
            ("userInfo", user),
            ("dryRun", Type::Bool),
            ("options", Type::Dyn),
        ],
    )
}

/// kube's `BuildNamespaceType`: the Namespace as CEL's `namespaceObject`, with kube's own
/// field list (its metadata names the uid `UID`, as kube's declaration does).
pub fn namespace_type() -> Type {
    let strings = || Type::list(Type::String);
    let labels = || Type::map(Type::String, Type::String);
    let condition = Type::object(
        "kubernetes.NamespaceCondition",
        [
            ("status", Type::String),
            ("type", Type::String),
            ("lastTransitionTime", Type::Timestamp),
            ("message", Type::String),
            ("reason", Type::String),
        ],
    );
    let metadata = Type::object(
        "kubernetes.NamespaceMetadata",
        [
            ("name", Type::String),
            ("generateName", Type::String),
            ("namespace", Type::String),
            ("labels", labels()),
            ("annotations", labels()),
            ("UID", Type::String),
            ("creationTimestamp", Type::Timestamp),
            ("deletionGracePeriodSeconds", Type::Int),
            ("deletionTimestamp", Type::Timestamp),
            ("generation", Type::Int),
            ("resourceVersion", Type::String),
            ("finalizers", strings()),
        ],
    );
    Type::object(
        "kubernetes.Namespace",
        [
            ("metadata", metadata),
            ("spec", Type::object("kubernetes.NamespaceSpec", [("finalizers", strings())])),
            (
                "status",
                Type::object(
                    "kubernetes.NamespaceStatus",
                    [("conditions", Type::list(condition)), ("phase", Type::String)],
                ),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_namespace_are_typed_as_kube_declares_them() {
        assert_eq!(request_type().field_path("userInfo.groups").unwrap().to_string(), "list(string)");
        assert!(request_type().field_path("uid").is_none(), "kube leaves the uid out");
        assert!(namespace_type().field_path("metadata.UID").is_some());
        assert!(namespace_type().field_path("metadata.managedFields").is_none());
    }

    #[test]
    fn joins_keep_what_agrees() {
        assert_eq!(Type::Int.join(&Type::Unknown).to_string(), "int");
        assert!(matches!(Type::Int.join(&Type::String), Type::Unknown));
        assert_eq!(Type::list(Type::Unknown).join(&Type::list(Type::String)).to_string(), "list(string)");
        assert!(Type::Int.comparable_with(&Type::Double) && !Type::Int.comparable_with(&Type::String));
    }
}
