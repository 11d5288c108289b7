//! PEM files for TLS — the daemon's `daemon.tls_cert`, `daemon.tls_key`
//! and `daemon.tls_client_ca`, the client's `--tls-ca`, `--tls-cert` and
//! `--tls-key` — read and checked when they are named: an empty, cut
//! short or garbled file, a key where a certificate belongs (or the
//! reverse) and a certificate whose key is another's are refused at start
//! with the setting and the file, not at the first handshake.

use std::path::Path;

use rustls::pki_types::pem::{self, PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ParsedCertificate;
use rustls::sign::CertifiedKey;
use zkpipe_core::Error;

/// Largest PEM file read: a long chain or CA bundle is far below it.
const MAX_PEM_BYTES: u64 = 1 << 20;

fn bad(setting: &str, path: &str, why: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("{setting}: {path}: {why}"))
}

/// ring, as tonic's `tls-ring` uses. rustls 0.23.48 deprecates its
/// default provider for lacking post-quantum key exchange; only keys are
/// loaded with it here.
#[allow(deprecated)]
fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// What a PEM block holds, in words.
fn kind_name(kind: SectionKind) -> &'static str {
    match kind {
        SectionKind::Certificate => "a certificate",
        SectionKind::PublicKey => "a public key",
        SectionKind::RsaPrivateKey | SectionKind::PrivateKey | SectionKind::EcPrivateKey => {
            "a private key"
        }
        SectionKind::Crl => "a certificate revocation list",
        SectionKind::Csr => "a certificate request",
        _ => "another kind of block",
    }
}

fn is_private_key(kind: SectionKind) -> bool {
    matches!(
        kind,
        SectionKind::RsaPrivateKey | SectionKind::PrivateKey | SectionKind::EcPrivateKey
    )
}

/// A PEM block: its kind and its DER.
type Block = (SectionKind, Vec<u8>);

/// The file's bytes and its PEM blocks, every block decoded: a block cut
/// short or not base64 is refused here.
fn read_blocks(setting: &str, path: &str) -> Result<(Vec<u8>, Vec<Block>), Error> {
    let bytes = zkpipe_core::util::fsutil::read_capped(Path::new(path), MAX_PEM_BYTES)
        .map_err(|e| Error::InvalidInput(format!("{setting}: {e}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(bad(setting, path, "the file is empty"));
    }
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(bad(setting, path, "not PEM (no -----BEGIN line)"));
    }
    let blocks = Block::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            bad(
                setting,
                path,
                match e {
                    pem::Error::MissingSectionEnd { .. } => {
                        "cut short: a PEM block has no -----END line".to_string()
                    }
                    pem::Error::IllegalSectionStart { .. } => {
                        "a malformed -----BEGIN line".to_string()
                    }
                    pem::Error::Base64Decode(e) => format!("a PEM block is not base64 ({e})"),
                    e => format!("not readable as PEM ({e})"),
                },
            )
        })?;
    Ok((bytes, blocks))
}

/// Says what a file holds instead of what was asked for.
fn holds_instead(blocks: &[Block]) -> String {
    match blocks.first() {
        None => "no PEM block this program knows".into(),
        Some((kind, _)) => format!("{} instead", kind_name(*kind)),
    }
}

/// The certificates of a PEM file named by `setting` (a chain, the
/// daemon's or the client's own certificate first; or CA certificates),
/// each parsed as X.509. Returns the file's bytes.
///
/// # Errors
/// [`Error::InvalidInput`] naming `setting` and the file: unreadable,
/// over 1 MiB, empty, not PEM, cut short, holding no certificate (a key
/// instead, say) or a certificate that does not parse.
pub fn read_certificates(setting: &str, path: &str) -> Result<Vec<u8>, Error> {
    let (bytes, blocks) = read_blocks(setting, path)?;
    let certs: Vec<CertificateDer<'static>> = blocks
        .iter()
        .filter(|(k, _)| *k == SectionKind::Certificate)
        .map(|(_, der)| CertificateDer::from(der.clone()))
        .collect();
    if certs.is_empty() {
        return Err(bad(
            setting,
            path,
            format!(
                "no certificate (-----BEGIN CERTIFICATE-----) in it: it holds {}",
                holds_instead(&blocks)
            ),
        ));
    }
    for (i, der) in certs.iter().enumerate() {
        ParsedCertificate::try_from(der).map_err(|e| {
            bad(
                setting,
                path,
                format!(
                    "certificate {} of {} is not valid X.509: {e}",
                    i + 1,
                    certs.len()
                ),
            )
        })?;
    }
    Ok(bytes)
}

/// The private key of a PEM file named by `setting` (PKCS#8, PKCS#1 or
/// SEC1), loaded to check it is one rustls can sign with. Returns the
/// file's bytes.
///
/// # Errors
/// [`Error::InvalidInput`] naming `setting` and the file: unreadable,
/// over 1 MiB, empty, not PEM, cut short, holding no private key (a
/// certificate instead, say) or a key that does not load.
pub fn read_private_key(setting: &str, path: &str) -> Result<Vec<u8>, Error> {
    let (bytes, blocks) = read_blocks(setting, path)?;
    if !blocks.iter().any(|(k, _)| is_private_key(*k)) {
        return Err(bad(
            setting,
            path,
            format!(
                "no private key (-----BEGIN PRIVATE KEY-----) in it: it holds {}",
                holds_instead(&blocks)
            ),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| bad(setting, path, e))?;
    provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| bad(setting, path, format!("the private key does not load: {e}")))?;
    Ok(bytes)
}

/// Checks that the key is the one of the certificate chain's first
/// certificate (their public keys are compared, as rustls does when it
/// builds a configuration). Both were read by [`read_certificates`] and
/// [`read_private_key`].
///
/// # Errors
/// [`Error::InvalidInput`] naming both settings and files when they do not
/// match.
pub fn check_pair(
    (cert_setting, cert_path, cert_pem): (&str, &str, &[u8]),
    (key_setting, key_path, key_pem): (&str, &str, &[u8]),
) -> Result<(), Error> {
    let both = |why: String| {
        Error::InvalidInput(format!(
            "{cert_setting} {cert_path} and {key_setting} {key_path}: {why}"
        ))
    };
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(cert_setting, cert_path, e))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad(key_setting, key_path, e))?;
    match CertifiedKey::from_der(chain, key, &provider()) {
        Ok(_) => Ok(()),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => Err(both(
            "the private key is not the certificate's (their public keys differ)".into(),
        )),
        Err(e) => Err(both(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cut_short_or_of_the_wrong_kind_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p.to_str().unwrap().to_string()
        };
        let cut = file("cut.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n");
        let e = read_certificates("daemon.tls_cert", &cut).unwrap_err();
        assert!(e.to_string().contains("cut short"), "{e}");
        assert!(e.to_string().contains("daemon.tls_cert: "), "{e}");
        let key = file(
            "key.pem",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        );
        let e = read_certificates("--tls-ca", &key).unwrap_err();
        assert!(e.to_string().contains("a private key instead"), "{e}");
        let e = read_private_key("--tls-key", &key).unwrap_err();
        assert!(e.to_string().contains("does not load"), "{e}");
        let blank = file("blank.pem", " \n");
        let e = read_private_key("daemon.tls_key", &blank).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }
}
