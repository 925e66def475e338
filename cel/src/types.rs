//! The types the checker reasons with, as cel-go's checker has them: CEL's own, type
//! parameters the checker binds as it resolves overloads, opaque types (`optional_type(T)`,
//! kube's `net.IP`), and object types whose fields are declared (kube's `request`,
//! `namespaceObject`, `variables`, library types such as `kubernetes.Quantity`) or looked up
//! as they are selected (an OpenAPI schema node: [`crate::decl`], or
//! `apimachinery::schema::cel_type`).
//!
//! Assignability and unification follow cel-go's `checker/types.go`: a type parameter binds to
//! what it is first unified with, `dyn` and errors unify with anything, `null` with objects,
//! opaque types, durations and timestamps only.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// A CEL type as the checker sees it.
#[derive(Clone, Debug)]
pub enum Type {
    /// `dyn`: anything.
    Dyn,
    /// What an expression with an error has: unifies with anything, so one error does not
    /// cascade.
    Error,
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
    /// `list(T)`.
    List(Arc<Type>),
    /// `map(K, V)`.
    Map(Arc<Type>, Arc<Type>),
    /// A type value: `type` or `type(T)`.
    Type(Option<Arc<Type>>),
    /// A type parameter (`A`, or a fresh `_var3` of the checker).
    Param(Arc<str>),
    /// An opaque type: `optional_type(T)`, `net.IP`, `net.CIDR`.
    Opaque(Arc<str>, Arc<[Type]>),
    /// An object type: fields are known.
    Object(Object),
}

/// An object type: declared fields, or a source that gives them as they are selected (a
/// schema node, whose full tree would be large to build for every kind).
#[derive(Clone, Debug)]
pub enum Object {
    /// Declared fields (none for kube's library types such as `kubernetes.Quantity`).
    Fields {
        /// Its name (`kubernetes.AdmissionRequest`).
        name: Arc<str>,
        /// Field name to type.
        fields: Arc<BTreeMap<String, Type>>,
    },
    /// Fields looked up on selection.
    Lazy {
        /// Its name (`Deployment.spec`).
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

/// cel-go's kinds, for comparing types' shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Dyn,
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List,
    Map,
    Type,
    Param,
    Opaque,
    Struct,
}

impl Type {
    /// An object type of declared fields.
    pub fn object(name: &str, fields: impl IntoIterator<Item = (&'static str, Type)>) -> Type {
        let fields = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        Type::Object(Object::Fields { name: name.into(), fields: Arc::new(fields) })
    }

    /// An object type of declared fields, given as a map.
    pub fn object_of(name: &str, fields: BTreeMap<String, Type>) -> Type {
        Type::Object(Object::Fields { name: name.into(), fields: Arc::new(fields) })
    }

    /// An object type without fields (kube's library types).
    pub fn named(name: &str) -> Type {
        Type::object_of(name, BTreeMap::new())
    }

    /// `list(T)`.
    pub fn list(elem: Type) -> Type {
        Type::List(Arc::new(elem))
    }

    /// `map(K, V)`.
    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Arc::new(key), Arc::new(value))
    }

    /// `optional_type(T)`.
    pub fn optional(t: Type) -> Type {
        Type::Opaque("optional_type".into(), Arc::from(vec![t]))
    }

    /// An opaque type without parameters (`net.IP`).
    pub fn opaque(name: &str) -> Type {
        Type::Opaque(name.into(), Arc::from(Vec::new()))
    }

    /// A type parameter.
    pub fn param(name: &str) -> Type {
        Type::Param(name.into())
    }

    fn kind(&self) -> Kind {
        match self {
            Type::Dyn => Kind::Dyn,
            Type::Error => Kind::Error,
            Type::Null => Kind::Null,
            Type::Bool => Kind::Bool,
            Type::Int => Kind::Int,
            Type::Uint => Kind::Uint,
            Type::Double => Kind::Double,
            Type::String => Kind::String,
            Type::Bytes => Kind::Bytes,
            Type::Duration => Kind::Duration,
            Type::Timestamp => Kind::Timestamp,
            Type::List(_) => Kind::List,
            Type::Map(..) => Kind::Map,
            Type::Type(_) => Kind::Type,
            Type::Param(_) => Kind::Param,
            Type::Opaque(..) => Kind::Opaque,
            Type::Object(_) => Kind::Struct,
        }
    }

