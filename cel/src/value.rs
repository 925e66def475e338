//! CEL values as cel-go holds them: the standard types, lists and maps (with kube's list types),
//! optionals, type values, and the opaque values of kube's libraries.
//!
//! Equality is cel-go's heterogeneous equality: numbers compare across `int`, `uint` and
//! `double`, values of different types are unequal (never an error), lists and maps compare
//! element by element. Lists a schema declares as `x-kubernetes-list-type: set` or `map`
//! compare regardless of order and concatenate as a union or a merge by key, as kube's
//! unstructured lists do.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset};

use crate::ext::Ext;

/// A CEL value.
#[derive(Clone, Debug)]
pub enum Value {
    /// `null`.
    Null,
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// `uint`.
    Uint(u64),
    /// `double`.
    Double(f64),
    /// `string`.
    String(Arc<str>),
    /// `bytes`.
    Bytes(Arc<[u8]>),
    /// `google.protobuf.Duration`, in nanoseconds (Go's `time.Duration`).
    Duration(i64),
    /// `google.protobuf.Timestamp`, with the offset it was written with.
    Timestamp(DateTime<FixedOffset>),
    /// `list(T)`.
    List(List),
    /// `map(K, V)`.
    Map(Map),
    /// A type value (`int`, `type(x)`).
    Type(TypeValue),
    /// `optional_type(T)`: `optional.none()` or a value.
    Optional(Option<Arc<Value>>),
    /// A value of one of kube's libraries (quantity, IP, CIDR, URL, format, authorizer).
    Ext(Ext),
}

/// A runtime type: its name, as `type(x)` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeValue(pub Arc<str>);

impl TypeValue {
    /// The type named `name`.
    pub fn named(name: &str) -> TypeValue {
        TypeValue(Arc::from(name))
    }
}

/// How a list compares and concatenates: kube's `x-kubernetes-list-type`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ListType {
    /// Ordered; `+` appends.
    #[default]
    Atomic,
    /// Unordered scalars; `+` is a union keeping the left side's order.
    Set,
    /// Objects keyed by the named fields; `+` merges by key.
    Map(Arc<[Arc<str>]>),
}

/// A list.
#[derive(Clone, Debug)]
pub struct List {
    /// The elements.
    pub items: Arc<Vec<Value>>,
    /// Its kube list type.
    pub list_type: ListType,
}

impl List {
    /// An ordered list.
    pub fn new(items: Vec<Value>) -> List {
        List { items: Arc::new(items), list_type: ListType::Atomic }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `self + other`: kube's set union and map-list merge where this list has that type.
    pub fn concat(&self, other: &List) -> List {
        match &self.list_type {
            ListType::Atomic => {
                let mut items = Vec::with_capacity(self.len() + other.len());
                items.extend(self.items.iter().cloned());
                items.extend(other.items.iter().cloned());
                List { items: Arc::new(items), list_type: ListType::Atomic }
            }
            ListType::Set => {
                let mut items: Vec<Value> = self.items.to_vec();
                for v in other.items.iter() {
                    if !items.iter().any(|x| x.equals(v)) {
                        items.push(v.clone());
                    }
                }
                List { items: Arc::new(items), list_type: ListType::Set }
            }
            ListType::Map(keys) => {
                let mut items: Vec<Value> = self.items.to_vec();
                for v in other.items.iter() {
                    let key = map_list_key(keys, v);
                    match items.iter().position(|x| map_list_key(keys, x) == key) {
                        Some(i) => items[i] = v.clone(),
                        None => items.push(v.clone()),
                    }
                }
                List { items: Arc::new(items), list_type: ListType::Map(keys.clone()) }
            }
        }
    }

    fn equals(&self, other: &List) -> bool {
        if self.len() != other.len() {
            return false;
        }
        match &self.list_type {
            // cel-go's lists compare elements as "not false": an error counts as equal.
            ListType::Atomic => self.items.iter().zip(other.items.iter()).all(|(a, b)| a.equality(b) != Some(false)),
            ListType::Set => other.items.iter().all(|v| self.items.iter().any(|x| x.equals(v))),
            ListType::Map(keys) => other.items.iter().all(|v| {
                let key = map_list_key(keys, v);
                self.items.iter().find(|x| map_list_key(keys, x) == key).is_some_and(|x| x.equals(v))
            }),
        }
    }
}

/// The key values of a map-list item, in key order (`None` for a missing key).
fn map_list_key(keys: &[Arc<str>], item: &Value) -> Vec<Option<Value>> {
    keys.iter()
        .map(|k| match item {
            Value::Map(m) => m.get(&Key::String(k.clone())).cloned(),
            _ => None,
        })
        .collect::<Vec<_>>()
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.equals(other)
    }
}

