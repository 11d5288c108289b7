//! `zkpipe.toml`: what the daemon listens on, where its keys live, its
//! memory budgets, devices, scheduling policy and logging. Unknown keys are
//! errors; every key can also be set from the command line as
//! `section.key=value` (`--set`), and `--print-config` shows the result.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use zkpipe_core::Error;

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Listening and life cycle.
    pub daemon: DaemonSection,
    /// Proving keys.
    pub keys: KeysSection,
    /// Budgets.
    pub memory: MemorySection,
    /// Backend and devices.
    pub devices: DevicesSection,
    /// Scheduling policy and knobs.
    pub scheduler: SchedulerSection,
    /// Logs.
    pub logging: LoggingSection,
    /// The fleet's shared queue (PostgreSQL).
    pub queue: QueueSection,
}

/// `[daemon]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonSection {
    /// Unix socket path ("": `$XDG_RUNTIME_DIR/zkpipe/zkpipe.sock`, else
    /// `/tmp/zkpipe-<uid>/zkpipe.sock`).
    pub socket: String,
    /// Also listen on TCP, e.g. `127.0.0.1:9820` ("": no TCP).
    pub listen: String,
    /// File holding the bearer token TCP clients (and `status_http`'s)
    /// must send; required on TCP unless `tcp_without_token`.
    pub token_file: String,
    /// A loopback `listen` or `status_http` without a token: every local
    /// user may then submit work (logged as a warning).
    pub tcp_without_token: bool,
    /// TLS on `listen`: the certificate chain (PEM) and its private key
    /// (PEM); required for a non-loopback `listen`.
    pub tls_cert: String,
    /// The private key of `tls_cert` (PEM).
    pub tls_key: String,
    /// CA certificates (PEM): when set, TCP clients must present a
    /// certificate one of them signed.
    pub tls_client_ca: String,
    /// Serve `/metrics` and `/status` over HTTP here, e.g. `127.0.0.1:9821`
    /// (loopback only: plain HTTP).
    pub status_http: String,
    /// Seconds running jobs get to finish after SIGTERM/SIGINT.
    pub drain_timeout_s: u64,
    /// Largest request or reply message, in bytes.
    pub max_message_bytes: usize,
    /// Seconds an ended job's result stays available to `Await`.
    pub result_ttl_s: u64,
    /// Jobs queued or running at once; more are refused (RESOURCE_EXHAUSTED).
    pub max_jobs: usize,
    /// Verify every proof before returning it.
    pub verify_before_return: bool,
}

impl DaemonSection {
    /// The rules of TCP: a token on every listener unless
    /// `tcp_without_token` (loopback only), TLS off loopback, and plain
    /// HTTP on loopback only.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the keys to set.
    pub fn check_tcp(&self) -> Result<(), Error> {
        if self.tls_cert.is_empty() != self.tls_key.is_empty() {
            return Err(Error::InvalidInput(
                "daemon.tls_cert and daemon.tls_key go together".into(),
            ));
        }
        if !self.tls_client_ca.is_empty() && self.tls_cert.is_empty() {
            return Err(Error::InvalidInput(
                "daemon.tls_client_ca needs daemon.tls_cert and daemon.tls_key".into(),
            ));
        }
        if self.listen.is_empty() && !self.tls_cert.is_empty() {
            return Err(Error::InvalidInput(
                "daemon.tls_cert is for TCP: set daemon.listen too".into(),
            ));
        }
        let loopback = |addr: &str| {
            addr.parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.ip().is_loopback())
        };
        let no_token = self.token_file.is_empty();
        if !self.listen.is_empty() {
            if !loopback(&self.listen) && (self.tls_cert.is_empty() || no_token) {
                return Err(Error::InvalidInput(format!(
                    "daemon.listen {} is not loopback: it needs daemon.token_file (anyone who can \
                     reach it could submit work) and TLS, daemon.tls_cert and daemon.tls_key (the \
                     token would cross the network in clear)",
                    self.listen
                )));
            }
            if no_token && !self.tcp_without_token {
                return Err(Error::InvalidInput(format!(
                    "daemon.listen {} without daemon.token_file lets every local user submit \
                     work: give a token file, or set daemon.tcp_without_token = true",
                    self.listen
                )));
            }
        }
        if !self.status_http.is_empty() {
            if !loopback(&self.status_http) {
                return Err(Error::InvalidInput(format!(
                    "daemon.status_http {} is not loopback: it is plain HTTP; keep it on \
                     loopback (behind a TLS proxy for remote scrapers)",
                    self.status_http
                )));
            }
            if no_token && !self.tcp_without_token {
                return Err(Error::InvalidInput(format!(
                    "daemon.status_http {} without daemon.token_file shows every local user \
                     the daemon's jobs and keys: give a token file (scrapers send it as a \
                     bearer token), or set daemon.tcp_without_token = true",
                    self.status_http
                )));
            }
        }
        Ok(())
    }

    /// Whether a TCP listener runs without a token (a warning at start).
    pub fn tcp_open(&self) -> bool {
        self.token_file.is_empty() && !(self.listen.is_empty() && self.status_http.is_empty())
    }
}

