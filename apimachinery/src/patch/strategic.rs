//! Strategic merge patch (`application/strategic-merge-patch+json`), applied as
//! kube-apiserver applies it (`k8s.io/apimachinery/pkg/util/strategicpatch`, server side:
//! parallel lists merged, unmatched nulls ignored).
//!
//! A strategic merge patch is a JSON merge patch whose lists can be merged instead of
//! replaced. What to do with each field comes from the kind's schema, walked in step with the
//! object ([`PatchSchema`]):
//! - maps are merged recursively; `null` deletes a field; a field whose strategy is `replace`
//!   is replaced whole;
//! - a list whose strategy is `merge` and whose items are objects is merged element by element
//!   on its `x-kubernetes-patch-merge-key` (containers by `name`); a `merge` list of scalars
//!   (`finalizers`) is a set union; any other list is replaced whole;
//! - directives steer the merge: `$patch: replace | delete` in a map, `$patch: delete | replace`
//!   as a list element, `$retainKeys` (drop the keys not listed), `$deleteFromPrimitiveList/<f>`
//!   (remove scalars from list `f`) and `$setElementOrder/<f>` (the order `kubectl apply`
//!   wants list `f` in).
//!
//! Where the schema says nothing (unknown kinds, fields it does not describe) maps merge and
//! lists are replaced, as in a JSON merge patch, and directives still apply.
//!
//! # Ordering
//! Merged lists follow kube's rules exactly, because `kubectl apply` and controllers diff on
//! them: items named by the patch keep the patch's order, items only on the server keep the
//! server's order, and the two are interleaved by their positions in the server's list (an item
//! the server does not know yet goes before the server-only items it cannot be placed
//! against). `$setElementOrder/<f>` takes precedence over the patch's own order. kube sorts
//! with Go's `sort.SliceStable` under a comparator that is not a strict order when an item is
//! missing from the reference list; `go_slice_stable` reproduces Go's algorithm so those
//! cases come out the same too.
//!
//! # Errors
//! As kube-apiserver reports them: a malformed body or directive is 400 BadRequest with
//! apimachinery's `mergepatch` wording (`invalid patch format of retainKeys`); a list of lists
//! is 422 Invalid with the generic message kube answers with; anything else (`map: map[image:x]
//! does not contain declared merge key: name`) is a plain error, which kube turns into a 500
//! whose message is the error text.

use serde_json::{Map, Value};

use super::gojson::{fmt_s, fmt_v, type_name};
use crate::error::{ApiError, Reason};
use crate::schema::Node;

type JsonMap = Map<String, Value>;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_STRATEGY: &str = "retainKeys";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// `mergepatch.ErrBadPatchFormatForPrimitiveList`.
const ERR_PRIMITIVE_LIST_FORMAT: &str = "invalid patch format of primitive list";
/// `mergepatch.ErrBadPatchFormatForRetainKeys`.
const ERR_RETAIN_KEYS_FORMAT: &str = "invalid patch format of retainKeys";
/// `mergepatch.ErrBadPatchFormatForSetElementOrderList`.
const ERR_SET_ELEMENT_ORDER_FORMAT: &str = "invalid patch format of setElementOrder list";
/// What kube-apiserver answers (422) for `mergepatch.ErrNoListOfLists`: it builds the Status
/// with `NewGenericServerResponse`, which keeps only a generic message.
pub(crate) const UNPROCESSABLE_MESSAGE: &str = "the server rejected our request due to an error in our request";

const MAP_TYPE: &str = "map[string]interface {}";
const SLICE_TYPE: &str = "[]interface {}";

/// What the strategic merge walk needs from a schema: where a field leads and its
/// `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`.
///
/// A trait rather than [`Node`] itself so the algorithm can be driven by other schemas (tests,
/// and later custom resource schemas) without changing it.
pub trait PatchSchema: Copy {
    /// The schema of the value under `key` of this object or map node: the named property,
    /// else the map's value schema. The returned node carries the field's patch extensions.
    fn field(&self, key: &str) -> Option<Self>;
    /// The schema of the items of this list node.
    fn items(&self) -> Option<Self>;
    /// `x-kubernetes-patch-strategy` of this field (`merge`, `retainKeys`, `merge,retainKeys`,
    /// `replace`).
    fn patch_strategy(&self) -> Option<&str>;
    /// `x-kubernetes-patch-merge-key` of this list field.
    fn patch_merge_key(&self) -> Option<&str>;
}

