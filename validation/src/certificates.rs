//! CertificateSigningRequest: the request, the signer, usages and the condition rules, with
//! kube 1.30's field paths and messages (kube: `pkg/apis/certificates/validation`).

use base64::Engine;
use serde_json::Value;
use x509_parser::prelude::FromDer;

use super::field::{self, Bad, Path};
use super::{arr, s as text};
use apimachinery::error::Cause;

/// What is wrong with a `spec.request`, as kube's `validateCSR` says it.
struct RequestProblem {
    /// The request bytes as Go prints a `[]byte` (`[]byte{0x2d, 0x2d}`).
    bad_value: String,
    message: String,
}

/// `validateCSR`: a PEM `CERTIFICATE REQUEST` block holding a request whose signature verifies.
fn request_problem(request: &str) -> Option<RequestProblem> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(request).unwrap_or_default();
    let problem = |message: &str| {
        let listed: Vec<String> = bytes.iter().map(|b| format!("{b:#04x}")).collect();
        Some(RequestProblem { bad_value: format!("[]byte{{{}}}", listed.join(", ")), message: message.to_string() })
    };
    let pem = match x509_parser::pem::parse_x509_pem(&bytes) {
        Ok((_, pem)) if pem.label == "CERTIFICATE REQUEST" => pem,
        _ => return problem("PEM block type must be CERTIFICATE REQUEST"),
    };
    let Ok((_, csr)) = x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents) else {
        return problem("x509: malformed certificate request");
    };
    if csr.verify_signature().is_err() {
        return problem("x509: signature verification failure");
    }
    None
}

/// The subject's organizations (the groups a client certificate carries) of a base64 PEM
/// request, or why it cannot be read (kube's `ParseCSR` errors).
pub fn request_organizations(request: &str) -> Result<Vec<String>, String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(request).map_err(|e| e.to_string())?;
    let pem = match x509_parser::pem::parse_x509_pem(&bytes) {
        Ok((_, pem)) if pem.label == "CERTIFICATE REQUEST" => pem,
        _ => return Err("PEM block type must be CERTIFICATE REQUEST".into()),
    };
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
        .map_err(|_| "x509: malformed certificate request".to_string())?;
    let subject = &csr.certification_request_info.subject;
    Ok(subject.iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_string).collect())
}

