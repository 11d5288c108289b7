//! Parameter generation from a seed. The toxic waste (τ, α, β, γ, δ) comes
//! from the seed, so anyone who knows it can forge proofs: for tests, demos
//! and benchmarks only, never for production keys.

use rayon::prelude::*;

use super::keys::{Parameters, VerifyingKey};
use super::odd_coset::HQuery;
use crate::progress::{Progress, Silent};
use crate::r1cs::R1cs;
use crate::sample;
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};

fn nonzero(rng: &mut impl rand_core::RngCore) -> Fr {
    loop {
        let x = Fr::random(rng);
        if !x.is_zero() {
            return x;
        }
    }
}

/// Inverts every element with one field inversion (Montgomery's trick).
///
/// # Panics
/// If an element is zero.
fn batch_inverse(v: &mut [Fr]) {
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = Fr::one();
    for x in v.iter() {
        prefix.push(acc);
        acc = acc.mul(x);
    }
    let mut inv = acc.inverse().expect("batch_inverse: zero element");
    for (x, p) in v.iter_mut().zip(prefix).rev() {
        let xi = inv.mul(&p);
        inv = inv.mul(x);
        *x = xi;
    }
}

/// A G2 point costs about this many G1 points' time (progress units).
const G2_WEIGHT: u64 = 3;

/// `k·G` for each k, as affine points.
fn g1_fixed_base(scalars: &[Fr], progress: &dyn Progress) -> Vec<G1Affine> {
    let g = G1Projective::generator();
    scalars
        .par_chunks(1024)
        .flat_map_iter(|c| {
            let out =
                G1Projective::batch_to_affine(&c.iter().map(|k| g.mul(k)).collect::<Vec<_>>());
            progress.advance(c.len() as u64);
            out
        })
        .collect()
}

fn g2_fixed_base(scalars: &[Fr], progress: &dyn Progress) -> Vec<G2Affine> {
    let g = G2Projective::generator();
    scalars
        .par_chunks(1024)
        .flat_map_iter(|c| {
            let out =
                G2Projective::batch_to_affine(&c.iter().map(|k| g.mul(k)).collect::<Vec<_>>());
            progress.advance(G2_WEIGHT * c.len() as u64);
            out
        })
        .collect()
}

/// QAP polynomials u, v, w of every variable evaluated at τ, bellman's way:
/// the circuit's rows, then one `input_i · 1 = 0` row per public input.
fn qap_at(r1cs: &R1cs, lagrange: &[Fr]) -> [Vec<Fr>; 3] {
    let vars = r1cs.num_inputs + r1cs.num_aux;
    let eval = |m: &crate::r1cs::Csr| {
        let mut out = vec![Fr::ZERO; vars];
        for (row, l) in lagrange[..m.rows()].iter().enumerate() {
            for k in m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize {
                let col = m.cols[k] as usize;
                out[col] = out[col].add(&m.vals[k].mul(l));
            }
        }
        out
    };
    let mut u = eval(&r1cs.a);
    for i in 0..r1cs.num_inputs {
        u[i] = u[i].add(&lagrange[r1cs.num_constraints() + i]);
    }
    [u, eval(&r1cs.b), eval(&r1cs.c)]
}

/// Generates parameters for `r1cs` with toxic waste drawn from `seed`
/// (**insecure**: for tests and demos).
pub fn setup(r1cs: &R1cs, seed: u64) -> Parameters {
    setup_with_progress(r1cs, seed, &Silent)
}

