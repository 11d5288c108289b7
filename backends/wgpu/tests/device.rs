//! Both multiply variants (64-bit integers and the u32-only emulation) against
//! the reference on the first adapter. The root conformance suite covers the
//! default variant in depth; this keeps the other one honest. Passes with a
//! note when there is no adapter, unless `ZKPIPE_REQUIRE_ADAPTER` is set
//! (CI sets it): then a missing adapter fails every test.

use zkpipe_backend_wgpu::WgpuBackend;
use zkpipe_core::backend::reference;
use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BasesRef, ErrorCode, KeyValue, MsmConfig,
    NttConfig, NttDirection, NttOrder, SpmvConfig, ops,
};
use zkpipe_core::r1cs::{Csr, R1cs, Witness};
use zkpipe_core::{Fr, G1Affine, G1Projective, G2Affine, plugin::BackendPlugin, util::sample};

fn backend(int64: &str) -> Option<WgpuBackend> {
    backend_with(&[("int64", int64)])
}

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

/// Every order and direction, without and with the coset shift `g`.
fn ntt_configs(g: u64) -> impl Iterator<Item = NttConfig> {
    NttOrder::ALL.into_iter().flat_map(move |order| {
        [NttDirection::Forward, NttDirection::Inverse]
            .into_iter()
            .flat_map(move |direction| {
                [None, Some(Fr::from_u64(g))].map(|coset| NttConfig {
                    direction,
                    order,
                    coset: coset.into(),
                    ..Default::default()
                })
            })
    })
}

fn check(int64: &str) {
    let Some(be) = backend(int64) else { return };
    check_spmv(&be);
    // 2^12 is above one workgroup-memory tile (2^9 or 2^10): two passes.
    for log in [1u32, 3, 6, 12] {
        for cfg in ntt_configs(7) {
            let input = sample::scalars(1 << log, log as u64);
            let want = reference::ntt(&input, &cfg);
            let mut got = input;
            be.ntt(&mut got, &cfg).unwrap();
            assert_eq!(got, want, "int64={int64} {cfg:?} 2^{log}");
        }
    }
    for n in [1usize, 2, 7, 33, 300] {
        let mut bases = sample::g1_points(n, n as u64);
        let mut scalars = sample::scalars(n, 9 + n as u64);
        scalars[0] = Fr::ZERO;
        if n > 2 {
            bases[1] = G1Affine::identity();
            bases[2] = bases[n - 1];
            scalars[n - 1] = Fr::one().neg();
        }
        let got = be
            .msm_g1(
                BasesRef::Host((&bases[..]).into()),
                &scalars,
                &MsmConfig::default(),
            )
            .unwrap();
        let want = reference::msm_g1(&bases, &scalars);
        assert_eq!(got.to_affine(), want.to_affine(), "int64={int64} n={n}");
    }
    // G2 through the same shaders over Fp2: only with 64-bit integers (the
    // u32-only variant is declared unsupported, see lib.rs).
    let g2 = be.capabilities().supports(ops::MSM_G2);
    if int64 == "off" {
        assert!(!g2, "int64=off lists msm_g2");
        let r = be.msm_g2(
            BasesRef::Host((&sample::g2_points(1, 1)[..]).into()),
            &[Fr::one()],
            &MsmConfig::default(),
        );
        assert_eq!(r.unwrap_err().code, ErrorCode::UNSUPPORTED);
        return;
    }
    if !g2 {
        return; // an adapter without SHADER_INT64
    }
    for n in [1usize, 7, 33] {
        let mut bases = sample::g2_points(n, 40 + n as u64);
        let mut scalars = sample::scalars(n, 50 + n as u64);
        if n > 2 {
            bases[1] = G2Affine::identity();
            bases[2] = bases[n - 1];
            scalars[0] = Fr::ZERO;
            scalars[n - 1] = Fr::one().neg();
        }
        let got = be
            .msm_g2(
                BasesRef::Host((&bases[..]).into()),
                &scalars,
                &MsmConfig::default(),
            )
            .unwrap();
        let want = reference::msm_g2(&bases, &scalars);
        assert_eq!(got.to_affine(), want.to_affine(), "int64={int64} G2 n={n}");
    }
}

/// A random witness of `ni` inputs (the first one) and `na` aux.
fn witness(ni: usize, na: usize, seed: u64) -> Witness {
    let mut inputs = sample::scalars(ni, seed);
    inputs[0] = Fr::one();
    Witness {
        inputs,
        aux: sample::scalars(na, seed + 1),
    }
}

