//! The `/openapi/v2` document as protobuf (`openapi.v2.Document` of gnostic's OpenAPIv2.proto),
//! the only form client-go's `OpenAPISchema()` reads.
//!
//! kubectl 1.30 asks for it when the v3 documents cannot answer: client-side validation of a
//! `kind: List` file under the default `--validate=strict` (the v3 field-validation check
//! refuses `v1/List` outright), and the fallbacks of `apply` and `explain`. kube converts its
//! JSON document with gnostic; we encode the same JSON directly. gnostic stores vendor
//! extensions, `default`, `enum` and `example` as YAML text in `Any.yaml`; JSON is YAML, so we
//! store their JSON text (readers parse them with a YAML decoder).

use serde_json::Value;

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn tag(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.tag(field, LEN);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// A proto3 string: omitted when empty.
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn strings(&mut self, field: u32, v: Option<&Value>) {
        for s in v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A sub-message: always written (presence matters for messages and oneofs).
    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    /// A proto3 bool: omitted when false.
    fn flag(&mut self, field: u32, b: bool) {
        if b {
            self.tag(field, VARINT);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, v: Option<&Value>) {
        if let Some(i) = v.and_then(Value::as_i64).filter(|i| *i != 0) {
            self.tag(field, VARINT);
            self.varint(i as u64);
        }
    }

    fn double(&mut self, field: u32, v: Option<&Value>) {
        if let Some(f) = v.and_then(Value::as_f64).filter(|f| *f != 0.0) {
            self.tag(field, FIXED64);
            self.0.extend_from_slice(&f.to_bits().to_le_bytes());
        }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn bool_of(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// gnostic's `Any`: the value as YAML text (field 2).
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(2, &v.to_string());
    m
}

/// `repeated NamedAny vendor_extension`: every `x-` key of `v`.
fn vendor_extensions(m: &mut Msg, field: u32, v: &Value) {
    for (k, val) in v.as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Msg::default();
        named.string(1, k);
        named.message(2, any(val));
        m.message(field, named);
    }
}

/// `Schema` (fields 1..31).
fn schema(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(1, str_of(v, "$ref"));
    m.string(2, str_of(v, "format"));
    m.string(3, str_of(v, "title"));
    m.string(4, str_of(v, "description"));
    if let Some(d) = v.get("default") {
        m.message(5, any(d));
    }
    m.double(6, v.get("multipleOf"));
    m.double(7, v.get("maximum"));
    m.flag(8, bool_of(v, "exclusiveMaximum"));
    m.double(9, v.get("minimum"));
    m.flag(10, bool_of(v, "exclusiveMinimum"));
    m.int64(11, v.get("maxLength"));
    m.int64(12, v.get("minLength"));
    m.string(13, str_of(v, "pattern"));
    m.int64(14, v.get("maxItems"));
    m.int64(15, v.get("minItems"));
    m.flag(16, bool_of(v, "uniqueItems"));
    m.int64(17, v.get("maxProperties"));
    m.int64(18, v.get("minProperties"));
    m.strings(19, v.get("required"));
    for e in v.get("enum").and_then(Value::as_array).into_iter().flatten() {
        m.message(20, any(e));
    }
    match v.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Msg::default();
            item.tag(2, VARINT);
            item.varint(u64::from(*b));
            m.message(21, item);
        }
        Some(s @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(s));
            m.message(21, item);
        }
        _ => {}
    }
    match v.get("type") {
        Some(Value::String(t)) => {
            let mut item = Msg::default();
            item.string(1, t);
            m.message(22, item);
        }
        Some(types @ Value::Array(_)) => {
            let mut item = Msg::default();
            item.strings(1, Some(types));
            m.message(22, item);
        }
        _ => {}
    }
    match v.get("items") {
        Some(s @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(s));
            m.message(23, item);
        }
        Some(Value::Array(list)) => {
            let mut item = Msg::default();
            list.iter().for_each(|s| item.message(1, schema(s)));
            m.message(23, item);
        }
        _ => {}
    }
    for s in v.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        m.message(24, schema(s));
    }
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        let mut p = Msg::default();
        for (name, s) in props {
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, schema(s));
            p.message(1, named);
        }
        m.message(25, p);
    }
    m.string(26, str_of(v, "discriminator"));
    m.flag(27, bool_of(v, "readOnly"));
    if let Some(e) = v.get("example") {
        m.message(30, any(e));
    }
    vendor_extensions(&mut m, 31, v);
    m
}