impl Default for DaemonSection {
    fn default() -> Self {
        DaemonSection {
            socket: String::new(),
            listen: String::new(),
            token_file: String::new(),
            tcp_without_token: false,
            tls_cert: String::new(),
            tls_key: String::new(),
            tls_client_ca: String::new(),
            status_http: String::new(),
            drain_timeout_s: 30,
            max_message_bytes: 4 << 20,
            result_ttl_s: 600,
            max_jobs: 10_000,
            verify_before_return: true,
        }
    }
}

/// `[keys]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KeysSection {
    /// Folder of recorded circuits (`r1cs/`) and keys (`keys/`) ("": the
    /// cache folder of `zkpipe prove`). Test keys are set up there on
    /// first use.
    pub dir: String,
    /// Random points instead of a setup, for timing only: proofs cannot
    /// verify, so this needs `daemon.verify_before_return = false`.
    pub synthetic: bool,
    /// Folder of circom circuits: `NAME.zkey` (snarkjs Groth16, BLS12-381)
    /// beside `NAME.r1cs`; clients name a key by its zkey's SHA-256 ("":
    /// no circom jobs).
    pub circom_dir: String,
}

/// `[memory]`. Sizes are bytes or text with a unit: `64GiB`, `512MiB`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySection {
    /// Host memory for resident keys and partitions in flight together
    /// ("0": 80 % of the memory available at start).
    pub host_budget: String,
    /// Device memory one partition's device stages may use ("0": what the
    /// backend reports).
    pub device_budget: String,
}

impl Default for MemorySection {
    fn default() -> Self {
        MemorySection {
            host_budget: "0".into(),
            device_budget: "0".into(),
        }
    }
}

/// `[devices]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DevicesSection {
    /// Backend plugin name.
    pub backend: String,
    /// Device indices to use (empty: all the backend has).
    pub devices: Vec<u32>,
    /// Backend settings, `key=value` (e.g. `devices=2` for the CPU backend).
    pub backend_opts: Vec<String>,
    /// Extra plugin folder searched first ("": the standard search path).
    pub plugin_dir: String,
    /// Host threads of the backend (0: all cores).
    pub threads: usize,
    /// Device workers per device.
    pub gpu_workers_per_device: usize,
    /// Threads of the CPU pool for host work beside the device (0: all cores).
    pub gpu_threads: usize,
}

impl Default for DevicesSection {
    fn default() -> Self {
        DevicesSection {
            backend: "cpu".into(),
            devices: vec![],
            backend_opts: vec![],
            plugin_dir: String::new(),
            threads: 0,
            gpu_workers_per_device: 2,
            gpu_threads: 0,
        }
    }
}

/// `[scheduler]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerSection {
    /// A built-in policy (`priority`, `pipelined`, `split`, …) or a policy
    /// plugin's path.
    pub policy: String,
    /// Knobs over the policy's own, `key=value` (see `zkpipe bench batch --help`).
    pub knobs: Vec<String>,
}

impl Default for SchedulerSection {
    fn default() -> Self {
        SchedulerSection {
            policy: "priority".into(),
            knobs: vec![],
        }
    }
}

