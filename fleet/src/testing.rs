//! A throwaway PostgreSQL cluster for tests (feature `testing`): `initdb`
//! into a temporary folder, a server on a free loopback port, removed on
//! drop. Never a system service.
//!
//! The binaries are found through `$ZKPIPE_PG_BIN`, then the newest
//! `/usr/lib/postgresql/*/bin`, then `PATH`. PostgreSQL refuses to run as
//! root; as root the cluster belongs to the `postgres` user and every
//! command runs through `runuser`.
//!
//! [`TestPostgres::start_or_skip`] returns `None` (with the reason printed)
//! when PostgreSQL is not installed, unless `ZKPIPE_REQUIRE_POSTGRES=1`,
//! when it panics with the reason: this is test support, where a panic is
//! the failure.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A running throwaway cluster. Stopped (immediately) and deleted on drop.
#[derive(Debug)]
pub struct TestPostgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    data: PathBuf,
    port: u16,
    run_as: Option<String>,
    tls: bool,
}

/// A server certificate and its private key, both PEM.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// The certificate (chain), PEM.
    pub cert_pem: String,
    /// Its private key, PEM.
    pub key_pem: String,
    /// When set, clients must show a certificate signed by this CA (PEM)
    /// (`clientcert=verify-ca`).
    pub client_ca_pem: Option<String>,
}

const USER: &str = "zkpipe";
const DATABASE: &str = "postgres";

