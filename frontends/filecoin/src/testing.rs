//! Test fixtures made with filecoin-proofs itself (feature `testing`): a
//! 2 KiB sector sealed on the CPU up to C1, PoSt vanilla proofs over it, and
//! a SnapDeals update of it with its vanilla proofs, in a folder of the
//! caller's.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use filecoin_proofs_api::post::{
    generate_fallback_sector_challenges, generate_single_vanilla_proof,
    generate_winning_post_sector_challenge,
};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
};
use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{
    PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId,
    UnpaddedBytesAmount,
};

/// The 2 KiB PoRep every fixture uses.
pub const SEAL_PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
/// Its WindowPoSt.
pub const WINDOW_POST: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
/// Its WinningPoSt.
pub const WINNING_POST: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWinning2KiBV1;

/// Its SnapDeals update.
pub const UPDATE_PROOF: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;

/// A sealed sector and its C1 output.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// The miner's prover id.
    pub prover_id: [u8; 32],
    /// The sector number.
    pub sector_id: u64,
    /// The replica commitment.
    pub comm_r: [u8; 32],
    /// The sector's cache folder (trees, p_aux).
    pub cache_dir: PathBuf,
    /// The sealed replica.
    pub replica: PathBuf,
    /// `seal_commit_phase1`'s output as filecoin-proofs-api serialises it.
    pub c1_json: Vec<u8>,
}

/// Seals a 2 KiB sector of bytes from `seed` for `prover_id` in `dir`
/// (PC1, PC2, C1).
///
/// # Errors
/// Anything filecoin-proofs reports.
pub fn seal_2kib(dir: &Path, prover_id: [u8; 32], sector_id: u64, seed: u8) -> Result<Sealed> {
    seal(dir, SEAL_PROOF, prover_id, sector_id, seed)
}

/// Seals a sector of `proof`'s size, one piece of bytes from `seed`, for
/// `prover_id` in `dir` (PC1, PC2, C1 on the CPU). Sizes above 2 KiB take
/// the time and disk filecoin-proofs needs (512 MiB: minutes, ~3 GB).
///
/// # Errors
/// Anything filecoin-proofs reports.
pub fn seal(
    dir: &Path,
    proof: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_id: u64,
    seed: u8,
) -> Result<Sealed> {
    let ticket = [seed.wrapping_add(1) & 0x0f; 32];
    let interactive = [seed.wrapping_add(2) & 0x0f; 32];
    let cache_dir = dir.join("cache");
    std::fs::create_dir_all(&cache_dir)?;
    let (staged, replica) = (dir.join("staged"), dir.join("sealed"));
    let size = u64::from(proof.sector_size());
    // Fr32 padding: 127 bytes of data per 128.
    let piece: Vec<u8> = (0..size - size / 128)
        .map(|i| (i as u8).wrapping_mul(seed | 1))
        .collect();
    let infos = [stage(&staged, proof, &piece)?];
    std::fs::File::create(&replica)?;
    let sector = SectorId::from(sector_id);
    let pc1 = seal_pre_commit_phase1(
        proof, &cache_dir, &staged, &replica, prover_id, sector, ticket, &infos,
    )
    .context("PC1")?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache_dir, &replica).context("PC2")?;
    let comm_r = pc2.comm_r;
    let c1 = seal_commit_phase1(
        &cache_dir,
        &replica,
        prover_id,
        sector,
        ticket,
        interactive,
        pc2,
        &infos,
    )
    .context("C1")?;
    Ok(Sealed {
        prover_id,
        sector_id,
        comm_r,
        cache_dir,
        replica,
        c1_json: serde_json::to_vec(&c1)?,
    })
}

/// Writes `piece` (a whole sector's unpadded bytes) as `proof`'s staged data.
fn stage(
    path: &Path,
    proof: RegisteredSealProof,
    piece: &[u8],
) -> Result<filecoin_proofs_api::PieceInfo> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    let (info, _) = add_piece(
        proof,
        piece,
        &mut file,
        UnpaddedBytesAmount(piece.len() as u64),
        &[],
    )
    .context("add_piece")?;
    Ok(info)
}