/// A map key: CEL allows `bool`, `int`, `uint` and `string`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// A `bool` key.
    Bool(bool),
    /// An `int` key.
    Int(i64),
    /// A `uint` key.
    Uint(u64),
    /// A `string` key.
    String(Arc<str>),
}

impl Key {
    /// The key a value makes, if it can be one.
    pub fn from_value(v: &Value) -> Option<Key> {
        Some(match v {
            Value::Bool(b) => Key::Bool(*b),
            Value::Int(i) => Key::Int(*i),
            Value::Uint(u) => Key::Uint(*u),
            Value::String(s) => Key::String(s.clone()),
            _ => return None,
        })
    }

    /// The key as a value.
    pub fn to_value(&self) -> Value {
        match self {
            Key::Bool(b) => Value::Bool(*b),
            Key::Int(i) => Value::Int(*i),
            Key::Uint(u) => Value::Uint(*u),
            Key::String(s) => Value::String(s.clone()),
        }
    }
}

/// A map.
#[derive(Clone, Debug, Default)]
pub struct Map {
    /// The entries, ordered by key.
    pub entries: Arc<BTreeMap<Key, Value>>,
}

impl Map {
    /// A map of `entries`.
    pub fn new(entries: BTreeMap<Key, Value>) -> Map {
        Map { entries: Arc::new(entries) }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value at `key`.
    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.entries.get(key)
    }

    /// The value at `key`, a number matching a key of another numeric type of the same value
    /// (cel-go's heterogeneous lookups: `{1: 'a'}[1u]`, `{1: 'a'}[1.0]`).
    pub fn find(&self, key: &Value) -> Option<&Value> {
        if let Some(k) = Key::from_value(key)
            && let Some(v) = self.entries.get(&k)
        {
            return Some(v);
        }
        let numeric = match key {
            Value::Int(i) => [u64::try_from(*i).ok().map(Key::Uint), None],
            Value::Uint(u) => [i64::try_from(*u).ok().map(Key::Int), None],
            Value::Double(d) if d.fract() == 0.0 && d.is_finite() => {
                let as_int =
                    (*d >= -9.223_372_036_854_776e18 && *d < 9.223_372_036_854_776e18).then_some(Key::Int(*d as i64));
                let as_uint = (*d >= 0.0 && *d < 1.844_674_407_370_955_2e19).then_some(Key::Uint(*d as u64));
                [as_int, as_uint]
            }
            _ => [None, None],
        };
        numeric.into_iter().flatten().find_map(|k| self.entries.get(&k))
    }

    fn equals(&self, other: &Map) -> bool {
        self.len() == other.len()
            && self.entries.iter().all(|(k, v)| other.find(&k.to_value()).is_some_and(|o| v.equality(o) != Some(false)))
    }
}

impl Value {
    /// A string value.
    pub fn string(s: impl Into<Arc<str>>) -> Value {
        Value::String(s.into())
    }

