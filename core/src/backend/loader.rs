//! Finds backend libraries and loads them.
//!
//! Search order: an explicit plugin folder (`--plugin-dir`), then each folder
//! of `$ZKPIPE_PLUGIN_PATH` (colon-separated), then the running executable's
//! folder, its `plugins/` subfolder and `../lib/zkpipe` (the installed
//! layout: `PREFIX/bin/zkpipe`, `PREFIX/lib/zkpipe/`). Files named
//! `libzkpipe_backend_*.so` are tried; one that fails (not a plugin, another ABI version, init error)
//! is recorded with its reason and skipped. Libraries are never unloaded.
//! A program may add backends compiled into it ([`Registry::add_builtin`]):
//! the CLI and the daemon carry the CPU backend, so a binary alone proves.

use abi_stable::library::lib_header_from_path;
use abi_stable::std_types::RResult;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::backend::Backend;
use crate::plugin::{ABI_VERSION, BackendConfig, BackendModRef};

pub mod elf;

/// Environment variable with extra plugin folders, colon-separated.
pub const PLUGIN_PATH_ENV: &str = "ZKPIPE_PLUGIN_PATH";
/// File name prefix of backend libraries.
pub const LIB_PREFIX: &str = "libzkpipe_backend_";

/// Folders to search, in order.
#[derive(Debug, Clone, Default)]
pub struct SearchPath {
    /// The folders, first match of a name wins.
    pub dirs: Vec<PathBuf>,
}

impl SearchPath {
    /// The standard order: `plugin_dir`, `$ZKPIPE_PLUGIN_PATH`, the executable's
    /// folder, its `plugins/` and the installed layout's `../lib/zkpipe`.
    pub fn standard(plugin_dir: Option<&Path>) -> Self {
        let mut dirs = Vec::new();
        dirs.extend(plugin_dir.map(Path::to_path_buf));
        if let Some(env) = std::env::var_os(PLUGIN_PATH_ENV) {
            dirs.extend(std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()));
        }
        if let Some(exe_dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            let installed = exe_dir.parent().map(|p| p.join("lib").join("zkpipe"));
            dirs.push(exe_dir.join("plugins"));
            dirs.insert(dirs.len() - 1, exe_dir);
            dirs.extend(installed);
        }
        SearchPath { dirs }
    }

    /// Only the given folders.
    pub fn only(dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        SearchPath {
            dirs: dirs.into_iter().collect(),
        }
    }
}

/// A library that loaded, or a backend built into the program: a backend
/// factory.
pub struct Plugin {
    /// Registry name.
    pub name: String,
    /// Where it was loaded from (a built-in: the running program).
    pub path: PathBuf,
    /// Compiled into the program rather than loaded from a library.
    pub builtin: bool,
    module: BackendModRef,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("builtin", &self.builtin)
            .finish()
    }
}

impl Plugin {
    /// Creates a backend instance.
    ///
    /// # Errors
    /// [`Error::Backend`] when the plugin's `new` fails (bad config, no device, …).
    pub fn create(&self, config: &BackendConfig) -> Result<Backend, Error> {
        match (self.module.new())(config) {
            RResult::ROk(inner) => Ok(Backend::new(self.name.clone(), inner)),
            RResult::RErr(source) => Err(Error::Backend {
                backend: self.name.clone(),
                source,
            }),
        }
    }
}

/// A library that was found but not loaded, and why.
#[derive(Debug, Clone)]
pub struct LoadFailure {
    /// The library file.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
}

/// Every backend found on a search path.
#[derive(Debug, Default)]
pub struct Registry {
    /// Folders searched, in order (including ones that do not exist).
    pub searched: Vec<PathBuf>,
    /// Loaded plugins, in search order.
    pub plugins: Vec<Plugin>,
    /// Libraries skipped, with reasons.
    pub failures: Vec<LoadFailure>,
}

