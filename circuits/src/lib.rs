//! zkpipe's built-in benchmark circuits, written against `bellpepper-core`
//! (the circuit API of Filecoin and Nova) over `blstrs::Scalar`.
//!
//! - `sha256`: bellpepper's SHA-256 gadget over N 64-byte blocks of a
//!   private message; the digest is packed into public inputs. Its
//!   witness-only synthesis runs a word-level model of the gadget that
//!   allocates the same values (checked against the gadget), block by
//!   block on several threads when there are several.
//! - `sha256-gadget`: the same circuit, witnessed through the gadget
//!   itself, ~28× slower: the host cost of a bit-heavy circuit like
//!   Filecoin's PoRep, whose gadgets have no such model.
//! - `poseidon-merkle`: K Merkle inclusion proofs in an arity-8 Poseidon
//!   (neptune) tree of height H, sharing one public root; each challenge's
//!   leaf index is public — the shape of PoRep's column and tree proofs.
//! - `squaring-chain`: x → x² repeated n times, one constraint each.
//!
//! Every circuit is built from a seed that fixes its private witness; the
//! public inputs are whatever the circuit computes from it.

mod merkle;
mod sha256;

use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::fmt;
use std::sync::OnceLock;
use zkpipe_core::Error;
use zkpipe_core::r1cs::circuit::CircuitSource;
use zkpipe_core::r1cs::witness_in_pieces;
use zkpipe_core::r1cs::{R1cs, Witness};

pub use merkle::PoseidonMerkle;

/// Names accepted by [`BenchCircuit::new`].
pub const NAMES: [&str; 4] = [
    "sha256",
    "sha256-gadget",
    "poseidon-merkle",
    "squaring-chain",
];

/// A built-in circuit with its witness, ready to synthesize.
#[derive(Clone, Debug)]
pub enum BenchCircuit {
    /// SHA-256 of a private message of `blocks` 64-byte blocks (after padding).
    Sha256 {
        /// Message bytes (64·blocks − 9, so padding fills exactly `blocks` blocks).
        message: Vec<u8>,
        /// Witness-only synthesis through bellpepper's gadget itself, not
        /// the word-level model (`sha256-gadget`).
        gadget: bool,
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

/// Constraints per SHA-256 block (bellpepper's gadget, measured: 1 block
/// records 27,904 constraints; rounded up).
const SHA256_CONSTRAINTS_PER_BLOCK: u64 = 28_000;
/// Constraints per arity-8 Poseidon hash (neptune 13's gadget) plus the
/// path bits of one tree level, rounded up.
const MERKLE_CONSTRAINTS_PER_LEVEL: u64 = 400;
/// Most constraints (and variables) a recorded R1CS can index: columns are
/// `u32` with the top bit marking aux variables while recording.
pub const MAX_CONSTRAINTS: u64 = 1 << 31;

/// A circuit's name and parsed size, checked: what [`BenchCircuit::new`]
/// builds from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `blocks` 64-byte SHA-256 blocks.
    Sha256 {
        /// Block count.
        blocks: usize,
        /// Witnesses through bellpepper's gadget (`sha256-gadget`).
        gadget: bool,
    },
    /// `k` inclusion proofs in a tree of height `h`.
    PoseidonMerkle {
        /// Challenges.
        k: usize,
        /// Tree height.
        h: usize,
    },
    /// `n` squarings.
    SquaringChain {
        /// Squarings.
        n: usize,
    },
}

impl Shape {
    /// Parses `size` for circuit `name`, refusing sizes past what a
    /// recorded R1CS can hold ([`MAX_CONSTRAINTS`]) before anything is built.
    ///
    /// # Errors
    /// [`BadSize`] for an unknown name, a malformed size or one too large.
    pub fn parse(name: &str, size: &str) -> Result<Shape, BadSize> {
        let bad = |why: &str| BadSize(format!("{name}: size `{size}`: {why}"));
        let shape = match name {
            "sha256" | "sha256-gadget" => Shape::Sha256 {
                blocks: parse_count(size)
                    .filter(|&b| b >= 1)
                    .ok_or_else(|| bad("expected a block count ≥ 1"))?,
                gadget: name == "sha256-gadget",
            },
            "poseidon-merkle" => {
                let (k, h) = match size.split_once('x') {
                    Some((k, h)) => (parse_count(k), parse_count(h)),
                    None => (parse_count(size), Some(8)),
                };
                let (k, h) = k
                    .zip(h)
                    .filter(|&(k, h)| k >= 1 && (1..=20).contains(&h))
                    .ok_or_else(|| bad("expected K or KxH with K ≥ 1, 1 ≤ H ≤ 20"))?;
                Shape::PoseidonMerkle { k, h }
            }
            "squaring-chain" => Shape::SquaringChain {
                n: parse_count(size)
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| bad("expected a count ≥ 1"))?,
            },
            _ => {
                return Err(BadSize(format!(
                    "unknown circuit `{name}`; known: {}",
                    NAMES.join(", ")
                )));
            }
        };
        if shape.estimated_constraints() > MAX_CONSTRAINTS {
            return Err(bad(&format!(
                "about {} constraints, over the {} a recorded R1CS can hold",
                shape.estimated_constraints(),
                MAX_CONSTRAINTS
            )));
        }
        Ok(shape)
    }

