//! The flags that say where plugins are found and how a backend is
//! configured, and the backends made from them.

use clap::Args;
use std::path::PathBuf;
use zkpipe_core::{Backend, Error};
use zkpipe_session::{BackendRequest, Session};

/// Where plugins are found and how backends are configured: flattened into
/// the commands that load a backend, so the others' help does not list them.
#[derive(Args, Debug, Clone, Default)]
pub struct PluginArgs {
    /// Folder searched first for libzkpipe_backend_*.so (then $ZKPIPE_PLUGIN_PATH,
    /// the executable's folder, its plugins/ subfolder and ../lib/zkpipe).
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

    /// The session request of these flags for backend `name`'s `device`.
    pub fn request(&self, name: &str, device: u32) -> BackendRequest {
        BackendRequest {
            name: name.to_string(),
            device,
            plugin_dir: self.plugin_dir.clone(),
            threads: self.threads,
            settings: self.settings.clone(),
        }
    }

    /// Loads plugins and opens a session on backend `name`'s `device`;
    /// notes go to stderr.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn session(&self, name: &str, device: u32) -> Result<Session, Error> {
        Session::open(
            &self.request(name, device),
            std::sync::Arc::new(crate::progress::CliProgress::new()),
        )
    }

    /// Loads plugins and creates the named backend (no device checked).
    pub fn backend(&self, name: &str) -> Result<Backend, Error> {
        let (_, backend) = self
            .request(name, 0)
            .create(&crate::progress::CliProgress::new())?;
        Ok(backend)
    }
}
