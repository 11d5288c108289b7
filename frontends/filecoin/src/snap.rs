//! SnapDeals (empty sector update) proofs from per-partition vanilla proofs
//! (bincode `PartitionProof`s, as filecoin-proofs-api's
//! `generate_partition_proofs` returns them and Curio stores them), proved
//! as `generate_empty_sector_update_proof_with_vanilla` does and verified
//! with `verify_empty_sector_update_proof`.

use std::marker::PhantomData;
use std::sync::Arc;

use ff::PrimeField;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceDomain;
use filecoin_proofs::types::SectorUpdateConfig;
use filecoin_proofs_api::RegisteredUpdateProof;
use filecoin_proofs_api::update::verify_empty_sector_update_proof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams,
};
use zkpipe_core::Error;
use zkpipe_core::util::progress::Progress;

use crate::job::{CompoundJob, FilecoinJob, FinalCheck, decode_vanilla};
use crate::params::ParamSet;
use crate::prover::{Blinding, FilecoinProver, Proved};
use crate::shape::{sector_size_name, with_tree};

/// Largest vanilla proof read per partition (a 32 GiB sector's, 86
/// challenges with three Merkle paths each, is ~0.5 MB).
pub const MAX_VANILLA_BYTES: usize = 16 << 20;

/// A sector update to prove.
#[derive(Debug, Clone)]
pub struct SnapRequest {
    /// The update proof type (the sector size).
    pub registered: RegisteredUpdateProof,
    /// CommR of the sector key (the CC sector before the update).
    pub comm_r_old: [u8; 32],
    /// CommR of the updated replica.
    pub comm_r_new: [u8; 32],
    /// CommD of the new data.
    pub comm_d_new: [u8; 32],
    /// One bincode `PartitionProof` per partition, in partition order.
    pub vanilla: Vec<Vec<u8>>,
}

/// A sector update, ready to prove; its final check is filecoin-proofs'
/// `verify_empty_sector_update_proof` for the request's commitments.
///
/// # Errors
/// [`Error::InvalidInput`] for vanilla proofs that do not decode, are not
/// one per partition, or commitments that are not field elements.
pub fn job(req: &SnapRequest) -> Result<Arc<dyn FilecoinJob>, Error> {
    with_tree!(u64::from(req.registered.sector_size()), job_of, req)
}

/// Proves a sector update and verifies it before returning it (see [`job`]).
///
/// # Errors
/// As [`job`] and [`FilecoinProver::prove`]: vanilla proofs for other commitments
/// are [`Error::InvalidInput`].
pub fn prove_snap(
    engine: &FilecoinProver,
    req: &SnapRequest,
    blinding: Blinding,
    progress: &dyn Progress,
) -> Result<Proved, Error> {
    engine.prove(&*job(req)?, blinding, progress)
}

fn job_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: &SnapRequest,
) -> Result<Arc<dyn FilecoinJob>, Error> {
    let config = SectorUpdateConfig::from_porep_config(&req.registered.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    if req.vanilla.len() != partitions {
        return Err(Error::InvalidInput(format!(
            "a {} sector update has {partitions} partition(s): got {} vanilla proof(s)",
            sector_size_name(u64::from(config.sector_size)),
            req.vanilla.len()
        )));
    }
    let vanilla = req
        .vanilla
        .iter()
        .enumerate()
        .map(|(k, b)| {
            decode_vanilla::<PartitionProof<Tree>>(
                b,
                k,
                MAX_VANILLA_BYTES,
                "sector update PartitionProof",
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    // filecoin-proofs takes any 32 bytes here and panics on a value that is
    // not a field element later, inside the circuit.
    let field = |what: &str, c: &[u8; 32]| {
        if bool::from(blstrs::Scalar::from_repr(*c).is_some()) {
            Ok(*c)
        } else {
            Err(Error::InvalidInput(format!(
                "{what}: not a commitment (not a BLS12-381 scalar)"
            )))
        }
    };
    let bad = |e: anyhow::Error| Error::InvalidInput(format!("{e:#}"));
    let pub_in = PublicInputs {
        k: partitions,
        comm_r_old: <TreeRHasher as Hasher>::Domain::try_from_bytes(&field(
            "comm_r_old",
            &req.comm_r_old,
        )?)
        .map_err(bad)?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&field("comm_d_new", &req.comm_d_new)?)
            .map_err(bad)?,
        comm_r_new: <TreeRHasher as Hasher>::Domain::try_from_bytes(&field(
            "comm_r_new",
            &req.comm_r_new,
        )?)
        .map_err(bad)?,
        h: config.h,
    };
    let (registered, r_old, r_new, d_new) = (
        req.registered,
        req.comm_r_old,
        req.comm_r_new,
        req.comm_d_new,
    );
    let check: FinalCheck = Box::new(move |proof| {
        let ok = verify_empty_sector_update_proof(registered, proof, r_old, r_new, d_new)
            .map_err(|e| Error::Failed(format!("sector update verification: {e:#}")))?;
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidInput(
                "the sector update proof does not verify: the vanilla proofs were made for \
                 other commitments"
                    .into(),
            ))
        }
    });
    Ok(Arc::new(CompoundJob::<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
        EmptySectorUpdateCompound<Tree>,
    > {
        set: param_set_of::<Tree>(req.registered)?,
        pub_in,
        verifier_in: None,
        vanilla,
        pub_params: PublicParams::from_sector_size(u64::from(config.sector_size)),
        check,
        split: None,
        _circuit: PhantomData,
    }))
}

/// The parameter set `registered`'s proofs are made with.
///
/// # Errors
/// [`Error::InvalidInput`] for a sector size Filecoin does not register.
pub fn param_set(registered: RegisteredUpdateProof) -> Result<ParamSet, Error> {
    with_tree!(
        u64::from(registered.sector_size()),
        param_set_of,
        registered
    )
}

fn param_set_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredUpdateProof,
) -> Result<ParamSet, Error> {
    let size = u64::from(registered.sector_size());
    let pp = PublicParams::from_sector_size(size);
    let id = <EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        _,
    >>::cache_identifier(&pp);
    Ok(ParamSet {
        what: format!("snap-update {}", sector_size_name(size)),
        id,
        sector_size: size,
        blank: Arc::new(move || {
            crate::adapter::record(<EmptySectorUpdateCompound<Tree> as CompoundProof<
                EmptySectorUpdate<Tree>,
                EmptySectorUpdateCircuit<Tree>,
            >>::blank_circuit(&pp))
        }),
    })
}