    /// About how many constraints the circuit has (a slight overestimate),
    /// to check sizes against memory before recording.
    pub fn estimated_constraints(&self) -> u64 {
        let sat = |n: usize| n as u64;
        match *self {
            Shape::Sha256 { blocks, .. } => {
                sat(blocks).saturating_mul(SHA256_CONSTRAINTS_PER_BLOCK)
            }
            Shape::PoseidonMerkle { k, h } => sat(k)
                .saturating_mul(sat(h))
                .saturating_mul(MERKLE_CONSTRAINTS_PER_LEVEL),
            Shape::SquaringChain { n } => sat(n),
        }
    }
}

/// The size each circuit gets when none is given: a small demo.
pub fn default_size(name: &str) -> &'static str {
    match name {
        "sha256" | "sha256-gadget" => "1",
        "squaring-chain" => "2^12",
        _ => "2x8",
    }
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
        Ok(Self::from_shape(Shape::parse(name, size)?, seed))
    }

    /// Builds a parsed shape with a witness derived from `seed`.
    pub fn from_shape(shape: Shape, seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        match shape {
            Shape::Sha256 { blocks, gadget } => {
                let mut message = vec![0u8; 64 * blocks - 9];
                rng.fill_bytes(&mut message);
                BenchCircuit::Sha256 { message, gadget }
            }
            Shape::PoseidonMerkle { k, h } => {
                BenchCircuit::PoseidonMerkle(PoseidonMerkle::random(k, h, &mut rng))
            }
            Shape::SquaringChain { n } => BenchCircuit::SquaringChain {
                n,
                x0: Scalar::random(&mut rng),
            },
        }
    }

    /// The circuit's name, as [`BenchCircuit::new`] takes it.
    pub fn name(&self) -> &'static str {
        match self {
            BenchCircuit::Sha256 { gadget: true, .. } => "sha256-gadget",
            BenchCircuit::Sha256 { .. } => "sha256",
            BenchCircuit::PoseidonMerkle(_) => "poseidon-merkle",
            BenchCircuit::SquaringChain { .. } => "squaring-chain",
        }
    }
}

impl Circuit<Scalar> for BenchCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            BenchCircuit::Sha256 {
                message,
                gadget: false,
            } if cs.is_witness_generator() => {
                let plan = sha256::Plan::new(&message);
                let mut out = Vec::new();
                for piece in plan.pieces() {
                    sha256::synthesize_witness(&piece, cs, &mut out)?;
                }
                Ok(())
            }
            BenchCircuit::Sha256 { message, .. } => {
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

/// A built-in circuit at one size, as zkpipe's caches, provers and
/// workloads take circuits ([`CircuitSource`]).
#[derive(Clone, Debug)]
pub struct BuiltinCircuit {
    name: String,
    size: String,
    shape: Shape,
    /// Inputs and aux of the first witness: later ones reserve as much.
    sizes: OnceLock<(usize, usize)>,
}

impl BuiltinCircuit {
    /// Circuit `name` at `size` (see [`BenchCircuit::new`]).
    ///
    /// # Errors
    /// [`BadSize`] for an unknown name or a size it cannot use.
    pub fn new(name: &str, size: &str) -> Result<Self, BadSize> {
        Ok(BuiltinCircuit {
            shape: Shape::parse(name, size)?,
            name: name.to_string(),
            size: size.to_string(),
            sizes: OnceLock::new(),
        })
    }

    /// The parsed shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The circuit with the witness of `seed`, ready to synthesize.
    pub fn build(&self, seed: u64) -> BenchCircuit {
        BenchCircuit::from_shape(self.shape, seed)
    }
}

impl CircuitSource for BuiltinCircuit {
    fn name(&self) -> &str {
        &self.name
    }

    fn size(&self) -> &str {
        &self.size
    }

    fn shape_key(&self) -> String {
        format!(
            "{} {} zkpipe-circuits {}",
            self.name,
            self.size,
            env!("CARGO_PKG_VERSION")
        )
    }

    fn record(&self) -> Result<R1cs, Error> {
        R1cs::record(self.build(0)).map(|(r1cs, _)| r1cs)
    }

    /// On more than two threads `sha256` and `sha256-gadget` synthesize
    /// their blocks in parallel (on two, the pieces' copies cost more than
    /// the second thread gives).
    fn witness(&self, seed: u64) -> Result<Witness, Error> {
        let w = match self.build(seed) {
            BenchCircuit::Sha256 { message, gadget } if rayon::current_num_threads() > 2 => {
                let plan = sha256::Plan::new(&message);
                witness_in_pieces(plan.pieces(), |piece, cs| match gadget {
                    true => sha256::synthesize_gadget(&piece, cs),
                    false => sha256::synthesize_witness(&piece, cs, &mut Vec::new()),
                })?
            }
            c => {
                let (i, a) = self.sizes.get().copied().unwrap_or((1, 0));
                Witness::generate_sized(c, i, a)?
            }
        };
        self.sizes.get_or_init(|| (w.inputs.len(), w.aux.len()));
        Ok(w)
    }
}
