//! A client for Rust users and `zkpipe client`: connects to a daemon's
//! Unix socket or TCP address, sending a bearer token when given one.

use std::path::{Path, PathBuf};

use hyper_util::rt::TokioIo;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint, Uri};
use zkpipe_core::{Curve, Error};

use zkpipe_session::output::Output;

use crate::proto;
use crate::proto::prover_client::ProverClient;

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone, Debug)]
pub struct Bearer(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// A connected client.
pub type Client = ProverClient<InterceptedService<Channel, Bearer>>;

/// TLS for a client: the CA certificates (PEM) that signed the daemon's
/// certificate, and the client's own certificate and key (PEM) for a
/// daemon that asks for one.
#[derive(Clone, Debug, Default)]
pub struct ClientTls {
    /// CA certificates, PEM.
    pub ca: Vec<u8>,
    /// The client's certificate chain and private key, PEM.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl ClientTls {
    /// Reads and checks the PEM files: the CA certificates, and the
    /// client's certificate and key where given. Each file is named in
    /// errors by its flag (`--tls-ca`, `--tls-cert`, `--tls-key`).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the flag whose file is unusable, or
    /// both when the key is not the certificate's.
    pub fn from_files(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<ClientTls, Error> {
        use crate::tls_files::{check_pair, read_certificates, read_private_key};
        let ca = read_certificates("--tls-ca", &ca.display().to_string())?;
        let identity = match identity {
            Some((c, k)) => {
                let (c, k) = (c.display().to_string(), k.display().to_string());
                let cert = read_certificates("--tls-cert", &c)?;
                let key = read_private_key("--tls-key", &k)?;
                check_pair(("--tls-cert", &c, &cert), ("--tls-key", &k, &key))?;
                Some((cert, key))
            }
            None => None,
        };
        Ok(ClientTls { ca, identity })
    }
}

/// A gRPC status as an error: the request's fault ([`Error::InvalidInput`],
/// exit 2) or the daemon's or the connection's ([`Error::Failed`], exit 1).
pub fn status_error(s: tonic::Status) -> Error {
    use tonic::Code;
    let msg = format!("daemon: {} ({:?})", s.message(), s.code());
    match s.code() {
        Code::InvalidArgument | Code::NotFound | Code::AlreadyExists | Code::OutOfRange => {
            Error::InvalidInput(msg)
        }
        _ => Error::Failed(msg),
    }
}

/// Where a daemon listens: `unix:/path`, a path, `host:port`,
/// `http://host:port` or `https://host:port` (TLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A Unix socket.
    Unix(PathBuf),
    /// TCP.
    Tcp(String),
}

impl Address {
    /// Parses an address (empty: the default socket).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for anything else.
    pub fn parse(text: &str) -> Result<Address, Error> {
        if text.is_empty() {
            return Ok(Address::Unix(crate::config::default_socket_path()));
        }
        if let Some(p) = text.strip_prefix("unix:") {
            return Ok(Address::Unix(PathBuf::from(p)));
        }
        if text.starts_with('/') || text.starts_with('.') {
            return Ok(Address::Unix(PathBuf::from(text)));
        }
        let (scheme, hostport) = match text.strip_prefix("https://") {
            Some(rest) => ("https", rest),
            None => ("http", text.strip_prefix("http://").unwrap_or(text)),
        };
        if hostport
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
        {
            return Ok(Address::Tcp(format!("{scheme}://{hostport}")));
        }
        Err(Error::InvalidInput(format!(
            "`{text}` is not a daemon address: unix:/path/to.sock, /path/to.sock or host:port"
        )))
    }
}

/// Connects to `addr`, sending `token` on every call when given.
///
/// # Errors
/// [`Error::InvalidInput`] for a bad address or token; [`Error::Failed`]
/// when nothing answers there.
pub async fn connect(
    addr: &Address,
    token: Option<&str>,
    max_message_bytes: usize,
) -> Result<Client, Error> {
    connect_tls(addr, token, None, max_message_bytes).await
}

/// [`connect`], over TLS with `tls` (a TCP address then speaks https).
///
/// # Errors
/// As [`connect`]; [`Error::InvalidInput`] for an https address without
/// `tls`, or TLS files that do not parse.
pub async fn connect_tls(
    addr: &Address,
    token: Option<&str>,
    tls: Option<&ClientTls>,
    max_message_bytes: usize,
) -> Result<Client, Error> {
    let channel = channel_tls(addr, tls).await?;
    let bearer = match token {
        None => Bearer(None),
        Some(t) => Bearer(Some(format!("Bearer {t}").parse().map_err(|_| {
            Error::InvalidInput("the token is not printable ASCII".into())
        })?)),
    };
    Ok(ProverClient::with_interceptor(channel, bearer)
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes))
}

