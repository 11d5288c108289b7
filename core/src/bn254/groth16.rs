//! Groth16 verification over BN254: the check snarkjs, rapidsnark and
//! Ethereum's precompiles make, `e(A, B) = e(α, β)·e(Σ xᵢ·ICᵢ, γ)·e(C, δ)`,
//! as one multi-Miller loop and one final exponentiation.

use halo2curves::bn256;
use halo2curves::group::Group as _;
use halo2curves::pairing::MillerLoopResult as _;

use super::{Fr, G1Affine, G1Projective, G2Affine};
use crate::Error;

/// A proof: A and C in G1, B in G2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// A.
    pub a: G1Affine,
    /// B.
    pub b: G2Affine,
    /// C.
    pub c: G1Affine,
}

/// What a verifier needs of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α in G1.
    pub alpha_g1: G1Affine,
    /// β in G2.
    pub beta_g2: G2Affine,
    /// γ in G2.
    pub gamma_g2: G2Affine,
    /// δ in G2.
    pub delta_g2: G2Affine,
    /// One point for the constant one, then one per public input.
    pub ic: Vec<G1Affine>,
}

impl VerifyingKey {
    /// Why the key cannot verify anything, if it cannot: no IC point, or γ
    /// or δ the identity (every proof would pass or none).
    pub fn defect(&self) -> Option<&'static str> {
        if self.ic.is_empty() {
            Some("the key has no IC points (one at least, for the constant input)")
        } else if self.gamma_g2.is_identity() || self.delta_g2.is_identity() {
            Some("γ or δ in G2 is the point at infinity: a degenerate key, refused")
        } else {
            None
        }
    }
}

/// Whether `proof` proves `public` under `vk`. Points must already be
/// valid (on the curve, in the subgroup): the decoders check that.
///
/// # Errors
/// [`Error::InvalidInput`] for a degenerate key or a count of public
/// inputs the key does not take. A proof that does not verify is `Ok(false)`.
pub fn verify(vk: &VerifyingKey, proof: &Proof, public: &[Fr]) -> Result<bool, Error> {
    if let Some(defect) = vk.defect() {
        return Err(Error::InvalidInput(format!(
            "unusable verifying key: {defect}"
        )));
    }
    if public.len() + 1 != vk.ic.len() {
        return Err(Error::InvalidInput(format!(
            "the key takes {} public inputs ({} IC points), {} were given",
            vk.ic.len() - 1,
            vk.ic.len(),
            public.len()
        )));
    }
    let acc = vk.ic[1..]
        .iter()
        .zip(public)
        .fold(vk.ic[0].h2c().into(), |acc: bn256::G1, (p, x)| {
            acc + p.h2c() * x.h2c()
        });
    let acc = G1Projective::from_h2c(acc).to_affine();
    let neg = |p: &G1Affine| G1Affine::from_h2c(-p.h2c());
    let terms = [
        (proof.a, proof.b),
        (neg(&vk.alpha_g1), vk.beta_g2),
        (neg(&acc), vk.gamma_g2),
        (neg(&proof.c), vk.delta_g2),
    ]
    .map(|(p, q)| (p.h2c(), q.h2c()));
    let refs: Vec<(&bn256::G1Affine, &bn256::G2Affine)> =
        terms.iter().map(|(p, q)| (p, q)).collect();
    let gt = bn256::multi_miller_loop(&refs).final_exponentiation();
    Ok(bool::from(gt.is_identity()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bn254::sample;

    /// A key and a proof made from known exponents (no circuit): with
    /// A = a·G, B = b·H, C = c·G, α = α·G, … the check holds when
    /// a·b = α·β + (Σ xᵢ·icᵢ)·γ + c·δ.
    fn made_up(public: &[Fr]) -> (VerifyingKey, Proof) {
        let s = sample::scalars(5 + public.len() + 1, 9);
        let (alpha, beta, gamma, delta, a) = (s[0], s[1], s[2], s[3], s[4]);
        let ic = &s[5..];
        let g = G1Affine::generator().h2c();
        let h = G2Affine::generator().h2c();
        let g1 = |x: Fr| G1Projective::from_h2c(g * x.h2c()).to_affine();
        let g2 = |x: Fr| super::super::G2Projective::from_h2c(h * x.h2c()).to_affine();
        let acc = ic[1..]
            .iter()
            .zip(public)
            .fold(ic[0].h2c(), |acc, (p, x)| acc + p.h2c() * x.h2c());
        // c = (a·b − α·β − acc·γ) / δ, with b = 1.
        let rest = a.h2c() - alpha.h2c() * beta.h2c() - acc * gamma.h2c();
        let c = rest * halo2curves::ff::Field::invert(&delta.h2c()).unwrap();
        let vk = VerifyingKey {
            alpha_g1: g1(alpha),
            beta_g2: g2(beta),
            gamma_g2: g2(gamma),
            delta_g2: g2(delta),
            ic: ic.iter().map(|x| g1(*x)).collect(),
        };
        let proof = Proof {
            a: g1(a),
            b: g2(Fr::one()),
            c: g1(Fr::from_h2c(c)),
        };
        (vk, proof)
    }

    #[test]
    fn a_consistent_proof_verifies_and_any_change_fails() {
        let public = sample::scalars(3, 10);
        let (vk, proof) = made_up(&public);
        assert!(verify(&vk, &proof, &public).unwrap());
        let mut other = public.clone();
        other[1] = other[1].mul(&Fr::from_u64(2));
        assert!(!verify(&vk, &proof, &other).unwrap());
        let swapped = Proof {
            a: proof.c,
            c: proof.a,
            ..proof
        };
        assert!(!verify(&vk, &swapped, &public).unwrap());
        let e = verify(&vk, &proof, &public[..2]).unwrap_err().to_string();
        assert!(e.contains("takes 3 public inputs"), "{e}");
        let degenerate = VerifyingKey {
            delta_g2: G2Affine::default(),
            ..vk
        };
        let e = verify(&degenerate, &proof, &public)
            .unwrap_err()
            .to_string();
        assert!(e.contains("degenerate"), "{e}");
    }
}
