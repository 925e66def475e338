//! `/openapi/v2` and `/openapi/v3`: documents generated from the served kinds' schemas, with
//! the custom resources' group versions added as their CRDs come and go.
//!
//! The built-in documents are built once. Each custom group version's documents are built by
//! the CRD controller when one of its CRDs changes (only that group version's), and kept here.
//! The merged `/openapi/v2` is spliced from the parts per request (a copy of bytes already
//! serialized, not kept: it is the largest document and few clients ask for it); its protobuf
//! form and the `/openapi/v3` index are built at the first request after a change and kept
//! until the next.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::error::ApiError;
use bytes::Bytes;
use kinds::schema::{self, CustomDocuments};

/// The custom resources' part of the documents, shared by the handlers and the CRD controller.
#[derive(Clone, Default)]
pub struct CustomOpenApi {
    /// Held briefly: a handler clones an `Arc` out, the controller swaps one group version in.
    inner: Arc<RwLock<Inner>>,
}

#[derive(Default)]
struct Inner {
    /// `apis/<group>/<version>` to its documents.
    groups: BTreeMap<String, Arc<CustomDocuments>>,
    /// The merged documents, built at the first request after a change.
    v2_protobuf: Option<Bytes>,
    v3_index: Option<Bytes>,
}

impl controllers::crds::CustomOpenApi for CustomOpenApi {
    fn set(&self, group: &str, version: &str, docs: Option<CustomDocuments>) {
        CustomOpenApi::set(self, group, version, docs)
    }
}

impl CustomOpenApi {
    /// Sets (or, with `None`, removes) the documents of `group`/`version`.
    pub fn set(&self, group: &str, version: &str, docs: Option<CustomDocuments>) {
        let key = format!("apis/{group}/{version}");
        let mut inner = self.write();
        match docs {
            Some(d) => inner.groups.insert(key, Arc::new(d)),
            None => inner.groups.remove(&key),
        };
        inner.v2_protobuf = None;
        inner.v3_index = None;
    }

    /// The documents of one custom group version (`apis/example.com/v1`).
    pub fn group(&self, key: &str) -> Option<Arc<CustomDocuments>> {
        self.read().groups.get(key).cloned()
    }

    fn merged(&self, cached: fn(&mut Inner) -> &mut Option<Bytes>, build: fn(&[&CustomDocuments]) -> Vec<u8>) -> Bytes {
        let groups: Vec<Arc<CustomDocuments>> = {
            let mut inner = self.write();
            if let Some(done) = cached(&mut inner) {
                return done.clone();
            }
            inner.groups.values().cloned().collect()
        };
        // Built outside the lock; a change meanwhile clears the slot again.
        let docs: Vec<&CustomDocuments> = groups.iter().map(Arc::as_ref).collect();
        let built = Bytes::from(build(&docs));
        let mut inner = self.write();
        let same =
            inner.groups.len() == groups.len() && inner.groups.values().zip(&groups).all(|(a, b)| Arc::ptr_eq(a, b));
        if same {
            *cached(&mut inner) = Some(built.clone());
        }
        built
    }

    fn is_empty(&self) -> bool {
        self.read().groups.is_empty()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What a request for an OpenAPI document asks beyond its path.
pub struct Asked<'a> {
    /// The `Accept` header: `/openapi/v2` is served as protobuf when it names it.
    pub accept: &'a str,
    /// A v3 document's `hash` query parameter.
    pub hash: Option<&'a str>,
}

/// Serves the OpenAPI documents.
pub fn serve(custom: &CustomOpenApi, path: &str, asked: Asked<'_>) -> Result<HttpResponse, ApiError> {
    let not_found =
        || ApiError::new(apimachinery::Reason::NotFound, "the server could not find the requested resource");
    let json = |body: Bytes| HttpResponse::Ok().content_type("application/json").body(body);
    if path == "/openapi/v2" {
        // kubectl's client-go asks for protobuf only and cannot parse JSON here.
        if schema::OPENAPI_V2_PROTOBUF_ACCEPT.iter().any(|p| asked.accept.contains(p)) {
            let doc = if custom.is_empty() {
                Bytes::from_static(schema::openapi_v2_protobuf())
            } else {
                custom.merged(|i| &mut i.v2_protobuf, schema::openapi_v2_protobuf_with)
            };
            return Ok(HttpResponse::Ok().content_type(schema::OPENAPI_V2_PROTOBUF).body(doc));
        }
        if custom.is_empty() {
            return Ok(json(Bytes::from_static(schema::openapi_v2())));
        }
        let groups: Vec<Arc<CustomDocuments>> = custom.read().groups.values().cloned().collect();
        let docs: Vec<&CustomDocuments> = groups.iter().map(Arc::as_ref).collect();
        return Ok(json(Bytes::from(schema::openapi_v2_with(&docs))));
    }
    let rest = path.trim_start_matches("/openapi/v3").trim_start_matches('/');
    if rest.is_empty() {
        if custom.is_empty() {
            return Ok(json(Bytes::from_static(schema::openapi_v3_index())));
        }
        return Ok(json(custom.merged(
            |i| &mut i.v3_index,
            |docs| schema::openapi_v3_index_with(docs.iter().map(|d| (d.v3_key.as_str(), d.v3_hash.as_str()))),
        )));
    }
    let key = rest.trim_matches('/');
    let (doc, hash) = match (schema::openapi_v3_document(key), schema::openapi_v3_hash(key)) {
        (Some(doc), Some(hash)) => (Bytes::from_static(doc), hash.to_string()),
        _ => {
            let d = custom.group(key).ok_or_else(not_found)?;
            (d.v3.clone(), d.v3_hash.clone())
        }
    };
    // A stale hash is sent to the current document, as kube does: clients cache by URL.
    if let Some(asked) = asked.hash
        && asked != hash
    {
        return Ok(HttpResponse::build(StatusCode::MOVED_PERMANENTLY)
            .insert_header(("Location", format!("/openapi/v3/{key}?hash={hash}")))
            .finish());
    }
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Cache-Control", "public, immutable"))
        .insert_header(("Etag", format!("\"{hash}\"")))
        .body(doc))
}
