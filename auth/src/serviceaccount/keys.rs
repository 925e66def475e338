//! The keys ServiceAccount tokens are signed and verified with.
//!
//! `--service-account-signing-key-file` holds the private key tokens are signed with,
//! `--service-account-key-file` (repeatable) the keys tokens are accepted from: public keys,
//! certificates or private keys, several per file. Private keys are read in every form kube's
//! `keyutil` reads: PKCS#8 (`PRIVATE KEY`), PKCS#1 (`RSA PRIVATE KEY`, as kubeadm writes
//! `sa.key`) and SEC1 (`EC PRIVATE KEY`); other blocks (`EC PARAMETERS`, as `openssl ecparam`
//! writes before the key) are passed over, as kube passes them over. With neither flag the server keeps its own
//! ECDSA P-256 key under `<data-dir>/pki`, as it does for TLS, so one binary issues tokens that
//! survive a restart. Each key's id (`kid`) is the base64url SHA-256 of its public key in
//! SubjectPublicKeyInfo DER, as kube computes it; `/openid/v1/jwks` publishes them.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use rcgen::PublicKeyData;
use serde_json::{Value, json};
use x509_parser::prelude::FromDer;
use x509_parser::public_key::PublicKey;
use x509_parser::x509::SubjectPublicKeyInfo;

/// Where the generated signing key lives, under the data dir.
const GENERATED_KEY: &str = "pki/service-account.key";

/// The private key new tokens are signed with.
pub struct SigningKey {
    pub(crate) algorithm: Algorithm,
    pub(crate) kid: String,
    pub(crate) key: EncodingKey,
}

/// A public key tokens are accepted from.
pub struct VerifyingKey {
    pub(crate) algorithm: Algorithm,
    pub(crate) kid: String,
    pub(crate) key: DecodingKey,
    jwk: Value,
}

/// The signing key and the verifying keys.
pub struct KeySet {
    signing: Option<SigningKey>,
    verifying: Vec<VerifyingKey>,
}

/// One PEM block: its label (`PRIVATE KEY`, `PUBLIC KEY`, `CERTIFICATE`) and DER bytes.
struct Block {
    label: String,
    der: Vec<u8>,
}

fn pem_blocks(text: &str, origin: &Path) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines().map(str::trim) {
        if let Some(label) = line.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----")) {
            current = Some((label.to_string(), String::new()));
        } else if line.starts_with("-----END ") {
            let (label, body) = current.take().ok_or_else(|| format!("{}: unbalanced PEM", origin.display()))?;
            let der = STANDARD.decode(body).map_err(|e| format!("{}: {label}: {e}", origin.display()))?;
            blocks.push(Block { label, der });
        } else if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
        }
    }
    if blocks.is_empty() {
        return Err(format!("{}: no PEM-encoded key found", origin.display()));
    }
    Ok(blocks)
}

fn key_id(spki: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, spki))
}

impl VerifyingKey {
    /// The key of a SubjectPublicKeyInfo (RSA, or ECDSA on P-256 / P-384).
    fn from_spki(spki_der: &[u8]) -> Result<Self, String> {
        let (_, spki) = SubjectPublicKeyInfo::from_der(spki_der).map_err(|e| format!("public key: {e}"))?;
        let kid = key_id(spki_der);
        let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
        match spki.parsed().map_err(|e| format!("public key: {e}"))? {
            PublicKey::RSA(rsa) => {
                let strip = |b: &[u8]| b.iter().position(|x| *x != 0).map_or(vec![0], |i| b[i..].to_vec());
                let (n, e) = (b64(&strip(rsa.modulus)), b64(&strip(rsa.exponent)));
                let key = DecodingKey::from_rsa_components(&n, &e).map_err(|e| e.to_string())?;
                let jwk = json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256", "n": n, "e": e});
                Ok(VerifyingKey { algorithm: Algorithm::RS256, kid, key, jwk })
            }
            PublicKey::EC(point) => {
                let curve = spki.algorithm.parameters.as_ref().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string());
                let (algorithm, crv, size) = match curve.as_deref() {
                    Some("1.2.840.10045.3.1.7") => (Algorithm::ES256, "P-256", 32),
                    Some("1.3.132.0.34") => (Algorithm::ES384, "P-384", 48),
                    other => return Err(format!("unsupported elliptic curve {other:?} (P-256 and P-384 are)")),
                };
                let data = point.data();
                if data.len() != 1 + 2 * size || data[0] != 4 {
                    return Err("elliptic curve point is not uncompressed".into());
                }
                let (x, y) = (b64(&data[1..=size]), b64(&data[1 + size..]));
                let key = DecodingKey::from_ec_components(&x, &y).map_err(|e| e.to_string())?;
                let jwk = json!({"use": "sig", "kty": "EC", "kid": kid, "crv": crv, "alg": format!("{algorithm:?}"), "x": x, "y": y});
                Ok(VerifyingKey { algorithm, kid, key, jwk })
            }
            _ => Err("unsupported public key type (RSA and ECDSA are)".into()),
        }
    }
}