fn find_bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ZKPIPE_PG_BIN") {
        let dir = PathBuf::from(dir);
        return dir.join("initdb").is_file().then_some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|d| {
        d.join("initdb").is_file() && d.join("pg_ctl").is_file() && d.join("postgres").is_file()
    })
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl TestPostgres {
    /// Starts a cluster, or says why it cannot.
    ///
    /// # Errors
    ///
    /// A message naming what is missing or what failed (with the server log).
    pub fn start() -> Result<Self, String> {
        Self::start_with(None, None)
    }

    /// Like [`TestPostgres::start`] with `ssl = on`, serving `tls`
    /// (written as `server.crt` and `server.key`, mode 0600, into the data
    /// folder), accepting TLS connections only (`hostssl`); `password` as
    /// for [`TestPostgres::start_with_password`].
    ///
    /// # Errors
    ///
    /// As for [`TestPostgres::start`] (a certificate the server refuses
    /// shows in the server log quoted).
    pub fn start_with_tls(password: Option<&str>, tls: &ServerTls) -> Result<Self, String> {
        Self::start_with(password, Some(tls))
    }

    /// [`TestPostgres::start_with_tls`], or `None` after printing why,
    /// unless `ZKPIPE_REQUIRE_POSTGRES=1`.
    ///
    /// # Panics
    ///
    /// When the cluster cannot start and `ZKPIPE_REQUIRE_POSTGRES=1`.
    #[must_use]
    pub fn start_with_tls_or_skip(password: Option<&str>, tls: &ServerTls) -> Option<Self> {
        Self::or_skip(Self::start_with_tls(password, tls))
    }

    /// Like [`TestPostgres::start`], but TCP clients must give `password`
    /// (SCRAM-SHA-256) for the user `zkpipe`: [`TestPostgres::url`] then
    /// names no password and does not connect by itself.
    ///
    /// # Errors
    ///
    /// As for [`TestPostgres::start`].
    pub fn start_with_password(password: &str) -> Result<Self, String> {
        Self::start_with(Some(password), None)
    }

    /// [`TestPostgres::start_with_password`], or `None` after printing why,
    /// unless `ZKPIPE_REQUIRE_POSTGRES=1`.
    ///
    /// # Panics
    ///
    /// When the cluster cannot start and `ZKPIPE_REQUIRE_POSTGRES=1`.
    #[must_use]
    pub fn start_with_password_or_skip(password: &str) -> Option<Self> {
        Self::or_skip(Self::start_with_password(password))
    }

    fn start_with(password: Option<&str>, tls: Option<&ServerTls>) -> Result<Self, String> {
        let bin = find_bin_dir().ok_or(
            "PostgreSQL not found (no initdb in $ZKPIPE_PG_BIN, /usr/lib/postgresql/*/bin or PATH)",
        )?;
        let dir = tempfile::Builder::new()
            .prefix("zkpipe-pg-")
            .tempdir()
            .map_err(|e| format!("temporary folder: {e}"))?;
        let data = dir.path().join("data");
        let run_as = is_root().then(|| "postgres".to_owned());
        if let Some(user) = &run_as {
            // The server user must reach its data folder inside ours.
            set_mode(dir.path(), 0o755)?;
            std::fs::create_dir(&data).map_err(|e| format!("{}: {e}", data.display()))?;
            let status = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(&data)
                .status()
                .map_err(|e| format!("chown: {e}"))?;
            if !status.success() {
                return Err(format!("chown {user} {} failed", data.display()));
            }
        }
        let mut pg = TestPostgres {
            bin,
            dir,
            data,
            port: 0,
            run_as,
            tls: tls.is_some(),
        };
        let data = path_str(&pg.data)?.to_owned();
        let mut args = vec![
            "-D",
            &data,
            "-U",
            USER,
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ];
        // initdb reads the superuser's password from a file; it is removed
        // once the cluster exists.
        let pwfile = pg.dir.path().join("pwfile");
        let pwfile_arg;
        match password {
            None => args.extend(["-A", "trust"]),
            Some(pw) => {
                std::fs::write(&pwfile, format!("{pw}\n"))
                    .map_err(|e| format!("{}: {e}", pwfile.display()))?;
                if let Some(user) = &pg.run_as {
                    let _ = Command::new("chown")
                        .arg(format!("{user}:"))
                        .arg(&pwfile)
                        .status();
                }
                pwfile_arg = format!("--pwfile={}", path_str(&pwfile)?);
                args.extend(["-A", "scram-sha-256", &pwfile_arg]);
            }
        }
        let made = pg.run("initdb", &args);
        let _ = std::fs::remove_file(&pwfile);
        made?;
        if let Some(tls) = tls {
            pg.write_server_tls(tls, password.is_some())?;
        }
        // Up to three ports: another process may take the one we picked.
        let mut last = String::new();
        for _ in 0..3 {
            pg.port = free_port().map_err(|e| format!("free port: {e}"))?;
            pg.write_config()?;
            match pg.start_server() {
                Ok(()) => return Ok(pg),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// [`TestPostgres::start`], or `None` after printing why, unless
    /// `ZKPIPE_REQUIRE_POSTGRES=1`.
    ///
    /// # Panics
    ///
    /// When the cluster cannot start and `ZKPIPE_REQUIRE_POSTGRES=1`.
    #[must_use]
    pub fn start_or_skip() -> Option<Self> {
        Self::or_skip(Self::start())
    }

    fn or_skip(started: Result<Self, String>) -> Option<Self> {
        match started {
            Ok(pg) => Some(pg),
            Err(reason) => {
                assert!(
                    std::env::var("ZKPIPE_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                    "ZKPIPE_REQUIRE_POSTGRES=1 but no throwaway PostgreSQL: {reason}"
                );
                eprintln!("skipped: no throwaway PostgreSQL: {reason}");
                None
            }
        }
    }

    /// `postgres://zkpipe@127.0.0.1:PORT/postgres`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    /// Its TCP port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A folder next to the cluster for test files (payloads), removed with it.
    ///
    /// # Errors
    ///
    /// If it cannot be created.
    pub fn scratch_dir(&self, name: &str) -> Result<PathBuf, String> {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p)
    }

    /// Stops the server at once (`-m immediate`: like a crash; clients see
    /// their connections drop).
    ///
    /// # Errors
    ///
    /// If `pg_ctl stop` fails.
    pub fn stop(&self) -> Result<(), String> {
        self.run(
            "pg_ctl",
            &["-D", path_str(&self.data)?, "-m", "immediate", "-w", "stop"],
        )
    }

    /// Starts the stopped server again on the same port.
    ///
    /// # Errors
    ///
    /// If `pg_ctl start` fails.
    pub fn restart_after_stop(&self) -> Result<(), String> {
        self.start_server()
    }

    /// Loopback only, no Unix socket (its default folder may not be ours),
    /// room for a 64-node benchmark (two connections per node). `fsync` is
    /// off: a crash of the server process (`stop`) loses nothing the OS has,
    /// which is what the restart tests need; commits stay synchronous.
    fn write_config(&self) -> Result<(), String> {
        let mut conf = format!(
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = ''\n\
             max_connections = 300\nshared_buffers = 32MB\nfsync = off\n\
             full_page_writes = off\n",
            self.port
        );
        if self.tls {
            if self.data.join("client_ca.crt").exists() {
                conf.push_str("ssl_ca_file = 'client_ca.crt'\n");
            }
            // Relative to the data folder.
            conf.push_str("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        }
        let path = self.data.join("postgresql.auto.conf");
        std::fs::write(&path, conf).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The certificate, its key (the server refuses a key file others may
    /// read, and must own it) and a `pg_hba.conf` that refuses plain TCP.
    fn write_server_tls(&self, tls: &ServerTls, password: bool) -> Result<(), String> {
        let method = if password { "scram-sha-256" } else { "trust" };
        let clientcert = if tls.client_ca_pem.is_some() {
            " clientcert=verify-ca"
        } else {
            ""
        };
        let hba = format!("hostssl all all 127.0.0.1/32 {method}{clientcert}\n");
        let mut files = vec![
            ("server.crt", &tls.cert_pem),
            ("server.key", &tls.key_pem),
            ("pg_hba.conf", &hba),
        ];
        if let Some(ca) = &tls.client_ca_pem {
            files.push(("client_ca.crt", ca));
        }
        for (name, text) in files {
            let path = self.data.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            set_mode(&path, 0o600)?;
            if let Some(user) = &self.run_as {
                let status = Command::new("chown")
                    .arg(format!("{user}:"))
                    .arg(&path)
                    .status()
                    .map_err(|e| format!("chown: {e}"))?;
                if !status.success() {
                    return Err(format!("chown {user} {} failed", path.display()));
                }
            }
        }
        Ok(())
    }

    fn start_server(&self) -> Result<(), String> {
        let log = self.dir.path().join("server.log");
        if self.run_as.is_some() && !log.exists() {
            std::fs::write(&log, "").map_err(|e| format!("{}: {e}", log.display()))?;
            let _ = Command::new("chown").arg("postgres:").arg(&log).status();
        }
        self.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&self.data)?,
                "-l",
                path_str(&log)?,
                "-t",
                "60",
                "-w",
                "start",
            ],
        )
        .map_err(|e| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(10).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("{e}\nserver log:\n{}", tail.join("\n"))
        })
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(tool);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let out = cmd
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{tool} {} failed ({}): {}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }
}

fn set_mode(p: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", p.display()))
}

fn path_str(p: &Path) -> Result<&str, String> {
    p.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", p.display()))
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        if let Ok(data) = path_str(&self.data) {
            let _ = self.run("pg_ctl", &["-D", data, "-m", "immediate", "-w", "stop"]);
        }
        // Let the server's files be released before the folder goes.
        std::thread::sleep(Duration::from_millis(10));
    }
}