/// `ParametersItem` holding an inline `Parameter`.
fn parameter(p: &Value) -> Msg {
    let mut param = Msg::default();
    if str_of(p, "in") == "body" {
        let mut body = Msg::default();
        body.string(1, str_of(p, "description"));
        body.string(2, str_of(p, "name"));
        body.string(3, "body");
        body.flag(4, bool_of(p, "required"));
        if let Some(s) = p.get("schema") {
            body.message(5, schema(s));
        }
        vendor_extensions(&mut body, 6, p);
        param.message(1, body);
    } else {
        // Query and path sub-schemas share their first fields; `type` is 6 for query and 5
        // for path, and the later numbers shift by one the same way.
        let query = str_of(p, "in") != "path";
        let shift = u32::from(query);
        let mut sub = Msg::default();
        sub.flag(1, bool_of(p, "required"));
        sub.string(2, str_of(p, "in"));
        sub.string(3, str_of(p, "description"));
        sub.string(4, str_of(p, "name"));
        if query {
            sub.flag(5, bool_of(p, "allowEmptyValue"));
        }
        sub.string(5 + shift, str_of(p, "type"));
        sub.string(6 + shift, str_of(p, "format"));
        sub.flag(19 + shift, bool_of(p, "uniqueItems"));
        vendor_extensions(&mut sub, 22 + shift, p);
        let mut non_body = Msg::default();
        non_body.message(if query { 3 } else { 4 }, sub);
        param.message(2, non_body);
    }
    let mut item = Msg::default();
    item.message(1, param);
    item
}

fn operation(op: &Value) -> Msg {
    let mut m = Msg::default();
    m.strings(1, op.get("tags"));
    m.string(2, str_of(op, "summary"));
    m.string(3, str_of(op, "description"));
    m.string(5, str_of(op, "operationId"));
    m.strings(6, op.get("produces"));
    m.strings(7, op.get("consumes"));
    for p in op.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        m.message(8, parameter(p));
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        let mut r = Msg::default();
        for (code, resp) in responses {
            let mut response = Msg::default();
            response.string(1, str_of(resp, "description"));
            if let Some(s) = resp.get("schema") {
                let mut item = Msg::default();
                item.message(1, schema(s));
                response.message(2, item);
            }
            let mut value = Msg::default();
            value.message(1, response);
            let mut named = Msg::default();
            named.string(1, code);
            named.message(2, value);
            r.message(1, named);
        }
        m.message(9, r);
    }
    m.strings(10, op.get("schemes"));
    m.flag(11, bool_of(op, "deprecated"));
    vendor_extensions(&mut m, 13, op);
    m
}

fn path_item(item: &Value) -> Msg {
    let mut m = Msg::default();
    for (field, method) in
        [(2, "get"), (3, "put"), (4, "post"), (5, "delete"), (6, "options"), (7, "head"), (8, "patch")]
    {
        if let Some(op) = item.get(method) {
            m.message(field, operation(op));
        }
    }
    for p in item.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        m.message(9, parameter(p));
    }
    vendor_extensions(&mut m, 10, item);
    m
}

/// Encodes a Swagger 2.0 document (as `openapi_v2` builds it) as `openapi.v2.Document`.
pub(crate) fn encode_document(doc: &Value) -> Vec<u8> {
    let mut m = Msg::default();
    m.string(1, str_of(doc, "swagger"));
    if let Some(info) = doc.get("info") {
        let mut i = Msg::default();
        i.string(1, str_of(info, "title"));
        i.string(2, str_of(info, "version"));
        i.string(3, str_of(info, "description"));
        m.message(2, i);
    }
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        let mut p = Msg::default();
        for (name, item) in paths {
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, path_item(item));
            p.message(2, named);
        }
        m.message(8, p);
    }
    if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
        let mut d = Msg::default();
        for (name, s) in defs {
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, schema(s));
            d.message(1, named);
        }
        m.message(9, d);
    }
    for requirement in doc.get("security").and_then(Value::as_array).into_iter().flatten() {
        let mut r = Msg::default();
        for (name, scopes) in requirement.as_object().into_iter().flatten() {
            let mut array = Msg::default();
            array.strings(1, Some(scopes));
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, array);
            r.message(1, named);
        }
        m.message(12, r);
    }
    if let Some(defs) = doc.get("securityDefinitions").and_then(Value::as_object) {
        let mut d = Msg::default();
        for (name, def) in defs {
            let mut key = Msg::default();
            key.string(1, str_of(def, "type"));
            key.string(2, str_of(def, "name"));
            key.string(3, str_of(def, "in"));
            key.string(4, str_of(def, "description"));
            let mut item = Msg::default();
            item.message(2, key);
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, item);
            d.message(1, named);
        }
        m.message(13, d);
    }
    m.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn varints_and_strings_follow_the_wire_format() {
        let mut m = Msg::default();
        m.varint(300);
        assert_eq!(m.0, [0xAC, 0x02]);
        let mut m = Msg::default();
        m.string(1, "2.0");
        assert_eq!(m.0, [0x0A, 3, b'2', b'.', b'0']);
        let mut m = Msg::default();
        m.string(1, "");
        m.flag(2, false);
        assert!(m.0.is_empty(), "proto3 defaults are omitted");
    }

    #[test]
    fn schema_keeps_extensions_as_yaml_text() {
        let s = json!({"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}]});
        let bytes = schema(&s).0;
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("x-kubernetes-group-version-kind"));
        assert!(text.contains(r#"[{"group":"","kind":"Pod","version":"v1"}]"#));
        // field 22 (type) = tag 0xB2 0x01, then TypeItem { value: "object" }.
        assert!(bytes.windows(3).any(|w| w == [0xB2, 0x01, 8]));
    }
}
