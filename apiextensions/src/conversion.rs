//! A CRD's conversion webhook (`spec.conversion.strategy: Webhook`): ConversionReview v1 (or
//! v1beta1) sent to the CRD's `clientConfig`, the answer checked as kube's
//! `webhookConverter` checks it, and each error worded as kube words it
//! (`conversion webhook for example.com/v1beta1, Kind=Widget failed: ...`), answered 500 with no
//! reason as kube answers them.
//!
//! Two things differ from kube, both to call the webhook less: the objects one read needs
//! converted go in one review (kube sends a list's items one review each), and a converted
//! object is remembered by uid, resourceVersion and target version (a stored revision converts
//! to a version the same way every time), so re-reading an unchanged object costs no call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::catalogue::Converter;
use apimachinery::error::ApiError;
use apimachinery::lookup::{ObjectLookup, service_url, slash_prefixed};
use apimachinery::object::ObjectExt;
use serde_json::{Map, Value, json};
use webhook_client::{CallError, Endpoint, WebhookClient};

/// kube's fixed timeout for conversion calls.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Converted objects remembered; past it the memory starts afresh.
const REMEMBERED: usize = 10_000;

/// Calls one CRD's conversion webhook.
pub struct WebhookConverter {
    kind: String,
    endpoint: Endpoint,
    client: Result<WebhookClient, String>,
    /// `apiextensions.k8s.io/v1` or `/v1beta1`: the first of `conversionReviewVersions` kube
    /// speaks; an error when it speaks none.
    review_version: Result<&'static str, String>,
    /// Resolves a `clientConfig.service` to an endpoint address.
    services: Arc<dyn ObjectLookup>,
    /// (uid, resourceVersion, apiVersion) to the converted object. A plain map under a mutex:
    /// held only to look up or insert, never across the call.
    converted: Mutex<HashMap<(String, String, String), Value>>,
}