impl PatchSchema for Node<'_> {
    fn field(&self, key: &str) -> Option<Self> {
        self.property(key).or_else(|| self.additional_properties())
    }

    fn items(&self) -> Option<Self> {
        Node::items(self)
    }

    fn patch_strategy(&self) -> Option<&str> {
        Node::patch_strategy(self)
    }

    fn patch_merge_key(&self) -> Option<&str> {
        Node::patch_merge_key(self)
    }
}

/// Applies the strategic merge patch `patch` (the request body) to `original`, walking
/// `schema` (the kind's root node; `None` for a kind without one).
///
/// The body must be a JSON object (or `null`, which changes nothing), as kube requires.
pub fn strategic_merge_patch<S: PatchSchema>(
    original: &Value,
    patch: &[u8],
    schema: Option<S>,
) -> Result<Value, ApiError> {
    let patch = decode_patch_map(patch)?;
    let Value::Object(original_map) = original else {
        return Err(ApiError::internal("the object to patch is not a JSON object"));
    };
    match patch {
        None => Ok(original.clone()),
        Some(patch) => Ok(Value::Object(merge_map(original_map.clone(), patch, schema)?)),
    }
}

/// Decodes the body as kube does (`json.Unmarshal` into `map[string]interface{}`): `None` for
/// `null`, 400 with Go's wording otherwise.
fn decode_patch_map(patch: &[u8]) -> Result<Option<JsonMap>, SmpError> {
    super::gojson::check_syntax(patch).map_err(SmpError::BadRequest)?;
    let value: Value = serde_json::from_slice(patch).map_err(|e| SmpError::BadRequest(e.to_string()))?;
    match value {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => Err(SmpError::BadRequest(super::gojson::type_error(&other, MAP_TYPE))),
    }
}

/// A strategic merge failure, classified as kube-apiserver's
/// `interpretStrategicMergePatchError` classifies it; mapped to [`ApiError`] once, at the
/// module's edge.
#[derive(Debug)]
enum SmpError {
    /// A malformed body or directive: 400 BadRequest with this message.
    BadRequest(String),
    /// `ErrNoListOfLists`: 422 Invalid with kube's generic message.
    Unprocessable,
    /// Any other error: kube answers 500 with the error text as the message.
    Plain(String),
}

impl From<SmpError> for ApiError {
    fn from(e: SmpError) -> ApiError {
        match e {
            SmpError::BadRequest(message) => ApiError::bad_request(message),
            SmpError::Unprocessable => ApiError::new(Reason::Invalid, UNPROCESSABLE_MESSAGE),
            // kube's Status here has no reason (StatusReasonUnknown); InternalError is the
            // nearest we can say.
            SmpError::Plain(message) => ApiError::unknown(message),
        }
    }
}

fn plain(message: String) -> SmpError {
    SmpError::Plain(message)
}

fn unprocessable() -> SmpError {
    SmpError::Unprocessable
}

fn bad_request(message: &str) -> SmpError {
    SmpError::BadRequest(message.to_string())
}

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(map: &JsonMap, key: &str) -> SmpError {
    plain(format!("map: {} does not contain declared merge key: {key}", fmt_map(map)))
}

/// `mergepatch.ErrBadArgType`.
fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    plain(format!("expected a {expected}, but received a {}", type_name(actual)))
}

/// `mergepatch.ErrBadPatchType`.
fn bad_patch_type(directive: &Value, map: &JsonMap) -> SmpError {
    plain(format!("unknown patch type: {} in map: {}", fmt_s(directive), fmt_map(map)))
}

fn fmt_map(map: &JsonMap) -> String {
    fmt_v(&Value::Object(map.clone()))
}

fn fmt_list(list: &[Value]) -> String {
    fmt_v(&Value::Array(list.to_vec()))
}

/// The Go type a decoded JSON value has, as `reflect.TypeOf` compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
}

