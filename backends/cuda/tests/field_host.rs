//! The kernels' field code (`kernels/arith.cuh`, `fr.cuh`, `fp.cuh`) built
//! for the host with the system C++ compiler, its carry flag emulated, and
//! checked against blst (BLS12-381) and halo2curves (BN254, the same source
//! built with `ZKPIPE_BN254`) on edge values and seeded random ones. This catches
//! arithmetic mistakes without a GPU; the device build of the same source is
//! covered by the conformance suite on the GPU.
//!
//! Needs `c++` (or `$CXX`); skipped with a message when there is none unless
//! `ZKPIPE_REQUIRE_CXX` is set (CI sets it).

use std::io::Write;
use std::process::{Command, Stdio};

const FP_P: [u64; 6] = [
    0xb9feffffffffaaab,
    0x1eabfffeb153ffff,
    0x6730d2a0f6b0f624,
    0x64774b84f38512bf,
    0x4b1ba7b6434bacd7,
    0x1a0111ea397fe69a,
];
const FR_P: [u64; 4] = [
    0xffffffff00000001,
    0x53bda402fffe5bfe,
    0x3339d80809a1d805,
    0x73eda753299d7d48,
];

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e3779b97f4a7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// Edge values below `p` (0, 1, 2^64, p−1, p−2, all-ones limbs under a top
/// limb one less than p's) and `random` seeded values below `p`.
fn values<const N: usize>(p: [u64; N], random: usize, seed: u64) -> Vec<[u64; N]> {
    let mut one = [0; N];
    one[0] = 1;
    let mut word = [0; N];
    word[1] = 1;
    let (mut pm1, mut pm2) = (p, p);
    pm1[0] -= 1;
    pm2[0] -= 2;
    let mut ones = [u64::MAX; N];
    ones[N - 1] = p[N - 1] - 1;
    let mut v = vec![[0; N], one, word, pm1, pm2, ones];
    let mut s = seed;
    for _ in 0..random {
        let mut x = [0u64; N];
        x.iter_mut().for_each(|l| *l = splitmix(&mut s));
        x[N - 1] %= p[N - 1];
        v.push(x);
    }
    v
}

