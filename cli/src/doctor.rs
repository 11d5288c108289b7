//! `zkpipe backends`: what was searched, what loaded, what failed and why.

use serde::Serialize;
use zkpipe_core::Error;
use zkpipe_core::plugin::{ABI_VERSION, DeviceKind};

use crate::plugin_args::PluginArgs;

#[derive(Serialize)]
struct Report {
    abi_version: u32,
    searched: Vec<String>,
    backends: Vec<BackendReport>,
    failures: Vec<FailureReport>,
}

#[derive(Serialize)]
struct BackendReport {
    name: String,
    path: String,
    version: Option<String>,
    devices: Vec<DeviceReport>,
    capabilities: Vec<String>,
    notes: Option<String>,
    /// Set when the plugin loaded but refused to create an instance.
    error: Option<String>,
}

#[derive(Serialize)]
struct DeviceReport {
    id: u32,
    name: String,
    kind: &'static str,
    memory_bytes: u64,
    compute_units: u32,
}

#[derive(Serialize)]
struct FailureReport {
    path: String,
    reason: String,
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

pub fn run(args: &PluginArgs, json: bool) -> Result<(), Error> {
    let request = args.request("", 0);
    let registry = request.registry();
    let config = request.config()?;
    let backends = registry
        .plugins
        .iter()
        .map(|p| {
            let mut r = BackendReport {
                name: p.name.clone(),
                path: p.path.display().to_string(),
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
    let report = Report {
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
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    } else {
        print_text(&report);
    }
    Ok(())
}

fn print_text(r: &Report) {
    println!("plugin ABI {}; search path, in order:", r.abi_version);
    for d in &r.searched {
        println!("  {d}");
    }
    if r.backends.is_empty() {
        println!("\nno backends loaded");
    }
    for b in &r.backends {
        println!(
            "\n{} {} — {}",
            b.name,
            b.version.as_deref().unwrap_or("?"),
            b.path
        );
        if let Some(e) = &b.error {
            println!("  unavailable: {e}");
            continue;
        }
        if b.devices.is_empty() {
            println!("  no devices");
        }
        for d in &b.devices {
            println!(
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
            );
        }
        println!(
            "  ops: {}",
            if b.capabilities.is_empty() {
                "none".into()
            } else {
                b.capabilities.join(", ")
            }
        );
        if let Some(n) = &b.notes {
            println!("  notes: {n}");
        }
    }
    if !r.failures.is_empty() {
        println!("\nfailed to load:");
        for f in &r.failures {
            println!("  {}", f.path);
            for line in f.reason.lines() {
                println!("    {line}");
            }
        }
    }
}
