//! Times bellperson 0.27's CPU prover and zkpipe's CPU backend on the same
//! circuit, keys, witness and `r, s`, in one process, and checks that both
//! give the same proof bytes.
//!
//! ```text
//! cargo run --release --example bellperson_prove -- squaring-chain 2^16 [runs]
//! ```
//!
//! bellperson synthesizes by replaying the recorded R1CS (its circuit API is
//! bellpepper-core 0.2, ours 0.4), then runs its own evaluation, FFTs and
//! multiexps; zkpipe runs witness-only synthesis of the real circuit, SpMV,
//! NTTs and MSMs. Keys come from zkpipe's setup (bellperson reads them).

#[path = "../tests/support/replay.rs"]
mod replay;

use bellperson::groth16 as bp;
use blstrs::Bls12;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe::Fr;
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::groth16::{self, Prover};
use zkpipe::plugin::BackendConfig;
use zkpipe::r1cs::R1cs;
use zkpipe_circuits::BenchCircuit;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map(String::as_str).unwrap_or("squaring-chain");
    let size = args.get(1).map(String::as_str).unwrap_or("2^16");
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);

    let (r1cs, _) =
        R1cs::record(BenchCircuit::new(name, size, 0).expect("circuit")).expect("record");
    println!(
        "{name} {size}: {} constraints, {} public inputs",
        r1cs.num_constraints(),
        r1cs.num_inputs - 1
    );
    let t = Instant::now();
    let params = groth16::setup(&r1cs, 1);
    println!("zkpipe setup: {:.2?}", t.elapsed());
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let bp_params =
        bp::Parameters::<Bls12>::read(&bytes[..], false).expect("bellperson reads zkpipe's keys");

    let dir = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let be = Registry::load(&SearchPath::only([dir.clone(), dir.join("deps")]))
        .create("cpu", &BackendConfig::default())
        .expect("cpu backend");
    let r1cs = Arc::new(r1cs);
    let prover = Prover::new(Arc::new(be), Arc::new(params), r1cs.clone()).unwrap();
    let (r, s) = (Fr::from_u64(3), Fr::from_u64(4));

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..=runs {
        let t = Instant::now();
        let (proof, w, _) = prover
            .prove_circuit(BenchCircuit::new(name, size, i as u64).unwrap(), r, s)
            .unwrap();
        let ours_t = t.elapsed();

        let t = Instant::now();
        let replay = replay::Replay {
            r1cs: r1cs.clone(),
            witness: Arc::new(w),
        };
        let bp_proof =
            bp::create_proof(replay, &bp_params, replay::scalar(&r), replay::scalar(&s)).unwrap();
        let theirs_t = t.elapsed();
        let mut bp_bytes = Vec::new();
        bp_proof.write(&mut bp_bytes).unwrap();
        assert_eq!(proof.to_bytes().to_vec(), bp_bytes, "proofs differ");
        if i > 0 {
            // The first round is a warm-up.
            ours.push(ours_t);
            theirs.push(theirs_t);
        }
    }
    let (o, t) = (median(ours), median(theirs));
    println!(
        "zkpipe cpu (witness → proof): {:.1} ms",
        o.as_secs_f64() * 1e3
    );
    println!(
        "bellperson 0.27 (replayed synthesis → proof): {:.1} ms",
        t.as_secs_f64() * 1e3
    );
    println!(
        "ratio zkpipe / bellperson: {:.2}",
        o.as_secs_f64() / t.as_secs_f64()
    );
}
