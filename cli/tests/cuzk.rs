//! cuzk's gRPC API on `zkpipe serve`, driven as Curio's `lib/cuzk` client
//! drives it (the same fields: the C1 output in its JSON envelope, PoSt
//! vanilla proofs as bincode, SnapDeals commitments as CID bytes, miner id,
//! sector number, go-state-types proof numbers), over the Unix socket; every returned proof is checked here
//! with filecoin-proofs' verifiers.

mod support;

use std::collections::BTreeMap;
use std::process::Child;
use std::time::Duration;

use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};
use support::filecoin_fixtures::{fixtures, fixtures_env};
use zkpipe_daemon::client::{Address, channel};
use zkpipe_daemon::cuzk_proto as pb;
use zkpipe_daemon::cuzk_proto::proving_engine_client::ProvingEngineClient;
use zkpipe_filecoin::registry::prover_id_of_miner;
use zkpipe_filecoin::testing::{
    SEAL_PROOF, UPDATE_PROOF, WINDOW_POST, WINNING_POST, post_vanilla, seal_2kib, snap_2kib,
};

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const MINER: u64 = 1000;
const SECTOR: u64 = 21;

/// A commitment's CID bytes, as Curio's `cid.Bytes()` gives them (CIDv1,
/// fil-commitment-sealed + poseidon, or -unsealed + sha2-256-trunc254).
fn cid_bytes(sealed: bool, comm: [u8; 32]) -> Vec<u8> {
    let codec_hash: &[u8] = if sealed {
        &[0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02]
    } else {
        &[0x81, 0xe2, 0x03, 0x92, 0x20]
    };
    [&[1u8][..], codec_hash, &[32], &comm].concat()
}

fn request(kind: pb::ProofKind, registered: u64) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: kind as i32,
        sector_size: 2048,
        registered_proof: registered,
        priority: pb::Priority::Normal as i32,
        sector_number: SECTOR,
        miner_id: MINER,
        ..Default::default()
    }
}

