//! What a search for plugins finds, for `zkpipe backends` and a
//! daemon's startup: searched folders, loaded backends with their devices
//! and ops, and the libraries that failed with why.

use serde::Serialize;
use zkpipe_core::Error;
use zkpipe_core::plugin::{ABI_VERSION, DeviceKind};

use crate::BackendRequest;

/// What a search for plugins found: the folders searched in order, each
/// backend that loaded with its devices and ops (or why it refused to
/// start), and each library that failed to load, with the reason.
#[derive(Serialize, Debug)]
pub struct Inventory {
    pub abi_version: u32,
    pub searched: Vec<String>,
    pub backends: Vec<BackendReport>,
    pub failures: Vec<FailureReport>,
}

/// A backend that loaded.
#[derive(Serialize, Debug)]
pub struct BackendReport {
    pub name: String,
    pub path: String,
    pub version: Option<String>,
    pub devices: Vec<DeviceReport>,
    pub capabilities: Vec<String>,
    pub notes: Option<String>,
    /// Set when the plugin loaded but refused to create an instance.
    pub error: Option<String>,
}

/// One of a backend's devices.
#[derive(Serialize, Debug)]
pub struct DeviceReport {
    pub id: u32,
    pub name: String,
    pub kind: &'static str,
    pub memory_bytes: u64,
    pub compute_units: u32,
}

/// A library that did not load.
#[derive(Serialize, Debug)]
pub struct FailureReport {
    pub path: String,
    pub reason: String,
}

fn kind_name(k: DeviceKind) -> &'static str {
    match k {
        DeviceKind::Cpu => "cpu",
        DeviceKind::Gpu => "gpu",
        DeviceKind::Other => "other",
    }
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

impl Inventory {
    /// Searches `request`'s plugin path and starts each backend found
    /// with `request`'s settings.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for settings the request cannot give
    /// (e.g. a thread count over the machine's limit).
    pub fn take(request: &BackendRequest) -> Result<Inventory, Error> {
        let registry = request.registry();
        let config = request.config()?;
        let backends = registry
            .plugins
            .iter()
            .map(|p| {
                let mut r = BackendReport {
                    name: p.name.clone(),
                    path: match p.builtin {
                        true => format!("built into {}", p.path.display()),
                        false => p.path.display().to_string(),
                    },
                    version: None,
                    devices: vec![],
                    capabilities: vec![],
                    notes: None,
                    error: None,
                };
                match p.create(&config) {
                    Ok(be) => {
                        let info = be.info();
                        r.version = Some(info.version.to_string());
                        r.notes = Some(info.notes.to_string()).filter(|n| !n.is_empty());
                        r.devices = info
                            .devices
                            .iter()
                            .map(|d| DeviceReport {
                                id: d.id,
                                name: d.name.to_string(),
                                kind: kind_name(d.kind),
                                memory_bytes: d.memory_bytes,
                                compute_units: d.compute_units,
                            })
                            .collect();
                        r.capabilities = be
                            .capabilities()
                            .ops
                            .iter()
                            .map(|o| format!("{} (≤ 2^{})", o.op, o.max_log_size))
                            .collect();
                    }
                    Err(e) => r.error = Some(e.to_string()),
                }
                r
            })
            .collect();
        Ok(Inventory {
            abi_version: ABI_VERSION,
            searched: registry
                .searched
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            backends,
            failures: registry
                .failures
                .iter()
                .map(|f| FailureReport {
                    path: f.path.display().to_string(),
                    reason: f.reason.clone(),
                })
                .collect(),
        })
    }

    /// The inventory as text, as `zkpipe backends` prints it.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.push(format!(
            "plugin ABI {}; search path, in order:",
            self.abi_version
        ));
        for d in &self.searched {
            out.push(format!("  {d}"));
        }
        if self.backends.is_empty() {
            out.push("\nno backends loaded".to_string());
        }
        for b in &self.backends {
            out.push(format!(
                "\n{} {} — {}",
                b.name,
                b.version.as_deref().unwrap_or("?"),
                b.path
            ));
            if let Some(e) = &b.error {
                out.push(format!("  unavailable: {e}"));
                continue;
            }
            if b.devices.is_empty() {
                out.push("  no devices".to_string());
            }
            for d in &b.devices {
                out.push(format!(
                    "  device {}: {} [{}], {:.1} GiB, {} {}",
                    d.id,
                    d.name,
                    d.kind,
                    gib(d.memory_bytes),
                    d.compute_units,
                    if d.kind == "cpu" {
                        "threads"
                    } else {
                        "compute units"
                    }
                ));
            }
            out.push(format!(
                "  ops: {}",
                if b.capabilities.is_empty() {
                    "none".into()
                } else {
                    b.capabilities.join(", ")
                }
            ));
            if let Some(n) = &b.notes {
                out.push(format!("  notes: {n}"));
            }
        }
        if !self.failures.is_empty() {
            out.push("\nfailed to load:".to_string());
            for f in &self.failures {
                out.push(format!("  {}", f.path));
                for line in f.reason.lines() {
                    out.push(format!("    {line}"));
                }
            }
        }
        out
    }
}
