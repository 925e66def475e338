//! Protobuf and metadata-only reads as client-go speaks them, decoded here with k8s-pb (prost
//! types generated from the upstream .proto files by another project), never with the
//! server's own codec.

use std::time::Duration;

use futures_util::StreamExt;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{Value, json};
use tests::TestServer;

const PB: &str = "application/vnd.kubernetes.protobuf";
/// What client-go 1.32's typed clients send when the program sets no content type.
const CLIENT_GO_ACCEPT: &str = "application/vnd.kubernetes.protobuf,application/json";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// `k8s\0` + runtime.Unknown around `msg`.
fn envelope(api_version: &str, kind: &str, msg: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) }),
        raw: Some(msg.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

/// The Unknown of a protobuf response, checked for the magic.
fn open(body: &[u8]) -> Unknown {
    assert!(body.starts_with(b"k8s\0"), "not a protobuf body: {:?}", String::from_utf8_lossy(body));
    Unknown::decode(&body[4..]).expect("a runtime.Unknown")
}

fn kind_of(u: &Unknown) -> (String, String) {
    let tm = u.type_meta.clone().unwrap_or_default();
    (tm.api_version.unwrap_or_default(), tm.kind.unwrap_or_default())
}

struct Client {
    http: awc::Client,
    base: String,
}

impl Client {
    async fn call(
        &self,
        method: &str,
        path: &str,
        accept: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> (u16, String, Vec<u8>) {
        let req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .insert_header(("Accept", accept));
        let mut resp = match body {
            Some((ct, b)) => req.insert_header(("Content-Type", ct)).send_body(b).await,
            None => req.send().await,
        }
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let ct = resp.headers().get("Content-Type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let bytes = resp.body().limit(64 << 20).await.unwrap().to_vec();
        (resp.status().as_u16(), ct, bytes)
    }

    async fn json(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|b| ("application/json", serde_json::to_vec(&b).unwrap()));
        let (code, _, bytes) = self.call(method, path, "application/json", body).await;
        (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

fn configmap(name: &str, data: &[(&str, &str)]) -> core::ConfigMap {
    core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some(name.into()),
            // Go's marshallers write empty non-pointer fields: the server must treat them as absent.
            namespace: Some(String::new()),
            resource_version: Some(String::new()),
            uid: Some(String::new()),
            creation_timestamp: Some(Default::default()),
            labels: [("app".to_string(), "pb".to_string())].into(),
            ..Default::default()
        }),
        data: data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    }
}

#[actix_web::test]
async fn client_go_writes_and_reads_in_protobuf() {
    let s = TestServer::start();
    let c = Client { http: s.client(true), base: s.url("") };

    // Create, as client-go does by default.
    let body = envelope("v1", "ConfigMap", &configmap("one", &[("k", "v1")]));
    let (code, ct, bytes) = c.call("POST", CONFIGMAPS, CLIENT_GO_ACCEPT, Some((PB, body))).await;
    assert_eq!((code, ct.as_str()), (201, PB), "{}", String::from_utf8_lossy(&bytes));
    let u = open(&bytes);
    assert_eq!(kind_of(&u), ("v1".into(), "ConfigMap".into()));
    let created = core::ConfigMap::decode(u.raw.unwrap().as_slice()).unwrap();
    let m = created.metadata.unwrap();
    assert_eq!((m.name.as_deref(), m.namespace.as_deref()), (Some("one"), Some("default")));
    assert_eq!(m.uid.as_deref().map(str::len), Some(36));
    assert!(m.creation_timestamp.unwrap().seconds.unwrap() > 1_700_000_000);
    let rv = m.resource_version.unwrap();

    // The same object in JSON: nothing of Go's empty fields was stored.
    let (code, j) = c.json("GET", &format!("{CONFIGMAPS}/one"), None).await;
    assert_eq!(code, 200);
    assert_eq!(j["data"], json!({"k": "v1"}));
    assert_eq!(j["metadata"]["labels"], json!({"app": "pb"}));
    assert_eq!(j["metadata"]["resourceVersion"], rv.as_str());

    // Get and update in protobuf.
    let (code, _, bytes) = c.call("GET", &format!("{CONFIGMAPS}/one"), CLIENT_GO_ACCEPT, None).await;
    assert_eq!(code, 200);
    let mut got = core::ConfigMap::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
    assert_eq!(got.data["k"], "v1");
    got.data.insert("k".into(), "v2".into());
    let (code, _, bytes) = c
        .call("PUT", &format!("{CONFIGMAPS}/one"), CLIENT_GO_ACCEPT, Some((PB, envelope("v1", "ConfigMap", &got))))
        .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&bytes));
    let updated = core::ConfigMap::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
    assert_eq!(updated.data["k"], "v2");
    assert_ne!(updated.metadata.unwrap().resource_version.unwrap(), rv);

    // A stale update is a Conflict, answered as a protobuf Status.
    let (code, ct, bytes) = c
        .call("PUT", &format!("{CONFIGMAPS}/one"), CLIENT_GO_ACCEPT, Some((PB, envelope("v1", "ConfigMap", &got))))
        .await;
    assert_eq!((code, ct.as_str()), (409, PB));
    let u = open(&bytes);
    assert_eq!(kind_of(&u), ("v1".into(), "Status".into()));
    let st = meta::Status::decode(u.raw.unwrap().as_slice()).unwrap();
    assert_eq!((st.code, st.reason.as_deref(), st.status.as_deref()), (Some(409), Some("Conflict"), Some("Failure")));
    assert!(st.message.unwrap().starts_with("Operation cannot be fulfilled on configmaps \"one\""));

    // Not found, in protobuf too.
    let (code, _, bytes) = c.call("GET", &format!("{CONFIGMAPS}/nope"), CLIENT_GO_ACCEPT, None).await;
    assert_eq!(code, 404);
    let st = meta::Status::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
    assert_eq!(st.message.as_deref(), Some("configmaps \"nope\" not found"));
    assert_eq!(st.details.unwrap().kind.as_deref(), Some("configmaps"));

    // A second object, then the list.
    let body = envelope("v1", "ConfigMap", &configmap("two", &[("x", "1")]));
    assert_eq!(c.call("POST", CONFIGMAPS, CLIENT_GO_ACCEPT, Some((PB, body))).await.0, 201);
    let (code, _, bytes) = c.call("GET", &format!("{CONFIGMAPS}?labelSelector=app%3Dpb"), CLIENT_GO_ACCEPT, None).await;
    assert_eq!(code, 200);
    let u = open(&bytes);
    assert_eq!(kind_of(&u), ("v1".into(), "ConfigMapList".into()));
    let list = core::ConfigMapList::decode(u.raw.unwrap().as_slice()).unwrap();
    let names: Vec<_> = list.items.iter().map(|i| i.metadata.clone().unwrap().name.unwrap()).collect();
    assert_eq!(names, ["one", "two"]);
    assert!(!list.metadata.unwrap().resource_version.unwrap().is_empty());

    // A malformed protobuf body is a 400 and stores nothing.
    let (code, _, bytes) =
        c.call("POST", CONFIGMAPS, "application/json", Some((PB, b"k8s\0\x0a\xff\xff".to_vec()))).await;
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&bytes));
    let (code, _, bytes) =
        c.call("POST", CONFIGMAPS, "application/json", Some((PB, b"{\"kind\":\"ConfigMap\"}".to_vec()))).await;
    assert_eq!(code, 400);
    let st: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(st["message"], "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]");
}

