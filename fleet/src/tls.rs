//! TLS to PostgreSQL with libpq's `sslmode` meanings, over rustls (ring).
//!
//! tokio-postgres knows `sslmode=disable|prefer|require` only and refuses
//! `verify-ca`, `verify-full`, `sslrootcert`, `sslcert` and `sslkey`; those
//! are taken off the URL here ([`split_url`]) and enforced by the
//! certificate verifier of [`Tls`], tokio-postgres's TLS connector.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::Socket;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

use crate::error::{Error, Result};
use crate::secret::{percent_decode, redact_url};

/// libpq's `sslmode`, less `allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS if the server offers it, else plain; the certificate is checked
    /// only when `sslrootcert` is given.
    Prefer,
    /// TLS; the certificate is checked only when `sslrootcert` is given.
    Require,
    /// TLS, the chain checked against the root certificates.
    VerifyCa,
    /// As `VerifyCa`, and the certificate must name the host.
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }
}

/// The TLS parameters of a queue URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsParams {
    pub mode: SslMode,
    pub root_cert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// Splits `sslmode`, `sslrootcert`, `sslcert` and `sslkey` off `url`'s
/// query: the URL left for tokio-postgres and the parameters. Without
/// `sslmode` the mode is `prefer`, libpq's default.
///
/// # Errors
///
/// [`Error::InvalidUrl`] for an unknown or unsupported `sslmode` (`allow`),
/// a malformed `%` escape in one of these parameters, `sslrootcert=system`,
/// or `sslcert` without `sslkey` (or the reverse).
pub(crate) fn split_url(url: &str) -> Result<(String, TlsParams)> {
    let bad = |why: String| Error::InvalidUrl(format!("{:?}: {why}", redact_url(url)));
    let mut params = TlsParams {
        mode: SslMode::Prefer,
        root_cert: None,
        cert: None,
        key: None,
    };
    // As in redact_url: the password may hold an unencoded `?`, so the
    // query starts after the last `@`.
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let host_from = url[after_scheme..]
        .rfind('@')
        .map_or(after_scheme, |i| after_scheme + i + 1);
    let Some(q) = url[host_from..].find('?') else {
        return Ok((url.to_owned(), params));
    };
    let (base, query) = (&url[..host_from + q], &url[host_from + q + 1..]);
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| bad(format!("malformed % escape in {key:?}")))
        };
        let path = |v: &str| -> Result<PathBuf> {
            Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&decode(v)?)))
        };
        match key {
            "sslmode" => {
                let v = String::from_utf8_lossy(&decode(value)?).into_owned();
                params.mode = match (SslMode::parse(&v), v.as_str()) {
                    (Some(m), _) => m,
                    (None, "allow") => {
                        return Err(bad(
                            "sslmode=allow is not supported; use prefer or disable".into()
                        ));
                    }
                    (None, _) => {
                        return Err(bad(format!(
                            "sslmode={v:?}: expected disable, prefer, require, verify-ca or \
                             verify-full"
                        )));
                    }
                };
            }
            "sslrootcert" => {
                let p = path(value)?;
                if p.as_os_str() == "system" {
                    return Err(bad(
                        "sslrootcert=system is not supported; name a CA file (PEM)".into(),
                    ));
                }
                params.root_cert = Some(p);
            }
            "sslcert" => params.cert = Some(path(value)?),
            "sslkey" => params.key = Some(path(value)?),
            _ => kept.push(pair),
        }
    }
    if params.cert.is_some() != params.key.is_some() {
        return Err(bad("sslcert and sslkey go together".into()));
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, params))
}

/// tokio-postgres's TLS connector for one queue: a rustls client
/// configuration built once from [`TlsParams`] (certificate files are read
/// when the queue is made).
#[derive(Clone)]
pub(crate) struct Tls {
    config: Arc<ClientConfig>,
    mode: SslMode,
    root_cert: Option<PathBuf>,
}

impl std::fmt::Debug for Tls {
    // The client configuration may hold a private key: not shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("root_cert", &self.root_cert)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads the certificate files `params` names and builds the connector.
    /// `verify-ca` and `verify-full` without `sslrootcert` use
    /// `~/.postgresql/root.crt`, as libpq does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] naming the file when a certificate or key
    /// cannot be read or parsed, when a key file is open to group or
    /// others, or when `verify-ca`/`verify-full` has no root certificate.
    pub(crate) fn new(params: &TlsParams) -> Result<Self> {
        let verify = matches!(params.mode, SslMode::VerifyCa | SslMode::VerifyFull);
        let root_cert = match (&params.root_cert, verify) {
            (Some(p), _) => Some(p.clone()),
            (None, true) => {
                let default = std::env::var_os("HOME")
                    .map(|h| Path::new(&h).join(".postgresql/root.crt"))
                    .filter(|p| p.is_file());
                if default.is_none() {
                    return Err(Error::InvalidInput(format!(
                        "sslmode={} needs the CA that signed the server's certificate: \
                         add sslrootcert=/path/to/ca.pem to the queue URL",
                        if params.mode == SslMode::VerifyCa {
                            "verify-ca"
                        } else {
                            "verify-full"
                        }
                    )));
                }
                default
            }
            (None, false) => None,
        };
        let roots = root_cert.as_deref().map(read_roots).transpose()?;
        // ring, not aws-lc-rs: the workspace builds ring already (tonic's
        // `tls-ring`), aws-lc-rs is a C/cmake build. rustls 0.23.48
        // deprecates it for lacking post-quantum key exchange.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = Verifier {
            roots: roots.map(Arc::new),
            check_name: params.mode == SslMode::VerifyFull,
            algs: provider.signature_verification_algorithms,
        };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::InvalidInput(format!("TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier));
        let config = match (&params.cert, &params.key) {
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert)?;
                let key_der = read_key(key)?;
                builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                    Error::InvalidInput(format!(
                        "sslcert {} / sslkey {}: {e}",
                        cert.display(),
                        key.display()
                    ))
                })?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Tls {
            config: Arc::new(config),
            mode: params.mode,
            root_cert,
        })
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let bad =
        |why: String| Error::InvalidInput(format!("certificate file {}: {why}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(certs)
}

fn read_roots(path: &Path) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in read_certs(path)? {
        roots.add(cert).map_err(|e| {
            Error::InvalidInput(format!("root certificate file {}: {e}", path.display()))
        })?;
    }
    Ok(roots)
}