fn go_type(value: &Value) -> GoType {
    match value {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if n.is_f64() => GoType::Float,
        Value::Number(_) => GoType::Int,
        Value::String(_) => GoType::String,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

/// A field's schema and patch metadata.
struct FieldMeta<S> {
    /// The field's schema node (for a list, the list itself: see [`FieldMeta::items`]).
    schema: Option<S>,
    /// The strategy other than `retainKeys` (`merge`, `replace` or empty).
    strategy: String,
    /// The merge key, empty if none.
    merge_key: String,
}

impl<S: PatchSchema> FieldMeta<S> {
    /// The schema of a list field's items. A field whose schema is not a list (kube's
    /// `*MergeItem` pointers, OpenAPI schemas without `items`) stands for its own items, as in
    /// kube's lookups.
    fn items(&self) -> Option<S> {
        self.schema.map(|s| s.items().unwrap_or(s))
    }
}

fn lookup<S: PatchSchema>(parent: Option<S>, key: &str) -> Result<FieldMeta<S>, SmpError> {
    let schema = parent.and_then(|p| p.field(key));
    let strategy = other_strategy(schema.and_then(|s| s.patch_strategy().map(str::to_owned)).as_deref())?;
    let merge_key = schema.and_then(|s| s.patch_merge_key().map(str::to_owned)).unwrap_or_default();
    Ok(FieldMeta { schema, strategy, merge_key })
}

/// `extractRetainKeysPatchStrategy`: `retainKeys` is a directive's business; the other
/// strategy decides how the field merges.
fn other_strategy(strategy: Option<&str>) -> Result<String, SmpError> {
    let strategies: Vec<&str> = strategy.unwrap_or("").split(',').collect();
    match strategies.as_slice() {
        [one] if *one == RETAIN_KEYS_STRATEGY => Ok(String::new()),
        [one] => Ok(one.to_string()),
        [a, b] if *a == RETAIN_KEYS_STRATEGY => Ok(b.to_string()),
        [a, b] if *b == RETAIN_KEYS_STRATEGY => Ok(a.to_string()),
        _ => Err(plain(format!("unexpected patch strategy: [{}]", strategies.join(" ")))),
    }
}

/// `extractKey`: the field a `$deleteFromPrimitiveList/<f>` or `$setElementOrder/<f>` key
/// names.
fn extract_key(key: &str, prefix: &str) -> Result<String, SmpError> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => Err(bad_request(ERR_PRIMITIVE_LIST_FORMAT)),
        _ => Err(bad_request(ERR_SET_ELEMENT_ORDER_FORMAT)),
    }
}

/// Merges `patch` into `original` (`mergeMap`).
fn merge_map<S: PatchSchema>(
    mut original: JsonMap,
    mut patch: JsonMap,
    schema: Option<S>,
) -> Result<JsonMap, SmpError> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        return match directive.as_str() {
            Some(REPLACE_DIRECTIVE) => {
                patch.remove(DIRECTIVE_MARKER);
                Ok(patch)
            }
            Some(DELETE_DIRECTIVE) => Ok(JsonMap::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }

    apply_retain_keys(&mut original, &mut patch)?;
    merge_ordered_lists(&mut original, &mut patch, schema)?;

    // Go walks the patch in map order; we walk it sorted, so a `$deleteFromPrimitiveList/f`
    // is applied before additions to `f` in the same patch.
    let mut keys: Vec<String> = patch.keys().cloned().collect();
    keys.sort();
    for key in keys {
        let patch_value = patch.remove(&key).expect("key listed from this map");
        let (field, delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
        } else {
            (key, false)
        };

        if patch_value.is_null() {
            original.remove(&field);
            continue;
        }
        let Some(original_value) = original.get_mut(&field) else {
            if !delete_list {
                set_from_patch(&mut original, field, patch_value);
            }
            continue;
        };
        if go_type(original_value) != go_type(&patch_value) {
            if !delete_list {
                set_from_patch(&mut original, field, patch_value);
            }
            continue;
        }
        let merged = match (original_value.take(), patch_value) {
            (Value::Object(o), Value::Object(p)) => {
                let meta = lookup(schema, &field)?;
                if meta.strategy == REPLACE_DIRECTIVE {
                    Value::Object(p)
                } else {
                    Value::Object(merge_map(o, p, meta.schema)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                let meta = lookup(schema, &field)?;
                Value::Array(merge_list_field(o, p, &meta, delete_list)?)
            }
            (_, scalar) => scalar,
        };
        original.insert(field, merged);
    }
    Ok(original)
}

/// A field absent from the original (or of another type) takes the patch's value, without its
/// nulls and directive-bearing maps.
fn set_from_patch(original: &mut JsonMap, field: String, mut value: Value) {
    discard_null_values(&mut value);
    match remove_directives(value) {
        Some(v) => {
            original.insert(field, v);
        }
        None => {
            original.remove(&field);
        }
    }
}

/// `discardNullValuesFromPatch`: drops null map entries at every depth (null list items stay).
fn discard_null_values(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_null_values);
        }
        Value::Array(list) => list.iter_mut().for_each(discard_null_values),
        _ => {}
    }
}

