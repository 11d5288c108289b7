//! The conformance suite: every backend the loader finds, loaded as a
//! dynamic library, against the naive reference in `zkpipe_core::backend::reference`
//! (BLS12-381) and arkworks (BN254, see `conformance/bn254.rs`), with exact
//! equality. Trials are named `[backend] op/case`.
//!
//! Environment: `ZKPIPE_PLUGIN_PATH` adds plugin folders (the test binary's
//! own folder is searched too, which is where `cargo test` puts the CPU
//! plugin); `ZKPIPE_CONFORMANCE_MAX_LOG` raises the largest size
//! (default 2^12 in debug builds, 2^14 in release).

#[path = "conformance/bn254.rs"]
mod bn254;

use libtest_mimic::{Arguments, Failed, Trial};
use std::sync::Arc;
use zkpipe::backend::is_unsupported;
use zkpipe::backend::loader::{Registry, SearchPath};
use zkpipe::backend::reference;
use zkpipe::plugin::{
    BackendConfig, Capabilities, ErrorCode, KeyValue, MsmConfig, NttConfig, NttDirection, NttOrder,
    QuotientConfig, SpmvConfig, ops,
};
use zkpipe::r1cs::{Csr, R1cs, Witness};
use zkpipe::{Backend, Error, Fr, G1Affine, G1Projective, G2Affine, G2Projective, util::sample};

fn max_log() -> u32 {
    std::env::var("ZKPIPE_CONFORMANCE_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 12 } else { 14 })
}

/// 1, 2, 3, 5, then 2^k − 1 and 2^k + 1 up to the maximum.
fn msm_sizes() -> Vec<usize> {
    let mut v = vec![1, 2, 3, 5];
    for k in 3..=max_log() {
        v.extend([(1usize << k) - 1, (1 << k) + 1]);
    }
    v
}

/// r − 1, the largest scalar.
fn r_minus_1() -> Fr {
    Fr::one().neg()
}

fn expect_code(r: Result<impl std::fmt::Debug, Error>, code: ErrorCode) -> Result<(), Failed> {
    match r {
        Err(Error::Backend { source, .. }) if source.code == code => Ok(()),
        other => Err(format!("expected a {code:?} error, got {other:?}").into()),
    }
}

fn fail_on<T>(r: Result<T, Error>) -> Result<T, Failed> {
    r.map_err(|e| Failed::from(e.to_string()))
}

/// What the MSM trials need from a group, so G1 and G2 share one suite.
trait Group: 'static {
    type Aff: Copy + PartialEq + std::fmt::Debug + Send + Sync;
    type Proj: Copy + std::fmt::Debug;
    const OP: &'static str;
    const BATCH_OP: &'static str;
    fn points(n: usize, seed: u64) -> Vec<Self::Aff>;
    fn identity() -> Self::Aff;
    fn neg(p: &Self::Aff) -> Self::Aff;
    fn to_affine(p: &Self::Proj) -> Self::Aff;
    fn reference(b: &[Self::Aff], s: &[Fr]) -> Self::Proj;
    fn msm(be: &Backend, b: &[Self::Aff], s: &[Fr]) -> Result<Self::Proj, Error>;
    fn msm_resident(
        be: &Backend,
        h: zkpipe::plugin::BasesHandle,
        s: &[Fr],
    ) -> Result<Self::Proj, Error>;
    fn batch(be: &Backend, b: &[Self::Aff], s: &[&[Fr]]) -> Result<Vec<Self::Proj>, Error>;
    fn upload(be: &Backend, b: &[Self::Aff]) -> Result<zkpipe::plugin::BasesHandle, Error>;
}

macro_rules! group {
    ($g:ident, $aff:ty, $proj:ty, $op:expr, $batch:expr, $points:path, $reference:path,
     $msm:ident, $batch_fn:ident, $upload:ident) => {
        struct $g;
        impl Group for $g {
            type Aff = $aff;
            type Proj = $proj;
            const OP: &'static str = $op;
            const BATCH_OP: &'static str = $batch;
            fn points(n: usize, seed: u64) -> Vec<$aff> {
                $points(n, seed)
            }
            fn identity() -> $aff {
                <$aff>::identity()
            }
            fn neg(p: &$aff) -> $aff {
                p.neg()
            }
            fn to_affine(p: &$proj) -> $aff {
                p.to_affine()
            }
            fn reference(b: &[$aff], s: &[Fr]) -> $proj {
                $reference(b, s)
            }
            fn msm(be: &Backend, b: &[$aff], s: &[Fr]) -> Result<$proj, Error> {
                be.$msm(b, s, &MsmConfig::default())
            }
            fn msm_resident(
                be: &Backend,
                h: zkpipe::plugin::BasesHandle,
                s: &[Fr],
            ) -> Result<$proj, Error> {
                be.$msm(h, s, &MsmConfig::default())
            }
            fn batch(be: &Backend, b: &[$aff], s: &[&[Fr]]) -> Result<Vec<$proj>, Error> {
                be.$batch_fn(b, s, &MsmConfig::default())
            }
            fn upload(be: &Backend, b: &[$aff]) -> Result<zkpipe::plugin::BasesHandle, Error> {
                be.$upload(b, 0)
            }
        }
    };
}
group!(
    G1,
    G1Affine,
    G1Projective,
    ops::MSM_G1,
    ops::MSM_G1_BATCH,
    sample::g1_points,
    reference::msm_g1,
    msm_g1,
    msm_g1_batch,
    upload_bases_g1
);
group!(
    G2,
    G2Affine,
    G2Projective,
    ops::MSM_G2,
    ops::MSM_G2_BATCH,
    sample::g2_points,
    reference::msm_g2,
    msm_g2,
    msm_g2_batch,
    upload_bases_g2
);

/// Compares a backend's MSM with the reference on the same inputs.
fn check_msm<G: Group>(be: &Backend, bases: &[G::Aff], scalars: &[Fr]) -> Result<(), Failed> {
    let got = G::to_affine(&fail_on(G::msm(be, bases, scalars))?);
    let want = G::to_affine(&G::reference(bases, scalars));
    if got != want {
        return Err(format!(
            "n = {}: backend {got:?} != reference {want:?}",
            scalars.len()
        )
        .into());
    }
    Ok(())
}

/// A Groth16 witness's shape: 70 % of scalars 0, 1, 2 or r − 1 (a few huge
/// buckets), the rest random.
fn skewed_scalars(n: usize) -> Vec<Fr> {
    let random = sample::scalars(n, 9);
    let common = [Fr::ZERO, Fr::one(), Fr::from_u64(2), r_minus_1()];
    (0..n)
        .map(|i| if i % 10 < 7 { common[i % 4] } else { random[i] })
        .collect()
}