#[actix_web::test]
async fn pods_and_secrets_keep_kube_json_through_protobuf() {
    let s = TestServer::start();
    let c = Client { http: s.client(true), base: s.url("") };
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta { name: Some("p".into()), ..Default::default() }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: Some("c".into()),
                image: Some("nginx".into()),
                liveness_probe: Some(core::Probe {
                    handler: Some(core::ProbeHandler {
                        http_get: Some(core::HttpGetAction {
                            path: Some("/healthz".into()),
                            port: Some(k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
                                r#type: Some(0),
                                int_val: Some(8080),
                                str_val: Some(String::new()),
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            volumes: vec![core::Volume {
                name: Some("scratch".into()),
                volume_source: Some(core::VolumeSource {
                    empty_dir: Some(core::EmptyDirVolumeSource::default()),
                    ..Default::default()
                }),
            }],
            ..Default::default()
        }),
        status: None,
    };
    let (code, _, bytes) = c
        .call("POST", "/api/v1/namespaces/default/pods", CLIENT_GO_ACCEPT, Some((PB, envelope("v1", "Pod", &pod))))
        .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&bytes));
    let (_, j) = c.json("GET", "/api/v1/namespaces/default/pods/p", None).await;
    // Inlined structs are inlined, and defaults applied as for a JSON create.
    assert_eq!(
        j["spec"]["containers"][0]["livenessProbe"]["httpGet"],
        json!({"path": "/healthz", "port": 8080, "scheme": "HTTP"})
    );
    assert_eq!(j["spec"]["volumes"][0], json!({"name": "scratch", "emptyDir": {}}));
    assert_eq!(j["spec"]["restartPolicy"], "Always");

    let secret = core::Secret {
        metadata: Some(meta::ObjectMeta { name: Some("s".into()), ..Default::default() }),
        data: [("password".to_string(), b"hunter2".to_vec())].into(),
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    let (code, _, _) = c
        .call(
            "POST",
            "/api/v1/namespaces/default/secrets",
            CLIENT_GO_ACCEPT,
            Some((PB, envelope("v1", "Secret", &secret))),
        )
        .await;
    assert_eq!(code, 201);
    let (_, j) = c.json("GET", "/api/v1/namespaces/default/secrets/s", None).await;
    assert_eq!(j["data"]["password"], "aHVudGVyMg==");
    let (_, _, bytes) = c.call("GET", "/api/v1/namespaces/default/secrets/s", PB, None).await;
    let back = core::Secret::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
    assert_eq!(back.data["password"], b"hunter2");
}

/// Reads protobuf watch frames off a response until `n` have arrived.
async fn frames(
    resp: &mut awc::ClientResponse<
        impl futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
    >,
    n: usize,
) -> Vec<(String, Unknown)> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.next()).await.expect("a frame in time");
        buf.extend_from_slice(&chunk.expect("stream open").unwrap());
        while buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if buf.len() < 4 + len {
                break;
            }
            let ev = meta::WatchEvent::decode(&buf[4..4 + len]).unwrap();
            out.push((ev.r#type.unwrap(), open(&ev.object.unwrap().raw.unwrap())));
            buf.drain(..4 + len);
        }
    }
    out
}

#[actix_web::test]
async fn watches_stream_protobuf_frames_and_metadata() {
    // A small window, so that a watch from the first revision is too old.
    let s = TestServer::start_with(&["--watch-cache-sizes", "configmaps#3", "--watch-cache-event-freshness", "0s"]);
    let c = Client { http: s.client(true), base: s.url("") };
    let (_, cm) = c.json("POST", CONFIGMAPS, Some(json!({"metadata": {"name": "w1"}, "data": {"big": "x"}}))).await;
    let rv = cm["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    let url = format!("{}{CONFIGMAPS}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true", c.base);
    let mut resp = c.http.get(&url).insert_header(("Accept", CLIENT_GO_ACCEPT)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers().get("Content-Type").unwrap(), "application/vnd.kubernetes.protobuf;stream=watch");
    c.json("POST", CONFIGMAPS, Some(json!({"metadata": {"name": "w2"}, "data": {"k": "v"}}))).await;
    c.json("DELETE", &format!("{CONFIGMAPS}/w1"), None).await;
    let got = frames(&mut resp, 2).await;
    assert_eq!(got[0].0, "ADDED");
    assert_eq!(kind_of(&got[0].1), ("v1".into(), "ConfigMap".into()));
    let added = core::ConfigMap::decode(got[0].1.raw.clone().unwrap().as_slice()).unwrap();
    assert_eq!((added.metadata.unwrap().name.as_deref(), added.data["k"].as_str()), (Some("w2"), "v"));
    assert_eq!(got[1].0, "DELETED");

    // A watch from a revision out of the window and compacted ends with an ERROR frame
    // holding a 410 Status.
    for i in 0..5 {
        c.json("POST", CONFIGMAPS, Some(json!({"metadata": {"name": format!("churn{i}")}}))).await;
    }
    s.compact();
    let url = format!("{}{CONFIGMAPS}?watch=1&resourceVersion=1", c.base);
    let mut resp = c.http.get(&url).insert_header(("Accept", PB)).send().await.unwrap();
    let got = frames(&mut resp, 1).await;
    assert_eq!(got[0].0, "ERROR");
    assert_eq!(kind_of(&got[0].1).1, "Status");
    let st = meta::Status::decode(got[0].1.raw.clone().unwrap().as_slice()).unwrap();
    assert_eq!((st.code, st.reason.as_deref()), (Some(410), Some("Expired")));

    // Metadata-only watch, as client-go's metadata informers ask for it.
    let accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let (_, list) = c.json("GET", CONFIGMAPS, None).await;
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let url = format!("{}{CONFIGMAPS}?watch=1&resourceVersion={rv}", c.base);
    let mut resp = c.http.get(&url).insert_header(("Accept", accept)).send().await.unwrap();
    c.json(
        "POST",
        CONFIGMAPS,
        Some(json!({"metadata": {"name": "w3", "labels": {"a": "b"}}, "data": {"secret": "s"}})),
    )
    .await;
    let got = frames(&mut resp, 1).await;
    assert_eq!(kind_of(&got[0].1), ("meta.k8s.io/v1".into(), "PartialObjectMetadata".into()));
    let partial = meta::PartialObjectMetadata::decode(got[0].1.raw.clone().unwrap().as_slice()).unwrap();
    assert_eq!(partial.metadata.unwrap().labels["a"], "b");
}

#[actix_web::test]
async fn metadata_only_reads_and_what_is_not_acceptable() {
    let s = TestServer::start();
    let c = Client { http: s.client(true), base: s.url("") };
    c.json("POST", CONFIGMAPS, Some(json!({"metadata": {"name": "m", "labels": {"a": "b"}}, "data": {"k": "v"}})))
        .await;

    let (code, ct, bytes) =
        c.call("GET", CONFIGMAPS, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", None).await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let list: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        (list["apiVersion"].as_str(), list["kind"].as_str()),
        (Some("meta.k8s.io/v1"), Some("PartialObjectMetadataList"))
    );
    let item = &list["items"][0];
    assert_eq!(item["kind"], "PartialObjectMetadata");
    assert_eq!(item["metadata"]["labels"], json!({"a": "b"}));
    assert!(item.get("data").is_none(), "{item}");

    let accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let (code, _, bytes) = c.call("GET", CONFIGMAPS, accept, None).await;
    assert_eq!(code, 200);
    let u = open(&bytes);
    assert_eq!(kind_of(&u).1, "PartialObjectMetadataList");
    let list = meta::PartialObjectMetadataList::decode(u.raw.unwrap().as_slice()).unwrap();
    assert_eq!(list.items[0].metadata.clone().unwrap().name.as_deref(), Some("m"));

    let (code, _, bytes) = c
        .call("GET", &format!("{CONFIGMAPS}/m"), "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", None)
        .await;
    assert_eq!(code, 200);
    let one: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        (one["kind"].as_str(), one["metadata"]["name"].as_str(), one.get("data")),
        (Some("PartialObjectMetadata"), Some("m"), None)
    );

    // What kube refuses with 406.
    let cases = [
        (
            format!("{CONFIGMAPS}/m"),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)",
        ),
        (
            CONFIGMAPS.to_string(),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)",
        ),
        (
            CONFIGMAPS.to_string(),
            "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ),
    ];
    for (path, accept, message) in cases {
        let (code, _, bytes) = c.call("GET", &path, accept, None).await;
        let st: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            (code, st["reason"].as_str(), st["message"].as_str()),
            (406, Some("NotAcceptable"), Some(message)),
            "{accept}"
        );
    }
}