/// A SnapDeals update of a sealed sector: its commitments and vanilla
/// proofs (bincode, one per partition, as `generate_partition_proofs`
/// returns them).
#[derive(Debug, Clone)]
pub struct Snapped {
    /// CommR of the sector key (the sector before the update).
    pub comm_r_old: [u8; 32],
    /// CommR of the updated replica.
    pub comm_r_new: [u8; 32],
    /// CommD of the new data.
    pub comm_d_new: [u8; 32],
    /// The vanilla proofs.
    pub vanilla: Vec<Vec<u8>>,
}

/// Encodes new data (bytes from `seed`) into `sealed` as SnapDeals does
/// and makes the update's vanilla proofs, in `dir`.
///
/// # Errors
/// Anything filecoin-proofs reports.
pub fn snap_2kib(dir: &Path, sealed: &Sealed, seed: u8) -> Result<Snapped> {
    let new_cache = dir.join("update-cache");
    std::fs::create_dir_all(&new_cache)?;
    let (staged, new_replica) = (dir.join("update-staged"), dir.join("update-sealed"));
    let piece: Vec<u8> = (0..2032u32)
        .map(|i| (i as u8).wrapping_add(seed).wrapping_mul(3))
        .collect();
    let infos = [stage(&staged, SEAL_PROOF, &piece)?];
    // filecoin-proofs maps the new replica: it must have its final length.
    std::fs::File::create(&new_replica)?.set_len(std::fs::metadata(&sealed.replica)?.len())?;
    let encoded = empty_sector_update_encode_into(
        UPDATE_PROOF,
        &new_replica,
        &new_cache,
        &sealed.replica,
        &sealed.cache_dir,
        &staged,
        &infos,
    )
    .context("encode_into")?;
    let vanilla = generate_partition_proofs(
        UPDATE_PROOF,
        sealed.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sealed.replica,
        &sealed.cache_dir,
        &new_replica,
        &new_cache,
    )
    .context("generate_partition_proofs")?;
    Ok(Snapped {
        comm_r_old: sealed.comm_r,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla: vanilla.into_iter().map(|p| p.0).collect(),
    })
}

/// The PoSt vanilla proof of `sealed` for `randomness` (bincode, as
/// `generate_single_vanilla_proof` returns it).
///
/// # Errors
/// Anything filecoin-proofs reports.
pub fn post_vanilla(
    sealed: &Sealed,
    registered: RegisteredPoStProof,
    randomness: [u8; 32],
) -> Result<Vec<u8>> {
    let sector = SectorId::from(sealed.sector_id);
    if registered.typ() == filecoin_proofs::types::PoStType::Winning {
        let picked =
            generate_winning_post_sector_challenge(registered, &randomness, 1, sealed.prover_id)?;
        anyhow::ensure!(picked == vec![0], "one sector, index 0");
    }
    let challenges =
        generate_fallback_sector_challenges(registered, &randomness, &[sector], sealed.prover_id)?;
    let replica = PrivateReplicaInfo::new(
        registered,
        sealed.comm_r,
        sealed.cache_dir.clone(),
        sealed.replica.clone(),
    );
    generate_single_vanilla_proof(registered, sector, &replica, &challenges[&sector])
}

/// A 2 KiB sector's C1 output (`c1_json`) with its vanilla proofs replaced
/// by in-shape ones drawn for the same replica id and challenge seed: the
/// same challenges and parents, every hash random (see
/// [`crate::in_shape`]). Its witness does not satisfy the circuit.
///
/// # Errors
/// A C1 output that is not JSON or not of [`SEAL_PROOF`].
pub fn with_random_vanilla(c1_json: &[u8], seed: u64) -> Result<Vec<u8>> {
    use filecoin_proofs::constants::SectorShape2KiB;
    let c1: filecoin_proofs_api::seal::SealCommitPhase1Output = serde_json::from_slice(c1_json)?;
    anyhow::ensure!(c1.registered_proof == SEAL_PROOF, "not a 2 KiB C1 output");
    let draw = crate::in_shape::Draw {
        replica_id: c1.replica_id.into(),
        seed: c1.seed,
        ..crate::in_shape::Draw::new(seed)
    };
    let (_, proofs) = crate::in_shape::vanilla_proofs::<SectorShape2KiB>(SEAL_PROOF, &draw)?;
    let mut doc: serde_json::Value = serde_json::from_slice(c1_json)?;
    doc["vanilla_proofs"] = serde_json::json!({ "StackedDrg2KiBV1": proofs });
    Ok(serde_json::to_vec(&doc)?)
}
