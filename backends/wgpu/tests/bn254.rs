//! BN254's ops on the first adapter where the root conformance suite does
//! not reach: the u32-only multiply (the suite runs the default variant),
//! identity results in BN254's homogeneous form (all-zero scalars,
//! cancelling terms), MSMs and NTTs split over capped bindings, and both
//! curves' ops interleaved on one device (their tables and kept buffers
//! must not mix). Passes with a note when there is no adapter, unless
//! `ZKPIPE_REQUIRE_ADAPTER` is set (CI sets it).

use zkpipe_backend_wgpu::WgpuBackend;
use zkpipe_core::backend::reference;
use zkpipe_core::bn254::{self, Fr, G1Affine, G1Projective, G2Affine, G2Projective, sample};
use zkpipe_core::plugin::{
    AcceleratorImpl, BackendConfig, BackendPlugin, BasesRef, ErrorCode, KeyValue, MsmConfig,
    NttConfig, NttConfigOf, NttDirection, NttOrder, ops,
};

fn backend_with(settings: &[(&str, &str)]) -> Option<WgpuBackend> {
    let ext: Vec<KeyValue> = settings
        .iter()
        .map(|(k, v)| KeyValue {
            key: (*k).into(),
            value: (*v).into(),
        })
        .collect();
    let cfg = BackendConfig {
        ext: ext.into(),
        ..Default::default()
    };
    let b = WgpuBackend::create(&cfg).unwrap();
    if b.info().devices.is_empty() {
        assert!(
            std::env::var_os("ZKPIPE_REQUIRE_ADAPTER").is_none(),
            "ZKPIPE_REQUIRE_ADAPTER is set but there is no wgpu adapter: {}",
            b.info().notes
        );
        eprintln!("no wgpu adapter: {}", b.info().notes);
        return None;
    }
    Some(b)
}

fn pow(x: &Fr, e: usize) -> Fr {
    (0..e).fold(Fr::one(), |acc, _| acc.mul(x))
}

fn bit_reversed(v: &[Fr]) -> Vec<Fr> {
    let bits = v.len().trailing_zeros();
    (0..v.len())
        .map(|i| {
            v[i.reverse_bits()
                .checked_shr(usize::BITS - bits)
                .unwrap_or(0)]
        })
        .collect()
}

/// The transform by definition (`input` in the config's input order):
/// `out_k = Σ_j a_j·(g·ω^k)^j`, or its inverse.
fn naive_ntt(input: &[Fr], cfg: &NttConfigOf<Fr>) -> Vec<Fr> {
    let n = input.len();
    let a = if cfg.order.input_reversed() {
        bit_reversed(input)
    } else {
        input.to_vec()
    };
    let omega = Fr::root_of_unity(n.trailing_zeros());
    let g = cfg.coset.into_option().unwrap_or_else(Fr::one);
    let horner = |v: &[Fr], x: &Fr| v.iter().rev().fold(Fr::ZERO, |acc, c| acc.mul(x).add(c));
    let out: Vec<Fr> = if cfg.direction == NttDirection::Forward {
        (0..n)
            .map(|k| horner(&a, &g.mul(&pow(&omega, k))))
            .collect()
    } else {
        let (omega_inv, g_inv) = (omega.inverse().unwrap(), g.inverse().unwrap());
        let n_inv = Fr::from_u64(n as u64).inverse().unwrap();
        (0..n)
            .map(|j| {
                let sum = horner(&a, &pow(&omega_inv, j));
                sum.mul(&n_inv).mul(&pow(&g_inv, j))
            })
            .collect()
    };
    if cfg.order.output_reversed() {
        bit_reversed(&out)
    } else {
        out
    }
}

/// Every order and direction, without and with the coset shift 5.
fn ntt_configs() -> Vec<NttConfigOf<Fr>> {
    let mut v = Vec::new();
    for order in NttOrder::ALL {
        for direction in [NttDirection::Forward, NttDirection::Inverse] {
            for coset in [None, Some(Fr::from_u64(5))] {
                v.push(NttConfigOf {
                    direction,
                    order,
                    coset: coset.into(),
                    ..Default::default()
                });
            }
        }
    }
    v
}

fn naive_g1(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    (bases.iter().zip(scalars)).fold(G1Projective::identity(), |acc, (p, s)| acc.add(&p.mul(s)))
}

