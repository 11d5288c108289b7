//! WindowPoSt and WinningPoSt over a 2 KiB sector sealed by filecoin-proofs,
//! proved by zkpipe on the CPU backend and accepted by filecoin-proofs'
//! verifiers; malformed inputs refused with the reason.

mod support;

use support::{engine, fixtures_env};
use zkpipe_core::Error;
use zkpipe_core::util::progress::Silent;
use zkpipe_filecoin::Blinding;
use zkpipe_filecoin::post::{PostRequest, param_set, prove_post};
use zkpipe_filecoin::testing::{WINDOW_POST, WINNING_POST, post_vanilla, seal_2kib};

#[test]
fn window_and_winning_post_verify_and_bad_inputs_are_refused() {
    fixtures_env();
    let engine = engine();
    let dir = tempfile::tempdir().unwrap();
    let sealed = seal_2kib(dir.path(), [3; 32], 7, 3).unwrap();
    for registered in [WINDOW_POST, WINNING_POST] {
        param_set(registered)
            .unwrap()
            .ensure(engine.r1cs_cache(), &Silent)
            .unwrap();
        let randomness = [5u8; 32];
        let vanilla = post_vanilla(&sealed, registered, randomness).unwrap();
        let req = PostRequest {
            registered,
            randomness,
            prover_id: sealed.prover_id,
            vanilla: vec![vanilla.clone()],
            partition: None,
        };
        let proved = prove_post(&engine, &req, Blinding::Random, &Silent).unwrap();
        assert_eq!(proved.to_bytes().len(), 192, "{registered:?}");

        // Other randomness: the vanilla proof answers other challenges.
        let other = PostRequest {
            randomness: [6u8; 32],
            ..req.clone()
        };
        let e = prove_post(&engine, &other, Blinding::Random, &Silent).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{registered:?}: {e}");

        // Truncated and garbage vanilla proofs.
        for bad in [
            vanilla[..vanilla.len() / 2].to_vec(),
            vec![0xff; 64],
            vec![],
        ] {
            let r = PostRequest {
                vanilla: vec![bad],
                ..req.clone()
            };
            let e = prove_post(&engine, &r, Blinding::Random, &Silent).unwrap_err();
            assert!(matches!(e, Error::InvalidInput(_)), "{registered:?}: {e}");
        }
    }
}