#[test]
fn curio_requests_through_the_cuzk_api() {
    fixtures_env();
    let o = support::zkpipe_command()
        .env("FIL_PROOFS_PARAMETER_CACHE", fixtures().join("params"))
        .env("ZKPIPE_CACHE_DIR", fixtures().join("zkpipe-cache"))
        .args(["filecoin", "params", "--sector-size", "2KiB"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = tempfile::tempdir().unwrap();
    let sealed = seal_2kib(dir.path(), prover_id_of_miner(MINER), SECTOR, 7).unwrap();
    let socket = dir.path().join("zkpipe.sock");
    let mut cmd = support::zkpipe_command();
    cmd.env("FIL_PROOFS_PARAMETER_CACHE", fixtures().join("params"))
        .arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--keys-dir")
        .arg(fixtures().join("zkpipe-cache"))
        .args(["--set", "logging.level=warn"]);
    let (child, lines) = support::spawn_with_lines(cmd);
    let _daemon = Daemon(child);
    while !lines
        .recv_timeout(Duration::from_secs(120))
        .expect("the daemon starts")
        .starts_with("listening unix:")
    {}

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let ch = channel(&Address::Unix(socket.clone())).await.unwrap();
        let mut c = ProvingEngineClient::new(ch)
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20);
        let base = c.clone();
        let prove = |req: pb::SubmitProofRequest| {
            let mut c = base.clone();
            async move {
                c.prove(pb::ProveRequest { submit: Some(req) })
                    .await
                    .map(|r| r.into_inner().result.unwrap())
            }
        };
        let completed = pb::await_proof_response::Status::Completed as i32;

        // PoRep C2: Curio wraps the C1 JSON as {SectorNum, Phase1Out, SectorSize}.
        use base64::Engine as _;
        let wrapped = serde_json::to_vec(&serde_json::json!({
            "SectorNum": SECTOR,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&sealed.c1_json),
            "SectorSize": 2048,
        }))
        .unwrap();
        let porep = pb::SubmitProofRequest {
            request_id: format!("porep-{MINER}-{SECTOR}"),
            vanilla_proof: wrapped,
            ..request(pb::ProofKind::PorepSealCommit, 5)
        };
        let r = prove(porep.clone()).await.unwrap();
        assert_eq!(r.status, completed, "{}", r.error_message);
        // Curio's per-stage times: synthesis and device work, within the total.
        assert!(r.synthesis_ms > 0 && r.gpu_compute_ms > 0, "{r:?}");
        assert!(r.synthesis_ms <= r.total_ms * 8, "{r:?}");
        let c1: filecoin_proofs_api::seal::SealCommitPhase1Output =
            serde_json::from_slice(&sealed.c1_json).unwrap();
        assert!(
            filecoin_proofs_api::seal::verify_seal(
                SEAL_PROOF,
                c1.comm_r,
                c1.comm_d,
                sealed.prover_id,
                SectorId::from(SECTOR),
                c1.ticket,
                c1.seed,
                &r.proof
            )
            .unwrap()
        );
        // The same request id and request: the same job.
        let again = c.submit_proof(porep.clone()).await.unwrap().into_inner();
        assert_eq!(again.job_id, r.job_id);
        // The same request id, another request: refused.
        let other = pb::SubmitProofRequest {
            sector_number: 22,
            ..porep.clone()
        };
        let e = c.submit_proof(other).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::AlreadyExists, "{e}");

        // WindowPoSt (one partition) and WinningPoSt from bincode vanilla proofs.
        let randomness = [4u8; 32];
        let mut replicas = BTreeMap::new();
        for (registered, number, kind) in [
            (WINDOW_POST, 10, pb::ProofKind::WindowPostPartition),
            (WINNING_POST, 0, pb::ProofKind::WinningPost),
        ] {
            replicas.insert(
                SectorId::from(SECTOR),
                PublicReplicaInfo::new(registered, sealed.comm_r),
            );
            let vanilla = post_vanilla(&sealed, registered, randomness).unwrap();
            let req = pb::SubmitProofRequest {
                vanilla_proofs: vec![vanilla],
                randomness: randomness.to_vec(),
                priority: pb::Priority::High as i32,
                ..request(kind, number)
            };
            let r = prove(req).await.unwrap();
            assert_eq!(r.status, completed, "{kind:?}: {}", r.error_message);
            let ok = if kind == pb::ProofKind::WinningPost {
                verify_winning_post(&randomness, &r.proof, &replicas, sealed.prover_id)
            } else {
                verify_window_post(
                    &randomness,
                    &[(registered, &r.proof[..])],
                    &replicas,
                    sealed.prover_id,
                )
            };
            assert!(ok.unwrap(), "{kind:?}: filecoin-proofs rejects the proof");
        }

        // Malformed requests: refused with the reason, before any work.
        for (what, req) in [
            (
                "garbage C1",
                pb::SubmitProofRequest {
                    vanilla_proof: b"{\"SectorNum\": 1".to_vec(),
                    ..request(pb::ProofKind::PorepSealCommit, 5)
                },
            ),
            (
                "wrong proof number",
                pb::SubmitProofRequest {
                    vanilla_proof: sealed.c1_json.clone(),
                    ..request(pb::ProofKind::PorepSealCommit, 8)
                },
            ),
            (
                "garbage vanilla proof",
                pb::SubmitProofRequest {
                    vanilla_proofs: vec![vec![1, 2, 3]],
                    randomness: randomness.to_vec(),
                    ..request(pb::ProofKind::WindowPostPartition, 10)
                },
            ),
            (
                "short randomness",
                pb::SubmitProofRequest {
                    vanilla_proofs: vec![vec![1, 2, 3]],
                    randomness: vec![1; 7],
                    ..request(pb::ProofKind::WinningPost, 0)
                },
            ),
            ("no kind", request(pb::ProofKind::Unspecified, 5)),
        ] {
            let e = prove(req).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{what}: {e}");
        }

        // SnapDeals: vanilla proofs per partition, commitments as CID bytes.
        let snapped = snap_2kib(dir.path(), &sealed, 3).unwrap();
        let snap = pb::SubmitProofRequest {
            request_id: format!("snap-{MINER}-{SECTOR}"),
            vanilla_proofs: snapped.vanilla.clone(),
            comm_r_old: cid_bytes(true, snapped.comm_r_old),
            comm_r_new: cid_bytes(true, snapped.comm_r_new),
            comm_d_new: cid_bytes(false, snapped.comm_d_new),
            ..request(pb::ProofKind::SnapDealsUpdate, 0)
        };
        let r = prove(snap.clone()).await.unwrap();
        assert_eq!(r.status, completed, "snap: {}", r.error_message);
        assert!(
            filecoin_proofs_api::update::verify_empty_sector_update_proof(
                UPDATE_PROOF,
                &r.proof,
                snapped.comm_r_old,
                snapped.comm_r_new,
                snapped.comm_d_new,
            )
            .unwrap(),
            "filecoin-proofs rejects the sector update proof"
        );
        for (what, req) in [
            (
                "CommD's CID as comm_r_new",
                pb::SubmitProofRequest {
                    request_id: String::new(),
                    comm_r_new: cid_bytes(false, snapped.comm_r_new),
                    ..snap.clone()
                },
            ),
            (
                "update proof number 5",
                pb::SubmitProofRequest {
                    request_id: String::new(),
                    ..request(pb::ProofKind::SnapDealsUpdate, 5)
                },
            ),
            (
                "garbage snap vanilla proof",
                pb::SubmitProofRequest {
                    request_id: String::new(),
                    vanilla_proofs: vec![vec![7; 100]],
                    ..snap.clone()
                },
            ),
        ] {
            let e = prove(req).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{what}: {e}");
        }
        // Vanilla proofs for other randomness: the job fails with the reason.
        let vanilla = post_vanilla(&sealed, WINNING_POST, randomness).unwrap();
        let r = prove(pb::SubmitProofRequest {
            vanilla_proofs: vec![vanilla],
            randomness: vec![5; 32],
            ..request(pb::ProofKind::WinningPost, 0)
        })
        .await;
        match r {
            Ok(r) => assert_eq!(r.status, pb::await_proof_response::Status::Failed as i32),
            Err(e) => assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}"),
        }

        let status = c
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        let loaded: Vec<&str> = status
            .loaded_srs
            .iter()
            .map(|s| s.circuit_id.as_str())
            .collect();
        assert!(loaded.contains(&"porep-2k"), "{loaded:?}");
        assert!(loaded.contains(&"snap-2k"), "{loaded:?}");
        assert!(status.total_proofs_completed >= 4);
        let evicted = c
            .evict_srs(pb::EvictSrsRequest {
                circuit_id: "porep-2k".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(evicted.was_loaded && evicted.freed_bytes > 0);
        let pre = c
            .preload_srs(pb::PreloadSrsRequest {
                circuit_id: "wpost-2k".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(pre.already_loaded);
        let e = c
            .preload_srs(pb::PreloadSrsRequest {
                circuit_id: "porep-32x".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        let e = c
            .cancel_proof(pb::CancelProofRequest {
                job_id: "99999".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);
        let m = c
            .get_metrics(pb::GetMetricsRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(m.prometheus_text.contains("zkpipe_"));
    });
}

/// A process's peak resident memory (`VmHWM`), bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in /proc/{pid}/status"));
    kib << 10
}

/// Three ~64 MiB C1 outputs of padding (whitespace, an over-long string,
/// an array of zeros) sent at once through the cuzk API are each refused
/// with INVALID_ARGUMENT, and the daemon's peak memory stays under
/// 3 × 64 MiB + 1 GiB. While a request is received and parsed the daemon
/// holds it about three times (the HTTP/2 body, the decoded message, the
/// encoding the request digest hashes): at most ~576 MiB for three, beside
/// its own ~25 MiB (345 MiB peak measured on a 2-core VM). A JSON value
/// tree of the zeros alone would take ~1 GB, so a parse that built one
/// would pass the bound.
#[test]
fn three_large_c1_requests_of_padding_at_once_stay_within_bounded_memory() {
    const PAD: usize = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("zkpipe.sock");
    let mut cmd = support::zkpipe_command();
    cmd.arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--keys-dir")
        .arg(dir.path().join("keys"))
        .args(["--set", "logging.level=warn"]);
    let (child, lines) = support::spawn_with_lines(cmd);
    let pid = child.id();
    let _daemon = Daemon(child);
    while !lines
        .recv_timeout(Duration::from_secs(120))
        .expect("the daemon starts")
        .starts_with("listening unix:")
    {}
    let at_start = peak_rss(pid);

    let head = br#"{"registered_proof":"StackedDrg2KiBV1_1","#;
    let mut spaces = head.to_vec();
    spaces.resize(head.len() + PAD, b' ');
    spaces.extend(br#""pad":0}"#);
    let mut string = head.to_vec();
    string.extend(br#""pad":""#);
    string.resize(string.len() + PAD, b'x');
    string.extend(br#""}"#);
    let mut zeros = head.to_vec();
    zeros.extend(br#""pad":["#);
    zeros.extend(b"0,".repeat(PAD / 2));
    zeros.extend(b"0]}");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let t0 = std::time::Instant::now();
    rt.block_on(async {
        let ch = channel(&Address::Unix(socket.clone())).await.unwrap();
        let c = ProvingEngineClient::new(ch)
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20);
        let sent: Vec<_> = [("spaces", spaces), ("string", string), ("zeros", zeros)]
            .into_iter()
            .map(|(what, body)| {
                let mut c = c.clone();
                let req = pb::SubmitProofRequest {
                    vanilla_proof: body,
                    ..request(pb::ProofKind::PorepSealCommit, 5)
                };
                tokio::spawn(async move { (what, c.submit_proof(req).await) })
            })
            .collect();
        for task in sent {
            let (what, r) = task.await.unwrap();
            let e = r.expect_err(what);
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{what}: {e}");
            assert!(e.message().contains("vanilla_proof"), "{what}: {e}");
        }
    });
    let took = t0.elapsed();
    let peak = peak_rss(pid);
    let bound = 3 * PAD as u64 + (1 << 30);
    eprintln!(
        "daemon peak RSS {} MiB (at start {} MiB, bound {} MiB), three requests in {took:.1?}",
        peak >> 20,
        at_start >> 20,
        bound >> 20
    );
    assert!(peak < bound, "peak RSS {peak} bytes over {bound}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}
