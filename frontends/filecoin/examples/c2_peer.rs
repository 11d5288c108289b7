//! The peer side of the C2 benchmark (`benches/filecoin/h200.sh`):
//!
//! - `c2_peer seal DIR [SECTOR_SIZE]`: seals a sector (2 KiB unless named:
//!   8MiB, 512MiB) with filecoin-proofs (PC1, PC2, C1) into DIR and writes
//!   `DIR/c1.json`; a 2 KiB one it updates as SnapDeals does and writes
//!   its vanilla proofs (`DIR/snap.json`, Curio's JSON
//!   `[][]byte`) and commitments (`DIR/snap.comms`: r_old r_new d_new in
//!   hex); prints the prover id and sector number.
//! - `c2_peer c2 C1 SECTOR PROVER_HEX`: filecoin-proofs' own
//!   `seal_commit_phase2` on the same C1 output and parameters, timed:
//!   bellperson 0.27 on the CPU, or SupraSeal's CUDA prover when built with
//!   the `supraseal` feature.
//! - `c2_peer snap DIR`: filecoin-proofs'
//!   `generate_empty_sector_update_proof_with_vanilla` on `DIR`'s update,
//!   timed (the same provers).
//! - An optional argument RUNS repeats the proof in this process; for `c2`,
//!   a further IN_FLIGHT proves once alone, then RUNS proofs that many at a
//!   time on threads (as a daemon with several jobs would), and prints the
//!   wall time per proof.

use std::time::Instant;

use filecoin_proofs_api::seal::{SealCommitPhase1Output, seal_commit_phase2};
use filecoin_proofs_api::update::{
    generate_empty_sector_update_proof_with_vanilla, verify_empty_sector_update_proof,
};
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use zkpipe_filecoin::registry::{parse_hex32, prover_id_of_miner};
use zkpipe_filecoin::shape::parse_sector_size;
use zkpipe_filecoin::testing::{UPDATE_PROOF, seal, snap_2kib};

fn prover() -> &'static str {
    if cfg!(feature = "supraseal") {
        "SupraSeal (CUDA)"
    } else {
        "bellperson (CPU)"
    }
}

