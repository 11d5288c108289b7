//! Where the daemon listens: its Unix socket (owner-only, a stale one from
//! a killed daemon replaced, a live one refused) and optional TCP (a bearer
//! token required off loopback, checked on every call).

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use tokio::net::{TcpListener, UnixListener};
use zkpipe_core::Error;

/// Binds the Unix socket at `path`: its folder created owner-only when
/// missing, a stale socket (nothing answers) removed, the socket made
/// owner-only (0600).
///
/// # Errors
/// [`Error::InvalidInput`] when another daemon answers on `path` or `path`
/// is not a socket; [`Error::Failed`] when it cannot be bound.
pub async fn bind_socket(path: &Path) -> Result<UnixListener, Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::Failed(format!("creating {}: {e}", dir.display())))?;
        check_socket_folder(dir, false)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            use std::os::unix::fs::FileTypeExt;
            if !meta.file_type().is_socket() {
                return Err(Error::InvalidInput(format!(
                    "{} exists and is not a socket; not replacing it",
                    path.display()
                )));
            }
            match tokio::net::UnixStream::connect(path).await {
                Ok(_) => {
                    return Err(Error::InvalidInput(format!(
                        "another zkpipe daemon is listening on {}",
                        path.display()
                    )));
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    tracing::warn!(socket = %path.display(), "removing a stale socket left by a daemon that did not shut down");
                    std::fs::remove_file(path).map_err(|e| {
                        Error::Failed(format!("removing stale {}: {e}", path.display()))
                    })?;
                }
                Err(e) => {
                    return Err(Error::Failed(format!(
                        "checking {} for a live daemon: {e}",
                        path.display()
                    )));
                }
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(Error::Failed(format!("{}: {e}", path.display()))),
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| Error::Failed(format!("binding {}: {e}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::Failed(format!("chmod 600 {}: {e}", path.display())))?;
    Ok(listener)
}

/// Refuses a socket's folder that another user controls: one they own
/// (root aside, with `root_ok`: a client may talk to a daemon run by
/// root), or one they may write (they could swap the socket for theirs
/// and receive the requests), as ssh-agent and tmux do.
///
/// # Errors
/// [`Error::InvalidInput`] saying who owns it or who may write it.
pub fn check_socket_folder(dir: &Path, root_ok: bool) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let meta =
        std::fs::metadata(dir).map_err(|e| Error::Failed(format!("{}: {e}", dir.display())))?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    if meta.uid() != me && !(root_ok && meta.uid() == 0) {
        return Err(Error::InvalidInput(format!(
            "the socket folder {} belongs to user {}, not to this user ({me}): \
             another user could swap the socket; use a private folder (daemon.socket)",
            dir.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(Error::InvalidInput(format!(
            "the socket folder {} may be written by other users (mode {:o}): \
             they could swap the socket; make it private (chmod 700) or use another folder",
            dir.display(),
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Binds TCP `addr`, with the token read from `token_file` ("": none).
///
/// # Errors
/// [`Error::InvalidInput`] for a non-loopback address without a token, or
/// a token file that is unreadable, empty, over 4 KiB or not text;
/// [`Error::Failed`] when the address cannot be bound.
pub async fn bind_tcp(
    addr: &str,
    token_file: &str,
) -> Result<(TcpListener, Option<String>), Error> {
    let sock: std::net::SocketAddr = addr.parse().map_err(|_| {
        Error::InvalidInput(format!("`{addr}` is not an address such as 127.0.0.1:9820"))
    })?;
    let token = if token_file.is_empty() {
        None
    } else {
        Some(read_token(Path::new(token_file))?)
    };
    if token.is_none() && !sock.ip().is_loopback() {
        return Err(Error::InvalidInput(format!(
            "listening on {addr} (not loopback) needs daemon.token_file: anyone who can reach it could submit work"
        )));
    }
    let listener = TcpListener::bind(sock)
        .await
        .map_err(|e| Error::Failed(format!("binding {addr}: {e}")))?;
    Ok((listener, token))
}

/// TLS for the TCP listener from the config's PEM files (`None`: none
/// configured), checked now so that a bad file stops the start (see
/// [`tls_files`](crate::tls_files)).
///
/// # Errors
/// [`Error::InvalidInput`] naming the setting and the file that is
/// missing, too large, empty, not PEM, cut short or of the wrong kind, or
/// the certificate and key that do not match.
pub fn server_tls(
    d: &crate::config::DaemonSection,
) -> Result<Option<tonic::transport::ServerTlsConfig>, Error> {
    use crate::tls_files::{check_pair, read_certificates, read_private_key};
    use tonic::transport::{Certificate, Identity, ServerTlsConfig};
    if d.tls_cert.is_empty() {
        return Ok(None);
    }
    let cert = read_certificates("daemon.tls_cert", &d.tls_cert)?;
    let key = read_private_key("daemon.tls_key", &d.tls_key)?;
    check_pair(
        ("daemon.tls_cert", &d.tls_cert, &cert),
        ("daemon.tls_key", &d.tls_key, &key),
    )?;
    let mut tls = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
    if !d.tls_client_ca.is_empty() {
        tls = tls.client_ca_root(Certificate::from_pem(read_certificates(
            "daemon.tls_client_ca",
            &d.tls_client_ca,
        )?));
    }
    // What the checks above do not cover fails here, not at the first client.
    tonic::transport::Server::builder()
        .tls_config(tls.clone())
        .map_err(|e| Error::InvalidInput(format!("daemon TLS files: {e}")))?;
    Ok(Some(tls))
}

/// Whether `headers` carry `authorization: Bearer <token>`.
pub fn bearer_matches(headers: &axum::http::HeaderMap, token: &str) -> bool {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| constant_time_eq(t.as_bytes(), token.as_bytes()))
}

/// A bearer token from a file: one line of printable ASCII, up to 4 KiB.
///
/// # Errors
/// [`Error::InvalidInput`] naming the file and what is wrong.
pub fn read_token(path: &Path) -> Result<String, Error> {
    let bad = |why: String| Error::InvalidInput(format!("token file {}: {why}", path.display()));
    let bytes =
        zkpipe_core::util::fsutil::read_capped(path, 4096).map_err(|e| bad(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(bad("empty".into()));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("not one line of printable ASCII".into()));
    }
    Ok(token.to_string())
}

/// Checks `authorization: Bearer <token>` on every TCP call.
#[derive(Clone, Debug)]
pub struct TokenCheck {
    /// The expected token (`None`: no check).
    pub token: Option<String>,
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let Some(expected) = &self.token else {
            return Ok(req);
        };
        let given = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(t) if constant_time_eq(t.as_bytes(), expected.as_bytes()) => Ok(req),
            Some(_) => Err(tonic::Status::unauthenticated("wrong token")),
            None => Err(tonic::Status::unauthenticated(
                "this daemon wants `authorization: Bearer <token>` (zkpipe client --token-file)",
            )),
        }
    }
}

/// Equality whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_folder_others_may_write_or_own_is_refused() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = rt
            .block_on(bind_socket(&open.join("zkpipe.sock")))
            .unwrap_err();
        assert!(e.to_string().contains("written by other users"), "{e}");
        assert!(!open.join("zkpipe.sock").exists());
        assert!(
            check_socket_folder(&open, true).is_err(),
            "the client refuses it too"
        );
        let private = tmp.path().join("private");
        rt.block_on(bind_socket(&private.join("zkpipe.sock")))
            .unwrap();
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } == 0 {
            // Root can make a folder another user owns, private to them.
            let theirs = tmp.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = rt
                .block_on(bind_socket(&theirs.join("zkpipe.sock")))
                .unwrap_err();
            assert!(e.to_string().contains("belongs to user 65534"), "{e}");
        }
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn bad_token_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "  \n").unwrap();
        assert!(read_token(&p).unwrap_err().to_string().contains("empty"));
        std::fs::write(&p, "a b").unwrap();
        assert!(read_token(&p).is_err());
        std::fs::write(&p, "x".repeat(5000)).unwrap();
        assert!(read_token(&p).is_err());
        std::fs::write(&p, "s3cret\n").unwrap();
        assert_eq!(read_token(&p).unwrap(), "s3cret");
        assert!(read_token(&dir.path().join("missing")).is_err());
    }
}