/// A SHA-256 witness's shape: scalars 0 or 1 but every 16th (random or
/// r − 1) when `with_rest`, else only 0s and 1s. From 2^16 scalars the CUDA
/// backend sums the 1s apart from the rest.
fn bit_heavy_scalars(n: usize, with_rest: bool) -> Vec<Fr> {
    let random = sample::scalars(n, 13);
    (0..n)
        .map(|i| match i % 16 {
            14 if with_rest => random[i],
            15 if with_rest => r_minus_1(),
            k if k % 2 == 0 => Fr::ZERO,
            _ => Fr::one(),
        })
        .collect()
}

/// Inputs mixing every edge case: zero, one and r − 1 scalars; identity,
/// duplicated and negated bases; the rest random.
fn edge_inputs<G: Group>(n: usize, seed: u64) -> (Vec<G::Aff>, Vec<Fr>) {
    let mut bases = G::points(n, seed);
    let mut scalars = sample::scalars(n, seed + 1);
    for i in 0..n {
        scalars[i] = match i % 5 {
            0 => Fr::ZERO,
            1 => Fr::one(),
            2 => r_minus_1(),
            _ => scalars[i],
        };
        if i > 0 {
            match i % 7 {
                0 => bases[i] = G::identity(),
                1 => bases[i] = bases[i - 1],
                2 => bases[i] = G::neg(&bases[i - 1]),
                _ => {}
            }
        }
    }
    (bases, scalars)
}

struct Target {
    name: String,
    backend: Arc<Backend>,
    caps: Capabilities,
}

impl Target {
    fn trial(
        &self,
        case: String,
        f: impl FnOnce(&Backend) -> Result<(), Failed> + Send + 'static,
    ) -> Trial {
        let be = self.backend.clone();
        Trial::test(format!("[{}] {case}", self.name), move || f(&be))
    }

    /// As [`Target::trial`], for cases that need the shared backend
    /// (a [`zkpipe::backend::lent_buffers::BufferPool`] holds one).
    fn shared_trial(
        &self,
        case: &str,
        f: impl FnOnce(&Arc<Backend>) -> Result<(), Failed> + Send + 'static,
    ) -> Trial {
        let be = self.backend.clone();
        Trial::test(format!("[{}] {case}", self.name), move || f(&be))
    }

    /// An op the backend declares unsupported: one trial checking it says so.
    fn unsupported(
        &self,
        op: &'static str,
        probe: impl FnOnce(&Backend) -> Result<(), Error> + Send + 'static,
    ) -> Trial {
        self.trial(
            format!("{op}/unsupported (declared; expected)"),
            move |be| match probe(be) {
                Err(e) if is_unsupported(&e) => Ok(()),
                other => Err(format!("{op} is not in capabilities but answered {other:?}").into()),
            },
        )
    }
}

fn msm_trials<G: Group>(t: &Target, out: &mut Vec<Trial>) {
    if !t.caps.supports(G::OP) {
        out.push(t.unsupported(G::OP, |be| {
            G::msm(be, &G::points(1, 1), &[Fr::one()]).map(|_| ())
        }));
        return;
    }
    for n in msm_sizes() {
        out.push(t.trial(format!("{}/{n}", G::OP), move |be| {
            check_msm::<G>(
                be,
                &G::points(n, n as u64),
                &sample::scalars(n, n as u64 + 7),
            )
        }));
        out.push(t.trial(format!("{}/edge-cases/{n}", G::OP), move |be| {
            let (b, s) = edge_inputs::<G>(n, 1000 + n as u64);
            check_msm::<G>(be, &b, &s)
        }));
    }
    for n in [1, 33, 1 << max_log().min(10)] {
        out.push(t.trial(format!("{}/zero-scalars/{n}", G::OP), move |be| {
            check_msm::<G>(be, &G::points(n, 5), &vec![Fr::ZERO; n])
        }));
        out.push(t.trial(format!("{}/identity-bases/{n}", G::OP), move |be| {
            check_msm::<G>(be, &vec![G::identity(); n], &sample::scalars(n, 6))
        }));
        out.push(t.trial(format!("{}/all-r-minus-1/{n}", G::OP), move |be| {
            check_msm::<G>(be, &G::points(n, 8), &vec![r_minus_1(); n])
        }));
    }
    // A Groth16 witness is mostly 0, 1 and small values: a few huge buckets.
    let n = (1usize << max_log().min(12)) + 3;
    out.push(t.trial(format!("{}/skewed-scalars/{n}", G::OP), move |be| {
        check_msm::<G>(be, &G::points(n, 10), &skewed_scalars(n))
    }));
    // Bit-heavy scalars over edge-case bases (identity, repeated and
    // negated points among the summed 1s), from the size where they are split.
    if max_log() >= 16 {
        let n = (1usize << 16) + 5;
        for with_rest in [true, false] {
            let case = if with_rest { "bit-heavy" } else { "bits-only" };
            out.push(t.trial(format!("{}/{case}/{n}", G::OP), move |be| {
                let bases = edge_inputs::<G>(n, 14).0;
                check_msm::<G>(be, &bases, &bit_heavy_scalars(n, with_rest))
            }));
        }
    }
    out.push(t.trial(format!("{}/empty", G::OP), |be| {
        let got = fail_on(G::msm(be, &[], &[]))?;
        if G::to_affine(&got) != G::identity() {
            return Err("an empty MSM must be the identity".into());
        }
        Ok(())
    }));
    out.push(t.trial(format!("{}/length-mismatch", G::OP), |be| {
        expect_code(
            G::msm(be, &G::points(4, 1), &sample::scalars(3, 1)),
            ErrorCode::INVALID_INPUT,
        )
    }));

    if t.caps.supports(ops::RESIDENT_BASES) {
        resident_trials::<G>(t, out);
    } else {
        out.push(t.unsupported(ops::RESIDENT_BASES, |be| {
            G::upload(be, &G::points(1, 1)).map(|_| ())
        }));
    }

    if !t.caps.supports(G::BATCH_OP) {
        out.push(t.unsupported(G::BATCH_OP, |be| {
            G::batch(be, &G::points(1, 1), &[&[Fr::one()]]).map(|_| ())
        }));
        return;
    }
    for n in [1, 5, (1 << max_log().min(10)) + 1] {
        out.push(t.trial(format!("{}/3x{n}", G::BATCH_OP), move |be| {
            let bases = G::points(n, 21);
            let sets: Vec<Vec<Fr>> = (0..3).map(|k| sample::scalars(n, 100 + k)).collect();
            let refs: Vec<&[Fr]> = sets.iter().map(Vec::as_slice).collect();
            let got = fail_on(G::batch(be, &bases, &refs))?;
            if got.len() != 3 {
                return Err(format!("{} results for 3 scalar vectors", got.len()).into());
            }
            for (k, (g, s)) in got.iter().zip(&sets).enumerate() {
                let want = G::to_affine(&G::reference(&bases, s));
                if G::to_affine(g) != want {
                    return Err(format!("vector {k}: {:?} != {want:?}", G::to_affine(g)).into());
                }
            }
            Ok(())
        }));
    }
    out.push(t.trial(format!("{}/length-mismatch", G::BATCH_OP), |be| {
        let s = sample::scalars(2, 1);
        expect_code(
            G::batch(be, &G::points(3, 1), &[&s]),
            ErrorCode::INVALID_INPUT,
        )
    }));
}