impl WebhookConverter {
    /// The converter of `crd`, if its conversion strategy is `Webhook`.
    pub fn of(crd: &Value, services: Arc<dyn ObjectLookup>) -> Option<WebhookConverter> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
        let (endpoint, client) =
            webhook_client::from_client_config(webhook.get("clientConfig").unwrap_or(&Value::Null));
        let review_version = webhook
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|v| match v.as_str() {
                Some("v1") => Some("apiextensions.k8s.io/v1"),
                Some("v1beta1") => Some("apiextensions.k8s.io/v1beta1"),
                _ => None,
            })
            .ok_or_else(|| "no supported conversion review versions".to_string());
        Some(WebhookConverter {
            kind: crd.pointer("/spec/names/kind").and_then(Value::as_str).unwrap_or("").to_string(),
            endpoint,
            client,
            review_version,
            services,
            converted: Mutex::default(),
        })
    }

    fn remembered(&self, key: &(String, String, String)) -> Option<Value> {
        self.converted.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(key).cloned()
    }

    fn remember(&self, key: (String, String, String), object: &Value) {
        let mut converted = self.converted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if converted.len() >= REMEMBERED {
            converted.clear();
        }
        converted.insert(key, object.clone());
    }

    /// One review with `objects`, answered with the converted objects, checked.
    async fn review(&self, objects: &[Value], desired: &str) -> Result<Vec<Value>, String> {
        let review_version = self.review_version.clone()?;
        let client = self.client.as_ref().map_err(Clone::clone)?;
        // Errors quote the URL kube posts to: for a Service its DNS name and port, whichever
        // endpoint is dialled.
        let (base, shown) = match &self.endpoint {
            Endpoint::Url(url) => (url.clone(), url.clone()),
            Endpoint::Service { namespace, name, path, port } => {
                let dialled = service_url(self.services.as_ref(), namespace, name, path, *port).await?;
                (dialled, format!("https://{name}.{namespace}.svc:{port}{}", slash_prefixed(path)))
            }
        };
        let with_timeout = |url: &str| {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}timeout={}s", TIMEOUT.as_secs())
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let body = json!({
            "kind": "ConversionReview",
            "apiVersion": review_version,
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
        });
        let reply = match client.post_json_to(&with_timeout(&base), &body, TIMEOUT).await {
            Ok((200..=299, reply)) => reply,
            Ok((code, reply)) => return Err(status_error(code, &reply)),
            Err(CallError::DeadlineExceeded) => {
                return Err(format!("Post \"{}\": context deadline exceeded", with_timeout(&shown)));
            }
            Err(CallError::Failed(e)) => return Err(format!("Post \"{}\": {e}", with_timeout(&shown))),
        };
        let (api_version, kind) = (text(&reply, "apiVersion"), text(&reply, "kind"));
        if api_version != review_version || kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of {review_version}, Kind=ConversionReview, got {api_version}, Kind={kind}"
            ));
        }
        let response = reply.get("response").filter(|r| r.is_object()).ok_or("no response provided")?;
        let got = text(response, "uid");
        if review_version.ends_with("/v1") && got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
        let status = response.pointer("/result/status").and_then(Value::as_str).unwrap_or("");
        if status != "Success" {
            let message = response.pointer("/result/message").and_then(Value::as_str).unwrap_or("");
            return Err(if message.is_empty() {
                format!("response.result.status was '{status}', not 'Success'")
            } else {
                message.to_string()
            });
        }
        Ok(response.get("convertedObjects").and_then(Value::as_array).cloned().unwrap_or_default())
    }

    /// One converted object checked against its original (kube's `validateConvertedObject`
    /// and `restoreObjectMeta`): the same kind, name, namespace and uid, in the desired version,
    /// with only labels and annotations taken from the webhook's metadata.
    fn checked(&self, original: &Value, converted: Value, desired: &str, at: Option<usize>) -> Result<Value, String> {
        let invalid = |what: &str| match at {
            Some(i) => format!("returned invalid converted object at index {i}: {what}"),
            None => format!("returned invalid object at index 0: {what}"),
        };
        let got_version = text(&converted, "apiVersion");
        if got_version != desired {
            return Err(invalid(&format!("invalid groupVersion (expected {desired}, received {got_version})")));
        }
        let got_kind = text(&converted, "kind");
        if got_kind != self.kind {
            return Err(invalid(&format!("invalid kind (expected {}, received {got_kind})", self.kind)));
        }
        let identity = |what: &str, a: &str, b: &str| match at {
            Some(i) => format!("returned invalid converted object at index {i}: must have the same {what}: {a} != {b}"),
            None => format!("returned invalid object: must have the same {what}: {a} != {b}"),
        };
        for (what, a, b) in [
            ("name", original.name(), converted.name()),
            ("namespace", original.namespace(), converted.namespace()),
            ("UID", original.uid(), converted.uid()),
        ] {
            if a != b {
                return Err(identity(what, a, b));
            }
        }
        let mut out = converted;
        let mut meta: Map<String, Value> =
            original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
        for key in ["labels", "annotations"] {
            match out.pointer(&format!("/metadata/{key}")) {
                Some(Value::Object(m)) => {
                    if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                        let place = match at {
                            Some(i) => format!("returned invalid metadata in object at index {i}"),
                            None => "returned invalid metadata".to_string(),
                        };
                        return Err(format!(
                            "{place}: metadata.{key}[{k}] must be a string, but is {} in converted object",
                            go_type(v)
                        ));
                    }
                    meta.insert(key.into(), Value::Object(m.clone()));
                }
                _ => {
                    meta.remove(key);
                }
            }
        }
        out["metadata"] = Value::Object(meta);
        Ok(out)
    }
}

