//! snarkjs's Groth16 JSON over BN254 (`"curve": "bn128"`): the same
//! layout as [`json`](crate::json) reads for BLS12-381, with BN254's
//! 254-bit coordinates. Every point is checked on the curve and in the
//! subgroup.

use serde_json::Value;
use zkpipe_core::bn254::groth16::{Proof, VerifyingKey};
use zkpipe_core::bn254::{Fp, Fp2, Fr, G1Affine, G2Affine};
use zkpipe_core::util::decimal::decimal_to_limbs;
use zkpipe_core::{Curve, Error};

use crate::json::{affine_z, bad, decimal, field, strings};
use serde_json::json;

fn g1_json(p: &G1Affine) -> Value {
    if p.is_identity() {
        return json!(["0", "1", "0"]);
    }
    json!([p.x.to_decimal(), p.y.to_decimal(), "1"])
}

fn g2_json(p: &G2Affine) -> Value {
    if p.is_identity() {
        return json!([["0", "0"], ["1", "0"], ["0", "0"]]);
    }
    let pair = |c: &Fp2| json!([c.c[0].to_decimal(), c.c[1].to_decimal()]);
    json!([pair(&p.x), pair(&p.y), ["1", "0"]])
}

/// A BN254 proof as snarkjs's `proof.json`.
pub fn proof_to_json(p: &Proof) -> Value {
    json!({
        "pi_a": g1_json(&p.a),
        "pi_b": g2_json(&p.b),
        "pi_c": g1_json(&p.c),
        "protocol": "groth16",
        "curve": Curve::Bn254.snarkjs_name(),
    })
}

/// BN254 public signals as snarkjs's `public.json`.
pub fn public_to_json(public: &[Fr]) -> Value {
    Value::Array(
        public
            .iter()
            .map(|x| Value::String(x.to_decimal()))
            .collect(),
    )
}

/// A BN254 verifying key as snarkjs's `verification_key.json`, without
/// `vk_alphabeta_12` (e(α, β), which verifiers, snarkjs's included,
/// recompute from α and β).
pub fn vk_to_json(vk: &VerifyingKey, num_public: usize) -> Value {
    json!({
        "protocol": "groth16",
        "curve": Curve::Bn254.snarkjs_name(),
        "nPublic": num_public,
        "vk_alpha_1": g1_json(&vk.alpha_g1),
        "vk_beta_2": g2_json(&vk.beta_g2),
        "vk_gamma_2": g2_json(&vk.gamma_g2),
        "vk_delta_2": g2_json(&vk.delta_g2),
        "IC": vk.ic.iter().map(g1_json).collect::<Vec<_>>(),
    })
}

fn bytes_of(s: &str) -> Option<[u8; 32]> {
    let limbs = decimal_to_limbs::<4>(s)?;
    let mut out = [0u8; 32];
    for (chunk, l) in out.chunks_exact_mut(8).zip(limbs) {
        chunk.copy_from_slice(&l.to_le_bytes());
    }
    Some(out)
}

fn fp_of(v: &Value, what: &str) -> Result<Fp, Error> {
    let s = decimal(v, what)?;
    bytes_of(s)
        .and_then(|b| Fp::from_bytes_le(&b).ok())
        .ok_or_else(|| {
            bad(
                what,
                format_args!("`{s}` is not a decimal element of BN254's Fp"),
            )
        })
}

fn fp2_of(v: &Value, what: &str) -> Result<Fp2, Error> {
    let c = strings(v, 2, what)?;
    Ok(Fp2 {
        c: [fp_of(c[0], what)?, fp_of(c[1], what)?],
    })
}

fn checked<P>(p: P, on_curve: bool, in_group: bool, what: &str) -> Result<P, Error> {
    if !on_curve {
        return Err(Error::NotOnCurve(what.into()));
    }
    if !in_group {
        return Err(Error::NotInSubgroup(what.into()));
    }
    Ok(p)
}

/// A BN254 G1 point from its JSON triple.
///
/// # Errors
/// [`Error::InvalidEncoding`], [`Error::NotOnCurve`], [`Error::NotInSubgroup`].
pub fn g1_from_json(v: &Value, what: &str) -> Result<G1Affine, Error> {
    zkpipe_core::bn254::cpu::check()?;
    let c = strings(v, 3, what)?;
    if !affine_z([decimal(c[2], what)?, "0"], what)? {
        return Ok(G1Affine::default());
    }
    let p = G1Affine {
        x: fp_of(c[0], what)?,
        y: fp_of(c[1], what)?,
    };
    checked(p, p.is_on_curve(), p.is_in_subgroup(), what)
}