    /// The type-erased name (`list`, `map`, `optional_type`, an object's name).
    pub fn type_name(&self) -> &str {
        match self {
            Type::Dyn => "dyn",
            Type::Error => "error",
            Type::Null => "null_type",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Uint => "uint",
            Type::Double => "double",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::Duration => "google.protobuf.Duration",
            Type::Timestamp => "google.protobuf.Timestamp",
            Type::List(_) => "list",
            Type::Map(..) => "map",
            Type::Type(_) => "type",
            Type::Param(n) | Type::Opaque(n, _) => n,
            Type::Object(o) => o.name(),
        }
    }

    /// The type parameters (`list`'s element, `map`'s key and value, an opaque type's).
    pub fn parameters(&self) -> Vec<Type> {
        match self {
            Type::List(e) => vec![(**e).clone()],
            Type::Map(k, v) => vec![(**k).clone(), (**v).clone()],
            Type::Type(Some(t)) => vec![(**t).clone()],
            Type::Opaque(_, p) => p.to_vec(),
            _ => Vec::new(),
        }
    }

    fn with_parameters(&self, params: Vec<Type>) -> Type {
        let mut p = params.into_iter();
        match self {
            Type::List(_) => Type::list(p.next().unwrap_or(Type::Dyn)),
            Type::Map(..) => Type::map(p.next().unwrap_or(Type::Dyn), p.next().unwrap_or(Type::Dyn)),
            Type::Type(Some(_)) => Type::Type(p.next().map(Arc::new)),
            Type::Opaque(n, _) => Type::Opaque(n.clone(), Arc::from(p.collect::<Vec<_>>())),
            other => other.clone(),
        }
    }

    /// Whether it is `dyn`.
    pub fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn)
    }

    /// Whether it is `dyn` or an error.
    pub fn is_dyn_or_error(&self) -> bool {
        matches!(self, Type::Dyn | Type::Error)
    }

    /// Whether it is `optional_type(T)`.
    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Opaque(n, _) if &**n == "optional_type")
    }

    /// `T` of `optional_type(T)`, with whether it was one.
    pub fn unwrap_optional(&self) -> (Type, bool) {
        match self {
            Type::Opaque(n, p) if &**n == "optional_type" => (p.first().cloned().unwrap_or(Type::Dyn), true),
            t => (t.clone(), false),
        }
    }

    /// cel-go's `IsExactType`: the same type, type parameters by name.
    pub fn is_exact(&self, other: &Type) -> bool {
        self.is_type_internal(other, true)
    }

    /// cel-go's `IsEquivalentType`: the same type, type parameters of any name.
    pub fn is_equivalent(&self, other: &Type) -> bool {
        self.is_type_internal(other, false)
    }

    fn is_type_internal(&self, other: &Type, check_param_names: bool) -> bool {
        if self.kind() != other.kind() {
            return false;
        }
        let (p1, p2) = (self.parameters(), other.parameters());
        if p1.len() != p2.len() {
            return false;
        }
        if (check_param_names || self.kind() != Kind::Param) && self.type_name() != other.type_name() {
            return false;
        }
        p1.iter().zip(&p2).all(|(a, b)| a.is_type_internal(b, check_param_names))
    }

    /// cel-go's `IsAssignableType` for the kinds it is called on (primitives, objects, null).
    fn is_assignable_type(&self, from: &Type) -> bool {
        if self.is_dyn() {
            return true;
        }
        if self.kind() != from.kind() || self.type_name() != from.type_name() {
            return false;
        }
        let (p1, p2) = (self.parameters(), from.parameters());
        p1.len() == p2.len() && p1.iter().zip(&p2).all(|(a, b)| a.is_assignable_type(b))
    }

    /// Whether the checker takes a value of this type's size as fixed (cel-go's `isScalar`).
    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint)
    }
}

