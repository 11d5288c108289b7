//! The daemon's state and its operations, independent of gRPC: jobs from
//! submission to verified result, keys loaded and evicted, the engine that
//! runs partitions, device health, the recent timeline and the metrics.
//!
//! This file holds the [`Daemon`] itself and its start; each of its other
//! concerns has a file of its own, with an `impl Daemon` that reaches the
//! fields directly (they are private to this module and its children):
//!
//! - `request`: what a job asks for, and why one is refused.
//! - `table`: the jobs the daemon knows, their ids and queue positions.
//! - `runner`: a job from submission to its recorded result; cancel.
//! - `residency`: keys loaded for jobs or ahead of them, and evicted.
//! - `status`: the `Status` reply and the Prometheus text.
//! - `timeline`: the engine's spans, moved into the load, the metrics and
//!   the recent timeline.
//! - `drain`: stopping: no new jobs, the rest counted and cancelled.
//! - `labels`: the words for priorities and job states.

mod drain;
mod labels;
mod request;
mod residency;
mod runner;
mod status;
mod table;
mod timeline;

pub use labels::{priority_from_label, priority_label, state_label};
pub use request::{CircomWitnesses, FilecoinInputs, JobInputs, MAX_PARTITIONS, NewJob, Refusal};

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use zkpipe_core::plugin::{BackendConfig, KeyValue};
use zkpipe_core::sched::groth16_workload::Groth16Workload;
use zkpipe_core::sched::{DeviceLock, Engine, Policy, Settings};
use zkpipe_core::{Backend, Error};

use crate::config::Config;
use crate::keys::KeyCache;
use crate::load::Load;
use crate::metrics::Metrics;
use crate::source::{SpecSource, Specs};

use table::Table;
use timeline::Recent;

/// Health of one device the daemon uses.
#[derive(Clone, Debug, Default)]
struct Health {
    verify_failures: u64,
}