/// `removeDirectives`: a map carrying `$patch` disappears (from its parent map or list);
/// `None` means the value itself is such a map.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            Some(Value::Object(map.into_iter().filter_map(|(k, v)| remove_directives(v).map(|v| (k, v))).collect()))
        }
        Value::Array(list) => Some(Value::Array(list.into_iter().filter_map(remove_directives).collect())),
        scalar => Some(scalar),
    }
}

/// `$retainKeys`: keeps only the listed keys of the original; every key the patch sets must be
/// listed.
fn apply_retain_keys(original: &mut JsonMap, patch: &mut JsonMap) -> Result<(), SmpError> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad_request(ERR_RETAIN_KEYS_FORMAT));
    };
    let listed = |key: &str| retain.iter().any(|r| r.as_str() == Some(key));
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !listed(key) {
            return Err(bad_request(ERR_RETAIN_KEYS_FORMAT));
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

/// A list-valued field of `map`, cloned; an error if the field holds something else.
fn list_field(map: &JsonMap, field: &str) -> Result<Option<Vec<Value>>, SmpError> {
    match map.get(field) {
        None => Ok(None),
        Some(Value::Array(list)) => Ok(Some(list.clone())),
        Some(other) => Err(bad_arg_type(SLICE_TYPE, other)),
    }
}

/// `mergePatchIntoOriginal`: merges each list that has a `$setElementOrder/<f>` directive and
/// puts it in the directive's order, removing both from the patch.
fn merge_ordered_lists<S: PatchSchema>(
    original: &mut JsonMap,
    patch: &mut JsonMap,
    schema: Option<S>,
) -> Result<(), SmpError> {
    let mut keys: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX)).cloned().collect();
    keys.sort();
    for key in keys {
        let order = patch.remove(&key).expect("key listed from this map");
        let Value::Array(order) = order else {
            return Err(bad_arg_type(SLICE_TYPE, &order));
        };
        let field = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;
        let original_list = list_field(original, &field)?;
        let patch_list = list_field(patch, &field)?;
        let meta = lookup(schema, &field)?;
        validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or_default(), &order, &meta.merge_key)?;

        let found_original = original_list.is_some();
        let original_list = original_list.unwrap_or_default();
        let mut server_order = None;
        let merged = match (found_original, &patch_list) {
            (true, None) => original_list.clone(),
            (false, Some(p)) => match remove_directives(Value::Array(p.clone())) {
                Some(Value::Array(list)) => list,
                _ => continue,
            },
            (true, Some(p)) => {
                let merged = merge_list_field(original_list.clone(), p.clone(), &meta, false)?;
                if meta.strategy == MERGE_DIRECTIVE
                    && !(original_list.is_empty() && p.is_empty())
                    && slice_element_type(&[&original_list, p])? == GoType::Map
                {
                    server_order = Some(go_aliased_server_order(&original_list, p, &meta.merge_key));
                }
                merged
            }
            (false, None) => continue,
        };

        let (patch_items, server_only) = partition(merged, &order, &meta.merge_key)?;
        let element = slice_element_type(&[&original_list, patch_list.as_deref().unwrap_or_default()])?;
        let ordered = normalize_element_order(
            patch_items,
            server_only,
            &order,
            server_order.as_deref().unwrap_or(&original_list),
            &meta.merge_key,
            element == GoType::Map,
        )?;
        original.insert(field.clone(), Value::Array(ordered));
        patch.remove(&field);
    }
    Ok(())
}