/// A handle of `A` points given to an MSM over `B` is refused, and the
/// handle still works for `A` afterwards.
fn other_group_trials<A: Group, B: Group>(t: &Target, out: &mut Vec<Trial>) {
    if ![ops::RESIDENT_BASES, A::OP, B::OP]
        .iter()
        .all(|op| t.caps.supports(op))
    {
        return;
    }
    out.push(t.trial(format!("{}/resident-of-{}", B::OP, A::OP), |be| {
        let (bases, scalars) = (A::points(9, 31), sample::scalars(9, 32));
        let h = fail_on(A::upload(be, &bases))?;
        expect_code(B::msm_resident(be, h, &scalars), ErrorCode::INVALID_INPUT)?;
        let got = A::to_affine(&fail_on(A::msm_resident(be, h, &scalars))?);
        if got != A::to_affine(&A::reference(&bases, &scalars)) {
            return Err("the handle broke after a refused call".into());
        }
        fail_on(be.drop_bases(h))
    }));
}

/// MSMs on resident bases: random, edge-case and skewed inputs, a prefix
/// of the set, and the handle's lifetime.
fn resident_trials<G: Group>(t: &Target, out: &mut Vec<Trial>) {
    let n = (1usize << max_log().min(11)) + 1;
    out.push(t.trial(format!("{}/resident/{n}", G::OP), move |be| {
        let bases = G::points(n + 3, 11);
        let scalars = sample::scalars(n, 12);
        let h = fail_on(G::upload(be, &bases))?;
        // Two calls on one handle: residency must survive use.
        for _ in 0..2 {
            let got = G::to_affine(&fail_on(G::msm_resident(be, h, &scalars))?);
            let want = G::to_affine(&G::reference(&bases[..n], &scalars));
            if got != want {
                return Err(format!("resident prefix MSM: {got:?} != {want:?}").into());
            }
        }
        expect_code(
            G::msm_resident(be, h, &sample::scalars(n + 4, 1)),
            ErrorCode::INVALID_INPUT,
        )?;
        fail_on(be.drop_bases(h))?;
        expect_code(G::msm_resident(be, h, &scalars), ErrorCode::INVALID_INPUT)?;
        expect_code(be.drop_bases(h), ErrorCode::INVALID_INPUT)
    }));
    if max_log() >= 16 {
        let n = (1usize << 16) + 5;
        out.push(
            t.trial(format!("{}/resident-bit-heavy/{n}", G::OP), move |be| {
                let bases = edge_inputs::<G>(n + 2, 15).0;
                let scalars = bit_heavy_scalars(n, true);
                let h = fail_on(G::upload(be, &bases))?;
                let got = G::to_affine(&fail_on(G::msm_resident(be, h, &scalars))?);
                fail_on(be.drop_bases(h))?;
                let want = G::to_affine(&G::reference(&bases[..n], &scalars));
                if got != want {
                    return Err(format!("backend {got:?} != reference {want:?}").into());
                }
                Ok(())
            }),
        );
    }
    type Inputs<A> = fn(usize) -> (Vec<A>, Vec<Fr>);
    let cases: [(&str, Inputs<G::Aff>); 3] = [
        ("edge-cases", |n| edge_inputs::<G>(n, 77)),
        ("skewed-scalars", |n| (G::points(n, 78), skewed_scalars(n))),
        ("identity-bases", |n| {
            (vec![G::identity(); n], sample::scalars(n, 79))
        }),
    ];
    for (case, make) in cases {
        for n in [1usize, 7, n] {
            out.push(
                t.trial(format!("{}/resident-{case}/{n}", G::OP), move |be| {
                    let (bases, scalars) = make(n);
                    let h = fail_on(G::upload(be, &bases))?;
                    let got = G::to_affine(&fail_on(G::msm_resident(be, h, &scalars))?);
                    fail_on(be.drop_bases(h))?;
                    let want = G::to_affine(&G::reference(&bases, &scalars));
                    if got != want {
                        return Err(
                            format!("n = {n}: backend {got:?} != reference {want:?}").into()
                        );
                    }
                    Ok(())
                }),
            );
        }
    }
}

fn order_name(o: NttOrder) -> &'static str {
    match o {
        NttOrder::NN => "nn",
        NttOrder::NR => "nr",
        NttOrder::RN => "rn",
        NttOrder::RR => "rr",
    }
}

fn first_mismatch(got: &[Fr], want: &[Fr]) -> Result<(), Failed> {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "first mismatch at index {i} of {}: {:?} != {:?}",
            got.len(),
            got[i],
            want[i]
        )
        .into()),
    }
}

