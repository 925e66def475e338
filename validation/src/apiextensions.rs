//! `apiextensions.k8s.io/v1` CustomResourceDefinition validation (`apiextensions-apiserver/
//! pkg/apis/apiextensions/validation`): `ValidateCustomResourceDefinition`, its update and its
//! status update.
//!
//! kube validates the internal form, which the v1 conversion builds by moving per-version
//! schemas, subresources, printer columns and selectable fields to the top of the spec when
//! every version has the same ones, and by flattening `conversion.webhook`. Field paths follow
//! that form: one shared schema is reported under `spec.validation.openAPIV3Schema`, a
//! conversion webhook's client under `spec.conversion.webhookClientConfig`. [`Spec`] is that
//! view of the v1 JSON.
//!
//! Schemas are checked in [`schema`], their `x-kubernetes-validations` rules compiled in
//! [`rules`].

mod rules;
mod schema;

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::{meta, names, webhook};
use apimachinery::error::Cause;
pub use schema::{FieldPath, valid_field_path};
use schema::{Options, get};

const SCOPES: [&str; 2] = ["Cluster", "Namespaced"];
const CONVERSION_STRATEGIES: [&str; 2] = ["None", "Webhook"];
/// `acceptedConversionReviewVersions`.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: [&str; 8] = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];
const COLUMN_TYPE_NAMES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
/// `MaxSelectableFields`.
const MAX_SELECTABLE_FIELDS: usize = 8;
/// `v1.KubeAPIApprovedAnnotation`.
const API_APPROVED: &str = "api-approved.kubernetes.io";
/// A non-nil Go pointer printed by `%#v`: kube prints its address, which no client can know.
const GO_ADDRESS: &str = "0xc000000000";

fn md(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    list(v, key).iter().map(|s| s.as_str().unwrap_or("")).collect()
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool) == Some(true)
}

/// `%#v` of a `[]string`: `nil` when the member is unset.
fn go_strings(v: &Value, key: &str) -> Bad {
    Bad::Raw(field::go_string_slice(get(v, key)))
}

/// A value as apimachinery's `Semantic.DeepEqual` compares it: `null` members are unset, and
/// empty slices and maps equal unset ones.
fn semantic(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, x)| !x.is_null() && !x.as_array().is_some_and(Vec::is_empty))
                .filter(|(k, x)| {
                    !(matches!(k.as_str(), "properties" | "definitions" | "patternProperties" | "dependencies")
                        && x.as_object().is_some_and(Map::is_empty))
                })
                .map(|(k, x)| (k.clone(), semantic(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// The internal view.

/// One version as kube's internal `CustomResourceDefinitionVersion` has it.
struct Version<'a> {
    name: &'a str,
    served: bool,
    storage: bool,
    deprecated: bool,
    deprecation_warning: Option<&'a Value>,
    /// The `CustomResourceValidation`, unless shared by every version.
    schema: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: &'a [Value],
    selectable_fields: &'a [Value],
}

/// The conversion as the internal type has it (`conversion.webhook` flattened).
struct Conversion<'a> {
    strategy: &'a str,
    client_config: Option<&'a Value>,
    review_versions: Option<&'a Value>,
}

/// kube's internal `CustomResourceDefinitionSpec`, viewed over the v1 JSON.
struct Spec<'a> {
    group: &'a str,
    scope: &'a str,
    names: &'a Value,
    /// Whether `versions` is a non-nil slice (for `%#v`).
    versions_set: bool,
    versions: Vec<Version<'a>>,
    /// `spec.version`: the first version's name.
    version: &'a str,
    validation: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: &'a [Value],
    selectable_fields: &'a [Value],
    conversion: Option<Conversion<'a>>,
    preserve_unknown_fields: bool,
}

static NULL: Value = Value::Null;