/// `rsaEncryption` and `id-ecPublicKey`, the algorithms of a PKCS#8 key's AlgorithmIdentifier.
const RSA_ENCRYPTION: [u64; 7] = [1, 2, 840, 113549, 1, 1, 1];
const EC_PUBLIC_KEY: [u64; 6] = [1, 2, 840, 10045, 2, 1];

/// The PKCS#8 DER of a private key block, or `None` for a block that holds no private key.
/// PKCS#1 and SEC1 keys are wrapped in PKCS#8's PrivateKeyInfo, which the key parsers take;
/// a SEC1 key names its curve in its parameters, which the wrapper repeats.
fn pkcs8(block: &Block, origin: &Path) -> Result<Option<Vec<u8>>, String> {
    let wrap = |algorithm: yasna::models::ObjectIdentifier, parameters: Option<&yasna::models::ObjectIdentifier>| {
        yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next().write_u8(0);
                w.next().write_sequence(|w| {
                    w.next().write_oid(&algorithm);
                    match parameters {
                        Some(curve) => w.next().write_oid(curve),
                        None => w.next().write_null(),
                    }
                });
                w.next().write_bytes(&block.der);
            })
        })
    };
    Ok(match block.label.as_str() {
        "PRIVATE KEY" => Some(block.der.clone()),
        "RSA PRIVATE KEY" => Some(wrap(yasna::models::ObjectIdentifier::from_slice(&RSA_ENCRYPTION), None)),
        "EC PRIVATE KEY" => {
            let curve = sec1_curve(&block.der)
                .map_err(|e| format!("{}: EC PRIVATE KEY: {e}", origin.display()))?
                .ok_or_else(|| format!("{}: EC PRIVATE KEY does not name its curve", origin.display()))?;
            Some(wrap(yasna::models::ObjectIdentifier::from_slice(&EC_PUBLIC_KEY), Some(&curve)))
        }
        _ => None,
    })
}

/// The curve a SEC1 `ECPrivateKey` names in its `[0]` parameters (RFC 5915).
fn sec1_curve(der: &[u8]) -> Result<Option<yasna::models::ObjectIdentifier>, yasna::ASN1Error> {
    yasna::parse_der(der, |r| {
        r.read_sequence(|r| {
            r.next().read_u8()?;
            r.next().read_bytes()?;
            let curve = r.read_optional(|r| r.read_tagged(yasna::Tag::context(0), |r| r.read_oid()))?;
            r.read_optional(|r| r.read_tagged(yasna::Tag::context(1), |r| r.read_bitvec_bytes()))?;
            Ok(curve)
        })
    })
}

/// A PKCS#8 private key as a signing key, with its public half.
fn private_key(der: &[u8], origin: &Path) -> Result<(SigningKey, VerifyingKey), String> {
    let pair = rcgen::KeyPair::try_from(der).map_err(|e| format!("{}: private key: {e}", origin.display()))?;
    let verifying =
        VerifyingKey::from_spki(&pair.subject_public_key_info()).map_err(|e| format!("{}: {e}", origin.display()))?;
    let key = match verifying.algorithm {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(pair.serialize_pem().as_bytes()),
        _ => Ok(EncodingKey::from_ec_der(der)),
    }
    .map_err(|e| format!("{}: private key: {e}", origin.display()))?;
    let signing = SigningKey { algorithm: verifying.algorithm, kid: verifying.kid.clone(), key };
    Ok((signing, verifying))
}

