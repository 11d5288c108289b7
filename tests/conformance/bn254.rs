//! BN254's trials: each backend's BN254 ops against arkworks' BN254 (an
//! implementation independent of the halo2curves the CPU backend uses),
//! with exact equality; a backend that lists no BN254 op must refuse each
//! one as unsupported.

use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::{FftField, Field, One, PrimeField, Zero};
use libtest_mimic::{Failed, Trial};
use zkpipe::bn254::{self, Fr, G1Affine, G2Affine, sample};
use zkpipe::plugin::{BasesHandle, ErrorCode, MsmConfig, NttConfigOf, NttDirection, NttOrder, ops};
use zkpipe::{Backend, Curve, Error};

use super::{Target, expect_code, fail_on, max_log, order_name};

type ArkFr = ark_bn254::Fr;
type ArkFq = ark_bn254::Fq;

fn ark_fr(x: &Fr) -> ArkFr {
    ArkFr::from_le_bytes_mod_order(&x.to_bytes_le())
}

fn ark_fq(x: &bn254::Fp) -> ArkFq {
    ArkFq::from_le_bytes_mod_order(&x.to_bytes_le())
}

fn ark_fq2(x: &bn254::Fp2) -> ark_bn254::Fq2 {
    ark_bn254::Fq2::new(ark_fq(&x.c[0]), ark_fq(&x.c[1]))
}

fn fq_bytes(x: &ArkFq) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&x.into_bigint().0.map(u64::to_le_bytes).concat());
    out
}

/// What the trials need of G1 and G2 alike.
trait Group: 'static {
    type Aff: Copy + PartialEq + std::fmt::Debug + Send + Sync + Default;
    type Ark: CurveGroup + VariableBaseMSM<ScalarField = ArkFr>;
    const OP: &'static str;
    fn points(n: usize, seed: u64) -> Vec<Self::Aff>;
    fn to_ark(p: &Self::Aff) -> <Self::Ark as CurveGroup>::Affine;
    fn neg(p: &Self::Aff) -> Self::Aff;
    /// The affine coordinates as canonical bytes (empty for the identity).
    fn coords(p: &Self::Aff) -> Vec<[u8; 32]>;
    fn ark_coords(p: &<Self::Ark as CurveGroup>::Affine) -> Vec<[u8; 32]>;
    fn msm(be: &Backend, b: &[Self::Aff], s: &[Fr]) -> Result<Self::Aff, Error>;
    fn upload(be: &Backend, b: &[Self::Aff]) -> Result<BasesHandle, Error>;
    fn msm_resident(be: &Backend, h: BasesHandle, s: &[Fr]) -> Result<Self::Aff, Error>;
}

struct G1;
struct G2;

impl Group for G1 {
    type Aff = G1Affine;
    type Ark = ark_bn254::G1Projective;
    const OP: &'static str = ops::bn254::MSM_G1;
    fn points(n: usize, seed: u64) -> Vec<G1Affine> {
        sample::g1_points(n, seed)
    }
    fn to_ark(p: &G1Affine) -> ark_bn254::G1Affine {
        if p.is_identity() {
            return ark_bn254::G1Affine::identity();
        }
        ark_bn254::G1Affine::new_unchecked(ark_fq(&p.x), ark_fq(&p.y))
    }
    fn neg(p: &G1Affine) -> G1Affine {
        G1Affine::from_h2c(-p.h2c())
    }
    fn coords(p: &G1Affine) -> Vec<[u8; 32]> {
        if p.is_identity() {
            return vec![];
        }
        vec![p.x.to_bytes_le(), p.y.to_bytes_le()]
    }
    fn ark_coords(p: &ark_bn254::G1Affine) -> Vec<[u8; 32]> {
        p.xy()
            .map_or(vec![], |(x, y)| vec![fq_bytes(&x), fq_bytes(&y)])
    }
    fn msm(be: &Backend, b: &[G1Affine], s: &[Fr]) -> Result<G1Affine, Error> {
        be.bn254_msm_g1(b, s, &MsmConfig::default())
            .map(|p| p.to_affine())
    }
    fn upload(be: &Backend, b: &[G1Affine]) -> Result<BasesHandle, Error> {
        be.bn254_upload_bases_g1(b, 0)
    }
    fn msm_resident(be: &Backend, h: BasesHandle, s: &[Fr]) -> Result<G1Affine, Error> {
        be.bn254_msm_g1(h, s, &MsmConfig::default())
            .map(|p| p.to_affine())
    }
}

