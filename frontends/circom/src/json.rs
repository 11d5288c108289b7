//! snarkjs's Groth16 JSON: proofs (`pi_a`, `pi_b`, `pi_c`, `protocol`,
//! `curve`), public signals (an array of decimal strings) and verification
//! keys (`vk_alpha_1`, `vk_beta_2`, `vk_gamma_2`, `vk_delta_2`,
//! `vk_alphabeta_12`, `IC`, `nPublic`).
//!
//! Points are projective triples of decimal strings of canonical
//! coordinates: G1 `[x, y, z]`, G2 `[[x.c0, x.c1], [y.c0, y.c1], [z.c0,
//! z.c1]]`; written affine (z = 1), the identity as `[0, 1, 0]` as snarkjs
//! writes it. Readers take z = 1 or the identity, and check every point is
//! on the curve and in the subgroup.

use serde_json::{Value, json};

use crate::field::{fp_from_decimal, fp_to_decimal};
use zkpipe_core::groth16::{PreparedVerifyingKey, Proof, VerifyingKey};
use zkpipe_core::types::{Fp, Fp2};
use zkpipe_core::util::decimal::{fr_from_decimal, fr_to_decimal};
use zkpipe_core::{Curve, Error, Fr, G1Affine, G2Affine};

/// snarkjs's name of BLS12-381.
pub const CURVE: &str = "bls12381";

fn g1_json(p: &G1Affine) -> Value {
    if p.is_identity() {
        return json!(["0", "1", "0"]);
    }
    json!([fp_to_decimal(&p.x), fp_to_decimal(&p.y), "1"])
}

fn fp2_json(x: &Fp2) -> Value {
    json!([fp_to_decimal(&x.c[0]), fp_to_decimal(&x.c[1])])
}

fn g2_json(p: &G2Affine) -> Value {
    if p.is_identity() {
        return json!([["0", "0"], ["1", "0"], ["0", "0"]]);
    }
    json!([fp2_json(&p.x), fp2_json(&p.y), ["1", "0"]])
}

/// A proof as snarkjs's `proof.json`.
pub fn proof_to_json(p: &Proof) -> Value {
    json!({
        "pi_a": g1_json(&p.a),
        "pi_b": g2_json(&p.b),
        "pi_c": g1_json(&p.c),
        "protocol": "groth16",
        "curve": CURVE,
    })
}

/// Public signals as snarkjs's `public.json`.
pub fn public_to_json(inputs: &[Fr]) -> Value {
    Value::Array(
        inputs
            .iter()
            .map(|x| Value::String(fr_to_decimal(x)))
            .collect(),
    )
}

/// A verifying key as snarkjs's `verification_key.json`.
pub fn vk_to_json(vk: &VerifyingKey) -> Value {
    let ab = PreparedVerifyingKey::new(vk).alpha_beta().to_owned();
    let fp = |x: &blst::blst_fp| fp_to_decimal(&Fp::from_blst(*x));
    let alphabeta: Vec<Vec<[String; 2]>> = ab
        .fp6
        .iter()
        .map(|f6| {
            f6.fp2
                .iter()
                .map(|f2| [fp(&f2.fp[0]), fp(&f2.fp[1])])
                .collect()
        })
        .collect();
    json!({
        "protocol": "groth16",
        "curve": CURVE,
        "nPublic": vk.ic.len().saturating_sub(1),
        "vk_alpha_1": g1_json(&vk.alpha_g1),
        "vk_beta_2": g2_json(&vk.beta_g2),
        "vk_gamma_2": g2_json(&vk.gamma_g2),
        "vk_delta_2": g2_json(&vk.delta_g2),
        "vk_alphabeta_12": alphabeta,
        "IC": vk.ic.iter().map(g1_json).collect::<Vec<_>>(),
    })
}

pub(crate) fn bad(what: &str, msg: impl std::fmt::Display) -> Error {
    Error::InvalidEncoding(format!("{what}: {msg}"))
}

pub(crate) fn field<'a>(v: &'a Value, key: &str, what: &str) -> Result<&'a Value, Error> {
    v.get(key)
        .ok_or_else(|| bad(what, format_args!("no `{key}`")))
}

pub(crate) fn strings<'a>(v: &'a Value, n: usize, what: &str) -> Result<Vec<&'a Value>, Error> {
    match v.as_array() {
        Some(a) if a.len() == n => Ok(a.iter().collect()),
        _ => Err(bad(what, format_args!("expected an array of {n}"))),
    }
}

pub(crate) fn decimal<'a>(v: &'a Value, what: &str) -> Result<&'a str, Error> {
    v.as_str()
        .ok_or_else(|| bad(what, "expected a decimal string"))
}

fn fp_of(v: &Value, what: &str) -> Result<Fp, Error> {
    fp_from_decimal(decimal(v, what)?).map_err(|e| bad(what, e))
}

