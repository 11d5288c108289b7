//! Groth16 proofs on BN254 from a snarkjs zkey and a witness, as snarkjs
//! and rapidsnark make them: A·w and B·w from the zkey's coefficients,
//! C·w = (A·w)∘(B·w), the three moved to the odd coset of the 2n-th roots
//! (an inverse NTT, then a forward NTT shifted by ω₂ₙ), and
//! h = a·b − c there, which the zkey's H points take as they are. The MSMs
//! and NTTs run on a backend's BN254 ops.
//!
//! This is BN254's first prover: it reads the whole zkey into memory and
//! runs each op once, without BLS12-381's pipeline (partitions, resident
//! bases, device SpMV, scheduling).

use rand_core::RngCore;
use rayon::prelude::*;
use std::path::Path;
use zkpipe_core::bn254::groth16::{Proof, VerifyingKey};
use zkpipe_core::bn254::{FR_TWO_ADICITY, Fr, G1Affine, G1Projective, G2Affine};
use zkpipe_core::plugin::{MsmConfig, NttConfigOf, NttDirection};
use zkpipe_core::{Backend, Error};

use crate::binfile::{BinFile, Reader};
use crate::field::zkey_coefficient_scale;
use crate::r1cs::CircomR1cs;
use crate::zkey::ZkeyHeader;
use crate::zkey_bn254::{g1_of, g2_of, zkey_parts};
use crate::zkey_write::qap_coefficients;
use zkpipe_core::groth16::domain_log_size;

/// What a BN254 proof needs of its zkey.
#[derive(Debug)]
pub struct Bn254Zkey {
    pub header: ZkeyHeader,
    pub vk: VerifyingKey,
    beta_g1: G1Affine,
    delta_g1: G1Affine,
    /// (matrix 0 = A or 1 = B, row, signal, value).
    coefficients: Vec<(u32, u32, u32, Fr)>,
    a: Vec<G1Affine>,
    b_g1: Vec<G1Affine>,
    b_g2: Vec<G2Affine>,
    c: Vec<G1Affine>,
    h: Vec<G1Affine>,
}

fn g1s(f: &BinFile, section: u32, what: &str, count: usize) -> Result<Vec<G1Affine>, Error> {
    let mut s = f.section(section, what)?;
    let bytes = s.items(count as u64, 64, what)?;
    s.finish()?;
    let name = s.name().to_string();
    bytes
        .par_chunks_exact(64)
        .enumerate()
        .map(|(i, b)| g1_of(b, &format!("{name}: point {i}")))
        .collect()
}

fn coefficients(f: &BinFile, header: ZkeyHeader) -> Result<Vec<(u32, u32, u32, Fr)>, Error> {
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
            Ok((matrix, row, col, value.mul(&scale)))
        })
        .collect()
}