impl Group for G2 {
    type Aff = G2Affine;
    type Ark = ark_bn254::G2Projective;
    const OP: &'static str = ops::bn254::MSM_G2;
    fn points(n: usize, seed: u64) -> Vec<G2Affine> {
        sample::g2_points(n, seed)
    }
    fn to_ark(p: &G2Affine) -> ark_bn254::G2Affine {
        if p.is_identity() {
            return ark_bn254::G2Affine::identity();
        }
        ark_bn254::G2Affine::new_unchecked(ark_fq2(&p.x), ark_fq2(&p.y))
    }
    fn neg(p: &G2Affine) -> G2Affine {
        G2Affine::from_h2c(-p.h2c())
    }
    fn coords(p: &G2Affine) -> Vec<[u8; 32]> {
        if p.is_identity() {
            return vec![];
        }
        [p.x.c, p.y.c]
            .concat()
            .iter()
            .map(|c| c.to_bytes_le())
            .collect()
    }
    fn ark_coords(p: &ark_bn254::G2Affine) -> Vec<[u8; 32]> {
        p.xy().map_or(vec![], |(x, y)| {
            [x.c0, x.c1, y.c0, y.c1].iter().map(fq_bytes).collect()
        })
    }
    fn msm(be: &Backend, b: &[G2Affine], s: &[Fr]) -> Result<G2Affine, Error> {
        be.bn254_msm_g2(b, s, &MsmConfig::default())
            .map(|p| p.to_affine())
    }
    fn upload(be: &Backend, b: &[G2Affine]) -> Result<BasesHandle, Error> {
        be.bn254_upload_bases_g2(b, 0)
    }
    fn msm_resident(be: &Backend, h: BasesHandle, s: &[Fr]) -> Result<G2Affine, Error> {
        be.bn254_msm_g2(h, s, &MsmConfig::default())
            .map(|p| p.to_affine())
    }
}

fn check_msm<G: Group>(be: &Backend, bases: &[G::Aff], scalars: &[Fr]) -> Result<(), Failed> {
    check_against_ark::<G>(fail_on(G::msm(be, bases, scalars))?, bases, scalars)
}

/// `got` equals arkworks' MSM of the first `scalars.len()` of `bases`.
fn check_against_ark<G: Group>(
    got: G::Aff,
    bases: &[G::Aff],
    scalars: &[Fr],
) -> Result<(), Failed> {
    let bases = &bases[..scalars.len()];
    let ark_bases: Vec<_> = bases.iter().map(G::to_ark).collect();
    let ark_scalars: Vec<_> = scalars.iter().map(ark_fr).collect();
    let want = G::Ark::msm(&ark_bases, &ark_scalars)
        .map_err(|n| format!("arkworks refused the lengths ({n})"))?
        .into_affine();
    if G::coords(&got) != G::ark_coords(&want) {
        return Err(format!(
            "{} of {} points differs from arkworks': got {got:?}",
            G::OP,
            bases.len()
        )
        .into());
    }
    Ok(())
}

/// Sizes 0, 1, 2, 3, 5, then 2^k ± 1 up to `max`.
fn sizes(max: u32) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 3, 5];
    for k in 3..=max {
        v.extend([(1usize << k) - 1, (1 << k) + 1]);
    }
    v
}

/// `n` terms with zero, one, r − 1 and random scalars over the identity,
/// repeated points and points beside their negations.
fn edges<G: Group>(n: usize) -> (Vec<G::Aff>, Vec<Fr>) {
    let mut bases = G::points(n, 80);
    let mut scalars = sample::scalars(n, 81);
    for i in 0..n {
        match i % 8 {
            0 => scalars[i] = Fr::ZERO,
            1 => scalars[i] = Fr::one(),
            2 => scalars[i] = Fr::one().neg(),
            3 => bases[i] = G::Aff::default(),
            4 => bases[i] = bases[i - 1],
            5 => bases[i] = G::neg(&bases[i - 1]),
            _ => {}
        }
    }
    (bases, scalars)
}