fn fp2_of(v: &Value, what: &str) -> Result<Fp2, Error> {
    let c = strings(v, 2, what)?;
    Ok(Fp2 {
        c: [fp_of(c[0], what)?, fp_of(c[1], what)?],
    })
}

/// `true` for z = 1, `false` for z = 0 (the identity); an error otherwise.
pub(crate) fn affine_z(z: [&str; 2], what: &str) -> Result<bool, Error> {
    match z {
        ["1", "0"] => Ok(true),
        ["0", "0"] => Ok(false),
        _ => Err(bad(what, "z must be 1 (affine) or 0 (the identity)")),
    }
}

fn checked<P>(
    p: P,
    identity: bool,
    on_curve: bool,
    in_group: bool,
    what: &str,
) -> Result<P, Error> {
    if !identity && !on_curve {
        return Err(Error::NotOnCurve(what.into()));
    }
    if !identity && !in_group {
        return Err(Error::NotInSubgroup(what.into()));
    }
    Ok(p)
}

/// A G1 point from its JSON triple.
///
/// # Errors
/// [`Error::InvalidEncoding`], [`Error::NotOnCurve`], [`Error::NotInSubgroup`].
pub fn g1_from_json(v: &Value, what: &str) -> Result<G1Affine, Error> {
    let c = strings(v, 3, what)?;
    if !affine_z([decimal(c[2], what)?, "0"], what)? {
        return Ok(G1Affine::identity());
    }
    let p = G1Affine {
        x: fp_of(c[0], what)?,
        y: fp_of(c[1], what)?,
    };
    checked(
        p,
        p.is_identity(),
        p.is_on_curve(),
        p.is_in_subgroup(),
        what,
    )
}

/// A G2 point from its JSON triple of pairs.
///
/// # Errors
/// As [`g1_from_json`].
pub fn g2_from_json(v: &Value, what: &str) -> Result<G2Affine, Error> {
    let c = strings(v, 3, what)?;
    let z = strings(c[2], 2, what)?;
    if !affine_z([decimal(z[0], what)?, decimal(z[1], what)?], what)? {
        return Ok(G2Affine::identity());
    }
    let p = G2Affine {
        x: fp2_of(c[0], what)?,
        y: fp2_of(c[1], what)?,
    };
    checked(
        p,
        p.is_identity(),
        p.is_on_curve(),
        p.is_in_subgroup(),
        what,
    )
}

/// The curve a proof or key says it is for (`"curve"`; BLS12-381 where
/// it says none, as zkpipe's files before a second curve), refusing
/// another protocol than Groth16.
///
/// # Errors
/// [`Error::InvalidInput`] for another protocol or an unknown curve.
pub fn curve_of(v: &Value, what: &str) -> Result<Curve, Error> {
    Ok(declared_curve(v, what)?.unwrap_or(Curve::Bls12_381))
}

/// The curve a proof or key names, if it names one (rapidsnark's proofs
/// do not), refusing another protocol than Groth16.
///
/// # Errors
/// [`Error::InvalidInput`] for another protocol or an unknown curve.
pub fn declared_curve(v: &Value, what: &str) -> Result<Option<Curve>, Error> {
    if let Some(p) = v.get("protocol").and_then(Value::as_str)
        && p != "groth16"
    {
        return Err(Error::InvalidInput(format!(
            "{what}: protocol `{p}`; zkpipe proves and verifies Groth16"
        )));
    }
    v.get("curve")
        .map(|c| {
            c.as_str().and_then(Curve::from_name).ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{what}: curve {c}; zkpipe knows `bls12381` and `bn128`"
                ))
            })
        })
        .transpose()
}

/// Refuses another protocol, or a curve other than BLS12-381.
fn check_names(v: &Value, what: &str) -> Result<(), Error> {
    Curve::Bls12_381.expect(curve_of(v, what)?, what)
}

/// A verification key's `IC` array: one point or more, as many as
/// `nPublic` + 1 where it says.
///
/// # Errors
/// [`Error::InvalidEncoding`] naming what is wrong.
pub(crate) fn ic_points<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], Error> {
    let ic = field(v, "IC", what)?
        .as_array()
        .ok_or_else(|| bad(what, "`IC` is not an array"))?;
    if ic.is_empty() {
        return Err(bad(
            what,
            "`IC` is empty: a verification key has a point for the constant one and one per public signal",
        ));
    }
    if let Some(n) = v.get("nPublic")
        && n.as_u64() != Some(ic.len() as u64 - 1)
    {
        return Err(bad(
            what,
            format_args!("nPublic is {n}, but there are {} IC points", ic.len()),
        ));
    }
    Ok(ic)
}

