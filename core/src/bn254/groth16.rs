//! Groth16 verification over BN254: the check snarkjs, rapidsnark and
//! Ethereum's precompiles make, `e(A, B) = e(α, β)·e(Σ xᵢ·ICᵢ, γ)·e(C, δ)`,
//! as one multi-Miller loop and one final exponentiation.

use halo2curves::bn256;
use halo2curves::group::Group as _;
use halo2curves::pairing::MillerLoopResult as _;

use super::{Fp, Fp2, Fr, G1Affine, G1Projective, G2Affine};
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

/// A BN254 proving key's points as a snarkjs zkey holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPoints {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// β in G1.
    pub beta_g1: G1Affine,
    /// δ in G1.
    pub delta_g1: G1Affine,
    /// `[u_j(τ)]₁` for every variable (the identity where `u_j = 0`).
    pub a: Vec<G1Affine>,
    /// `[v_j(τ)]₁` for every variable.
    pub b_g1: Vec<G1Affine>,
    /// `[v_j(τ)]₂` for every variable.
    pub b_g2: Vec<G2Affine>,
    /// `[(β·u_j + α·v_j + w_j)/δ]₁` for each private variable.
    pub c: Vec<G1Affine>,
    /// `[L_{2i+1}(τ)/δ]₁` over the 2n-th roots of unity: n points.
    pub h: Vec<G1Affine>,
}

/// Bytes of an encoded proof ([`Proof::to_bytes`]).
pub const PROOF_BYTES: usize = 256;

fn fp_be(x: &Fp) -> [u8; 32] {
    let mut b = x.to_bytes_le();
    b.reverse();
    b
}

fn fp_from_be(b: &[u8]) -> Result<Fp, Error> {
    let mut le: [u8; 32] = b.try_into().expect("32 bytes");
    le.reverse();
    Fp::from_bytes_le(&le)
}

impl Proof {
    /// Ethereum's encoding (the pairing precompile's order): A.x, A.y,
    /// B.x (imaginary part first), B.y (the same), C.x, C.y, each 32 bytes
    /// big-endian; the identity is all zeros.
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let words = [
            fp_be(&self.a.x),
            fp_be(&self.a.y),
            fp_be(&self.b.x.c[1]),
            fp_be(&self.b.x.c[0]),
            fp_be(&self.b.y.c[1]),
            fp_be(&self.b.y.c[0]),
            fp_be(&self.c.x),
            fp_be(&self.c.y),
        ];
        let mut out = [0u8; PROOF_BYTES];
        for (chunk, w) in out.chunks_exact_mut(32).zip(words) {
            chunk.copy_from_slice(&w);
        }
        out
    }

    /// The proof [`Proof::to_bytes`] wrote, its points checked: on the
    /// curve and, for B, in the prime-order subgroup.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for another length, a coordinate not
    /// below q or a point off its group.
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, Error> {
        if bytes.len() != PROOF_BYTES {
            return Err(Error::InvalidEncoding(format!(
                "a BN254 proof is {PROOF_BYTES} bytes, not {}",
                bytes.len()
            )));
        }
        let w = bytes
            .chunks_exact(32)
            .map(fp_from_be)
            .collect::<Result<Vec<_>, _>>()?;
        let proof = Proof {
            a: G1Affine { x: w[0], y: w[1] },
            b: G2Affine {
                x: Fp2 { c: [w[3], w[2]] },
                y: Fp2 { c: [w[5], w[4]] },
            },
            c: G1Affine { x: w[6], y: w[7] },
        };
        if !(proof.a.is_valid() && proof.b.is_valid() && proof.c.is_valid()) {
            return Err(Error::InvalidEncoding(
                "a BN254 proof's point is not on its curve or not in its group".into(),
            ));
        }
        Ok(proof)
    }
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

    #[test]
    fn proof_bytes_read_back_and_bad_bytes_are_refused() {
        let (_, proof) = made_up(&sample::scalars(2, 11));
        let bytes = proof.to_bytes();
        assert_eq!(Proof::from_bytes(&bytes).unwrap(), proof);
        // B.x's imaginary part leads, as Ethereum's precompile takes it.
        let mut le = proof.b.x.c[1].to_bytes_le();
        le.reverse();
        assert_eq!(bytes[64..96], le);
        assert!(Proof::from_bytes(&bytes[..255]).is_err());
        let mut off = bytes;
        off[31] ^= 1; // A.x's low bit: off the curve
        assert!(Proof::from_bytes(&off).is_err());
        let mut big = bytes;
        big[..32].fill(0xff); // A.x ≥ q
        assert!(Proof::from_bytes(&big).is_err());
    }
}
