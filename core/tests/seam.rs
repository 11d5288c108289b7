//! Seam types: layout identical to blst, encodings, point validation, roots of unity.

use blst::*;
use zkpipe_core::{
    Error, Fp, Fp2, Fr, G1Affine, G1Projective, G2Affine, G2Projective, util::sample,
};

#[test]
fn sizes_match_the_design() {
    use std::mem::size_of;
    assert_eq!(size_of::<Fr>(), 32);
    assert_eq!(size_of::<Fp>(), 48);
    assert_eq!(size_of::<Fp2>(), 96);
    assert_eq!(size_of::<G1Affine>(), 96);
    assert_eq!(size_of::<G1Projective>(), 144);
    assert_eq!(size_of::<G2Affine>(), 192);
    assert_eq!(size_of::<G2Projective>(), 288);
}

#[test]
fn fr_round_trips_through_blst_bit_for_bit() {
    for (i, k) in sample::scalars(64, 1).into_iter().enumerate() {
        // The seam value is blst's value: same bytes, same arithmetic.
        let b: blst_fr = *k.as_blst();
        assert_eq!(Fr::from_blst(b), k);
        let mut sq = blst_fr::default();
        // SAFETY: valid pointers to initialised blst values.
        unsafe { blst_fr_mul(&mut sq, &b, &b) };
        assert_eq!(Fr::from_blst(sq), k.mul(&k), "case {i}");
        assert_eq!(Fr::from_bytes_le(&k.to_bytes_le()).unwrap(), k);
    }
    assert_eq!(Fr::from_u64(5).to_bytes_le()[0], 5);
}

#[test]
fn fr_rejects_values_at_or_above_the_modulus() {
    let mut r = Fr::one().neg().to_bytes_le(); // r − 1
    r[0] += 1; // r itself
    assert!(matches!(
        Fr::from_bytes_le(&r),
        Err(Error::InvalidEncoding(_))
    ));
    assert!(matches!(
        Fr::from_bytes_le(&[0xff; 32]),
        Err(Error::InvalidEncoding(_))
    ));
}

#[test]
fn points_round_trip_through_blst_and_both_encodings() {
    let g1 = sample::g1_points(17, 2);
    for p in g1.iter().chain([&G1Affine::identity()]) {
        let b: blst_p1_affine = *p.as_blst();
        assert_eq!(G1Affine::from_blst(b), *p);
        assert_eq!(G1Affine::from_compressed(&p.to_compressed()).unwrap(), *p);
        assert_eq!(
            G1Affine::from_uncompressed(&p.to_uncompressed()).unwrap(),
            *p
        );
        assert!(p.is_on_curve() && p.is_in_subgroup());
    }
    let g2 = sample::g2_points(17, 3);
    for p in g2.iter().chain([&G2Affine::identity()]) {
        assert_eq!(G2Affine::from_blst(*p.as_blst()), *p);
        assert_eq!(G2Affine::from_compressed(&p.to_compressed()).unwrap(), *p);
        assert_eq!(
            G2Affine::from_uncompressed(&p.to_uncompressed()).unwrap(),
            *p
        );
    }
    // The zcash encoding of the identity: compressed and infinity flags only.
    let mut inf = [0u8; 48];
    inf[0] = 0xc0;
    assert_eq!(G1Affine::identity().to_compressed(), inf);
}

#[test]
fn projective_arithmetic_agrees_with_blst_scalar_multiplication() {
    let g = G1Projective::generator();
    let k = Fr::from_u64(5);
    let five_g = g.add(&g).double().add(&g);
    assert!(five_g.eq_point(&g.mul(&k)));
    assert!(g.add(&g.neg()).is_identity());
    let g2 = G2Projective::generator();
    assert!(g2.double().eq_point(&g2.mul(&Fr::from_u64(2))));
    let batch = G1Projective::batch_to_affine(&[g, five_g, G1Projective::identity()]);
    assert_eq!(
        batch,
        vec![g.to_affine(), five_g.to_affine(), G1Affine::identity()]
    );
}

fn fp(v: u64) -> blst_fp {
    let mut out = blst_fp::default();
    // SAFETY: blst reads six limbs from the array and writes `out`.
    unsafe { blst_fp_from_uint64(&mut out, [v, 0, 0, 0, 0, 0].as_ptr()) };
    out
}

fn be_bytes(x: &blst_fp) -> [u8; 48] {
    let mut out = [0u8; 48];
    // SAFETY: blst writes exactly 48 bytes into `out`.
    unsafe { blst_bendian_from_fp(out.as_mut_ptr(), x) };
    out
}

/// A point on y² = x³ + 4 (so on the curve) outside the order-r subgroup.
fn g1_point_outside_subgroup() -> ([u8; 96], [u8; 48]) {
    for x in 1u64.. {
        let x = fp(x);
        let (mut x3, mut y, mut rhs) = (blst_fp::default(), blst_fp::default(), blst_fp::default());
        // SAFETY: blst field ops on valid, initialised values.
        unsafe {
            blst_fp_sqr(&mut x3, &x);
            blst_fp_mul(&mut x3, &x3, &x);
            blst_fp_add(&mut rhs, &x3, &fp(4));
            if !blst_fp_sqrt(&mut y, &rhs) {
                continue;
            }
        }
        let mut unc = [0u8; 96];
        unc[..48].copy_from_slice(&be_bytes(&x));
        unc[48..].copy_from_slice(&be_bytes(&y));
        let mut comp = be_bytes(&x);
        comp[0] |= 0x80;
        return (unc, comp);
    }
    unreachable!()
}

