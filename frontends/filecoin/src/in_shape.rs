//! PoRep C2 in shape, for timing only: the vanilla proofs a C1 output of a
//! registered sector size holds — its partitions, challenges per partition,
//! layers, Merkle paths of the trees' arities and depths, columns, labeling
//! and encoding proofs — with every hash a random field element from a
//! seed, and every path at the position of the challenge or parent its
//! verifier derives. filecoin-proofs' circuit makes a witness of them
//! (witness-only synthesis computes values and checks none), so a
//! production-size C2 can be timed on a machine that never sealed such a
//! sector (32 GiB: hours of PC1 and ~450 GB of disk).
//!
//! Such a witness does not satisfy the circuit, so no proof can come of it:
//! the prover refuses it ([`FilecoinProver::prove`](crate::FilecoinProver::prove) and the
//! daemon check satisfaction first), its job's final check refuses
//! anything, and [`time_partition`], which runs the prover's stages without
//! that check, returns their times and nothing they computed.

use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::{Hasher, PoseidonArity};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs_api::RegisteredSealProof;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait, base_path_length};
use storage_proofs_porep::stacked::{
    ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, StackedBucketGraph,
    TOTAL_PARENTS, Tau,
};
use typenum::{U0, U2};
use zkpipe_core::groth16::{Prover, StageTimes, domain_log_size};
use zkpipe_core::r1cs::Witness;
use zkpipe_core::{Error, G1Affine, G2Affine, Stage, util::sample};

use crate::adapter::{self, Counts};
use crate::job::{FilecoinJob, FinalCheck};
use crate::porep::{self, Compound, PublicInputs, VanillaProof, VanillaProofs};
use crate::shape::with_tree;

/// What a timing-only run says instead of writing a proof.
pub const NO_PROOF: &str = "timing only: no proof was made";

/// The namespace each PoRep challenge's gadgets open (see `porep::job`).
const CHALLENGE_BLOCK: &str = "challenge_";

/// The values an in-shape sector is drawn from: its commitments, replica
/// id and challenge seed, and the seed of every hash in its proofs.
#[derive(Debug, Clone, Copy)]
pub struct Draw {
    /// The replica id.
    pub replica_id: Scalar,
    /// CommD (tree D's root).
    pub comm_d: Scalar,
    /// CommR, a public input (not H(comm_c, comm_r_last) here).
    pub comm_r: Scalar,
    /// Tree C's root.
    pub comm_c: Scalar,
    /// Tree R's root.
    pub comm_r_last: Scalar,
    /// The interactive challenge randomness (picks the challenges).
    pub seed: [u8; 32],
    /// Seeds the hashes of the paths, columns and labels.
    pub hashes: u64,
}

impl Draw {
    /// Everything from `seed`.
    pub fn new(seed: u64) -> Draw {
        let mut rng = sample::rng(seed);
        let mut f = || Scalar::random(&mut rng);
        Draw {
            replica_id: f(),
            comm_d: f(),
            comm_r: f(),
            comm_c: f(),
            comm_r_last: f(),
            seed: f().to_bytes_le(),
            hashes: seed ^ 0x1a5e_d0f5_4a9e,
        }
    }
}

