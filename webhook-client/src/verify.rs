//! Server certificates checked against a CA bundle as Go's `crypto/x509` checks them.
//!
//! webpki, behind rustls, finds trust only by building a chain, and refuses an end-entity
//! certificate whose basic constraints say CA (`CaUsedAsEndEntity`). Go's
//! `Certificate.Verify` does neither: a leaf that is itself one of the roots is trusted as it
//! is, with no chain, and a leaf's basic constraints are never read. Many webhooks serve
//! exactly such a certificate: `openssl req -x509` marks the self-signed certificate it makes
//! CA:TRUE, and its PEM becomes the `caBundle`. kube-apiserver calls them, so we must too.
//!
//! [`BundleVerifier`] therefore takes two paths. A leaf found byte for byte in the bundle is
//! checked as Go checks it: the validity period, an extended key usage that allows server
//! authentication (when the certificate names any), and the name dialled (or the name the
//! caller verifies instead, a Service's `<name>.<namespace>.svc`); the certificate's own
//! extensions must all be understood, as webpki and Go both require. Any other leaf goes
//! through webpki's chain verification against the same bundle, unchanged. Handshake
//! signatures are checked on both paths, so the peer holds the certificate's key.

use std::sync::Arc;
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::ExtendedKeyUsage;

/// Trusts the certificates of a CA bundle as Go does: a leaf that is one of them as it is,
/// any other leaf by a chain to one of them. See the module documentation.
#[derive(Debug)]
pub(crate) struct BundleVerifier {
    /// The bundle's certificates, compared byte for byte with the leaf a server presents.
    pinned: Vec<CertificateDer<'static>>,
    /// Chain verification against the same bundle, for leaves one of its CAs signed.
    chain: Arc<WebPkiServerVerifier>,
    /// The name the certificate must be valid for instead of the host dialled: a Service's
    /// name when one of its endpoints' addresses is dialled.
    name: Option<ServerName<'static>>,
}

impl BundleVerifier {
    /// A verifier trusting the certificates in `pem`, checking each server certificate for
    /// `name` (or, without one, for the host dialled).
    pub(crate) fn new(
        pem: &[u8],
        name: Option<ServerName<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> Result<BundleVerifier, String> {
        let pinned = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("certificate-authority: {e}"))?;
        if pinned.is_empty() {
            return Err("certificate-authority holds no certificate".into());
        }
        let mut roots = rustls::RootCertStore::empty();
        for cert in &pinned {
            roots.add(cert.clone()).map_err(|e| format!("certificate-authority: {e}"))?;
        }
        let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| format!("certificate-authority: {e}"))?;
        Ok(BundleVerifier { pinned, chain, name })
    }
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let name = self.name.as_ref().unwrap_or(server_name);
        if self.pinned.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            return verify_pinned(end_entity, name, now);
        }
        self.chain.verify_server_cert(end_entity, intermediates, name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

/// A leaf that is itself in the bundle: Go's checks of a leaf, with no chain and no look at
/// its basic constraints.
fn verify_pinned(
    leaf: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<ServerCertVerified, rustls::Error> {
    // webpki's parse refuses a critical extension it does not understand, as Go's does.
    let parsed = ParsedCertificate::try_from(leaf)?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).map_err(|_| CertificateError::BadEncoding)?;
    within_validity(&cert, now)?;
    rustls::client::verify_server_name(&parsed, name)?;
    allows_server_auth(&cert)?;
    Ok(ServerCertVerified::assertion())
}

/// `now` lies within the certificate's validity period, bounds included.
fn within_validity(cert: &X509Certificate<'_>, now: UnixTime) -> Result<(), CertificateError> {
    let at = |seconds: i64| UnixTime::since_unix_epoch(Duration::from_secs(seconds.max(0).unsigned_abs()));
    let validity = cert.validity();
    let (not_before, not_after) = (validity.not_before.timestamp(), validity.not_after.timestamp());
    let time = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    if time < not_before {
        return Err(CertificateError::NotValidYetContext { time: now, not_before: at(not_before) });
    }
    if time > not_after {
        return Err(CertificateError::ExpiredContext { time: now, not_after: at(not_after) });
    }
    Ok(())
}

/// A certificate that names extended key usages must name server authentication (or any);
/// one that names none may serve anything.
fn allows_server_auth(cert: &X509Certificate<'_>) -> Result<(), CertificateError> {
    let usage = cert.extended_key_usage().map_err(|_| CertificateError::BadEncoding)?;
    match usage.map(|ext| ext.value) {
        Some(ExtendedKeyUsage { any: false, server_auth: false, .. }) => Err(CertificateError::InvalidPurpose),
        _ => Ok(()),
    }
}

/// A TLS failure in the words Go's `crypto/tls` and `crypto/x509` use, which kube's errors
/// quote after the URL (`tls: failed to verify certificate: x509: certificate is valid for a,
/// not b`); failures Go words differently or not at all keep rustls's words after `tls: `.
pub(crate) fn go_words(e: &rustls::Error) -> String {
    let x509 = |why: String| format!("tls: failed to verify certificate: x509: {why}");
    let rustls::Error::InvalidCertificate(cert) = e else { return format!("tls: {e}") };
    match cert {
        CertificateError::UnknownIssuer => x509("certificate signed by unknown authority".into()),
        CertificateError::NotValidForNameContext { expected, presented } => x509(hostname_words(expected, presented)),
        CertificateError::ExpiredContext { time, not_after } => x509(format!(
            "certificate has expired or is not yet valid: current time {} is after {}",
            rfc3339(*time),
            rfc3339(*not_after)
        )),
        CertificateError::NotValidYetContext { time, not_before } => x509(format!(
            "certificate has expired or is not yet valid: current time {} is before {}",
            rfc3339(*time),
            rfc3339(*not_before)
        )),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            x509("certificate specifies an incompatible key usage".into())
        }
        CertificateError::UnhandledCriticalExtension => x509("unhandled critical extension".into()),
        CertificateError::Other(other) if is_ca_used_as_end_entity(other) => x509(
            "certificate signed by unknown authority (a CA certificate is trusted as a server's own only when it \
             is itself in the CA bundle)"
                .into(),
        ),
        _ => format!("tls: {e}"),
    }
}