/// `[logging]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingSection {
    /// `error`, `warn`, `info`, `debug`, `trace`, or a tracing filter.
    pub level: String,
    /// `text` or `json`.
    pub format: String,
}

impl Default for LoggingSection {
    fn default() -> Self {
        LoggingSection {
            level: "info".into(),
            format: "text".into(),
        }
    }
}

/// `[queue]`: join a fleet of nodes that share one job queue in
/// PostgreSQL (`docs/fleet.md`). Durations are milliseconds. Its `Debug`
/// hides the URL's password.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueSection {
    /// `postgres://user[:password]@host[:port]/database` ("": no fleet,
    /// the daemon proves only its own gRPC jobs). Shown with its password
    /// hidden; better left without one (see `password_file`).
    pub url: String,
    /// A file holding the database password, for a URL without one: a
    /// regular file of one line, at most 4 KiB, that only its owner may
    /// access (mode 0600 or 0400) ("": `$PGPASSWORD`, if set).
    pub password_file: String,
    /// This node's id in the fleet ("": `<hostname>-<pid>`). A stable id
    /// lets a restarted node take back at once the jobs its previous run
    /// held; two live nodes must never share one.
    pub node_id: String,
    /// Fleet jobs this node runs at once.
    pub concurrency: usize,
    /// How long a claim holds a job without a heartbeat (nodes renew
    /// every third of it); a dead node's jobs are retried after it.
    pub lease_ms: u64,
    /// How long a job whose key is resident on a live node waits for such
    /// a node before any node may take it.
    pub affinity_wait_ms: u64,
    /// How long a job that no live node can run waits before it fails
    /// with the reason.
    pub unrunnable_wait_ms: u64,
    /// Fallback poll while waiting for notifications.
    pub poll_interval_ms: u64,
    /// Attempts a job gets when the submitter does not say.
    pub max_attempts: i32,
    /// Payloads up to this size are stored in the job row.
    pub inline_payload_max: String,
    /// Larger payloads are written here, a folder every node and client
    /// mounts ("": larger payloads are refused).
    pub payload_dir: String,
}

impl Default for QueueSection {
    fn default() -> Self {
        QueueSection {
            url: String::new(),
            password_file: String::new(),
            node_id: String::new(),
            concurrency: 2,
            lease_ms: 30_000,
            affinity_wait_ms: 5_000,
            unrunnable_wait_ms: 60_000,
            poll_interval_ms: 2_000,
            max_attempts: 3,
            inline_payload_max: "1MiB".into(),
            payload_dir: String::new(),
        }
    }
}

impl std::fmt::Debug for QueueSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let QueueSection {
            url,
            password_file,
            node_id,
            concurrency,
            lease_ms,
            affinity_wait_ms,
            unrunnable_wait_ms,
            poll_interval_ms,
            max_attempts,
            inline_payload_max,
            payload_dir,
        } = self;
        f.debug_struct("QueueSection")
            .field("url", &zkpipe_fleet::redact_url(url))
            .field("password_file", password_file)
            .field("node_id", node_id)
            .field("concurrency", concurrency)
            .field("lease_ms", lease_ms)
            .field("affinity_wait_ms", affinity_wait_ms)
            .field("unrunnable_wait_ms", unrunnable_wait_ms)
            .field("poll_interval_ms", poll_interval_ms)
            .field("max_attempts", max_attempts)
            .field("inline_payload_max", inline_payload_max)
            .field("payload_dir", payload_dir)
            .finish()
    }
}

impl QueueSection {
    /// Whether the daemon joins a fleet.
    pub fn enabled(&self) -> bool {
        !self.url.is_empty()
    }

    /// The queue library's settings.
    pub fn queue_config(&self) -> zkpipe_fleet::QueueConfig {
        let ms = std::time::Duration::from_millis;
        zkpipe_fleet::QueueConfig {
            lease: ms(self.lease_ms),
            affinity_wait: ms(self.affinity_wait_ms),
            unrunnable_wait: ms(self.unrunnable_wait_ms),
            poll_interval: ms(self.poll_interval_ms),
            default_max_attempts: self.max_attempts,
            inline_payload_max: parse_bytes("", &self.inline_payload_max).unwrap_or(1 << 20),
            payload_dir: (!self.payload_dir.is_empty()).then(|| PathBuf::from(&self.payload_dir)),
            password_file: (!self.password_file.is_empty())
                .then(|| PathBuf::from(&self.password_file)),
            ..zkpipe_fleet::QueueConfig::default()
        }
    }