/// An optional run count (proofs in this process: later ones find the
/// parameters in filecoin-proofs' in-memory cache).
fn runs(arg: Option<&String>) -> Result<u32, std::num::ParseIntError> {
    arg.map_or(Ok(1), |s| s.parse())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("seal") if args.len() == 3 || args.len() == 4 => {
            let dir = std::path::Path::new(&args[2]);
            let prover_id = prover_id_of_miner(1000);
            let size = match args.get(3) {
                Some(s) => parse_sector_size(s)?,
                None => 2048,
            };
            use RegisteredSealProof::*;
            let proof = [
                StackedDrg2KiBV1_1,
                StackedDrg8MiBV1_1,
                StackedDrg512MiBV1_1,
                StackedDrg32GiBV1_1,
                StackedDrg64GiBV1_1,
            ]
            .into_iter()
            .find(|p| u64::from(p.sector_size()) == size)
            .ok_or("no such sector size")?;
            let t = Instant::now();
            let sealed = seal(dir, proof, prover_id, 42, 7)?;
            eprintln!("{proof:?}: sealed (PC1, PC2, C1) in {:.1?}", t.elapsed());
            std::fs::write(dir.join("c1.json"), &sealed.c1_json)?;
            println!("prover_id {} sector 42", hex(&prover_id));
            if size != 2048 {
                // SnapDeals is benchmarked at 2 KiB only.
                return Ok(());
            }
            let snapped = snap_2kib(dir, &sealed, 9)?;
            use base64::Engine as _;
            let b64: Vec<String> = snapped
                .vanilla
                .iter()
                .map(|v| base64::engine::general_purpose::STANDARD.encode(v))
                .collect();
            std::fs::write(dir.join("snap.json"), serde_json::to_vec(&b64)?)?;
            let comms = [snapped.comm_r_old, snapped.comm_r_new, snapped.comm_d_new];
            let comms: Vec<String> = comms.iter().map(|c| hex(c)).collect();
            std::fs::write(dir.join("snap.comms"), comms.join(" "))?;
        }
        Some("c2") if (5..=7).contains(&args.len()) => {
            let c1: SealCommitPhase1Output = serde_json::from_slice(&std::fs::read(&args[2])?)?;
            let sector: u64 = args[3].parse()?;
            let prover_id = parse_hex32("prover id", &args[4])?;
            let runs = runs(args.get(5))?;
            let in_flight: u32 = args.get(6).map_or(Ok(1), |s| s.parse())?;
            if in_flight > 1 {
                return c2_in_flight(&c1, sector, prover_id, runs, in_flight);
            }
            for run in 1..=runs {
                let t = Instant::now();
                let out = seal_commit_phase2(c1.clone(), prover_id, SectorId::from(sector))?;
                println!(
                    "{} seal_commit_phase2 (run {run}): {} bytes in {:.2} s (verified by filecoin-proofs)",
                    prover(),
                    out.proof.len(),
                    t.elapsed().as_secs_f64()
                );
            }
        }
        Some("snap") if args.len() == 3 || args.len() == 4 => {
            let dir = std::path::Path::new(&args[2]);
            let b64: Vec<String> = serde_json::from_slice(&std::fs::read(dir.join("snap.json"))?)?;
            use base64::Engine as _;
            let vanilla: Vec<filecoin_proofs_api::PartitionProofBytes> = b64
                .iter()
                .map(|s| base64::engine::general_purpose::STANDARD.decode(s))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .map(filecoin_proofs_api::PartitionProofBytes)
                .collect();
            let comms = std::fs::read_to_string(dir.join("snap.comms"))?;
            let c: Vec<[u8; 32]> = comms
                .split_whitespace()
                .map(|h| parse_hex32("commitment", h))
                .collect::<Result<_, _>>()?;
            for run in 1..=runs(args.get(3))? {
                let t = Instant::now();
                let proof = generate_empty_sector_update_proof_with_vanilla(
                    UPDATE_PROOF,
                    vanilla.clone(),
                    c[0],
                    c[1],
                    c[2],
                )?;
                let secs = t.elapsed().as_secs_f64();
                let ok =
                    verify_empty_sector_update_proof(UPDATE_PROOF, &proof.0, c[0], c[1], c[2])?;
                println!(
                    "{} generate_empty_sector_update_proof_with_vanilla (run {run}): {} bytes in {secs:.2} s (verified: {ok})",
                    prover(),
                    proof.0.len()
                );
            }
        }
        _ => {
            eprintln!(
                "usage: c2_peer seal DIR [SECTOR_SIZE] | c2_peer c2 C1 SECTOR PROVER_HEX [RUNS [IN_FLIGHT]] | c2_peer snap DIR [RUNS]"
            );
            std::process::exit(2);
        }
    }
    Ok(())
}

/// One proof of `c1` alone (the parameters loaded, the device first used),
/// then `runs` proofs, `in_flight` at a time, each on its own thread.
fn c2_in_flight(
    c1: &SealCommitPhase1Output,
    sector: u64,
    prover_id: [u8; 32],
    runs: u32,
    in_flight: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    seal_commit_phase2(c1.clone(), prover_id, SectorId::from(sector))?;
    println!(
        "{} seal_commit_phase2 (first, alone): {:.2} s (verified by filecoin-proofs)",
        prover(),
        t.elapsed().as_secs_f64()
    );
    let next = std::sync::atomic::AtomicU32::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..in_flight.min(runs))
            .map(|_| {
                scope.spawn(|| -> Result<(), String> {
                    loop {
                        let run = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        if run > runs {
                            return Ok(());
                        }
                        let t = Instant::now();
                        let out =
                            seal_commit_phase2(c1.clone(), prover_id, SectorId::from(sector))
                                .map_err(|e| format!("run {run}: {e:#}"))?;
                        println!(
                            "{} seal_commit_phase2 (run {run}, {in_flight} in flight): {} bytes in {:.2} s (verified by filecoin-proofs)",
                            prover(),
                            out.proof.len(),
                            t.elapsed().as_secs_f64()
                        );
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .map_err(|_| "a prover thread panicked".to_string())?
        })
    })?;
    let wall = started.elapsed().as_secs_f64();
    println!(
        "{} {runs} proofs, {in_flight} in flight: {wall:.2} s wall, {:.2} s/proof",
        prover(),
        wall / runs.max(1) as f64
    );
    Ok(())
}
