//! What a search for plugins finds, for `zkpipe backends` and a
//! daemon's startup: searched folders, loaded backends with their devices
//! and ops, and the libraries that failed with why.

use serde::Serialize;
use zkpipe_core::Error;
use zkpipe_core::plugin::{ABI_VERSION, Capabilities, DeviceKind};

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
    /// Per curve, the ops served (bare names); a curve with none is left out.
    pub curves: Vec<CurveReport>,
    pub notes: Option<String>,
    /// With a warm-up: each device's first small NTT and MSMs, in ms
    /// (kernels compiled or loaded and cached before the first real job).
    pub warm_ms: Vec<(u32, f64)>,
    /// Set when the plugin loaded but refused to create an instance.
    pub error: Option<String>,
}

/// The ops a backend serves on one curve.
#[derive(Serialize, Debug)]
pub struct CurveReport {
    pub curve: &'static str,
    pub ops: Vec<String>,
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

/// A 2^12 NTT and a small MSM in each group on each device of `be` (the
/// kernels or shaders each op needs): each device's time in milliseconds.
fn warm_up(be: &zkpipe_core::backend::Backend) -> Result<Vec<(u32, f64)>, Error> {
    use zkpipe_core::plugin::{MsmConfig, NttConfig};
    use zkpipe_core::{Fr, G1Affine, G2Affine};
    let mut out = Vec::new();
    for d in be.info().devices.iter() {
        let t = std::time::Instant::now();
        let mut values = vec![Fr::one(); 1 << 12];
        let ntt = NttConfig {
            device: d.id,
            ..Default::default()
        };
        be.ntt(&mut values, &ntt)?;
        let msm = MsmConfig {
            device: d.id,
            ..Default::default()
        };
        be.msm_g1(&[G1Affine::generator(); 64][..], &values[..64], &msm)?;
        be.msm_g2(&[G2Affine::generator(); 64][..], &values[..64], &msm)?;
        out.push((d.id, t.elapsed().as_secs_f64() * 1e3));
    }
    Ok(out)
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
        Self::take_warm(request, false)
    }

    /// [`Inventory::take`], and with `warm` a small NTT on each device of
    /// each backend: whatever a backend compiles or loads on first use
    /// (CUDA kernels for an architecture not embedded, wgpu's shaders) is
    /// then done, and cached where the backend caches it.
    ///
    /// # Errors
    /// As [`Inventory::take`]; a warm-up's failure is the backend's
    /// `error`.
    pub fn take_warm(request: &BackendRequest, warm: bool) -> Result<Inventory, Error> {
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
                    curves: vec![],
                    notes: None,
                    warm_ms: vec![],
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
                        let caps = be.capabilities();
                        r.capabilities = caps
                            .ops
                            .iter()
                            .map(|o| format!("{} (≤ 2^{})", o.op, o.max_log_size))
                            .collect();
                        r.curves = caps
                            .curves()
                            .into_iter()
                            .map(|c| CurveReport {
                                curve: c.name(),
                                ops: caps
                                    .ops
                                    .iter()
                                    .filter(|o| Capabilities::curve_of(&o.op) == c)
                                    .map(|o| {
                                        let bare = o.op.rsplit('.').next().unwrap_or(&o.op);
                                        format!("{bare} (≤ 2^{})", o.max_log_size)
                                    })
                                    .collect(),
                            })
                            .collect();
                        if warm {
                            match warm_up(&be) {
                                Ok(ms) => r.warm_ms = ms,
                                Err(e) => r.error = Some(format!("warm-up: {e}")),
                            }
                        }
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
            if b.curves.is_empty() {
                out.push("  ops: none".to_string());
            }
            for c in &b.curves {
                out.push(format!("  {} ops: {}", c.curve, c.ops.join(", ")));
            }
            for curve in zkpipe_core::Curve::ALL {
                if !b.curves.is_empty() && !b.curves.iter().any(|c| c.curve == curve.name()) {
                    out.push(format!("  {curve}: not served"));
                }
            }
            if let Some(n) = &b.notes {
                out.push(format!("  notes: {n}"));
            }
            for (device, ms) in &b.warm_ms {
                out.push(format!(
                    "  device {device}: warm (first NTT and MSMs {ms:.0} ms)"
                ));
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
