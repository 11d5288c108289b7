//! The database password: kept out of messages, and taken from outside the
//! URL (a file or `$PGPASSWORD`) so that it need not be on a command line.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// What replaces a password in anything shown.
const HIDDEN: &str = "***";

/// The largest password file read.
pub const MAX_PASSWORD_FILE: u64 = 4096;

/// `url` with its password replaced by `***`, for messages, logs and
/// printed configurations: `postgres://user:***@host/db?…`.
///
/// The password is taken to run from the first `:` after `//` to the last
/// `@`, so that a `/`, `?` or `@` left unencoded in it is hidden too (a
/// query value holding an `@` may then hide more than the password; never
/// less). A `password=` query parameter is hidden as well. Text without
/// `://` is treated as `key=value` words, and a `password=` word is hidden.
#[must_use]
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return redact_words(url);
    };
    let (userinfo, host_on) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let mut out = format!("{scheme}://");
    if let Some(userinfo) = userinfo {
        match userinfo.split_once(':') {
            Some((user, _)) => {
                out.push_str(user);
                out.push(':');
                out.push_str(HIDDEN);
            }
            None => out.push_str(userinfo),
        }
        out.push('@');
    }
    match host_on.split_once('?') {
        Some((host, query)) => {
            out.push_str(host);
            out.push('?');
            out.push_str(&redact_query(query));
        }
        None => out.push_str(host_on),
    }
    out
}

/// `text` with the password of every `postgres://` or `postgresql://` URL
/// in it replaced: for messages that quote a configuration file. A URL
/// right after a quote runs to the same quote or the end of the line (a
/// password may hold spaces), any other to the next whitespace.
#[must_use]
pub fn redact_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = ["postgres://", "postgresql://"]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()
    {
        let before = &rest[..at];
        out.push_str(before);
        let url = &rest[at..];
        let end = match before.chars().next_back() {
            Some(q @ ('"' | '\'' | '`')) => url.find([q, '\n']),
            _ => url.find(char::is_whitespace),
        }
        .unwrap_or(url.len());
        out.push_str(&redact_url(&url[..end]));
        rest = &url[end..];
    }
    out.push_str(rest);
    out
}