/// A gRPC channel to the daemon at `addr` (for any of its services: the
/// cuzk API's clients use it too).
///
/// # Errors
/// [`Error::Failed`] when nothing listens there.
pub async fn channel(addr: &Address) -> Result<Channel, Error> {
    channel_tls(addr, None).await
}

/// [`channel`], over TLS with `tls` for a TCP address.
///
/// # Errors
/// As [`connect_tls`].
pub async fn channel_tls(addr: &Address, tls: Option<&ClientTls>) -> Result<Channel, Error> {
    Ok(match addr {
        Address::Tcp(uri) => {
            let uri = match (tls, uri.strip_prefix("http://")) {
                (Some(_), Some(rest)) => format!("https://{rest}"),
                (None, _) if uri.starts_with("https://") => {
                    return Err(Error::InvalidInput(format!(
                        "{uri} speaks TLS: give the CA that signed its certificate (--tls-ca)"
                    )));
                }
                _ => uri.clone(),
            };
            let mut endpoint = Endpoint::from_shared(uri.clone())
                .map_err(|e| Error::InvalidInput(format!("{uri}: {e}")))?;
            if let Some(t) = tls {
                use tonic::transport::{Certificate, ClientTlsConfig, Identity};
                let mut config =
                    ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&t.ca));
                if let Some((cert, key)) = &t.identity {
                    config = config.identity(Identity::from_pem(cert, key));
                }
                endpoint = endpoint
                    .tls_config(config)
                    .map_err(|e| Error::InvalidInput(format!("TLS files: {e}")))?;
            }
            endpoint
                .connect()
                .await
                .map_err(|e| Error::Failed(format!("connecting to {uri}: {}", chain(&e))))?
        }
        Address::Unix(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::listen::check_socket_folder(dir, true)?;
            }
            let path = path.clone();
            let shown = path.display().to_string();
            // The URI is ignored: every connection goes to the socket.
            Endpoint::try_from("http://[::]:0")
                .map_err(|e| Error::Failed(e.to_string()))?
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(TokioIo::new(stream))
                    }
                }))
                .await
                .map_err(|e| {
                    Error::Failed(format!("connecting to {shown}: {e} ({})", why_not(&shown)))
                })?
        }
    })
}

/// An error with its causes (TLS failures hide under "transport error").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// What stops a connection to the socket at `path`, in words.
fn why_not(path: &str) -> String {
    match std::os::unix::net::UnixStream::connect(path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            "permission denied: the daemon's socket is for its own user only; \
             run the client as that user"
                .into()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "no socket there: is `zkpipe serve` running?".into()
        }
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            "nothing answers: a socket left by a daemon that stopped; is `zkpipe serve` running?"
                .into()
        }
        Err(e) => e.to_string(),
        Ok(_) => "it answers now: try again".into(),
    }
}

/// Runs `work` (a client's calls) to completion on a runtime of its own:
/// for callers that are not async themselves.
///
/// # Errors
/// [`Error::Failed`] when no runtime can start; `work`'s errors.
pub fn block_on<T>(work: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    tokio::runtime::Runtime::new()
        .map_err(|e| Error::Failed(format!("starting the async runtime: {e}")))?
        .block_on(work)
}

/// The largest request a daemon takes (`daemon.max_message_bytes` is at
/// most this), and so the largest a client sends: 1 GiB.
pub const MAX_REQUEST_BYTES: usize = 1 << 30;

/// The largest .wtns file sent (the daemon's message limit applies too).
const MAX_WTNS_BYTES: u64 = MAX_REQUEST_BYTES as u64;

/// A circom job's key and inputs: the zkey named by its SHA-256 (the
/// daemon holds the same file in its circom folder; it is never sent) and
/// each partition's witness (snarkjs .wtns), read here.
///
/// # Errors
/// [`Error::Io`] for a file that cannot be read or a witness over 1 GiB;
/// [`Error::InvalidInput`] for witnesses over [`MAX_REQUEST_BYTES`]
/// together (no daemon takes the request), checked before any is read.
pub fn circom_job(
    zkey: &Path,
    wtns: &[PathBuf],
) -> Result<(proto::KeyId, proto::submit_request::Inputs), Error> {
    let mut total = 0u64;
    for w in wtns {
        total += std::fs::metadata(w)
            .map_err(|source| Error::Io {
                path: w.clone(),
                source,
            })?
            .len();
    }
    if total > MAX_REQUEST_BYTES as u64 {
        return Err(Error::InvalidInput(format!(
            "the {} witnesses total {} MiB: over the {} MiB a daemon takes in one request \
             (daemon.max_message_bytes is at most that); send them as several jobs",
            wtns.len(),
            total >> 20,
            MAX_REQUEST_BYTES >> 20
        )));
    }
    let wtns = wtns
        .iter()
        .map(|w| zkpipe_core::util::fsutil::read_capped(w, MAX_WTNS_BYTES))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok((
        circom_key(zkey)?,
        proto::submit_request::Inputs::Circom(proto::CircomInputs { wtns }),
    ))
}