impl Registry {
    /// Loads every `libzkpipe_backend_*.so` on the search path. Never fails:
    /// problems are recorded in [`Registry::failures`].
    pub fn load(search: &SearchPath) -> Registry {
        let mut reg = Registry {
            searched: search.dirs.clone(),
            ..Default::default()
        };
        let mut seen_files = HashSet::new();
        for dir in &search.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            // Chosen by name only: a directory or dangling link named like a
            // plugin is reported below rather than silently skipped.
            let mut files: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| has_backend_file_name(p))
                .collect();
            files.sort();
            for path in files {
                // The same file reached through two folders (or a symlink) loads once.
                let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
                if !seen_files.insert(canonical) {
                    continue;
                }
                match load_one(&path) {
                    Ok((name, module)) => {
                        if let Some(first) = reg.plugins.iter().find(|p| p.name == name) {
                            let reason = format!(
                                "duplicate backend name `{name}` (already loaded from {})",
                                first.path.display()
                            );
                            reg.failures.push(LoadFailure { path, reason });
                        } else {
                            let builtin = false;
                            reg.plugins.push(Plugin {
                                name,
                                path,
                                builtin,
                                module,
                            });
                        }
                    }
                    Err(reason) => reg.failures.push(LoadFailure { path, reason }),
                }
            }
        }
        reg
    }

    /// Adds a backend compiled into the program (the same seam as a
    /// plugin's, called in-process) under its own name, unless a library of
    /// that name loaded: one on the search path replaces it.
    ///
    /// # Panics
    /// When `module` speaks another ABI than this host: a build error.
    pub fn add_builtin(&mut self, module: BackendModRef) {
        assert_eq!(
            (module.abi_version())(),
            ABI_VERSION,
            "built-in backend ABI"
        );
        let name = (module.name())().to_string();
        if self.get(&name).is_none() {
            self.plugins.push(Plugin {
                name,
                path: std::env::current_exe().unwrap_or_default(),
                builtin: true,
                module,
            });
        }
    }

    /// The plugin with this name.
    pub fn get(&self, name: &str) -> Option<&Plugin> {
        self.plugins.iter().find(|p| p.name == name)
    }

    /// Creates an instance of the named backend.
    ///
    /// # Errors
    /// [`Error::UnknownBackend`] (naming what loaded and what was searched), or
    /// the plugin's own creation error.
    pub fn create(&self, name: &str, config: &BackendConfig) -> Result<Backend, Error> {
        match self.get(name) {
            Some(p) => p.create(config),
            None => Err(Error::UnknownBackend {
                name: name.to_string(),
                loaded: self.plugins.iter().map(|p| p.name.clone()).collect(),
                searched: self.searched.clone(),
            }),
        }
    }
}

fn has_backend_file_name(p: &Path) -> bool {
    let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.starts_with(LIB_PREFIX) && name.ends_with(std::env::consts::DLL_SUFFIX)
}

/// Checks one file, opens it and checks it is a zkpipe backend of our ABI.
fn load_one(path: &Path) -> Result<(String, BackendModRef), String> {
    elf::check_shared_object(path)?;
    let header = lib_header_from_path(path).map_err(|e| match e {
        abi_stable::library::LibraryError::GetSymbolError { .. } => {
            "not a zkpipe plugin (no abi_stable root module exported)".to_string()
        }
        other => first_lines(&other.to_string()),
    })?;
    let module = header.init_root_module::<BackendModRef>().map_err(|e| {
        format!(
            "incompatible plugin interface: {}",
            first_lines(&e.to_string())
        )
    })?;
    let abi = (module.abi_version())();
    if abi != ABI_VERSION {
        return Err(format!(
            "built for zkpipe plugin ABI {abi}, this host speaks ABI {ABI_VERSION}; rebuild the plugin"
        ));
    }
    Ok(((module.name())().to_string(), module))
}

/// abi_stable's layout errors can run to pages; keep the head for reports.
fn first_lines(s: &str) -> String {
    const MAX: usize = 12;
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() <= MAX {
        lines.join("\n")
    } else {
        format!(
            "{}\n… ({} more lines)",
            lines[..MAX].join("\n"),
            lines.len() - MAX
        )
    }
}