/// The verifying keys of one `--service-account-key-file`.
fn verifying_keys(path: &Path) -> Result<Vec<VerifyingKey>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut keys = Vec::new();
    for block in pem_blocks(&text, path)? {
        let key = match block.label.as_str() {
            "PUBLIC KEY" => VerifyingKey::from_spki(&block.der).map_err(|e| format!("{}: {e}", path.display()))?,
            "CERTIFICATE" => {
                let (_, cert) = x509_parser::parse_x509_certificate(&block.der)
                    .map_err(|e| format!("{}: certificate: {e}", path.display()))?;
                VerifyingKey::from_spki(cert.public_key().raw).map_err(|e| format!("{}: {e}", path.display()))?
            }
            _ => match pkcs8(&block, path)? {
                Some(der) => private_key(&der, path)?.1,
                None => continue,
            },
        };
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(format!("{}: data does not contain any valid RSA or ECDSA public keys", path.display()));
    }
    Ok(keys)
}

fn signing_key(path: &Path) -> Result<(SigningKey, VerifyingKey), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for block in pem_blocks(&text, path)? {
        if let Some(der) = pkcs8(&block, path)? {
            return private_key(&der, path);
        }
    }
    Err(format!("{}: data does not contain a valid RSA or ECDSA private key", path.display()))
}