/// A read-modify-write that changes nothing writes nothing in protobuf too: what client-go
/// puts back carries Go's empty non-pointer fields (an empty generateName and selfLink, a zero
/// generation, nanoseconds in its times), which the server reads as absent, as kube does.
#[actix_web::test]
async fn an_unchanged_object_put_back_in_protobuf_keeps_its_resource_version() {
    let s = TestServer::start();
    let c = Client { http: s.client(true), base: s.url("") };
    let body = envelope("v1", "ConfigMap", &configmap("same", &[("k", "v")]));
    let (code, _, bytes) = c.call("POST", CONFIGMAPS, CLIENT_GO_ACCEPT, Some((PB, body))).await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&bytes));
    let (_, _, bytes) = c.call("GET", &format!("{CONFIGMAPS}/same"), CLIENT_GO_ACCEPT, None).await;
    let mut got = core::ConfigMap::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
    let meta = got.metadata.as_mut().unwrap();
    let rv = meta.resource_version.clone().unwrap();
    meta.generate_name = Some(String::new());
    meta.self_link = Some(String::new());
    meta.generation = Some(0);
    if let Some(t) = meta.creation_timestamp.as_mut() {
        t.nanos = Some(0);
    }
    for entry in &mut meta.managed_fields {
        entry.subresource = Some(String::new());
        if let Some(t) = entry.time.as_mut() {
            t.nanos = Some(0);
        }
    }
    let (code, _, bytes) = c
        .call("PUT", &format!("{CONFIGMAPS}/same"), CLIENT_GO_ACCEPT, Some((PB, envelope("v1", "ConfigMap", &got))))
        .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&bytes));
    let same = core::ConfigMap::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
    assert_eq!(same.metadata.unwrap().resource_version.unwrap(), rv);
}

