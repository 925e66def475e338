//! Certificates for the servers the tests run beside the apiserver (webhooks, extension API
//! servers) and the clients it presents to them: a CA of the test's own (rcgen) signing
//! serving and client certificates.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate authority made for one test.
pub struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    /// A new CA, named after `purpose` and a counter: a CA of the same name as another's would
    /// be taken for the issuer of the other's certificates (and fail on the signature, not as
    /// unknown).
    pub fn new(purpose: &str) -> TestCa {
        static CAS: AtomicUsize = AtomicUsize::new(0);
        let n = CAS.fetch_add(1, Ordering::Relaxed);
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, format!("{purpose} test CA {n}"));
        TestCa { issuer: rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap() }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// The CA certificate, PEM in base64: a `caBundle`.
    pub fn bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.pem())
    }

    /// A serving configuration with a certificate for `names` (IP addresses or DNS names);
    /// with `client_ca` (PEM), a client certificate is asked for, verified against it, and
    /// optional.
    pub fn server_config(&self, names: &[&str], client_ca: Option<&str>) -> rustls::ServerConfig {
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap()
            .signed_by(&key, &self.issuer)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                    roots.add(c.unwrap()).unwrap();
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .allow_unauthenticated()
                    .build()
                    .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
        };
        builder
            .with_single_cert(
                vec![leaf.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap()
    }

    /// A certificate for `names` good both for serving and as a client, as each process of a
    /// deployment presents to the others: the certificate and the key, PEM.
    pub fn peer_cert(&self, names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.extended_key_usages =
            vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth, rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A client certificate for `common_name`: the certificate and the key, PEM.
    pub fn client_cert(&self, common_name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, common_name);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}