fn ntt_trials(t: &Target, out: &mut Vec<Trial>) {
    if !t.caps.supports(ops::NTT) {
        out.push(t.unsupported(ops::NTT, |be| {
            be.ntt(&mut [Fr::one()], &NttConfig::default())
        }));
        return;
    }
    let coset_shift = Fr::from_u64(7);
    for log in 0..=max_log() {
        for order in NttOrder::ALL {
            for direction in [NttDirection::Forward, NttDirection::Inverse] {
                for coset in [None, Some(coset_shift)] {
                    let dir = if direction == NttDirection::Forward {
                        "forward"
                    } else {
                        "inverse"
                    };
                    let cs = if coset.is_some() { "/coset" } else { "" };
                    let cfg = NttConfig {
                        direction,
                        order,
                        coset: coset.into(),
                        ..Default::default()
                    };
                    out.push(t.trial(
                        format!("ntt/{dir}/{}{cs}/2^{log}", order_name(order)),
                        move |be| {
                            let input = sample::scalars(1 << log, 300 + log as u64);
                            let want = reference::ntt(&input, &cfg);
                            let mut got = input;
                            fail_on(be.ntt(&mut got, &cfg))?;
                            first_mismatch(&got, &want)
                        },
                    ));
                }
            }
        }
    }
    // Round trips reach sizes the quadratic reference cannot.
    for log in [max_log(), max_log() + 4] {
        for (order_fwd, order_inv) in [(NttOrder::NN, NttOrder::NN), (NttOrder::NR, NttOrder::RN)] {
            for coset in [None, Some(coset_shift)] {
                let cs = if coset.is_some() { "/coset" } else { "" };
                out.push(t.trial(
                    format!(
                        "ntt/roundtrip/{}-{}{cs}/2^{log}",
                        order_name(order_fwd),
                        order_name(order_inv)
                    ),
                    move |be| {
                        let input = sample::scalars(1 << log, 400 + log as u64);
                        let mut v = input.clone();
                        let fwd = NttConfig {
                            order: order_fwd,
                            coset: coset.into(),
                            ..Default::default()
                        };
                        let inv = NttConfig {
                            direction: NttDirection::Inverse,
                            order: order_inv,
                            coset: coset.into(),
                            ..Default::default()
                        };
                        fail_on(be.ntt(&mut v, &fwd))?;
                        if v == input && log > 0 {
                            return Err("forward NTT left its input unchanged".into());
                        }
                        fail_on(be.ntt(&mut v, &inv))?;
                        first_mismatch(&v, &input)
                    },
                ));
            }
        }
    }
    // Calls after larger ones: buffers a backend keeps between calls
    // (staging, tables) are then longer than the data, and not a multiple
    // of it after an odd-length base upload.
    let resident = t.caps.supports(ops::RESIDENT_BASES);
    out.push(
        t.trial("ntt/roundtrip/after-larger-calls".into(), move |be| {
            if resident {
                let bases = vec![G1::points(1, 13)[0]; (3 << (max_log() + 3)) + 1];
                fail_on(be.drop_bases(fail_on(be.upload_bases_g1(&bases, 0))?))?;
            }
            for log in [max_log() + 1, max_log() + 4, max_log() + 1] {
                let input = sample::scalars(1 << log, 500 + log as u64);
                let mut v = input.clone();
                fail_on(be.ntt(&mut v, &NttConfig::default()))?;
                let inv = NttConfig {
                    direction: NttDirection::Inverse,
                    ..Default::default()
                };
                fail_on(be.ntt(&mut v, &inv))?;
                first_mismatch(&v, &input)?;
            }
            Ok(())
        }),
    );
    out.push(t.trial("ntt/zeros/2^10".into(), |be| {
        let mut v = vec![Fr::ZERO; 1 << 10];
        fail_on(be.ntt(
            &mut v,
            &NttConfig {
                coset: Some(Fr::from_u64(7)).into(),
                ..Default::default()
            },
        ))?;
        first_mismatch(&v, &vec![Fr::ZERO; 1 << 10])
    }));
    for len in [0usize, 3, 6, 1000] {
        out.push(t.trial(format!("ntt/bad-length/{len}"), move |be| {
            expect_code(
                be.ntt(&mut vec![Fr::one(); len], &NttConfig::default()),
                ErrorCode::INVALID_INPUT,
            )
        }));
    }
}

fn quotient_trials(t: &Target, out: &mut Vec<Trial>) {
    let cfg = || QuotientConfig {
        device: 0,
        coset: Fr::from_u64(7),
        ext: Default::default(),
    };
    if !t.caps.supports(ops::QUOTIENT) {
        out.push(t.unsupported(ops::QUOTIENT, move |be| {
            let mut a = vec![Fr::one(); 2];
            be.quotient(&mut a, &[Fr::one(); 2], &[Fr::one(); 2], &cfg())
        }));
        return;
    }
    for log in [0u32, 1, 2, 5, max_log().min(10)] {
        out.push(t.trial(format!("quotient/2^{log}"), move |be| {
            let n = 1usize << log;
            let (b, c) = (sample::scalars(n, 31), sample::scalars(n, 32));
            let mut a = sample::scalars(n, 30);
            let want = reference::quotient(&a, &b, &c, Fr::from_u64(7));
            fail_on(be.quotient(&mut a, &b, &c, &cfg()))?;
            first_mismatch(&a, &want)
        }));
    }
    out.push(t.trial("quotient/bad-lengths".into(), move |be| {
        let mut a = vec![Fr::one(); 8];
        expect_code(
            be.quotient(&mut a, &[Fr::one(); 4], &[Fr::one(); 8], &cfg()),
            ErrorCode::INVALID_INPUT,
        )?;
        expect_code(
            be.quotient(
                &mut [Fr::one(); 6],
                &[Fr::one(); 6],
                &[Fr::one(); 6],
                &cfg(),
            ),
            ErrorCode::INVALID_INPUT,
        )
    }));
}

