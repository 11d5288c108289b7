//! snarkjs's Groth16 `.zkey` on BLS12-381 into zkpipe's proving
//! [`Parameters`].
//!
//! Sections: 1 protocol (1 = Groth16); 2 header (Fq and Fr sizes and
//! primes, variables, public signals, domain size, α₁ β₁ β₂ γ₂ δ₁ δ₂);
//! 3 IC (public signals + 1); 4 the QAP coefficients of A and B (`u32`
//! matrix, constraint, signal, then the value times R², see
//! [`crate::field`]): per constraint its A terms then its B terms, then
//! `1·signalᵢ` in A at row `constraints + i` for the one and each public
//! signal (bellman's extra rows too); 5 A, 6 B in G1, 7 B in G2, one point
//! per variable (the identity for a variable not in that matrix); 8 the L
//! query, one per private variable; 9 H in snarkjs's odd-coset form
//! ([`HQuery::OddCoset`]); 10 the ceremony's contributions (not read).
//!
//! zkpipe's A and B queries hold only the variables in A or B (bellperson's
//! density), so the identities are dropped here after checking they are
//! identities; the rest is taken as it is.

use rayon::prelude::*;
use std::path::Path;

use crate::binfile::{BinFile, Reader};
use crate::field::{
    BLS12_381_P, BLS12_381_R, check_prime, fr_canonical, g1_montgomery, g2_montgomery,
    zkey_coefficient_scale,
};
use crate::r1cs::CircomR1cs;
use zkpipe_core::groth16::{HQuery, Parameters, VerifyingKey, domain_log_size};
use zkpipe_core::{Error, Fr, G1Affine, G2Affine};

/// The counts of a zkey's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZkeyHeader {
    /// Variables (wires), the one included.
    pub num_vars: usize,
    /// Public signals, the one excluded.
    pub num_public: usize,
    /// The evaluation domain's size.
    pub domain_size: usize,
}

/// Reads the verifying key of a zkey (every point checked, the subgroup too).
///
/// # Errors
/// [`Error::Io`], [`Error::InvalidEncoding`], [`Error::NotOnCurve`],
/// [`Error::NotInSubgroup`]; [`Error::InvalidInput`] for another curve or
/// protocol.
pub fn load_zkey_vk(path: &Path) -> Result<(ZkeyHeader, VerifyingKey), Error> {
    let f = BinFile::load(path, b"zkey", &[1])?;
    read_vk(&f)
}

/// Reads a zkey for `circuit` into proving parameters, checking that both
/// files describe the same circuit: counts, domain, every QAP coefficient,
/// and the queries' identities.
///
/// # Errors
/// As [`load_zkey_vk`]; [`Error::InvalidInput`] saying which file
/// disagrees with which.
pub fn load_zkey(path: &Path, circuit: &CircomR1cs, r1cs_name: &str) -> Result<Parameters, Error> {
    zkey_params(
        &BinFile::load(path, b"zkey", &[1])?,
        circuit,
        Some(r1cs_name),
    )
}

/// Reads a zkey without circom's r1cs: the circuit's A and B from its
/// coefficients (see [`crate::zkey_circuit`]), and the proving parameters.
///
/// # Errors
/// As [`load_zkey_vk`]; [`Error::InvalidInput`]/[`Error::InvalidEncoding`]
/// for coefficients out of range or without the public inputs' rows.
pub fn load_zkey_alone(path: &Path) -> Result<(CircomR1cs, Parameters), Error> {
    let f = BinFile::load(path, b"zkey", &[1])?;
    let (header, _) = read_vk(&f)?;
    let circuit = crate::zkey_circuit::circuit_of(&f, header)?;
    let params = zkey_params(&f, &circuit, None)?;
    Ok((circuit, params))
}

/// [`load_zkey`] over bytes in memory; `name` is used in messages.
///
/// # Errors
/// As [`load_zkey`].
pub fn zkey_from_bytes(
    name: &str,
    bytes: Vec<u8>,
    circuit: &CircomR1cs,
    r1cs_name: &str,
) -> Result<Parameters, Error> {
    zkey_params(
        &BinFile::parse(name.into(), bytes, b"zkey", &[1])?,
        circuit,
        Some(r1cs_name),
    )
}

