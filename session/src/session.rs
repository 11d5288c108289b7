//! A session: the plugins found, the backend chosen and the device it
//! proves on, and the one place where a prover is built from them.

use std::path::PathBuf;
use std::sync::Arc;

use zkpipe_core::backend::loader::{LoadFailure, Registry, SearchPath};
use zkpipe_core::groth16::{Parameters, Prover, ProverBuilder};
use zkpipe_core::plugin::{BackendConfig, KeyValue};
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::util::progress::Progress;
use zkpipe_core::{Backend, Error};

/// Which backend proves, and how plugins are found and configured.
#[derive(Debug, Clone, Default)]
pub struct BackendRequest {
    /// Backend name (`cpu`, `cuda`, `wgpu`, or a plugin's).
    pub name: String,
    /// Device of the backend.
    pub device: u32,
    /// Folder searched first for plugins (then `$ZKPIPE_PLUGIN_PATH`, the
    /// executable's folder and its `plugins/`).
    pub plugin_dir: Option<PathBuf>,
    /// Host threads for the backend (default: all cores).
    pub threads: Option<u32>,
    /// Backend-only settings, `key = value`.
    pub settings: Vec<(String, String)>,
}

/// The backends on the standard search path (`plugin_dir` first), and the
/// CPU backend built into the program where no `cpu` plugin loaded.
pub fn registry(plugin_dir: Option<&std::path::Path>) -> Registry {
    let mut registry = Registry::load(&SearchPath::standard(plugin_dir));
    registry.add_builtin(zkpipe_backend_cpu::zkpipe_backend_root_module());
    registry
}

impl BackendRequest {
    /// The named backend on device 0, plugins where they are usually found.
    pub fn named(name: &str) -> Self {
        BackendRequest {
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// The plugins on this request's search path, and the built-in CPU
    /// backend ([`registry`]).
    pub fn registry(&self) -> Registry {
        registry(self.plugin_dir.as_deref())
    }

    /// Loads the plugins and creates the backend (its device unchecked);
    /// libraries that failed to load are told to `progress` and skipped.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn create(&self, progress: &dyn Progress) -> Result<(Registry, Backend), Error> {
        let registry = self.registry();
        warn_failures(&registry.failures, progress);
        let backend = registry.create(&self.name, &self.config()?)?;
        Ok((registry, backend))
    }

    /// The backend settings of the request.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a thread count this machine cannot use.
    pub fn config(&self) -> Result<BackendConfig, Error> {
        if let Some(t) = self.threads {
            zkpipe_core::util::machine::check_threads(t)?;
        }
        Ok(BackendConfig {
            threads: self.threads.into(),
            ext: self
                .settings
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.as_str().into(),
                    value: v.as_str().into(),
                })
                .collect(),
        })
    }
}

/// What a prover is built with beyond its key.
#[derive(Debug, Clone, Copy)]
pub struct ProverOptions {
    /// SpMV on the host even where the device could run it (comparisons;
    /// see [`ProverBuilder::device_spmv`]).
    pub host_spmv: bool,
    /// A proof's MSMs side by side on a device with room for them.
    pub msms_side_by_side: bool,
}

impl Default for ProverOptions {
    fn default() -> Self {
        ProverOptions {
            host_spmv: false,
            msms_side_by_side: true,
        }
    }
}

/// The backend a request named, the plugins it came from (the CPU
/// reference among them: ops a device lacks fall back to it), and where
/// notes go.
pub struct Session {
    request: BackendRequest,
    registry: Registry,
    backend: Arc<Backend>,
    progress: Arc<dyn Progress + Send>,
    /// How long loading the plugins and opening the backend took.
    opened_in: std::time::Duration,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("backend", &self.request.name)
            .field("device", &self.request.device)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Loads the plugins and creates the backend; checks its device exists.
    /// Libraries that failed to load are told to `progress` and skipped.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for settings the backend or machine refuses;
    /// [`Error::UnknownBackend`]-style errors of [`Registry::create`] for a
    /// backend no plugin provides; the backend's error for a device it lacks.
    pub fn open(
        request: &BackendRequest,
        progress: Arc<dyn Progress + Send>,
    ) -> Result<Self, Error> {
        let started = std::time::Instant::now();
        let (registry, backend) = request.create(&*progress)?;
        backend.device_info(request.device)?;
        let backend = Arc::new(backend);
        Ok(Session {
            request: request.clone(),
            registry,
            backend,
            progress,
            opened_in: started.elapsed(),
        })
    }

    /// How long loading the plugins and opening the backend took (a GPU's
    /// driver and kernels: part of a one-shot command's time).
    pub fn opened_in(&self) -> std::time::Duration {
        self.opened_in
    }

    /// The backend proofs run on.
    pub fn backend(&self) -> &Arc<Backend> {
        &self.backend
    }

    /// The device of the backend.
    pub fn device(&self) -> u32 {
        self.request.device
    }

    /// The plugins found.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Where notes and progress go.
    pub fn progress(&self) -> &dyn Progress {
        &*self.progress
    }

    /// The backend `name`, made without this request's backend-only
    /// settings (they belong to the backend under test, and a reference
    /// would refuse settings it does not know).
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn reference(&self, name: &str) -> Result<Backend, Error> {
        let config = BackendConfig {
            ext: Default::default(),
            ..self.request.config()?
        };
        self.registry.create(name, &config)
    }

    /// A prover of `params` and `r1cs` on this session's device, with the
    /// CPU reference for what the device lacks; the ops that moved are told
    /// to the session's progress.
    ///
    /// # Errors
    /// As [`ProverBuilder::build`].
    pub fn prover(
        &self,
        params: Arc<Parameters>,
        r1cs: Arc<R1cs>,
        options: ProverOptions,
    ) -> Result<Prover, Error> {
        let prover = build_prover(
            &self.backend,
            &self.registry,
            self.request.device,
            options,
            params,
            r1cs,
        )?;
        if let Some(note) = prover.fallback_note() {
            self.progress.note(&format!("note: {note}"));
        }
        Ok(prover)
    }
}

/// The one way a prover is built: `backend`'s `device`, the CPU reference
/// of `registry` for what the device lacks. For callers that hold their
/// own backend per device (the daemon); others use [`Session::prover`].
///
/// # Errors
/// As [`ProverBuilder::build`].
pub fn build_prover(
    backend: &Arc<Backend>,
    registry: &Registry,
    device: u32,
    options: ProverOptions,
    params: Arc<Parameters>,
    r1cs: Arc<R1cs>,
) -> Result<Prover, Error> {
    let mut builder = ProverBuilder::new(backend.clone())
        .device(device)
        .cpu_fallback(registry)
        .msms_side_by_side(options.msms_side_by_side);
    if options.host_spmv {
        builder = builder.device_spmv(false);
    }
    builder.build(params, r1cs)
}

fn warn_failures(failures: &[LoadFailure], progress: &dyn Progress) {
    for f in failures {
        progress.note(&format!(
            "warning: skipped {}: {}",
            f.path.display(),
            f.reason
        ));
    }
}
