//! Content negotiation: which representation a client accepts, how request bodies decode, how
//! responses encode, and the version an object is served in.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::ApiError;
use apimachinery::object::MAX_NESTING;
use apimachinery::table::{self, IncludeObject, TableOptions};
use serde_json::Value;

use crate::context::RequestContext;

/// How a response is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// What a response shows of the objects it answers with (`as=` of the Accept header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The objects themselves.
    Object,
    /// `as=Table;g=meta.k8s.io;v=v1`: `kubectl get`'s rows (JSON or YAML only, as in kube).
    Table,
    /// `as=PartialObjectMetadata`: an object's metadata alone.
    Metadata,
    /// `as=PartialObjectMetadataList`: a list of metadata alone.
    MetadataList,
}

/// A negotiated response representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    /// The encoding.
    pub encoding: Encoding,
    /// The view.
    pub view: View,
}

impl Output {
    /// Plain JSON objects.
    pub const JSON: Output = Output { encoding: Encoding::Json, view: View::Object };

    /// The content type of a response (a watch's frames get `;stream=watch` but for JSON, as
    /// kube labels them).
    pub fn content_type(&self, watch: bool) -> &'static str {
        match (self.encoding, watch) {
            (Encoding::Json, _) => "application/json",
            (Encoding::Yaml, _) => "application/yaml",
            (Encoding::Protobuf, false) => protobuf::CONTENT_TYPE,
            (Encoding::Protobuf, true) => protobuf::WATCH_CONTENT_TYPE,
        }
    }
}

/// What an endpoint can answer with besides plain JSON and YAML.
#[derive(Clone, Copy, Debug, Default)]
pub struct Offer {
    /// Tables (reads of resources).
    pub tables: bool,
    /// Metadata-only views (reads of resources), in protobuf too whatever the kind: they are
    /// `meta.k8s.io` messages (kube serves them for custom resources since 1.16).
    pub metadata: bool,
    /// Protobuf of the objects themselves (built-in kinds, not custom resources).
    pub protobuf: bool,
}

impl Offer {
    /// What reads of `def` offer (`tables` false for subresources).
    pub fn reads(def: &ResourceDef, tables: bool) -> Offer {
        Offer { tables, metadata: tables, protobuf: has_protobuf(def) }
    }

    /// What writes of `def` offer.
    pub fn writes(def: &ResourceDef) -> Offer {
        Offer { tables: false, metadata: false, protobuf: has_protobuf(def) }
    }

    /// What a 406 names: kube's serializers for a resource, custom ones included, are these
    /// three (a custom resource's protobuf one serves only metadata views).
    fn accepted(&self) -> &'static str {
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    }
}

/// Whether `def`'s kind has a protobuf message (every built-in kind does).
pub fn has_protobuf(def: &ResourceDef) -> bool {
    protobuf::supports(&def.api_version(), &def.kind)
}

/// One media range of an Accept header.
struct MediaRange<'a> {
    kind: &'a str,
    subtype: &'a str,
    q: f32,
    params: Vec<(&'a str, &'a str)>,
}

/// The ranges of an Accept header in the order kube tries them: by quality, then the more
/// specific first, else as written (goautoneg's order).
fn parse_ranges(accept: &str) -> Vec<MediaRange<'_>> {
    let mut ranges: Vec<MediaRange<'_>> = accept
        .split(',')
        .filter_map(|part| {
            let mut it = part.split(';').map(str::trim);
            let essence = it.next().filter(|e| !e.is_empty())?;
            let (kind, subtype) = essence.split_once('/').unwrap_or((essence, "*"));
            let mut q = 1.0;
            let mut params = Vec::new();
            for (k, v) in it.filter_map(|p| p.split_once('=')).map(|(k, v)| (k.trim(), v.trim())) {
                if k == "q" {
                    q = v.parse::<f32>().unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            // q=0 means "not acceptable".
            (q > 0.0).then_some(MediaRange { kind: kind.trim(), subtype: subtype.trim(), q, params })
        })
        .collect();
    let rank = |r: &MediaRange<'_>| (u8::from(r.kind != "*"), u8::from(r.subtype != "*"));
    ranges.sort_by(|a, b| b.q.total_cmp(&a.q).then_with(|| rank(b).cmp(&rank(a))));
    ranges
}

/// Picks the representation to answer with from `accept`, as kube's `NegotiateOutputMediaType`
/// does: the first range (in [`parse_ranges`] order) that one of our encodings (JSON, YAML,
/// protobuf, in that order) satisfies with all its conversion parameters.
pub fn negotiate(accept: Option<&str>, offer: Offer) -> Result<Output, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else { return Ok(Output::JSON) };
    let encodings: &[(Encoding, &str, &str)] = &[
        (Encoding::Json, "application", "json"),
        (Encoding::Yaml, "application", "yaml"),
        (Encoding::Protobuf, "application", "vnd.kubernetes.protobuf"),
    ];
    for range in parse_ranges(accept) {
        for &(encoding, kind, subtype) in encodings {
            let matches = (range.kind == kind && (range.subtype == subtype || range.subtype == "*"))
                || (range.kind == "*" && range.subtype == "*");
            let Some(view) = view_of(&range, encoding, offer).filter(|_| matches) else { continue };
            let metadata = matches!(view, View::Metadata | View::MetadataList);
            if encoding == Encoding::Protobuf && !offer.protobuf && !metadata {
                continue;
            }
            return Ok(Output { encoding, view });
        }
    }
    Err(ApiError::new(
        apimachinery::Reason::NotAcceptable,
        format!("only the following media types are accepted: {}", offer.accepted()),
    ))
}