/// webpki's refusal of a CA certificate as a server's, which Go never makes: Go trusts such a
/// certificate when it is in the bundle (see [`BundleVerifier`]), and otherwise does not know
/// who vouches for it.
fn is_ca_used_as_end_entity(other: &rustls::OtherError) -> bool {
    matches!(other.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity))
}

/// Go's `HostnameError`: the certificate's IP addresses when an address was expected, else its
/// DNS names. `presented` holds webpki's renderings (`DnsName("a")`, `IpAddress(1.2.3.4)`).
fn hostname_words(expected: &ServerName<'_>, presented: &[String]) -> String {
    let host = expected.to_str();
    let valid: Vec<String> = match expected {
        ServerName::IpAddress(_) => {
            let ips: Vec<String> = presented
                .iter()
                .filter_map(|p| p.strip_prefix("IpAddress(")?.strip_suffix(')'))
                .map(|ip| ip.parse::<std::net::IpAddr>().map_or_else(|_| ip.to_string(), |ip| ip.to_string()))
                .collect();
            if ips.is_empty() {
                return format!("cannot validate certificate for {host} because it doesn't contain any IP SANs");
            }
            ips
        }
        _ => presented
            .iter()
            .filter_map(|p| Some(p.strip_prefix("DnsName(\"")?.strip_suffix("\")")?.to_string()))
            .collect(),
    };
    if valid.is_empty() {
        return format!("certificate is not valid for any names, but wanted to match {host}");
    }
    format!("certificate is valid for {}, not {host}", valid.join(", "))
}

/// A time as Go's `time.RFC3339` prints it in UTC.
fn rfc3339(t: UnixTime) -> String {
    i64::try_from(t.as_secs())
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| format!("{} (UNIX)", t.as_secs()))
}