    /// A list of `items`.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(List::new(items))
    }

    /// `optional.of(v)`.
    pub fn some(v: Value) -> Value {
        Value::Optional(Some(Arc::new(v)))
    }

    /// The name of the value's type, as `type(x)` and cel-go's messages give it.
    pub fn type_name(&self) -> &str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Type(_) => "type",
            Value::Optional(_) => "optional_type",
            Value::Ext(e) => e.type_name(),
        }
    }

    /// cel-go's `Sizer`: code points of a string, bytes, elements of a list or map; kube's
    /// IP and CIDR sizes; 1 for anything else. Costs are computed from it.
    pub fn actual_size(&self) -> u64 {
        match self {
            Value::String(s) => s.chars().count() as u64,
            Value::Bytes(b) => b.len() as u64,
            Value::List(l) => l.len() as u64,
            Value::Map(m) => m.len() as u64,
            Value::Ext(e) => e.size(),
            _ => 1,
        }
    }

    /// cel-go's `Equal` as a bool, an error read as false.
    pub fn equals(&self, other: &Value) -> bool {
        self.equality(other) == Some(true)
    }

    /// cel-go's `Equal`: heterogeneous; `None` where it is an error (a library value on the
    /// left of a value of another type, as kube's libraries answer "no such overload").
    pub fn equality(&self, other: &Value) -> Option<bool> {
        use Value as V;
        Some(match (self, other) {
            (V::Null, V::Null) => true,
            (V::Null, _) | (_, V::Null) => false,
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::String(a), V::String(b)) => a == b,
            (V::Bytes(a), V::Bytes(b)) => a == b,
            (V::Duration(a), V::Duration(b)) => a == b,
            (V::Timestamp(a), V::Timestamp(b)) => a == b,
            (V::List(a), V::List(b)) => a.equals(b),
            (V::Map(a), V::Map(b)) => a.equals(b),
            (V::Type(a), V::Type(b)) => a == b,
            (V::Optional(a), V::Optional(b)) => match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => return a.equality(b),
                _ => false,
            },
            (V::Ext(a), b) => return a.equality(b),
            (a, b) => match (a.number(), b.number()) {
                (Some(x), Some(y)) => x.compare(y) == Some(Ordering::Equal),
                _ => false,
            },
        })
    }

    /// The number a numeric value holds.
    pub fn number(&self) -> Option<Number> {
        match self {
            Value::Int(i) => Some(Number::Int(*i)),
            Value::Uint(u) => Some(Number::Uint(*u)),
            Value::Double(d) => Some(Number::Double(*d)),
            _ => None,
        }
    }

    /// cel-go's `Compare` with cross-type numeric comparisons: `None` where the two cannot
    /// be ordered (different types, NaN).
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        use Value as V;
        match (self, other) {
            (V::Bool(a), V::Bool(b)) => Some(a.cmp(b)),
            (V::String(a), V::String(b)) => Some(a.cmp(b)),
            (V::Bytes(a), V::Bytes(b)) => Some(a.cmp(b)),
            (V::Duration(a), V::Duration(b)) => Some(a.cmp(b)),
            (V::Timestamp(a), V::Timestamp(b)) => Some(a.cmp(b)),
            (a, b) => a.number()?.compare(b.number()?),
        }
    }

    /// Whether it is its type's zero value (`optional.ofNonZeroValue`).
    pub fn is_zero(&self) -> bool {
        match self {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::Int(i) => *i == 0,
            Value::Uint(u) => *u == 0,
            Value::Double(d) => *d == 0.0,
            Value::String(s) => s.is_empty(),
            Value::Bytes(b) => b.is_empty(),
            Value::Duration(d) => *d == 0,
            Value::Timestamp(t) => t.timestamp() == -62_135_596_800 && t.timestamp_subsec_nanos() == 0,
            Value::List(l) => l.is_empty(),
            Value::Map(m) => m.is_empty(),
            Value::Optional(o) => o.is_none(),
            Value::Type(_) | Value::Ext(_) => false,
        }
    }
}

/// A number of one of CEL's three numeric types.
#[derive(Clone, Copy, Debug)]
pub enum Number {
    /// `int`.
    Int(i64),
    /// `uint`.
    Uint(u64),
    /// `double`.
    Double(f64),
}

impl Number {
    /// Compares across types by value, as cel-go does since `CrossTypeNumericComparisons`.
    pub fn compare(self, other: Number) -> Option<Ordering> {
        use Number as N;
        match (self, other) {
            (N::Int(a), N::Int(b)) => Some(a.cmp(&b)),
            (N::Uint(a), N::Uint(b)) => Some(a.cmp(&b)),
            (N::Int(a), N::Uint(b)) => Some(if a < 0 { Ordering::Less } else { (a as u64).cmp(&b) }),
            (N::Uint(a), N::Int(b)) => Some(if b < 0 { Ordering::Greater } else { a.cmp(&(b as u64)) }),
            (N::Double(a), N::Double(b)) => a.partial_cmp(&b),
            (N::Double(a), N::Int(b)) => compare_double_int(a, b),
            (N::Int(a), N::Double(b)) => compare_double_int(b, a).map(Ordering::reverse),
            (N::Double(a), N::Uint(b)) => compare_double_uint(a, b),
            (N::Uint(a), N::Double(b)) => compare_double_uint(b, a).map(Ordering::reverse),
        }
    }
}

/// cel-go's `compareDoubleInt`: beyond the range of an `int`, a double is greater or less.
fn compare_double_int(d: f64, i: i64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d < -9.223_372_036_854_776e18 {
        return Some(Ordering::Less);
    }
    if d >= 9.223_372_036_854_776e18 {
        return Some(Ordering::Greater);
    }
    d.partial_cmp(&(i as f64))
}

/// cel-go's `compareDoubleUint`.
fn compare_double_uint(d: f64, u: u64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d < 0.0 {
        return Some(Ordering::Less);
    }
    if d >= 1.844_674_407_370_955_2e19 {
        return Some(Ordering::Greater);
    }
    d.partial_cmp(&(u as f64))
}