    /// The configured node id, else `<hostname>-<pid>`.
    pub fn node_id(&self) -> String {
        if !self.node_id.is_empty() {
            return self.node_id.clone();
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "node".into());
        format!("{host}-{}", std::process::id())
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidInput(m));
        if self.enabled()
            && !(self.url.starts_with("postgres://") || self.url.starts_with("postgresql://"))
        {
            return bad("queue.url must be a postgres:// or postgresql:// URL".into());
        }
        if self.password_file.contains('\0') {
            return bad("queue.password_file: no NUL".into());
        }
        if self.node_id.len() > 200 || self.node_id.contains('\0') {
            return bad("queue.node_id: at most 200 bytes, no NUL".into());
        }
        if !(1..=1024).contains(&self.concurrency) {
            return bad("queue.concurrency must be from 1 to 1024".into());
        }
        if !(300..=3_600_000).contains(&self.lease_ms) {
            return bad("queue.lease_ms must be from 300 to 3600000".into());
        }
        if !(10..=600_000).contains(&self.poll_interval_ms) {
            return bad("queue.poll_interval_ms must be from 10 to 600000".into());
        }
        if self.affinity_wait_ms > 3_600_000 || self.unrunnable_wait_ms > 86_400_000 {
            return bad(
                "queue.affinity_wait_ms is at most an hour, queue.unrunnable_wait_ms a day".into(),
            );
        }
        if !(1..=1000).contains(&self.max_attempts) {
            return bad("queue.max_attempts must be from 1 to 1000".into());
        }
        parse_bytes("queue.inline_payload_max", &self.inline_payload_max)?;
        Ok(())
    }
}