fn naive_g2(bases: &[G2Affine], scalars: &[Fr]) -> G2Projective {
    (bases.iter().zip(scalars)).fold(G2Projective::identity(), |acc, (p, s)| acc.add(&p.mul(s)))
}

fn msm_g1(be: &WgpuBackend, bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    be.bn254_msm_g1(BasesRef::Host(bases.into()), scalars, &MsmConfig::default())
        .unwrap()
}

fn msm_g2(be: &WgpuBackend, bases: &[G2Affine], scalars: &[Fr]) -> G2Projective {
    be.bn254_msm_g2(BasesRef::Host(bases.into()), scalars, &MsmConfig::default())
        .unwrap()
}

/// G1 bases and scalars with a zero scalar, an identity base, a repeated
/// base and the scalar −1.
fn g1_edges(n: usize, seed: u64) -> (Vec<G1Affine>, Vec<Fr>) {
    let mut bases = sample::g1_points(n, seed);
    let mut scalars = sample::scalars(n, seed + 1);
    scalars[0] = Fr::ZERO;
    if n > 2 {
        bases[1] = G1Affine::default();
        bases[2] = bases[n - 1];
        scalars[n - 1] = Fr::one().neg();
    }
    (bases, scalars)
}

/// The u32-only multiply (13-bit limbs for Fp, the emulated 32-bit
/// multiply for Fr): NTTs against the definition and against the default
/// variant, G1 MSMs against the definition; G2 is neither listed nor run.
#[test]
fn u32_multiply() {
    let Some(be) = backend_with(&[("int64", "off")]) else {
        return;
    };
    let Some(auto) = backend_with(&[]) else {
        return;
    };
    for log in [1u32, 3, 6, 12] {
        for cfg in ntt_configs() {
            let input = sample::scalars(1 << log, log as u64);
            let mut got = input.clone();
            be.bn254_ntt(&mut got, &cfg).unwrap();
            let want = if log <= 6 {
                naive_ntt(&input, &cfg)
            } else {
                let mut v = input;
                auto.bn254_ntt(&mut v, &cfg).unwrap();
                v
            };
            assert_eq!(got, want, "{cfg:?} 2^{log}");
        }
    }
    for n in [1usize, 2, 7, 33, 300] {
        let (bases, scalars) = g1_edges(n, 10 + n as u64);
        let got = msm_g1(&be, &bases, &scalars);
        assert!(got.eq_point(&naive_g1(&bases, &scalars)), "n={n}: {got:?}");
    }
    assert!(!be.capabilities().supports(ops::bn254::MSM_G2));
    let r = be.bn254_msm_g2(
        BasesRef::Host([G2Affine::generator()][..].into()),
        &[Fr::one()],
        &MsmConfig::default(),
    );
    assert_eq!(r.unwrap_err().code, ErrorCode::UNSUPPORTED);
}

/// Results that are the identity come back as BN254's homogeneous identity
/// (Z = 0): no points, all-zero scalars, identity bases only, P·s + (−P)·s
/// and P·s + P·(r − s); and a single term P·1 comes back as P.
#[test]
fn identity_results() {
    let Some(be) = backend_with(&[]) else { return };
    let p1 = sample::g1_points(40, 30);
    let p2 = sample::g2_points(40, 31);
    let s = sample::scalars(40, 32);
    let zeros = vec![Fr::ZERO; 40];
    let id1 = [G1Affine::default(); 5];
    let id2 = [G2Affine::default(); 5];
    let g1_cases: Vec<(Vec<G1Affine>, Vec<Fr>)> = vec![
        (vec![], vec![]),
        (p1.clone(), zeros.clone()),
        (id1.to_vec(), s[..5].to_vec()),
        (vec![p1[3], p1[3].neg()], vec![s[3], s[3]]),
        (vec![p1[4], p1[4]], vec![s[4], s[4].neg()]),
    ];
    for (i, (b, sc)) in g1_cases.iter().enumerate() {
        let got = msm_g1(&be, b, sc);
        assert!(got.z.limbs == [0; 4], "G1 case {i}: {got:?}");
    }
    let g2_cases: Vec<(Vec<G2Affine>, Vec<Fr>)> = vec![
        (vec![], vec![]),
        (p2.clone(), zeros),
        (id2.to_vec(), s[..5].to_vec()),
        (vec![p2[3], p2[3].neg()], vec![s[3], s[3]]),
        (vec![p2[4], p2[4]], vec![s[4], s[4].neg()]),
    ];
    for (i, (b, sc)) in g2_cases.iter().enumerate() {
        let got = msm_g2(&be, b, sc);
        assert!(got.z.c == [bn254::Fp::default(); 2], "G2 case {i}: {got:?}");
    }
    assert_eq!(msm_g1(&be, &p1[..1], &[Fr::one()]).to_affine(), p1[0]);
    assert_eq!(msm_g2(&be, &p2[..1], &[Fr::one()]).to_affine(), p2[0]);
    // Explicit windows, narrow and wide, over the same terms.
    let want = naive_g2(&p2, &s);
    for window_bits in [4, 13] {
        let cfg = MsmConfig {
            window_bits,
            ..Default::default()
        };
        let got = be
            .bn254_msm_g2(BasesRef::Host(p2[..].into()), &s, &cfg)
            .unwrap();
        assert!(got.eq_point(&want), "window_bits={window_bits}");
    }
}

