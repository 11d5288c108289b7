//! WindowPoSt and WinningPoSt from vanilla proofs (one bincode
//! `FallbackPoStSectorProof` per sector, as `generate_single_vanilla_proof`
//! returns them), proved as filecoin-proofs' `generate_*_post_with_vanilla`
//! do and verified with its verifiers.

use std::collections::BTreeMap;
use std::path::Path;

use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::types::{ChallengeSeed, FallbackPoStSectorProof, PoStConfig, ProverId};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs,
};
use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};
use zkpipe_core::Error;
use zkpipe_core::util::fsutil::read_capped;
use zkpipe_core::util::progress::Progress;

use crate::job::{CompoundJob, FilecoinJob, FinalCheck, decode_vanilla};
use crate::params::ParamSet;
use crate::prover::{Blinding, FilecoinProver, Proved};
use crate::shape::sector_size_name;
use crate::shape::with_tree;
use std::marker::PhantomData;
use std::sync::Arc;
use storage_proofs_core::parameter_cache::CacheableParameters;

/// Largest vanilla proof read (a 64 GiB sector's WindowPoSt one is ~100 KB).
pub const MAX_VANILLA_BYTES: usize = 64 << 20;

/// A PoSt to prove.
#[derive(Debug, Clone)]
pub struct PostRequest {
    /// The PoSt type (window or winning, and the sector size).
    pub registered: RegisteredPoStProof,
    /// The challenge randomness (32 bytes).
    pub randomness: ChallengeSeed,
    /// The miner's prover id.
    pub prover_id: ProverId,
    /// One bincode `FallbackPoStSectorProof` per sector.
    pub vanilla: Vec<Vec<u8>>,
    /// WindowPoSt: prove only this partition (cuzk's per-partition jobs);
    /// `None` proves them all.
    pub partition: Option<usize>,
}

/// A PoSt, ready to prove. Its final check is filecoin-proofs'
/// `verify_window_post` / `verify_winning_post` for a whole proof; a single
/// WindowPoSt partition is checked against the public inputs its verifier
/// derives (filecoin-proofs verifies only whole WindowPoSts).
///
/// # Errors
/// [`Error::InvalidInput`] for vanilla proofs that do not decode or do not
/// fit the proof type.
pub fn job(req: &PostRequest) -> Result<Arc<dyn FilecoinJob>, Error> {
    if req.vanilla.is_empty() {
        return Err(Error::InvalidInput("no vanilla proofs".into()));
    }
    if is_winning(req.registered) && req.partition.is_some() {
        return Err(Error::InvalidInput(
            "WinningPoSt has one partition: a partition index is for WindowPoSt".into(),
        ));
    }
    with_tree!(u64::from(req.registered.sector_size()), job_of, req)
}

/// Proves a PoSt and verifies it before returning it (see [`job`]).
///
/// # Errors
/// As [`job`] and [`FilecoinProver::prove`]: vanilla proofs that do not prove the
/// challenge are [`Error::InvalidInput`].
pub fn prove_post(
    engine: &FilecoinProver,
    req: &PostRequest,
    blinding: Blinding,
    progress: &dyn Progress,
) -> Result<Proved, Error> {
    engine.prove(&*job(req)?, blinding, progress)
}

fn is_winning(p: RegisteredPoStProof) -> bool {
    p.typ() == filecoin_proofs::types::PoStType::Winning
}

type Replicas = BTreeMap<SectorId, PublicReplicaInfo>;

