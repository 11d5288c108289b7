//! Groth16 verification through blst's pairing:
//! `e(A, B) = e(α, β) · e(Σ xᵢ·ICᵢ, γ) · e(C, δ)`.

use blst::*;

use super::keys::VerifyingKey;
use super::proof::Proof;
use crate::Error;
use crate::types::{Fr, G1Affine, G1Projective, G2Affine};

/// A verifying key with `e(α, β)` precomputed and γ, δ negated, so a check
/// is three Miller loops and one final exponentiation.
#[derive(Clone, Debug)]
pub struct PreparedVerifyingKey {
    alpha_beta: blst_fp12,
    neg_gamma_g2: G2Affine,
    neg_delta_g2: G2Affine,
    ic: Vec<G1Affine>,
    /// Why [`VerifyingKey::validate`] refused the key, if it did: [`verify`]
    /// then refuses every proof (a key built in memory skips the parser's check).
    defect: Option<String>,
}

fn miller(p: &G1Affine, q: &G2Affine) -> blst_fp12 {
    if p.is_identity() || q.is_identity() {
        // SAFETY: blst returns a pointer to a static constant.
        return unsafe { *blst_fp12_one() };
    }
    let mut out = blst_fp12::default();
    // SAFETY: valid affine points, both non-identity.
    unsafe { blst_miller_loop(&mut out, q.as_blst(), p.as_blst()) };
    out
}

fn mul(a: &blst_fp12, b: &blst_fp12) -> blst_fp12 {
    let mut out = blst_fp12::default();
    // SAFETY: valid field elements.
    unsafe { blst_fp12_mul(&mut out, a, b) };
    out
}

fn final_exp(f: &blst_fp12) -> blst_fp12 {
    let mut out = blst_fp12::default();
    // SAFETY: valid field element.
    unsafe { blst_final_exp(&mut out, f) };
    out
}

impl PreparedVerifyingKey {
    /// Precomputes what every verification of this key shares. A key that
    /// [`VerifyingKey::validate`] refuses (no IC points, γ or δ at infinity)
    /// is kept, and [`verify`] refuses it with the reason.
    pub fn new(vk: &VerifyingKey) -> Self {
        PreparedVerifyingKey {
            alpha_beta: final_exp(&miller(&vk.alpha_g1, &vk.beta_g2)),
            neg_gamma_g2: vk.gamma_g2.neg(),
            neg_delta_g2: vk.delta_g2.neg(),
            ic: vk.ic.clone(),
            defect: vk.defect(),
        }
    }

    /// From the parts a check uses: what a snarkjs verification key holds
    /// (it has no β₁ or δ₁). No IC points, or γ or δ at infinity, are
    /// refused by [`verify`] as for [`PreparedVerifyingKey::new`].
    pub fn from_parts(
        alpha_g1: G1Affine,
        beta_g2: G2Affine,
        gamma_g2: G2Affine,
        delta_g2: G2Affine,
        ic: Vec<G1Affine>,
    ) -> Self {
        let defect = if ic.is_empty() {
            Some("the key has no IC points (one at least, for the constant input)".to_string())
        } else if gamma_g2.is_identity() || delta_g2.is_identity() {
            Some("γ or δ in G2 is the point at infinity: a degenerate key, refused".to_string())
        } else {
            None
        };
        PreparedVerifyingKey {
            alpha_beta: final_exp(&miller(&alpha_g1, &beta_g2)),
            neg_gamma_g2: gamma_g2.neg(),
            neg_delta_g2: delta_g2.neg(),
            ic,
            defect,
        }
    }

    /// `e(α, β)` after the final exponentiation (snarkjs's `vk_alphabeta_12`).
    pub fn alpha_beta(&self) -> &blst_fp12 {
        &self.alpha_beta
    }

    /// Number of public inputs a proof for this key takes.
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }
}

/// Checks `proof` against `public_inputs` (without the leading one).
///
/// # Errors
/// [`Error::InvalidInput`] when the key is one [`VerifyingKey::validate`]
/// refuses, or when the number of public inputs does not match the key.
pub fn verify(
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    public_inputs: &[Fr],
) -> Result<bool, Error> {
    if let Some(defect) = &pvk.defect {
        return Err(Error::InvalidInput(format!(
            "unusable verifying key: {defect}"
        )));
    }
    if public_inputs.len() != pvk.num_public_inputs() {
        return Err(Error::InvalidInput(format!(
            "the key takes {} public inputs ({} IC points), {} were given",
            pvk.num_public_inputs(),
            pvk.ic.len(),
            public_inputs.len()
        )));
    }
    let mut acc = G1Projective::from(pvk.ic[0]);
    for (x, p) in public_inputs.iter().zip(&pvk.ic[1..]) {
        acc = acc.add(&G1Projective::from(*p).mul(x));
    }
    let f = mul(
        &mul(
            &miller(&proof.a, &proof.b),
            &miller(&acc.to_affine(), &pvk.neg_gamma_g2),
        ),
        &miller(&proof.c, &pvk.neg_delta_g2),
    );
    let lhs = final_exp(&f);
    // SAFETY: valid field elements.
    Ok(unsafe { blst_fp12_is_equal(&lhs, &pvk.alpha_beta) })
}