fn hex(l: &[u64]) -> String {
    l.iter()
        .map(|x| format!("{x:x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The harness for BLS12-381, or for BN254 when `bn254`.
fn build_harness(bn254: bool) -> Option<std::path::PathBuf> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let exe = dir.join(if bn254 {
        "field_host_bn254"
    } else {
        "field_host"
    });
    let kernels = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/field_host.cpp");
    match Command::new(&cxx)
        .args(["-O1", "-std=c++17", "-I", kernels, src, "-o"])
        .arg(&exe)
        .args(bn254.then_some("-DZKPIPE_BN254"))
        .status()
    {
        Ok(s) if s.success() => Some(exe),
        Ok(s) => panic!("{cxx} failed to build the field harness ({s})"),
        Err(e) => {
            assert!(
                std::env::var_os("ZKPIPE_REQUIRE_CXX").is_none(),
                "ZKPIPE_REQUIRE_CXX is set but {cxx} could not run: {e}"
            );
            eprintln!("skipped: no C++ compiler ({cxx}: {e})");
            None
        }
    }
}

type BinOp<'a, const N: usize> = &'a dyn Fn(&[u64; N], &[u64; N]) -> [u64; N];

/// Harness input lines and blst's answers for `ops` over every pair of the
/// six edge values of `v`, then over pairs of its random values.
fn cases<const N: usize>(
    v: &[[u64; N]],
    ops: &[(&str, BinOp<N>)],
    input: &mut String,
    expected: &mut Vec<String>,
) {
    let edges = (0..6).flat_map(|i| (0..6).map(move |j| (i, j)));
    for (i, j) in edges.chain((6..v.len()).map(|i| (i, v.len() + 5 - i))) {
        let (a, b) = (&v[i], &v[j]);
        for (op, f) in ops {
            *input += &format!("{op} {} {}\n", hex(a), hex(b));
            expected.push(format!("{op}({}, {}) = {}", hex(a), hex(b), hex(&f(a, b))));
        }
    }
}

type BlstFp = unsafe extern "C" fn(*mut blst::blst_fp, *const blst::blst_fp, *const blst::blst_fp);
type BlstFr = unsafe extern "C" fn(*mut blst::blst_fr, *const blst::blst_fr, *const blst::blst_fr);

fn fp_op(f: BlstFp) -> impl Fn(&[u64; 6], &[u64; 6]) -> [u64; 6] {
    move |a, b| {
        let mut r = blst::blst_fp::default();
        // SAFETY: valid pointers to initialised values.
        unsafe { f(&mut r, &blst::blst_fp { l: *a }, &blst::blst_fp { l: *b }) };
        r.l
    }
}

fn fr_op(f: BlstFr) -> impl Fn(&[u64; 4], &[u64; 4]) -> [u64; 4] {
    move |a, b| {
        let mut r = blst::blst_fr::default();
        // SAFETY: valid pointers to initialised values.
        unsafe { f(&mut r, &blst::blst_fr { l: *a }, &blst::blst_fr { l: *b }) };
        r.l
    }
}

#[test]
fn kernel_field_code_matches_blst() {
    let Some(exe) = build_harness(false) else {
        return;
    };
    let fp = values(FP_P, 300, 1);
    let fr = values(FR_P, 300, 2);
    let (mut input, mut expected) = (String::new(), Vec::new());
    cases(
        &fp,
        &[
            ("fp_mul", &fp_op(blst::blst_fp_mul)),
            ("fp_add", &fp_op(blst::blst_fp_add)),
            ("fp_sub", &fp_op(blst::blst_fp_sub)),
        ],
        &mut input,
        &mut expected,
    );
    cases(
        &fr,
        &[
            ("fr_mul", &fr_op(blst::blst_fr_mul)),
            ("fr_add", &fr_op(blst::blst_fr_add)),
            ("fr_sub", &fr_op(blst::blst_fr_sub)),
        ],
        &mut input,
        &mut expected,
    );
    check(&exe, input, &expected);
}

/// BN254's moduli, as halo2curves has them.
const BN254_FP_P: [u64; 4] = [
    0x3c208c16d87cfd47,
    0x97816a916871ca8d,
    0xb85045b68181585d,
    0x30644e72e131a029,
];
const BN254_FR_P: [u64; 4] = [
    0x43e1f593f0000001,
    0x2833e84879b97091,
    0xb85045b68181585d,
    0x30644e72e131a029,
];

fn bn254_fp(f: fn(Bn254Fq, Bn254Fq) -> Bn254Fq) -> impl Fn(&[u64; 4], &[u64; 4]) -> [u64; 4] {
    use zkpipe_core::bn254::Fp;
    move |a, b| Fp::from_h2c(f(Fp { limbs: *a }.h2c(), Fp { limbs: *b }.h2c())).limbs
}

fn bn254_fr(f: fn(Bn254Fr, Bn254Fr) -> Bn254Fr) -> impl Fn(&[u64; 4], &[u64; 4]) -> [u64; 4] {
    use zkpipe_core::bn254::Fr;
    move |a, b| Fr::from_h2c(f(Fr { limbs: *a }.h2c(), Fr { limbs: *b }.h2c())).limbs
}

use halo2curves::bn256::{Fq as Bn254Fq, Fr as Bn254Fr};

#[test]
fn kernel_field_code_for_bn254_matches_halo2curves() {
    let Some(exe) = build_harness(true) else {
        return;
    };
    let fp = values(BN254_FP_P, 300, 3);
    let fr = values(BN254_FR_P, 300, 4);
    let (mut input, mut expected) = (String::new(), Vec::new());
    cases(
        &fp,
        &[
            ("fp_mul", &bn254_fp(|a, b| a * b)),
            ("fp_add", &bn254_fp(|a, b| a + b)),
            ("fp_sub", &bn254_fp(|a, b| a - b)),
        ],
        &mut input,
        &mut expected,
    );
    cases(
        &fr,
        &[
            ("fr_mul", &bn254_fr(|a, b| a * b)),
            ("fr_add", &bn254_fr(|a, b| a + b)),
            ("fr_sub", &bn254_fr(|a, b| a - b)),
        ],
        &mut input,
        &mut expected,
    );
    check(&exe, input, &expected);
}

/// Runs the harness on `input` and compares its lines with `expected`.
fn check(exe: &std::path::Path, input: String, expected: &[String]) {
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the field harness");
    // Write from another thread: the harness answers while it reads.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("field harness output");
    writer.join().unwrap().expect("feed the field harness");
    assert!(out.status.success(), "field harness failed: {}", out.status);
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(got.len(), expected.len(), "one line per operation");
    let wrong: Vec<String> = expected
        .iter()
        .zip(&got)
        .filter(|(e, g)| !e.ends_with(&format!("= {g}")))
        .map(|(e, g)| format!("{e}, kernel code gave {g}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} wrong:\n{}",
        wrong.len(),
        got.len(),
        wrong[..wrong.len().min(5)].join("\n")
    );
}
