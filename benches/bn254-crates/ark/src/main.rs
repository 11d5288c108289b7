use ark_bn254::{Fq, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::{Field, One};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
use ark_std::UniformRand;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;

const RUNS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// warm-up once, then RUNS timed runs; returns (median, min, max) in ms
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

fn field_chain<F: Field + UniformRand>(rng: &mut StdRng, n: usize) -> (f64, f64, f64) {
    let a = F::rand(rng);
    let b = F::rand(rng);
    let (m, lo, hi) = bench(|| {
        let mut x = black_box(a);
        let y = black_box(b);
        for _ in 0..n {
            x *= y;
        }
        black_box(x);
    });
    let k = 1e6 / n as f64; // ms -> ns per mul
    (m * k, lo * k, hi * k)
}

/// "random" bases: a few uniformly random points (generator * random scalar), then a
/// random walk p_i = p_{i-1} + R[j] with random j, batch-normalized to affine.
fn bases<G: CurveGroup>(rng: &mut StdRng, n: usize) -> Vec<G::Affine>
where
    G::ScalarField: UniformRand,
{
    let seeds: Vec<G> = (0..256)
        .map(|_| G::generator() * G::ScalarField::rand(rng))
        .collect();
    let start = G::generator() * G::ScalarField::rand(rng);
    let idx: Vec<usize> = (0..n).map(|_| rng.gen_range(0..256)).collect();
    // split into 2 chunks with different starting points to use both cores
    let chunks = 64usize;
    let per = n / chunks;
    let starts: Vec<G> = (0..chunks)
        .map(|_| start * G::ScalarField::rand(rng))
        .collect();
    let proj: Vec<G> = (0..chunks)
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut p = starts[c];
            let mut out = Vec::with_capacity(per);
            for i in 0..per {
                p += seeds[idx[c * per + i]];
                out.push(p);
            }
            out
        })
        .collect();
    G::normalize_batch(&proj)
}

fn scalars(rng: &mut StdRng, n: usize) -> Vec<Fr> {
    (0..n).map(|_| Fr::rand(rng)).collect()
}

fn main() {
    println!(
        "crate=arkworks ark-bn254 0.6.0 rayon_threads={}",
        rayon::current_num_threads()
    );
    let mut rng = StdRng::seed_from_u64(42);
    let n = 10_000_000;

    let (m, lo, hi) = field_chain::<Fr>(&mut rng, n);
    println!("Fr mul: {:.3} ns/mul (min {:.3} max {:.3})", m, lo, hi);
    let (m, lo, hi) = field_chain::<Fq>(&mut rng, n);
    println!("Fq mul: {:.3} ns/mul (min {:.3} max {:.3})", m, lo, hi);

    // correctness: MSM at 2^10 vs naive
    {
        let n = 1 << 10;
        let b = bases::<G1Projective>(&mut rng, n);
        let s = scalars(&mut rng, n);
        let msm = G1Projective::msm(&b, &s).unwrap();
        let naive: G1Projective = b
            .iter()
            .zip(&s)
            .map(|(p, k)| p.mul_bigint(ark_ff::PrimeField::into_bigint(*k)))
            .sum();
        assert_eq!(msm, naive, "G1 MSM mismatch");
        assert!(!ark_ff::Zero::is_zero(&msm));
        let b2 = bases::<G2Projective>(&mut rng, n);
        let msm2 = G2Projective::msm(&b2, &s).unwrap();
        let naive2: G2Projective = b2.iter().zip(&s).map(|(p, k)| *p * k).sum();
        assert_eq!(msm2, naive2, "G2 MSM mismatch");
        assert!(b
            .iter()
            .all(|p| p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve()));
        println!("check: MSM 2^10 == naive sum (G1 and G2): OK");
    }

    for log in [16u32, 20] {
        let n = 1usize << log;
        let b: Vec<G1Affine> = bases::<G1Projective>(&mut rng, n);
        let s = scalars(&mut rng, n);
        let mut r = G1Projective::default();
        let (m, lo, hi) = bench(|| {
            r = G1Projective::msm(black_box(&b), black_box(&s)).unwrap();
        });
        black_box(r);
        println!(
            "G1 MSM 2^{}: {:.2} ms (min {:.2} max {:.2})",
            log, m, lo, hi
        );
    }
    {
        let log = 16;
        let n = 1usize << log;
        let b: Vec<G2Affine> = bases::<G2Projective>(&mut rng, n);
        let s = scalars(&mut rng, n);
        let mut r = G2Projective::default();
        let (m, lo, hi) = bench(|| {
            r = G2Projective::msm(black_box(&b), black_box(&s)).unwrap();
        });
        black_box(r);
        println!(
            "G2 MSM 2^{}: {:.2} ms (min {:.2} max {:.2})",
            log, m, lo, hi
        );
    }
    {
        let n = 1usize << 20;
        let dom = Radix2EvaluationDomain::<Fr>::new(n).unwrap();
        let orig = scalars(&mut rng, n);
        // sanity: ifft(fft(x)) == x
        let mut t = orig.clone();
        dom.fft_in_place(&mut t);
        assert_ne!(t, orig);
        dom.ifft_in_place(&mut t);
        assert_eq!(t, orig);
        assert!(dom.group_gen.pow([n as u64]).is_one());
        let mut v = orig.clone();
        let (m, lo, hi) = bench(|| {
            v.copy_from_slice(&orig);
            dom.fft_in_place(black_box(&mut v));
        });
        println!("Fr NTT 2^20 (Radix2EvaluationDomain::fft_in_place, incl. 8MB copy): {:.2} ms (min {:.2} max {:.2})", m, lo, hi);
    }
}
