use lambdaworks_math::cyclic_group::IsGroup;
use lambdaworks_math::elliptic_curve::short_weierstrass::curves::bn_254::{
    curve::{BN254Curve, BN254FieldElement},
    default_types::FrElement,
    twist::BN254TwistCurve,
};
use lambdaworks_math::elliptic_curve::short_weierstrass::point::ShortWeierstrassProjectivePoint;
use lambdaworks_math::elliptic_curve::traits::IsEllipticCurve;
use lambdaworks_math::msm::pippenger;
use lambdaworks_math::unsigned_integer::element::U256;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;

const RUNS: usize = 7;
type G1 = ShortWeierstrassProjectivePoint<BN254Curve>;
type G2 = ShortWeierstrassProjectivePoint<BN254TwistCurve>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn bench<F: FnMut() -> ()>(mut f: F) -> (f64, f64, f64) {
    f();
    let v: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let mn = v.iter().cloned().fold(f64::MAX, f64::min);
    let mx = v.iter().cloned().fold(0.0, f64::max);
    (median(v), mn, mx)
}

/// random 256-bit integer below 0x3064...0 (< both BN254 moduli); limbs are big-endian
fn rand_u256(rng: &mut StdRng) -> U256 {
    U256::from_limbs([
        rng.gen_range(0..0x30644e72e131a028u64),
        rng.gen(),
        rng.gen(),
        rng.gen(),
    ])
}
fn rand_fr(rng: &mut StdRng) -> FrElement {
    FrElement::new(rand_u256(rng))
}
fn scalars(rng: &mut StdRng, n: usize) -> Vec<FrElement> {
    (0..n).map(|_| rand_fr(rng)).collect()
}

/// same base-generation scheme as the other benches; bases are normalized to z = 1
/// (lambdaworks has no separate affine type: "affine" = projective with z = 1)
fn bases<G: IsGroup + Send + Sync>(g: G, rng: &mut StdRng, n: usize, norm: fn(&G) -> G) -> Vec<G> {
    let seeds: Vec<G> = (0..256)
        .map(|_| g.operate_with_self(rand_fr(rng).representative()))
        .collect();
    let start = g.operate_with_self(rand_fr(rng).representative());
    let idx: Vec<usize> = (0..n).map(|_| rng.gen_range(0..256)).collect();
    let chunks = 64usize;
    let per = n / chunks;
    let starts: Vec<G> = (0..chunks)
        .map(|_| start.operate_with_self(rand_fr(rng).representative()))
        .collect();
    (0..chunks)
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut p = starts[c].clone();
            let mut out = Vec::with_capacity(per);
            for i in 0..per {
                p = p.operate_with(&seeds[idx[c * per + i]]);
                out.push(norm(&p));
            }
            out
        })
        .collect()
}

fn window(n: usize) -> usize {
    // lambdaworks' own optimum_window_size (private): 4/5 * log2(n)
    (n.ilog2() as usize * 4 / 5).max(2)
}

fn msm<G: IsGroup + Send + Sync>(s: &[FrElement], b: &[G]) -> G {
    let cs: Vec<U256> = s.par_iter().map(|x| x.representative()).collect();
    pippenger::parallel_msm_with(&cs, b, window(b.len()))
}

fn main() {
    println!(
        "crate=lambdaworks-math 0.13.0 rayon_threads={}",
        rayon::current_num_threads()
    );
    let mut rng = StdRng::seed_from_u64(42);
    let n = 10_000_000;
    {
        let a = rand_fr(&mut rng);
        let b = rand_fr(&mut rng);
        let (m, lo, hi) = bench(|| {
            let mut x = black_box(a.clone());
            let y = black_box(b.clone());
            for _ in 0..n {
                x = &x * &y;
            }
            black_box(x);
        });
        let k = 1e6 / n as f64;
        println!(
            "Fr mul: {:.3} ns/mul (min {:.3} max {:.3})",
            m * k,
            lo * k,
            hi * k
        );
        let a = BN254FieldElement::new(rand_u256(&mut rng));
        let b = BN254FieldElement::new(rand_u256(&mut rng));
        let (m, lo, hi) = bench(|| {
            let mut x = black_box(a.clone());
            let y = black_box(b.clone());
            for _ in 0..n {
                x = &x * &y;
            }
            black_box(x);
        });
        println!(
            "Fq mul: {:.3} ns/mul (min {:.3} max {:.3})",
            m * k,
            lo * k,
            hi * k
        );
    }
    {
        let n = 1 << 10;
        let b = bases(BN254Curve::generator(), &mut rng, n, G1::to_affine);
        let s = scalars(&mut rng, n);
        let r = msm(&s, &b);
        let r_serial = pippenger::msm(
            &s.iter().map(|x| x.representative()).collect::<Vec<_>>(),
            &b,
        )
        .unwrap();
        let naive = b.iter().zip(&s).fold(G1::neutral_element(), |acc, (p, k)| {
            acc.operate_with(&p.operate_with_self(k.representative()))
        });
        assert_eq!(r, naive, "G1 MSM mismatch");
        assert_eq!(r_serial, naive, "G1 serial MSM mismatch");
        assert!(!r.is_neutral_element());
        let b2 = bases(BN254TwistCurve::generator(), &mut rng, n, G2::to_affine);
        let r2 = msm(&s, &b2);
        let naive2 = b2
            .iter()
            .zip(&s)
            .fold(G2::neutral_element(), |acc, (p, k)| {
                acc.operate_with(&p.operate_with_self(k.representative()))
            });
        assert_eq!(r2, naive2, "G2 MSM mismatch");
        println!("check: MSM 2^10 == naive sum (G1 and G2): OK");
    }
    for log in [16u32, 20] {
        let n = 1usize << log;
        let b = bases(BN254Curve::generator(), &mut rng, n, G1::to_affine);
        let s = scalars(&mut rng, n);
        let mut r = G1::neutral_element();
        let (m, lo, hi) = bench(|| {
            r = msm(black_box(&s), black_box(&b));
        });
        black_box(&r);
        println!(
            "G1 MSM 2^{}: {:.2} ms (min {:.2} max {:.2}) [parallel_msm_with, window {}]",
            log,
            m,
            lo,
            hi,
            window(n)
        );
    }
    {
        let log = 16;
        let n = 1usize << log;
        let b = bases(BN254TwistCurve::generator(), &mut rng, n, G2::to_affine);
        let s = scalars(&mut rng, n);
        let mut r = G2::neutral_element();
        let (m, lo, hi) = bench(|| {
            r = msm(black_box(&s), black_box(&b));
        });
        black_box(&r);
        println!(
            "G2 MSM 2^{}: {:.2} ms (min {:.2} max {:.2}) [parallel_msm_with, window {}]",
            log,
            m,
            lo,
            hi,
            window(n)
        );
    }
    println!("Fr NTT 2^20: n/a (lambdaworks-math 0.13 has no IsFFTField impl for BN254 Fr)");
}
