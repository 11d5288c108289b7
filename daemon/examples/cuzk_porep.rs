//! Drives PoRep C2 requests through a running daemon's cuzk API, as Curio
//! does, and times them (the daemon side of `benches/filecoin/in-flight.sh`):
//!
//!     cuzk_porep SOCKET C1_JSON SECTOR MINER PROOFS IN_FLIGHT
//!
//! Sends PROOFS requests for the same C1 output (distinct request ids, so
//! distinct jobs), at most IN_FLIGHT at a time, and prints each proof's
//! latency and the daemon's own stage times, then the wall time and
//! seconds per proof. The daemon verifies every proof before it answers;
//! a failed or short answer ends the run with an error.

use std::time::Instant;

use zkpipe_daemon::client::{Address, channel};
use zkpipe_daemon::cuzk_proto as pb;
use zkpipe_daemon::cuzk_proto::proving_engine_client::ProvingEngineClient;
use zkpipe_filecoin::porep::C1;

type Failure = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 7 {
        return Err("usage: cuzk_porep SOCKET C1_JSON SECTOR MINER PROOFS IN_FLIGHT".into());
    }
    let c1_json = std::fs::read(&args[2])?;
    let c1 = C1::parse(&c1_json)?;
    let sector: u64 = args[3].parse()?;
    let miner: u64 = args[4].parse()?;
    let proofs: usize = args[5].parse()?;
    let in_flight: usize = args[6].parse::<usize>()?.max(1);
    let sector_size = u64::from(c1.output.registered_proof.sector_size());
    let registered = go_state_types_number(c1.output.registered_proof)?;
    let ch = channel(&Address::Unix(args[1].clone().into())).await?;
    let client = ProvingEngineClient::new(ch)
        .max_decoding_message_size(256 << 20)
        .max_encoding_message_size(256 << 20);
    let run = std::process::id();

    let started = Instant::now();
    let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(in_flight));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..proofs {
        let permit = semaphore.clone().acquire_owned().await?;
        let mut c = client.clone();
        let req = pb::SubmitProofRequest {
            request_id: format!("porep-{run}-{i}"),
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            sector_size,
            registered_proof: registered,
            priority: pb::Priority::Normal as i32,
            vanilla_proof: c1_json.clone(),
            sector_number: sector,
            miner_id: miner,
            ..Default::default()
        };
        tasks.spawn(async move {
            let t = Instant::now();
            let r = c.prove(pb::ProveRequest { submit: Some(req) }).await;
            drop(permit);
            (i, t.elapsed().as_secs_f64(), r)
        });
    }
    let completed = pb::await_proof_response::Status::Completed as i32;
    let mut latencies = vec![];
    while let Some(joined) = tasks.join_next().await {
        let (i, secs, r) = joined?;
        let r = r?.into_inner().result.ok_or("an answer without a result")?;
        if r.status != completed || r.proof.is_empty() || r.proof.len() % 192 != 0 {
            return Err(format!("proof {i}: status {} ({})", r.status, r.error_message).into());
        }
        println!(
            "proof {i}: {secs:.2} s (queue {} ms, key load {} ms, synthesis {} ms, gpu {} ms, total {} ms; verified by the daemon)",
            r.queue_wait_ms, r.srs_load_ms, r.synthesis_ms, r.gpu_compute_ms, r.total_ms
        );
        latencies.push(secs);
    }
    let wall = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    println!(
        "{proofs} proofs, {in_flight} in flight: {wall:.2} s wall, {:.2} s/proof, latency median {:.2} s",
        wall / proofs.max(1) as f64,
        latencies.get(latencies.len() / 2).copied().unwrap_or(0.0)
    );
    Ok(())
}

/// go-state-types' number of a seal proof (what Curio sends).
fn go_state_types_number(p: zkpipe_filecoin::RegisteredSealProof) -> Result<u64, Failure> {
    (0..20)
        .find(|&n| zkpipe_filecoin::registry::seal_proof(n).is_ok_and(|q| q == p))
        .ok_or_else(|| format!("{p:?} has no go-state-types number here").into())
}
