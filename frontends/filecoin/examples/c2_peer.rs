//! The peer side of the C2 benchmark (`benches/filecoin/h200.sh`):
//!
//! - `c2_peer seal DIR`: seals a 2 KiB sector with filecoin-proofs (PC1,
//!   PC2, C1) into DIR and writes `DIR/c1.json`; prints the prover id and
//!   sector number.
//! - `c2_peer c2 C1 SECTOR PROVER_HEX`: filecoin-proofs' own
//!   `seal_commit_phase2` on the same C1 output and parameters, timed:
//!   bellperson 0.27 on the CPU, or SupraSeal's CUDA prover when built with
//!   the `supraseal` feature.

use std::time::Instant;

use filecoin_proofs_api::SectorId;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, seal_commit_phase2};
use zkpipe_filecoin::registry::{parse_hex32, prover_id_of_miner};
use zkpipe_filecoin::testing::seal_2kib;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("seal") if args.len() == 3 => {
            let dir = std::path::Path::new(&args[2]);
            let prover_id = prover_id_of_miner(1000);
            let sealed = seal_2kib(dir, prover_id, 42, 7)?;
            std::fs::write(dir.join("c1.json"), &sealed.c1_json)?;
            let hex: String = prover_id.iter().map(|b| format!("{b:02x}")).collect();
            println!("prover_id {hex} sector 42");
        }
        Some("c2") if args.len() == 5 => {
            let c1: SealCommitPhase1Output = serde_json::from_slice(&std::fs::read(&args[2])?)?;
            let sector: u64 = args[3].parse()?;
            let prover_id = parse_hex32("prover id", &args[4])?;
            let t = Instant::now();
            let out = seal_commit_phase2(c1, prover_id, SectorId::from(sector))?;
            let prover = if cfg!(feature = "supraseal") {
                "SupraSeal (CUDA)"
            } else {
                "bellperson (CPU)"
            };
            println!(
                "{prover} seal_commit_phase2: {} bytes in {:.2} s (verified by filecoin-proofs)",
                out.proof.len(),
                t.elapsed().as_secs_f64()
            );
        }
        _ => {
            eprintln!("usage: c2_peer seal DIR | c2_peer c2 C1 SECTOR PROVER_HEX");
            std::process::exit(2);
        }
    }
    Ok(())
}