/// The public inputs and vanilla proofs (one vector of challenge proofs per
/// partition) of a C1 output of `rp`, drawn from `draw`: the shape
/// filecoin-proofs' `seal_commit_phase1` gives, the values random.
///
/// # Errors
/// [`Error::InvalidInput`] for a proof of another tree shape than `Tree`
/// or non-interactive PoRep (one partition of many more challenges, proved
/// for aggregation).
pub fn vanilla_proofs<Tree: 'static + MerkleTreeTrait>(
    rp: RegisteredSealProof,
    draw: &Draw,
) -> Result<(PublicInputs<Tree>, VanillaProofs<Tree>), Error> {
    let config = rp.as_v1_config();
    if config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(Error::InvalidInput(format!(
            "{rp:?}: non-interactive PoRep is aggregated with SnarkPack, which zkpipe does not do yet"
        )));
    }
    let pp = porep::public_params::<Tree>(&config)?.vanilla_params;
    let graph = &pp.graph;
    let nodes = graph.size();
    if (nodes as u64) * 32 != u64::from(rp.sector_size()) {
        return Err(Error::InvalidInput(format!(
            "{rp:?} is not a proof of this tree shape"
        )));
    }
    let pub_in = PublicInputs::<Tree> {
        replica_id: draw.replica_id.into(),
        tau: Some(Tau {
            comm_d: draw.comm_d.into(),
            comm_r: draw.comm_r.into(),
        }),
        k: None,
        seed: Some(draw.seed),
    };
    let roots = Roots::<Tree> {
        comm_d: draw.comm_d.into(),
        comm_c: draw.comm_c.into(),
        comm_r_last: draw.comm_r_last.into(),
    };
    let vanilla = (0..usize::from(config.partitions))
        .into_par_iter()
        .map(|k| {
            pub_in
                .challenges(&pp.challenges, nodes, Some(k))
                .into_iter()
                .enumerate()
                .map(|(i, challenge)| {
                    // One stream per challenge: the same values whichever
                    // thread draws them.
                    let stream = ((k as u64) << 32 | i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let mut rng = sample::rng(draw.hashes ^ stream);
                    challenge_proof(&mut rng, graph, pp.num_layers, challenge, &roots)
                })
                .collect::<Result<Vec<_>, Error>>()
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok((pub_in, vanilla))
}

/// The roots every challenge's paths lead to.
struct Roots<Tree: MerkleTreeTrait> {
    comm_d: <DefaultPieceHasher as Hasher>::Domain,
    comm_c: <Tree::Hasher as Hasher>::Domain,
    comm_r_last: <Tree::Hasher as Hasher>::Domain,
}

/// One challenge's vanilla proof, as `StackedDrg::prove_layers` makes it:
/// tree D and tree R paths to the challenge, the columns (all layers) of
/// the challenge and of its DRG and expander parents with their tree C
/// paths, a labeling proof per layer and the encoding proof of the last.
fn challenge_proof<Tree: 'static + MerkleTreeTrait>(
    rng: &mut ChaCha20Rng,
    graph: &StackedBucketGraph<Tree::Hasher>,
    layers: usize,
    challenge: usize,
    roots: &Roots<Tree>,
) -> Result<VanillaProof<Tree>, Error> {
    let failed = |e: anyhow::Error| Error::Failed(format!("the graph's parents: {e:#}"));
    let nodes = graph.size();
    let mut drg = vec![0u32; graph.base_graph().degree()];
    graph.base_parents(challenge, &mut drg).map_err(failed)?;
    let mut exp = vec![0u32; graph.expansion_degree()];
    graph
        .expanded_parents(challenge, &mut exp)
        .map_err(failed)?;
    let comm_d_proofs =
        merkle::<DefaultPieceHasher, U2, U0, U0>(rng, challenge, nodes, roots.comm_d);
    let comm_r_last_proof = tree_path::<Tree>(rng, challenge, nodes, roots.comm_r_last);
    let mut column = |node: u32| {
        let rows = hashes(rng, layers);
        ColumnProof::new(
            node,
            rows,
            tree_path::<Tree>(rng, node as usize, nodes, roots.comm_c),
        )
    };
    let c_x = column(challenge as u32);
    let drg_parents = drg.iter().map(|&p| column(p)).collect();
    let exp_parents = exp.iter().map(|&p| column(p)).collect();
    let labeling_proofs = (1..=layers)
        .map(|layer| LabelingProof::new(layer as u32, challenge as u64, hashes(rng, TOTAL_PARENTS)))
        .collect();
    let encoding_proof =
        EncodingProof::new(layers as u32, challenge as u64, hashes(rng, TOTAL_PARENTS));
    Ok(VanillaProof::<Tree> {
        comm_d_proofs,
        comm_r_last_proof,
        replica_column_proofs: ReplicaColumnProof {
            c_x,
            drg_parents,
            exp_parents,
        },
        labeling_proofs,
        encoding_proof,
    })
}

/// `n` random hashes.
fn hashes<D: From<Scalar>>(rng: &mut ChaCha20Rng, n: usize) -> Vec<D> {
    (0..n).map(|_| Scalar::random(&mut *rng).into()).collect()
}

/// A path of tree R or C (the sector's tree shape) to `node`.
fn tree_path<Tree: MerkleTreeTrait>(
    rng: &mut ChaCha20Rng,
    node: usize,
    nodes: usize,
    root: <Tree::Hasher as Hasher>::Domain,
) -> MerkleProof<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> {
    merkle::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(
        rng, node, nodes, root,
    )
}

/// A path to `node` of a tree of `nodes` leaves, base arity `A` with `B`
/// sub-trees under each of `C` top trees (0: none): one element per level,
/// its `A − 1` (or `B − 1`, `C − 1`) sibling hashes and the node's place
/// among them — the digits of `node` in that mixed radix, lowest first, as
/// the circuit packs them into its public input.
fn merkle<H: Hasher, A: PoseidonArity, B: PoseidonArity, C: PoseidonArity>(
    rng: &mut ChaCha20Rng,
    node: usize,
    nodes: usize,
    root: H::Domain,
) -> MerkleProof<H, A, B, C> {
    let mut at = node;
    let mut level = |arity: usize| {
        let digit = at % arity;
        at /= arity;
        (hashes(rng, arity - 1), digit)
    };
    let mut path: Vec<_> = (0..base_path_length::<A, B, C>(nodes))
        .map(|_| level(A::to_usize()))
        .collect();
    for arity in [B::to_usize(), C::to_usize()] {
        if arity > 0 {
            path.push(level(arity));
        }
    }
    let leaf = Scalar::random(&mut *rng).into();
    MerkleProof::from_parts(leaf, root, path)
}

/// A C2 job of `rp`'s shape drawn from `seed`: its witnesses synthesise as
/// a real sector's do (split over the challenges, public inputs checked
/// against the verifier's), but they do not satisfy the circuit, and its
/// final check refuses anything.
///
/// # Errors
/// As [`vanilla_proofs`].
pub fn job(rp: RegisteredSealProof, seed: u64) -> Result<Arc<dyn FilecoinJob>, Error> {
    with_tree!(u64::from(rp.sector_size()), job_of, rp, &Draw::new(seed))
}

fn job_of<Tree: 'static + MerkleTreeTrait>(
    rp: RegisteredSealProof,
    draw: &Draw,
) -> Result<Arc<dyn FilecoinJob>, Error> {
    let (pub_in, vanilla) = vanilla_proofs::<Tree>(rp, draw)?;
    let check: FinalCheck = Box::new(|_| {
        Err(Error::InvalidInput(format!(
            "an in-shape job's values are random: it proves nothing ({NO_PROOF})"
        )))
    });
    porep::compound_job::<Tree>(&rp.as_v1_config(), rp, pub_in, vanilla, check)
}