/// As libpq: a key file must not be open to group or others (a root-owned
/// one may be group-readable).
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    use std::os::unix::fs::MetadataExt;
    let bad = |why: String| Error::InvalidInput(format!("key file {}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    let mode = meta.mode() & 0o777;
    let allowed = if meta.uid() == 0 { 0o037 } else { 0o077 };
    if mode & allowed != 0 {
        return Err(bad(format!(
            "group or others may access it (mode {mode:04o}); chmod 600 {}",
            path.display()
        )));
    }
    PrivateKeyDer::from_pem_file(path).map_err(|e| bad(e.to_string()))
}

/// Checks the server's certificate as the mode asks: with roots, the chain
/// (and with `check_name`, the host name); without, nothing (`require`
/// without `sslrootcert` in libpq: encryption, no authentication of the
/// server). The handshake signature is always checked, so the server holds
/// the key of the certificate it sent.
struct Verifier {
    roots: Option<Arc<RootCertStore>>,
    check_name: bool,
    algs: WebPkiSupportedAlgorithms,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("roots", &self.roots.as_ref().map(|r| r.len()))
            .field("check_name", &self.check_name)
            .finish_non_exhaustive()
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algs.all,
            )?;
            if self.check_name {
                rustls::client::verify_server_name(&cert, server_name)?;
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

impl MakeTlsConnect<Socket> for Tls {
    type Stream = Stream;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<Connect> {
        let name = match ServerName::try_from(domain.to_owned()) {
            Ok(name) => name,
            // A Unix socket or `hostaddr` alone gives no name; it matters
            // only to `verify-full`.
            Err(_) if self.mode != SslMode::VerifyFull => {
                ServerName::from(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
            }
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("sslmode=verify-full: host name {domain:?} cannot be checked: {e}"),
                ));
            }
        };
        Ok(Connect {
            connector: tokio_rustls::TlsConnector::from(Arc::clone(&self.config)),
            name,
        })
    }
}

/// One TLS handshake to come.
pub(crate) struct Connect {
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
}

impl TlsConnect<Socket> for Connect {
    type Stream = Stream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream>> + Send>>;

    fn connect(self, socket: Socket) -> Self::Future {
        Box::pin(async move {
            let stream = self.connector.connect(self.name, socket).await?;
            Ok(Stream(Box::new(stream)))
        })
    }
}

/// A TLS connection to the server.
pub(crate) struct Stream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl TlsStream for Stream {
    /// No `tls-server-end-point` binding (it needs the certificate's
    /// signature hash): SCRAM runs without `-PLUS`, as libpq does with
    /// `channel_binding=prefer` when none is offered.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_split_off() {
        let (rest, p) = split_url(
            "postgres://u:p?w@h:5/db?application_name=x&sslmode=verify-full&sslrootcert=/c%20a.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p?w@h:5/db?application_name=x");
        assert_eq!(p.mode, SslMode::VerifyFull);
        assert_eq!(p.root_cert.as_deref(), Some(Path::new("/c a.pem")));
        let (rest, p) = split_url("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(p.mode, SslMode::Require);
        let (rest, p) = split_url("postgres://u@h/db").unwrap();
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(p.mode, SslMode::Prefer);
    }

    #[test]
    fn bad_tls_parameters_are_refused_without_the_password() {
        for url in [
            "postgres://u:hunter2@h/db?sslmode=allow",
            "postgres://u:hunter2@h/db?sslmode=verify",
            "postgres://u:hunter2@h/db?sslrootcert=system",
            "postgres://u:hunter2@h/db?sslcert=/c.pem",
            "postgres://u:hunter2@h/db?sslkey=/k%zz",
        ] {
            let e = split_url(url).unwrap_err();
            assert!(matches!(e, Error::InvalidUrl(_)), "{url}: {e}");
            assert!(!e.to_string().contains("hunter2"), "{url}: {e}");
        }
    }

    #[test]
    fn verify_modes_need_a_root_certificate() {
        let params = TlsParams {
            mode: SslMode::VerifyFull,
            root_cert: Some("/nonexistent/ca.pem".into()),
            cert: None,
            key: None,
        };
        let e = Tls::new(&params).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let params = TlsParams {
            mode: SslMode::Require,
            root_cert: None,
            ..params
        };
        assert!(Tls::new(&params).is_ok());
    }
}
