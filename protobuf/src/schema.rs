//! The messages, compiled once from the descriptor set into tables the codec walks: fields in
//! number order, looked up by number when decoding and by JSON name when encoding.

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind};

static DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/k8s.fds"));
static GO_FIELDS: &str = include_str!(concat!(env!("OUT_DIR"), "/go_fields.txt"));

/// Index of a message in [`Schema::messages`].
pub type MessageId = usize;

/// A field's value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// `string`.
    String,
    /// `bytes`: base64 in JSON.
    Bytes,
    /// `bool`.
    Bool,
    /// `int32`, `int64`, `uint32`, `uint64` (varints).
    Int,
    /// `sint32`/`sint64` (zigzag varints).
    SInt,
    /// `double`.
    Double,
    /// `float`.
    Float,
    /// `fixed32`/`sfixed32`.
    Fixed32,
    /// `fixed64`/`sfixed64`.
    Fixed64,
    /// An embedded message.
    Message(MessageId),
}

/// How a field appears in JSON.
#[derive(Clone, Debug)]
pub struct Field {
    /// The protobuf field number.
    pub number: u32,
    /// The JSON key.
    pub json: String,
    /// The value type (a map's value type for maps).
    pub kind: Scalar,
    /// `repeated` (a JSON array).
    pub repeated: bool,
    /// A map's key type (a JSON object).
    pub map_key: Option<Scalar>,
    /// An embedded struct whose fields JSON lists in the parent (`json:",inline"`).
    pub inline: bool,
    /// Omitted from JSON when zero (`omitempty` on a non-pointer scalar).
    pub omit_zero: bool,
    /// A value in Go (not a pointer, slice or map): Go's marshaller writes it even when zero,
    /// and a Go decoder reads its absence as the zero value.
    pub always: bool,
    /// A pointer, slice or map without `omitempty`: Go writes `null` to JSON when it is nil.
    pub nil_written: bool,
}

/// Messages whose JSON form is not an object of their fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// An object of its fields.
    None,
    /// `metav1.Time`: RFC 3339 in seconds ↔ `{seconds, nanos}`.
    Time,
    /// `metav1.MicroTime`: RFC 3339 in microseconds ↔ `{seconds, nanos}`.
    MicroTime,
    /// `metav1.Duration`: a Go duration string ↔ `{duration}` in nanoseconds.
    Duration,
    /// `resource.Quantity`: a string ↔ `{string}`.
    Quantity,
    /// `intstr.IntOrString`: a number or a string ↔ `{type, intVal, strVal}`.
    IntOrString,
    /// `runtime.RawExtension`: any JSON ↔ `{raw}` holding its bytes.
    RawExtension,
    /// `metav1.FieldsV1`: a JSON object ↔ `{Raw}` holding its bytes.
    FieldsV1,
    /// A named Go slice (`Verbs`, `ExtraValue`): a JSON array ↔ `{repeated items = 1}`.
    Items,
    /// apiextensions' `JSON`: any JSON value ↔ `{raw}` holding its bytes (never an embedded
    /// object, unlike [`Special::RawExtension`]).
    Json,
    /// `JSONSchemaPropsOrArray`: a schema ↔ `{schema}`, an array of schemas ↔ `{schemas}`.
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool`: a boolean ↔ `{allows}`, a schema ↔ `{allows: true, schema}`.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray`: a schema ↔ `{schema}`, strings ↔ `{property}`.
    SchemaOrStringArray,
}

/// One member (or inlined struct's members) a message's decoder adds when absent.
#[derive(Debug)]
pub(crate) enum Fill {
    /// An embedded struct's zero members, unless the bytes carried the struct (its number).
    Inline(u32, serde_json::Map<String, serde_json::Value>),
    /// A member and its zero value.
    Member(String, serde_json::Value),
}

/// One message.
#[derive(Debug)]
pub struct Message {
    /// Full name, `k8s.io.api.core.v1.Pod`.
    pub name: String,
    /// Its JSON shape.
    pub special: Special,
    /// Fields in number order.
    pub fields: Vec<Field>,
    /// What a decoder adds to an object when its bytes lack them, worked out on first use
    /// (`codec::fills`).
    pub(crate) fills: OnceLock<Vec<Fill>>,
    /// The indices of the fields that are JSON members (not inline), ordered by JSON name as
    /// an object's keys are, so an encoder finds every field's value in one walk of both.
    pub(crate) by_json: Vec<usize>,
}