/// The key of a circom circuit: its zkey named by the file's SHA-256.
///
/// # Errors
/// [`Error::Io`] for a file that cannot be read.
pub fn circom_key(zkey: &Path) -> Result<proto::KeyId, Error> {
    Ok(proto::KeyId {
        circuit: crate::circom_keys::CIRCOM.into(),
        size: crate::circom_keys::sha256_file(zkey)?,
    })
}

/// Writes a finished job's proofs to `proof_out` (192 bytes each for
/// BLS12-381, 256 for BN254, or snarkjs JSON when `snarkjs`) and its public inputs to `public_out` (a
/// JSON array for one partition, an array of those for several).
///
/// # Errors
/// [`Error::InvalidEncoding`] for a proof that does not decode; the
/// outputs' I/O errors.
pub fn save_proofs(
    r: &proto::JobResult,
    proof_out: &Output,
    public_out: &Output,
    snarkjs: bool,
) -> Result<(), Error> {
    let bn254 = match r.curve.as_str() {
        "" => false,
        name => Curve::from_name(name)
            .ok_or_else(|| {
                Error::InvalidEncoding(format!("the daemon names an unknown curve, {name:?}"))
            })?
            .eq(&Curve::Bn254),
    };
    let proofs: Vec<u8> = if snarkjs {
        let json = r
            .proofs
            .iter()
            .map(|p| match bn254 {
                true => zkpipe_core::bn254::groth16::Proof::from_bytes(&p.proof)
                    .map(|p| zkpipe_circom::json_bn254::proof_to_json(&p)),
                false => zkpipe_core::groth16::Proof::from_bytes(&p.proof)
                    .map(|p| zkpipe_circom::json::proof_to_json(&p)),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        zkpipe_session::output::one_or_many(&json).into_bytes()
    } else {
        r.proofs.iter().flat_map(|p| p.proof.clone()).collect()
    };
    let publics: Vec<&Vec<String>> = r.proofs.iter().map(|p| &p.public_inputs).collect();
    let json = zkpipe_session::output::one_or_many(&publics);
    proof_out.write(&proofs)?;
    public_out.write(json.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_of_an_unknown_curve_or_bad_proof_bytes_are_refused_writing_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (proof, public) = (
            dir.path().join("proof.json"),
            dir.path().join("public.json"),
        );
        let out = |p: &Path| Output::File(p.to_path_buf());
        let result = |curve: &str, bytes: Vec<u8>| proto::JobResult {
            curve: curve.into(),
            proofs: vec![proto::PartitionProof {
                proof: bytes,
                public_inputs: vec!["9".into()],
            }],
            ..Default::default()
        };
        for (curve, bytes, needle) in [
            ("BN127", vec![0; 256], "unknown curve"),
            ("BN254", vec![0; 255], "256 bytes"),
            ("BN254", vec![0xff; 256], "not below q"),
            ("BLS12-381", vec![0; 192], ""),
        ] {
            let e = save_proofs(&result(curve, bytes), &out(&proof), &out(&public), true)
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{curve}: {e}");
            assert!(
                !proof.exists() && !public.exists(),
                "{curve}: a file was written"
            );
        }
    }

    #[test]
    fn addresses() {
        assert_eq!(
            Address::parse("unix:/a/b.sock").unwrap(),
            Address::Unix("/a/b.sock".into())
        );
        assert_eq!(
            Address::parse("/a/b.sock").unwrap(),
            Address::Unix("/a/b.sock".into())
        );
        assert_eq!(
            Address::parse("127.0.0.1:9820").unwrap(),
            Address::Tcp("http://127.0.0.1:9820".into())
        );
        assert_eq!(
            Address::parse("http://[::1]:9820").unwrap(),
            Address::Tcp("http://[::1]:9820".into())
        );
        for bad in ["nonsense", "host:", ":80", "host:99999"] {
            assert!(Address::parse(bad).is_err(), "{bad}");
        }
    }
}