/// Refuses a zkey of another protocol than Groth16.
pub(crate) fn check_protocol(f: &BinFile) -> Result<(), Error> {
    let mut s = f.section(1, "protocol")?;
    let protocol = s.u32("protocol")?;
    if protocol != 1 {
        let what = match protocol {
            2 => "PLONK",
            10 => "FFLONK",
            _ => "an unknown protocol",
        };
        return Err(Error::InvalidInput(format!(
            "{}: a zkey for {what} (protocol {protocol}); zkpipe proves Groth16 (`snarkjs groth16 setup`)",
            f.name
        )));
    }
    Ok(())
}

pub(crate) fn read_vk(f: &BinFile) -> Result<(ZkeyHeader, VerifyingKey), Error> {
    check_protocol(f)?;
    let mut h = f.section(2, "groth16 header")?;
    let n8q = h.u32("Fq size")? as usize;
    let q = h.take(n8q, "Fq prime")?;
    check_prime(&h, q, &BLS12_381_P, "curve's base field")?;
    let n8r = h.u32("Fr size")? as usize;
    let r = h.take(n8r, "Fr prime")?;
    check_prime(&h, r, &BLS12_381_R, "scalar field")?;
    let header = ZkeyHeader {
        num_vars: h.u32("variable count")? as usize,
        num_public: h.u32("public signal count")? as usize,
        domain_size: h.u32("domain size")? as usize,
    };
    let name = h.name().to_string();
    let g1 = |h: &mut Reader<'_>, what: &str| {
        g1_montgomery(h.take(96, what)?, true, &|| format!("{name}: {what}"))
    };
    let g2 = |h: &mut Reader<'_>, what: &str| {
        g2_montgomery(h.take(192, what)?, true, &|| format!("{name}: {what}"))
    };
    let alpha_g1 = g1(&mut h, "alpha_1")?;
    let beta_g1 = g1(&mut h, "beta_1")?;
    let beta_g2 = g2(&mut h, "beta_2")?;
    let gamma_g2 = g2(&mut h, "gamma_2")?;
    let delta_g1 = g1(&mut h, "delta_1")?;
    let delta_g2 = g2(&mut h, "delta_2")?;
    h.finish()?;
    if header.num_vars <= header.num_public {
        return Err(h.error(format_args!(
            "{} variables cannot hold the one and {} public signals",
            header.num_vars, header.num_public
        )));
    }
    let mut ic = f.section(3, "IC")?;
    let ic_points = g1s(&mut ic, header.num_public as u64 + 1, true, "IC")?;
    let vk = VerifyingKey {
        alpha_g1,
        beta_g1,
        beta_g2,
        gamma_g2,
        delta_g1,
        delta_g2,
        ic: ic_points,
    };
    vk.validate()
        .map_err(|e| Error::InvalidEncoding(format!("{}: {e}", f.name)))?;
    Ok((header, vk))
}

/// A whole section of `count` G1 points.
fn g1s(r: &mut Reader<'_>, count: u64, subgroup: bool, what: &str) -> Result<Vec<G1Affine>, Error> {
    let bytes = r.items(count, 96, what)?;
    r.finish()?;
    let name = r.name().to_string();
    bytes
        .par_chunks(96)
        .enumerate()
        .map(|(i, c)| g1_montgomery(c, subgroup, &|| format!("{name}: {what} point {i}")))
        .collect()
}

/// A whole section of `count` G2 points (on the curve; subgroup unchecked).
fn g2s(r: &mut Reader<'_>, count: u64, what: &str) -> Result<Vec<G2Affine>, Error> {
    let bytes = r.items(count, 192, what)?;
    r.finish()?;
    let name = r.name().to_string();
    bytes
        .par_chunks(192)
        .enumerate()
        .map(|(i, c)| g2_montgomery(c, false, &|| format!("{name}: {what} point {i}")))
        .collect()
}

