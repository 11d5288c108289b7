//! Insecure BN254 test keys from a seed, in snarkjs's layout (the H query
//! on the odd coset of the 2n-th roots), so that zkpipe, snarkjs and
//! rapidsnark prove with the same zkey without a powers-of-tau ceremony.
//! As for BLS12-381's [`setup`](crate::groth16::setup): whoever knows the
//! seed can forge proofs. For tests and benchmarks only.

use halo2curves::bn256;
use halo2curves::group::Curve as _;
use rayon::prelude::*;

use super::groth16::{KeyPoints, VerifyingKey};
use super::{Fr, G1Affine, G2Affine};
use crate::groth16::HQuery;
use crate::groth16::setup::{G2_WEIGHT, Group, KeyScalars, fixed_base, key_scalars};
use crate::r1cs::R1cs;
use crate::util::progress::Progress;

macro_rules! h2c_group {
    ($proj:ty, $aff:ty) => {
        impl Group for $proj {
            type Affine = $aff;
            fn identity() -> Self {
                <$proj as halo2curves::group::Group>::identity()
            }
            fn add(&self, rhs: &Self) -> Self {
                self + rhs
            }
            fn add_affine(&self, rhs: &$aff) -> Self {
                self + rhs
            }
            fn double(&self) -> Self {
                halo2curves::group::Group::double(self)
            }
            fn batch_to_affine(points: &[Self]) -> Vec<$aff> {
                let mut out = vec![<$aff>::default(); points.len()];
                <$proj>::batch_normalize(points, &mut out);
                out
            }
        }
    };
}
h2c_group!(bn256::G1, bn256::G1Affine);
h2c_group!(bn256::G2, bn256::G2Affine);

fn g1s(scalars: &[Fr], progress: &dyn Progress) -> Vec<G1Affine> {
    fixed_base(bn256::G1::generator(), scalars, 1, progress)
        .into_par_iter()
        .map(G1Affine::from_h2c)
        .collect()
}

fn g2s(scalars: &[Fr], progress: &dyn Progress) -> Vec<G2Affine> {
    fixed_base(bn256::G2::generator(), scalars, G2_WEIGHT, progress)
        .into_par_iter()
        .map(G2Affine::from_h2c)
        .collect()
}

/// A proving key for `r1cs` with toxic waste drawn from `seed`
/// (**insecure**). `r1cs.num_inputs` counts the constant one and the
/// public signals; the domain holds the constraints and one row per input.
pub fn setup(r1cs: &R1cs<Fr>, seed: u64, progress: &dyn Progress) -> KeyPoints {
    let KeyScalars {
        alpha,
        beta,
        gamma,
        delta,
        u,
        v,
        ic,
        private: c,
        h,
    } = key_scalars(r1cs, seed, HQuery::OddCoset, Fr::root_of_unity);
    let vars = r1cs.num_inputs + r1cs.num_aux;

    let (g1, g2) = (G1Affine::generator(), G2Affine::generator());
    progress.begin(
        "setup (insecure test keys)",
        (ic.len() + c.len() + h.len() + 2 * vars) as u64 + G2_WEIGHT * vars as u64,
    );
    let key = KeyPoints {
        vk: VerifyingKey {
            alpha_g1: g1.mul(&alpha).to_affine(),
            beta_g2: g2.mul(&beta).to_affine(),
            gamma_g2: g2.mul(&gamma).to_affine(),
            delta_g2: g2.mul(&delta).to_affine(),
            ic: g1s(&ic, progress),
        },
        beta_g1: g1.mul(&beta).to_affine(),
        delta_g1: g1.mul(&delta).to_affine(),
        a: g1s(&u, progress),
        b_g1: g1s(&v, progress),
        b_g2: g2s(&v, progress),
        c: g1s(&c, progress),
        h: g1s(&h, progress),
    };
    progress.end();
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::progress::Silent;

    #[test]
    fn fixed_base_multiples_equal_plain_multiplication() {
        let mut ks = super::super::sample::scalars(20, 4);
        ks.extend([Fr::ZERO, Fr::one(), Fr::one().neg(), Fr::from_u64(4095)]);
        let (p1, p2) = (g1s(&ks, &Silent), g2s(&ks, &Silent));
        for (i, k) in ks.iter().enumerate() {
            assert_eq!(p1[i], G1Affine::generator().mul(k).to_affine(), "G1 {i}");
            assert_eq!(p2[i], G2Affine::generator().mul(k).to_affine(), "G2 {i}");
        }
        assert!(p1[20].is_identity() && p2[20].is_identity());
    }
}