/// Lent host memory: the seam's refusals, then ops whose inputs and
/// outputs lie in it (large enough for a GPU backend's direct copies,
/// 1 MiB and up) give what the same ops give on heap memory.
fn host_memory_trials(t: &Target, out: &mut Vec<Trial>) {
    if !t.caps.supports(ops::HOST_MEMORY) {
        out.push(t.unsupported(ops::HOST_MEMORY, |be| be.host_alloc(64).map(|_| ())));
        return;
    }
    out.push(t.trial("host_memory/lend-and-free".into(), |be| {
        let address = fail_on(be.host_alloc(4096))?;
        if address % 64 != 0 {
            return Err(format!("lent memory at {address:#x} is not 64-byte aligned").into());
        }
        // SAFETY: the backend lent 4096 bytes at `address`, freed below.
        let bytes = unsafe { std::slice::from_raw_parts_mut(address as *mut u8, 4096) };
        bytes.fill(0xa5);
        if bytes.iter().any(|&b| b != 0xa5) {
            return Err("lent memory did not keep what was written".into());
        }
        fail_on(be.host_free(address))?;
        expect_code(be.host_free(address), ErrorCode::INVALID_INPUT)?;
        expect_code(be.host_free(address + 64), ErrorCode::INVALID_INPUT)?;
        expect_code(be.host_free(0), ErrorCode::INVALID_INPUT)?;
        expect_code(be.host_alloc(0), ErrorCode::INVALID_INPUT)?;
        expect_code(be.host_alloc(u64::MAX), ErrorCode::INVALID_INPUT)?;
        expect_code(be.host_alloc(1 << 62), ErrorCode::OUT_OF_MEMORY)
    }));
    let lent = |be: &Arc<Backend>, v: &[Fr]| {
        let pool = zkpipe::backend::lent_buffers::BufferPool::new(be);
        let mut buf = pool.take(v.len());
        buf.copy_from_slice(v);
        (pool, buf)
    };
    out.push(t.shared_trial("host_memory/ntt/2^16", move |be| {
        let input = sample::scalars(1 << 16, 40);
        let (pool, mut got) = lent(be, &input);
        if !got.is_lent() {
            return Err(format!("no lent memory: {:?}", pool.refusal()).into());
        }
        let fwd = NttConfig::default();
        let mut want = input.clone();
        fail_on(be.ntt(&mut want, &fwd))?;
        fail_on(be.ntt(&mut got, &fwd))?;
        first_mismatch(&got, &want)?;
        let inv = NttConfig {
            direction: NttDirection::Inverse,
            ..Default::default()
        };
        fail_on(be.ntt(&mut got, &inv))?;
        first_mismatch(&got, &input)
    }));
    if t.caps.supports(ops::QUOTIENT) {
        out.push(t.shared_trial("host_memory/quotient/2^16", move |be| {
            let n = 1 << 16;
            let cfg = QuotientConfig {
                device: 0,
                coset: Fr::from_u64(7),
                ext: Default::default(),
            };
            let [a, b, c] = [50, 51, 52].map(|seed| sample::scalars(n, seed));
            let mut want = a.clone();
            fail_on(be.quotient(&mut want, &b, &c, &cfg))?;
            let ((_pa, mut la), (_pb, lb), (_pc, lc)) = (lent(be, &a), lent(be, &b), lent(be, &c));
            fail_on(be.quotient(&mut la, &lb, &lc, &cfg))?;
            first_mismatch(&la, &want)
        }));
    }
    if t.caps.supports(ops::MSM_G1) {
        out.push(
            t.shared_trial("host_memory/msm_g1-scalars/2^15", move |be| {
                let n = 1 << 15;
                let (bases, scalars) = (sample::g1_points(n, 60), sample::scalars(n, 61));
                let cfg = MsmConfig::default();
                let want = fail_on(be.msm_g1(bases.as_slice(), &scalars, &cfg))?.to_affine();
                let (_pool, lent_scalars) = lent(be, &scalars);
                let got = fail_on(be.msm_g1(bases.as_slice(), &lent_scalars, &cfg))?.to_affine();
                if got != want {
                    return Err("MSM over scalars in lent memory differs from the heap's".into());
                }
                Ok(())
            }),
        );
    }
}

/// How the rows of a random matrix are laid out.
#[derive(Clone, Copy, Debug)]
enum Rows {
    /// 0 to 3 entries, every 29th row long (33 to ~330 entries), every
    /// 17th empty; every third coefficient one.
    Mixed,
    /// As `Mixed`, with every coefficient one.
    Ones,
    /// As `Mixed`, with no coefficient one.
    NoOnes,
    /// Row 1 holds 5000 entries, the rest 1 to 2.
    OneHuge,
}

impl Rows {
    fn len(self, row: usize) -> usize {
        match self {
            Rows::OneHuge if row == 1 => 5000,
            Rows::OneHuge => 1 + row % 2,
            _ if row.is_multiple_of(17) => 0,
            _ if row % 29 == 3 => 33 + (row * 7) % 300,
            _ => 1 + row % 3,
        }
    }
    fn one(self, entry: usize) -> bool {
        match self {
            Rows::Ones => true,
            Rows::NoOnes => false,
            _ => entry.is_multiple_of(3),
        }
    }
}

/// A random R1CS that `w` satisfies: A and B rows as `rows` lays them out
/// (columns random, repeats within a row included), C's row one term
/// that makes `(A·w)(B·w) = C·w` (empty when the product is 0).
fn random_r1cs(m: usize, w: &Witness, rows: Rows, seed: u64) -> R1cs {
    let (ni, na) = (w.inputs.len(), w.aux.len());
    let vars = ni + na;
    let mut rng = sample::rng(seed);
    let full: Vec<Fr> = w.inputs.iter().chain(&w.aux).copied().collect();
    let mut pick = |bound: usize| (Fr::random(&mut rng).limbs[0] % bound as u64) as usize;
    let random_vals = sample::scalars(4 * m + 16, seed + 1);
    let mut val_k = 0;
    let mut next_val = |one: bool| {
        val_k = (val_k + 1) % random_vals.len();
        if one { Fr::one() } else { random_vals[val_k] }
    };
    let empty = || Csr {
        row_ptr: vec![0],
        cols: vec![],
        vals: vec![],
    };
    let (mut a, mut b, mut c) = (empty(), empty(), empty());
    for r in 0..m {
        let mut prod = Fr::one();
        for (mat, salt) in [(&mut a, 0), (&mut b, 1)] {
            let mut dot = Fr::ZERO;
            for _ in 0..rows.len(r + salt) {
                let col = pick(vars);
                let v = next_val(rows.one(mat.cols.len()));
                mat.cols.push(col as u32);
                mat.vals.push(v);
                dot = dot.add(&v.mul(&full[col]));
            }
            mat.row_ptr.push(mat.cols.len() as u64);
            prod = prod.mul(&dot);
        }
        if !prod.is_zero() {
            let col = (0..vars)
                .map(|k| (pick(vars) + k) % vars)
                .find(|&j| !full[j].is_zero())
                .expect("a nonzero variable: the constant one");
            c.cols.push(col as u32);
            c.vals
                .push(prod.mul(&full[col].inverse().expect("nonzero")));
        }
        c.row_ptr.push(c.cols.len() as u64);
    }
    R1cs {
        num_inputs: ni,
        num_aux: na,
        a,
        b,
        c,
    }
}

fn random_witness(ni: usize, na: usize, seed: u64) -> Witness {
    let mut inputs = sample::scalars(ni, seed);
    inputs[0] = Fr::one();
    Witness {
        inputs,
        aux: sample::scalars(na, seed + 1),
    }
}

fn spmv_config(log_n: u32, check: bool) -> SpmvConfig {
    SpmvConfig {
        device: 0,
        coset: Fr::from_u64(7),
        log_n,
        check,
        ext: Default::default(),
    }
}