/// The largest configuration file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl Config {
    /// Reads a config file.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read; [`Error::InvalidInput`] for a
    /// file over 1 MiB, bad TOML, unknown keys or invalid values.
    pub fn load(path: &std::path::Path) -> Result<Config, Error> {
        let bytes = zkpipe_core::util::fsutil::read_capped(path, MAX_CONFIG_BYTES)
            .map_err(|e| Error::InvalidInput(format!("config {}: {e}", path.display())))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::InvalidInput(format!("config {}: not UTF-8 text", path.display()))
        })?;
        // TOML errors quote the offending line, which may be the queue URL.
        let config: Config = toml::from_str(&text).map_err(|e| {
            Error::InvalidInput(format!(
                "config {}: {}",
                path.display(),
                zkpipe_fleet::redact_urls_in(&e.to_string())
            ))
        })?;
        config.validate_values()?;
        Ok(config)
    }

    /// Sets one key from the command line: `section.key=value` (a list
    /// takes comma-separated items).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an unknown key or a bad value.
    pub fn set(&mut self, assignment: &str) -> Result<(), Error> {
        let (key, value) = assignment.split_once('=').ok_or_else(|| {
            Error::InvalidInput(format!(
                "--set wants section.key=value, not `{}`",
                zkpipe_fleet::redact_urls_in(assignment)
            ))
        })?;
        let (section, name) = key
            .split_once('.')
            .ok_or_else(|| Error::InvalidInput(format!("--set: `{key}` is not section.key")))?;
        // Round-trip through TOML so that one parser checks names and types.
        let mut table = toml::Table::try_from(&*self)
            .map_err(|e| Error::InvalidInput(format!("config: {e}")))?;
        let sect = table
            .get_mut(section)
            .and_then(toml::Value::as_table_mut)
            .ok_or_else(|| Error::InvalidInput(format!("--set: unknown section `{section}`")))?;
        let old = sect
            .get(name)
            .ok_or_else(|| Error::InvalidInput(format!("--set: unknown key `{key}`")))?;
        let new = match old {
            toml::Value::Integer(_) => toml::Value::Integer(value.parse().map_err(|_| {
                Error::InvalidInput(format!("--set {key}: `{value}` is not a whole number"))
            })?),
            toml::Value::Boolean(_) => toml::Value::Boolean(value.parse().map_err(|_| {
                Error::InvalidInput(format!("--set {key}: `{value}` is not true or false"))
            })?),
            toml::Value::Array(a) => {
                let numeric =
                    key == "devices.devices" || a.first().is_some_and(toml::Value::is_integer);
                let items = value.split(',').filter(|s| !s.is_empty());
                let items: Result<Vec<_>, Error> = items
                    .map(|s| {
                        if numeric {
                            s.trim().parse().map(toml::Value::Integer).map_err(|_| {
                                Error::InvalidInput(format!(
                                    "--set {key}: `{s}` is not a whole number"
                                ))
                            })
                        } else {
                            Ok(toml::Value::String(s.to_string()))
                        }
                    })
                    .collect();
                toml::Value::Array(items?)
            }
            _ => toml::Value::String(value.to_string()),
        };
        sect.insert(name.to_string(), new);
        let next: Config = table
            .try_into()
            .map_err(|e| Error::InvalidInput(format!("--set {key}: {e}")))?;
        // Keys that depend on each other are checked once all are set.
        next.validate_values()?;
        *self = next;
        Ok(())
    }

    /// The configuration as TOML (`--print-config`), the queue URL's
    /// password hidden (`postgres://user:***@host/db`).
    pub fn to_toml(&self) -> String {
        let mut shown = self.clone();
        shown.queue.url = zkpipe_fleet::redact_url(&self.queue.url);
        toml::to_string_pretty(&shown).unwrap_or_else(|e| format!("# cannot print: {e}\n"))
    }

    /// Checks values that TOML's types do not, and keys that depend on
    /// each other.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the key.
    pub fn validate(&self) -> Result<(), Error> {
        self.validate_values()?;
        self.daemon.check_tcp()?;
        if self.keys.synthetic && self.daemon.verify_before_return {
            return Err(Error::InvalidInput(
                "keys.synthetic makes proofs that cannot verify: it needs daemon.verify_before_return = false".into(),
            ));
        }
        Ok(())
    }

    /// Checks each value on its own.
    fn validate_values(&self) -> Result<(), Error> {
        parse_bytes("memory.host_budget", &self.memory.host_budget)?;
        self.queue.validate()?;
        parse_bytes("memory.device_budget", &self.memory.device_budget)?;
        let d = &self.daemon;
        if !(4096..=crate::client::MAX_REQUEST_BYTES).contains(&d.max_message_bytes) {
            return Err(Error::InvalidInput(
                "daemon.max_message_bytes must be from 4096 to 1 GiB".into(),
            ));
        }
        if d.max_jobs == 0 {
            return Err(Error::InvalidInput(
                "daemon.max_jobs must be at least 1".into(),
            ));
        }
        if !d.listen.is_empty() {
            d.listen.parse::<std::net::SocketAddr>().map_err(|_| {
                Error::InvalidInput(format!(
                    "daemon.listen: `{}` is not an address such as 127.0.0.1:9820",
                    d.listen
                ))
            })?;
        }
        if !d.status_http.is_empty() {
            d.status_http.parse::<std::net::SocketAddr>().map_err(|_| {
                Error::InvalidInput(format!(
                    "daemon.status_http: `{}` is not an address such as 127.0.0.1:9821",
                    d.status_http
                ))
            })?;
        }
        check_log_level(&self.logging.level)?;
        if !matches!(self.logging.format.as_str(), "text" | "json") {
            return Err(Error::InvalidInput(format!(
                "logging.format must be text or json, not `{}`",
                self.logging.format
            )));
        }
        if self.devices.threads > 0 {
            zkpipe_core::util::machine::check_threads(
                self.devices.threads.min(u32::MAX as usize) as u32
            )?;
        }
        if self.devices.gpu_workers_per_device == 0 {
            return Err(Error::InvalidInput(
                "devices.gpu_workers_per_device must be at least 1".into(),
            ));
        }
        for kv in self
            .devices
            .backend_opts
            .iter()
            .chain(&self.scheduler.knobs)
        {
            if !kv.contains('=') {
                return Err(Error::InvalidInput(format!(
                    "`{kv}` is not key=value (devices.backend_opts, scheduler.knobs)"
                )));
            }
        }
        Ok(())
    }

    /// This config with the values it leaves to the machine filled in (the
    /// socket path), as `--print-config` shows it.
    pub fn resolved(&self) -> Config {
        let mut c = self.clone();
        c.daemon.socket = self.socket_path().display().to_string();
        c
    }

    /// The socket path: as configured, else under `$XDG_RUNTIME_DIR`.
    pub fn socket_path(&self) -> PathBuf {
        if !self.daemon.socket.is_empty() {
            return PathBuf::from(&self.daemon.socket);
        }
        default_socket_path()
    }

    /// The host budget in bytes (0: automatic).
    pub fn host_budget(&self) -> u64 {
        parse_bytes("", &self.memory.host_budget).unwrap_or(0)
    }

    /// The device budget in bytes (0: what the backend reports).
    pub fn device_budget(&self) -> u64 {
        parse_bytes("", &self.memory.device_budget).unwrap_or(0)
    }
}

