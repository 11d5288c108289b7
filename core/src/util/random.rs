//! Randomness from the operating system, for what must not be guessable:
//! a proof's blinding factors `r, s` (its zero knowledge rests on them).

use std::io::Read;

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::{Error, Fr};

/// `N` bytes from `/dev/urandom`.
///
/// # Errors
/// [`Error::Failed`] when it cannot be read.
pub fn os_bytes<const N: usize>() -> Result<[u8; N], Error> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::Failed(format!("reading /dev/urandom: {e}")))?;
    Ok(b)
}

/// A ChaCha20 stream seeded with 256 bits from the operating system.
///
/// # Errors
/// As [`os_bytes`].
pub fn os_rng() -> Result<ChaCha20Rng, Error> {
    Ok(ChaCha20Rng::from_seed(os_bytes()?))
}

/// `(r, s)` for one proof: from `seed` (reproducible proofs, for tests and
/// byte comparisons with other provers), else from the operating system.
///
/// # Errors
/// As [`os_bytes`].
pub fn blinding(seed: Option<u64>) -> Result<(Fr, Fr), Error> {
    let mut rng = match seed {
        Some(s) => crate::util::sample::rng(s),
        None => os_rng()?,
    };
    Ok((Fr::random(&mut rng), Fr::random(&mut rng)))
}

/// Where a proof's `(r, s)` come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Blinding {
    /// Fresh from the OS (what a proof needs).
    #[default]
    Random,
    /// From a seed, partition `k` from `seed + k` (reproducible: tests and
    /// byte comparisons with other provers).
    Seeded(u64),
}

impl Blinding {
    /// Seeded when a seed is given, else random.
    pub fn from_seed(seed: Option<u64>) -> Self {
        seed.map_or(Blinding::Random, Blinding::Seeded)
    }

    /// `(r, s)` for partition `k`.
    ///
    /// # Errors
    /// As [`os_bytes`].
    pub fn get(&self, k: usize) -> Result<(Fr, Fr), Error> {
        blinding(match self {
            Blinding::Seeded(seed) => Some(seed.wrapping_add(k as u64)),
            Blinding::Random => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_reproducible_and_os_is_not() {
        assert_eq!(blinding(Some(7)).unwrap(), blinding(Some(7)).unwrap());
        assert_ne!(blinding(Some(7)).unwrap(), blinding(Some(8)).unwrap());
        assert_ne!(blinding(None).unwrap(), blinding(None).unwrap());
    }
}