/// What the op must give, from core's host code: host SpMV and bellman's
/// rows, the host check, then the quotient over the CPU backend's NTTs
/// (or the naive quotient, up to 2^6).
fn spmv_expected(
    cpu: &Backend,
    r1cs: &R1cs,
    w: &Witness,
    log_n: u32,
    check: bool,
) -> Result<Result<Vec<Fr>, u64>, Failed> {
    let n = 1usize << log_n;
    let [mut a, mut b, mut c] = [(); 3].map(|_| vec![Fr::ZERO; n]);
    fail_on(r1cs.domain_evaluations_into(&w.inputs, &w.aux, [&mut a, &mut b, &mut c]))?;
    let m = r1cs.num_constraints();
    let rows = [&a[..m], &b[..m], &c[..m]];
    if let Some(row) = zkpipe::r1cs::first_unsatisfied_row(rows).filter(|_| check) {
        return Ok(Err(row as u64));
    }
    let g = Fr::from_u64(7);
    if n <= 64 {
        return Ok(Ok(reference::quotient(&a, &b, &c, g)));
    }
    fail_on(zkpipe::groth16::quotient_by_ntts(
        cpu, &mut a, &mut b, &mut c, g, 0,
    ))?;
    Ok(Ok(a))
}

/// Uploads `r1cs`, runs the op for `w` and compares with [`spmv_expected`].
fn check_spmv(
    be: &Backend,
    cpu: &Backend,
    r1cs: &R1cs,
    w: &Witness,
    log_n: u32,
    check: bool,
) -> Result<(), Failed> {
    let want = spmv_expected(cpu, r1cs, w, log_n, check)?;
    let h = fail_on(be.upload_r1cs(r1cs, 0))?;
    let mut got = vec![Fr::from_u64(3); 1 << log_n];
    let r = be.quotient_from_witness(h, &w.inputs, &w.aux, &mut got, &spmv_config(log_n, check));
    fail_on(be.drop_r1cs(h))?;
    match (fail_on(r)?, want) {
        (None, Ok(want)) => first_mismatch(&got, &want),
        (Some(row), Err(want)) if row == want => Ok(()),
        (got, want) => Err(format!(
            "first unsatisfied row: backend {got:?}, host {:?}",
            want.err()
        )
        .into()),
    }
}

/// Backends that implement `spmv`: where they have a device they must
/// declare it, so that a lost declaration fails here instead of passing as
/// a refusal the suite expects.
const SPMV_BACKENDS: [&str; 3] = ["cpu", "cuda", "wgpu"];