/// Refuses a log level that is not one: tracing reads a bare word as a
/// target's name, so `verbose` would silently turn every line off. A level
/// is `off`, `error`, `warn`, `info`, `debug` or `trace`; a filter is
/// comma-separated levels and `target=level` directives.
///
/// # Errors
/// [`Error::InvalidInput`] naming the directive and the levels.
fn check_log_level(level: &str) -> Result<(), Error> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    for directive in level.split(',').map(str::trim) {
        let word = directive.rsplit_once('=').map_or(directive, |(_, l)| l);
        if !LEVELS.iter().any(|l| l.eq_ignore_ascii_case(word)) {
            return Err(Error::InvalidInput(format!(
                "logging.level: `{directive}` is not a level (off, error, warn, info, debug, \
                 trace) or a `target=level` directive"
            )));
        }
    }
    Ok(())
}

/// `$XDG_RUNTIME_DIR/zkpipe/zkpipe.sock`, else `/tmp/zkpipe-<uid>/zkpipe.sock`.
pub fn default_socket_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("zkpipe").join("zkpipe.sock"),
        None => {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            PathBuf::from(format!("/tmp/zkpipe-{uid}")).join("zkpipe.sock")
        }
    }
}

/// `123`, `64GiB`, `512MiB`, `4KiB`, `2GB` (powers of 1000) → bytes.
///
/// # Errors
/// [`Error::InvalidInput`] naming `key` for anything else or an overflow.
pub fn parse_bytes(key: &str, text: &str) -> Result<u64, Error> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        Error::InvalidInput(format!(
            "{key}: `{text}` is not a size such as 64GiB, 512MiB or 1048576"
        ))
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_and_print() {
        let c = Config::default();
        let text = c.to_toml();
        let back: Config = toml::from_str(&text).unwrap();
        assert_eq!(back, c);
        assert!(text.contains("[daemon]") && text.contains("verify_before_return = true"));
    }

    /// The example configuration holds every key, each at its default, so
    /// copying it changes nothing until a line is edited; a key added to
    /// the config and not to the example fails here.
    #[test]
    fn the_example_config_has_every_key_at_its_default() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/zkpipe.toml");
        let example = Config::load(std::path::Path::new(path)).unwrap();
        assert_eq!(example, Config::default());
        let keys = |text: &str| -> Vec<String> {
            let table: toml::Table = toml::from_str(text).unwrap();
            table
                .iter()
                .flat_map(|(section, keys)| {
                    let keys = keys.as_table().unwrap();
                    keys.keys().map(move |k| format!("{section}.{k}"))
                })
                .collect()
        };
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(keys(&text), keys(&Config::default().to_toml()));
    }

    #[test]
    fn a_log_level_must_be_one() {
        for good in [
            "info",
            "DEBUG",
            "off",
            "zkpipe=debug,info",
            "h2=warn, trace",
        ] {
            check_log_level(good).unwrap();
        }
        for bad in ["verbose", "info,loud", "zkpipe=chatty", ""] {
            let e = check_log_level(bad).unwrap_err().to_string();
            assert!(e.contains("logging.level"), "{bad}: {e}");
        }
        let mut c = Config::default();
        let refused = c.set("logging.level=verbose").and_then(|()| c.validate());
        assert!(refused.is_err());
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = toml::from_str::<Config>("[daemon]\nlisten_on = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("listen_on"), "{e}");
        let e = toml::from_str::<Config>("[gpu]\n").unwrap_err();
        assert!(e.to_string().contains("gpu"), "{e}");
        let mut c = Config::default();
        assert!(c.set("daemon.nope=1").is_err());
        assert!(c.set("nope.x=1").is_err());
        assert!(c.set("daemon.max_jobs=lots").is_err());
        assert!(c.set("daemon.listen=not-an-address").is_err());
        c.set("keys.synthetic=true").unwrap();
        assert!(c.validate().is_err());
        c.set("daemon.verify_before_return=false").unwrap();
        c.validate().unwrap();
    }

    #[test]
    fn set_changes_keys_of_each_type() {
        let mut c = Config::default();
        c.set("daemon.max_jobs=7").unwrap();
        c.set("daemon.verify_before_return=false").unwrap();
        c.set("devices.devices=0,2").unwrap();
        c.set("devices.backend_opts=devices=2,fault=corrupt:3")
            .unwrap();
        c.set("memory.host_budget=2GiB").unwrap();
        assert_eq!(c.daemon.max_jobs, 7);
        assert!(!c.daemon.verify_before_return);
        assert_eq!(c.devices.devices, vec![0, 2]);
        assert_eq!(c.devices.backend_opts, vec!["devices=2", "fault=corrupt:3"]);
        assert_eq!(c.host_budget(), 2 << 30);
    }

    #[test]
    fn queue_settings_are_checked() {
        let mut c = Config::default();
        assert!(!c.queue.enabled());
        assert!(c.set("queue.url=mysql://x").is_err());
        c.set("queue.url=postgres://u@127.0.0.1:5432/db").unwrap();
        assert!(c.set("queue.lease_ms=0").is_err());
        assert!(c.set("queue.concurrency=0").is_err());
        assert!(c.set("queue.inline_payload_max=lots").is_err());
        c.set("queue.lease_ms=3000").unwrap();
        c.set("queue.payload_dir=/shared/payloads").unwrap();
        let q = c.queue.queue_config();
        assert_eq!(q.lease, std::time::Duration::from_secs(3));
        assert_eq!(q.inline_payload_max, 1 << 20);
        assert!(c.queue.node_id().contains('-'));
        c.set("queue.node_id=gpu-7").unwrap();
        assert_eq!(c.queue.node_id(), "gpu-7");
    }

    #[test]
    fn the_queue_password_is_not_shown() {
        let mut c = Config::default();
        c.set("queue.url=postgres://u:pa/ss?w@db.example:5432/q?sslmode=disable")
            .unwrap();
        let text = c.to_toml();
        assert!(
            text.contains("url = \"postgres://u:***@db.example:5432/q?sslmode=disable\""),
            "{text}"
        );
        assert!(!text.contains("pa/ss"), "{text}");
        // Printing does not change the URL in use.
        assert!(c.queue.url.contains("pa/ss"));
        assert!(!format!("{c:?}").contains("pa/ss"));

        let e = c.set("queue.url postgres://u:hunter2@h/db").unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "[queue]\nurl = \"postgres://u:hunter2@h/db\" oops\n").unwrap();
        let e = Config::load(&file).unwrap_err().to_string();
        assert!(e.contains("postgres://u:***@h/db"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn the_password_file_reaches_the_queue() {
        let mut c = Config::default();
        assert_eq!(c.queue.queue_config().password_file, None);
        c.set("queue.password_file=/run/secrets/pg").unwrap();
        assert_eq!(
            c.queue.queue_config().password_file,
            Some(PathBuf::from("/run/secrets/pg"))
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("k", "1048576").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("k", "64GiB").unwrap(), 64 << 30);
        assert_eq!(parse_bytes("k", "2GB").unwrap(), 2_000_000_000);
        for bad in ["", "GiB", "1.5GiB", "-1", "9999999999999TiB", "12 parsecs"] {
            assert!(parse_bytes("k", bad).is_err(), "{bad}");
        }
    }
}