/// [`setup`], reporting the points made to `progress`.
pub fn setup_with_progress(r1cs: &R1cs, seed: u64, progress: &dyn Progress) -> Parameters {
    let mut rng = sample::rng(seed);
    let [tau, alpha, beta, gamma, delta] = std::array::from_fn(|_| nonzero(&mut rng));
    let log_n = super::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    let n = 1usize << log_n;

    // Lagrange basis at τ: L_i(τ) = ω^i·(τ^n − 1) / (n·(τ − ω^i)).
    let omega = Fr::root_of_unity(log_n);
    let mut omega_i = Vec::with_capacity(n);
    let mut w = Fr::one();
    for _ in 0..n {
        omega_i.push(w);
        w = w.mul(&omega);
    }
    let z_tau = tau.pow(&[n as u64]).sub(&Fr::one());
    let mut denom: Vec<Fr> = omega_i.iter().map(|wi| tau.sub(wi)).collect();
    batch_inverse(&mut denom);
    let scale = z_tau.mul(&Fr::from_u64(n as u64).inverse().expect("n < r"));
    let lagrange: Vec<Fr> = omega_i
        .iter()
        .zip(&denom)
        .map(|(wi, d)| wi.mul(d).mul(&scale))
        .collect();

    let [u, v, w] = qap_at(r1cs, &lagrange);
    let gamma_inv = gamma.inverse().expect("nonzero");
    let delta_inv = delta.inverse().expect("nonzero");
    let combo = |j: usize, div: &Fr| beta.mul(&u[j]).add(&alpha.mul(&v[j])).add(&w[j]).mul(div);
    let n_in = r1cs.num_inputs;
    let density = r1cs.density();

    let ic: Vec<Fr> = (0..n_in).map(|j| combo(j, &gamma_inv)).collect();
    let l: Vec<Fr> = (n_in..n_in + r1cs.num_aux)
        .into_par_iter()
        .map(|j| combo(j, &delta_inv))
        .collect();
    let zd = z_tau.mul(&delta_inv);
    let mut h = Vec::with_capacity(n - 1);
    let mut t = zd;
    for _ in 0..n - 1 {
        h.push(t);
        t = t.mul(&tau);
    }
    let a: Vec<Fr> = (0..n_in)
        .chain(
            (0..r1cs.num_aux)
                .filter(|&k| density.a_aux[k])
                .map(|k| n_in + k),
        )
        .map(|j| u[j])
        .collect();
    let b: Vec<Fr> = (0..n_in)
        .filter(|&j| density.b_input[j])
        .chain(
            (0..r1cs.num_aux)
                .filter(|&k| density.b_aux[k])
                .map(|k| n_in + k),
        )
        .map(|j| v[j])
        .collect();

    let g1 = G1Projective::generator();
    let g2 = G2Projective::generator();
    let points = (ic.len() + h.len() + l.len() + a.len() + b.len()) as u64;
    progress.begin(
        "setup (insecure test keys)",
        points + G2_WEIGHT * b.len() as u64,
    );
    let params = Parameters {
        vk: VerifyingKey {
            alpha_g1: g1.mul(&alpha).to_affine(),
            beta_g1: g1.mul(&beta).to_affine(),
            beta_g2: g2.mul(&beta).to_affine(),
            gamma_g2: g2.mul(&gamma).to_affine(),
            delta_g1: g1.mul(&delta).to_affine(),
            delta_g2: g2.mul(&delta).to_affine(),
            ic: g1_fixed_base(&ic, progress),
        },
        h: g1_fixed_base(&h, progress),
        l: g1_fixed_base(&l, progress),
        a: g1_fixed_base(&a, progress),
        b_g1: g1_fixed_base(&b, progress),
        b_g2: g2_fixed_base(&b, progress),
        h_query: HQuery::TauPowers,
    };
    progress.end();
    params
}

/// Random valid points with the shape `setup` would give: honest timing,
/// proofs that do not verify. For sizes where a real setup is too slow.
pub fn synthetic_parameters(r1cs: &R1cs, seed: u64) -> Parameters {
    let d = r1cs.density();
    let count = |v: &[bool]| v.iter().filter(|&&b| b).count();
    let n = 1usize << super::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    let g1 = |k: usize, s: u64| sample::g1_points(k, seed ^ s);
    let g2 = |k: usize, s: u64| sample::g2_points(k, seed ^ s);
    let nb = count(&d.b_input) + count(&d.b_aux);
    let vk1 = g1(3, 1);
    let vk2 = g2(3, 2);
    Parameters {
        vk: VerifyingKey {
            alpha_g1: vk1[0],
            beta_g1: vk1[1],
            beta_g2: vk2[0],
            gamma_g2: vk2[1],
            delta_g1: vk1[2],
            delta_g2: vk2[2],
            ic: g1(r1cs.num_inputs, 3),
        },
        h: g1(n - 1, 4),
        l: g1(r1cs.num_aux, 5),
        a: g1(r1cs.num_inputs + count(&d.a_aux), 6),
        b_g1: g1(nb, 7),
        b_g2: g2(nb, 8),
        h_query: HQuery::TauPowers,
    }
}
