//! Keys kept resident for jobs: loaded when a job (or a preload) needs
//! one, evicted on request; partitions get what resident keys leave of
//! the host budget.

use std::sync::Arc;

use zkpipe_core::Error;
use zkpipe_core::util::progress::Lines;

use super::Daemon;
use crate::keys::{KeyId, LoadedKey};

/// A key load's progress: lines in the log (quiet for short phases), and
/// the phase under way for `Status`.
pub type KeyProgress = Lines<Box<dyn Fn(&str) + Send + Sync>>;

impl Daemon {
    /// Partitions get what resident keys leave of the host budget.
    pub(super) fn update_budget(&self) {
        let keys = self.keys.resident_bytes();
        self.engine
            .set_budget_bytes(self.host_budget.saturating_sub(keys));
    }

    /// The key with one more user, loaded now if it is not (off the async
    /// threads: loading may set up keys), with its metrics and the budget
    /// it leaves partitions updated.
    pub(super) async fn acquire_key(self: &Arc<Self>, id: KeyId) -> Result<Arc<LoadedKey>, Error> {
        let me = self.clone();
        let shown = id.to_string();
        let progress: Arc<KeyProgress> = Arc::new(Lines::new(Box::new(
            move |line: &str| tracing::info!(key = %shown, "{line}"),
        )));
        self.loading
            .lock()
            .unwrap()
            .push((id.clone(), progress.clone()));
        let mine = progress.clone();
        let loaded = tokio::task::spawn_blocking(move || me.keys.acquire(&id, &*mine)).await;
        self.loading
            .lock()
            .unwrap()
            .retain(|(_, p)| !Arc::ptr_eq(p, &progress));
        let (key, report) =
            loaded.unwrap_or_else(|e| Err(Error::Failed(format!("key load task: {e}"))))?;
        if report.loaded {
            self.metrics.key_loads.inc();
            self.metrics
                .key_load_seconds
                .with_label_values(&[&key.id.circuit])
                .observe(key.load_s);
            tracing::info!(key = %key.id, load_s = key.load_s, "key loaded");
        }
        for k in &report.evicted {
            self.metrics.key_evictions.inc();
            tracing::info!(key = %k, "key evicted to make room");
        }
        self.update_budget();
        Ok(key)
    }

    /// Makes Filecoin parameter set `set` loadable by jobs and preloads.
    pub fn register_filecoin(&self, set: &zkpipe_filecoin::params::ParamSet) -> KeyId {
        self.keys.register_filecoin(set)
    }

    /// Loads keys ahead of jobs.
    pub async fn preload(self: &Arc<Self>, ids: Vec<KeyId>) -> Vec<(KeyId, Result<(), Error>)> {
        let mut out = vec![];
        for id in ids {
            let r = match self.keys.admit(&id) {
                Err(why) => Err(Error::InvalidInput(why)),
                Ok(()) => self
                    .acquire_key(id.clone())
                    .await
                    .map(|key| self.keys.release(&key.id)),
            };
            out.push((id, r));
        }
        out
    }

    /// The keys loaded now.
    pub fn resident_keys(&self) -> Vec<KeyId> {
        self.keys.list().into_iter().map(|k| k.id).collect()
    }

    /// Evicts keys no job uses.
    pub fn evict(&self, ids: Vec<KeyId>) -> Vec<(KeyId, Result<(), Error>)> {
        let out = ids
            .into_iter()
            .map(|id| {
                let r = match self.keys.evict(&id) {
                    Ok(true) => {
                        self.metrics.key_evictions.inc();
                        Ok(())
                    }
                    Ok(false) => Err(Error::InvalidInput(format!("key {id} is not loaded"))),
                    Err(e) => Err(e),
                };
                (id, r)
            })
            .collect();
        self.update_budget();
        out
    }
}