fn spmv_trials(t: &Target, cpu: &Arc<Backend>, other: Option<Arc<Backend>>, out: &mut Vec<Trial>) {
    if SPMV_BACKENDS.contains(&t.name.as_str()) {
        let declared = t.caps.supports(ops::SPMV);
        out.push(t.trial("spmv/declared".into(), move |_| {
            if declared {
                Ok(())
            } else {
                Err("this backend implements spmv but its capabilities do not list it".into())
            }
        }));
    }
    if !t.caps.supports(ops::SPMV) {
        out.push(t.unsupported(ops::SPMV, |be| {
            let w = random_witness(1, 1, 1);
            be.upload_r1cs(&random_r1cs(1, &w, Rows::Mixed, 2), 0)
                .map(|_| ())
        }));
        return;
    }
    let big = (1usize << max_log()) - 9;
    let cases: Vec<(usize, usize, usize, Rows)> = vec![
        (1, 1, 1, Rows::Mixed),
        (2, 1, 3, Rows::Mixed),
        (5, 2, 7, Rows::Mixed),
        (31, 3, 40, Rows::Mixed),
        (100, 7, 150, Rows::Ones),
        (100, 7, 150, Rows::NoOnes),
        (1003, 5, 1500, Rows::Mixed),
        (57, 2, 60, Rows::OneHuge),
        (big, 9, big + 100, Rows::Mixed),
    ];
    for (m, ni, na, rows) in cases {
        let log_n = zkpipe::groth16::domain_log_size(m, ni);
        for (extra, check) in [(0, true), (0, false), (1, true)] {
            let cpu = cpu.clone();
            let case = format!(
                "spmv/{rows:?}/{m}x{ni}+{na}/2^{}{}",
                log_n + extra,
                if check { "/checked" } else { "" }
            );
            out.push(t.trial(case, move |be| {
                let w = random_witness(ni, na, m as u64);
                let r1cs = random_r1cs(m, &w, rows, m as u64 + 50);
                // Satisfied: the check passes and h matches.
                check_spmv(be, &cpu, &r1cs, &w, log_n + extra, check)?;
                // Another witness: unchecked, any h; checked, the same first failing row.
                let other = random_witness(ni, na, m as u64 + 99);
                check_spmv(be, &cpu, &r1cs, &other, log_n + extra, check)
            }));
        }
    }
    let cpu2 = cpu.clone();
    out.push(t.trial("spmv/unsatisfied-late-row".into(), move |be| {
        let w = random_witness(3, 300, 5);
        let mut r1cs = random_r1cs(257, &w, Rows::Mixed, 6);
        // Break rows 200 and 230 only: the first reported must be 200.
        for row in [200usize, 230] {
            let k = r1cs.c.row_ptr[row] as usize;
            if k == r1cs.c.row_ptr[row + 1] as usize {
                return Err("row has no C term".into());
            }
            r1cs.c.vals[k] = r1cs.c.vals[k].add(&Fr::one());
        }
        let log_n = zkpipe::groth16::domain_log_size(257, 3);
        let h = fail_on(be.upload_r1cs(&r1cs, 0))?;
        let mut got = vec![Fr::ZERO; 1 << log_n];
        let row = fail_on(be.quotient_from_witness(
            h,
            &w.inputs,
            &w.aux,
            &mut got,
            &spmv_config(log_n, true),
        ))?;
        fail_on(be.drop_r1cs(h))?;
        if row != Some(200) {
            return Err(format!("first unsatisfied row {row:?}, expected Some(200)").into());
        }
        check_spmv(be, &cpu2, &r1cs, &w, log_n, true)
    }));
    let cpu3 = cpu.clone();
    out.push(t.trial("spmv/zero-witness".into(), move |be| {
        let w = random_witness(4, 200, 7);
        let r1cs = random_r1cs(300, &w, Rows::Mixed, 8);
        let zeros = Witness {
            inputs: vec![Fr::ZERO; 4],
            aux: vec![Fr::ZERO; 200],
        };
        let log_n = zkpipe::groth16::domain_log_size(300, 4);
        check_spmv(be, &cpu3, &r1cs, &zeros, log_n, true)
    }));
    out.push(t.trial("spmv/refusals".into(), move |be| {
        let w = random_witness(3, 20, 9);
        let r1cs = random_r1cs(20, &w, Rows::Mixed, 10);
        let log_n = zkpipe::groth16::domain_log_size(20, 3);
        let n = 1usize << log_n;
        let h = fail_on(be.upload_r1cs(&r1cs, 0))?;
        let mut buf = vec![Fr::ZERO; n];
        let run = |h, inputs: &[Fr], aux: &[Fr], out: &mut [Fr], log_n| {
            be.quotient_from_witness(h, inputs, aux, out, &spmv_config(log_n, true))
        };
        // The witness's shape.
        expect_code(
            run(h, &w.inputs[..2], &w.aux, &mut buf, log_n),
            ErrorCode::INVALID_INPUT,
        )?;
        let long_aux: Vec<Fr> = w.aux.iter().copied().chain([Fr::one()]).collect();
        expect_code(
            run(h, &w.inputs, &long_aux, &mut buf, log_n),
            ErrorCode::INVALID_INPUT,
        )?;
        // h_out of another length than 2^log_n, and a domain too small.
        expect_code(
            run(h, &w.inputs, &w.aux, &mut buf[..n - 1], log_n),
            ErrorCode::INVALID_INPUT,
        )?;
        let mut twice = vec![Fr::ZERO; 2 * n];
        expect_code(
            run(h, &w.inputs, &w.aux, &mut twice, log_n),
            ErrorCode::INVALID_INPUT,
        )?;
        expect_code(
            run(h, &w.inputs, &w.aux, &mut buf[..n / 2], log_n - 1),
            ErrorCode::INVALID_INPUT,
        )?;
        expect_code(
            run(h, &w.inputs, &w.aux, &mut buf, 40),
            ErrorCode::INVALID_INPUT,
        )?;
        // A device it does not live on.
        let mut cfg = spmv_config(log_n, true);
        cfg.device = 1;
        expect_code(
            be.quotient_from_witness(h, &w.inputs, &w.aux, &mut buf, &cfg),
            ErrorCode::INVALID_INPUT,
        )?;
        // The handle still works after the refusals.
        if fail_on(run(h, &w.inputs, &w.aux, &mut buf, log_n))?.is_some() {
            return Err("a satisfying witness was reported unsatisfied".into());
        }
        // Dropped handles, twice dropped, never made.
        fail_on(be.drop_r1cs(h))?;
        expect_code(
            run(h, &w.inputs, &w.aux, &mut buf, log_n),
            ErrorCode::INVALID_INPUT,
        )?;
        expect_code(be.drop_r1cs(h), ErrorCode::INVALID_INPUT)?;
        expect_code(
            run(
                zkpipe::plugin::R1csHandle(12345),
                &w.inputs,
                &w.aux,
                &mut buf,
                log_n,
            ),
            ErrorCode::INVALID_INPUT,
        )?;
        // A handle of another instance of this backend.
        if let Some(other) = &other {
            let theirs = fail_on(other.upload_r1cs(&r1cs, 0))?;
            let r = run(theirs, &w.inputs, &w.aux, &mut buf, log_n);
            fail_on(other.drop_r1cs(theirs))?;
            expect_code(r, ErrorCode::INVALID_INPUT)?;
        }
        // Malformed matrices are refused before the backend sees them.
        let broken: [fn(&mut R1cs); 6] = [
            |r| r.a.row_ptr[1] = r.a.row_ptr[2] + 1,
            |r| r.b.cols[0] = (r.num_inputs + r.num_aux) as u32,
            |r| r.c.vals.push(Fr::one()),
            |r| {
                r.b.row_ptr.pop();
            },
            |r| r.a.row_ptr[0] = 1,
            |r| *r.c.row_ptr.last_mut().unwrap() += 1,
        ];
        for (k, f) in broken.iter().enumerate() {
            let mut bad = r1cs.clone();
            f(&mut bad);
            expect_code(be.upload_r1cs(&bad, 0), ErrorCode::INVALID_INPUT)
                .map_err(|e| format!("malformed case {k}: {}", e.message().unwrap_or("")))?;
        }
        expect_code(be.upload_r1cs(&r1cs, 99), ErrorCode::INVALID_INPUT)
    }));
    // A whole proof through the op equals the host SpMV path's, byte for byte.
    out.push(t.shared_trial("spmv/whole-proof/sha256-1", move |be| {
        let circuit = || zkpipe_circuits::BenchCircuit::new("sha256", "1", 3).unwrap();
        let (r1cs, w) = fail_on(R1cs::record(circuit()))?;
        let params = Arc::new(zkpipe::groth16::setup(&r1cs, 4));
        let r1cs = Arc::new(r1cs);
        let build = |device: bool| {
            zkpipe::groth16::ProverBuilder::new(be.clone())
                .device_spmv(device)
                .build(params.clone(), r1cs.clone())
        };
        let (fused, host) = (fail_on(build(true))?, fail_on(build(false))?);
        if !fused.device_spmv() || host.device_spmv() {
            return Err("device_spmv(true/false) was not honoured".into());
        }
        let (r, s) = (Fr::from_u64(17), Fr::from_u64(19));
        let (p1, _) = fail_on(fused.prove(&w, r, s))?;
        let (p2, _) = fail_on(host.prove(&w, r, s))?;
        if p1.to_bytes() != p2.to_bytes() {
            return Err("the fused path's proof differs from the host path's".into());
        }
        let pvk = zkpipe::groth16::PreparedVerifyingKey::new(&params.vk);
        if !fail_on(zkpipe::groth16::verify(&pvk, &p1, w.public_inputs()))? {
            return Err("the fused path's proof does not verify".into());
        }
        // An unsatisfying witness: the same refusal on both paths.
        let mut bad = w.clone();
        let k = bad.aux.len() / 2;
        bad.aux[k] = bad.aux[k].add(&Fr::one());
        let e1 = fused.prove(&bad, r, s).err().map(|e| e.to_string());
        let e2 = host.prove(&bad, r, s).err().map(|e| e.to_string());
        if e1.is_none() || e1 != e2 {
            return Err(format!("unsatisfied witness: fused {e1:?}, host {e2:?}").into());
        }
        Ok(())
    }));
}