/// The daemon.
pub struct Daemon {
    config: Config,
    started: Instant,
    backend: Arc<Backend>,
    cpu_reference: Arc<Backend>,
    devices: Vec<u32>,
    policy_name: String,
    host_budget: u64,
    engine: Engine<Groth16Workload>,
    /// Taken just before the engine started: the engine's clock, give or
    /// take the milliseconds its start took.
    engine_epoch: Instant,
    /// What bounds the daemon, from the spans [`Daemon::tick`] moves.
    load: Mutex<Load>,
    keys: KeyCache,
    /// Keys being loaded, with the progress their loads report.
    loading: Mutex<Vec<(crate::keys::KeyId, Arc<residency::KeyProgress>)>>,
    specs: Arc<Specs>,
    table: Mutex<Table>,
    health: Mutex<Vec<Health>>,
    recent: Mutex<Recent>,
    /// One [`Daemon::tick`] at a time: a job's own tick then waits for one
    /// that took its spans, so its stage times are complete when it ends.
    ticking: Mutex<()>,
    draining: AtomicBool,
    /// Metrics, for the `Metrics` call and `/metrics`.
    pub metrics: Metrics,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

/// `key=value` items as pairs; an item without `=` is skipped.
fn key_values(items: &[String]) -> Vec<(String, String)> {
    items
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Daemon {
    /// Loads the backend and policy the config names and starts the engine.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an unknown backend, device or policy, or
    /// bad knobs; [`Error::NoDevice`]; backend errors.
    pub fn start(config: Config) -> Result<Arc<Daemon>, Error> {
        config.validate()?;
        let plugin_dir = (!config.devices.plugin_dir.is_empty())
            .then(|| std::path::PathBuf::from(&config.devices.plugin_dir));
        let registry = Arc::new(zkpipe_session::registry(plugin_dir.as_deref()));
        for f in &registry.failures {
            tracing::warn!(path = %f.path.display(), reason = %f.reason, "skipped a plugin");
        }
        let ext = key_values(&config.devices.backend_opts)
            .into_iter()
            .map(|(k, v)| KeyValue {
                key: k.as_str().into(),
                value: v.as_str().into(),
            })
            .collect();
        let backend = Arc::new(
            registry.create(
                &config.devices.backend,
                &BackendConfig {
                    threads: (config.devices.threads > 0)
                        .then_some(config.devices.threads as u32)
                        .into(),
                    ext,
                },
            )?,
        );
        let available = backend.info().devices.len() as u32;
        let devices: Vec<u32> = if config.devices.devices.is_empty() {
            (0..available).collect()
        } else {
            config.devices.devices.clone()
        };
        if devices.is_empty() {
            return Err(Error::NoDevice {
                backend: backend.name().to_string(),
                device: 0,
                reason: "the backend reports no device".into(),
            });
        }
        for &d in &devices {
            if d >= available {
                return Err(Error::InvalidInput(format!(
                    "devices.devices: backend {} has {available} device(s), numbered from 0; there is no device {d}",
                    backend.name()
                )));
            }
        }
        let gpu_threads = match config.devices.gpu_threads {
            0 => zkpipe_core::util::machine::cores(),
            t => t,
        };
        let host_budget = match config.host_budget() {
            0 => zkpipe_core::util::machine::available_memory_bytes().unwrap_or(8 << 30) / 10 * 8,
            b => b,
        };
        let base = Settings {
            gpu_workers_per_device: config.devices.gpu_workers_per_device,
            gpu_threads,
            memory_budget: host_budget,
            device_memory_budget: config.device_budget(),
            ..Settings::default()
        };
        let knobs = key_values(&config.scheduler.knobs);
        let name = &config.scheduler.policy;
        let policy: Arc<dyn Policy> = zkpipe_session::policy::resolve(name, base, &knobs)?;
        // The builtin presets raise worker counts; the config's own word wins.
        let settings = policy.settings().clone();
        let cpu = Arc::new(registry.create(
            "cpu",
            &BackendConfig {
                threads: Some(settings.gpu_threads as u32).into(),
                ext: Default::default(),
            },
        )?);
        let cpu_reference = Arc::new(registry.create("cpu", &BackendConfig::default())?);
        let specs = Arc::new(Specs::new()?);
        let workload =
            Groth16Workload::with_source(Box::new(SpecSource(specs.clone())), devices.len(), cpu);
        let policy_name = policy.name().to_string();
        let engine_epoch = Instant::now();
        let engine = Engine::new(workload, policy)?;
        let load = Load::new(
            devices.len(),
            zkpipe_core::util::machine::cores(),
            engine.settings().spmv_threads,
        );
        let keys_dir = if config.keys.dir.is_empty() {
            zkpipe_core::util::cache::default_dir()
        } else {
            std::path::PathBuf::from(&config.keys.dir)
        };
        let circom_dir = (!config.keys.circom_dir.is_empty())
            .then(|| std::path::PathBuf::from(&config.keys.circom_dir));
        let keys = KeyCache::new(
            keys_dir,
            circom_dir,
            registry.clone(),
            backend.clone(),
            devices.clone(),
            settings.device_lock == DeviceLock::Partition,
            config.keys.synthetic,
            host_budget,
        );
        let daemon = Arc::new(Daemon {
            started: Instant::now(),
            health: Mutex::new(vec![Health::default(); devices.len()]),
            backend,
            cpu_reference,
            devices,
            policy_name,
            host_budget,
            engine,
            engine_epoch,
            load: Mutex::new(load),
            keys,
            specs,
            table: Mutex::new(Table::default()),
            recent: Mutex::new(Recent::default()),
            loading: Mutex::new(Vec::new()),
            ticking: Mutex::new(()),
            draining: AtomicBool::new(false),
            metrics: Metrics::new(),
            config,
        });
        daemon.update_budget();
        Ok(daemon)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }
}