impl<'a> Spec<'a> {
    /// The v1 → internal conversion of `obj.spec`.
    fn of(obj: &'a Value) -> Spec<'a> {
        let spec = obj.get("spec").unwrap_or(&NULL);
        let raw_versions = list(spec, "versions");
        let mut versions: Vec<Version<'a>> = raw_versions
            .iter()
            .map(|v| Version {
                name: text(v, "name"),
                served: flag(v, "served"),
                storage: flag(v, "storage"),
                deprecated: flag(v, "deprecated"),
                deprecation_warning: get(v, "deprecationWarning"),
                schema: get(v, "schema"),
                subresources: get(v, "subresources"),
                columns: list(v, "additionalPrinterColumns"),
                selectable_fields: list(v, "selectableFields"),
            })
            .collect();
        let (mut validation, mut subresources, mut columns, mut selectable): (Option<&Value>, _, &[Value], &[Value]) =
            (None, None, &[], &[]);
        if let Some(first) = raw_versions.first() {
            let same = |key: &str| {
                let norm = |v: &Value| get(v, key).map(semantic).filter(|x| !x.as_array().is_some_and(Vec::is_empty));
                raw_versions.iter().all(|v| norm(v) == norm(first))
            };
            if same("schema") {
                validation = get(first, "schema");
                versions.iter_mut().for_each(|v| v.schema = None);
            }
            if same("subresources") {
                subresources = get(first, "subresources");
                versions.iter_mut().for_each(|v| v.subresources = None);
            }
            if same("additionalPrinterColumns") {
                columns = list(first, "additionalPrinterColumns");
                versions.iter_mut().for_each(|v| v.columns = &[]);
            }
            if same("selectableFields") {
                selectable = list(first, "selectableFields");
                versions.iter_mut().for_each(|v| v.selectable_fields = &[]);
            }
        }
        let conversion = get(spec, "conversion").map(|c| {
            let webhook = get(c, "webhook");
            Conversion {
                strategy: text(c, "strategy"),
                client_config: webhook.and_then(|w| get(w, "clientConfig")),
                review_versions: webhook.and_then(|w| get(w, "conversionReviewVersions")),
            }
        });
        Spec {
            group: text(spec, "group"),
            scope: text(spec, "scope"),
            names: spec.get("names").unwrap_or(&NULL),
            versions_set: get(spec, "versions").is_some(),
            version: versions.first().map(|v| v.name).unwrap_or(""),
            versions,
            validation,
            subresources,
            columns,
            selectable_fields: selectable,
            conversion,
            preserve_unknown_fields: flag(spec, "preserveUnknownFields"),
        }
    }

    /// The `openAPIV3Schema`s of the spec: the shared one and the per-version ones.
    fn schemas(&self) -> impl Iterator<Item = &'a Value> + '_ {
        self.validation
            .into_iter()
            .chain(self.versions.iter().filter_map(|v| v.schema))
            .filter_map(|v| get(v, "openAPIV3Schema"))
    }

    /// `GetSchemaForVersion`: the shared `CustomResourceValidation`, else the version's.
    fn schema_for(&self, version: &str) -> Option<&'a Value> {
        self.validation.or_else(|| self.versions.iter().find(|v| v.name == version).and_then(|v| v.schema))
    }

    /// `HasSchemaWith`.
    fn has_schema_with(&self, pred: impl Fn(&Value) -> bool) -> bool {
        self.schemas().any(pred)
    }

    /// `allVersionsSpecifyOpenAPISchema`.
    fn all_versions_specify_schema(&self) -> bool {
        if self.validation.and_then(|v| get(v, "openAPIV3Schema")).is_some() {
            return true;
        }
        self.versions.iter().all(|v| v.schema.and_then(|s| get(s, "openAPIV3Schema")).is_some())
    }

