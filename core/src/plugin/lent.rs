//! A plugin's record of the host memory it lent through
//! [`host_alloc`](crate::plugin::Accelerator::host_alloc): which addresses
//! it may free, and whether a caller's slice lies in lent memory (a GPU
//! backend copies such slices straight, without staging).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::plugin::AccelError;

/// Lent blocks by start address, with their sizes in bytes.
#[derive(Debug, Default)]
pub struct LentMemory {
    blocks: Mutex<BTreeMap<usize, usize>>,
}

impl LentMemory {
    /// Records a block of `bytes` at `address`.
    pub fn insert(&self, address: usize, bytes: usize) {
        self.blocks.lock().unwrap().insert(address, bytes);
    }

    /// Forgets the block at `address` and returns its size.
    ///
    /// # Errors
    /// `INVALID_INPUT` when no block starts there (never lent, or freed).
    pub fn remove(&self, address: usize) -> Result<usize, AccelError> {
        self.blocks.lock().unwrap().remove(&address).ok_or_else(|| {
            AccelError::invalid_input(format!(
                "host_free: {address:#x} is not memory this backend lent"
            ))
        })
    }

    /// Whether `bytes` at `address` lie inside one lent block.
    pub fn contains(&self, address: usize, bytes: usize) -> bool {
        let blocks = self.blocks.lock().unwrap();
        blocks
            .range(..=address)
            .next_back()
            .is_some_and(|(&start, &len)| {
                address
                    .checked_add(bytes)
                    .is_some_and(|end| end <= start + len)
            })
    }

    /// Every block, emptied (for freeing them all at teardown).
    pub fn take_all(&self) -> Vec<(usize, usize)> {
        std::mem::take(&mut *self.blocks.lock().unwrap())
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_slices_inside_blocks_only() {
        let m = LentMemory::default();
        m.insert(1000, 100);
        m.insert(2000, 50);
        assert!(m.contains(1000, 100));
        assert!(m.contains(1050, 50));
        assert!(!m.contains(1050, 51)); // runs past the end
        assert!(!m.contains(999, 2));
        assert!(!m.contains(1100, 1)); // between blocks
        assert!(m.contains(2000, 0));
        assert!(!m.contains(usize::MAX, 2));
        assert_eq!(m.remove(1000).unwrap(), 100);
        assert!(!m.contains(1000, 1));
        assert!(m.remove(1000).is_err());
        assert_eq!(m.take_all(), vec![(2000, 50)]);
    }
}
