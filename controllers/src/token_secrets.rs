//! Legacy ServiceAccount tokens (kube's tokens controller): a Secret of type
//! `kubernetes.io/service-account-token` naming a ServiceAccount in its
//! `kubernetes.io/service-account.name` annotation gets a signed token, the cluster CA and the
//! namespace in its data; one whose ServiceAccount is gone is deleted, and so are an account's
//! token Secrets when the account is deleted.

use std::sync::Arc;

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::encoded::WatchEventType;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{DeleteObject, ListObjects, Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::{DeleteOptions, ListOptions, WriteOptions};
use auth::serviceaccount::TokenIssuer;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::task::AbortHandle;

use super::leader::spawn_stoppable;
use super::{WRITE_TIMEOUT, events, identity};
use stage_handles::Stages;

const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

fn annotation<'a>(object: &'a Value, key: &str) -> &'a str {
    object.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str).unwrap_or_default()
}

fn secret_target(secret: &Value) -> Target {
    let (namespace, name) = (secret.namespace().into(), secret.name().into());
    Target { version: "v1".into(), resource: "secrets".into(), namespace, name, ..Default::default() }
}

/// What the controller needs besides the stages.
pub struct TokenSecrets {
    /// Signs the tokens.
    pub issuer: Arc<TokenIssuer>,
    /// PEM of the CA that signs the serving certificate, stored as `ca.crt`.
    pub root_ca: String,
    /// Reads ServiceAccounts.
    pub objects: Arc<dyn ObjectLookup>,
}

impl TokenSecrets {
    async fn delete(&self, stages: &Stages, secret: &Value) {
        let target = secret_target(secret);
        let delete = DeleteObject { target, user: identity("tokens-controller"), options: DeleteOptions::default() };
        if let Err(e) = stages.delete.ask(delete, Deadline::after(WRITE_TIMEOUT)).await
            && e.reason != apimachinery::Reason::NotFound
        {
            tracing::warn!(secret = secret.name(), "deleting a token Secret: {}", e.message);
        }
    }

    async fn sync(&self, stages: &Stages, secret: Value) {
        let account_name = annotation(&secret, NAME_ANNOTATION);
        let account = match self.objects.get("", "serviceaccounts", secret.namespace(), account_name).await {
            Ok(a) => a,
            Err(e) => return tracing::warn!("reading a token Secret's ServiceAccount: {}", e.message),
        };
        let uid = annotation(&secret, UID_ANNOTATION);
        let Some(account) = account.filter(|a| uid.is_empty() || a.uid() == uid) else {
            return self.delete(stages, &secret).await;
        };
        if secret.pointer("/data/token").is_some() {
            return;
        }
        let token = match self.issuer.issue_legacy(&account, &secret) {
            Ok(t) => t,
            Err(e) => return tracing::warn!("signing a legacy token: {e}"),
        };
        let mut filled = secret.clone();
        let data = filled.as_object_mut().map(|o| o.entry("data").or_insert_with(|| json!({})));
        if let Some(data) = data.and_then(Value::as_object_mut) {
            data.insert("token".into(), STANDARD.encode(token).into());
            data.insert("ca.crt".into(), STANDARD.encode(&self.root_ca).into());
            data.insert("namespace".into(), STANDARD.encode(secret.namespace()).into());
        }
        filled["metadata"]["annotations"][UID_ANNOTATION] = account.uid().into();
        let target = secret_target(&secret);
        let update = UpdateObject {
            target,
            object: filled,
            user: identity("tokens-controller"),
            options: WriteOptions::default(),
        };
        match stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await {
            Ok(_) => {}
            // A conflict means the Secret changed: its next event brings it back here.
            Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::NotFound) => {}
            Err(e) => tracing::warn!(secret = secret.name(), "filling a token Secret: {}", e.message),
        }
    }

    /// Deletes the token Secrets of a deleted ServiceAccount.
    async fn account_deleted(&self, stages: &Stages, catalogue: &Catalogue, account: &Value) {
        let Some(def) = catalogue.find("", "v1", "secrets") else { return };
        let list =
            ListObjects { target: Target::collection(&def, account.namespace()), options: ListOptions::default() };
        let Ok(reads) = stages.reads(&def) else { return };
        let Ok(list) = reads.reader.list(list).await else { return };
        for secret in list.items.iter().map(|s| s.value()) {
            if secret["type"] == TOKEN_TYPE && annotation(&secret, NAME_ANNOTATION) == account.name() {
                self.delete(stages, &secret).await;
            }
        }
    }
}

/// Starts the controller on the current arbiter; the handle stops it (`None`: its kinds are not served).
pub fn spawn(stages: Stages, catalogue: Arc<Catalogue>, controller: TokenSecrets) -> Option<AbortHandle> {
    let (Some(secrets), Some(accounts)) =
        (catalogue.find("", "v1", "secrets"), catalogue.find("", "v1", "serviceaccounts"))
    else {
        return None;
    };
    let mut secret_events = events(&stages, &secrets);
    let mut account_events = events(&stages, &accounts);
    Some(spawn_stoppable(async move {
        loop {
            tokio::select! {
                Some((kind, secret)) = secret_events.recv() => {
                    if kind != WatchEventType::Deleted && secret["type"] == TOKEN_TYPE {
                        controller.sync(&stages, secret).await;
                    }
                }
                Some((kind, account)) = account_events.recv() => {
                    if kind == WatchEventType::Deleted {
                        controller.account_deleted(&stages, &catalogue, &account).await;
                    }
                }
                else => return,
            }
        }
    }))
}