/// The original list as kube's `mergePatchIntoOriginal` sees it after merging a `merge` list
/// of maps into it: Go's merge shares the original's backing array, so deleting items
/// (`$patch: delete`) shifts the later ones left and items the patch adds are written over
/// the freed tail. kube orders server-only items against this view, and its own test cases
/// (and `kubectl apply` results) depend on it; only merge keys matter here.
fn go_aliased_server_order(original: &[Value], patch: &[Value], merge_key: &str) -> Vec<Value> {
    let len = original.len();
    let mut backing = original.to_vec();
    let mut live = len;
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE_MARKER).and_then(Value::as_str) {
            Some(DELETE_DIRECTIVE) => {
                let Some(key_value) = item.get(merge_key) else { continue };
                while let Some(i) = backing[..live].iter().position(|o| o.get(merge_key) == Some(key_value)) {
                    for j in i..live - 1 {
                        backing[j] = backing[j + 1].clone();
                    }
                    live -= 1;
                }
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            _ => {}
        }
    }
    if replace {
        return backing;
    }
    let mut header: Vec<Value> = backing[..live].to_vec();
    for item in patch.iter().filter(|i| !contains_directive_marker(i)) {
        let key_value = item.get(merge_key);
        if header.iter().any(|h| h.get(merge_key) == key_value) {
            continue;
        }
        if header.len() < len {
            backing[header.len()] = item.clone();
        }
        header.push(item.clone());
    }
    backing
}

/// `validatePatchWithSetOrderList`: the patch's items must appear in the directive's list, in
/// the same relative order.
fn validate_patch_with_set_order_list(patch_list: &[Value], order: &[Value], merge_key: &str) -> Result<(), SmpError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<Value> =
        if merge_key.is_empty() { patch_list.to_vec() } else { extract_to_delete_items(patch_list.to_vec())?.0 };
    let (mut p, mut s) = (0, 0);
    while p < non_delete.len() && s < order.len() {
        if contains_directive_marker(&non_delete[p]) {
            p += 1;
            continue;
        }
        if merge_key_value_equal(&non_delete[p], &order[s], merge_key)? {
            p += 1;
        }
        s += 1;
    }
    if p < non_delete.len() && s >= order.len() {
        return Err(plain(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            fmt_list(patch_list),
            fmt_list(order)
        )));
    }
    Ok(())
}

fn contains_directive_marker(value: &Value) -> bool {
    value.as_object().is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, SmpError> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let l = left.as_object().ok_or_else(|| bad_arg_type(MAP_TYPE, left))?;
    let r = right.as_object().ok_or_else(|| bad_arg_type(MAP_TYPE, right))?;
    let lv = l.get(merge_key).ok_or_else(|| no_merge_key(l, merge_key))?;
    let rv = r.get(merge_key).ok_or_else(|| no_merge_key(r, merge_key))?;
    Ok(lv == rv)
}

/// `mergeSliceHandler`: a `merge` list (or a `$deleteFromPrimitiveList`) is merged, any other
/// list is replaced by the patch's.
fn merge_list_field<S: PatchSchema>(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: &FieldMeta<S>,
    delete_list: bool,
) -> Result<Vec<Value>, SmpError> {
    if meta.strategy == MERGE_DIRECTIVE || delete_list {
        merge_slice(original, patch, meta.items(), &meta.merge_key, delete_list)
    } else {
        Ok(patch)
    }
}

