//! Arity-8 Poseidon Merkle inclusion proofs (the shape of PoRep's tree proofs).

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use generic_array::typenum::U8;
use neptune::Poseidon;
use neptune::circuit2::poseidon_hash_allocated;
use neptune::poseidon::PoseidonConstants;
use rand_core::RngCore;
use std::collections::BTreeMap;

/// Children per node.
const ARITY: usize = 8;

/// One challenged leaf and the children of every node on its path.
#[derive(Clone, Debug)]
pub struct Challenge {
    /// Leaf index (public).
    pub index: u64,
    /// `path[l]`: the 8 children hashed at level `l` (the path's node among them).
    pub path: Vec<[Scalar; ARITY]>,
}

/// K inclusion proofs in one tree of height H (8^H leaves) with a public root.
#[derive(Clone, Debug)]
pub struct PoseidonMerkle {
    /// Levels between a leaf and the root.
    pub height: usize,
    /// The tree's root (public).
    pub root: Scalar,
    /// The challenged leaves.
    pub challenges: Vec<Challenge>,
}

fn constants() -> PoseidonConstants<Scalar, U8> {
    PoseidonConstants::new()
}

/// A stand-in value for a node no challenge path touches (only hashes along
/// the paths are checked, so the rest of the tree need not exist).
fn untouched_node(salt: u64, level: usize, index: u64) -> Scalar {
    let mut x = salt
        ^ (level as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ index.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    Scalar::from(x ^ (x >> 29))
}

impl PoseidonMerkle {
    /// `k` random challenges with random leaves in a tree of height `height`.
    pub fn random(k: usize, height: usize, rng: &mut impl RngCore) -> Self {
        let salt = rng.next_u64();
        let leaves_log8 = 3 * height as u32;
        let indices: Vec<u64> = (0..k)
            .map(|_| {
                if leaves_log8 >= 64 {
                    rng.next_u64()
                } else {
                    rng.next_u64() % (1u64 << leaves_log8)
                }
            })
            .collect();
        let pc = constants();

        // Hash upwards only the nodes on challenge paths.
        let mut known: BTreeMap<u64, Scalar> = indices
            .iter()
            .map(|&i| (i, Scalar::random(&mut *rng)))
            .collect();
        let mut children_at: Vec<BTreeMap<u64, [Scalar; ARITY]>> = Vec::with_capacity(height);
        for level in 0..height {
            let mut parents = BTreeMap::new();
            let mut level_children = BTreeMap::new();
            for parent in known
                .keys()
                .map(|i| i / ARITY as u64)
                .collect::<std::collections::BTreeSet<_>>()
            {
                let children: [Scalar; ARITY] = std::array::from_fn(|j| {
                    let idx = parent * ARITY as u64 + j as u64;
                    known
                        .get(&idx)
                        .copied()
                        .unwrap_or_else(|| untouched_node(salt, level, idx))
                });
                parents.insert(parent, Poseidon::new_with_preimage(&children, &pc).hash());
                level_children.insert(parent, children);
            }
            children_at.push(level_children);
            known = parents;
        }
        let root = known[&0];
        let challenges = indices
            .into_iter()
            .map(|index| Challenge {
                index,
                path: (0..height)
                    .map(|l| children_at[l][&(index >> (3 * (l + 1)))])
                    .collect(),
            })
            .collect();
        PoseidonMerkle {
            height,
            root,
            challenges,
        }
    }

    /// Public inputs after the constant one: the root, then each challenge's index.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        std::iter::once(self.root)
            .chain(self.challenges.iter().map(|c| Scalar::from(c.index)))
            .collect()
    }

    pub(crate) fn synthesize<CS: ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        let pc = constants();
        let root = cs.alloc_input(|| "root", || Ok(self.root))?;
        for (c, ch) in self.challenges.iter().enumerate() {
            let mut cs = cs.namespace(|| format!("challenge {c}"));
            let bits: Vec<Boolean> = (0..3 * self.height)
                .map(|i| {
                    AllocatedBit::alloc(
                        cs.namespace(|| format!("index bit {i}")),
                        Some((ch.index >> i) & 1 == 1),
                    )
                    .map(Boolean::from)
                })
                .collect::<Result<_, _>>()?;
            let index = cs.alloc_input(|| "index", || Ok(Scalar::from(ch.index)))?;
            cs.enforce(
                || "index bits",
                |mut lc| {
                    let mut coeff = Scalar::ONE;
                    for b in &bits {
                        lc = lc + &b.lc(CS::one(), coeff);
                        coeff = coeff.double();
                    }
                    lc
                },
                |lc| lc + CS::one(),
                |lc| lc + index,
            );

            let leaf = ch
                .path
                .first()
                .map(|c| c[(ch.index % ARITY as u64) as usize]);
            let mut cur = AllocatedNum::alloc(cs.namespace(|| "leaf"), || {
                leaf.ok_or(SynthesisError::AssignmentMissing)
            })?;
            for (l, children) in ch.path.iter().enumerate() {
                let mut cs = cs.namespace(|| format!("level {l}"));
                let kids: Vec<AllocatedNum<Scalar>> = children
                    .iter()
                    .enumerate()
                    .map(|(j, v)| {
                        AllocatedNum::alloc(cs.namespace(|| format!("child {j}")), || Ok(*v))
                    })
                    .collect::<Result<_, _>>()?;
                // One-hot position from the level's 3 index bits; the path's node
                // must sit at that position.
                let (b0, b1, b2) = (&bits[3 * l], &bits[3 * l + 1], &bits[3 * l + 2]);
                let lo: Vec<Boolean> = (0..4)
                    .map(|j| {
                        let x = if j & 1 == 1 { b0.clone() } else { b0.not() };
                        let y = if j & 2 == 2 { b1.clone() } else { b1.not() };
                        Boolean::and(cs.namespace(|| format!("pos lo {j}")), &x, &y)
                    })
                    .collect::<Result<_, _>>()?;
                for (j, kid) in kids.iter().enumerate() {
                    let z = if j & 4 == 4 { b2.clone() } else { b2.not() };
                    let at_j = Boolean::and(cs.namespace(|| format!("pos {j}")), &lo[j & 3], &z)?;
                    cs.enforce(
                        || format!("node at {j}"),
                        |lc| lc + &at_j.lc(CS::one(), Scalar::ONE),
                        |lc| lc + kid.get_variable() - cur.get_variable(),
                        |lc| lc,
                    );
                }
                cur = poseidon_hash_allocated(cs.namespace(|| "hash"), kids, &pc)?;
            }
            cs.enforce(
                || "root",
                |lc| lc + cur.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + root,
            );
        }
        Ok(())
    }
}
