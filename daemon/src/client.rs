//! A client for Rust users and `zkpipe client`: connects to a daemon's
//! Unix socket or TCP address, sending a bearer token when given one.

use std::path::PathBuf;

use hyper_util::rt::TokioIo;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint, Uri};
use zkpipe_core::Error;

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

/// Where a daemon listens: `unix:/path`, a path, `host:port` or `http://host:port`.
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
        let hostport = text.strip_prefix("http://").unwrap_or(text);
        if hostport
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
        {
            return Ok(Address::Tcp(format!("http://{hostport}")));
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
    let channel = channel(addr).await?;
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
    Ok(match addr {
        Address::Tcp(uri) => Endpoint::from_shared(uri.clone())
            .map_err(|e| Error::InvalidInput(format!("{uri}: {e}")))?
            .connect()
            .await
            .map_err(|e| Error::Failed(format!("connecting to {uri}: {e}")))?,
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

#[cfg(test)]
mod tests {
    use super::*;

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
