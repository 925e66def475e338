//! kube's certificate plugins, over CertificateSigningRequests:
//! - `CertificateApproval`: approving or denying (the `/approval` subresource) needs the
//!   `approve` verb on the request's signer;
//! - `CertificateSigning`: issuing a certificate or changing conditions through `/status`
//!   needs the `sign` verb on the signer;
//! - `CertificateSubjectRestriction`: no request for the `kube-apiserver-client` signer may
//!   ask for the `system:masters` group.
//!
//! A signer permission is `<verb>` on `signers.certificates.k8s.io` named after the signer, or
//! after its domain with `/*` (`example.com/*`), asked of the server's authorizers.

use std::sync::Arc;

use apimachinery::catalogue::Subresource;
use apimachinery::error::ApiError;
use apimachinery::lookup::AccessCheck;
use apimachinery::messages::{Admit, Operation};
use apimachinery::request::RequestInfo;
use async_trait::async_trait;
use serde_json::Value;
use validation::certificates::request_organizations;

use crate::attributes::forbidden;
use crate::{AdmissionPlugin, Review};

const GROUP: &str = "certificates.k8s.io";
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

fn signer_of(csr: &Value) -> &str {
    csr.pointer("/spec/signerName").and_then(Value::as_str).unwrap_or("")
}

fn is_csr(request: &Admit, subresource: Option<Subresource>) -> bool {
    let t = &request.target;
    t.group == GROUP && t.resource == "certificatesigningrequests" && t.subresource == subresource
}

