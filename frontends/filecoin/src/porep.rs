//! PoRep C2 (`seal_commit_phase2`): a C1 output in, `partitions × 192`
//! bytes out, verified with `filecoin_proofs_api::seal::verify_seal`.

use filecoin_proofs::as_safe_commitment;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::types::{PoRepConfig, ProverId};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use serde::Deserialize;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg, Tau};
use zkpipe_core::Error;
use zkpipe_core::util::progress::Progress;

use crate::job::{CompoundJob, FilecoinJob, FinalCheck, Split};
use crate::params::ParamSet;
use crate::prover::{Blinding, FilecoinProver, Proved};
use crate::shape::{sector_size_name, with_tree};
use std::marker::PhantomData;
use std::sync::Arc;
use storage_proofs_core::parameter_cache::CacheableParameters;

/// Largest C1 file read (a 64 GiB sector's is ~100 MB of JSON).
pub const MAX_C1_BYTES: usize = 1 << 30;

/// A parsed C1 output with what came around it.
#[derive(Debug)]
pub struct C1 {
    /// filecoin-proofs-api's `SealCommitPhase1Output`.
    pub output: SealCommitPhase1Output,
    /// The sector number the envelope named, if it came in one.
    pub sector_num: Option<u64>,
}

/// lotus-bench's `c1.json` and Curio's cuzk envelope: the C1 JSON, base64.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: i64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// The top-level keys that say what a C1 document is, every value skipped
/// unread (no allocation for what it holds).
#[derive(Deserialize)]
struct Probe {
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<serde::de::IgnoredAny>,
    registered_proof: Option<serde::de::IgnoredAny>,
}

impl Probe {
    /// `what` prefixes messages ("" or "Phase1Out ").
    fn of(bytes: &[u8], what: &str) -> Result<Probe, Error> {
        // An array or a scalar is refused before it is read.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(bad(format!("{what}is not a JSON object")));
        }
        serde_json::from_slice(bytes).map_err(|e| bad(format!("{what}is not JSON: {e}")))
    }
}