/// A server-side apply answers in protobuf when the client asks for it, as kube-apiserver
/// 1.32 does (recorded: 201, the entry `m`/`Apply` with `{"f:data":{"f:k":{}}}` as raw bytes).
#[actix_web::test]
async fn server_side_apply_answers_in_protobuf() {
    let s = TestServer::start();
    let c = Client { http: s.client(true), base: s.url("") };
    let config = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pb}\ndata: {k: v}\n".to_vec();
    let (code, ct, bytes) = c
        .call("PATCH", &format!("{CONFIGMAPS}/pb?fieldManager=m"), PB, Some(("application/apply-patch+yaml", config)))
        .await;
    assert_eq!((code, ct.as_str()), (201, PB), "{}", String::from_utf8_lossy(&bytes));
    let u = open(&bytes);
    assert_eq!(kind_of(&u), ("v1".into(), "ConfigMap".into()));
    let cm = core::ConfigMap::decode(u.raw.unwrap().as_slice()).unwrap();
    let entry = &cm.metadata.unwrap().managed_fields[0];
    assert_eq!((entry.manager.as_deref(), entry.operation.as_deref()), (Some("m"), Some("Apply")));
    let raw = entry.fields_v1.clone().unwrap().raw.unwrap();
    assert_eq!(String::from_utf8(raw).unwrap(), r#"{"f:data":{"f:k":{}}}"#);
}