fn msm_trials<G: Group>(t: &Target, max: u32, out: &mut Vec<Trial>) {
    for n in sizes(max) {
        out.push(t.trial(format!("{}/random/{n}", G::OP), move |be| {
            check_msm::<G>(be, &G::points(n, 70 + n as u64), &sample::scalars(n, 71))
        }));
    }
    // 2^15 points: past halo2curves' switch to its bucket method (~22,000),
    // which cannot read the identity's coordinates.
    out.push(t.trial(format!("{}/edges at 2^15", G::OP), |be| {
        let (bases, scalars) = edges::<G>(1 << 15);
        check_msm::<G>(be, &bases, &scalars)
    }));
    out.push(t.trial(format!("{}/edges", G::OP), |be| {
        let (bases, scalars) = edges::<G>(64);
        check_msm::<G>(be, &bases, &scalars)?;
        // P·s + (−P)·s: the identity.
        let p = bases[7];
        let s = scalars[7];
        check_msm::<G>(be, &[p, G::neg(&p)], &[s, s])?;
        check_msm::<G>(be, &[G::Aff::default(); 3], &sample::scalars(3, 82))
    }));
    out.push(t.trial(format!("{}/unequal lengths", G::OP), |be| {
        expect_code(
            G::msm(be, &G::points(3, 83), &sample::scalars(2, 84)),
            ErrorCode::INVALID_INPUT,
        )
    }));
    if t.caps.supports(ops::bn254::RESIDENT_BASES) {
        resident_trials::<G>(t, max, out);
    }
}

/// MSMs on resident bases: a prefix of the set, twice, edge cases at 2^15,
/// and the handle's lifetime and checks.
fn resident_trials<G: Group>(t: &Target, max: u32, out: &mut Vec<Trial>) {
    let n = (1usize << max) + 1;
    out.push(t.trial(format!("{}/resident/{n}", G::OP), move |be| {
        let bases = G::points(n + 3, 72);
        let scalars = sample::scalars(n, 73);
        let h = fail_on(G::upload(be, &bases))?;
        // Two calls on one handle: residency must survive use.
        for _ in 0..2 {
            check_against_ark::<G>(fail_on(G::msm_resident(be, h, &scalars))?, &bases, &scalars)?;
        }
        expect_code(
            G::msm_resident(be, h, &sample::scalars(n + 4, 74)),
            ErrorCode::INVALID_INPUT,
        )?;
        fail_on(be.drop_bases(h))?;
        expect_code(G::msm_resident(be, h, &scalars), ErrorCode::INVALID_INPUT)?;
        expect_code(be.drop_bases(h), ErrorCode::INVALID_INPUT)
    }));
    out.push(t.trial(format!("{}/resident edges at 2^15", G::OP), |be| {
        let (bases, scalars) = edges::<G>(1 << 15);
        let h = fail_on(G::upload(be, &bases))?;
        let got = fail_on(G::msm_resident(be, h, &scalars))?;
        fail_on(be.drop_bases(h))?;
        check_against_ark::<G>(got, &bases, &scalars)
    }));
}

/// A handle of BN254 G1 points is refused by a BN254 G2 MSM and by
/// BLS12-381's MSMs, a BLS12-381 handle by BN254's; each handle still
/// works afterwards.
fn other_group_trials(t: &Target, out: &mut Vec<Trial>) {
    let needs = [
        ops::bn254::RESIDENT_BASES,
        ops::bn254::MSM_G1,
        ops::bn254::MSM_G2,
        ops::RESIDENT_BASES,
        ops::MSM_G1,
    ];
    if !needs.iter().all(|op| t.caps.supports(op)) {
        return;
    }
    out.push(t.trial(
        "bn254.resident_bases/handles of other groups refused".into(),
        |be| {
            let (bases, scalars) = (G1::points(9, 75), sample::scalars(9, 76));
            let h = fail_on(G1::upload(be, &bases))?;
            expect_code(G2::msm_resident(be, h, &scalars), ErrorCode::INVALID_INPUT)?;
            let bls_scalars = zkpipe::util::sample::scalars(9, 77);
            expect_code(
                be.msm_g1(h, &bls_scalars, &MsmConfig::default()),
                ErrorCode::INVALID_INPUT,
            )?;
            check_against_ark::<G1>(
                fail_on(G1::msm_resident(be, h, &scalars))?,
                &bases,
                &scalars,
            )?;
            fail_on(be.drop_bases(h))?;
            let bls = fail_on(be.upload_bases_g1(&zkpipe::util::sample::g1_points(9, 78), 0))?;
            expect_code(
                G1::msm_resident(be, bls, &scalars),
                ErrorCode::INVALID_INPUT,
            )?;
            fail_on(be.msm_g1(bls, &bls_scalars, &MsmConfig::default()))?;
            fail_on(be.drop_bases(bls))
        },
    ));
}