/// The view a range's `as`, `g` and `v` ask for, if we can give it in `encoding`.
fn view_of(range: &MediaRange<'_>, encoding: Encoding, offer: Offer) -> Option<View> {
    let param = |k: &str| range.params.iter().find(|(pk, _)| *pk == k).map(|(_, v)| *v);
    let Some(target) = param("as") else { return Some(View::Object) };
    if param("g") != Some("meta.k8s.io") || !matches!(param("v"), Some("v1" | "v1beta1")) {
        return None;
    }
    match target {
        "Table" if offer.tables && encoding != Encoding::Protobuf => Some(View::Table),
        // client-go's metadata informers ask for v1; v1beta1 is not served.
        "PartialObjectMetadata" if offer.metadata && param("v") == Some("v1") => Some(View::Metadata),
        "PartialObjectMetadataList" if offer.metadata && param("v") == Some("v1") => Some(View::MetadataList),
        _ => None,
    }
}

/// How a request body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf.
    Protobuf,
}

/// The body encoding named by a Content-Type (JSON when absent, as kube assumes); protobuf
/// only where `protobuf` (built-in kinds).
pub fn input_format(content_type: Option<&str>, protobuf: bool) -> Result<Input, ApiError> {
    let essence = content_type.map(|c| c.split(';').next().unwrap_or("").trim()).unwrap_or("");
    match essence {
        "" | "application/json" => Ok(Input::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" => Ok(Input::Yaml),
        protobuf::CONTENT_TYPE if protobuf => Ok(Input::Protobuf),
        _ => {
            // Bodies of custom resources are JSON or YAML only.
            let accepted = if protobuf {
                "application/json, application/yaml, application/vnd.kubernetes.protobuf"
            } else {
                "application/json, application/yaml"
            };
            Err(ApiError::new(
                apimachinery::Reason::UnsupportedMediaType,
                format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
            ))
        }
    }
}

/// Decodes a request body into an object.
pub fn decode_body(format: Input, body: &[u8]) -> Result<Value, ApiError> {
    decode_body_keys(format, body).map(|(v, _)| v)
}

/// What `fieldValidation` reports of a body's repeated keys, as its format's decoder words
/// them: JSON ones by path (`duplicate field "spec.replicas"`), YAML ones by line.
#[derive(Debug, Default)]
pub struct BodyKeys {
    /// The object keys in document order, each with whether it repeats one of its object;
    /// empty when none repeats.
    pub order: Vec<(String, bool)>,
    /// A YAML body's repeated keys: `line 9: key "replicas" already set in map`.
    pub yaml_repeats: Vec<String>,
}

impl BodyKeys {
    /// Hands them to the storage stage with the write.
    pub fn record(self, options: &mut apimachinery::options::WriteOptions) {
        options.body_keys = self.order;
        options.yaml_repeats = self.yaml_repeats;
    }
}

/// go-yaml reports at most this many repeated keys here; each costs one more parse.
const MAX_YAML_REPEATS: usize = 16;

/// Decodes a request body, and finds the keys it repeats: what `fieldValidation` reports as
/// duplicate fields.
pub fn decode_body_keys(format: Input, body: &[u8]) -> Result<(Value, BodyKeys), ApiError> {
    let mut found = BodyKeys::default();
    let value: Value = match format {
        Input::Json => {
            let value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?;
            if apimachinery::schema::repeats_a_key(body) {
                found.order = apimachinery::schema::body_keys(body);
            }
            value
        }
        Input::Yaml => {
            let keys = std::cell::RefCell::new(Vec::new());
            let de = serde_yaml_ng::Deserializer::from_slice(body);
            let value = serde::de::DeserializeSeed::deserialize(Tracked::root(&keys, None), de)
                .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; yaml parse error: {e}")))?;
            let keys = keys.into_inner();
            let repeats = keys.iter().filter(|(_, repeated)| *repeated).count();
            if repeats > 0 {
                found.yaml_repeats =
                    (1..=repeats.min(MAX_YAML_REPEATS)).filter_map(|n| yaml_repeat_line(body, n)).collect();
                // The strict JSON decode after conversion sees no repeats: it reports unknown
                // fields only, in document order.
                found.order = keys.into_iter().map(|(path, _)| (path, false)).collect();
            }
            value
        }
        Input::Protobuf => protobuf::decode_object(body).map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "couldn't get version/kind; json parse error: json: cannot unmarshal into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }",
        ));
    }
    // What is stored must decode again with the server's JSON decoder, which stops at
    // MAX_NESTING: a YAML or protobuf body is not bounded by that decoder on the way in.
    if apimachinery::object::nesting(&value) > MAX_NESTING {
        return Err(too_deep());
    }
    Ok((value, found))
}