mod extensions {
    //! CustomResourceDefinitions and APIServices in protobuf, as client-go's apiextensions and
    //! aggregator clientsets send them (kube's e2e suite does by default), decoded with k8s-pb.

    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as reg;
    use prost::Message;
    use serde_json::json;
    use tests::TestServer;

    use super::{CLIENT_GO_ACCEPT, Client, PB, envelope, frames, kind_of, open};

    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

    fn props(ty: &str) -> ext::JsonSchemaProps {
        ext::JsonSchemaProps { r#type: Some(ty.into()), ..Default::default() }
    }

    /// A CRD as a Go client builds it: a schema with JSON values, the x-kubernetes-* fields, a
    /// schema as additionalProperties; every value field of Go's structs written.
    fn gadgets() -> ext::CustomResourceDefinition {
        let spec_schema = ext::JsonSchemaProps {
            properties: [
                (
                    "size".to_string(),
                    ext::JsonSchemaProps {
                        default: Some(ext::Json { raw: Some(b"3".to_vec()) }),
                        maximum: Some(10.0),
                        ..props("integer")
                    },
                ),
                (
                    "labels".to_string(),
                    ext::JsonSchemaProps {
                        additional_properties: Some(Box::new(ext::JsonSchemaPropsOrBool {
                            allows: Some(true),
                            schema: Some(Box::new(props("string"))),
                        })),
                        ..props("object")
                    },
                ),
                (
                    "tags".to_string(),
                    ext::JsonSchemaProps {
                        items: Some(Box::new(ext::JsonSchemaPropsOrArray {
                            schema: Some(Box::new(props("string"))),
                            j_son_schemas: Vec::new(),
                        })),
                        x_kubernetes_list_type: Some("set".into()),
                        ..props("array")
                    },
                ),
                (
                    "extra".to_string(),
                    ext::JsonSchemaProps { x_kubernetes_preserve_unknown_fields: Some(true), ..props("object") },
                ),
            ]
            .into(),
            ..props("object")
        };
        ext::CustomResourceDefinition {
            metadata: Some(meta::ObjectMeta {
                name: Some("gadgets.example.com".into()),
                labels: [("app".to_string(), "pb".to_string())].into(),
                ..Default::default()
            }),
            spec: Some(ext::CustomResourceDefinitionSpec {
                group: Some("example.com".into()),
                names: Some(ext::CustomResourceDefinitionNames {
                    plural: Some("gadgets".into()),
                    singular: Some("gadget".into()),
                    kind: Some("Gadget".into()),
                    list_kind: Some("GadgetList".into()),
                    ..Default::default()
                }),
                scope: Some("Namespaced".into()),
                versions: vec![ext::CustomResourceDefinitionVersion {
                    name: Some("v1".into()),
                    served: Some(true),
                    storage: Some(true),
                    schema: Some(ext::CustomResourceValidation {
                        open_apiv3_schema: Some(ext::JsonSchemaProps {
                            properties: [("spec".to_string(), spec_schema)].into(),
                            ..props("object")
                        }),
                    }),
                    ..Default::default()
                }],
                preserve_unknown_fields: Some(false),
                ..Default::default()
            }),
            status: Some(Default::default()),
        }
    }

    #[actix_web::test]
    async fn custom_resource_definitions_travel_in_protobuf() {
        let s = TestServer::start();
        let c = Client { http: s.client(true), base: s.url("") };
        let crd = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &gadgets());
        let (code, ct, bytes) = c.call("POST", CRDS, CLIENT_GO_ACCEPT, Some((PB, crd))).await;
        assert_eq!((code, ct.as_str()), (201, PB), "{}", String::from_utf8_lossy(&bytes));
        let u = open(&bytes);
        assert_eq!(kind_of(&u), ("apiextensions.k8s.io/v1".into(), "CustomResourceDefinition".into()));
        let created = ext::CustomResourceDefinition::decode(u.raw.unwrap().as_slice()).unwrap();
        let rv = created.metadata.unwrap().resource_version.unwrap();

        // Stored as kube's JSON names it: $-less, x-kubernetes-*, JSON values as values.
        let (code, j) = c.json("GET", &format!("{CRDS}/gadgets.example.com"), None).await;
        assert_eq!(code, 200);
        let spec = &j["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        assert_eq!(spec["size"], json!({"type": "integer", "default": 3, "maximum": 10}));
        assert_eq!(spec["labels"]["additionalProperties"], json!({"type": "string"}));
        assert_eq!(spec["tags"]["items"], json!({"type": "string"}));
        assert_eq!(spec["tags"]["x-kubernetes-list-type"], "set");
        assert_eq!(spec["extra"]["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(j["spec"]["names"]["listKind"], "GadgetList");

        // Read back in protobuf: the same schema.
        let (code, _, bytes) = c.call("GET", &format!("{CRDS}/gadgets.example.com"), CLIENT_GO_ACCEPT, None).await;
        assert_eq!(code, 200);
        let got = ext::CustomResourceDefinition::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
        let version = &got.spec.as_ref().unwrap().versions[0];
        let spec = &version.schema.as_ref().unwrap().open_apiv3_schema.as_ref().unwrap().properties["spec"];
        assert_eq!(spec.properties["size"].default.as_ref().unwrap().raw.as_deref(), Some(&b"3"[..]));
        assert_eq!(spec.properties["labels"].additional_properties.as_ref().unwrap().allows, Some(true));
        assert_eq!(spec.properties["extra"].x_kubernetes_preserve_unknown_fields, Some(true));
        assert_eq!(version.served, Some(true));

        // The list, and a watch from the create seeing an update made in protobuf.
        let (code, _, bytes) = c.call("GET", &format!("{CRDS}?labelSelector=app%3Dpb"), CLIENT_GO_ACCEPT, None).await;
        assert_eq!(code, 200);
        let u = open(&bytes);
        assert_eq!(kind_of(&u).1, "CustomResourceDefinitionList");
        let list = ext::CustomResourceDefinitionList::decode(u.raw.unwrap().as_slice()).unwrap();
        assert_eq!(list.items.len(), 1);
        let url = format!("{}{CRDS}?watch=1&resourceVersion={rv}", c.base);
        let mut resp = c.http.get(&url).insert_header(("Accept", CLIENT_GO_ACCEPT)).send().await.unwrap();
        assert_eq!(resp.headers().get("Content-Type").unwrap(), "application/vnd.kubernetes.protobuf;stream=watch");
        // An update read-modify-written as client-go retries it: the CRD controllers write the
        // status meanwhile, so a read can be stale by the time of the write (409).
        let mut updated = false;
        for _ in 0..10 {
            let (_, _, bytes) = c.call("GET", &format!("{CRDS}/gadgets.example.com"), PB, None).await;
            let mut changed = ext::CustomResourceDefinition::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
            changed.metadata.as_mut().unwrap().labels.insert("seen".into(), "yes".into());
            let body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &changed);
            let (code, _, bytes) =
                c.call("PUT", &format!("{CRDS}/gadgets.example.com"), CLIENT_GO_ACCEPT, Some((PB, body))).await;
            if code == 409 {
                continue;
            }
            assert_eq!(code, 200, "{}", String::from_utf8_lossy(&bytes));
            updated = true;
            break;
        }
        assert!(updated, "every update conflicted");
        // The controllers may write the status first: wait for the labelled version.
        let mut seen = false;
        for _ in 0..10 {
            let (ty, u) = frames(&mut resp, 1).await.pop().unwrap();
            assert_eq!((ty.as_str(), kind_of(&u).1.as_str()), ("MODIFIED", "CustomResourceDefinition"));
            let crd = ext::CustomResourceDefinition::decode(u.raw.unwrap().as_slice()).unwrap();
            if crd.metadata.unwrap().labels.get("seen").map(String::as_str) == Some("yes") {
                seen = true;
                break;
            }
        }
        assert!(seen, "no watch event carried the update");

        // Its custom resources stay JSON only, as kube's: a protobuf body is refused, a
        // protobuf-only Accept is not acceptable, client-go's Accept falls back to JSON.
        let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
        let mut served = false;
        for _ in 0..300 {
            if c.json("GET", gadgets, None).await.0 == 200 {
                served = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(served, "the CRD's resource was never served");
        let body = envelope("example.com/v1", "Gadget", &meta::PartialObjectMetadata::default());
        let (code, _, bytes) = c.call("POST", gadgets, "application/json", Some((PB, body))).await;
        assert_eq!(code, 415, "{}", String::from_utf8_lossy(&bytes));
        assert_eq!(c.call("GET", gadgets, PB, None).await.0, 406);
        let (code, ct, _) = c.call("GET", gadgets, CLIENT_GO_ACCEPT, None).await;
        assert_eq!((code, ct.as_str()), (200, "application/json"));
        // Metadata-only views are meta.k8s.io messages: protobuf for custom resources too, as
        // client-go's metadata informers ask for them.
        let gadget =
            json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"size": 4}});
        assert_eq!(c.json("POST", gadgets, Some(gadget)).await.0, 201);
        let accept =
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        let (code, ct, bytes) = c.call("GET", gadgets, accept, None).await;
        assert_eq!((code, ct.as_str()), (200, PB), "{}", String::from_utf8_lossy(&bytes));
        let u = open(&bytes);
        assert_eq!(kind_of(&u), ("meta.k8s.io/v1".into(), "PartialObjectMetadataList".into()));
        let list = meta::PartialObjectMetadataList::decode(u.raw.unwrap().as_slice()).unwrap();
        assert_eq!(list.items[0].metadata.as_ref().unwrap().name.as_deref(), Some("g1"));
    }

    #[actix_web::test]
    async fn api_services_travel_in_protobuf() {
        let s = TestServer::start();
        let c = Client { http: s.client(true), base: s.url("") };
        let local = reg::APIService {
            metadata: Some(meta::ObjectMeta {
                name: Some("v1.local.example.com".into()),
                labels: [("app".to_string(), "pb".to_string())].into(),
                ..Default::default()
            }),
            spec: Some(reg::APIServiceSpec {
                group: Some("local.example.com".into()),
                version: Some("v1".into()),
                insecure_skip_tls_verify: Some(false),
                group_priority_minimum: Some(100),
                version_priority: Some(10),
                ..Default::default()
            }),
            status: Some(Default::default()),
        };
        let body = envelope("apiregistration.k8s.io/v1", "APIService", &local);
        let (code, ct, bytes) = c.call("POST", API_SERVICES, CLIENT_GO_ACCEPT, Some((PB, body))).await;
        assert_eq!((code, ct.as_str()), (201, PB), "{}", String::from_utf8_lossy(&bytes));
        let created = reg::APIService::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
        let rv = created.metadata.unwrap().resource_version.unwrap();
        assert_eq!(created.spec.unwrap().group_priority_minimum, Some(100));

        let (_, j) = c.json("GET", &format!("{API_SERVICES}/v1.local.example.com"), None).await;
        assert_eq!(
            j["spec"],
            json!({"group": "local.example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10})
        );

        let url = format!("{}{API_SERVICES}?watch=1&resourceVersion={rv}&labelSelector=app%3Dpb", c.base);
        let mut resp = c.http.get(&url).insert_header(("Accept", CLIENT_GO_ACCEPT)).send().await.unwrap();
        let (code, _, bytes) = c.call("GET", &format!("{API_SERVICES}?labelSelector=app%3Dpb"), PB, None).await;
        assert_eq!(code, 200);
        let list = reg::APIServiceList::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
        assert_eq!(list.items.len(), 1);
        // A local APIService is available at once: its status, written after the create,
        // reaches the watch (or already had, when the list shows it).
        let available = |s: &reg::APIService| {
            s.status.as_ref().is_some_and(|st| st.conditions.iter().any(|c| c.status.as_deref() == Some("True")))
        };
        if !available(&list.items[0]) {
            let (ty, u) = frames(&mut resp, 1).await.pop().unwrap();
            assert_eq!(ty, "MODIFIED");
            assert!(available(&reg::APIService::decode(u.raw.unwrap().as_slice()).unwrap()));
        }
        let (code, _, bytes) = c.call("DELETE", &format!("{API_SERVICES}/v1.local.example.com"), PB, None).await;
        assert_eq!(code, 200, "{}", String::from_utf8_lossy(&bytes));
        let st = meta::Status::decode(open(&bytes).raw.unwrap().as_slice()).unwrap();
        assert_eq!(st.status.as_deref(), Some("Success"));
    }
}