/// An R1CS of `m` rows that `w` satisfies: A's row r of `a_len(r)` random
/// terms, B's of one or two, C's one term making the product; every third
/// coefficient one (the kernels skip those multiplications).
fn satisfied_r1cs(m: usize, w: &Witness, a_len: impl Fn(usize) -> usize, seed: u64) -> R1cs {
    let full: Vec<Fr> = w.inputs.iter().chain(&w.aux).copied().collect();
    let vars = full.len();
    let random = sample::scalars(4096, seed);
    let mut k = 0usize;
    let mut next = || {
        k += 1;
        let v = if k.is_multiple_of(3) {
            Fr::one()
        } else {
            random[k % random.len()]
        };
        (
            v,
            (random[(k * 7) % random.len()].limbs[0] % vars as u64) as u32,
        )
    };
    let empty = || Csr {
        row_ptr: vec![0],
        cols: vec![],
        vals: vec![],
    };
    let (mut a, mut b, mut c) = (empty(), empty(), empty());
    for r in 0..m {
        let mut prod = Fr::one();
        for (mat, len) in [(&mut a, a_len(r)), (&mut b, 1 + r % 2)] {
            let mut dot = Fr::ZERO;
            for _ in 0..len {
                let (v, col) = next();
                dot = dot.add(&v.mul(&full[col as usize]));
                mat.cols.push(col);
                mat.vals.push(v);
            }
            mat.row_ptr.push(mat.cols.len() as u64);
            prod = prod.mul(&dot);
        }
        if !prod.is_zero() {
            c.cols.push(0); // the constant one
            c.vals.push(prod);
        }
        c.row_ptr.push(c.cols.len() as u64);
    }
    R1cs {
        num_inputs: w.inputs.len(),
        num_aux: w.aux.len(),
        a,
        b,
        c,
    }
}

/// What the op must give, as the prover's host path computes it: core's
/// SpMV and bellman's rows, the check, then the quotient's steps over
/// `be`'s NTTs (checked against the reference above).
fn host_quotient(be: &WgpuBackend, r1cs: &R1cs, w: &Witness, log_n: u32) -> Result<Vec<Fr>, u64> {
    let n = 1usize << log_n;
    let [mut a, mut b, mut c] = [(); 3].map(|_| vec![Fr::ZERO; n]);
    r1cs.domain_evaluations_into(&w.inputs, &w.aux, [&mut a, &mut b, &mut c])
        .unwrap();
    let m = r1cs.num_constraints();
    if let Some(row) = zkpipe_core::r1cs::first_unsatisfied_row([&a[..m], &b[..m], &c[..m]]) {
        return Err(row as u64);
    }
    let g = Fr::from_u64(7);
    let z_inv = zkpipe_core::groth16::vanishing_inverse(&g, n).unwrap();
    zkpipe_core::groth16::quotient_steps(
        &mut |v: &mut [Fr], cfg: &NttConfig| be.ntt(v, cfg),
        [&mut a, &mut b, &mut c],
        g,
        z_inv,
        0,
    )
    .unwrap();
    Ok(a)
}

/// The op on `be`: Ok(h), or Err(first unsatisfied row) with `check`.
fn device_quotient(
    be: &WgpuBackend,
    r1cs: &R1cs,
    w: &Witness,
    log_n: u32,
    check: bool,
) -> Result<Result<Vec<Fr>, u64>, AccelError> {
    let handle = be.upload_r1cs(r1cs.as_seam(), 0)?;
    let mut h = vec![Fr::from_u64(3); 1 << log_n];
    let cfg = SpmvConfig {
        device: 0,
        coset: Fr::from_u64(7),
        log_n,
        check,
        ext: Default::default(),
    };
    let r = be.quotient_from_witness(handle, &w.inputs, &w.aux, &mut h, &cfg);
    be.drop_r1cs(handle)?;
    Ok(match r? {
        Some(row) => Err(row),
        None => Ok(h),
    })
}