/// Reads a BN254 zkey: its key, coefficients and queries (G1 points on
/// the curve, which is G1; B's G2 points on the curve: the proof is
/// verified before it is returned).
///
/// # Errors
/// As [`crate::zkey_bn254::zkey_vk`]; sections of the wrong size; a domain
/// of 2^28 points or more (BN254's NTTs stop at 2^28 and the odd coset
/// needs twice the domain).
pub fn load_zkey(path: &Path) -> Result<Bn254Zkey, Error> {
    let f = BinFile::load(path, b"zkey", &[1])?;
    let (header, vk, beta_g1, delta_g1) = zkey_parts(&f)?;
    let n = header.domain_size;
    if !n.is_power_of_two() || n.trailing_zeros() >= FR_TWO_ADICITY {
        return Err(Error::InvalidInput(format!(
            "{}: a domain of {n} points: BN254 proofs need a power of two below 2^{FR_TWO_ADICITY}",
            f.name
        )));
    }
    let vars = header.num_vars;
    let mut s = f.section(7, "B in G2")?;
    let bytes = s.items(vars as u64, 128, "B in G2")?;
    s.finish()?;
    let name = s.name().to_string();
    let b_g2 = bytes
        .par_chunks_exact(128)
        .enumerate()
        .map(|(i, b)| g2_of(b, false, &format!("{name}: point {i}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Bn254Zkey {
        coefficients: coefficients(&f, header)?,
        a: g1s(&f, 5, "A", vars)?,
        b_g1: g1s(&f, 6, "B in G1", vars)?,
        b_g2,
        c: g1s(&f, 8, "C", vars - header.num_public - 1)?,
        h: g1s(&f, 9, "H", n)?,
        header,
        vk,
        beta_g1,
        delta_g1,
    })
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
    zkey: &Bn254Zkey,
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
    let h = zkey.header;
    for (what, ours, theirs) in [
        ("variables", h.num_vars, circuit.num_wires),
        ("public signals", h.num_public, circuit.num_public()),
        ("domain size", h.domain_size, n),
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
        .position(|(z, r)| *z != r)
    {
        Some(i) => Err(disagree(format!("QAP coefficient {i} differs"))),
        None => Ok(()),
    }
}

/// Runs `ops` at once, each on its own thread (they wait on the backend's
/// pool), and returns the first error.
fn side_by_side<F>(ops: impl IntoIterator<Item = F>) -> Result<(), Error>
where
    F: FnOnce() -> Result<(), Error> + Send,
{
    std::thread::scope(|scope| {
        let running: Vec<_> = ops.into_iter().map(|op| scope.spawn(op)).collect();
        running.into_iter().try_for_each(|t| {
            t.join()
                .unwrap_or_else(|_| Err(Error::Failed("a BN254 proving thread panicked".into())))
        })
    })
}

/// Proves `witness` (every wire, the one first) under `zkey` on `be`'s
/// BN254 ops, with blinding from `rng`; returns the proof and the public
/// signals, the proof verified.
///
/// # Errors
/// [`Error::InvalidInput`] for a witness of another length, whose first
/// value is not one, or that does not satisfy the circuit (the proof
/// fails its check); the backend's errors.
pub fn prove(
    be: &Backend,
    zkey: &Bn254Zkey,
    witness: &[Fr],
    rng: &mut impl RngCore,
) -> Result<(Proof, Vec<Fr>), Error> {
    let h = zkey.header;
    if witness.len() != h.num_vars || witness[0] != Fr::one() {
        return Err(Error::InvalidInput(format!(
            "the witness has {} values{}; the zkey's circuit has {} wires, the one first",
            witness.len(),
            if witness.first() == Some(&Fr::one()) {
                ""
            } else {
                " and does not start with 1"
            },
            h.num_vars
        )));
    }
    let n = h.domain_size;
    let (mut a, mut b) = (vec![Fr::ZERO; n], vec![Fr::ZERO; n]);
    for &(matrix, row, col, value) in &zkey.coefficients {
        let t = if matrix == 0 { &mut a } else { &mut b };
        t[row as usize] = t[row as usize].add(&value.mul(&witness[col as usize]));
    }
    let mut c: Vec<Fr> = a.par_iter().zip(&b).map(|(x, y)| x.mul(y)).collect();
    let inverse = NttConfigOf {
        direction: NttDirection::Inverse,
        ..Default::default()
    };
    let odd_coset = NttConfigOf {
        coset: Some(Fr::root_of_unity(n.trailing_zeros() + 1)).into(),
        ..Default::default()
    };
    // The three vectors side by side, and below the five MSMs: one op's
    // parallel parts (an MSM's ~19 windows) leave threads idle on a large
    // machine that the others then use.
    let (inverse, odd_coset) = (&inverse, &odd_coset);
    side_by_side([&mut a, &mut b, &mut c].map(|v| {
        move || {
            be.bn254_ntt(v, inverse)?;
            be.bn254_ntt(v, odd_coset)
        }
    }))?;
    let h_values: Vec<Fr> = (0..n)
        .into_par_iter()
        .map(|i| a[i].mul(&b[i]).sub(&c[i]))
        .collect();
    let cfg = &MsmConfig::default();
    let private = &witness[h.num_public + 1..];
    let (r, s) = (Fr::random(rng), Fr::random(rng));
    let vk = &zkey.vk;
    let (mut b_g2, mut g1) = (None, [G1Projective::identity(); 4]);
    let g1_terms = [
        (&zkey.a, witness),
        (&zkey.b_g1, witness),
        (&zkey.c, private),
        (&zkey.h, &h_values[..]),
    ];
    let mut ops: Vec<Box<dyn FnOnce() -> Result<(), Error> + Send + '_>> = vec![Box::new(|| {
        b_g2 = Some(be.bn254_msm_g2(&zkey.b_g2, witness, cfg)?);
        Ok(())
    })];
    for (out, (bases, scalars)) in g1.iter_mut().zip(g1_terms) {
        ops.push(Box::new(move || {
            *out = be.bn254_msm_g1(bases, scalars, cfg)?;
            Ok(())
        }));
    }
    side_by_side(ops)?;
    let [a_sum, b_g1_sum, c_sum, h_sum] = g1;
    let pi_a = a_sum
        .add(&vk.alpha_g1.to_projective())
        .add(&zkey.delta_g1.mul(&r));
    let pi_b = b_g2
        .expect("the G2 MSM ran")
        .add(&vk.beta_g2.to_projective())
        .add(&vk.delta_g2.mul(&s));
    let b_g1 = b_g1_sum
        .add(&zkey.beta_g1.to_projective())
        .add(&zkey.delta_g1.mul(&s));
    let pi_c = c_sum
        .add(&h_sum)
        .add(&pi_a.to_affine().mul(&s))
        .add(&b_g1.to_affine().mul(&r))
        .add(&zkey.delta_g1.mul(&r.mul(&s).neg()));
    let proof = Proof {
        a: pi_a.to_affine(),
        b: pi_b.to_affine(),
        c: G1Projective::to_affine(&pi_c),
    };
    let public = witness[1..=h.num_public].to_vec();
    if !zkpipe_core::bn254::groth16::verify(vk, &proof, &public)? {
        return Err(Error::InvalidInput(
            "the proof does not verify: the witness does not satisfy the zkey's circuit".into(),
        ));
    }
    Ok((proof, public))
}