/// The 400 for a body nesting deeper than [`MAX_NESTING`] (kube's decoders stop at 10,000
/// levels with `exceeded max depth`; ours stop earlier, at what storage can read back).
fn too_deep() -> ApiError {
    ApiError::bad_request(format!(
        "couldn't get version/kind; json parse error: exceeded max depth: the object nests deeper than {MAX_NESTING} levels"
    ))
}

/// go-yaml's report of the `n`th repeated key (1-based, in document order): the parse is run
/// again and stopped at that key, whose position the YAML parser's error carries.
fn yaml_repeat_line(body: &[u8], n: usize) -> Option<String> {
    let keys = std::cell::RefCell::new(Vec::new());
    let stop = StopAt { nth: n, seen: std::cell::Cell::new(0), key: std::cell::RefCell::new(String::new()) };
    let de = serde_yaml_ng::Deserializer::from_slice(body);
    let err = serde::de::DeserializeSeed::deserialize(Tracked::root(&keys, Some(&stop)), de).err()?;
    let line = err.location()?.line();
    Some(format!(
        "line {line}: key {} already set in map",
        apimachinery::validation::field::go_quote(&stop.key.borrow())
    ))
}

/// Where a locating parse stops: at the `nth` repeated key, remembered in `key`.
struct StopAt {
    nth: usize,
    seen: std::cell::Cell<usize>,
    key: std::cell::RefCell<String>,
}

/// A map key, refused (with the parser's position) when it is the repeat [`StopAt`] wants.
struct Key<'a> {
    present: &'a serde_json::Map<String, Value>,
    stop: Option<&'a StopAt>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_string(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        if let Some(stop) = self.stop.filter(|_| self.present.contains_key(v)) {
            stop.seen.set(stop.seen.get() + 1);
            if stop.seen.get() == stop.nth {
                *stop.key.borrow_mut() = v.to_string();
                return Err(E::custom("repeated key"));
            }
        }
        Ok(v.to_string())
    }
}

/// Deserializes any document into a JSON value, recording every object key's path and whether
/// it repeats a key of its object (YAML bodies; JSON ones are scanned on their bytes).
struct Tracked<'a> {
    path: String,
    keys: &'a std::cell::RefCell<Vec<(String, bool)>>,
    stop: Option<&'a StopAt>,
}

impl<'a> Tracked<'a> {
    fn root(keys: &'a std::cell::RefCell<Vec<(String, bool)>>, stop: Option<&'a StopAt>) -> Self {
        Tracked { path: String::new(), keys, stop }
    }