/// `mergeSlice`: merges two lists of scalars (set union) or of maps (by merge key), then
/// orders the result.
fn merge_slice<S: PatchSchema>(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: Option<S>,
    merge_key: &str,
    delete_list: bool,
) -> Result<Vec<Value>, SmpError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let element = slice_element_type(&[&original, &patch])?;
    let (original, patch, merged) = if element != GoType::Map {
        if delete_list {
            return Ok(original.into_iter().filter(|v| !patch.contains(v)).collect());
        }
        let both: Vec<Value> = original.iter().chain(patch.iter()).cloned().collect();
        let merged = deduplicate_scalars(both);
        (original, patch, merged)
    } else {
        if merge_key.is_empty() {
            return Err(plain("cannot merge lists without merge key for struct".into()));
        }
        let (original, patch) = merge_slice_with_special_elements(original, patch, merge_key)?;
        let merged = merge_slice_without_special_elements(original.clone(), &patch, merge_key, items)?;
        (original, patch, merged)
    };
    let (patch_items, server_only) = partition(merged, &patch, merge_key)?;
    normalize_element_order(patch_items, server_only, &patch, &original, merge_key, element == GoType::Map)
}

/// `sliceElementType`: every item of every list must have the same Go type, and not be a list.
fn slice_element_type(lists: &[&[Value]]) -> Result<GoType, SmpError> {
    let mut found: Option<GoType> = None;
    for value in lists.iter().flat_map(|l| l.iter()) {
        let t = go_type(value);
        match found {
            None if t == GoType::Slice => return Err(unprocessable()),
            None => found = Some(t),
            Some(prev) if prev != t => {
                let lists: Vec<String> = lists.iter().map(|l| fmt_list(l)).collect();
                return Err(plain(format!("list element types are not identical: [{}]", lists.join(" "))));
            }
            Some(_) => {}
        }
    }
    found.ok_or_else(|| plain("no elements in any of the given slices".into()))
}

/// Go's "clever" in-place deduplication: a later duplicate is overwritten by the last item.
/// The order it leaves is reordered afterwards; it is kept for fidelity.
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut length = s.len() as isize - 1;
    let mut i = 0isize;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i as usize] == s[j as usize] {
                s[j as usize] = s[length as usize].clone();
                s.truncate(length as usize);
                length -= 1;
                j -= 1;
            }
            j += 1;
        }
        i += 1;
    }
    s
}

/// `mergeSliceWithSpecialElements`: applies `$patch: delete` items (removing every original
/// item with that key) and `$patch: replace` (the patch's other items become the list).
/// Returns the list to merge into and the patch without directive items.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut plain_items = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let map = item.as_object().expect("items checked to be maps");
        let Some(directive) = map.get(DIRECTIVE_MARKER) else {
            plain_items.push(item);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let Some(key_value) = map.get(merge_key) else {
                    return Err(no_merge_key(map, merge_key));
                };
                original.retain(|o| o.get(merge_key) != Some(key_value));
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => return Err(plain("merging lists cannot yet be specified in the patch".into())),
            _ => return Err(bad_patch_type(directive, map)),
        }
    }
    if replace { Ok((plain_items, Vec::new())) } else { Ok((original, plain_items)) }
}

/// `findMapInSliceBasedOnKeyValue`: the index of the first map whose merge key equals `value`.
fn find_by_merge_key(list: &[Value], merge_key: &str, value: &Value) -> Result<Option<usize>, SmpError> {
    for (i, item) in list.iter().enumerate() {
        let Some(map) = item.as_object() else {
            return Err(plain(format!("value for key {i} is not a map")));
        };
        if map.get(merge_key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `mergeSliceWithoutSpecialElements`: each patch item is merged into the original item with
/// the same merge key, or appended.
fn merge_slice_without_special_elements<S: PatchSchema>(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    items: Option<S>,
) -> Result<Vec<Value>, SmpError> {
    for item in patch {
        let map = item.as_object().expect("items checked to be maps");
        let Some(key_value) = map.get(merge_key) else {
            return Err(no_merge_key(map, merge_key));
        };
        match find_by_merge_key(&original, merge_key, key_value)? {
            Some(i) => {
                let Value::Object(target) = original[i].take() else { unreachable!("found among maps") };
                original[i] = Value::Object(merge_map(target, map.clone(), items)?);
            }
            None => original.push(item.clone()),
        }
    }
    Ok(original)
}

/// Splits `merged` into the items named by `by` and the others (server-only), by merge key
/// for maps or by value for scalars.
fn partition(merged: Vec<Value>, by: &[Value], merge_key: &str) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut named = Vec::with_capacity(merged.len());
    let mut server_only = Vec::with_capacity(merged.len());
    for item in merged {
        let in_by = if merge_key.is_empty() {
            by.contains(&item)
        } else {
            let map = item.as_object().ok_or_else(|| bad_arg_type(MAP_TYPE, &item))?;
            let key_value = map.get(merge_key).ok_or_else(|| no_merge_key(map, merge_key))?;
            find_by_merge_key(by, merge_key, key_value)?.is_some()
        };
        if in_by {
            named.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((named, server_only))
}

/// `normalizeElementOrder`: sorts the patch's items by `patch_order`, the server-only items by
/// `server_order`, then interleaves them.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    maps: bool,
) -> Result<Vec<Value>, SmpError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, maps)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, maps)?;
    Ok(merge_sorted_slice(server_only, patch_items, server_order, merge_key, maps))
}