/// cel-go's `FormatCELType`: `int`, `list(string)`, `map(string, int)`, `null`, `timestamp`,
/// an object's name.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Error => f.write_str("!error!"),
            Type::Null => f.write_str("null"),
            Type::Duration => f.write_str("duration"),
            Type::Timestamp => f.write_str("timestamp"),
            Type::Type(None) => f.write_str("type"),
            Type::Object(o) => f.write_str(o.name()),
            t => {
                let params = t.parameters();
                if params.is_empty() {
                    return f.write_str(t.type_name());
                }
                let list: Vec<String> = params.iter().map(ToString::to_string).collect();
                write!(f, "{}({})", t.type_name(), list.join(", "))
            }
        }
    }
}

/// Type parameter bindings made while checking: cel-go's `mapping`, keyed by the formatted
/// parameter.
#[derive(Clone, Debug, Default)]
pub struct Mapping(HashMap<String, Type>);

impl Mapping {
    fn add(&mut self, from: &Type, to: Type) {
        self.0.insert(from.to_string(), to);
    }

    fn find(&self, from: &Type) -> Option<&Type> {
        self.0.get(&from.to_string())
    }

    /// `t` with bound parameters replaced, unbound ones by `dyn` if `params_to_dyn`.
    pub fn substitute(&self, t: &Type, params_to_dyn: bool) -> Type {
        if let Some(sub) = self.find(t) {
            return self.substitute(&sub.clone(), params_to_dyn);
        }
        match t {
            Type::Param(_) if params_to_dyn => Type::Dyn,
            Type::List(..) | Type::Map(..) | Type::Opaque(..) | Type::Type(Some(_)) => {
                t.with_parameters(t.parameters().iter().map(|p| self.substitute(p, params_to_dyn)).collect())
            }
            _ => t.clone(),
        }
    }

    /// cel-go's `isAssignable`: whether `t1` is assignable to `t2`, binding parameters here
    /// only if it is.
    pub fn is_assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        let mut copy = self.clone();
        if copy.internal_is_assignable(t1, t2) {
            *self = copy;
            true
        } else {
            false
        }
    }

    /// [`Mapping::is_assignable`] over two lists of the same length.
    pub fn is_assignable_list(&mut self, l1: &[Type], l2: &[Type]) -> bool {
        let mut copy = self.clone();
        if copy.internal_is_assignable_list(l1, l2) {
            *self = copy;
            true
        } else {
            false
        }
    }

    fn internal_is_assignable_list(&mut self, l1: &[Type], l2: &[Type]) -> bool {
        l1.len() == l2.len() && l1.iter().zip(l2).all(|(a, b)| self.internal_is_assignable(a, b))
    }

    fn internal_is_assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        if let Type::Param(_) = t2 {
            let (valid, has_sub) = self.is_valid_substitution(t1, t2);
            if valid {
                return true;
            }
            if has_sub {
                return false;
            }
        }
        if let Type::Param(_) = t1 {
            return self.is_valid_substitution(t2, t1).0;
        }
        if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
            return true;
        }
        if let Type::Null = t1 {
            return is_nullable(t2);
        }
        if let Type::Null = t2 {
            return is_nullable(t1);
        }
        match t1.kind() {
            Kind::Bool
            | Kind::Bytes
            | Kind::Double
            | Kind::Int
            | Kind::String
            | Kind::Uint
            | Kind::Duration
            | Kind::Timestamp
            | Kind::Struct => t2.is_assignable_type(t1),
            Kind::Type => t2.kind() == Kind::Type,
            Kind::Opaque | Kind::List | Kind::Map => {
                t1.kind() == t2.kind()
                    && t1.type_name() == t2.type_name()
                    && self.internal_is_assignable_list(&t1.parameters(), &t2.parameters())
            }
            _ => false,
        }
    }

    /// cel-go's `isValidTypeSubstitution`: (whether `t2` can stand for `t1`, whether `t2`
    /// already had a binding).
    fn is_valid_substitution(&mut self, t1: &Type, t2: &Type) -> (bool, bool) {
        if t1.is_exact(t2) {
            return (true, true);
        }
        if let Some(sub) = self.find(t2).cloned() {
            if t1.is_exact(&sub) {
                return (true, true);
            }
            if self.internal_is_assignable(t1, &sub) {
                let general = most_general(t1, &sub);
                if self.not_referenced_in(t2, &general) {
                    self.add(t2, general);
                }
                return (true, true);
            }
            return (false, true);
        }
        if self.not_referenced_in(t2, t1) {
            self.add(t2, t1.clone());
            return (true, false);
        }
        (false, false)
    }

    /// The occurs check: `t` appears nowhere in `within`.
    fn not_referenced_in(&self, t: &Type, within: &Type) -> bool {
        if t.is_exact(within) {
            return false;
        }
        match within {
            Type::Param(_) => match self.find(within) {
                Some(sub) => self.not_referenced_in(t, &sub.clone()),
                None => true,
            },
            Type::Opaque(..) | Type::List(_) | Type::Map(..) | Type::Type(_) => {
                within.parameters().iter().all(|p| self.not_referenced_in(t, p))
            }
            _ => true,
        }
    }
}