fn bit_reversed(v: &[ArkFr]) -> Vec<ArkFr> {
    let n = v.len();
    let bits = n.trailing_zeros();
    (0..n)
        .map(|i| {
            v[if bits == 0 {
                0
            } else {
                i.reverse_bits() >> (usize::BITS - bits)
            }]
        })
        .collect()
}

/// The transform by definition, in arkworks' arithmetic with arkworks' own
/// 2^28-th root: `out_k = Σ_j a_j·(g·ω^k)^j`, or its inverse.
fn naive_ntt(input: &[ArkFr], inverse: bool, coset: Option<ArkFr>) -> Vec<ArkFr> {
    let n = input.len();
    let mut omega = ArkFr::TWO_ADIC_ROOT_OF_UNITY;
    for _ in n.trailing_zeros()..ArkFr::TWO_ADICITY {
        omega.square_in_place();
    }
    let g = coset.unwrap_or(ArkFr::one());
    if !inverse {
        return (0..n)
            .map(|k| {
                let x = g * omega.pow([k as u64]);
                input.iter().rev().fold(ArkFr::zero(), |acc, a| acc * x + a)
            })
            .collect();
    }
    // a_j = g^−j / n · Σ_k v_k·ω^−jk
    let (omega_inv, g_inv) = (omega.inverse().unwrap(), g.inverse().unwrap());
    let n_inv = ArkFr::from(n as u64).inverse().unwrap();
    (0..n)
        .map(|j| {
            let x = omega_inv.pow([j as u64]);
            let sum = input.iter().rev().fold(ArkFr::zero(), |acc, v| acc * x + v);
            sum * n_inv * g_inv.pow([j as u64])
        })
        .collect()
}