impl Message {
    /// The field numbered `n`.
    pub fn field(&self, n: u32) -> Option<&Field> {
        // In number order: a binary search of a few dozen numbers.
        self.fields.binary_search_by_key(&n, |f| f.number).ok().map(|i| &self.fields[i])
    }
}

/// Every message of the compiled .proto files.
#[derive(Debug)]
pub struct Schema {
    /// The messages.
    pub messages: Vec<Message>,
    by_name: HashMap<String, MessageId>,
}

impl Schema {
    /// The schema of the built-in API, compiled at first use.
    pub fn global() -> &'static Schema {
        static SCHEMA: LazyLock<Schema> = LazyLock::new(Schema::build);
        &SCHEMA
    }

    /// The message of a full name.
    pub fn message(&self, name: &str) -> Option<MessageId> {
        self.by_name.get(name).copied()
    }

    /// The message of an object of `apiVersion` and `kind` (`apps/v1`, `Deployment`), from
    /// the Go package kube generates the group from. Groups not built in (custom resources)
    /// have none, whatever their kinds are called.
    pub fn message_for(&self, api_version: &str, kind: &str) -> Option<MessageId> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let own = package_of(group).and_then(|package| self.message(&format!("{package}.{version}.{kind}")));
        own.or_else(|| {
            // Status, WatchEvent and the other meta kinds travel under any group's version.
            self.message(&format!("k8s.io.apimachinery.pkg.apis.meta.v1.{kind}")).filter(|_| {
                matches!(
                    kind,
                    "Status"
                        | "WatchEvent"
                        | "DeleteOptions"
                        | "APIResourceList"
                        | "APIGroupList"
                        | "APIGroup"
                        | "APIVersions"
                )
            })
        })
    }

    fn build() -> Schema {
        let pool = DescriptorPool::decode(DESCRIPTORS).expect("the compiled descriptor set decodes");
        let mut go: HashMap<(&str, u32), (&str, &str)> = HashMap::new();
        for line in GO_FIELDS.lines() {
            let mut w = line.split(' ');
            if let (Some(m), Some(n), Some(flags), Some(json)) = (w.next(), w.next(), w.next(), w.next())
                && let Ok(n) = n.parse()
            {
                go.insert((m, n), (flags, json));
            }
        }
        let descriptors: Vec<_> = pool.all_messages().filter(|m| !m.is_map_entry()).collect();
        let by_name: HashMap<String, MessageId> =
            descriptors.iter().enumerate().map(|(i, m)| (m.full_name().to_string(), i)).collect();
        let scalar = |f: &FieldDescriptor| match f.kind() {
            Kind::String => Scalar::String,
            Kind::Bytes => Scalar::Bytes,
            Kind::Bool => Scalar::Bool,
            Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Enum(_) => Scalar::Int,
            Kind::Sint32 | Kind::Sint64 => Scalar::SInt,
            Kind::Double => Scalar::Double,
            Kind::Float => Scalar::Float,
            Kind::Fixed32 | Kind::Sfixed32 => Scalar::Fixed32,
            Kind::Fixed64 | Kind::Sfixed64 => Scalar::Fixed64,
            Kind::Message(m) => Scalar::Message(by_name[m.full_name()]),
        };
        let messages = descriptors
            .iter()
            .map(|m| {
                let mut fields: Vec<Field> = m
                    .fields()
                    .map(|f| {
                        let (flags, json) = go.get(&(m.full_name(), f.number())).copied().unwrap_or(("-", "-"));
                        let (kind, map_key) = match f.kind() {
                            Kind::Message(entry) if f.is_map() => {
                                (scalar(&entry.map_entry_value_field()), Some(scalar(&entry.map_entry_key_field())))
                            }
                            _ => (scalar(&f), None),
                        };
                        // Named Go slices (`Items` messages) and byte slices are nil-able,
                        // whatever the Go type's spelling said.
                        let nil_able = match f.kind() {
                            Kind::Message(sub) => is_items(&sub),
                            Kind::Bytes => true,
                            _ => false,
                        };
                        Field {
                            number: f.number(),
                            json: if json == "-" { f.name().to_string() } else { json.to_string() },
                            kind,
                            repeated: f.is_list(),
                            map_key,
                            inline: flags.contains('i'),
                            omit_zero: flags.contains('z'),
                            always: flags.contains('w') && !f.is_list() && !f.is_map() && !nil_able,
                            nil_written: flags.contains('n')
                                || (nil_able && flags.contains('w') && !flags.contains('z')),
                        }
                    })
                    .collect();
                fields.sort_by_key(|f| f.number);
                let special = special(m.full_name(), &fields);
                let mut by_json: Vec<usize> = (0..fields.len()).filter(|&i| !fields[i].inline).collect();
                by_json.sort_by(|&a, &b| fields[a].json.cmp(&fields[b].json));
                Message { name: m.full_name().to_string(), special, fields, by_json, fills: OnceLock::new() }
            })
            .collect();
        Schema { messages, by_name }
    }
}