/// Whether the writer may `verb` for `signer`, by its name or by its domain's wildcard.
async fn may(access: &dyn AccessCheck, request: &Admit, verb: &str, signer: &str) -> Result<bool, ApiError> {
    let domain = signer.split('/').next().unwrap_or("");
    for name in [signer.to_string(), format!("{domain}/*")] {
        let attributes = RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            api_group: GROUP.into(),
            api_version: "*".into(),
            resource: "signers".into(),
            name,
            ..Default::default()
        };
        if access.allowed(&request.user, attributes).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Approval needs `approve` on the signer.
pub struct CertificateApproval {
    access: Arc<dyn AccessCheck>,
}

impl CertificateApproval {
    /// The plugin asking `access`.
    pub fn new(access: Arc<dyn AccessCheck>) -> Self {
        CertificateApproval { access }
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for CertificateApproval {
    fn name(&self) -> &'static str {
        "CertificateApproval"
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, request: &Admit, csr: &Value, _: &mut Review) -> Result<(), ApiError> {
        if request.operation != Operation::Update || !is_csr(request, Some(Subresource::Approval)) {
            return Ok(());
        }
        let signer = signer_of(csr);
        if may(self.access.as_ref(), request, "approve", signer).await? {
            return Ok(());
        }
        Err(forbidden(request, csr, &format!("user not permitted to approve requests with signerName {signer:?}")))
    }
}

/// Issuing through `/status` needs `sign` on the signer.
pub struct CertificateSigning {
    access: Arc<dyn AccessCheck>,
}

impl CertificateSigning {
    /// The plugin asking `access`.
    pub fn new(access: Arc<dyn AccessCheck>) -> Self {
        CertificateSigning { access }
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for CertificateSigning {
    fn name(&self) -> &'static str {
        "CertificateSigning"
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, request: &Admit, csr: &Value, _: &mut Review) -> Result<(), ApiError> {
        if request.operation != Operation::Update || !is_csr(request, Some(Subresource::Status)) {
            return Ok(());
        }
        let Some(old) = request.old_object.as_deref() else { return Ok(()) };
        let part = |o: &Value, p: &str| o.pointer(p).cloned().unwrap_or(Value::Null);
        let unchanged = ["/status/certificate", "/status/conditions"].iter().all(|p| part(old, p) == part(csr, p));
        if unchanged {
            return Ok(());
        }
        let signer = signer_of(old);
        if may(self.access.as_ref(), request, "sign", signer).await? {
            return Ok(());
        }
        Err(forbidden(request, csr, &format!("user not permitted to sign requests with signerName {signer:?}")))
    }
}

/// Refuses `system:masters` requests for the API server's client signer.
pub struct CertificateSubjectRestriction;

#[async_trait(?Send)]
impl AdmissionPlugin for CertificateSubjectRestriction {
    fn name(&self) -> &'static str {
        "CertificateSubjectRestriction"
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, request: &Admit, csr: &Value, _: &mut Review) -> Result<(), ApiError> {
        if request.operation != Operation::Create || !is_csr(request, None) || signer_of(csr) != CLIENT_SIGNER {
            return Ok(());
        }
        let pem = csr.pointer("/spec/request").and_then(Value::as_str).unwrap_or("");
        let organizations =
            request_organizations(pem).map_err(|e| forbidden(request, csr, &format!("failed to parse CSR: {e}")))?;
        if organizations.iter().any(|o| o == "system:masters") {
            let why = format!("use of {CLIENT_SIGNER} signer with system:masters group is not allowed");
            return Err(forbidden(request, csr, &why));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::admit;
    use apimachinery::request::UserInfo;
    use serde_json::json;
    use std::sync::Mutex;

    /// Allows the signer names it holds, and remembers what it was asked.
    #[derive(Default)]
    struct Grants {
        allowed: Vec<String>,
        asked: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl AccessCheck for Grants {
        async fn allowed(&self, _: &UserInfo, a: RequestInfo) -> Result<bool, ApiError> {
            let said = format!("{} {}/{}", a.verb, a.resource, a.name);
            self.asked.lock().unwrap().push(said.clone());
            Ok(self.allowed.contains(&said))
        }
    }

    fn csr(signer: &str) -> Value {
        json!({"metadata": {"name": "r"}, "spec": {"signerName": signer}})
    }

    fn approval(signer: &str) -> Admit {
        let mut request = admit(Operation::Update, GROUP, "certificatesigningrequests", csr(signer));
        request.target.subresource = Some(Subresource::Approval);
        request
    }

    #[tokio::test]
    async fn approving_needs_approve_on_the_signer_or_its_domain() {
        let grants = Arc::new(Grants { allowed: vec!["approve signers/example.com/*".into()], ..Default::default() });
        let plugin = CertificateApproval::new(grants.clone());
        let ok = approval("example.com/serving");
        plugin.validate(&ok, &ok.object, &mut Review::default()).await.expect("the domain's wildcard");
        assert_eq!(
            *grants.asked.lock().unwrap(),
            ["approve signers/example.com/serving", "approve signers/example.com/*"]
        );
        let no = approval("other.io/x");
        let e = plugin.validate(&no, &no.object, &mut Review::default()).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "certificatesigningrequests.certificates.k8s.io \"r\" is forbidden: user not permitted to approve requests with signerName \"other.io/x\""
        );
    }

    #[tokio::test]
    async fn signing_is_checked_only_when_the_certificate_or_conditions_change() {
        let plugin = CertificateSigning::new(Arc::new(Grants::default()));
        let mut request = admit(Operation::Update, GROUP, "certificatesigningrequests", csr("example.com/s"));
        request.target.subresource = Some(Subresource::Status);
        request.old_object = Some(csr("example.com/s").into());
        let same = request.object.clone();
        plugin.validate(&request, &same, &mut Review::default()).await.expect("nothing issued");
        let mut issued = same.clone();
        issued["status"] = json!({"certificate": "Y2VydA=="});
        let e = plugin.validate(&request, &issued, &mut Review::default()).await.unwrap_err();
        assert!(
            e.message.ends_with("user not permitted to sign requests with signerName \"example.com/s\""),
            "{}",
            e.message
        );
    }

    #[tokio::test]
    async fn an_unparsable_client_request_is_refused() {
        let mut object = csr(CLIENT_SIGNER);
        object["spec"]["request"] = json!("bm90IGEgcmVxdWVzdA==");
        let request = admit(Operation::Create, GROUP, "certificatesigningrequests", object.clone());
        let e = CertificateSubjectRestriction.validate(&request, &object, &mut Review::default()).await.unwrap_err();
        assert!(e.message.contains("is forbidden: failed to parse CSR: "), "{}", e.message);
        let other = csr("example.com/s");
        let request = admit(Operation::Create, GROUP, "certificatesigningrequests", other.clone());
        CertificateSubjectRestriction
            .validate(&request, &other, &mut Review::default())
            .await
            .expect("other signers are not looked at");
    }
}