/// Whether `null` is assignable to `t` (cel-go's legacy nullness: objects, opaque types,
/// durations, timestamps).
fn is_nullable(t: &Type) -> bool {
    matches!(t, Type::Opaque(..) | Type::Object(_) | Type::Duration | Type::Timestamp | Type::Null | Type::Dyn)
}

/// cel-go's `isEqualOrLessSpecific`.
fn is_equal_or_less_specific(t1: &Type, t2: &Type) -> bool {
    if t1.is_dyn() || matches!(t1, Type::Param(_)) {
        return true;
    }
    if t2.is_dyn() || matches!(t2, Type::Param(_)) {
        return false;
    }
    if t1.kind() != t2.kind() {
        return false;
    }
    match t1.kind() {
        Kind::Opaque => {
            let (p1, p2) = (t1.parameters(), t2.parameters());
            t1.type_name() == t2.type_name()
                && p1.len() == p2.len()
                && p1.iter().zip(&p2).all(|(a, b)| is_equal_or_less_specific(a, b))
        }
        Kind::List | Kind::Map => {
            t1.parameters().iter().zip(&t2.parameters()).all(|(a, b)| is_equal_or_less_specific(a, b))
        }
        Kind::Type => true,
        _ => t1.is_exact(t2),
    }
}

/// The more general of two types known to unify.
pub fn most_general(t1: &Type, t2: &Type) -> Type {
    if is_equal_or_less_specific(t1, t2) { t1.clone() } else { t2.clone() }
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

impl Type {
    /// The type at a dotted field path (`spec.replicas`), for tests that look deep.
    pub fn field_path(&self, path: &str) -> Option<Type> {
        let mut t = self.clone();
        for f in path.split('.') {
            let Type::Object(o) = t else { return None };
            t = o.field(f)?;
        }
        Some(t)
    }
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
    fn type_parameters_bind_to_what_they_first_meet() {
        let mut m = Mapping::default();
        let a = Type::param("A");
        assert!(m.is_assignable(&Type::Int, &a));
        assert!(!m.is_assignable(&Type::String, &a), "A is int now");
        assert!(m.is_assignable(&Type::Double, &Type::Dyn));
        assert_eq!(m.substitute(&Type::list(a), false).to_string(), "list(int)");
    }

    #[test]
    fn null_is_assignable_to_objects_and_timestamps_not_to_numbers() {
        let mut m = Mapping::default();
        assert!(!m.is_assignable(&Type::Null, &Type::Int));
        assert!(m.is_assignable(&Type::Null, &Type::Timestamp));
        assert!(m.is_assignable(&Type::Null, &Type::named("kubernetes.Quantity")));
        assert_eq!(Type::optional(Type::String).to_string(), "optional_type(string)");
        assert_eq!(Type::Timestamp.to_string(), "timestamp");
    }
}