/// `r1cs_name`: the r1cs `circuit` was read from, checked against the
/// zkey; `None` for a circuit read from this zkey itself.
fn zkey_params(
    f: &BinFile,
    circuit: &CircomR1cs,
    r1cs_name: Option<&str>,
) -> Result<Parameters, Error> {
    let (header, vk) = read_vk(f)?;
    let (from_r1cs, r1cs_name) = match r1cs_name {
        Some(name) => (true, name),
        None => (false, f.name.as_str()),
    };
    let r1cs = &circuit.r1cs;
    let n = 1usize << domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    let disagree = |what: &str, zkey: usize, theirs: usize| {
        Error::InvalidInput(format!(
            "{} and {r1cs_name} disagree: the zkey has {what} {zkey}, the r1cs {theirs} \
             (a key for another circuit?)",
            f.name
        ))
    };
    if header.num_vars != circuit.num_wires {
        return Err(disagree("variables", header.num_vars, circuit.num_wires));
    }
    if header.num_public != circuit.num_public() {
        return Err(disagree(
            "public signals",
            header.num_public,
            circuit.num_public(),
        ));
    }
    if header.domain_size != n {
        return Err(disagree("domain size", header.domain_size, n));
    }
    if from_r1cs {
        check_coefficients(f, circuit, r1cs_name)?;
    }

    let vars = header.num_vars as u64;
    let a_all = g1s(&mut f.section(5, "A")?, vars, false, "A")?;
    let b1_all = g1s(&mut f.section(6, "B1")?, vars, false, "B1")?;
    let b2_all = g2s(&mut f.section(7, "B2")?, vars, "B2")?;
    let l = g1s(
        &mut f.section(8, "C")?,
        vars - header.num_public as u64 - 1,
        false,
        "C",
    )?;
    let h = g1s(&mut f.section(9, "H")?, n as u64, false, "H")?;

    let d = r1cs.density();
    let in_a: Vec<bool> = std::iter::repeat_n(true, r1cs.num_inputs)
        .chain(d.a_aux.iter().copied())
        .collect();
    let in_b: Vec<bool> = d.b_input.iter().chain(&d.b_aux).copied().collect();
    let pick = |points: &[G1Affine], keep: &[bool], what: &str| {
        keep_where(points, keep, |p| p.is_identity(), what, f, r1cs_name)
    };
    let a = pick(&a_all, &in_a, "A")?;
    let b_g1 = pick(&b1_all, &in_b, "B1")?;
    let b_g2 = keep_where(&b2_all, &in_b, |p| p.is_identity(), "B2", f, r1cs_name)?;
    Ok(Parameters {
        vk,
        h,
        l,
        a,
        b_g1,
        b_g2,
        h_query: HQuery::OddCoset,
    })
}

/// The points where `keep` is set; the others must be identities.
fn keep_where<P: Copy>(
    points: &[P],
    keep: &[bool],
    is_identity: impl Fn(&P) -> bool,
    what: &str,
    f: &BinFile,
    r1cs_name: &str,
) -> Result<Vec<P>, Error> {
    if let Some(j) = (0..points.len()).find(|&j| !keep[j] && !is_identity(&points[j])) {
        return Err(Error::InvalidInput(format!(
            "{} and {r1cs_name} disagree: the zkey's {what} query has a point for variable {j}, \
             which the r1cs never uses there",
            f.name
        )));
    }
    Ok(points
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(p, _)| *p)
        .collect())
}

/// Checks section 4 term by term against the r1cs's A and B and the extra
/// input rows.
fn check_coefficients(f: &BinFile, circuit: &CircomR1cs, r1cs_name: &str) -> Result<(), Error> {
    let r1cs = &circuit.r1cs;
    let mut s = f.section(4, "coefficients")?;
    let count = s.u32("coefficient count")? as usize;
    let terms = s.items(count as u64, 12 + 32, "coefficients")?;
    s.finish()?;
    let want = r1cs.a.nnz() + r1cs.b.nnz() + r1cs.num_inputs;
    let disagree = |msg: String| {
        Error::InvalidInput(format!(
            "{} and {r1cs_name} disagree: {msg} (a key for another circuit?)",
            f.name
        ))
    };
    if count != want {
        return Err(disagree(format!(
            "the zkey has {count} QAP coefficients, the r1cs's A and B (with one per public input) make {want}"
        )));
    }
    let scale: Fr = zkey_coefficient_scale();
    for (i, (tag, row, col, val)) in zkpipe_core::r1cs::qap_coefficients(r1cs).enumerate() {
        let t = &terms[i * 44..(i + 1) * 44];
        let word = |k: usize| u32::from_le_bytes(t[4 * k..4 * k + 4].try_into().unwrap());
        let got = fr_canonical(&t[12..], || format!("{}: coefficient {i}", s.name()))?;
        if (word(0), word(1), word(2)) != (tag, row, col) || got.mul(&scale) != val {
            return Err(disagree(format!(
                "QAP coefficient {i} is ({}, constraint {}, signal {}), the r1cs has ({}, constraint {row}, signal {col}) or another value",
                ["A", "B"].get(word(0) as usize).unwrap_or(&"?"),
                word(1),
                word(2),
                ["A", "B"][tag as usize],
            )));
        }
    }
    Ok(())
}
