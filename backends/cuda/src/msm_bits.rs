//! Bit-heavy scalars (a SHA-256 or PoRep witness is mostly 0s and 1s): the
//! 1s become a bitmap whose bases are summed by plain additions, the 0s are
//! dropped, and only the other scalars go through Pippenger with their
//! point indices. Beside a full MSM this saves the copy of 32 bytes per bit
//! (1 GB at 2^25) and the per-window passes over scalars that have one
//! non-zero digit at most.

use rayon::prelude::*;
use zkpipe_core::ScalarField;

/// MSMs below this size are not worth sampling.
pub(crate) const MIN_SPLIT_SCALARS: usize = 1 << 16;
/// Scalars sampled to decide.
const SAMPLES: usize = 1024;
/// Scalars classified per task (a multiple of 64: whole bitmap words).
const TASK_SCALARS: usize = 1 << 16;

/// Scalars split into a bitmap of the 1s and the rest (neither 0 nor 1).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BitSplit<F> {
    /// Bit `i % 64` of word `i / 64` is set where scalar `i` is 1.
    pub ones: Vec<u64>,
    /// Point index of each of `rest`, ascending.
    pub rest_index: Vec<u32>,
    pub rest: Vec<F>,
}

impl<F: ScalarField> BitSplit<F> {
    /// The split of `scalars` (Montgomery form, as the seam carries them)
    /// when a sample says at least half of them are 0 or 1; `None` for
    /// fewer than [`MIN_SPLIT_SCALARS`] or more than 2^32 scalars.
    pub(crate) fn of(scalars: &[F]) -> Option<BitSplit<F>> {
        let n = scalars.len();
        if !(MIN_SPLIT_SCALARS..=1 << 32).contains(&n) {
            return None;
        }
        let one = F::one();
        let bit = |s: &F| s.is_zero() || *s == one;
        let hits = (0..SAMPLES)
            .filter(|k| bit(&scalars[k * n / SAMPLES]))
            .count();
        (2 * hits >= SAMPLES).then(|| Self::classify(scalars, &one))
    }

    fn classify(scalars: &[F], one: &F) -> BitSplit<F> {
        let parts: Vec<(Vec<u64>, Vec<u32>, Vec<F>)> = scalars
            .par_chunks(TASK_SCALARS)
            .enumerate()
            .map(|(t, chunk)| {
                let base = t * TASK_SCALARS;
                let mut ones = vec![0u64; chunk.len().div_ceil(64)];
                let (mut index, mut rest) = (Vec::new(), Vec::new());
                for (i, s) in chunk.iter().enumerate() {
                    if *s == *one {
                        ones[i / 64] |= 1 << (i % 64);
                    } else if !s.is_zero() {
                        index.push((base + i) as u32);
                        rest.push(*s);
                    }
                }
                (ones, index, rest)
            })
            .collect();
        let mut split = BitSplit {
            ones: Vec::with_capacity(scalars.len().div_ceil(64)),
            rest_index: Vec::new(),
            rest: Vec::new(),
        };
        for (ones, index, rest) in parts {
            split.ones.extend(ones);
            split.rest_index.extend(index);
            split.rest.extend(rest);
        }
        split
    }

    /// `rest_index` two to a `u64` word (little-endian: the kernels read
    /// it as `u32`s), so it moves through the staging copies.
    pub(crate) fn packed_index(&self) -> Vec<u64> {
        self.rest_index
            .chunks(2)
            .map(|p| p[0] as u64 | (p.get(1).copied().unwrap_or(0) as u64) << 32)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_core::Fr;

    fn scalars(n: usize, dense_every: usize) -> Vec<Fr> {
        (0..n)
            .map(|i| match (i % dense_every, i % 3) {
                (0, _) => Fr::from_u64(i as u64 + 2),
                (_, 0) => Fr::ZERO,
                _ => Fr::one(),
            })
            .collect()
    }

    #[test]
    fn splits_bits_from_the_rest_in_order() {
        let n = MIN_SPLIT_SCALARS + 3 * TASK_SCALARS / 2 + 5; // a partial task, a partial word
        let s = scalars(n, 97);
        let split = BitSplit::of(&s).expect("bit-heavy");
        assert_eq!(split.ones.len(), n.div_ceil(64));
        for (i, v) in s.iter().enumerate() {
            let is_one = split.ones[i / 64] >> (i % 64) & 1 == 1;
            assert_eq!(is_one, *v == Fr::one(), "scalar {i}");
        }
        let want: Vec<u32> = (0..n).filter(|i| i % 97 == 0).map(|i| i as u32).collect();
        assert_eq!(split.rest_index, want);
        assert!(
            split
                .rest
                .iter()
                .zip(&want)
                .all(|(r, &i)| *r == s[i as usize])
        );
        let packed = split.packed_index();
        assert_eq!(packed.len(), want.len().div_ceil(2));
        assert_eq!(packed[1], want[2] as u64 | (want[3] as u64) << 32);
    }

    #[test]
    fn dense_or_small_inputs_are_not_split() {
        assert!(BitSplit::of(&scalars(MIN_SPLIT_SCALARS - 1, 97)).is_none());
        assert!(BitSplit::of(&scalars(MIN_SPLIT_SCALARS, 1)).is_none());
        // Exactly half of the sample (every 64th scalar here) 0 or 1: split.
        let half: Vec<Fr> = (0..MIN_SPLIT_SCALARS)
            .map(|i| {
                if i % 128 < 64 {
                    Fr::from_u64(5)
                } else {
                    Fr::one()
                }
            })
            .collect();
        assert!(BitSplit::of(&half).is_some());
        assert!(BitSplit::of(&half[64..]).is_none()); // below the size
    }
}
