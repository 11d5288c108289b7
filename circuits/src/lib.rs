//! zkpipe's built-in benchmark circuits, written against `bellpepper-core`
//! (the circuit API of Filecoin and Nova) over `blstrs::Scalar`.
//!
//! - `sha256`: bellpepper's SHA-256 gadget over N 64-byte blocks of a
//!   private message; the digest is packed into public inputs.
//! - `poseidon-merkle`: K Merkle inclusion proofs in an arity-8 Poseidon
//!   (neptune) tree of height H, sharing one public root; each challenge's
//!   leaf index is public — the shape of PoRep's column and tree proofs.
//! - `squaring-chain`: x → x² repeated n times, one constraint each.
//!
//! Every circuit is built from a seed that fixes its private witness; the
//! public inputs are whatever the circuit computes from it.

mod merkle;

use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::fmt;

pub use merkle::PoseidonMerkle;

/// Names accepted by [`BenchCircuit::new`].
pub const NAMES: [&str; 3] = ["sha256", "poseidon-merkle", "squaring-chain"];

/// A built-in circuit with its witness, ready to synthesize.
#[derive(Clone, Debug)]
pub enum BenchCircuit {
    /// SHA-256 of a private message of `blocks` 64-byte blocks (after padding).
    Sha256 {
        /// Message bytes (64·blocks − 9, so padding fills exactly `blocks` blocks).
        message: Vec<u8>,
    },
    /// Poseidon Merkle inclusion proofs.
    PoseidonMerkle(PoseidonMerkle),
    /// `n` squarings of a private start value; the last square is public.
    SquaringChain {
        /// Number of squarings (= constraints).
        n: usize,
        /// Start value.
        x0: Scalar,
    },
}

/// A size that does not fit the named circuit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSize(pub String);

impl fmt::Display for BadSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadSize {}

/// Parses `1000`, `2^20` or `1<<20`.
fn parse_count(s: &str) -> Option<usize> {
    let s = s.trim();
    if let Some((b, e)) = s.split_once('^') {
        return b
            .trim()
            .parse::<usize>()
            .ok()?
            .checked_pow(e.trim().parse().ok()?);
    }
    if let Some((b, e)) = s.split_once("<<") {
        return b
            .trim()
            .parse::<usize>()
            .ok()?
            .checked_mul(1usize.checked_shl(e.trim().parse().ok()?)?);
    }
    s.parse().ok()
}

impl BenchCircuit {
    /// Builds circuit `name` at `size` with a witness derived from `seed`.
    ///
    /// Sizes: `sha256` — blocks (`N`); `poseidon-merkle` — challenges and
    /// tree height (`KxH`, or `K` for height 8); `squaring-chain` — squarings
    /// (`n`, `2^k` allowed).
    ///
    /// # Errors
    /// [`BadSize`] for an unknown name or a size it cannot use.
    pub fn new(name: &str, size: &str, seed: u64) -> Result<Self, BadSize> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let bad = |why: &str| BadSize(format!("{name}: size `{size}`: {why}"));
        match name {
            "sha256" => {
                let blocks = parse_count(size)
                    .filter(|&b| b >= 1)
                    .ok_or_else(|| bad("expected a block count ≥ 1"))?;
                let mut message = vec![0u8; 64 * blocks - 9];
                rng.fill_bytes(&mut message);
                Ok(BenchCircuit::Sha256 { message })
            }
            "poseidon-merkle" => {
                let (k, h) = match size.split_once('x') {
                    Some((k, h)) => (parse_count(k), parse_count(h)),
                    None => (parse_count(size), Some(8)),
                };
                let (k, h) = k
                    .zip(h)
                    .filter(|&(k, h)| k >= 1 && (1..=20).contains(&h))
                    .ok_or_else(|| bad("expected K or KxH with K ≥ 1, 1 ≤ H ≤ 20"))?;
                Ok(BenchCircuit::PoseidonMerkle(PoseidonMerkle::random(
                    k, h, &mut rng,
                )))
            }
            "squaring-chain" => {
                let n = parse_count(size)
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| bad("expected a count ≥ 1"))?;
                Ok(BenchCircuit::SquaringChain {
                    n,
                    x0: Scalar::random(&mut rng),
                })
            }
            _ => Err(BadSize(format!(
                "unknown circuit `{name}`; known: {}",
                NAMES.join(", ")
            ))),
        }
    }

    /// The circuit's name, as [`BenchCircuit::new`] takes it.
    pub fn name(&self) -> &'static str {
        match self {
            BenchCircuit::Sha256 { .. } => "sha256",
            BenchCircuit::PoseidonMerkle(_) => "poseidon-merkle",
            BenchCircuit::SquaringChain { .. } => "squaring-chain",
        }
    }
}

impl Circuit<Scalar> for BenchCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            BenchCircuit::Sha256 { message } => {
                let bits: Vec<Boolean> = multipack::bytes_to_bits(&message)
                    .into_iter()
                    .enumerate()
                    .map(|(i, b)| {
                        AllocatedBit::alloc(cs.namespace(|| format!("message bit {i}")), Some(b))
                            .map(Boolean::from)
                    })
                    .collect::<Result<_, _>>()?;
                let digest = sha256(cs.namespace(|| "sha256"), &bits)?;
                multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
            }
            BenchCircuit::PoseidonMerkle(m) => m.synthesize(cs),
            BenchCircuit::SquaringChain { n, x0 } => {
                let mut x = AllocatedNum::alloc(cs.namespace(|| "x0"), || Ok(x0))?;
                for i in 0..n - 1 {
                    x = x.square(cs.namespace(|| format!("square {i}")))?;
                }
                // The last square is a public input: one constraint, like the others.
                let last = x.get_value().map(|v| v.square());
                let out = cs.alloc_input(
                    || "x^(2^n)",
                    || last.ok_or(SynthesisError::AssignmentMissing),
                )?;
                cs.enforce(
                    || "last square",
                    |lc| lc + x.get_variable(),
                    |lc| lc + x.get_variable(),
                    |lc| lc + out,
                );
                Ok(())
            }
        }
    }
}
