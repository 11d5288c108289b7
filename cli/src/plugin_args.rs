//! The flags that say where plugins are found and how a backend is
//! configured, and the backends made from them.

use clap::Args;
use std::path::PathBuf;
use zkpipe_core::loader::{Registry, SearchPath};
use zkpipe_core::plugin::{BackendConfig, KeyValue};
use zkpipe_core::{Backend, Error};

/// Where plugins are found and how backends are configured: flattened into
/// the commands that load a backend, so the others' help does not list them.
#[derive(Args, Debug, Clone, Default)]
pub struct PluginArgs {
    /// Folder searched first for libzkpipe_backend_*.so (then $ZKPIPE_PLUGIN_PATH,
    /// the executable's folder and its plugins/ subfolder).
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
    /// Host threads for the backend (default: all cores; at most 8 per core).
    #[arg(long, value_name = "N")]
    threads: Option<u32>,
    /// Backend-only setting, repeatable (e.g. --backend-opt window_bits=16).
    #[arg(long = "backend-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    settings: Vec<(String, String)>,
}

pub fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got `{s}`")),
    }
}

impl PluginArgs {
    /// These flags with `later`'s on top (the command's over the top level's).
    pub fn with(&self, later: &PluginArgs) -> PluginArgs {
        PluginArgs {
            plugin_dir: later.plugin_dir.clone().or_else(|| self.plugin_dir.clone()),
            threads: later.threads.or(self.threads),
            settings: self
                .settings
                .iter()
                .chain(&later.settings)
                .cloned()
                .collect(),
        }
    }

    /// The folder given with --plugin-dir.
    pub fn plugin_dir(&self) -> Option<&std::path::Path> {
        self.plugin_dir.as_deref()
    }

    /// The --threads given.
    pub fn threads(&self) -> Option<u32> {
        self.threads
    }

    /// The --backend-opt settings, as `key=value`.
    pub fn settings(&self) -> Vec<String> {
        self.settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }

    pub fn registry(&self) -> Registry {
        Registry::load(&SearchPath::standard(self.plugin_dir.as_deref()))
    }

    /// The backend settings of the flags.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a thread count this machine cannot use.
    pub fn config(&self) -> Result<BackendConfig, Error> {
        if let Some(t) = self.threads {
            zkpipe_core::machine::check_threads(t)?;
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

    /// Loads plugins and creates the named backend.
    pub fn backend(&self, name: &str) -> Result<Backend, Error> {
        self.backend_with(name, &self.config()?)
    }

    /// As [`PluginArgs::backend`] for the backend a result is checked
    /// against: the `--backend-opt` settings belong to the backend under
    /// test (the reference would reject settings it does not know).
    pub fn reference_backend(&self, name: &str) -> Result<Backend, Error> {
        let config = BackendConfig {
            ext: Default::default(),
            ..self.config()?
        };
        self.backend_with(name, &config)
    }

    pub fn backend_with(&self, name: &str, config: &BackendConfig) -> Result<Backend, Error> {
        let registry = self.registry();
        for f in &registry.failures {
            eprintln!("warning: skipped {}: {}", f.path.display(), f.reason);
        }
        registry.create(name, config)
    }
}