fn ntt_trials(t: &Target, out: &mut Vec<Trial>) {
    for log_n in [0u32, 1, 2, 3, 6, 10] {
        for order in NttOrder::ALL {
            for inverse in [false, true] {
                for coset in [None, Some(5u64)] {
                    let case = format!(
                        "{}/{}/{}{}/2^{log_n}",
                        ops::bn254::NTT,
                        if inverse { "inverse" } else { "forward" },
                        order_name(order),
                        if coset.is_some() { "/coset" } else { "" },
                    );
                    out.push(t.trial(case, move |be| {
                        let n = 1usize << log_n;
                        let natural = sample::scalars(n, 90 + log_n as u64);
                        let ark: Vec<ArkFr> = natural.iter().map(ark_fr).collect();
                        let mut want = naive_ntt(&ark, inverse, coset.map(ArkFr::from));
                        if order.output_reversed() {
                            want = bit_reversed(&want);
                        }
                        let mut got: Vec<Fr> = if order.input_reversed() {
                            bit_reversed(&ark)
                                .iter()
                                .map(|x| Fr::from_bytes_le(&fr_bytes(x)).unwrap())
                                .collect()
                        } else {
                            natural
                        };
                        let config = NttConfigOf {
                            direction: if inverse {
                                NttDirection::Inverse
                            } else {
                                NttDirection::Forward
                            },
                            order,
                            coset: coset.map(Fr::from_u64).into(),
                            ..Default::default()
                        };
                        fail_on(be.bn254_ntt(&mut got, &config))?;
                        match got.iter().zip(&want).position(|(g, w)| ark_fr(g) != *w) {
                            None => Ok(()),
                            Some(i) => Err(format!("first mismatch at index {i} of {n}").into()),
                        }
                    }));
                }
            }
        }
    }
    let big = max_log().max(16);
    out.push(t.trial(
        format!("{}/round trip/2^{big}", ops::bn254::NTT),
        move |be| {
            let input = sample::scalars(1 << big, 95);
            let mut v = input.clone();
            let coset = NttConfigOf {
                coset: Some(Fr::from_u64(5)).into(),
                ..Default::default()
            };
            fail_on(be.bn254_ntt(&mut v, &coset))?;
            if v == input {
                return Err("the forward transform changed nothing".into());
            }
            let inverse = NttConfigOf {
                direction: NttDirection::Inverse,
                ..coset
            };
            fail_on(be.bn254_ntt(&mut v, &inverse))?;
            if v != input {
                return Err("inverse(forward(x)) != x".into());
            }
            Ok(())
        },
    ));
    out.push(
        t.trial(format!("{}/bad input refused", ops::bn254::NTT), |be| {
            let plain = NttConfigOf::default();
            expect_code(
                be.bn254_ntt(&mut [Fr::ZERO; 3], &plain),
                ErrorCode::INVALID_INPUT,
            )?;
            expect_code(be.bn254_ntt(&mut [], &plain), ErrorCode::INVALID_INPUT)?;
            let zero_coset = NttConfigOf {
                coset: Some(Fr::ZERO).into(),
                ..Default::default()
            };
            expect_code(
                be.bn254_ntt(&mut [Fr::one(); 4], &zero_coset),
                ErrorCode::INVALID_INPUT,
            )
        }),
    );
}

fn fr_bytes(x: &ArkFr) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&x.into_bigint().0.map(u64::to_le_bytes).concat());
    out
}

/// The resident-bases trials again, for a backend made with settings that
/// change how it keeps bases (precomputed tables, window widths).
pub fn resident_trials_under_settings(t: &Target, out: &mut Vec<Trial>) {
    if t.caps.supports(ops::bn254::RESIDENT_BASES) {
        resident_trials::<G1>(t, max_log().min(12), out);
        resident_trials::<G2>(t, max_log().min(10), out);
    }
}

/// BN254's trials for one backend: conformance for what it lists, a
/// clean refusal of the rest.
/// arkworks' 2^log-th root of unity.
fn ark_root(log: u32) -> ArkFr {
    let mut w = ArkFr::TWO_ADIC_ROOT_OF_UNITY;
    for _ in log..ArkFr::TWO_ADICITY {
        w.square_in_place();
    }
    w
}

/// The quotient by its definition (snarkjs's): c = a∘b, each of a, b, c
/// interpolated and evaluated on the odd coset ω₂ₙ·⟨ω⟩ by the naive
/// transforms, h = a·b − c there.
fn naive_quotient(a: &[ArkFr], b: &[ArkFr]) -> Vec<ArkFr> {
    let shift = ark_root(a.len().trailing_zeros() + 1);
    let c: Vec<ArkFr> = a.iter().zip(b).map(|(x, y)| x * y).collect();
    let on_coset = |v: &[ArkFr]| naive_ntt(&naive_ntt(v, true, None), false, Some(shift));
    let (a, b, c) = (on_coset(a), on_coset(b), on_coset(&c));
    (0..a.len()).map(|i| a[i] * b[i] - c[i]).collect()
}