impl C1 {
    /// Reads and parses the C1 output file at `path` (at most
    /// [`MAX_C1_BYTES`]), naming the file in every refusal.
    ///
    /// # Errors
    /// [`Error::Io`] for a file that cannot be read or is too large;
    /// [`Error::InvalidInput`] as [`C1::parse`], with the file's name.
    pub fn read(path: &std::path::Path) -> Result<C1, Error> {
        let bytes = zkpipe_core::util::fsutil::read_capped(path, MAX_C1_BYTES as u64)?;
        C1::parse(&bytes).map_err(|e| match e {
            Error::InvalidInput(m) => Error::InvalidInput(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// [`C1::read`], refused when its envelope names another sector than
    /// `sector_id`.
    ///
    /// # Errors
    /// As [`C1::read`]; [`Error::InvalidInput`] naming both sectors.
    pub fn read_for_sector(path: &std::path::Path, sector_id: u64) -> Result<C1, Error> {
        let c1 = C1::read(path)?;
        match c1.sector_num {
            Some(n) if n != sector_id => Err(Error::InvalidInput(format!(
                "{}: the C1 envelope is for sector {n}, --sector-id is {sector_id}",
                path.display()
            ))),
            _ => Ok(c1),
        }
    }

    /// Parses a C1 output as filecoin-proofs-api serialises it
    /// (`SealCommitPhase1Output` JSON), or wrapped as lotus-bench and
    /// Curio write it (`{"SectorNum", "Phase1Out": base64, "SectorSize"}`).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming what does not parse or disagree.
    pub fn parse(bytes: &[u8]) -> Result<C1, Error> {
        if bytes.len() > MAX_C1_BYTES {
            return Err(bad(format!(
                "{} bytes, more than the {} a C1 output can be",
                bytes.len(),
                MAX_C1_BYTES
            )));
        }
        // Parsed straight into the types, never into a `serde_json::Value`
        // tree: that takes ~16× the text (a 250 MiB array of zeros took
        // 4.4 GB), and the fields a probe skips are not kept at all.
        let probe = Probe::of(bytes, "")?;
        let raw;
        let (inner, envelope) = if probe.phase1_out.is_some() {
            let env: Envelope = serde_json::from_slice(bytes)
                .map_err(|e| bad(format!("lotus-bench/Curio envelope: {e}")))?;
            raw = base64_decode(&env.phase1_out)
                .ok_or_else(|| bad("Phase1Out is not base64".into()))?;
            (&raw[..], Some(env))
        } else {
            (bytes, None)
        };
        let inner_probe = if envelope.is_some() {
            Probe::of(inner, "Phase1Out ")?
        } else {
            probe
        };
        if inner_probe.registered_proof.is_none() {
            return Err(bad(
                "no `registered_proof`: expected filecoin-proofs-api's SealCommitPhase1Output \
                 (what lotus, Curio and filecoin-ffi write)"
                    .into(),
            ));
        }
        let output: SealCommitPhase1Output = serde_json::from_slice(inner)
            .map_err(|e| bad(format!("SealCommitPhase1Output: {e}")))?;
        let size = u64::from(output.registered_proof.sector_size());
        if let Some(env) = &envelope
            && env.sector_size != size
        {
            return Err(bad(format!(
                "the envelope says SectorSize {} but the C1 output is for {:?} ({})",
                env.sector_size,
                output.registered_proof,
                sector_size_name(size)
            )));
        }
        Ok(C1 {
            output,
            sector_num: envelope.and_then(|e| u64::try_from(e.sector_num).ok()),
        })
    }

    /// The proof type.
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.output.registered_proof
    }
}

fn bad(what: String) -> Error {
    Error::InvalidInput(format!("C1 output: {what}"))
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// What a seal proof is checked against.
#[derive(Debug, Clone, Copy)]
pub struct SealIds {
    /// The miner's prover id (32 bytes).
    pub prover_id: ProverId,
    /// The sector number.
    pub sector_id: u64,
}

/// C2 for `c1`, ready to prove; its final check is filecoin-proofs'
/// `verify_seal` for `ids`.
///
/// # Errors
/// [`Error::InvalidInput`] for a C1 output that cannot be proved
/// (non-interactive PoRep, vanilla proofs of another size or shape, zero
/// commitments).
pub fn job(c1: &C1, ids: SealIds) -> Result<Arc<dyn FilecoinJob>, Error> {
    let rp = c1.registered_proof();
    let config = rp.as_v1_config();
    if config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(Error::InvalidInput(format!(
            "{rp:?}: non-interactive PoRep is aggregated with SnarkPack, which zkpipe does not do yet"
        )));
    }
    with_tree!(u64::from(rp.sector_size()), job_of, &config, c1, ids)
}

/// Proves C2 for `c1` and verifies the result with filecoin-proofs'
/// `verify_seal` against `ids` before returning it.
///
/// # Errors
/// As [`job`] and [`FilecoinProver::prove`]: a proof that does not verify for
/// `ids` (a wrong prover or sector id) is [`Error::InvalidInput`].
pub fn seal_commit(
    engine: &FilecoinProver,
    c1: &C1,
    ids: SealIds,
    blinding: Blinding,
    progress: &dyn Progress,
) -> Result<Proved, Error> {
    engine.prove(&*job(c1, ids)?, blinding, progress)
}

fn job_of<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    c1: &C1,
    ids: SealIds,
) -> Result<Arc<dyn FilecoinJob>, Error> {
    let o = c1.output.clone();
    let vanilla: VanillaProofs<Tree> = o.vanilla_proofs.clone().try_into().map_err(|e| {
        bad(format!(
            "its vanilla proofs are not for {:?}: {e:#}",
            o.registered_proof
        ))
    })?;
    for (what, c) in [
        ("comm_d", &o.comm_d),
        ("comm_r", &o.comm_r),
        ("seed", &o.seed),
    ] {
        if *c == [0; 32] {
            return Err(bad(format!("{what} is all zeros")));
        }
    }
    if let Some(i) = vanilla.iter().position(Vec::is_empty) {
        return Err(bad(format!(
            "partition {i} of the vanilla proofs is empty (a C1 output cut short?)"
        )));
    }
    if vanilla.len() != usize::from(config.partitions) {
        return Err(bad(format!(
            "{} partitions of vanilla proofs, {:?} has {}",
            vanilla.len(),
            o.registered_proof,
            usize::from(config.partitions)
        )));
    }
    let comm_r = as_safe_commitment(&o.comm_r, "comm_r").map_err(|e| bad(format!("{e:#}")))?;
    let comm_d = as_safe_commitment(&o.comm_d, "comm_d").map_err(|e| bad(format!("{e:#}")))?;
    let replica_id: blstrs::Scalar = o.replica_id.into();
    let pub_in = stacked::PublicInputs {
        replica_id: replica_id.into(),
        tau: Some(Tau { comm_d, comm_r }),
        k: None,
        seed: Some(o.seed),
    };
    let rp = o.registered_proof;
    let check: FinalCheck = Box::new(move |proof| {
        let ok = filecoin_proofs_api::seal::verify_seal(
            rp,
            o.comm_r,
            o.comm_d,
            ids.prover_id,
            SectorId::from(ids.sector_id),
            o.ticket,
            o.seed,
            proof,
        )
        .map_err(|e| Error::Failed(format!("verify_seal: {e:#}")))?;
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "the proof does not verify for prover id {} and sector {}: the C1 output was \
                 made for another prover or sector",
                hex(&ids.prover_id),
                ids.sector_id
            )))
        }
    });
    compound_job::<Tree>(config, rp, pub_in, vanilla, check)
}