/// The SpMV op in this multiply variant: h equal to the host path's,
/// rows longer than one segment (256 entries) included, and the first
/// unsatisfied row.
fn check_spmv(be: &WgpuBackend) {
    if !be.capabilities().supports(ops::SPMV) {
        return;
    }
    let w = witness(2, 300, 60);
    let mut r1cs = satisfied_r1cs(200, &w, |r| if r == 3 { 700 } else { 1 + r % 4 }, 61);
    let log_n = zkpipe_core::groth16::domain_log_size(200, 2);
    let want = host_quotient(be, &r1cs, &w, log_n);
    assert!(want.is_ok(), "the test's system is not satisfied");
    for check in [true, false] {
        assert!(device_quotient(be, &r1cs, &w, log_n, check).unwrap() == want);
    }
    let k = r1cs.c.row_ptr[150] as usize;
    r1cs.c.vals[k] = r1cs.c.vals[k].add(&Fr::one());
    assert_eq!(
        device_quotient(be, &r1cs, &w, log_n, true).unwrap(),
        Err(150)
    );
}

#[test]
fn int64_multiply() {
    check("auto");
}

#[test]
fn u32_multiply() {
    check("off");
}

/// One bucket of 70 000 points (all scalars one): summed in chunks and tree
/// passes, past the 65 535 loop iterations at which lavapipe silently stops
/// a loop (a bucket that size used to be refused there).
#[test]
fn one_huge_bucket() {
    let Some(be) = backend("auto") else { return };
    let n = 70_000;
    let bases = sample::g1_points(n, 1);
    let got = be
        .msm_g1(
            BasesRef::Host((&bases[..]).into()),
            &vec![Fr::one(); n],
            &MsmConfig::default(),
        )
        .unwrap();
    let want = bases
        .iter()
        .fold(G1Projective::identity(), |acc, p| acc.add_affine(p));
    assert_eq!(got.to_affine(), want.to_affine());
}

/// Window widths whose reduce leaves 1 024, 512 and 16 ranges per window:
/// two, one and no merge passes (results ending in either buffer), on
/// seeded random points with an identity base and zero scalars mixed in.
/// Widest first, so the later calls run in the first one's kept buffers.
#[test]
fn merge_passes() {
    let Some(be) = backend("auto") else { return };
    let n = 300;
    let mut bases = sample::g1_points(n, 5);
    let mut scalars = sample::scalars(n, 6);
    bases[7] = G1Affine::identity();
    scalars[11] = Fr::ZERO;
    let want = reference::msm_g1(&bases, &scalars).to_affine();
    for window_bits in [14, 13, 8, 14] {
        let cfg = MsmConfig {
            window_bits,
            ..Default::default()
        };
        let got = be
            .msm_g1(BasesRef::Host((&bases[..]).into()), &scalars, &cfg)
            .unwrap();
        assert_eq!(got.to_affine(), want, "window_bits={window_bits}");
    }
}

/// Bindings capped at 1 MiB (lavapipe allows 128): 12 000 bases go to two
/// buffers and the MSM runs in pieces of at most 1 500 points, from host
/// bases and from resident ones (fewer scalars than bases), on seeded random
/// data with an identity base and a zero scalar; then G2 the same way.
#[test]
fn split_bindings() {
    let Some(be) = backend_with(&[("max_binding_mib", "1")]) else {
        return;
    };
    let n = 12_000;
    let mut bases = sample::g1_points(n, 21);
    let mut scalars = sample::scalars(n, 22);
    bases[10_921] = G1Affine::identity();
    scalars[3] = Fr::ZERO;
    let cfg = MsmConfig::default();
    let got = be
        .msm_g1(BasesRef::Host((&bases[..]).into()), &scalars, &cfg)
        .unwrap();
    assert_eq!(
        got.to_affine(),
        reference::msm_g1(&bases, &scalars).to_affine()
    );
    let h = be.upload_bases_g1(&bases, 0).unwrap();
    let m = 11_003;
    let got = be
        .msm_g1(BasesRef::Resident(h), &scalars[..m], &cfg)
        .unwrap();
    let want = reference::msm_g1(&bases[..m], &scalars[..m]);
    assert_eq!(got.to_affine(), want.to_affine());
    be.drop_bases(h).unwrap();

    // G2 at 2 MiB (one piece's G2 buckets need more than 1 MiB): 10 000
    // points fill two buffers, the MSM runs in pieces of 2 048.
    let Some(be) = backend_with(&[("max_binding_mib", "2")]) else {
        return;
    };
    let n = 10_000;
    let mut bases = sample::g2_points(n, 23);
    bases[9_500] = G2Affine::identity();
    let h = be.upload_bases_g2(&bases, 0).unwrap();
    let m = 9_803;
    let got = be
        .msm_g2(BasesRef::Resident(h), &scalars[..m], &cfg)
        .unwrap();
    let want = reference::msm_g2(&bases[..m], &scalars[..m]);
    assert_eq!(got.to_affine(), want.to_affine());
    be.drop_bases(h).unwrap();
}

