//! Parameter generation from a seed. The toxic waste (τ, α, β, γ, δ) comes
//! from the seed, so anyone who knows it can forge proofs: for tests, demos
//! and benchmarks only, never for production keys.

use rayon::prelude::*;

use super::keys::{Parameters, VerifyingKey};
use super::odd_coset::{HQuery, snarkjs_root_of_unity};
use crate::ScalarField;
use crate::r1cs::{Csr, R1cs};
use crate::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use crate::util::progress::{Progress, Silent};
use crate::util::sample;

pub(crate) fn nonzero<F: ScalarField>(rng: &mut impl rand_core::RngCore) -> F {
    loop {
        let x = F::random(rng);
        if !x.is_zero() {
            return x;
        }
    }
}

/// Inverts every element with one field inversion (Montgomery's trick).
///
/// # Panics
/// If an element is zero.
fn batch_inverse<F: ScalarField>(v: &mut [F]) {
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = F::one();
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
pub(crate) const G2_WEIGHT: u64 = 3;

/// The group operations a fixed-base table needs (G1 and G2 alike).
pub(crate) trait Group: Copy + Send + Sync {
    type Affine: Copy + Send + Sync;
    fn identity() -> Self;
    fn add(&self, rhs: &Self) -> Self;
    fn add_affine(&self, rhs: &Self::Affine) -> Self;
    fn double(&self) -> Self;
    fn batch_to_affine(points: &[Self]) -> Vec<Self::Affine>;
}

macro_rules! group {
    ($proj:ty, $aff:ty) => {
        impl Group for $proj {
            type Affine = $aff;
            fn identity() -> Self {
                <$proj>::identity()
            }
            fn add(&self, rhs: &Self) -> Self {
                <$proj>::add(self, rhs)
            }
            fn add_affine(&self, rhs: &$aff) -> Self {
                <$proj>::add_affine(self, rhs)
            }
            fn double(&self) -> Self {
                <$proj>::double(self)
            }
            fn batch_to_affine(points: &[Self]) -> Vec<$aff> {
                <$proj>::batch_to_affine(points)
            }
        }
    };
}
group!(G1Projective, G1Affine);
group!(G2Projective, G2Affine);

/// Bits per window of the fixed-base tables.
const WINDOW: usize = 12;
/// Windows covering a 255-bit scalar.
const WINDOWS: usize = 255usize.div_ceil(WINDOW);

/// `j · 2^(WINDOW·i) · g` for every window `i` and digit `j ≥ 1`: a scalar
/// multiple is then one mixed addition per window (22 instead of ~255
/// doublings and ~64 additions), ~7× faster for the millions of points
/// a Filecoin-sized setup makes.
fn table<P: Group>(g: P) -> Vec<Vec<P::Affine>> {
    let mut bases = Vec::with_capacity(WINDOWS);
    let mut b = g;
    for _ in 0..WINDOWS {
        bases.push(b);
        for _ in 0..WINDOW {
            b = b.double();
        }
    }
    bases
        .into_par_iter()
        .map(|base| {
            let mut row = Vec::with_capacity((1 << WINDOW) - 1);
            let mut acc = base;
            for _ in 1..(1 << WINDOW) {
                row.push(acc);
                acc = acc.add(&base);
            }
            P::batch_to_affine(&row)
        })
        .collect()
}

fn mul_by_table<P: Group, F: ScalarField>(table: &[Vec<P::Affine>], k: &F) -> P {
    let bytes = k.to_bytes_le();
    let mut acc = P::identity();
    for (i, row) in table.iter().enumerate() {
        let bit = i * WINDOW;
        let (byte, shift) = (bit / 8, bit % 8);
        let mut word = 0u32;
        for (j, b) in bytes[byte..(byte + 3).min(32)].iter().enumerate() {
            word |= u32::from(*b) << (8 * j);
        }
        let digit = (word >> shift) as usize & ((1 << WINDOW) - 1);
        if digit != 0 {
            acc = acc.add_affine(&row[digit - 1]);
        }
    }
    acc
}

/// `k·g` for each k, as affine points.
pub(crate) fn fixed_base<P: Group, F: ScalarField>(
    g: P,
    scalars: &[F],
    weight: u64,
    progress: &dyn Progress,
) -> Vec<P::Affine> {
    if scalars.is_empty() {
        return Vec::new();
    }
    let table = table(g);
    scalars
        .par_chunks(1024)
        .flat_map_iter(|c| {
            let out = P::batch_to_affine(
                &c.iter()
                    .map(|k| mul_by_table(&table, k))
                    .collect::<Vec<P>>(),
            );
            progress.advance(weight * c.len() as u64);
            out
        })
        .collect()
}

fn g1_fixed_base(scalars: &[Fr], progress: &dyn Progress) -> Vec<G1Affine> {
    fixed_base(G1Projective::generator(), scalars, 1, progress)
}

fn g2_fixed_base(scalars: &[Fr], progress: &dyn Progress) -> Vec<G2Affine> {
    fixed_base(G2Projective::generator(), scalars, G2_WEIGHT, progress)
}

/// QAP polynomials u, v, w of every variable evaluated at τ, bellman's way:
/// the circuit's rows, then one `input_i · 1 = 0` row per public input.
pub(crate) fn qap_at<F: ScalarField>(r1cs: &R1cs<F>, lagrange: &[F]) -> [Vec<F>; 3] {
    let vars = r1cs.num_inputs + r1cs.num_aux;
    let eval = |m: &Csr<F>| {
        let mut out = vec![F::ZERO; vars];
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
    setup_for(r1cs, seed, HQuery::TauPowers, progress)
}

/// The Lagrange basis of the `n`-th roots of unity generated by `omega`,
/// at τ: `L_i(τ) = ωⁱ·(τⁿ − 1) / (n·(τ − ωⁱ))`; `n` is a power of two.
pub(crate) fn lagrange_at<F: ScalarField>(tau: &F, omega: &F, n: usize) -> Vec<F> {
    let mut omega_i = Vec::with_capacity(n);
    let mut w = F::one();
    for _ in 0..n {
        omega_i.push(w);
        w = w.mul(omega);
    }
    let z_tau = tau.square_times(n.trailing_zeros()).sub(&F::one());
    let mut denom: Vec<F> = omega_i.iter().map(|wi| tau.sub(wi)).collect();
    batch_inverse(&mut denom);
    let scale = z_tau.mul(&F::from_u64(n as u64).inverse().expect("n < r"));
    omega_i
        .iter()
        .zip(&denom)
        .map(|(wi, d)| wi.mul(d).mul(&scale))
        .collect()
}

/// The scalars a test key's points are multiples of, for either curve:
/// the toxic waste from a seed and what the queries hold at τ.
pub(crate) struct KeyScalars<F> {
    pub alpha: F,
    pub beta: F,
    pub gamma: F,
    pub delta: F,
    /// `u_j(τ)` for every variable.
    pub u: Vec<F>,
    /// `v_j(τ)` for every variable.
    pub v: Vec<F>,
    /// `(β·u_j + α·v_j + w_j)/γ` for each input (the one first).
    pub ic: Vec<F>,
    /// The same over δ for each private variable.
    pub private: Vec<F>,
    /// The H query: `τ^i·Z(τ)/δ` for `i < n − 1` (bellman), or
    /// `L_{2i+1}(τ)/δ` over the 2n-th roots for `i < n` (snarkjs).
    pub h: Vec<F>,
}

/// [`KeyScalars`] of `r1cs` from `seed` (**insecure**), the domain's
/// roots of unity from `root(log_n)`.
pub(crate) fn key_scalars<F: ScalarField>(
    r1cs: &R1cs<F>,
    seed: u64,
    h_query: HQuery,
    root: impl Fn(u32) -> F,
) -> KeyScalars<F> {
    let mut rng = sample::rng(seed);
    let [tau, alpha, beta, gamma, delta]: [F; 5] = std::array::from_fn(|_| nonzero(&mut rng));
    let log_n = super::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    let n = 1usize << log_n;
    let [u, v, w] = qap_at(r1cs, &lagrange_at(&tau, &root(log_n), n));
    let gamma_inv = gamma.inverse().expect("nonzero");
    let delta_inv = delta.inverse().expect("nonzero");
    let combo = |j: usize, div: &F| beta.mul(&u[j]).add(&alpha.mul(&v[j])).add(&w[j]).mul(div);
    let n_in = r1cs.num_inputs;
    let ic = (0..n_in).map(|j| combo(j, &gamma_inv)).collect();
    let private = (n_in..n_in + r1cs.num_aux)
        .into_par_iter()
        .map(|j| combo(j, &delta_inv))
        .collect();
    let h = match h_query {
        HQuery::TauPowers => {
            let z_tau = tau.square_times(log_n).sub(&F::one());
            let mut h = Vec::with_capacity(n - 1);
            let mut t = z_tau.mul(&delta_inv);
            for _ in 0..n - 1 {
                h.push(t);
                t = t.mul(&tau);
            }
            h
        }
        HQuery::OddCoset => lagrange_at(&tau, &root(log_n + 1), 2 * n)
            .into_iter()
            .skip(1)
            .step_by(2)
            .map(|l| l.mul(&delta_inv))
            .collect(),
    };
    KeyScalars {
        alpha,
        beta,
        gamma,
        delta,
        u,
        v,
        ic,
        private,
        h,
    }
}

/// [`setup_with_progress`] for either layout of the H query: bellman's
/// powers of τ over zkpipe's roots of unity, or snarkjs's odd-coset
/// Lagrange points over ffjavascript's (what `snarkjs groth16 setup`
/// writes into a zkey, so the keys prove with snarkjs too).
pub fn setup_for(r1cs: &R1cs, seed: u64, h_query: HQuery, progress: &dyn Progress) -> Parameters {
    let root = match h_query {
        HQuery::TauPowers => Fr::root_of_unity,
        HQuery::OddCoset => snarkjs_root_of_unity,
    };
    let KeyScalars {
        alpha,
        beta,
        gamma,
        delta,
        u,
        v,
        ic,
        private: l,
        h,
    } = key_scalars(r1cs, seed, h_query, root);
    let n_in = r1cs.num_inputs;
    let density = r1cs.density();
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
        h_query,
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

#[cfg(test)]
mod fixed_base_tests {
    use super::*;

    #[test]
    fn table_multiples_equal_plain_multiplication() {
        let mut ks = sample::scalars(40, 3);
        ks.extend([
            Fr::ZERO,
            Fr::one(),
            Fr::one().neg(),
            Fr::from_u64(1 << 12),
            Fr::from_u64((1 << 12) - 1),
        ]);
        let g1 = g1_fixed_base(&ks, &Silent);
        let g2 = g2_fixed_base(&ks, &Silent);
        for (i, k) in ks.iter().enumerate() {
            assert!(
                G1Projective::from(g1[i]).eq_point(&G1Projective::generator().mul(k)),
                "G1 {i}"
            );
            assert!(
                G2Projective::from(g2[i]).eq_point(&G2Projective::generator().mul(k)),
                "G2 {i}"
            );
        }
    }
}