    fn at(&self, path: String) -> Tracked<'a> {
        Tracked { path, keys: self.keys, stop: self.stop }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Tracked<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Tracked<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self.at(format!("{}[{}]", self.path, out.len())))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key_seed(Key { present: &out, stop: self.stop })? {
            let path = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            self.keys.borrow_mut().push((path.clone(), out.contains_key(&key)));
            let value = map.next_value_seed(self.at(path))?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Encodes `value` as `output` (a view was made by the caller).
pub fn respond(status: StatusCode, output: Output, value: &Value, pretty: bool) -> HttpResponse {
    let body = match output.encoding {
        Encoding::Yaml => serde_yaml_ng::to_string(value).map(String::into_bytes).unwrap_or_default(),
        Encoding::Json => {
            if pretty {
                apimachinery::encoded::to_json_pretty(value)
            } else {
                apimachinery::encoded::to_json(value)
            }
        }
        Encoding::Protobuf => match protobuf::encode_object(value) {
            Ok(body) => body,
            Err(e) => return error_response(&ApiError::internal(format!("encoding as protobuf: {e}")), None),
        },
    };
    HttpResponse::build(status).content_type(output.content_type(false)).body(body)
}

/// The Status response for an error, in protobuf when the client prefers it (kube encodes
/// errors as it would the object; a client whose Accept cannot be met gets JSON).
pub fn error_response(e: &ApiError, accept: Option<&str>) -> HttpResponse {
    let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut builder = HttpResponse::build(status);
    if let Some(after) = e.retry_after_seconds {
        builder.insert_header(("Retry-After", after.to_string()));
    }
    let status_object = e.to_status();
    let protobuf_offer = Offer { protobuf: true, ..Offer::default() };
    if negotiate(accept, protobuf_offer).is_ok_and(|o| o.encoding == Encoding::Protobuf)
        && let Ok(body) = protobuf::encode_object(&status_object)
    {
        return builder.content_type(protobuf::CONTENT_TYPE).body(body);
    }
    builder.content_type("application/json");
    builder.body(serde_json::to_vec(&status_object).unwrap_or_default())
}

/// `obj` as kube's `PartialObjectMetadata`.
pub fn partial_metadata(obj: &Value) -> Value {
    serde_json::json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

/// 406 for a metadata view that does not fit the answer, worded as kube's (which names the
/// Go type of the internal object).
pub fn wrong_metadata_view(def: &ResourceDef, asked: View) -> ApiError {
    let package = def.group.split('.').next().filter(|g| !g.is_empty()).unwrap_or("core");
    let message = match asked {
        View::Metadata => format!(
            "you requested PartialObjectMetadata, but the requested object is a list (*{package}.{}List)",
            def.kind
        ),
        _ => format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list (*{package}.{})",
            def.kind
        ),
    };
    ApiError::new(apimachinery::Reason::NotAcceptable, message)
}

/// A stored object in `def`'s served form.
pub fn served(def: &ResourceDef, stored: Value) -> Value {
    def.strategy.to_served(&stored).unwrap_or(stored)
}

/// `?includeObject=` and the negotiated Table version.
pub fn table_options(ctx: &RequestContext<'_>) -> Result<TableOptions, ApiError> {
    let include_object = IncludeObject::parse(ctx.query.get("includeObject"))?;
    let version =
        if ctx.header("Accept").is_some_and(|a| a.split(',').next().is_some_and(|first| first.contains("v=v1beta1"))) {
            table::MetaVersion::V1Beta1
        } else {
            table::MetaVersion::V1
        };
    Ok(TableOptions { include_object, no_headers: false, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_repeats_are_named_by_line_as_go_yaml_does() {
        let body = b"---\nmetadata:\n  name: a\n  name: b\nspec:\n  x:\n  - k: 1\n    k: 2\n";
        let (value, keys) = decode_body_keys(Input::Yaml, body).unwrap();
        assert_eq!(value["metadata"]["name"], "b", "the last repeat wins");
        assert_eq!(
            keys.yaml_repeats,
            ["line 4: key \"name\" already set in map", "line 8: key \"k\" already set in map"]
        );
        assert!(keys.order.iter().all(|(_, repeated)| !repeated), "paths are not reported for YAML");
        let (_, clean) = decode_body_keys(Input::Yaml, b"a: 1\nb: {a: 2}\n").unwrap();
        assert!(clean.order.is_empty() && clean.yaml_repeats.is_empty());
    }

    #[test]
    fn kubectl_get_asks_for_table() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let table = Output { encoding: Encoding::Json, view: View::Table };
        assert_eq!(negotiate(Some(a), READS).unwrap(), table);
        assert_eq!(negotiate(Some(a), Offer::default()).unwrap(), Output::JSON);
    }

    const READS: Offer = Offer { tables: true, metadata: true, protobuf: true };
    const PROTOBUF: Output = Output { encoding: Encoding::Protobuf, view: View::Object };

    #[test]
    fn client_go_gets_protobuf_and_custom_kinds_fall_back_or_are_refused() {
        let a = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(negotiate(Some(a), READS).unwrap(), PROTOBUF);
        let custom = Offer { protobuf: false, ..READS };
        assert_eq!(negotiate(Some(a), custom).unwrap(), Output::JSON);
        // kube's words for a custom resource, whose serializers include protobuf (for metadata).
        let e = negotiate(Some("application/vnd.kubernetes.protobuf"), custom).unwrap_err();
        assert_eq!(e.code, 406);
        assert_eq!(
            e.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let meta = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            negotiate(Some(meta), custom).unwrap(),
            Output { encoding: Encoding::Protobuf, view: View::MetadataList }
        );
        assert!(negotiate(Some("*/*"), Offer::default()).is_ok_and(|o| o == Output::JSON));
    }

    #[test]
    fn quality_orders_the_ranges_then_specificity() {
        let a = "application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9";
        assert_eq!(negotiate(Some(a), READS).unwrap(), PROTOBUF);
        assert_eq!(negotiate(Some("*/*;q=0.8, application/yaml"), READS).unwrap().encoding, Encoding::Yaml);
        assert_eq!(negotiate(Some("*/*"), READS).unwrap(), Output::JSON);
        assert_eq!(negotiate(Some("application/*"), READS).unwrap(), Output::JSON);
        assert_eq!(negotiate(Some("application/json;q=0, application/yaml"), READS).unwrap().encoding, Encoding::Yaml);
    }

    #[test]
    fn tables_are_json_or_yaml_and_metadata_any_encoding() {
        let pb_table = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(negotiate(Some(pb_table), READS).unwrap_err().code, 406);
        let yaml_table = "application/yaml;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(negotiate(Some(yaml_table), READS).unwrap(), Output { encoding: Encoding::Yaml, view: View::Table });
        let meta =
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            negotiate(Some(meta), READS).unwrap(),
            Output { encoding: Encoding::Protobuf, view: View::MetadataList }
        );
        // A conversion without its group is not one we can make: the next range answers.
        assert_eq!(
            negotiate(Some("application/json;as=Table, application/yaml"), READS).unwrap().encoding,
            Encoding::Yaml
        );
    }

    #[test]
    fn unsupported_body_is_415() {
        let e = input_format(Some("application/vnd.kubernetes.protobuf"), false).unwrap_err();
        assert_eq!(e.code, 415);
        assert_eq!(input_format(Some("application/vnd.kubernetes.protobuf"), true).unwrap(), Input::Protobuf);
        assert_eq!(input_format(None, false).unwrap(), Input::Json);
        assert_eq!(input_format(Some("application/yaml; charset=utf-8"), false).unwrap(), Input::Yaml);
        assert_eq!(
            input_format(Some("text/plain"), true).unwrap_err().message,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn malformed_json_is_400() {
        let e = decode_body(Input::Json, b"{\"kind\": ").unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.starts_with("couldn't get version/kind; json parse error"));
    }

    #[test]
    fn bodies_nested_past_what_storage_reads_back_are_400() {
        // A protobuf body is not bounded by the JSON decoder: a ControllerRevision whose
        // RawExtension holds JSON 127 deep decoded into an object 128 deep, which was stored
        // and then could not be read back.
        let mut data = serde_json::json!(1);
        for _ in 0..127 {
            data = serde_json::json!([data]);
        }
        let revision = serde_json::json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
                                          "metadata": {"name": "r"}, "data": data, "revision": 1});
        let body = protobuf::encode_object(&revision).unwrap();
        let e = decode_body(Input::Protobuf, &body).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.contains("exceeded max depth"), "{}", e.message);
        // One level less is stored as sent.
        let shallower = serde_json::json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
                                           "metadata": {"name": "r"}, "data": data[0], "revision": 1});
        let body = protobuf::encode_object(&shallower).unwrap();
        assert_eq!(decode_body(Input::Protobuf, &body).unwrap(), shallower);
        // YAML and JSON bodies as deep are refused too.
        let deep = format!("{{\"a\": {}1{}}}", "[".repeat(130), "]".repeat(130));
        assert_eq!(decode_body(Input::Json, deep.as_bytes()).unwrap_err().code, 400);
        assert_eq!(decode_body(Input::Yaml, deep.as_bytes()).unwrap_err().code, 400);
    }
}
