//! What a backend keeps for its caller behind handles (resident bases,
//! R1CS matrices): one table type for every backend, so each refuses an
//! unknown handle the same way and none reuses a number.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{AccelError, HandleMint};

/// Objects kept behind handles. Each is shared ([`Arc`]): a call that looked
/// one up keeps it alive while another call drops the handle.
#[derive(Debug)]
pub struct Handles<T> {
    /// What the table holds, as errors name it (`bases`, `r1cs`).
    what: &'static str,
    /// Each table mints its own numbers (a random tag per table): a handle
    /// of another table, kind or backend is unknown here, not mistaken
    /// for a live one.
    mint: HandleMint,
    map: Mutex<HashMap<u64, Arc<T>>>,
}

impl<T> Handles<T> {
    /// An empty table of `what` (`bases`, `r1cs`: the word in errors).
    pub fn new(what: &'static str) -> Self {
        Handles {
            what,
            mint: HandleMint::default(),
            map: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps `value`; returns its handle.
    pub fn insert(&self, value: T) -> u64 {
        let id = self.mint.next();
        self.lock().insert(id, Arc::new(value));
        id
    }

    /// The object behind `id`.
    ///
    /// # Errors
    /// `INVALID_INPUT` naming the handle when it is not in this table.
    pub fn get(&self, id: u64) -> Result<Arc<T>, AccelError> {
        self.lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| self.unknown(id))
    }

    /// Forgets `id` (the object goes when no call holds it).
    ///
    /// # Errors
    /// As [`Handles::get`].
    pub fn remove(&self, id: u64) -> Result<(), AccelError> {
        self.lock()
            .remove(&id)
            .map(drop)
            .ok_or_else(|| self.unknown(id))
    }

    /// Every object kept now (for notes and memory accounting).
    pub fn values(&self) -> Vec<Arc<T>> {
        self.lock().values().cloned().collect()
    }

    fn unknown(&self, id: u64) -> AccelError {
        AccelError::invalid_input(format!(
            "unknown {} handle {id:#x} (dropped, or of another backend)",
            self.what
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<T>>> {
        // A panic elsewhere under this lock leaves the map whole: insert
        // and remove are single calls.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_unique_across_tables_and_unknown_ones_are_refused() {
        let (bases, r1cs) = (Handles::new("bases"), Handles::new("r1cs"));
        let b = bases.insert(1u32);
        let r = r1cs.insert(2u32);
        assert_ne!(b, r);
        assert_eq!(*bases.get(b).unwrap(), 1);
        let e = bases.get(r).unwrap_err();
        assert!(
            e.message.contains(&format!("unknown bases handle {r:#x}")),
            "{e:?}"
        );
        let held = r1cs.get(r).unwrap();
        r1cs.remove(r).unwrap();
        assert_eq!(*held, 2, "a holder keeps a dropped object");
        assert!(r1cs.remove(r).is_err() && r1cs.values().is_empty());
    }
}