#[test]
fn g1_decoding_rejects_points_off_the_subgroup() {
    let (unc, comp) = g1_point_outside_subgroup();
    assert!(matches!(
        G1Affine::from_uncompressed(&unc),
        Err(Error::NotInSubgroup(_))
    ));
    assert!(matches!(
        G1Affine::from_compressed(&comp),
        Err(Error::NotInSubgroup(_))
    ));
    // The unchecked forms accept it: it is on the curve.
    let p = G1Affine::from_uncompressed_unchecked(&unc).unwrap();
    assert!(p.is_on_curve() && !p.is_in_subgroup());
}

#[test]
fn g1_decoding_rejects_points_off_the_curve() {
    let p = sample::g1_points(1, 9)[0];
    let mut unc = p.to_uncompressed();
    unc[95] ^= 1;
    assert!(matches!(
        G1Affine::from_uncompressed(&unc),
        Err(Error::NotOnCurve(_))
    ));
    // x with no y: x³ + 4 is not a square.
    let x = (1u64..)
        .map(fp)
        // SAFETY: blst field ops on valid, initialised values.
        .find(|x| unsafe {
            let (mut x3, mut rhs, mut y) =
                (blst_fp::default(), blst_fp::default(), blst_fp::default());
            blst_fp_sqr(&mut x3, x);
            blst_fp_mul(&mut x3, &x3, x);
            blst_fp_add(&mut rhs, &x3, &fp(4));
            !blst_fp_sqrt(&mut y, &rhs)
        })
        .unwrap();
    let mut comp = be_bytes(&x);
    comp[0] |= 0x80;
    assert!(G1Affine::from_compressed(&comp).is_err());
    // Garbage flags and truncated-field values are encoding errors, never panics.
    assert!(G1Affine::from_compressed(&[0xff; 48]).is_err());
    assert!(G1Affine::from_uncompressed(&[0xff; 96]).is_err());
}

#[test]
fn g2_decoding_rejects_bad_points() {
    let p = sample::g2_points(1, 10)[0];
    let mut unc = p.to_uncompressed();
    unc[191] ^= 1;
    assert!(matches!(
        G2Affine::from_uncompressed(&unc),
        Err(Error::NotOnCurve(_))
    ));
    assert!(G2Affine::from_compressed(&[0xff; 96]).is_err());

    // On the twist y² = x³ + 4(1 + u) but outside the subgroup.
    let b = blst_fp2 { fp: [fp(4), fp(4)] };
    for c0 in 1u64.. {
        let x = blst_fp2 {
            fp: [fp(c0), fp(1)],
        };
        let (mut x3, mut rhs, mut y) = (
            blst_fp2::default(),
            blst_fp2::default(),
            blst_fp2::default(),
        );
        // SAFETY: blst field ops on valid, initialised values.
        unsafe {
            blst_fp2_sqr(&mut x3, &x);
            blst_fp2_mul(&mut x3, &x3, &x);
            blst_fp2_add(&mut rhs, &x3, &b);
            if !blst_fp2_sqrt(&mut y, &rhs) {
                continue;
            }
        }
        // zcash order: x.c1, x.c0, y.c1, y.c0, each big-endian.
        let mut unc = [0u8; 192];
        for (i, f) in [&x.fp[1], &x.fp[0], &y.fp[1], &y.fp[0]]
            .into_iter()
            .enumerate()
        {
            unc[i * 48..(i + 1) * 48].copy_from_slice(&be_bytes(f));
        }
        assert!(matches!(
            G2Affine::from_uncompressed(&unc),
            Err(Error::NotInSubgroup(_))
        ));
        assert!(G2Affine::from_uncompressed_unchecked(&unc).is_ok());
        return;
    }
}

#[test]
fn roots_of_unity_have_exact_order() {
    for log_n in [1u32, 2, 10, 28, 32] {
        let w = Fr::root_of_unity(log_n);
        let mut x = w;
        for _ in 1..log_n {
            x = x.mul(&x);
        }
        // w^(2^(log_n − 1)) = −1, so w has order exactly 2^log_n.
        assert_eq!(x, Fr::one().neg(), "log_n = {log_n}");
    }
}

/// A backend declares its own device scratch per size; core reads it for
/// the next power of two and never assumes one backend's layout.
#[test]
fn declared_scratch_is_read_per_power_of_two() {
    use zkpipe_core::plugin::{Capabilities, OpSupport, ops};
    let caps = Capabilities {
        ops: vec![
            OpSupport::new(ops::MSM_G1, 10).with_scratch(|n| 100 * n + 7),
            OpSupport::new(ops::NTT, 10),
        ]
        .into(),
    };
    assert_eq!(caps.scratch_bytes(ops::MSM_G1, 1), 107);
    assert_eq!(caps.scratch_bytes(ops::MSM_G1, 1000), 100 * 1024 + 7);
    assert_eq!(caps.scratch_bytes(ops::MSM_G1, 1024), 100 * 1024 + 7);
    // Past the table: its last entry; undeclared or unknown ops: none.
    assert_eq!(caps.scratch_bytes(ops::MSM_G1, 1 << 20), 100 * 1024 + 7);
    assert_eq!(caps.scratch_bytes(ops::NTT, 1 << 8), 0);
    assert_eq!(caps.scratch_bytes(ops::MSM_G2, 4), 0);
}