fn quotient_trials(t: &Target, out: &mut Vec<Trial>) {
    for log_n in [0u32, 1, 3, 10] {
        out.push(t.trial(
            format!("{}/against its definition/2^{log_n}", ops::bn254::QUOTIENT),
            move |be| {
                let n = 1usize << log_n;
                let (mut a, b) = (sample::scalars(n, 70), sample::scalars(n, 71));
                let ark = |v: &[Fr]| v.iter().map(ark_fr).collect::<Vec<_>>();
                let want = naive_quotient(&ark(&a), &ark(&b));
                fail_on(be.bn254_quotient(&mut a, &b, 0))?;
                match a.iter().zip(&want).position(|(g, w)| ark_fr(g) != *w) {
                    None => Ok(()),
                    Some(i) => Err(format!("first mismatch at index {i} of {n}").into()),
                }
            },
        ));
    }
    out.push(t.trial(
        format!("{}/bad input refused", ops::bn254::QUOTIENT),
        |be| {
            let one = Fr::one();
            expect_code(
                be.bn254_quotient(&mut [one; 3], &[one; 3], 0),
                ErrorCode::INVALID_INPUT,
            )?;
            expect_code(
                be.bn254_quotient(&mut [one; 4], &[one; 2], 0),
                ErrorCode::INVALID_INPUT,
            )?;
            expect_code(be.bn254_quotient(&mut [], &[], 0), ErrorCode::INVALID_INPUT)
        },
    ));
    // Large: against the prover's host path on this backend's NTTs
    // (checked against their definition above).
    if !t.caps.supports(ops::bn254::NTT) {
        return;
    }
    let big = max_log().max(16);
    out.push(t.trial(
        format!("{}/against the host path/2^{big}", ops::bn254::QUOTIENT),
        move |be| {
            let n = 1usize << big;
            let (mut a, b) = (sample::scalars(n, 72), sample::scalars(n, 73));
            let (mut want, mut scratch) = (a.clone(), b.clone());
            let ntt = |v: &mut [Fr], cfg: &NttConfigOf<Fr>| be.bn254_ntt(v, cfg);
            fail_on(bn254::prover::odd_coset_quotient(
                &mut want,
                &mut scratch,
                &ntt,
                || Error::Failed("a transform thread panicked".into()),
            ))?;
            fail_on(be.bn254_quotient(&mut a, &b, 0))?;
            match a.iter().zip(&want).position(|(g, w)| g != w) {
                None => Ok(()),
                Some(i) => Err(format!("first mismatch at index {i} of {n}").into()),
            }
        },
    ));
}

pub fn trials(t: &Target, out: &mut Vec<Trial>) {
    let max = max_log().min(12);
    if t.caps.supports(ops::bn254::MSM_G1) {
        msm_trials::<G1>(t, max, out);
    }
    if t.caps.supports(ops::bn254::MSM_G2) {
        msm_trials::<G2>(t, max.min(10), out);
    }
    if t.caps.supports(ops::bn254::NTT) {
        ntt_trials(t, out);
    }
    if t.caps.supports(ops::bn254::QUOTIENT) {
        quotient_trials(t, out);
    }
    other_group_trials(t, out);
    let unlisted: Vec<&'static str> = ops::bn254::ALL
        .iter()
        .copied()
        .filter(|op| !t.caps.supports(op))
        .collect();
    if unlisted.is_empty() {
        return;
    }
    let serves_bn254 = t.caps.curves().contains(&Curve::Bn254);
    out.push(t.trial(
        format!("bn254/unlisted ops refused ({})", unlisted.join(", ")),
        move |be| {
            let p = G1Affine::generator();
            let q = G2Affine::generator();
            for op in &unlisted {
                let r = match *op {
                    ops::bn254::MSM_G1 => be
                        .bn254_msm_g1(&[p][..], &[Fr::one()], &MsmConfig::default())
                        .map(drop),
                    ops::bn254::MSM_G2 => be
                        .bn254_msm_g2(&[q][..], &[Fr::one()], &MsmConfig::default())
                        .map(drop),
                    ops::bn254::RESIDENT_BASES => be.bn254_upload_bases_g1(&[p], 0).map(drop),
                    ops::bn254::QUOTIENT => {
                        be.bn254_quotient(&mut [Fr::one(); 2], &[Fr::one(); 2], 0)
                    }
                    _ => be.bn254_ntt(&mut [Fr::one(); 2], &NttConfigOf::default()),
                };
                expect_code(r, ErrorCode::UNSUPPORTED)?;
            }
            if !serves_bn254 {
                let e = be
                    .expect_curve(Curve::Bn254)
                    .map_err(|e| e.to_string())
                    .err()
                    .ok_or("expect_curve(BN254) passed on a backend listing no BN254 op")?;
                if !e.contains("does not serve BN254") {
                    return Err(format!("unclear refusal: {e}").into());
                }
            }
            Ok(())
        },
    ));
}