/// `a=1&password=x` → `a=1&password=***`; the key is compared decoded, as
/// the connection parses it.
fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_password_key(key) => format!("{key}={HIDDEN}"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `host=h password=x` → `host=h password=***`.
fn redact_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("password") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let after_key = &from["password".len()..];
        let trimmed = after_key.trim_start();
        match trimmed.strip_prefix('=') {
            Some(value) => {
                out.push_str("password=");
                out.push_str(HIDDEN);
                let value = value.trim_start();
                let end = if let Some(quoted) = value.strip_prefix('\'') {
                    // A quoted value runs to the next unescaped quote.
                    let mut end = value.len();
                    let mut escaped = false;
                    for (i, c) in quoted.char_indices() {
                        match c {
                            '\\' if !escaped => escaped = true,
                            '\'' if !escaped => {
                                end = i + 2;
                                break;
                            }
                            _ => escaped = false,
                        }
                    }
                    end
                } else {
                    value.find(char::is_whitespace).unwrap_or(value.len())
                };
                rest = &value[end..];
            }
            None => {
                out.push_str("password");
                rest = after_key;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_password_key(key: &str) -> bool {
    percent_decode(key).as_deref() == Some(b"password".as_slice())
}

/// `%XX` escapes decoded; `None` for a malformed escape.
pub(crate) fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Reads a password file: a regular file (a symbolic link to one is
/// followed) of at most 4 KiB that only its owner may read or write, whose
/// one line is the password (a final line break is not part of it). As
/// libpq does for `~/.pgpass`, a file that its group or others may access
/// is refused: the password would not be secret.
///
/// # Errors
///
/// [`Error::InvalidInput`] naming the file and the reason: it cannot be
/// opened, is not a regular file, is open to group or others, is over
/// 4 KiB, is empty, holds more than one line or a NUL byte.
pub fn read_password_file(path: &Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let bad = |why: String| Error::InvalidInput(format!("password file {}: {why}", path.display()));
    // Non-blocking, so that a FIFO named by mistake is refused, not waited on.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| bad(e.to_string()))?;
    // The opened file's own metadata: what is checked is what is read.
    let meta = file.metadata().map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(bad(format!(
            "group or others may access it (mode {mode:04o}); allow its owner only \
             (chmod 600 {})",
            path.display()
        )));
    }
    if meta.len() > MAX_PASSWORD_FILE {
        return Err(bad(format!(
            "{} bytes; a password file holds at most {MAX_PASSWORD_FILE}",
            meta.len()
        )));
    }
    let mut data = Vec::new();
    (&mut file)
        .take(MAX_PASSWORD_FILE + 1)
        .read_to_end(&mut data)
        .map_err(|e| bad(e.to_string()))?;
    if data.len() as u64 > MAX_PASSWORD_FILE {
        return Err(bad(format!(
            "over {MAX_PASSWORD_FILE} bytes; a password file holds at most that"
        )));
    }
    let line = data
        .strip_suffix(b"\r\n")
        .or_else(|| data.strip_suffix(b"\n"))
        .unwrap_or(&data);
    if line.contains(&b'\n') || line.contains(&b'\r') {
        return Err(bad(
            "more than one line; it must hold the password alone on one line".into(),
        ));
    }
    if line.is_empty() {
        return Err(bad("empty".into()));
    }
    if line.contains(&0) {
        return Err(bad("holds a NUL byte, which a password cannot".into()));
    }
    Ok(line.to_vec())
}

/// Where the connection's password comes from, given what the URL holds:
/// the URL's own wins; else the file; else `env` (`$PGPASSWORD`). An empty
/// password counts as none, as in libpq.
///
/// # Errors
///
/// [`Error::InvalidInput`] for a password both in the URL and in a file
/// (which one was meant is unclear), and as [`read_password_file`].
pub(crate) fn password_for(
    url_has_password: bool,
    file: Option<&Path>,
    env: Option<&[u8]>,
) -> Result<Option<Vec<u8>>> {
    match file {
        Some(_) if url_has_password => Err(Error::InvalidInput(
            "the queue URL holds a password and a password file is given too; give only one".into(),
        )),
        Some(f) => read_password_file(f).map(Some),
        None if url_has_password => Ok(None),
        None => Ok(env.filter(|p| !p.is_empty()).map(<[u8]>::to_vec)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn passwords_are_hidden_in_urls_however_odd() {
        let cases = [
            ("postgres://u:secret@h:5/db", "postgres://u:***@h:5/db"),
            ("postgres://h/db", "postgres://h/db"),
            (
                "postgres://u@h/db?sslmode=disable",
                "postgres://u@h/db?sslmode=disable",
            ),
            (
                "postgres://u:secret@h/db?sslmode=disable&x=1",
                "postgres://u:***@h/db?sslmode=disable&x=1",
            ),
            (
                "postgres://u:se/cr?et@h/db?a=b",
                "postgres://u:***@h/db?a=b",
            ),
            ("postgres://u:se@cr@et@h:1/db", "postgres://u:***@h:1/db"),
            (
                "postgresql://u:p%40ss@[::1]:5432",
                "postgresql://u:***@[::1]:5432",
            ),
            ("postgres://u:@h/db", "postgres://u:***@h/db"),
            (
                "postgres://u@h/db?a=1&password=hunter2&b=2",
                "postgres://u@h/db?a=1&password=***&b=2",
            ),
            (
                "postgres://h/db?pass%77ord=hunter2",
                "postgres://h/db?pass%77ord=***",
            ),
            ("mysql://u:secret@h", "mysql://u:***@h"),
            (
                "host=h password=hunter2 user=u",
                "host=h password=*** user=u",
            ),
            (
                "host=h password = 'a b\\' c' user=u",
                "host=h password=*** user=u",
            ),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        // A query value with an `@` may hide more, never less.
        let shown = redact_url("postgres://u:secret@h/db?application_name=a@b");
        assert!(!shown.contains("secret"), "{shown}");
    }

    #[test]
    fn urls_in_text_are_hidden() {
        let text = "line 2: url = \"postgres://u:pa ss@h/db\"\nand postgresql://v:x@y z";
        let shown = redact_urls_in(text);
        assert_eq!(
            shown,
            "line 2: url = \"postgres://u:***@h/db\"\nand postgresql://v:***@y z"
        );
        assert_eq!(redact_urls_in("no url here"), "no url here");
    }

    fn file_with(dir: &Path, name: &str, data: &[u8], mode: u32) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, data).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn password_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ok = file_with(d, "ok", b"p@ss word\n", 0o600);
        assert_eq!(read_password_file(&ok).unwrap(), b"p@ss word");
        let crlf = file_with(d, "crlf", b"pw\r\n", 0o400);
        assert_eq!(read_password_file(&crlf).unwrap(), b"pw");
        let bare = file_with(d, "bare", b"pw", 0o600);
        assert_eq!(read_password_file(&bare).unwrap(), b"pw");
        let link = d.join("link");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        assert_eq!(read_password_file(&link).unwrap(), b"p@ss word");

        let refused = |p: &Path, why: &str| {
            let e = read_password_file(p).unwrap_err().to_string();
            assert!(e.contains(why), "{}: {e}", p.display());
            assert!(!e.contains("p@ss"), "{e}");
        };
        refused(&file_with(d, "group", b"p@ss\n", 0o640), "group or others");
        refused(&file_with(d, "world", b"p@ss\n", 0o604), "mode 0604");
        refused(
            &file_with(d, "two", b"p@ss\nmore\n", 0o600),
            "more than one line",
        );
        refused(&file_with(d, "empty", b"\n", 0o600), "empty");
        refused(&file_with(d, "nul", b"p\0w", 0o600), "NUL");
        refused(&file_with(d, "big", &[b'x'; 4097], 0o600), "at most 4096");
        refused(d, "not a regular file");
        refused(&d.join("missing"), "No such file");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        refused(&fifo, "not a regular file");
    }

    #[test]
    fn the_url_wins_then_the_file_then_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_with(dir.path(), "pw", b"from file\n", 0o600);
        let env = Some(b"from env".as_slice());
        assert_eq!(password_for(true, None, env).unwrap(), None);
        assert_eq!(
            password_for(false, Some(&f), env).unwrap().as_deref(),
            Some(b"from file".as_slice())
        );
        assert_eq!(
            password_for(false, None, env).unwrap().as_deref(),
            Some(b"from env".as_slice())
        );
        assert_eq!(password_for(false, None, Some(b"")).unwrap(), None);
        assert_eq!(password_for(false, None, None).unwrap(), None);
        let e = password_for(true, Some(&f), env).unwrap_err().to_string();
        assert!(e.contains("give only one"), "{e}");
    }
}