/// One partition's circuit of a seal proof, counted rather than recorded:
/// what its R1CS, witness and key hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitSize {
    /// Partitions per proof.
    pub partitions: usize,
    /// Challenges per partition.
    pub challenges: usize,
    /// One partition's circuit.
    pub counts: Counts,
}

/// Counts one partition's circuit of `rp`: one challenge's circuit counted
/// (its shared part and its challenge apart), the challenge's part times
/// the challenges per partition. Seconds where recording 32 GiB's takes
/// minutes and tens of GB.
///
/// # Errors
/// As [`vanilla_proofs`]; [`Error::Synthesis`] when the circuit fails.
pub fn circuit_size(rp: RegisteredSealProof) -> Result<CircuitSize, Error> {
    with_tree!(u64::from(rp.sector_size()), circuit_size_of, rp)
}

fn circuit_size_of<Tree: 'static + MerkleTreeTrait>(
    rp: RegisteredSealProof,
) -> Result<CircuitSize, Error> {
    let config = rp.as_v1_config();
    let (pub_in, vanilla) = vanilla_proofs::<Tree>(rp, &Draw::new(0))?;
    let pp = porep::public_params::<Tree>(&config)?.vanilla_params;
    let one = vanilla[0][..1].to_vec();
    let circuit = Compound::<Tree>::circuit(&pub_in, (), &one, &pp, Some(0))
        .map_err(|e| Error::Failed(format!("{e:#}")))?;
    let (shared, block) = adapter::count_block(circuit, CHALLENGE_BLOCK)?;
    let challenges = vanilla[0].len();
    Ok(CircuitSize {
        partitions: vanilla.len(),
        challenges,
        counts: shared.plus_times(block, challenges as u64),
    })
}