    /// `getSubresourcesForVersion`.
    fn subresources_for(&self, v: &Version<'a>) -> Option<&'a Value> {
        if self.versions.iter().any(|v| v.subresources.is_some()) { v.subresources } else { self.subresources }
    }

    /// `hasAnyStatusEnabled`.
    fn any_status_enabled(&self) -> bool {
        status_enabled(self.subresources) || self.versions.iter().any(|v| status_enabled(v.subresources))
    }

    /// `%#v` of the internal versions slice, as kube prints `spec.versions`.
    fn go_versions(&self) -> Bad {
        const T: &str = "apiextensions.CustomResourceDefinitionVersion";
        if !self.versions_set {
            return Bad::Raw(format!("[]{T}(nil)"));
        }
        let ptr = |ty: &str, set: bool| {
            if set { format!("(*{ty})({GO_ADDRESS})") } else { format!("(*{ty})(nil)") }
        };
        let items: Vec<String> = self
            .versions
            .iter()
            .map(|v| {
                let columns = if v.columns.is_empty() {
                    "[]apiextensions.CustomResourceColumnDefinition(nil)".to_string()
                } else {
                    let cols: Vec<String> = v
                        .columns
                        .iter()
                        .map(|c| {
                            format!(
                                "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, Description:{}, Priority:{}, JSONPath:{}}}",
                                field::go_quote(text(c, "name")),
                                field::go_quote(text(c, "type")),
                                field::go_quote(text(c, "format")),
                                field::go_quote(text(c, "description")),
                                c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                                field::go_quote(text(c, "jsonPath")),
                            )
                        })
                        .collect();
                    format!("[]apiextensions.CustomResourceColumnDefinition{{{}}}", cols.join(", "))
                };
                let selectable = if v.selectable_fields.is_empty() {
                    "[]apiextensions.SelectableField(nil)".to_string()
                } else {
                    let fields: Vec<String> = v
                        .selectable_fields
                        .iter()
                        .map(|f| format!("apiextensions.SelectableField{{JSONPath:{}}}", field::go_quote(text(f, "jsonPath"))))
                        .collect();
                    format!("[]apiextensions.SelectableField{{{}}}", fields.join(", "))
                };
                format!(
                    "{T}{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{columns}, SelectableFields:{selectable}}}",
                    field::go_quote(v.name),
                    v.served,
                    v.storage,
                    v.deprecated,
                    ptr("string", v.deprecation_warning.is_some()),
                    ptr("apiextensions.CustomResourceValidation", v.schema.is_some()),
                    ptr("apiextensions.CustomResourceSubresources", v.subresources.is_some()),
                )
            })
            .collect();
        Bad::Raw(format!("[]{T}{{{}}}", items.join(", ")))
    }
}

/// `hasStatusEnabled`.
fn status_enabled(subresources: Option<&Value>) -> bool {
    subresources.and_then(|s| get(s, "status")).is_some()
}

// ---------------------------------------------------------------------------------------------
// Options.

/// kube's `validationOptions` as far as they matter without CEL.
#[derive(Clone, Debug)]
struct Opts {
    schema: Options,
    require_recognized_conversion_review_version: bool,
    require_immutable_names: bool,
    require_openapi_schema: bool,
}

impl Opts {
    /// What a create requires.
    fn create() -> Opts {
        Opts {
            schema: Options {
                allow_defaults: true,
                require_valid_property_type: true,
                require_structural_schema: true,
                require_pruned_defaults: true,
                require_atomic_set_type: true,
                require_map_list_keys_map_set_validation: true,
                suppress_expression_cost: false,
                preexisting: Default::default(),
            },
            require_recognized_conversion_review_version: true,
            require_immutable_names: false,
            require_openapi_schema: true,
        }
    }

    /// What an update requires: no rule the stored object already broke.
    fn update(old_obj: &Value, old: &Spec<'_>) -> Opts {
        let established = list(old_obj.get("status").unwrap_or(&NULL), "conditions")
            .iter()
            .any(|c| text(c, "type") == "Established" && text(c, "status") == "True");
        Opts {
            schema: Options {
                allow_defaults: true,
                require_valid_property_type: !old.has_schema_with(schema::has_invalid_types),
                require_structural_schema: !old.has_schema_with(schema::is_non_structural),
                require_pruned_defaults: !old.has_schema_with(schema::has_unpruned_defaults),
                require_atomic_set_type: !old.has_schema_with(schema::has_non_atomic_set_type),
                require_map_list_keys_map_set_validation: !old
                    .has_schema_with(schema::has_invalid_map_list_keys_map_set),
                suppress_expression_cost: false,
                preexisting: std::sync::Arc::new(kube_cel::rules::Preexisting::of_crd(old_obj)),
            },
            require_recognized_conversion_review_version: old.conversion.as_ref().is_none_or(|c| {
                let versions: Vec<&str> = c
                    .review_versions
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|s| s.as_str().unwrap_or(""))
                    .collect();
                versions.is_empty() || versions.iter().any(|v| REVIEW_VERSIONS.contains(v))
            }),
            require_immutable_names: established,
            require_openapi_schema: old.all_versions_specify_schema(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points.

/// `ValidateCustomResourceDefinition`: metadata (the name is `<plural>.<group>`), spec, status,
/// stored versions, API approval of protected groups, and `preserveUnknownFields`.
pub fn custom_resource_definition(obj: &Value) -> Vec<Cause> {
    let spec = Spec::of(obj);
    let mut out = validate_metadata(obj, &spec);
    out.extend(validate_spec(&spec, Opts::create(), &[], &Path::new("spec")));
    out.extend(validate_status_and_stored_versions(obj, &spec));
    out.extend(validate_api_approval(obj, &spec, None));
    out.extend(validate_preserve_unknown_fields(obj, None));
    out
}

/// `ValidateCustomResourceDefinitionUpdate`: the metadata update rules, the create rules
/// relaxed where the stored object already broke them, and the immutable group, plural (and,
/// once the CRD is established, scope and kind).
pub fn custom_resource_definition_update(new: &Value, old: &Value) -> Vec<Cause> {
    let (spec, old_spec) = (Spec::of(new), Spec::of(old));
    let opts = Opts::update(old, &old_spec);
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), false);
    let sp = Path::new("spec");
    let unchanged: Vec<&str> = spec
        .versions
        .iter()
        .map(|v| v.name)
        .filter(|name| match (spec.schema_for(name), old_spec.schema_for(name)) {
            (Some(a), Some(b)) => semantic(a) == semantic(b),
            _ => false,
        })
        .collect();
    out.extend(validate_spec(&spec, opts.clone(), &unchanged, &sp));
    let immutable = |out: &mut Vec<Cause>, new: &str, old: &str, path: Path| {
        if new != old {
            out.push(field::invalid(&path, Bad::s(new), super::IMMUTABLE));
        }
    };
    if opts.require_immutable_names {
        immutable(&mut out, spec.scope, old_spec.scope, sp.child("scope"));
        immutable(&mut out, text(spec.names, "kind"), text(old_spec.names, "kind"), sp.child("names").child("kind"));
    }
    immutable(&mut out, spec.group, old_spec.group, sp.child("group"));
    immutable(&mut out, text(spec.names, "plural"), text(old_spec.names, "plural"), sp.child("names").child("plural"));
    out.extend(validate_status_and_stored_versions(new, &spec));
    out.extend(validate_api_approval(new, &spec, Some(old)));
    out.extend(validate_preserve_unknown_fields(new, Some(old)));
    out
}

/// `ValidateUpdateCustomResourceDefinitionStatus`: the metadata update rules and the accepted
/// names (stored versions are not checked here: a migration removes them through `/status`).
pub fn custom_resource_definition_status_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), false);
    out.extend(custom_resource_definition_status(new.get("status").unwrap_or(&NULL), &Path::new("status")));
    out
}

