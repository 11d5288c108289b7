//! A scheduling policy by name: a built-in one, or a policy plugin by path.

use std::path::Path;
use std::sync::Arc;

use zkpipe_core::Error;
use zkpipe_core::sched::{self, Policy, Settings};

/// Whether `name` names a policy plugin's library rather than a built-in
/// policy: a path (it has a `/`) or a file ending in `.so`.
pub fn is_plugin_path(name: &str) -> bool {
    name.contains('/') || name.ends_with(".so")
}

/// The policy `name` (built-in, or a plugin's path; see [`is_plugin_path`])
/// on `base` knobs with `knobs` applied over them.
///
/// # Errors
/// [`Error::InvalidInput`] for an unknown policy or a knob it refuses; the
/// loader's errors for a plugin that cannot be loaded.
pub fn resolve(
    name: &str,
    base: Settings,
    knobs: &[(String, String)],
) -> Result<Arc<dyn Policy>, Error> {
    if is_plugin_path(name) {
        return sched::policy_plugin::load_policy(Path::new(name), &base, knobs);
    }
    sched::builtin(name, Some(base), knobs)
}

/// Knobs from a TOML file (`config`) over the defaults.
///
/// # Errors
/// [`Error::Io`] for a file that cannot be read; [`Error::InvalidInput`]
/// naming the file for a knob it gets wrong.
pub fn settings_from(config: Option<&Path>) -> Result<Settings, Error> {
    let mut s = Settings::default();
    if let Some(path) = config {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        s.merge_toml(&text)
            .map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_plugins_and_bare_names_built_in_policies() {
        assert!(is_plugin_path("./libzkpipe_policy_x.so"));
        assert!(is_plugin_path("plugins/x"));
        assert!(is_plugin_path("libzkpipe_policy_x.so"));
        assert!(!is_plugin_path("adaptive"));
        assert!(!is_plugin_path("pipelined"));
    }

    #[test]
    fn a_built_in_policy_takes_the_base_and_the_knobs_over_it() {
        let base = Settings {
            partition_workers: 3,
            ..Settings::default()
        };
        let p = resolve("pipelined", base, &[("lookahead".into(), "5".into())]).unwrap();
        assert_eq!(p.settings().lookahead, 5);
        assert!(matches!(
            resolve("no-such-policy", Settings::default(), &[]),
            Err(Error::InvalidInput(_))
        ));
        assert!(resolve("/no/such/libzkpipe_policy.so", Settings::default(), &[]).is_err());
    }

    #[test]
    fn a_knob_file_is_read_and_its_mistakes_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.toml");
        std::fs::write(&good, "lookahead = 7\n").unwrap();
        assert_eq!(settings_from(Some(&good)).unwrap().lookahead, 7);
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "no_such_knob = 1\n").unwrap();
        match settings_from(Some(&bad)) {
            Err(Error::InvalidInput(why)) => assert!(why.contains("bad.toml"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            settings_from(Some(&dir.path().join("missing.toml"))),
            Err(Error::Io { .. })
        ));
    }
}