impl CircuitSize {
    /// log2 of the evaluation domain (constraints and inputs, rounded up).
    pub fn domain_log(&self) -> u32 {
        domain_log_size(
            self.counts.constraints as usize,
            self.counts.inputs as usize,
        )
    }

    /// Bytes of one full assignment (inputs and aux, 32 bytes each).
    pub fn witness_bytes(&self) -> u64 {
        32 * (self.counts.inputs + self.counts.aux)
    }

    /// Host bytes one partition's witness synthesis holds at its peak: the
    /// challenges' pieces (vectors grown by doubling: up to twice their
    /// length) and the whole they are joined into.
    pub fn synthesis_bytes(&self) -> u64 {
        3 * self.witness_bytes()
    }

    /// Bytes of the recorded R1CS (three CSR matrices: row pointers,
    /// columns and coefficients).
    pub fn r1cs_bytes(&self) -> u64 {
        3 * 8 * (self.counts.constraints + 1) + (4 + 32) * self.counts.nonzeros
    }

    /// Points of the key's five queries: `[h, l, a, b_g1, b_g2]`.
    pub fn query_points(&self) -> [u64; 5] {
        let c = &self.counts;
        let b = c.b_inputs + c.b_aux;
        [
            (1u64 << self.domain_log()) - 1,
            c.aux,
            c.inputs + c.a_aux,
            b,
            b,
        ]
    }

    /// Bytes of the key's points as zkpipe holds them (its verifying key's
    /// IC points included).
    pub fn key_bytes(&self) -> u64 {
        let [h, l, a, b1, b2] = self.query_points();
        let (g1, g2) = (
            std::mem::size_of::<G1Affine>() as u64,
            std::mem::size_of::<G2Affine>() as u64,
        );
        g1 * (h + l + a + b1 + self.counts.inputs) + g2 * b2
    }
}

/// Runs the prover's stages on `w` as [`Prover::prove`] does — SpMV with
/// the satisfaction scan's work, the quotient, the MSMs — but takes no
/// notice of the scan (an in-shape witness fails it) and keeps nothing
/// they compute: only their times come back. The blinding and assembly,
/// under a millisecond, are not run, so no proof exists to return.
///
/// # Errors
/// Backend errors; [`Error::InvalidInput`] for a witness of another shape.
pub fn time_partition(prover: &Prover, w: &Witness) -> Result<StageTimes, Error> {
    fn time(times: &mut StageTimes, stage: Stage, t: Instant) {
        let d = t.elapsed();
        times.stages.push((stage, d));
        times.wall += d;
    }
    let mut times = StageTimes::default();
    let t = Instant::now();
    let h = if prover.device_spmv() {
        // The backend's scan is skipped here (`check` off): on a GPU it is
        // a small part of the stage.
        let h = prover.quotient_from_witness(w, false)?;
        time(&mut times, Stage::Spmv, t);
        h
    } else {
        let abc = prover.spmv(w)?;
        let m = prover.r1cs().num_constraints();
        // The whole scan a satisfied witness costs (this one fails early).
        let [a, b, c] = abc.each_ref().map(|v| &v[..m]);
        let failing = (0..m)
            .into_par_iter()
            .with_min_len(1 << 12)
            .filter(|&i| a[i].mul(&b[i]) != c[i])
            .count();
        std::hint::black_box(failing);
        time(&mut times, Stage::Spmv, t);
        let t = Instant::now();
        let h = prover.quotient(abc)?;
        time(&mut times, Stage::Quotient, t);
        h
    };
    let t0 = Instant::now();
    let mut spans = Vec::new();
    let msms = prover.msm_stage(w, &h, true, &mut |s, a, b| spans.push((s, b - a)));
    times.stages.extend(spans);
    times.wall += t0.elapsed();
    std::hint::black_box(msms?);
    Ok(times)
}
