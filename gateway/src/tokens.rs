//! ServiceAccount tokens at the HTTP boundary: `serviceaccounts/<name>/token` (kube's
//! TokenRequest REST: checks the request, the account and the bound object, then signs), and
//! the issuer's discovery documents (`/.well-known/openid-configuration`, `/openid/v1/jwks`)
//! that let other parties verify the tokens.

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::ApiError;
use apimachinery::messages::{GetObject, Target};
use apimachinery::object::ObjectExt;
use apimachinery::options::{GetOptions, ReadAt};
use apimachinery::validation::field::{Bad, Path, invalid};
use auth::serviceaccount::{Bound, MAX_EXPIRATION_SECONDS, MIN_EXPIRATION, Ref, TokenSpec};
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::negotiate::{Offer, decode_body, input_format, negotiate, respond};

/// kube's default lifetime of a requested token.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

async fn read(ctx: &RequestContext<'_>, resource: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
    let def = ctx.server.catalogue.find("", "v1", resource).ok_or_else(ApiError::resource_not_found)?;
    let get =
        GetObject { target: Target::object(&def, namespace, name), options: GetOptions { read_at: ReadAt::Latest } };
    Ok(ctx.server.stages.reads(&def)?.reader.get(get).await?.value())
}

/// The spec's `boundObjectRef`, checked against the object it names.
async fn bound_object(
    ctx: &RequestContext<'_>,
    namespace: &str,
    account: &str,
    spec: &Value,
) -> Result<Option<Bound>, ApiError> {
    let Some(r) = spec.get("boundObjectRef").filter(|r| !r.is_null()) else { return Ok(None) };
    let field = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    let (kind, api_version, name, uid) = (field("kind"), field("apiVersion"), field("name"), field("uid"));
    let resource = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Pod") => "pods",
        ("v1", "Secret") => "secrets",
        _ => {
            let gvk = if api_version.contains('/') { api_version.clone() } else { format!("/{api_version}") };
            return Err(ApiError::bad_request(format!("cannot bind token to object of type {gvk}, Kind={kind}")));
        }
    };
    let object = read(ctx, resource, namespace, &name).await?;
    let runs_as = object.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or("default");
    if resource == "pods" && runs_as != account {
        return Err(ApiError::bad_request(format!(
            "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
        )));
    }
    if !uid.is_empty() && object.uid() != uid {
        return Err(ApiError::conflict(
            "",
            &kind,
            &name,
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    let r = Ref { name, uid: object.uid().to_string() };
    Ok(Some(if resource == "pods" { Bound::Pod(r) } else { Bound::Secret(r) }))
}

/// `POST .../serviceaccounts/<name>/token`.
pub async fn request(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let review = decode_body(input_format(ctx.header("Content-Type"), true)?, body)?;
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("TokenRequest");
    if kind != "TokenRequest" {
        return Err(ApiError::bad_request(format!(
            "the body of the request was in an unknown format - expected TokenRequest, got {kind}"
        )));
    }
    let account = read(ctx, "serviceaccounts", &target.namespace, &target.name).await?;
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let issuer = &ctx.server.tokens;
    let expiration = spec.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    let path = Path::new("spec").child("expirationSeconds");
    let too = if expiration < MIN_EXPIRATION.as_secs() as i64 {
        Some("may not specify a duration less than 10 minutes")
    } else if expiration > MAX_EXPIRATION_SECONDS {
        Some("may not specify a duration larger than 2^32 seconds")
    } else {
        None
    };
    if let Some(why) = too {
        let cause = invalid(&path, Bad::Int(expiration), why);
        return Err(ApiError::invalid("authentication.k8s.io", "TokenRequest", &target.name, vec![cause]));
    }
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| issuer.api_audiences().to_vec());
    let bound = bound_object(ctx, &target.namespace, &target.name, &spec).await?;
    let lifetime = issuer.lifetime(Duration::from_secs(expiration as u64));
    let token_spec = TokenSpec { audiences: audiences.clone(), expiration: lifetime, bound };
    let now = chrono::Utc::now();
    let mut status = json!({});
    if ctx.query.get("dryRun") != Some("All") {
        let (token, exp) = issuer.issue(&account, &token_spec, now.timestamp()).map_err(ApiError::internal)?;
        let expires = chrono::DateTime::from_timestamp(exp, 0).unwrap_or(now);
        status =
            json!({"token": token, "expirationTimestamp": expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)});
    }
    let mut out_spec = spec.clone();
    out_spec["audiences"] = json!(audiences);
    out_spec["expirationSeconds"] = json!(lifetime.as_secs());
    if out_spec.get("boundObjectRef").is_none() {
        out_spec["boundObjectRef"] = Value::Null;
    }
    let answer = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": target.name,
            "namespace": target.namespace,
            "creationTimestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
        "spec": out_spec,
        "status": status,
    });
    let output = negotiate(ctx.header("Accept"), Offer::writes(def))?;
    Ok(respond(StatusCode::CREATED, output, &answer, ctx.pretty()))
}

/// `/.well-known/openid-configuration`.
pub fn openid_configuration(ctx: &RequestContext<'_>) -> HttpResponse {
    // kube publishes the keys at the server's own address unless told otherwise.
    let own = format!("https://{}/openid/v1/jwks", ctx.server.address);
    let uri = ctx.server.options.service_account_jwks_uri.as_deref().unwrap_or(&own);
    let doc = ctx.server.tokens.openid_configuration(uri);
    HttpResponse::Ok().content_type("application/json").body(doc.to_string())
}

/// `/openid/v1/jwks`.
pub fn jwks(ctx: &RequestContext<'_>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/jwk-set+json").body(ctx.server.tokens.jwks().to_string())
}