/// Bindings capped at 1 MiB (2^15 elements): NTTs of 2^16 and 2^17 run over
/// two and four buffers (data and tables), equal to the unsplit transform
/// for every order, direction and coset on seeded random data; 2^18 would
/// need eight and is refused.
#[test]
fn split_ntt() {
    let (Some(split), Some(whole)) = (backend_with(&[("max_binding_mib", "1")]), backend("auto"))
    else {
        return;
    };
    // Four buffers need eight storage bindings per stage (WebGPU's minimum).
    let caps = split.capabilities();
    let fits = |log: &u32| caps.supports_size(zkpipe_core::plugin::ops::NTT, *log);
    for log in [15u32, 16, 17].into_iter().filter(fits) {
        let input = sample::scalars(1 << log, 40 + log as u64);
        for cfg in ntt_configs(5) {
            let (mut got, mut want) = (input.clone(), input.clone());
            split.ntt(&mut got, &cfg).unwrap();
            whole.ntt(&mut want, &cfg).unwrap();
            assert!(got == want, "{cfg:?} 2^{log}: split differs");
        }
    }
    let mut big = sample::scalars(1 << 18, 3);
    let err = split.ntt(&mut big, &NttConfig::default()).unwrap_err();
    assert!(err.message.contains("8 buffers"), "{}", err.message);
}

/// Bindings capped at 1 MiB (2^15 elements): 70 000 aux go to three
/// buffers, each matrix to several chunks of rows (at most 2^15
/// coefficients each, none across row 2^15), a 2^16 domain to two pieces
/// and a 2^17 one to four; h must equal the host path's (2^16) and the
/// unsplit op's (2^17), and an unsatisfied row past the first piece is
/// found. A row of more coefficients than a binding holds, and a witness
/// needing more buffers than the kernels bind, are refused.
#[test]
fn split_spmv() {
    let (Some(split), Some(whole)) = (backend_with(&[("max_binding_mib", "1")]), backend("auto"))
    else {
        return;
    };
    let m = 40_000;
    let w = witness(3, 70_000, 80);
    let a_len = |r: usize| match r {
        7 => 20_000,
        _ if r.is_multiple_of(97) => 300,
        _ => 1 + r % 3,
    };
    let mut r1cs = satisfied_r1cs(m, &w, a_len, 81);
    let log_n = zkpipe_core::groth16::domain_log_size(m, 3);
    assert_eq!(log_n, 16);
    let want = host_quotient(&whole, &r1cs, &w, log_n);
    assert!(want.is_ok(), "the test's system is not satisfied");
    let got = device_quotient(&split, &r1cs, &w, log_n, true).unwrap();
    assert!(got == want, "split 2^16: h differs from the host path's");
    // The unsplit op is checked against the CPU backend's (conformance).
    let log = log_n + 1;
    let got = device_quotient(&split, &r1cs, &w, log, true).unwrap();
    let want = device_quotient(&whole, &r1cs, &w, log, true).unwrap();
    assert!(
        got.is_ok() && got == want,
        "split 2^17: h differs from the unsplit op's"
    );
    for row in [39_000, 35_000] {
        let k = r1cs.c.row_ptr[row] as usize;
        r1cs.c.vals[k] = r1cs.c.vals[k].add(&Fr::one());
    }
    for be in [&split, &whole] {
        assert_eq!(
            device_quotient(be, &r1cs, &w, log_n, true).unwrap(),
            Err(35_000)
        );
    }
    let refused = |r1cs: &R1cs| split.upload_r1cs(r1cs.as_seam(), 0).unwrap_err();
    let long = satisfied_r1cs(4, &w, |r| if r == 2 { 40_000 } else { 1 }, 82);
    let e = refused(&long);
    assert_eq!(e.code, ErrorCode::INVALID_INPUT);
    assert!(
        e.message.contains("A row 2 has 40000 entries"),
        "{}",
        e.message
    );
    let wide = witness(3, 200_000, 83);
    let e = refused(&satisfied_r1cs(4, &wide, |_| 1, 84));
    assert_eq!(e.code, ErrorCode::INVALID_INPUT);
    assert!(e.message.contains("buffers"), "{}", e.message);
}