/// A proof from snarkjs's `proof.json`; `what` names it in messages.
///
/// # Errors
/// [`Error::InvalidEncoding`] or a point error naming the field;
/// [`Error::InvalidInput`] for another protocol or curve.
pub fn proof_from_json(v: &Value, what: &str) -> Result<Proof, Error> {
    check_names(v, what)?;
    let at = |k: &str| format!("{what}: {k}");
    Ok(Proof {
        a: g1_from_json(field(v, "pi_a", what)?, &at("pi_a"))?,
        b: g2_from_json(field(v, "pi_b", what)?, &at("pi_b"))?,
        c: g1_from_json(field(v, "pi_c", what)?, &at("pi_c"))?,
    })
}

/// Public signals from snarkjs's `public.json`.
///
/// # Errors
/// [`Error::InvalidEncoding`] for anything but an array of decimal strings below r.
pub fn public_from_json(v: &Value, what: &str) -> Result<Vec<Fr>, Error> {
    let a = v
        .as_array()
        .ok_or_else(|| bad(what, "expected an array of decimal strings"))?;
    a.iter()
        .enumerate()
        .map(|(i, x)| {
            let s = decimal(x, what)?;
            fr_from_decimal(s).map_err(|e| bad(what, format_args!("signal {i}: {e}")))
        })
        .collect()
}

/// The parts of a snarkjs verification key a check uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnarkjsVk {
    /// α in G1.
    pub alpha_g1: G1Affine,
    /// β in G2.
    pub beta_g2: G2Affine,
    /// γ in G2.
    pub gamma_g2: G2Affine,
    /// δ in G2.
    pub delta_g2: G2Affine,
    /// One point per public signal, and one for the constant.
    pub ic: Vec<G1Affine>,
}

impl SnarkjsVk {
    /// Ready for [`zkpipe_core::groth16::verify`].
    pub fn prepare(&self) -> PreparedVerifyingKey {
        PreparedVerifyingKey::from_parts(
            self.alpha_g1,
            self.beta_g2,
            self.gamma_g2,
            self.delta_g2,
            self.ic.clone(),
        )
    }
}

/// A verification key from snarkjs's `verification_key.json`.
///
/// # Errors
/// As [`proof_from_json`]; [`Error::InvalidEncoding`] when `nPublic`
/// disagrees with the IC points.
pub fn vk_from_json(v: &Value, what: &str) -> Result<SnarkjsVk, Error> {
    check_names(v, what)?;
    let at = |k: &str| format!("{what}: {k}");
    let ic = ic_points(v, what)?
        .iter()
        .enumerate()
        .map(|(i, p)| g1_from_json(p, &at(&format!("IC[{i}]"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SnarkjsVk {
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
    use zkpipe_core::{G1Projective, G2Projective};

    #[test]
    fn proof_round_trips_and_bad_points_are_refused() {
        let p = Proof {
            a: G1Projective::generator().mul(&Fr::from_u64(3)).to_affine(),
            b: G2Projective::generator().mul(&Fr::from_u64(5)).to_affine(),
            c: G1Affine::identity(),
        };
        let j = proof_to_json(&p);
        assert_eq!(proof_from_json(&j, "p").unwrap(), p);
        let mut bad = j.clone();
        bad["pi_a"][0] = json!("1");
        assert!(matches!(
            proof_from_json(&bad, "p"),
            Err(Error::NotOnCurve(_))
        ));
        let mut bad = j.clone();
        bad["curve"] = json!("bn128");
        let e = proof_from_json(&bad, "p").unwrap_err();
        assert_eq!(e.to_string(), "p is for BN254, not BLS12-381");
        let mut bad = j.clone();
        bad["curve"] = json!("secp256k1");
        let e = proof_from_json(&bad, "p").unwrap_err();
        assert!(
            e.to_string().contains("curve \"secp256k1\"; zkpipe knows"),
            "{e}"
        );
        let mut bad = j;
        bad["pi_b"][2] = json!(["2", "0"]);
        assert!(proof_from_json(&bad, "p").is_err());
    }

    #[test]
    fn a_verification_key_without_ic_points_is_named_as_such() {
        let g1 = G1Projective::generator().to_affine();
        let g2 = G2Projective::generator().to_affine();
        let vk = VerifyingKey {
            alpha_g1: g1,
            beta_g1: g1,
            beta_g2: g2,
            gamma_g2: g2,
            delta_g1: g1,
            delta_g2: g2,
            ic: vec![g1],
        };
        let mut j = vk_to_json(&vk);
        assert_eq!(vk_from_json(&j, "vk").unwrap().ic, vec![g1]);
        j["IC"] = json!([]);
        j.as_object_mut().unwrap().remove("nPublic");
        let e = vk_from_json(&j, "vk").unwrap_err();
        assert!(e.to_string().contains("`IC` is empty"), "{e}");
    }

    #[test]
    fn public_signals_must_be_field_elements() {
        let x = [Fr::from_u64(7), Fr::one().neg()];
        assert_eq!(public_from_json(&public_to_json(&x), "p").unwrap(), x);
        assert!(public_from_json(&json!(["-1"]), "p").is_err());
        assert!(public_from_json(&json!([1]), "p").is_err());
    }
}
