use halo2curves::bn256::{Fq, Fr, G1Affine, G2Affine, G1, G2};
use halo2curves::ff::{Field, PrimeField};
use halo2curves::fft::best_fft;
use halo2curves::group::{prime::PrimeCurveAffine, Curve, Group};
use halo2curves::msm::msm_best;
use halo2curves::CurveAffine;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;

const RUNS: usize = 7;

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

fn field_chain<F: Field>(rng: &mut StdRng, n: usize) -> (f64, f64, f64) {
    let a = F::random(&mut *rng);
    let b = F::random(&mut *rng);
    let (m, lo, hi) = bench(|| {
        let mut x = black_box(a);
        let y = black_box(b);
        for _ in 0..n {
            x *= y;
        }
        black_box(x);
    });
    let k = 1e6 / n as f64;
    (m * k, lo * k, hi * k)
}

/// same base generation scheme as the arkworks bench
fn bases<C: CurveAffine>(rng: &mut StdRng, n: usize) -> Vec<C>
where
    C::Curve: Group<Scalar = C::Scalar>,
{
    let g = C::Curve::generator();
    let seeds: Vec<C::Curve> = (0..256).map(|_| g * C::Scalar::random(&mut *rng)).collect();
    let start = g * C::Scalar::random(&mut *rng);
    let idx: Vec<usize> = (0..n).map(|_| rng.gen_range(0..256)).collect();
    let chunks = 64usize;
    let per = n / chunks;
    let starts: Vec<C::Curve> = (0..chunks)
        .map(|_| start * C::Scalar::random(&mut *rng))
        .collect();
    let proj: Vec<C::Curve> = (0..chunks)
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
    let mut aff = vec![C::identity(); n];
    C::Curve::batch_normalize(&proj, &mut aff);
    aff
}

fn scalars(rng: &mut StdRng, n: usize) -> Vec<Fr> {
    (0..n).map(|_| Fr::random(&mut *rng)).collect()
}

fn main() {
    println!(
        "crate=halo2curves 0.10.0 rayon_threads={}",
        rayon::current_num_threads()
    );
    let mut rng = StdRng::seed_from_u64(42);
    let n = 10_000_000;

    let (m, lo, hi) = field_chain::<Fr>(&mut rng, n);
    println!("Fr mul: {:.3} ns/mul (min {:.3} max {:.3})", m, lo, hi);
    let (m, lo, hi) = field_chain::<Fq>(&mut rng, n);
    println!("Fq mul: {:.3} ns/mul (min {:.3} max {:.3})", m, lo, hi);

    {
        let n = 1 << 10;
        let b = bases::<G1Affine>(&mut rng, n);
        let s = scalars(&mut rng, n);
        let msm = msm_best(&s, &b);
        let naive: G1 = b.iter().zip(&s).map(|(p, k)| *p * k).sum();
        assert_eq!(msm, naive, "G1 MSM mismatch");
        assert!(!bool::from(msm.is_identity()));
        assert!(b.iter().all(|p| bool::from(p.is_on_curve())));
        let b2 = bases::<G2Affine>(&mut rng, n);
        let msm2 = msm_best(&s, &b2);
        let naive2: G2 = b2.iter().zip(&s).map(|(p, k)| *p * k).sum();
        assert_eq!(msm2, naive2, "G2 MSM mismatch");
        println!("check: MSM 2^10 == naive sum (G1 and G2): OK");
    }

    for log in [16u32, 20] {
        let n = 1usize << log;
        let b: Vec<G1Affine> = bases::<G1Affine>(&mut rng, n);
        let s = scalars(&mut rng, n);
        let mut r = G1::identity();
        let (m, lo, hi) = bench(|| {
            r = msm_best(black_box(&s), black_box(&b));
        });
        let _ = black_box(r);
        println!(
            "G1 MSM 2^{}: {:.2} ms (min {:.2} max {:.2})",
            log, m, lo, hi
        );
    }
    {
        let log = 16;
        let n = 1usize << log;
        let b: Vec<G2Affine> = bases::<G2Affine>(&mut rng, n);
        let s = scalars(&mut rng, n);
        let mut r = G2::identity();
        let (m, lo, hi) = bench(|| {
            r = msm_best(black_box(&s), black_box(&b));
        });
        let _ = black_box(r);
        println!(
            "G2 MSM 2^{}: {:.2} ms (min {:.2} max {:.2})",
            log, m, lo, hi
        );
    }
    {
        let log = 20u32;
        let n = 1usize << log;
        let omega = Fr::ROOT_OF_UNITY.pow_vartime([1u64 << (Fr::S - log)]);
        assert_eq!(omega.pow_vartime([n as u64]), Fr::ONE);
        assert_ne!(omega.pow_vartime([(n / 2) as u64]), Fr::ONE);
        let orig = scalars(&mut rng, n);
        let mut t = orig.clone();
        best_fft(&mut t, omega, log);
        assert_ne!(t, orig);
        best_fft(&mut t, omega.invert().unwrap(), log);
        let ninv = Fr::from(n as u64).invert().unwrap();
        t.par_iter_mut().for_each(|x| *x *= ninv);
        assert_eq!(t, orig);
        let mut v = orig.clone();
        let (m, lo, hi) = bench(|| {
            v.copy_from_slice(&orig);
            best_fft(black_box(&mut v), omega, log);
        });
        println!(
            "Fr NTT 2^20 (fft::best_fft, incl. 8MB copy): {:.2} ms (min {:.2} max {:.2})",
            m, lo, hi
        );
    }
}