/// `ValidateCertificateSigningRequestCreate`: a signer and usages.
pub fn certificate_signing_request(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    if arr(spec, "usages").is_empty() {
        out.push(field::required(&sp.child("usages"), ""));
    }
    let signer = text(spec, "signerName");
    if signer.is_empty() {
        out.push(field::required(&sp.child("signerName"), ""));
    } else if signer == "kubernetes.io/legacy-unknown" {
        out.push(field::invalid(
            &sp.child("signerName"),
            Bad::s(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else if !signer.split_once('/').is_some_and(|(d, p)| !d.is_empty() && !p.is_empty()) {
        out.push(field::invalid(
            &sp.child("signerName"),
            Bad::s(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
    }
    if let Some(problem) = request_problem(spec.get("request").and_then(Value::as_str).unwrap_or("")) {
        out.push(field::invalid(&sp.child("request"), Bad::Raw(problem.bad_value), &problem.message));
    }
    if let Some(e) = spec.get("expirationSeconds").and_then(Value::as_i64).filter(|e| *e < 600) {
        out.push(field::invalid(
            &sp.child("expirationSeconds"),
            Bad::Int(e),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    out
}

/// The CSR condition rules: Approved, Denied and Failed are True when present, once each;
/// Approved and Denied exclude each other; none of them may be removed once there.
pub fn certificate_conditions(new: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let path = Path::new("status").child("conditions");
    let conditions = new.pointer("/status/conditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = path.index(i);
        let ty = c["type"].as_str().unwrap_or("");
        let status = c["status"].as_str().unwrap_or("");
        if ty.is_empty() {
            out.push(field::required(&p.child("type"), ""));
        }
        if status.is_empty() {
            out.push(field::required(&p.child("status"), ""));
        }
        if matches!(ty, "Approved" | "Denied" | "Failed") {
            if !status.is_empty() && status != "True" {
                out.push(field::not_supported(&p.child("status"), Bad::s(status), &["True"]));
            }
            if seen.contains(&ty) {
                out.push(field::duplicate(&p.child("type"), Bad::s(ty)));
            } else if (ty == "Denied" && seen.contains(&"Approved")) || (ty == "Approved" && seen.contains(&"Denied")) {
                out.push(field::invalid(
                    &p.child("type"),
                    Bad::s(ty),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
            seen.push(ty);
        }
    }
    let had = |v: &Value, t: &str| {
        v.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| cs.iter().any(|c| c["type"] == t))
    };
    if let Some(old) = old {
        for ty in ["Approved", "Denied", "Failed"] {
            if had(old, ty) && !had(new, ty) {
                out.push(field::forbidden(
                    &path,
                    &format!("updates may not remove a condition of type {}", field::go_quote(ty)),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{request_organizations, request_problem};

    /// `openssl req -new -newkey ec -subj /CN=alice/O=dev`, base64 as in `spec.request`.
    const REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIYU1JR0FBZ0VBTUI0eERqQU1CZ05WQkFNTUJXRnNhV05sTVF3d0NnWURWUVFLREFOa1pYWXdXVEFUQmdjcQpoa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVMxV0Y2K3RYdVoxbFd3YnNMOHBBSTd3RXA4K3ZEd0hPazVDQ051ClhIRElJT1RDQzRtbTRWb05JVWJEZERqdW1GYlZEQk5oeERZTCtxYVBFbXlmYXpNeG9BQXdDZ1lJS29aSXpqMEUKQXdJRFNRQXdSZ0loQU83cjFzZ2oxTUMxQXJuL1Rndmp0L0xYMHpuaWYzQlZpNVNNRDVPVVQycGVBaUVBbFZ0LwpVMExtcENXQXpycG9tSGVZeGZlL0xXQTFmSitQNVVrQ0NET2FZWGs9Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";

    #[test]
    fn requests_are_pem_csrs_with_valid_signatures() {
        assert!(request_problem(REQUEST).is_none());
        let problem = request_problem("aGkK").unwrap();
        assert_eq!(problem.bad_value, "[]byte{0x68, 0x69, 0x0a}");
        assert_eq!(problem.message, "PEM block type must be CERTIFICATE REQUEST");
        // A certificate is not a request.
        use base64::Engine;
        let pem = base64::engine::general_purpose::STANDARD.decode(REQUEST).unwrap();
        let relabelled = String::from_utf8(pem).unwrap().replace("CERTIFICATE REQUEST", "CERTIFICATE");
        let encoded = base64::engine::general_purpose::STANDARD.encode(relabelled);
        assert_eq!(request_problem(&encoded).unwrap().message, "PEM block type must be CERTIFICATE REQUEST");
        // A tampered request fails its signature check.
        let mut der = pem_body(REQUEST);
        let n = der.len();
        der[n - 5] ^= 0x01;
        let tampered = format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            base64::engine::general_purpose::STANDARD.encode(der)
        );
        let problem = request_problem(&base64::engine::general_purpose::STANDARD.encode(tampered)).unwrap();
        assert!(problem.message.starts_with("x509: "), "{}", problem.message);
    }

    fn pem_body(request: &str) -> Vec<u8> {
        use base64::Engine;
        let pem = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(request).unwrap()).unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD.decode(body).unwrap()
    }

    #[test]
    fn a_requests_organizations_are_its_groups() {
        assert_eq!(request_organizations(REQUEST).unwrap(), ["dev"]);
        assert_eq!(
            request_organizations("bm90IGEgcmVxdWVzdA==").unwrap_err(),
            "PEM block type must be CERTIFICATE REQUEST"
        );
    }
}