/// A BN254 G2 point from its JSON triple of pairs.
///
/// # Errors
/// As [`g1_from_json`].
pub fn g2_from_json(v: &Value, what: &str) -> Result<G2Affine, Error> {
    zkpipe_core::bn254::cpu::check()?;
    let c = strings(v, 3, what)?;
    let z = strings(c[2], 2, what)?;
    if !affine_z([decimal(z[0], what)?, decimal(z[1], what)?], what)? {
        return Ok(G2Affine::default());
    }
    let p = G2Affine {
        x: fp2_of(c[0], what)?,
        y: fp2_of(c[1], what)?,
    };
    checked(p, p.is_on_curve(), p.is_in_subgroup(), what)
}

/// A BN254 proof from snarkjs's `proof.json`.
///
/// # Errors
/// As [`g1_from_json`], naming the field.
pub fn proof_from_json(v: &Value, what: &str) -> Result<Proof, Error> {
    let at = |k: &str| format!("{what}: {k}");
    Ok(Proof {
        a: g1_from_json(field(v, "pi_a", what)?, &at("pi_a"))?,
        b: g2_from_json(field(v, "pi_b", what)?, &at("pi_b"))?,
        c: g1_from_json(field(v, "pi_c", what)?, &at("pi_c"))?,
    })
}

/// Public signals from snarkjs's `public.json`, as BN254 scalars.
///
/// # Errors
/// [`Error::InvalidEncoding`] for anything but an array of decimal strings below r.
pub fn public_from_json(v: &Value, what: &str) -> Result<Vec<Fr>, Error> {
    zkpipe_core::bn254::cpu::check()?;
    let a = v
        .as_array()
        .ok_or_else(|| bad(what, "expected an array of decimal strings"))?;
    a.iter()
        .enumerate()
        .map(|(i, x)| {
            let s = decimal(x, what)?;
            bytes_of(s)
                .and_then(|b| Fr::from_bytes_le(&b).ok())
                .ok_or_else(|| {
                    bad(
                        what,
                        format_args!("signal {i}: `{s}` is not below BN254's r"),
                    )
                })
        })
        .collect()
}

/// A BN254 verification key from snarkjs's `verification_key.json`.
///
/// # Errors
/// As [`proof_from_json`]; [`Error::InvalidEncoding`] for no IC point or
/// an `nPublic` that disagrees with them.
pub fn vk_from_json(v: &Value, what: &str) -> Result<VerifyingKey, Error> {
    let at = |k: &str| format!("{what}: {k}");
    let ic = crate::json::ic_points(v, what)?
        .iter()
        .enumerate()
        .map(|(i, p)| g1_from_json(p, &at(&format!("IC[{i}]"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(VerifyingKey {
        alpha_g1: g1_from_json(field(v, "vk_alpha_1", what)?, &at("vk_alpha_1"))?,
        beta_g2: g2_from_json(field(v, "vk_beta_2", what)?, &at("vk_beta_2"))?,
        gamma_g2: g2_from_json(field(v, "vk_gamma_2", what)?, &at("vk_gamma_2"))?,
        delta_g2: g2_from_json(field(v, "vk_delta_2", what)?, &at("vk_delta_2"))?,
        ic,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn generator_json() -> Value {
        let g = G1Affine::generator();
        let dec = |x: &Fp| {
            let b = x.to_bytes_le();
            let limbs: Vec<u64> = b
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            zkpipe_core::util::decimal::limbs_to_decimal(&limbs)
        };
        json!([dec(&g.x), dec(&g.y), "1"])
    }

    #[test]
    fn points_are_read_and_bad_ones_refused() {
        assert_eq!(json!(["1", "2", "1"]), generator_json());
        assert_eq!(
            g1_from_json(&generator_json(), "g").unwrap(),
            G1Affine::generator()
        );
        assert_eq!(
            g1_from_json(&json!(["0", "1", "0"]), "g").unwrap(),
            G1Affine::default()
        );
        assert!(matches!(
            g1_from_json(&json!(["1", "3", "1"]), "g"),
            Err(Error::NotOnCurve(_))
        ));
        // q itself is not an element.
        let q = "21888242871839275222246405745257275088696311157297823662689037894645226208583";
        let e = g1_from_json(&json!([q, "2", "1"]), "g")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a decimal element of BN254's Fp"), "{e}");
        assert!(g1_from_json(&json!(["1", "2", "2"]), "g").is_err());
        assert!(g2_from_json(&json!([["1", "0"], ["1", "0"], ["1", "0"]]), "h").is_err());
    }

    #[test]
    fn public_signals_must_be_below_r() {
        let r = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
        let r_minus_1 =
            "21888242871839275222246405745257275088548364400416034343698204186575808495616";
        assert_eq!(
            public_from_json(&json!([r_minus_1]), "p").unwrap(),
            [Fr::one().neg()]
        );
        assert!(public_from_json(&json!([r]), "p").is_err());
        assert!(public_from_json(&json!([5]), "p").is_err());
    }
}