/// `ZKPIPE_REQUIRE_ADAPTER` turns these tests' pass-without-adapter into a
/// failure: this test binary runs one of them again with no driver
/// (VK_DRIVER_FILES at an empty folder), without and with the switch.
#[test]
fn require_adapter_switch() {
    let empty = tempfile::tempdir().unwrap();
    let run = |require: bool| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "one_huge_bucket",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("VK_DRIVER_FILES", empty.path())
        .env_remove("VK_ICD_FILENAMES")
        .env_remove("ZKPIPE_REQUIRE_ADAPTER");
        if require {
            cmd.env("ZKPIPE_REQUIRE_ADAPTER", "1");
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (passed, text) = run(false);
    assert!(passed && text.contains("no wgpu adapter"), "{text}");
    let (passed, text) = run(true);
    assert!(!passed, "{text}");
    assert!(
        text.contains("ZKPIPE_REQUIRE_ADAPTER is set but there is no wgpu adapter"),
        "{text}"
    );
}

/// Uploads and read-backs of 32 MiB and more move in pieces through two
/// host-visible buffers used in turn: forward NTTs of 2^21 and 2^22
/// elements (two and four pieces each way) must hold the DFT's value at an
/// index inside every piece, and the inverse must give the input back.
#[test]
fn large_copies_in_pieces() {
    let Some(b) = backend("auto") else {
        return;
    };
    for log in [21u32, 22] {
        let n = 1usize << log;
        let x = sample::scalars(n, 70 + log as u64);
        let mut y = x.clone();
        b.ntt(&mut y, &NttConfig::default()).unwrap();
        let omega = Fr::root_of_unity(log);
        for k in (0..4).map(|p| p * (n / 4) + 12_345) {
            let w = omega.pow(&[k as u64]);
            let want = x.iter().rev().fold(Fr::ZERO, |acc, xi| acc.mul(&w).add(xi));
            assert!(y[k] == want, "2^{log}: element {k} differs from the DFT");
        }
        let inverse = NttConfig {
            direction: NttDirection::Inverse,
            ..Default::default()
        };
        b.ntt(&mut y, &inverse).unwrap();
        assert!(y == x, "2^{log}: the round trip differs");
    }
}

/// The notes say what an opened device keeps between calls: resident bases
/// and matrices (gone again after `drop_bases` and `drop_r1cs`) and the
/// NTT's buffers (a 2^16 transform keeps 2 MiB of data and as much of
/// twiddles).
#[test]
fn notes_show_what_a_device_keeps() {
    let Some(b) = backend("auto") else {
        return;
    };
    let mib = |notes: &str, what: &str| -> f64 {
        let at = notes
            .find(what)
            .unwrap_or_else(|| panic!("no `{what}` in {notes}"));
        let num = notes[..at].trim_end().rsplit(' ').next().unwrap();
        num.parse()
            .unwrap_or_else(|_| panic!("`{num}` before `{what}` in {notes}"))
    };
    assert!(
        !b.info().notes.contains("kept between calls"),
        "{}",
        b.info().notes
    );
    let bases = sample::g1_points(1 << 12, 3);
    let h = b.upload_bases_g1(&bases, 0).unwrap();
    let notes = b.info().notes.to_string();
    assert!(notes.contains("resident bases 1 sets"), "{notes}");
    let mut x = sample::scalars(1 << 16, 5);
    b.ntt(&mut x, &NttConfig::default()).unwrap();
    let notes = b.info().notes.to_string();
    assert!(mib(&notes, "MiB kept between calls") >= 4.0, "{notes}");
    b.drop_bases(h).unwrap();
    let notes = b.info().notes.to_string();
    assert!(notes.contains("resident bases 0 sets, 0.0 MiB"), "{notes}");
    let w = witness(2, 1 << 14, 6);
    let r1cs = satisfied_r1cs(1 << 14, &w, |_| 3, 7);
    let m = b.upload_r1cs(r1cs.as_seam(), 0).unwrap();
    let notes = b.info().notes.to_string();
    assert!(notes.contains("resident r1cs 1, "), "{notes}");
    assert!(!notes.contains("resident r1cs 1, 0.0 MiB"), "{notes}");
    b.drop_r1cs(m).unwrap();
    let notes = b.info().notes.to_string();
    assert!(notes.contains("resident r1cs 0, 0.0 MiB"), "{notes}");
}