/// What `index` compares: the merge key's value for maps, the item itself for scalars (a
/// missing or null key matches a missing or null key, as Go's nil interfaces do).
fn order_key<'v>(value: &'v Value, merge_key: &str, maps: bool) -> Option<&'v Value> {
    let key = if maps { value.as_object().and_then(|m| m.get(merge_key)) } else { Some(value) };
    key.filter(|k| !k.is_null())
}

/// `index`: where `value` sits in `list`.
fn index_of(list: &[Value], value: &Value, merge_key: &str, maps: bool) -> Option<usize> {
    let wanted = order_key(value, merge_key, maps);
    list.iter().position(|item| order_key(item, merge_key, maps) == wanted)
}

fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> Result<(), SmpError> {
    for item in lists.iter().flat_map(|l| l.iter()) {
        let map = item.as_object().ok_or_else(|| bad_arg_type(MAP_TYPE, item))?;
        if !map.contains_key(merge_key) {
            return Err(no_merge_key(map, merge_key));
        }
    }
    Ok(())
}

/// `extractToDeleteItems`: splits off the `$patch: delete` items.
fn extract_to_delete_items(list: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for item in list {
        let map = item.as_object().ok_or_else(|| bad_arg_type(MAP_TYPE, &item))?;
        if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(item);
        } else {
            keep.push(item);
        }
    }
    Ok((keep, delete))
}

/// `normalizeSliceOrder`: sorts `to_sort` by position in `order` (Go's comparator and stable
/// sort), `$patch: delete` items last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    maps: bool,
) -> Result<Vec<Value>, SmpError> {
    let (to_sort, to_delete) = if maps {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    let mut keyed: Vec<(Option<usize>, Value)> =
        to_sort.into_iter().map(|v| (index_of(order, &v, merge_key, maps), v)).collect();
    go_slice_stable(&mut keyed, |a, b| match (a.0, b.0) {
        (Some(i), Some(j)) => i < j,
        _ => true,
    });
    let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    sorted.extend(to_delete);
    Ok(sorted)
}

/// `mergeSortedSlice`: interleaves the server-only items (`left`) into the patch's items
/// (`right`), taking a server-only item first only when both sit in `server_order` and it
/// comes earlier.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    maps: bool,
) -> Vec<Value> {
    let position = |v: &Value| index_of(server_order, v, merge_key, maps);
    let left_positions: Vec<Option<usize>> = left.iter().map(position).collect();
    let right_positions: Vec<Option<usize>> = right.iter().map(position).collect();
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter(), right.into_iter());
    let (mut i, mut j) = (0, 0);
    while i < left_positions.len() || j < right_positions.len() {
        let take_left = if j >= right_positions.len() {
            true
        } else if i >= left_positions.len() {
            false
        } else {
            matches!((left_positions[i], right_positions[j]), (Some(l), Some(r)) if l < r)
        };
        if take_left {
            out.extend(left.next());
            i += 1;
        } else {
            out.extend(right.next());
            j += 1;
        }
    }
    out
}

/// Go's `sort.SliceStable` (insertion sort on blocks of 20, then SymMerge), reproduced so an
/// inconsistent comparator orders items exactly as kube does.
fn go_slice_stable<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, &less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, &less);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, &less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, &less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        for k in a..i - 1 {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

#[cfg(test)]
mod tests;