#[async_trait::async_trait(?Send)]
impl Converter for WebhookConverter {
    async fn convert(&self, objects: Vec<Value>, api_version: &str) -> Result<Vec<Value>, ApiError> {
        let mut out: Vec<Option<Value>> = Vec::with_capacity(objects.len());
        let mut pending = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            let key = (o.uid().to_string(), o.resource_version().to_string(), api_version.to_string());
            let only_type_meta = o.as_object().is_some_and(|m| m.keys().all(|k| k == "apiVersion" || k == "kind"));
            if text(o, "apiVersion") == api_version {
                out.push(Some(o.clone()));
            } else if only_type_meta {
                let mut local = o.clone();
                local["apiVersion"] = api_version.into();
                out.push(Some(local));
            } else if let Some(done) = (!key.0.is_empty() && !key.1.is_empty()).then(|| self.remembered(&key)).flatten()
            {
                out.push(Some(done));
            } else {
                out.push(None);
                pending.push(i);
            }
        }
        if pending.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        let sent: Vec<Value> = pending.iter().map(|i| objects[*i].clone()).collect();
        let first = &sent[0];
        let prefix = format!(
            "conversion webhook for {}, Kind={}",
            text(first, "apiVersion"),
            if text(first, "kind").is_empty() { &self.kind } else { text(first, "kind") }
        );
        let converted =
            self.review(&sent, api_version).await.map_err(|e| ApiError::unknown(format!("{prefix} failed: {e}")))?;
        if converted.len() != sent.len() {
            return Err(ApiError::unknown(format!(
                "{prefix} returned {} objects, expected {}",
                converted.len(),
                sent.len()
            )));
        }
        let several = sent.len() > 1;
        for ((i, original), converted) in pending.iter().zip(&sent).zip(converted) {
            let checked = self
                .checked(original, converted, api_version, several.then_some(*i))
                .map_err(|e| ApiError::unknown(format!("{prefix} {e}")))?;
            if !original.uid().is_empty() && !original.resource_version().is_empty() {
                let key =
                    (original.uid().to_string(), original.resource_version().to_string(), api_version.to_string());
                self.remember(key, &checked);
            }
            out[*i] = Some(checked);
        }
        Ok(out.into_iter().flatten().collect())
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Go's name of a decoded JSON value's type, as kube's message prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// What client-go makes of a non-2xx answer: a Status's message, else its generic words.
fn status_error(code: u16, reply: &Value) -> String {
    if reply.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(m) = reply.get("message").and_then(Value::as_str).filter(|m| !m.is_empty())
    {
        return m.to_string();
    }
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        404 => "the server could not find the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        _ => {
            let body = if reply.is_null() { String::new() } else { reply.to_string() };
            format!("an error on the server ({body:?}) has prevented the request from succeeding")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoObjects;

    #[async_trait::async_trait]
    impl ObjectLookup for NoObjects {
        async fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Result<Option<Value>, ApiError> {
            Ok(None)
        }
    }

    fn converter(review_versions: Value) -> WebhookConverter {
        let crd = json!({"spec": {"names": {"kind": "Widget"}, "conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": review_versions, "clientConfig": {"url": "https://127.0.0.1:1/convert"}}}}});
        WebhookConverter::of(&crd, Arc::new(NoObjects)).unwrap()
    }

    fn widget(version: &str, labels: Value) -> Value {
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "labels": labels,
                "annotations": {"keep": "me"}, "generation": 2}, "spec": {}})
    }

    #[test]
    fn only_labels_and_annotations_come_from_the_webhook() {
        let c = converter(json!(["v2", "v1"]));
        assert_eq!(c.review_version, Ok("apiextensions.k8s.io/v1"));
        let mut answered = widget("v2", json!({"new": "x"}));
        answered["metadata"]["generation"] = 9.into();
        answered["metadata"].as_object_mut().unwrap().remove("annotations");
        let out = c.checked(&widget("v1", json!({"old": "y"})), answered, "example.com/v2", None).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"new": "x"}));
        assert!(out["metadata"].get("annotations").is_none(), "dropped by the webhook, so deleted");
        assert_eq!(out["metadata"]["generation"], 2, "the rest of metadata is the original's");
    }

    #[test]
    fn a_converted_object_must_keep_its_identity_and_reach_the_desired_version() {
        let c = converter(json!(["v1"]));
        let original = widget("v1", json!({}));
        let e = c.checked(&original, widget("v1", json!({})), "example.com/v2", None).unwrap_err();
        assert_eq!(
            e,
            "returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v1)"
        );
        let mut renamed = widget("v2", json!({}));
        renamed["metadata"]["name"] = "b".into();
        let e = c.checked(&original, renamed, "example.com/v2", Some(3)).unwrap_err();
        assert_eq!(e, "returned invalid converted object at index 3: must have the same name: a != b");
        let e = c.checked(&original, widget("v2", json!({"n": 1})), "example.com/v2", None).unwrap_err();
        assert_eq!(
            e,
            "returned invalid metadata: metadata.labels[n] must be a string, but is float64 in converted object"
        );
    }

    #[test]
    fn unsupported_review_versions_and_failed_statuses_read_as_kubes() {
        assert_eq!(converter(json!(["v3"])).review_version, Err("no supported conversion review versions".to_string()));
        assert_eq!(status_error(404, &Value::Null), "the server could not find the requested resource");
        assert_eq!(status_error(500, &json!({"kind": "Status", "message": "boom"})), "boom");
    }
}