/// Bindings capped at 1 MiB: a G1 MSM of 30 000 points (bases in three
/// buffers, run in pieces) and a G2 one of 3 000, equal to the uncapped
/// backend's; NTTs of 2^16 and 2^17 over two and four buffers equal to the
/// unsplit transform; 2^18 would need eight and is refused.
#[test]
fn split_bindings() {
    let (Some(split), Some(whole)) = (backend_with(&[("max_binding_mib", "1")]), backend_with(&[]))
    else {
        return;
    };
    let (bases, scalars) = g1_edges(30_000, 40);
    assert!(msm_g1(&split, &bases, &scalars).eq_point(&msm_g1(&whole, &bases, &scalars)));
    let bases = sample::g2_points(3_000, 41);
    let scalars = sample::scalars(3_000, 42);
    assert!(msm_g2(&split, &bases, &scalars).eq_point(&msm_g2(&whole, &bases, &scalars)));
    for log in [16u32, 17] {
        let input = sample::scalars(1 << log, 43);
        for cfg in ntt_configs() {
            let (mut a, mut b) = (input.clone(), input.clone());
            split.bn254_ntt(&mut a, &cfg).unwrap();
            whole.bn254_ntt(&mut b, &cfg).unwrap();
            assert!(a == b, "{cfg:?} 2^{log}");
        }
    }
    let mut big = vec![Fr::one(); 1 << 18];
    let e = split
        .bn254_ntt(&mut big, &NttConfigOf::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_INPUT, "{e:?}");
}

/// BLS12-381's and BN254's NTTs of the same size and shape, and their G1
/// MSMs, alternating on one device: each equals its own reference (the
/// twiddle and factor tables are kept per curve, the buffers reused).
#[test]
fn curves_interleaved() {
    let Some(be) = backend_with(&[]) else { return };
    let bls_in = zkpipe_core::util::sample::scalars(64, 50);
    let bn_in = sample::scalars(64, 51);
    let (bls_bases, bls_scalars) = (
        zkpipe_core::util::sample::g1_points(33, 52),
        zkpipe_core::util::sample::scalars(33, 53),
    );
    let (bn_bases, bn_scalars) = g1_edges(33, 54);
    for _ in 0..2 {
        for bn_cfg in &ntt_configs() {
            let bls_cfg = NttConfig {
                direction: bn_cfg.direction,
                order: bn_cfg.order,
                coset: bn_cfg
                    .coset
                    .into_option()
                    .map(|_| zkpipe_core::Fr::from_u64(5))
                    .into(),
                ..Default::default()
            };
            let mut v = bls_in.clone();
            be.ntt(&mut v, &bls_cfg).unwrap();
            assert_eq!(v, reference::ntt(&bls_in, &bls_cfg), "{bls_cfg:?}");
            let mut v = bn_in.clone();
            be.bn254_ntt(&mut v, bn_cfg).unwrap();
            assert_eq!(v, naive_ntt(&bn_in, bn_cfg), "{bn_cfg:?}");
        }
        let got = be
            .msm_g1(
                BasesRef::Host((&bls_bases[..]).into()),
                &bls_scalars,
                &MsmConfig::default(),
            )
            .unwrap();
        let want = reference::msm_g1(&bls_bases, &bls_scalars);
        assert_eq!(got.to_affine(), want.to_affine());
        let got = msm_g1(&be, &bn_bases, &bn_scalars);
        assert!(got.eq_point(&naive_g1(&bn_bases, &bn_scalars)));
    }
}
