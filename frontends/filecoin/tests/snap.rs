//! A SnapDeals update of a 2 KiB sector (sealed, encoded and vanilla-proved
//! by filecoin-proofs), proved by zkpipe on the CPU backend and accepted by
//! `verify_empty_sector_update_proof`; malformed inputs refused.

mod support;

use support::{engine, fixtures_env};
use zkpipe_core::Error;
use zkpipe_core::util::progress::Silent;
use zkpipe_filecoin::Blinding;
use zkpipe_filecoin::snap::{SnapRequest, param_set, prove_snap};
use zkpipe_filecoin::testing::{UPDATE_PROOF, seal_2kib, snap_2kib};

#[test]
fn snap_update_verifies_and_bad_inputs_are_refused() {
    fixtures_env();
    let engine = engine();
    let dir = tempfile::tempdir().unwrap();
    let sealed = seal_2kib(dir.path(), [4; 32], 9, 5).unwrap();
    let snapped = snap_2kib(dir.path(), &sealed, 11).unwrap();
    param_set(UPDATE_PROOF)
        .unwrap()
        .ensure(engine.r1cs_cache(), &Silent)
        .unwrap();
    let req = SnapRequest {
        registered: UPDATE_PROOF,
        comm_r_old: snapped.comm_r_old,
        comm_r_new: snapped.comm_r_new,
        comm_d_new: snapped.comm_d_new,
        vanilla: snapped.vanilla.clone(),
    };
    // prove_snap checks the proof with filecoin-proofs' verifier.
    let proved = prove_snap(&engine, &req, Blinding::Random, &Silent).unwrap();
    assert_eq!(proved.to_bytes().len(), 192);

    let refused = |r: SnapRequest, why: &str| {
        let e = prove_snap(&engine, &r, Blinding::Random, &Silent).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{why}: {e}");
    };
    // Commitments the vanilla proof was not made for.
    let mut other = snapped.comm_r_new;
    other[0] ^= 1;
    refused(
        SnapRequest {
            comm_r_new: other,
            ..req.clone()
        },
        "other comm_r_new",
    );
    refused(
        SnapRequest {
            comm_d_new: [0xff; 32],
            ..req.clone()
        },
        "comm_d_new not a field element",
    );
    let v = &snapped.vanilla[0];
    for (bad, why) in [
        (vec![v[..v.len() / 2].to_vec()], "truncated"),
        (vec![vec![0xff; 64]], "garbage"),
        (vec![vec![]], "empty"),
        (vec![], "none"),
        (vec![v.clone(), v.clone()], "one too many"),
    ] {
        refused(
            SnapRequest {
                vanilla: bad,
                ..req.clone()
            },
            why,
        );
    }
}