/// The Go package (as a proto package) kube generates a group's messages from.
fn package_of(group: &str) -> Option<&'static str> {
    Some(match group {
        "" => "k8s.io.api.core",
        "meta.k8s.io" => "k8s.io.apimachinery.pkg.apis.meta",
        "apiextensions.k8s.io" => "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions",
        "apiregistration.k8s.io" => "k8s.io.kube_aggregator.pkg.apis.apiregistration",
        "admission.k8s.io" => "k8s.io.api.admission",
        "admissionregistration.k8s.io" => "k8s.io.api.admissionregistration",
        "apidiscovery.k8s.io" => "k8s.io.api.apidiscovery",
        "internal.apiserver.k8s.io" => "k8s.io.api.apiserverinternal",
        "apps" => "k8s.io.api.apps",
        "authentication.k8s.io" => "k8s.io.api.authentication",
        "authorization.k8s.io" => "k8s.io.api.authorization",
        "autoscaling" => "k8s.io.api.autoscaling",
        "batch" => "k8s.io.api.batch",
        "certificates.k8s.io" => "k8s.io.api.certificates",
        "coordination.k8s.io" => "k8s.io.api.coordination",
        "discovery.k8s.io" => "k8s.io.api.discovery",
        "events.k8s.io" => "k8s.io.api.events",
        "extensions" => "k8s.io.api.extensions",
        "flowcontrol.apiserver.k8s.io" => "k8s.io.api.flowcontrol",
        "imagepolicy.k8s.io" => "k8s.io.api.imagepolicy",
        "networking.k8s.io" => "k8s.io.api.networking",
        "node.k8s.io" => "k8s.io.api.node",
        "policy" => "k8s.io.api.policy",
        "rbac.authorization.k8s.io" => "k8s.io.api.rbac",
        "resource.k8s.io" => "k8s.io.api.resource",
        "scheduling.k8s.io" => "k8s.io.api.scheduling",
        "storage.k8s.io" => "k8s.io.api.storage",
        "storagemigration.k8s.io" => "k8s.io.api.storagemigration",
        _ => return None,
    })
}

/// A named Go slice of strings (`Verbs`, `ExtraValue`): one repeated string field `items` = 1,
/// which the Go type has no JSON name for. A struct of one `items` list of messages
/// (`DownwardAPIProjection`) is a struct.
fn is_items(m: &prost_reflect::MessageDescriptor) -> bool {
    let mut fields = m.fields();
    matches!((fields.next(), fields.next()), (Some(f), None)
        if f.number() == 1 && f.is_list() && f.name() == "items" && f.kind() == Kind::String)
}

/// apiextensions' messages with JSON forms of their own.
const APIEXTENSIONS_V1: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1";

fn special(name: &str, fields: &[Field]) -> Special {
    if let Some(short) = name.strip_prefix(APIEXTENSIONS_V1).and_then(|n| n.strip_prefix('.')) {
        match short {
            "JSON" => return Special::Json,
            "JSONSchemaPropsOrArray" => return Special::SchemaOrArray,
            "JSONSchemaPropsOrBool" => return Special::SchemaOrBool,
            "JSONSchemaPropsOrStringArray" => return Special::SchemaOrStringArray,
            _ => {}
        }
    }
    match name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => Special::RawExtension,
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => Special::FieldsV1,
        _ if matches!(fields, [f] if f.number == 1 && f.repeated && f.json == "items" && f.kind == Scalar::String) => {
            Special::Items
        }
        _ => Special::None,
    }
}