#[cfg(test)]
mod tests {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair};

    use super::*;

    /// Now, as the verifier is given it in a handshake.
    fn now() -> UnixTime {
        UnixTime::now()
    }

    fn verifier(bundle: &[&str], name: Option<&str>) -> BundleVerifier {
        let pem = bundle.concat();
        let name = name.map(|n| ServerName::try_from(n.to_string()).unwrap());
        BundleVerifier::new(pem.as_bytes(), name, Arc::new(rustls::crypto::ring::default_provider())).unwrap()
    }

    fn verify(v: &BundleVerifier, leaf: &str, dialled: &str, at: UnixTime) -> Result<(), rustls::Error> {
        let leaf = CertificateDer::from_pem_slice(leaf.as_bytes()).unwrap();
        let dialled = ServerName::try_from(dialled.to_string()).unwrap();
        v.verify_server_cert(&leaf, &[], &dialled, &[], at).map(|_| ())
    }

    /// A self-signed certificate for `names` whose basic constraints say CA:TRUE, as
    /// `openssl req -x509` makes it.
    fn self_signed_ca(names: &[&str]) -> String {
        let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.self_signed(&KeyPair::generate().unwrap()).unwrap().pem()
    }

    fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
    }

    fn leaf_of(issuer: &CertifiedIssuer<'static, KeyPair>, names: &[&str]) -> String {
        let params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.signed_by(&KeyPair::generate().unwrap(), issuer).unwrap().pem()
    }

    fn cert_error(result: Result<(), rustls::Error>) -> CertificateError {
        match result {
            Err(rustls::Error::InvalidCertificate(e)) => e,
            other => panic!("expected a certificate error, got {other:?}"),
        }
    }

    #[test]
    fn a_self_signed_ca_certificate_in_the_bundle_is_trusted_as_its_own_leaf() {
        let cert = self_signed_ca(&["hooks.example.com", "127.0.0.1"]);
        let v = verifier(&[&cert], None);
        assert_eq!(verify(&v, &cert, "hooks.example.com", now()), Ok(()));
        assert_eq!(verify(&v, &cert, "127.0.0.1", now()), Ok(()));
        // webpki alone refuses it: this is the case the pinned path exists for.
        let leaf = CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(leaf.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let alone = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
        let refused =
            alone.verify_server_cert(&leaf, &[], &ServerName::try_from("hooks.example.com").unwrap(), &[], now());
        assert!(format!("{refused:?}").contains("CaUsedAsEndEntity"), "{refused:?}");
    }

    #[test]
    fn a_pinned_certificate_for_another_name_is_refused_naming_both() {
        let cert = self_signed_ca(&["hooks.example.com"]);
        let v = verifier(&[&cert], None);
        let e = cert_error(verify(&v, &cert, "other.example.com", now()));
        assert_eq!(
            e.to_string(),
            "certificate not valid for name \"other.example.com\"; certificate is only valid for \
             DnsName(\"hooks.example.com\")"
        );
        assert!(matches!(
            cert_error(verify(&v, &cert, "10.0.0.1", now())),
            CertificateError::NotValidForNameContext { .. }
        ));
    }

    #[test]
    fn the_name_to_verify_replaces_the_host_dialled() {
        let cert = self_signed_ca(&["hooks.webhooks.svc"]);
        let v = verifier(&[&cert], Some("hooks.webhooks.svc"));
        assert_eq!(verify(&v, &cert, "10.1.2.3", now()), Ok(()), "an endpoint's address, the Service's name");
        let elsewhere = verifier(&[&cert], Some("other.webhooks.svc"));
        assert!(matches!(
            cert_error(verify(&elsewhere, &cert, "hooks.webhooks.svc", now())),
            CertificateError::NotValidForNameContext { .. }
        ));
    }

    #[test]
    fn a_pinned_certificate_outside_its_validity_period_is_refused() {
        let mut params = CertificateParams::new(vec!["hooks.example.com".to_string()]).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        let cert = params.self_signed(&KeyPair::generate().unwrap()).unwrap().pem();
        let v = verifier(&[&cert], None);
        let (jan_2020, jan_2021) = (1_577_836_800, 1_609_459_200);
        let at = |s: u64| UnixTime::since_unix_epoch(Duration::from_secs(s));
        let later = at(jan_2021 + 1);
        assert_eq!(
            cert_error(verify(&v, &cert, "hooks.example.com", later)),
            CertificateError::ExpiredContext { time: later, not_after: at(jan_2021) },
        );
        assert!(matches!(
            cert_error(verify(&v, &cert, "hooks.example.com", now())),
            CertificateError::ExpiredContext { .. }
        ));
        assert_eq!(
            cert_error(verify(&v, &cert, "hooks.example.com", at(jan_2020 - 1))),
            CertificateError::NotValidYetContext { time: at(jan_2020 - 1), not_before: at(jan_2020) },
        );
        assert_eq!(verify(&v, &cert, "hooks.example.com", at(jan_2020)), Ok(()), "bounds included");
        assert_eq!(verify(&v, &cert, "hooks.example.com", at(jan_2021)), Ok(()));
    }

    #[test]
    fn a_pinned_certificate_for_clients_only_is_refused() {
        let mut params = CertificateParams::new(vec!["hooks.example.com".to_string()]).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.self_signed(&KeyPair::generate().unwrap()).unwrap().pem();
        let v = verifier(&[&cert], None);
        assert_eq!(cert_error(verify(&v, &cert, "hooks.example.com", now())), CertificateError::InvalidPurpose);
        params.extended_key_usages.push(ExtendedKeyUsagePurpose::ServerAuth);
        let serving = params.self_signed(&KeyPair::generate().unwrap()).unwrap().pem();
        assert_eq!(verify(&verifier(&[&serving], None), &serving, "hooks.example.com", now()), Ok(()));
    }

    #[test]
    fn a_leaf_signed_by_a_ca_in_the_bundle_is_verified_by_its_chain() {
        let (ours, theirs) = (ca("our CA"), ca("their CA"));
        let v = verifier(&[&ours.pem()], None);
        assert_eq!(verify(&v, &leaf_of(&ours, &["hooks.example.com"]), "hooks.example.com", now()), Ok(()));
        assert!(matches!(
            cert_error(verify(&v, &leaf_of(&ours, &["hooks.example.com"]), "other.example.com", now())),
            CertificateError::NotValidForNameContext { .. }
        ));
        assert_eq!(
            cert_error(verify(&v, &leaf_of(&theirs, &["hooks.example.com"]), "hooks.example.com", now())),
            CertificateError::UnknownIssuer
        );
    }

    #[test]
    fn a_self_signed_certificate_outside_the_bundle_is_not_trusted() {
        let (ours, stranger) = (ca("our CA"), self_signed_ca(&["hooks.example.com"]));
        let v = verifier(&[&ours.pem()], None);
        let refused = verify(&v, &stranger, "hooks.example.com", now()).unwrap_err();
        assert_eq!(
            go_words(&refused),
            "tls: failed to verify certificate: x509: certificate signed by unknown authority (a CA certificate is \
             trusted as a server's own only when it is itself in the CA bundle)"
        );
        // In a bundle of several, it is found among them.
        let both = verifier(&[&ours.pem(), &stranger], None);
        assert_eq!(verify(&both, &stranger, "hooks.example.com", now()), Ok(()));
    }

    #[test]
    fn a_bundle_without_certificates_is_refused() {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let err = BundleVerifier::new(b"not pem", None, provider).unwrap_err();
        assert_eq!(err, "certificate-authority holds no certificate");
    }

    #[test]
    fn failures_are_worded_as_go_words_them() {
        let cert = self_signed_ca(&["hooks.example.com", "hooks.example.org", "192.168.1.2"]);
        let v = verifier(&[&cert], None);
        let words = |dialled: &str, at: UnixTime| go_words(&verify(&v, &cert, dialled, at).unwrap_err());
        assert_eq!(
            words("other.example.com", now()),
            "tls: failed to verify certificate: x509: certificate is valid for hooks.example.com, hooks.example.org, \
             not other.example.com"
        );
        assert_eq!(
            words("10.0.0.1", now()),
            "tls: failed to verify certificate: x509: certificate is valid for 192.168.1.2, not 10.0.0.1"
        );
        let dns_only = self_signed_ca(&["hooks.example.com"]);
        let e = verify(&verifier(&[&dns_only], None), &dns_only, "127.0.0.1", now()).unwrap_err();
        assert_eq!(
            go_words(&e),
            "tls: failed to verify certificate: x509: cannot validate certificate for 127.0.0.1 because it doesn't \
             contain any IP SANs"
        );
        let mut params = CertificateParams::new(vec!["hooks.example.com".to_string()]).unwrap();
        (params.not_before, params.not_after) = (rcgen::date_time_ymd(2020, 1, 1), rcgen::date_time_ymd(2021, 1, 1));
        let expired = params.self_signed(&KeyPair::generate().unwrap()).unwrap().pem();
        let far = UnixTime::since_unix_epoch(Duration::from_secs(4_102_444_800)); // 2100-01-01
        let e = verify(&verifier(&[&expired], None), &expired, "hooks.example.com", far).unwrap_err();
        assert_eq!(
            go_words(&e),
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time \
             2100-01-01T00:00:00Z is after 2021-01-01T00:00:00Z"
        );
        let stranger = ca("their CA");
        let e = verify(&v, &leaf_of(&stranger, &["hooks.example.com"]), "hooks.example.com", now()).unwrap_err();
        assert_eq!(go_words(&e), "tls: failed to verify certificate: x509: certificate signed by unknown authority");
    }
}
