//! Serving certificates and client-certificate trust.
//!
//! With no certificate flags the server keeps its own small PKI under `<data-dir>/pki`: a CA, a
//! serving certificate for the loopback names and addresses, and an admin client certificate
//! (`O=system:masters`) that goes into `admin.kubeconfig`. The files are created once and reused,
//! so a restarted server keeps the identity clients already trust.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

use apimachinery::request::UserInfo;

/// Where the TLS material comes from.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `--tls-cert-file`.
    pub cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`.
    pub key_file: Option<PathBuf>,
    /// `--client-ca-file`.
    pub client_ca_file: Option<PathBuf>,
    /// Extra names or addresses for a generated serving certificate.
    pub extra_sans: Vec<String>,
}

/// What the server needs to serve TLS and write its kubeconfig.
pub struct TlsMaterial {
    /// The rustls configuration of the serving port.
    pub server_config: rustls::ServerConfig,
    /// PEM of the CA clients should trust for the serving certificate, if we generated it.
    pub serving_ca_pem: Option<String>,
    /// PEM certificate and key of the admin client, if we can sign client certificates.
    pub admin_client: Option<(String, String)>,
    /// PEM of the CA client certificates are verified with (published for extension API
    /// servers).
    pub client_ca_pem: String,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

fn write_private(path: &Path, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| io_err(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| io_err(path, e))?;
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| io_err(path, e))
}

/// The generated CA: loaded from `pki/ca.{crt,key}` or created there.
fn load_or_create_ca(pki: &Path) -> Result<(String, Issuer<'static, KeyPair>), String> {
    let (crt_path, key_path) = (pki.join("ca.crt"), pki.join("ca.key"));
    if crt_path.exists() && key_path.exists() {
        let (cert_pem, key_pem) = (read(&crt_path)?, read(&key_path)?);
        let key = KeyPair::from_pem(&key_pem).map_err(|e| io_err(&key_path, e))?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key).map_err(|e| io_err(&crt_path, e))?;
        return Ok((cert_pem, issuer));
    }
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "apiserver-ca");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params.not_after = rcgen::date_time_ymd(2036, 1, 1);
    let key = KeyPair::generate().map_err(|e| e.to_string())?;
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    write_private(&key_path, &key.serialize_pem())?;
    std::fs::write(&crt_path, cert.pem()).map_err(|e| io_err(&crt_path, e))?;
    Ok((cert.pem(), Issuer::new(params, key)))
}

fn issue(
    pki: &Path,
    name: &str,
    issuer: &Issuer<'static, KeyPair>,
    build: impl FnOnce() -> Result<CertificateParams, String>,
) -> Result<(String, String), String> {
    let (crt, key) = (pki.join(format!("{name}.crt")), pki.join(format!("{name}.key")));
    if crt.exists() && key.exists() {
        return Ok((read(&crt)?, read(&key)?));
    }
    let params = build()?;
    let keypair = KeyPair::generate().map_err(|e| e.to_string())?;
    let cert = params.signed_by(&keypair, issuer).map_err(|e| e.to_string())?;
    write_private(&key, &keypair.serialize_pem())?;
    std::fs::write(&crt, cert.pem()).map_err(|e| io_err(&crt, e))?;
    Ok((cert.pem(), keypair.serialize_pem()))
}

fn serving_params(extra: &[String]) -> Result<CertificateParams, String> {
    let mut names: Vec<String> = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend(extra.iter().cloned());
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kube-apiserver");
    params.distinguished_name = dn;
    for n in names {
        let san = match n.parse::<std::net::IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(n.try_into().map_err(|e: rcgen::Error| e.to_string())?),
        };
        params.subject_alt_names.push(san);
    }
    for ip in ["127.0.0.1", "::1", "10.96.0.1"] {
        params.subject_alt_names.push(SanType::IpAddress(ip.parse().expect("literal address")));
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_after = rcgen::date_time_ymd(2035, 1, 1);
    Ok(params)
}

fn admin_params() -> Result<CertificateParams, String> {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kubernetes-admin");
    dn.push(DnType::OrganizationName, "system:masters");
    params.distinguished_name = dn;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.not_after = rcgen::date_time_ymd(2035, 1, 1);
    Ok(params)
}

fn certs_from_pem(pem: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> =
        CertificateDer::pem_slice_iter(pem.as_bytes()).collect::<Result<_, _>>().map_err(|e| format!("{what}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{what}: no certificate found"));
    }
    Ok(certs)
}

/// Loads or generates the TLS material.
pub fn prepare(data_dir: &Path, opts: &TlsOptions) -> Result<TlsMaterial, String> {
    let pki = data_dir.join("pki");
    std::fs::create_dir_all(&pki).map_err(|e| io_err(&pki, e))?;
    let generated_ca =
        if opts.cert_file.is_none() || opts.client_ca_file.is_none() { Some(load_or_create_ca(&pki)?) } else { None };

    let (cert_pem, key_pem, serving_ca_pem) = match (&opts.cert_file, &opts.key_file) {
        (Some(c), Some(k)) => (read(c)?, read(k)?, None),
        (Some(_), None) | (None, Some(_)) => {
            return Err("--tls-cert-file and --tls-private-key-file must be given together".into());
        }
        (None, None) => {
            let (ca_pem, issuer) = generated_ca.as_ref().expect("generated when no cert file");
            let (c, k) = issue(&pki, "apiserver", issuer, || serving_params(&opts.extra_sans))?;
            (c, k, Some(ca_pem.clone()))
        }
    };
    let (client_ca_pem, admin_client) = match &opts.client_ca_file {
        Some(f) => (read(f)?, None),
        None => {
            let (ca_pem, issuer) = generated_ca.as_ref().expect("generated when no client CA");
            (ca_pem.clone(), Some(issue(&pki, "admin", issuer, admin_params)?))
        }
    };

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for c in certs_from_pem(&client_ca_pem, "client CA")? {
        roots.add(c).map_err(|e| format!("client CA: {e}"))?;
    }
    // Client certificates are optional (tokens and anonymous requests are allowed at the TLS
    // layer); when one is presented it must chain to the client CA.
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| format!("client CA: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| format!("serving key: {e}"))?;
    let server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs_from_pem(&cert_pem, "serving certificate")?, key)
        .map_err(|e| format!("serving certificate: {e}"))?;
    Ok(TlsMaterial { server_config, serving_ca_pem, admin_client, client_ca_pem })
}

/// The identity in a verified client certificate: CN is the user, each O a group.
pub fn identity_of(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let groups = subject.iter_organization().filter_map(|o| o.as_str().ok().map(String::from)).collect();
    Some(UserInfo { name, uid: String::new(), groups, ..Default::default() })
}

/// Writes `<data-dir>/admin.kubeconfig` for the admin client certificate.
pub fn write_admin_kubeconfig(path: &Path, server: &str, material: &TlsMaterial) -> Result<(), String> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let Some((cert, key)) = &material.admin_client else {
        return Err("no admin client certificate: --client-ca-file was given, so no kubeconfig is written".into());
    };
    let ca = match &material.serving_ca_pem {
        Some(ca) => format!("    certificate-authority-data: {}\n", b64(ca)),
        None => "    insecure-skip-tls-verify: true\n".to_string(),
    };
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: apiserver\n  cluster:\n    server: {server}\n{ca}\
         users:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n\
         contexts:\n- name: admin@apiserver\n  context:\n    cluster: apiserver\n    user: admin\n    namespace: default\n\
         current-context: admin@apiserver\n",
        b64(cert),
        b64(key)
    );
    write_private(path, &config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_once_and_reuses() {
        let dir = tempfile::tempdir().unwrap();
        let a = prepare(dir.path(), &TlsOptions::default()).unwrap();
        let b = prepare(dir.path(), &TlsOptions::default()).unwrap();
        assert_eq!(a.serving_ca_pem, b.serving_ca_pem);
        assert_eq!(a.admin_client, b.admin_client);
    }

    #[test]
    fn serving_keys_are_read_as_kubeadm_and_openssl_write_them() {
        // PKCS#1 (`RSA PRIVATE KEY`, kubeadm's apiserver.key) and SEC1 behind an `EC PARAMETERS`
        // block (`openssl ecparam -genkey`), with certificates for them; the files are auth's.
        let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../auth/testdata");
        for (cert, key) in [("rsa-pkcs1.crt", "rsa-pkcs1.key"), ("ec-sec1.crt", "ec-sec1.key")] {
            let dir = tempfile::tempdir().unwrap();
            let options = TlsOptions {
                cert_file: Some(testdata.join(cert)),
                key_file: Some(testdata.join(key)),
                ..Default::default()
            };
            let material = prepare(dir.path(), &options).unwrap_or_else(|e| panic!("{key}: {e}"));
            assert!(material.serving_ca_pem.is_none(), "{key}: the given certificate serves");
        }
    }

    #[test]
    fn admin_certificate_names_system_masters() {
        let dir = tempfile::tempdir().unwrap();
        let m = prepare(dir.path(), &TlsOptions::default()).unwrap();
        let (cert, _) = m.admin_client.unwrap();
        let der = CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        let who = identity_of(&der).unwrap();
        assert_eq!(who.name, "kubernetes-admin");
        assert_eq!(who.groups, vec!["system:masters".to_string()]);
    }
}