/// The generated key under `data_dir`, created on first use.
fn generated_key(data_dir: &Path) -> Result<PathBuf, String> {
    let path = data_dir.join(GENERATED_KEY);
    if !path.exists() {
        let pair = rcgen::KeyPair::generate().map_err(|e| format!("generating the service account key: {e}"))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&path, pair.serialize_pem()).map_err(|e| format!("{}: {e}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(path)
}

impl KeySet {
    /// The keys the flags name. With no signing key flag the generated one signs; with no key
    /// files the signing key's public half verifies.
    pub fn load(data_dir: &Path, signing_key_file: Option<&Path>, key_files: &[PathBuf]) -> Result<Self, String> {
        let signing_path = match signing_key_file {
            Some(p) => p.to_path_buf(),
            None if key_files.is_empty() => generated_key(data_dir)?,
            None => return Ok(KeySet { signing: None, verifying: Self::files(key_files)? }),
        };
        let (signing, own) = signing_key(&signing_path)?;
        let verifying = if key_files.is_empty() { vec![own] } else { Self::files(key_files)? };
        Ok(KeySet { signing: Some(signing), verifying })
    }

    fn files(paths: &[PathBuf]) -> Result<Vec<VerifyingKey>, String> {
        let mut keys = Vec::new();
        for p in paths {
            keys.extend(verifying_keys(p)?);
        }
        Ok(keys)
    }

    /// The key new tokens are signed with, if this server issues tokens.
    pub fn signing(&self) -> Option<&SigningKey> {
        self.signing.as_ref()
    }

    /// The keys tokens are accepted from.
    pub fn verifying(&self) -> &[VerifyingKey] {
        &self.verifying
    }

    /// The JSON Web Key Set of `/openid/v1/jwks`.
    pub fn jwks(&self) -> Value {
        json!({"keys": self.verifying.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_is_kept_and_published_with_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let first = KeySet::load(dir.path(), None, &[]).unwrap();
        let again = KeySet::load(dir.path(), None, &[]).unwrap();
        let kid = &first.signing().unwrap().kid;
        assert_eq!(kid, &again.signing().unwrap().kid, "the same key after a restart");
        let jwks = first.jwks();
        assert_eq!(jwks["keys"][0]["kid"], kid.as_str());
        assert_eq!(jwks["keys"][0]["kty"], "EC");
        assert_eq!(jwks["keys"][0]["alg"], "ES256");
        assert_eq!(jwks["keys"][0]["crv"], "P-256");
    }

    #[test]
    fn key_files_may_hold_public_keys_and_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let pair = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["sa".into()]).unwrap().self_signed(&pair).unwrap();
        let other = rcgen::KeyPair::generate().unwrap();
        let file = dir.path().join("keys.pem");
        std::fs::write(&file, format!("{}{}", cert.pem(), other.public_key_pem())).unwrap();
        let keys = KeySet::load(dir.path(), None, &[file]).unwrap();
        assert!(keys.signing().is_none(), "key files alone verify but do not sign");
        assert_eq!(keys.verifying().len(), 2);
        assert_eq!(keys.verifying()[0].kid, key_id(&pair.subject_public_key_info()));
        let bad = dir.path().join("bad.pem");
        std::fs::write(&bad, "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n").unwrap();
        let e = KeySet::load(dir.path(), None, &[bad]).err().unwrap();
        assert!(e.contains("EC PRIVATE KEY: "), "{e}");
        let none = dir.path().join("none.pem");
        std::fs::write(&none, "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n")
            .unwrap();
        let e = KeySet::load(dir.path(), None, std::slice::from_ref(&none)).err().unwrap();
        assert!(e.ends_with("data does not contain any valid RSA or ECDSA public keys"), "{e}");
        let e = KeySet::load(dir.path(), Some(&none), &[]).err().unwrap();
        assert!(e.ends_with("data does not contain a valid RSA or ECDSA private key"), "{e}");
    }

    /// A key file from `auth/testdata` (made with openssl: `genrsa -traditional`, `ecparam
    /// -genkey`, and their `pkcs8 -topk8 -nocrypt` conversions).
    fn testdata(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name)
    }

    #[test]
    fn kubeadm_key_forms_sign_and_verify_as_their_pkcs8_forms_do() {
        let dir = tempfile::tempdir().unwrap();
        for (kubeadm, pkcs8, algorithm) in
            [("rsa-pkcs1.key", "rsa-pkcs8.key", Algorithm::RS256), ("ec-sec1.key", "ec-pkcs8.key", Algorithm::ES256)]
        {
            let as_written = KeySet::load(dir.path(), Some(&testdata(kubeadm)), &[]).unwrap();
            let converted = KeySet::load(dir.path(), Some(&testdata(pkcs8)), &[]).unwrap();
            let signing = as_written.signing().unwrap();
            assert_eq!(signing.algorithm, algorithm, "{kubeadm}");
            assert_eq!(signing.kid, converted.signing().unwrap().kid, "{kubeadm}: the same key as its PKCS#8 form");
            let verifying = KeySet::load(dir.path(), None, &[testdata(kubeadm)]).unwrap();
            assert_eq!(verifying.verifying()[0].kid, signing.kid, "{kubeadm} as a key file");
            // A token the key signs verifies with the key's public half alone.
            let header =
                jsonwebtoken::Header { kid: Some(signing.kid.clone()), ..jsonwebtoken::Header::new(algorithm) };
            let token = jsonwebtoken::encode(&header, &json!({"sub": "x"}), &signing.key).unwrap();
            let mut check = jsonwebtoken::Validation::new(algorithm);
            check.required_spec_claims.clear();
            check.validate_exp = false;
            let key = &verifying.verifying()[0].key;
            assert_eq!(jsonwebtoken::decode::<Value>(&token, key, &check).unwrap().claims["sub"], "x", "{kubeadm}");
        }
        let public = KeySet::load(dir.path(), None, &[testdata("rsa.pub")]).unwrap();
        let pkcs1 = KeySet::load(dir.path(), Some(&testdata("rsa-pkcs1.key")), &[]).unwrap();
        assert_eq!(public.verifying()[0].kid, pkcs1.signing().unwrap().kid, "sa.pub verifies what sa.key signs");
        let p384 = KeySet::load(dir.path(), Some(&testdata("ec384-sec1.key")), &[]).unwrap();
        assert_eq!(p384.signing().unwrap().algorithm, Algorithm::ES384);
    }
}