impl fmt::Display for Value {
    /// How cel-go prints a value in an error (`no such key: x`, `index out of bounds: 3`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Uint(u) => write!(f, "{u}"),
            Value::Double(d) => f.write_str(&crate::golang::format_double(*d)),
            Value::String(s) => f.write_str(s),
            Value::Bytes(b) => f.write_str(&String::from_utf8_lossy(b)),
            Value::Duration(d) => f.write_str(&crate::golang::format_duration(*d)),
            Value::Timestamp(t) => f.write_str(&crate::golang::format_timestamp(t)),
            Value::Type(t) => f.write_str(&t.0),
            Value::List(l) => {
                f.write_str("[")?;
                for (i, v) in l.items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Map(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {v}", k.to_value())?;
                }
                f.write_str("}")
            }
            Value::Optional(None) => f.write_str("optional.none()"),
            Value::Optional(Some(v)) => write!(f, "optional.of({v})"),
            Value::Ext(e) => write!(f, "{e}"),
        }
    }
}

/// JSON as kube binds objects CEL has no schema for (webhook match conditions, policies):
/// integers are `int` (or `uint` beyond `int`'s range), other numbers `double`, objects maps
/// with string keys.
pub fn from_json(v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::Uint(u),
            _ => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::string(s.as_str()),
        J::Array(items) => Value::list(items.iter().map(from_json).collect()),
        J::Object(fields) => Value::Map(Map::new(
            fields.iter().map(|(k, v)| (Key::String(Arc::from(k.as_str())), from_json(v))).collect(),
        )),
    }
}

/// The JSON a value converts to (kube's `ConvertToNative` to JSON): durations and timestamps
/// as their string forms, bytes as base64, `None` for what JSON cannot hold (NaN, types).
pub fn to_json(v: &Value) -> Option<serde_json::Value> {
    use base64::Engine;
    use serde_json::Value as J;
    Some(match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::Uint(u) => J::from(*u),
        Value::Double(d) => J::Number(serde_json::Number::from_f64(*d)?),
        Value::String(s) => J::String(s.to_string()),
        Value::Bytes(b) => J::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::Duration(d) => J::String(crate::golang::format_duration(*d)),
        Value::Timestamp(t) => J::String(crate::golang::format_timestamp(t)),
        Value::List(l) => J::Array(l.items.iter().map(to_json).collect::<Option<Vec<_>>>()?),
        Value::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m.entries.iter() {
                let key = match k {
                    Key::String(s) => s.to_string(),
                    other => other.to_value().to_string(),
                };
                out.insert(key, to_json(v)?);
            }
            J::Object(out)
        }
        Value::Optional(Some(v)) => to_json(v)?,
        Value::Optional(None) => J::Null,
        Value::Type(_) | Value::Ext(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_equal_across_types() {
        assert!(Value::Int(1).equals(&Value::Uint(1)));
        assert!(Value::Int(1).equals(&Value::Double(1.0)));
        assert!(!Value::Double(f64::NAN).equals(&Value::Double(f64::NAN)));
        assert!(!Value::Int(1).equals(&Value::string("1")), "other types are unequal, not an error");
        assert_eq!(Value::Int(-1).compare(&Value::Uint(0)), Some(Ordering::Less));
        assert_eq!(Value::Double(1e300).compare(&Value::Int(i64::MAX)), Some(Ordering::Greater));
    }

    #[test]
    fn map_lookups_convert_numeric_keys() {
        let m = Map::new([(Key::Int(1), Value::string("a"))].into_iter().collect());
        assert!(m.find(&Value::Uint(1)).is_some() && m.find(&Value::Double(1.0)).is_some());
        assert!(m.find(&Value::Double(1.5)).is_none());
    }

    #[test]
    fn set_and_map_lists_compare_unordered_and_merge() {
        let set = |items: Vec<Value>| List { items: Arc::new(items), list_type: ListType::Set };
        let a = set(vec![Value::Int(1), Value::Int(2)]);
        let b = set(vec![Value::Int(2), Value::Int(1)]);
        assert!(Value::List(a.clone()).equals(&Value::List(b)));
        let union = a.concat(&List::new(vec![Value::Int(2), Value::Int(3)]));
        assert_eq!(union.items.len(), 3);
        let keyed = |name: &str, v: i64| {
            Value::Map(Map::new(
                [(Key::String("name".into()), Value::string(name)), (Key::String("v".into()), Value::Int(v))]
                    .into_iter()
                    .collect(),
            ))
        };
        let keys: Arc<[Arc<str>]> = Arc::from(vec![Arc::from("name")]);
        let ml = List { items: Arc::new(vec![keyed("a", 1), keyed("b", 2)]), list_type: ListType::Map(keys) };
        let merged = ml.concat(&List::new(vec![keyed("b", 3), keyed("c", 4)]));
        assert_eq!(merged.items.len(), 3);
        assert!(merged.items[1].equals(&keyed("b", 3)), "b keeps its place with the new value");
    }
}