/// The job proving `vanilla` (one vector of challenge proofs per
/// partition) for `pub_in`, its final check `check`.
pub(crate) fn compound_job<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    rp: RegisteredSealProof,
    pub_in: PublicInputs<Tree>,
    vanilla: VanillaProofs<Tree>,
    check: FinalCheck,
) -> Result<Arc<dyn FilecoinJob>, Error> {
    let set = param_set_of::<Tree>(rp)?;
    let pub_params = public_params::<Tree>(config)?.vanilla_params;
    Ok(Arc::new(CompoundJob::<
        Scheme<'static, Tree>,
        StackedCircuit<Tree, DefaultPieceHasher>,
        Compound<Tree>,
    > {
        set,
        pub_in,
        verifier_in: None,
        vanilla,
        pub_params,
        check,
        // Each challenge's gadgets use only the sector's commitments and
        // replica id, allocated before the first: they synthesise apart.
        split: Some(Split {
            pieces: |vp| vp.iter().map(|challenge| vec![challenge.clone()]).collect(),
            block: "challenge_",
        }),
        _circuit: PhantomData,
    }))
}

/// One challenge's vanilla proof of a sector of tree shape `Tree`.
pub type VanillaProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;
/// A C1 output's vanilla proofs: per partition, one per challenge.
pub type VanillaProofs<Tree> = Vec<Vec<VanillaProof<Tree>>>;
/// What a sector's C2 proves: its replica id, commitments and challenge seed.
pub type PublicInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as filecoin_hashers::Hasher>::Domain,
    <DefaultPieceHasher as filecoin_hashers::Hasher>::Domain,
>;

pub(crate) type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Scheme<'a, Tree> = StackedDrg<'a, Tree, DefaultPieceHasher>;

pub(crate) fn public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<compound_proof::PublicParams<'static, Scheme<'static, Tree>>, Error> {
    let failed = |e: anyhow::Error| Error::Failed(format!("{e:#}"));
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(config).map_err(failed)?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    <Compound<Tree> as CompoundProof<Scheme<'_, Tree>, _>>::setup(&setup).map_err(failed)
}

/// The parameter set `rp`'s proofs are made with.
///
/// # Errors
/// [`Error::InvalidInput`] for non-interactive PoRep (not supported).
pub fn param_set(rp: RegisteredSealProof) -> Result<ParamSet, Error> {
    with_tree!(u64::from(rp.sector_size()), param_set_of, rp)
}

fn param_set_of<Tree: 'static + MerkleTreeTrait>(
    rp: RegisteredSealProof,
) -> Result<ParamSet, Error> {
    let config = rp.as_v1_config();
    let pp = public_params::<Tree>(&config)?.vanilla_params;
    let id = <Compound<Tree> as CacheableParameters<StackedCircuit<Tree, DefaultPieceHasher>, _>>::cache_identifier(&pp);
    Ok(ParamSet {
        what: format!("porep {}", sector_size_name(u64::from(rp.sector_size()))),
        id,
        sector_size: u64::from(rp.sector_size()),
        blank: Arc::new(move || {
            crate::adapter::record(
                <Compound<Tree> as CompoundProof<Scheme<'_, Tree>, _>>::blank_circuit(&pp),
            )
        }),
    })
}

/// Lower-case hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_c1_of_padding_is_refused_without_building_it() {
        // 64 MiB of `0,`: as a JSON value tree it would take ~1 GB.
        let mut zeros = b"[".to_vec();
        zeros.extend(b"0,".repeat(32 << 20));
        zeros.extend(b"0]");
        let e = C1::parse(&zeros).unwrap_err();
        assert!(e.to_string().contains("not a JSON object"), "{e}");
        // Padding inside an object is skipped, not kept; the missing
        // fields are what is reported.
        let mut padded = br#"{"registered_proof":"StackedDrg2KiBV1_1","pad":"#.to_vec();
        padded.extend(&zeros);
        padded.push(b'}');
        let t = std::time::Instant::now();
        let e = C1::parse(&padded).unwrap_err();
        assert!(e.to_string().contains("SealCommitPhase1Output"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        // The envelope's inner document is checked the same way.
        use base64::Engine as _;
        let inner = base64::engine::general_purpose::STANDARD.encode(b"[0,0,0]");
        let env = format!(r#"{{"SectorNum":1,"Phase1Out":"{inner}","SectorSize":2048}}"#);
        let e = C1::parse(env.as_bytes()).unwrap_err();
        assert!(
            e.to_string().contains("Phase1Out is not a JSON object"),
            "{e}"
        );
    }
}