/// Backend settings whose resident MSMs are checked again: the CUDA
/// backend's precomputed tables at the most windows (12-bit, 22 windows)
/// and at the widest window (22-bit: buckets far outnumber the points),
/// and its plain Pippenger at the windows it picks above 2^24 (18 bits,
/// and 20 at 2^28), here at sizes where most buckets are empty.
const SETTINGS: [(&str, &str, &str); 4] = [
    ("cuda", "precompute", "12"),
    ("cuda", "precompute", "22"),
    ("cuda", "window_bits", "18"),
    ("cuda", "window_bits", "20"),
];

/// The plugin writer's guide's example backend (docs/plugin-guide.md),
/// which `cargo test --workspace` builds beside this binary under a name
/// the loader skips: copied into a folder under its backend name, so that
/// it runs every trial a backend runs. `None` where it was not built.
fn guide_example() -> Option<(tempfile::TempDir, Registry)> {
    let exe = std::env::current_exe().ok()?;
    let lib = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("libzkpipe_example_minimal.so"))
        .find(|p| p.is_file())?;
    let dir = tempfile::tempdir().ok()?;
    std::fs::copy(&lib, dir.path().join("libzkpipe_backend_minimal.so")).ok()?;
    let registry = Registry::load(&SearchPath::only([dir.path().to_path_buf()]));
    Some((dir, registry))
}

fn main() {
    let args = Arguments::from_args();
    let registry = Registry::load(&SearchPath::standard(None));
    let example = guide_example();
    let mut trials = Vec::new();
    trials.push(
        Trial::test("[loader] the plugin guide's example loads", {
            let loaded = example.as_ref().map(|(_, r)| {
                (
                    r.plugins.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
                    r.failures.len(),
                )
            });
            move || match &loaded {
                Some((names, 0)) if names == &["minimal".to_string()] => Ok(()),
                other => Err(format!("loaded (names, failures): {other:?}").into()),
            }
        })
        .with_ignored_flag(example.is_none()),
    );

    trials.push(
        Trial::test("[loader] the plugin guide's example refuses a setting", {
            let refusal = example.as_ref().map(|(_, r)| {
                let config = BackendConfig {
                    ext: vec![KeyValue {
                        key: "window_bits".into(),
                        value: "16".into(),
                    }]
                    .into(),
                    ..Default::default()
                };
                r.create("minimal", &config).err().map(|e| e.to_string())
            });
            move || match &refusal {
                Some(Some(e)) if e.contains("takes no settings") && e.contains("window_bits") => {
                    Ok(())
                }
                other => Err(format!("creating it with window_bits=16 gave {other:?}").into()),
            }
        })
        .with_ignored_flag(example.is_none()),
    );

    let searched = format!("{:?}", registry.searched);
    let found = registry.plugins.len();
    trials.push(Trial::test(
        "[loader] finds at least one backend",
        move || {
            if found == 0 {
                return Err(format!("no backend library found; searched {searched}").into());
            }
            Ok(())
        },
    ));
    let failures: Vec<String> = registry
        .failures
        .iter()
        .map(|f| format!("{}: {}", f.path.display(), f.reason))
        .collect();
    trials.push(Trial::test(
        "[loader] every library found loads",
        move || {
            if failures.is_empty() {
                Ok(())
            } else {
                Err(failures.join("\n").into())
            }
        },
    ));

    let cpu_reference = registry
        .create("cpu", &BackendConfig::default())
        .ok()
        .map(Arc::new);
    let example_plugins = example.iter().flat_map(|(_, r)| &r.plugins);
    for plugin in registry.plugins.iter().chain(example_plugins) {
        let backend = match plugin.create(&BackendConfig::default()) {
            Ok(b) => Arc::new(b),
            Err(e) => {
                let msg = e.to_string();
                trials.push(Trial::test(
                    format!("[{}] create", plugin.name),
                    move || Err(msg.into()),
                ));
                continue;
            }
        };
        let info = backend.info();
        if info.devices.is_empty() {
            // A backend with no device (a GPU plugin on a machine without one) is a
            // reported, expected case; but not wgpu where ZKPIPE_REQUIRE_ADAPTER is
            // set (CI, with lavapipe installed).
            let note = info.notes.to_string();
            let required =
                plugin.name == "wgpu" && std::env::var_os("ZKPIPE_REQUIRE_ADAPTER").is_some();
            trials.push(Trial::test(
                format!("[{}] no devices (expected here: {note})", plugin.name),
                move || {
                    if required {
                        return Err(
                            "ZKPIPE_REQUIRE_ADAPTER is set: wgpu must find an adapter".into()
                        );
                    }
                    Ok(())
                },
            ));
            continue;
        }
        let target = Target {
            name: plugin.name.clone(),
            caps: backend.capabilities(),
            backend,
        };
        msm_trials::<G1>(&target, &mut trials);
        msm_trials::<G2>(&target, &mut trials);
        other_group_trials::<G1, G2>(&target, &mut trials);
        other_group_trials::<G2, G1>(&target, &mut trials);
        ntt_trials(&target, &mut trials);
        quotient_trials(&target, &mut trials);
        host_memory_trials(&target, &mut trials);
        bn254::trials(&target, &mut trials);
        match &cpu_reference {
            Some(cpu) => {
                let other = plugin.create(&BackendConfig::default()).ok().map(Arc::new);
                spmv_trials(&target, cpu, other, &mut trials);
            }
            None => trials.push(Trial::test(
                format!("[{}] spmv (no cpu backend to compare with)", plugin.name),
                || Err("the spmv trials need the cpu plugin as their reference".into()),
            )),
        }
        // Settings that change how resident bases are kept: their MSMs again.
        for (key, value) in SETTINGS
            .iter()
            .filter(|(name, ..)| *name == plugin.name.as_str())
            .map(|(_, k, v)| (k, v))
        {
            let config = BackendConfig {
                ext: vec![KeyValue {
                    key: (*key).into(),
                    value: (*value).into(),
                }]
                .into(),
                ..Default::default()
            };
            let target = match plugin.create(&config) {
                Ok(b) => Target {
                    name: format!("{} {key}={value}", plugin.name),
                    caps: b.capabilities(),
                    backend: Arc::new(b),
                },
                Err(e) => {
                    let msg = e.to_string();
                    trials.push(Trial::test(
                        format!("[{} {key}={value}] create", plugin.name),
                        move || Err(msg.into()),
                    ));
                    continue;
                }
            };
            resident_trials::<G1>(&target, &mut trials);
            resident_trials::<G2>(&target, &mut trials);
            bn254::resident_trials_under_settings(&target, &mut trials);
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