fn job_of<Tree: 'static + MerkleTreeTrait>(
    req: &PostRequest,
) -> Result<Arc<dyn FilecoinJob>, Error> {
    let config: PoStConfig = req.registered.as_v1_config();
    let winning = is_winning(req.registered);
    let vanilla = req
        .vanilla
        .iter()
        .enumerate()
        .map(|(i, b)| {
            decode_vanilla::<FallbackPoStSectorProof<Tree>>(
                b,
                i,
                MAX_VANILLA_BYTES,
                "FallbackPoStSectorProof",
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    // filecoin-proofs indexes these without checking (a panic, not an
    // error): every vanilla proof holds sector proofs, each with the
    // challenges' inclusion proofs.
    for (i, v) in vanilla.iter().enumerate() {
        if v.vanilla_proof.sectors.is_empty() {
            return Err(Error::InvalidInput(format!(
                "vanilla proof {i} (sector {}) holds no sector proofs",
                v.sector_id
            )));
        }
        if let Some(s) = v
            .vanilla_proof
            .sectors
            .iter()
            .position(|s| s.inclusion_proofs.len() != config.challenge_count)
        {
            return Err(Error::InvalidInput(format!(
                "vanilla proof {i} (sector {}): sector proof {s} has {} inclusion proofs, {:?} challenges {}",
                v.sector_id,
                v.vanilla_proof.sectors[s].inclusion_proofs.len(),
                req.registered,
                config.challenge_count
            )));
        }
    }
    let bad = |e: anyhow::Error| {
        Error::InvalidInput(format!(
            "the vanilla proofs do not fit this request ({e:#}): made for other randomness, \
             another prover id or another proof type?"
        ))
    };
    let randomness = as_safe_commitment(&req.randomness, "randomness").map_err(bad)?;
    let prover_id = as_safe_commitment(&req.prover_id, "prover_id").map_err(bad)?;
    let (vanilla_params, partitions) = if winning {
        if vanilla.len() != config.sector_count {
            return Err(Error::InvalidInput(format!(
                "WinningPoSt takes {} vanilla proof(s), got {}",
                config.sector_count,
                vanilla.len()
            )));
        }
        (winning_post_setup_params(&config).map_err(bad)?, None)
    } else {
        let n = vanilla.len().div_ceil(config.sector_count);
        (window_post_setup_params(&config), (n > 1).then_some(n))
    };
    let setup = compound_proof::SetupParams {
        vanilla_params,
        partitions,
        priority: false,
    };
    let pub_params: compound_proof::PublicParams<'_, FallbackPoSt<'_, Tree>> =
        FallbackPoStCompound::setup(&setup).map_err(bad)?;
    let sectors = vanilla
        .iter()
        .map(|v| PublicSector {
            id: v.sector_id,
            comm_r: v.comm_r,
        })
        .collect();
    let mut pub_in = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors,
        k: req.partition,
    };
    let partitioned = match req.partition {
        Some(_) => vec![
            single_partition_vanilla_proofs(&config, &pub_params.vanilla_params, &pub_in, &vanilla)
                .map_err(bad)?,
        ],
        None => partition_vanilla_proofs(
            &config,
            &pub_params.vanilla_params,
            &pub_in,
            partitions.unwrap_or(1),
            &vanilla,
        )
        .map_err(bad)?,
    };
    if req.partition.is_none() {
        pub_in.k = None;
    }
    // WinningPoSt's verifier lists each sector once per challenge.
    let verifier_in = winning.then(|| {
        let times = pub_params.vanilla_params.sector_count;
        fallback::PublicInputs {
            sectors: (0..times).flat_map(|_| pub_in.sectors.clone()).collect(),
            ..pub_in.clone()
        }
    });
    let replicas: Replicas = vanilla
        .iter()
        .map(|v| {
            let comm_r: blstrs::Scalar = v.comm_r.into();
            (
                v.sector_id,
                PublicReplicaInfo::new(req.registered, comm_r.to_bytes_le()),
            )
        })
        .collect();
    let (registered, randomness, prover_id) = (req.registered, req.randomness, req.prover_id);
    let whole = req.partition.is_none();
    let check: FinalCheck = Box::new(move |proof| {
        if !whole {
            return Ok(());
        }
        let ok = if is_winning(registered) {
            verify_winning_post(&randomness, proof, &replicas, prover_id)
        } else {
            verify_window_post(&randomness, &[(registered, proof)], &replicas, prover_id)
        }
        .map_err(|e| Error::Failed(format!("PoSt verification: {e:#}")))?;
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidInput(
                "the PoSt does not verify: the vanilla proofs were made for other randomness \
                 or another prover id"
                    .into(),
            ))
        }
    });
    Ok(Arc::new(CompoundJob::<
        FallbackPoSt<'static, Tree>,
        FallbackPoStCircuit<Tree>,
        FallbackPoStCompound<Tree>,
    > {
        set: param_set_of::<Tree>(req.registered)?,
        pub_in,
        verifier_in,
        vanilla: partitioned,
        pub_params: pub_params.vanilla_params,
        check,
        split: None,
        _circuit: PhantomData,
    }))
}

/// The parameter set `registered`'s proofs are made with.
///
/// # Errors
/// [`Error::InvalidInput`] for a sector size Filecoin does not register.
pub fn param_set(registered: RegisteredPoStProof) -> Result<ParamSet, Error> {
    with_tree!(
        u64::from(registered.sector_size()),
        param_set_of,
        registered
    )
}

fn param_set_of<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
) -> Result<ParamSet, Error> {
    let config: PoStConfig = registered.as_v1_config();
    let winning = registered.typ() == filecoin_proofs::types::PoStType::Winning;
    let vanilla_params = if winning {
        winning_post_setup_params(&config).map_err(|e| Error::Failed(format!("{e:#}")))?
    } else {
        window_post_setup_params(&config)
    };
    let pp = <FallbackPoSt<'_, Tree> as storage_proofs_core::proof::ProofScheme<'_>>::setup(
        &vanilla_params,
    )
    .map_err(|e| Error::Failed(format!("{e:#}")))?;
    let id = <FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp);
    let size = u64::from(registered.sector_size());
    Ok(ParamSet {
        what: format!(
            "{} {}",
            if winning {
                "winning-post"
            } else {
                "window-post"
            },
            sector_size_name(size)
        ),
        id,
        sector_size: size,
        blank: Arc::new(move || {
            crate::adapter::record(<FallbackPoStCompound<Tree> as CompoundProof<
                FallbackPoSt<'_, Tree>,
                FallbackPoStCircuit<Tree>,
            >>::blank_circuit(&pp))
        }),
    })
}

/// One file's vanilla proofs: raw bincode, or a JSON array of base64
/// strings (Go's `[][]byte`, as Curio's tools write them).
///
/// # Errors
/// [`Error::Io`] for a file that cannot be read or is over
/// [`MAX_VANILLA_BYTES`]; [`Error::InvalidInput`] naming the file for
/// JSON that is not an array of base64 strings.
pub fn read_vanilla_proofs(path: &Path) -> Result<Vec<Vec<u8>>, Error> {
    let bytes = read_capped(path, MAX_VANILLA_BYTES as u64)?;
    if bytes.first() == Some(&b'[') {
        let strings: Vec<String> = serde_json::from_slice(&bytes).map_err(|e| {
            Error::InvalidInput(format!(
                "{}: not a JSON array of base64 strings: {e}",
                path.display()
            ))
        })?;
        return strings
            .iter()
            .map(|s| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))
            })
            .collect();
    }
    Ok(vec![bytes])
}