/// `ValidateCustomResourceDefinitionStatus`: the accepted names.
pub fn custom_resource_definition_status(status: &Value, path: &Path) -> Vec<Cause> {
    custom_resource_definition_names(status.get("acceptedNames").unwrap_or(&NULL), &path.child("acceptedNames"))
}

/// `ValidateCustomResourceDefinitionNames`: the formats of the names (that they are set is a
/// spec rule, not a status one).
pub fn custom_resource_definition_names(names: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let label = |out: &mut Vec<Cause>, key: &str, prefix: &str, lower: bool| {
        let v = text(names, key);
        let checked = if lower { v.to_lowercase() } else { v.to_string() };
        let errs = names::dns1035_label(&checked);
        if !v.is_empty() && !errs.is_empty() {
            out.push(field::invalid(&path.child(key), Bad::s(v), &format!("{prefix}{}", errs.join(","))));
        }
    };
    label(&mut out, "plural", "", false);
    label(&mut out, "singular", "", false);
    label(&mut out, "kind", "may have mixed case, but should otherwise match: ", true);
    label(&mut out, "listKind", "may have mixed case, but should otherwise match: ", true);
    for (i, short) in strings(names, "shortNames").into_iter().enumerate() {
        let errs = names::dns1035_label(short);
        if !errs.is_empty() {
            out.push(field::invalid(&path.child("shortNames").index(i), Bad::s(short), &errs.join(",")));
        }
    }
    let (kind, list_kind) = (text(names, "kind"), text(names, "listKind"));
    if !kind.is_empty() && kind == list_kind {
        out.push(field::invalid(&path.child("listKind"), Bad::s(list_kind), "kind and listKind may not be the same"));
    }
    for (i, category) in strings(names, "categories").into_iter().enumerate() {
        let errs = names::dns1035_label(category);
        if !errs.is_empty() {
            out.push(field::invalid(&path.child("categories").index(i), Bad::s(category), &errs.join(",")));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Metadata, status, approval.

/// `ValidateObjectMeta` with kube's name rule for CRDs: a DNS subdomain equal to
/// `spec.names.plural + "." + spec.group` (a generateName is held to it too).
fn validate_metadata(obj: &Value, spec: &Spec<'_>) -> Vec<Cause> {
    let meta_path = Path::new("metadata");
    let mut out = meta::validate_object_meta(md(obj), false, names::name_is_dns_subdomain, &meta_path, false);
    let required = format!("{}.{}", text(spec.names, "plural"), spec.group);
    let rule = r#"must be spec.names.plural+"."+spec.group"#;
    let s = |k: &str| md(obj).and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("");
    // kube's name function adds this after the format errors of the same field.
    let insert_after = |out: &mut Vec<Cause>, key: &str| {
        let path = meta_path.child(key);
        let at = out.iter().rposition(|c| c.field == path.as_str()).map(|i| i + 1).unwrap_or_else(|| {
            // Without format errors, it goes where they would have been.
            if key == "name" {
                out.iter()
                    .rposition(|c| c.field == meta_path.child("generateName").as_str())
                    .map(|i| i + 1)
                    .unwrap_or(0)
            } else {
                0
            }
        });
        out.insert(at, field::invalid(&path, Bad::s(s(key)), rule));
    };
    if !s("generateName").is_empty() && s("generateName") != required {
        insert_after(&mut out, "generateName");
    }
    if !s("name").is_empty() && s("name") != required {
        insert_after(&mut out, "name");
    }
    out
}

/// The status and `ValidateCustomResourceDefinitionStoredVersions`: every stored version is
/// still a version, and the storage version is stored.
fn validate_status_and_stored_versions(obj: &Value, spec: &Spec<'_>) -> Vec<Cause> {
    let status = obj.get("status").unwrap_or(&NULL);
    let sp = Path::new("status");
    let mut out = custom_resource_definition_status(status, &sp);
    let path = sp.child("storedVersions");
    let stored = strings(status, "storedVersions");
    if stored.is_empty() {
        out.push(field::invalid(&path, go_strings(status, "storedVersions"), "must have at least one stored version"));
        return out;
    }
    // Each stored version at its last index, as kube's map keeps it.
    let mut remaining: Vec<(usize, &str)> = Vec::new();
    for (i, v) in stored.iter().enumerate() {
        remaining.retain(|(_, x)| x != v);
        remaining.push((i, v));
    }
    for v in &spec.versions {
        let found = remaining.iter().any(|(_, x)| *x == v.name);
        if v.storage && !found {
            out.push(field::invalid(
                &path,
                go_strings(status, "storedVersions"),
                &format!("must have the storage version {}", v.name),
            ));
        }
        remaining.retain(|(_, x)| *x != v.name);
    }
    remaining.sort();
    for (i, v) in remaining {
        out.push(field::invalid(&path.index(i), Bad::s(v), "must appear in spec.versions"));
    }
    out
}

/// `GetAPIApprovalState`: 0 invalid, 1 approved, 2 bypassed, 3 missing, with kube's reason.
fn api_approval_state(obj: &Value) -> (u8, String) {
    let value = md(obj)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(API_APPROVED))
        .and_then(Value::as_str)
        .unwrap_or("");
    let quoted = field::go_quote(API_APPROVED);
    if value.is_empty() {
        return (
            3,
            format!(
                "protected groups must have approval annotation {quoted}, see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        );
    }
    if value.starts_with("unapproved") {
        return (2, format!("not approved: {}", field::go_quote(value)));
    }
    if let Ok(u) = webhook::parse_url(value)
        && !u.host().is_empty()
        && !u.scheme().is_empty()
    {
        return (1, format!("approved in {value}"));
    }
    (
        0,
        format!(
            "protected groups must have approval annotation {quoted} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        ),
    )
}

/// `validateAPIApproval`: CRDs of `k8s.io` and `kubernetes.io` groups carry the approval
/// annotation, unless it is unchanged since the stored object.
fn validate_api_approval(obj: &Value, spec: &Spec<'_>, old: Option<&Value>) -> Vec<Cause> {
    let g = spec.group;
    let protected = g == "k8s.io" || g.ends_with(".k8s.io") || g == "kubernetes.io" || g.ends_with(".kubernetes.io");
    if !protected {
        return Vec::new();
    }
    let (state, reason) = api_approval_state(obj);
    if old.is_some_and(|o| api_approval_state(o).0 == state) {
        return Vec::new();
    }
    let path = Path::new("metadata").child("annotations").key(API_APPROVED);
    let value = md(obj).and_then(|m| m.get("annotations")).and_then(|a| a.get(API_APPROVED)).and_then(Value::as_str);
    match state {
        3 => vec![field::required(&path, &reason)],
        0 => vec![field::invalid(&path, Bad::s(value.unwrap_or("")), &reason)],
        _ => Vec::new(),
    }
}

/// `validatePreserveUnknownFields`: `preserveUnknownFields: true` only on CRDs that had it.
fn validate_preserve_unknown_fields(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let preserves = |v: &Value| v.pointer("/spec/preserveUnknownFields").and_then(Value::as_bool) == Some(true);
    if old.is_some_and(preserves) || !preserves(obj) {
        return Vec::new();
    }
    vec![field::invalid(
        &Path::new("spec").child("preserveUnknownFields"),
        Bad::Bool(true),
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    )]
}

// ---------------------------------------------------------------------------------------------
// The spec.

/// `validateEnumStrings`.
fn enum_string(path: &Path, value: &str, accepted: &[&str]) -> Vec<Cause> {
    if value.is_empty() {
        return vec![field::required(path, "")];
    }
    if accepted.contains(&value) { Vec::new() } else { vec![field::not_supported(path, Bad::s(value), accepted)] }
}

/// `validateCustomResourceDefinitionSpec`.
/// `unchanged` names the versions whose schema an update leaves as it was: their rules are
/// not held to the per-expression cost limit again (kube's `versionsWithUnchangedSchemas`), so
/// a CRD accepted before stays updatable when the estimate changes.
fn validate_spec(spec: &Spec<'_>, mut opts: Opts, unchanged: &[&str], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let gp = path.child("group");
    if spec.group.is_empty() {
        out.push(field::required(&gp, ""));
    } else {
        let errs = names::dns1123_subdomain(spec.group);
        if !errs.is_empty() {
            out.push(field::invalid(&gp, Bad::s(spec.group), &errs.join(",")));
        } else if spec.group.split('.').count() < 2 {
            out.push(field::invalid(&gp, Bad::s(spec.group), "should be a domain with at least one dot"));
        }
    }
    out.extend(enum_string(&path.child("scope"), spec.scope, &SCOPES));
    if !spec.preserve_unknown_fields {
        opts.schema.require_structural_schema = true;
    }
    let has_shared_schema = spec.validation.and_then(|v| get(v, "openAPIV3Schema")).is_some();
    if !has_shared_schema {
        for (i, v) in spec.versions.iter().enumerate() {
            let missing = v.schema.and_then(|s| get(s, "openAPIV3Schema")).is_none();
            let sp = path.child("versions").index(i).child("schema").child("openAPIV3Schema");
            if opts.require_openapi_schema && missing {
                out.push(field::required(&sp, "schemas are required"));
            } else if !opts.require_openapi_schema && !spec.preserve_unknown_fields && v.served && missing {
                out.push(field::required(&sp, "because otherwise all fields are pruned"));
            }
        }
    }
    if opts.schema.allow_defaults && spec.has_schema_with(schema::has_defaults) {
        opts.schema.require_structural_schema = true;
        if spec.preserve_unknown_fields {
            out.push(field::invalid(
                &path.child("preserveUnknownFields"),
                Bad::Bool(true),
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if spec.has_schema_with(schema::has_kubernetes_extensions) {
        opts.schema.require_structural_schema = true;
    }

    let mut storage = 0;
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    for (i, v) in spec.versions.iter().enumerate() {
        if v.storage {
            storage += 1;
        }
        unique &= seen.insert(v.name);
        let vp = path.child("versions").index(i);
        let errs = names::dns1035_label(v.name);
        if !errs.is_empty() {
            out.push(field::invalid(&vp.child("name"), Bad::s(v.name), &errs.join(",")));
        }
        let mut version_opts = opts.clone();
        version_opts.schema.suppress_expression_cost = unchanged.contains(&v.name);
        out.extend(validate_version(v, status_enabled(spec.subresources_for(v)), &version_opts, &vp));
    }
    // The v1 conversion never sets a top-level field beside per-version ones, nor identical
    // per-version ones, so kube's rules against those cannot fire here.
    if !unique {
        out.push(field::invalid(&path.child("versions"), spec.go_versions(), "must contain unique version names"));
    }
    if storage != 1 {
        out.push(field::invalid(
            &path.child("versions"),
            spec.go_versions(),
            "must have exactly one version marked as storage version",
        ));
    }
    if !spec.version.is_empty() {
        let errs = names::dns1035_label(spec.version);
        if !errs.is_empty() {
            out.push(field::invalid(&path.child("version"), Bad::s(spec.version), &errs.join(",")));
        }
    }
    let np = path.child("names");
    for key in ["plural", "singular", "kind", "listKind"] {
        if text(spec.names, key).is_empty() {
            out.push(field::required(&np.child(key), ""));
        }
    }
    out.extend(custom_resource_definition_names(spec.names, &np));
    let shared_opts =
        schema::Options { suppress_expression_cost: unchanged.contains(&spec.version), ..opts.schema.clone() };
    out.extend(schema::validate_validation(
        spec.validation,
        spec.any_status_enabled(),
        &shared_opts,
        &path.child("validation"),
    ));
    out.extend(validate_subresources(spec.subresources, &path.child("subresources")));
    for (i, c) in spec.columns.iter().enumerate() {
        out.extend(validate_column(c, &path.child("additionalPrinterColumns").index(i)));
    }
    if !spec.selectable_fields.is_empty() {
        let fp = path.child("selectableFields");
        match spec.validation {
            None => out.push(field::invalid(
                &fp,
                Bad::s(""),
                "selectableFields may only be set when validations.schema is included",
            )),
            Some(v) => out.extend(selectable_fields_of(spec.selectable_fields, get(v, "openAPIV3Schema"), path, &fp)),
        }
    }
    if let Some(c) = &spec.conversion
        && c.strategy != "None"
        && spec.preserve_unknown_fields
    {
        out.push(field::invalid(
            &path.child("conversion").child("strategy"),
            Bad::s(c.strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if let Some(c) = &spec.conversion {
        out.extend(validate_conversion(
            c,
            opts.require_recognized_conversion_review_version,
            &path.child("conversion"),
        ));
    }
    out
}

/// `validateCustomResourceDefinitionVersion`.
fn validate_version(v: &Version<'_>, status: bool, opts: &Opts, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for e in deprecation_warning_errors(v.deprecated, v.deprecation_warning) {
        let value = v.deprecation_warning.map(|w| Bad::s(w.as_str().unwrap_or(""))).unwrap_or(Bad::s("null"));
        out.push(field::invalid(&path.child("deprecationWarning"), value, &e));
    }
    out.extend(schema::validate_validation(v.schema, status, &opts.schema, &path.child("schema")));
    out.extend(validate_subresources(v.subresources, &path.child("subresources")));
    for (i, c) in v.columns.iter().enumerate() {
        out.extend(validate_column(c, &path.child("additionalPrinterColumns").index(i)));
    }
    if !v.selectable_fields.is_empty() {
        let fp = path.child("selectableFields");
        match v.schema.and_then(|s| get(s, "openAPIV3Schema")) {
            None => out.push(field::invalid(
                &fp,
                Bad::s(""),
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(s) => out.extend(selectable_fields_of(v.selectable_fields, Some(s), path, &fp)),
        }
    }
    out
}

/// The structural schema's conversion error, then `ValidateCustomResourceSelectableFields`.
fn selectable_fields_of(fields: &[Value], schema: Option<&Value>, parent: &Path, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(s) = schema else { return out };
    if let Some(e) = schema::new_structural_error(s) {
        out.push(field::invalid(&parent.child("schema.openAPIV3Schema"), Bad::s(""), &e));
        return out;
    }
    out.extend(selectable_fields(fields, s, path));
    out
}

/// `ValidateCustomResourceSelectableFields`: paths to string, boolean or integer fields
/// outside metadata, unique, at most eight.
fn selectable_fields(fields: &[Value], schema: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let jp = path.index(i).child("jsonPath");
        let json_path = text(f, "jsonPath");
        if json_path.is_empty() {
            out.push(field::required(&jp, ""));
            continue;
        }
        let found = match schema::valid_field_path(json_path, schema, false) {
            Ok(found) => found,
            Err(e) => {
                out.push(field::invalid(&jp, Bad::s(json_path), &format!("is an invalid path: {e}")));
                continue;
            }
        };
        if found.root == "metadata" {
            out.push(field::invalid(&jp, Bad::s(json_path), "must not point to fields in metadata"));
        }
        if !found.schema.is_some_and(|s| matches!(text(s, "type"), "string" | "boolean" | "integer")) {
            out.push(field::invalid(
                &jp,
                Bad::s(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        let key = found.path.as_str().to_string();
        if unique.contains(&key) {
            out.push(field::duplicate(&jp, Bad::s(json_path)));
        } else {
            unique.push(key);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        out.push(field::too_many(path, unique.len(), MAX_SELECTABLE_FIELDS));
    }
    out
}

/// `validateDeprecationWarning`.
fn deprecation_warning_errors(deprecated: bool, warning: Option<&Value>) -> Vec<String> {
    let Some(w) = warning else { return Vec::new() };
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_string()];
    }
    let w = w.as_str().unwrap_or("");
    let mut errs = Vec::new();
    if w.len() > 256 {
        errs.push("must be <= 256 characters long".to_string());
    }
    if w.is_empty() {
        errs.push("must not be an empty string".to_string());
    }
    // Go's `unicode.IsPrint`: graphic characters and the ASCII space.
    let printable = |c: char| {
        !(c.is_control()
            || (c.is_whitespace() && c != ' ')
            || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
    };
    for (i, c) in w.char_indices() {
        if !printable(c) {
            errs.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    errs
}

/// `ValidateCustomResourceDefinitionSubresources`: the scale subresource's paths.
fn validate_subresources(subresources: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(scale) = subresources.and_then(|s| get(s, "scale")) else { return out };
    for (key, prefix, under) in [("specReplicasPath", ".spec.", ".spec"), ("statusReplicasPath", ".status.", ".status")]
    {
        let p = path.child(&format!("scale.{key}"));
        let v = text(scale, key);
        if v.is_empty() {
            out.push(field::required(&p, ""));
        } else if let Some(e) = simple_json_path(v, &p) {
            out.push(e);
        } else if !v.starts_with(prefix) {
            out.push(field::invalid(&p, Bad::s(v), &format!("should be a json path under {under}")));
        }
    }
    let v = text(scale, "labelSelectorPath");
    if !v.is_empty() {
        let p = path.child("scale.labelSelectorPath");
        if let Some(e) = simple_json_path(v, &p) {
            out.push(e);
        } else if !v.starts_with(".spec.") && !v.starts_with(".status.") {
            out.push(field::invalid(&p, Bad::s(v), "should be a json path under either .spec or .status"));
        }
    }
    out
}

/// `validateSimpleJSONPath`: a path starting with `.`.
fn simple_json_path(s: &str, path: &Path) -> Option<Cause> {
    if s.is_empty() {
        Some(field::invalid(path, Bad::s(s), "must not be empty"))
    } else if !s.starts_with('.') {
        Some(field::invalid(path, Bad::s(s), "must be a simple json path starting with ."))
    } else {
        None
    }
}

/// `ValidateCustomResourceColumnDefinition`.
fn validate_column(c: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if text(c, "name").is_empty() {
        out.push(field::required(&path.child("name"), ""));
    }
    let ty = text(c, "type");
    let must = format!("must be one of {COLUMN_TYPES}");
    if ty.is_empty() {
        out.push(field::required(&path.child("type"), &must));
    } else if !COLUMN_TYPE_NAMES.contains(&ty) {
        out.push(field::invalid(&path.child("type"), Bad::s(ty), &must));
    }
    let format = text(c, "format");
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        out.push(field::invalid(
            &path.child("format"),
            Bad::s(format),
            &format!("must be one of {}", COLUMN_FORMATS.join(",")),
        ));
    }
    // kube names the field `JSONPath` in these errors, as the internal type does.
    let jp = path.child("JSONPath");
    let json_path = text(c, "jsonPath");
    if json_path.is_empty() {
        out.push(field::required(&jp, ""));
    } else if let Some(e) = simple_json_path(json_path, &jp) {
        out.push(e);
    }
    out
}

/// `validateCustomResourceConversion`: `None` or `Webhook`; a webhook has a client (URL or
/// service) and review versions, which only a webhook may have.
fn validate_conversion(c: &Conversion<'_>, require_recognized: bool, path: &Path) -> Vec<Cause> {
    let mut out = enum_string(&path.child("strategy"), c.strategy, &CONVERSION_STRATEGIES);
    let cc_path = path.child("webhookClientConfig");
    let rv_path = path.child("conversionReviewVersions");
    if c.strategy == "Webhook" {
        match c.client_config {
            None => out.push(field::required(&cc_path, "required when strategy is set to Webhook")),
            Some(cc) => match (get(cc, "url"), get(cc, "service")) {
                (Some(url), None) => {
                    out.extend(webhook::validate_webhook_url(&cc_path.child("url"), url.as_str().unwrap_or(""), true))
                }
                (None, Some(svc)) => {
                    // kube passes the name where the namespace goes and the other way round.
                    out.extend(webhook::validate_webhook_service(
                        &cc_path.child("service"),
                        text(svc, "name"),
                        text(svc, "namespace"),
                        get(svc, "path").map(|p| p.as_str().unwrap_or("")),
                        svc.get("port").and_then(Value::as_i64).unwrap_or(0),
                    ))
                }
                _ => out.push(field::required(&cc_path, "exactly one of url or service is required")),
            },
        }
        out.extend(review_versions(c.review_versions, require_recognized, &rv_path));
    } else {
        if c.client_config.is_some() {
            out.push(field::forbidden(&cc_path, "should not be set when strategy is not set to Webhook"));
        }
        if c.review_versions.and_then(Value::as_array).is_some_and(|v| !v.is_empty()) {
            out.push(field::forbidden(&rv_path, "should not be set when strategy is not set to Webhook"));
        }
    }
    out
}

/// `validateConversionReviewVersions`.
fn review_versions(versions: Option<&Value>, require_recognized: bool, path: &Path) -> Vec<Cause> {
    let items: Vec<&str> =
        versions.and_then(Value::as_array).into_iter().flatten().map(|v| v.as_str().unwrap_or("")).collect();
    if items.is_empty() {
        return vec![field::required(path, "")];
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut accepted = false;
    for (i, v) in items.iter().enumerate() {
        if !seen.insert(*v) {
            out.push(field::invalid(&path.index(i), Bad::s(*v), "duplicate version"));
            continue;
        }
        for e in names::dns1035_label(v) {
            out.push(field::invalid(&path.index(i), Bad::s(*v), &e));
        }
        accepted |= REVIEW_VERSIONS.contains(v);
    }
    if require_recognized && !accepted {
        out.push(field::invalid(
            path,
            Bad::Raw(field::go_string_slice(versions)),
            &format!("must include at least one of {}", REVIEW_VERSIONS.join(", ")),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
