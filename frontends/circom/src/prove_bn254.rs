//! A BN254 snarkjs zkey read into the core's
//! [`zkpipe_core::bn254::prover::ProvingKey`], its `.wtns`, and
//! the check of a key against its circuit's r1cs. The prover itself is the
//! core's [`bn254::prover`](zkpipe_core::bn254::prover).

use rayon::prelude::*;
use std::path::Path;
use zkpipe_core::Error;
use zkpipe_core::bn254::groth16::KeyPoints;
use zkpipe_core::bn254::prover::{Coefficient, ProvingKey};
use zkpipe_core::bn254::{Fr, G1Affine};

use crate::binfile::{BinFile, Reader};
use crate::field::zkey_coefficient_scale;
use crate::r1cs::CircomR1cs;
use crate::zkey::ZkeyHeader;
use crate::zkey_bn254::{g1_of, g2_of, zkey_parts};
use zkpipe_core::groth16::domain_log_size;
use zkpipe_core::r1cs::qap_coefficients;

fn g1s(f: &BinFile, section: u32, what: &str, count: usize) -> Result<Vec<G1Affine>, Error> {
    let mut s = f.section(section, what)?;
    let bytes = s.items(count as u64, 64, what)?;
    s.finish()?;
    let name = s.name().to_string();
    bytes
        .par_chunks_exact(64)
        .enumerate()
        .map(|(i, b)| g1_of(b, || format!("{name}: point {i}")))
        .collect()
}

fn coefficients(f: &BinFile, header: ZkeyHeader) -> Result<Vec<Coefficient>, Error> {
    let mut s: Reader<'_> = f.section(4, "coefficients")?;
    let count = s.u32("coefficient count")? as u64;
    let bytes = s.items(count, 44, "coefficients")?;
    s.finish()?;
    let scale: Fr = zkey_coefficient_scale();
    bytes
        .par_chunks_exact(44)
        .enumerate()
        .map(|(i, t)| {
            let word = |k: usize| u32::from_le_bytes(t[4 * k..4 * k + 4].try_into().unwrap());
            let (matrix, row, col) = (word(0), word(1), word(2));
            if matrix > 1 || row as usize >= header.domain_size || col as usize >= header.num_vars {
                return Err(s.error(format_args!(
                    "coefficient {i} is (matrix {matrix}, row {row}, signal {col}): past matrix B, \
                     the {} rows or the {} signals",
                    header.domain_size, header.num_vars
                )));
            }
            let value = Fr::from_bytes_le(t[12..].try_into().unwrap())
                .map_err(|_| s.error(format_args!("coefficient {i} is not below r")))?;
            Ok(Coefficient {
                matrix,
                row,
                signal: col,
                value: value.mul(&scale),
            })
        })
        .collect()
}

/// Reads a BN254 zkey: its key, coefficients and queries (G1 points on
/// the curve, which is G1; B's G2 points on the curve: the proof is
/// verified before it is returned).
///
/// # Errors
/// As [`crate::zkey_bn254::zkey_vk`]; sections of the wrong size; a key
/// the prover cannot take ([`ProvingKey::defect`]: a domain of 2^28 points
/// or more, as BN254's NTTs stop at 2^28 and the odd coset needs twice the
/// domain).
pub fn load_zkey(path: &Path) -> Result<ProvingKey, Error> {
    let f = BinFile::load(path, b"zkey", &[1])?;
    let (header, vk, beta_g1, delta_g1) = zkey_parts(&f)?;
    let n = header.domain_size;
    let vars = header.num_vars;
    let mut s = f.section(7, "B in G2")?;
    let bytes = s.items(vars as u64, 128, "B in G2")?;
    s.finish()?;
    let name = s.name().to_string();
    let b_g2 = bytes
        .par_chunks_exact(128)
        .enumerate()
        .map(|(i, b)| g2_of(b, false, || format!("{name}: point {i}")))
        .collect::<Result<Vec<_>, _>>()?;
    let key = ProvingKey {
        coefficients: coefficients(&f, header)?,
        domain_size: n,
        num_public: header.num_public,
        num_vars: vars,
        points: KeyPoints {
            a: g1s(&f, 5, "A", vars)?,
            b_g1: g1s(&f, 6, "B in G1", vars)?,
            b_g2,
            c: g1s(&f, 8, "C", vars - header.num_public - 1)?,
            h: g1s(&f, 9, "H", n)?,
            vk,
            beta_g1,
            delta_g1,
        },
    };
    match key.defect() {
        Some(d) => Err(Error::InvalidInput(format!("{}: {d}", f.name))),
        None => Ok(key),
    }
}

/// A BN254 `.wtns` (snarkjs's layout, BN254's r).
///
/// # Errors
/// As [`BinFile::load`]; [`Error::WrongCurve`] for a witness over another
/// prime; values not below r.
pub fn load_wtns(path: &Path) -> Result<Vec<Fr>, Error> {
    crate::wtns::read_wtns(&BinFile::load(path, b"wtns", &[2])?)
}

/// Checks that `zkey` is a key of `circuit` (the r1cs it came from):
/// variables, public signals, domain and every QAP coefficient.
///
/// # Errors
/// [`Error::InvalidInput`] naming both files and the first disagreement.
pub fn check_circuit(
    zkey: &ProvingKey,
    circuit: &CircomR1cs<Fr>,
    zkey_name: &str,
    r1cs_name: &str,
) -> Result<(), Error> {
    let disagree = |msg: String| {
        Error::InvalidInput(format!(
            "{zkey_name} and {r1cs_name} disagree: {msg} (a key for another circuit?)"
        ))
    };
    let r1cs = &circuit.r1cs;
    let n = 1usize << domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    for (what, ours, theirs) in [
        ("variables", zkey.num_vars, circuit.num_wires),
        ("public signals", zkey.num_public, circuit.num_public()),
        ("domain size", zkey.domain_size, n),
        (
            "QAP coefficients",
            zkey.coefficients.len(),
            r1cs.a.nnz() + r1cs.b.nnz() + r1cs.num_inputs,
        ),
    ] {
        if ours != theirs {
            return Err(disagree(format!(
                "the zkey has {what} {ours}, the r1cs {theirs}"
            )));
        }
    }
    match zkey
        .coefficients
        .iter()
        .zip(qap_coefficients(r1cs))
        .position(|(z, r)| (z.matrix, z.row, z.signal, z.value) != r)
    {
        Some(i) => Err(disagree(format!("QAP coefficient {i} differs"))),
        None => Ok(()),
    }
}
