//! zkpipe's proving [`Parameters`] (odd-coset H, from
//! [`setup_for`](zkpipe_core::groth16::setup_for)) as a snarkjs Groth16
//! `.zkey`, the inverse of [`crate::zkey`]: so `snarkjs groth16 prove` and
//! zkpipe prove with the same test keys, without a powers-of-tau ceremony.
//!
//! The layout is [`crate::zkey`]'s; section 10 (the ceremony's
//! contributions) holds a zero circuit hash and no contributions, so
//! `snarkjs zkey verify` refuses the file — as it should refuse any key
//! whose toxic waste someone knows.

use std::io::Write;
use std::path::Path;

use crate::field::{BLS12_381_P, BLS12_381_R, zkey_coefficient_scale};
use crate::r1cs::CircomR1cs;
use zkpipe_core::groth16::{HQuery, Parameters, domain_log_size};
use zkpipe_core::util::fsutil::write_atomically_with;
use zkpipe_core::{Error, Fp, G1Affine, G2Affine};

fn fp(out: &mut Vec<u8>, x: &Fp) {
    for l in x.limbs {
        out.extend(l.to_le_bytes());
    }
}

fn g1(out: &mut Vec<u8>, p: &G1Affine) {
    fp(out, &p.x);
    fp(out, &p.y);
}

fn g2(out: &mut Vec<u8>, p: &G2Affine) {
    for c in [&p.x.c[0], &p.x.c[1], &p.y.c[0], &p.y.c[1]] {
        fp(out, c);
    }
}

fn u32_of(n: usize, what: &str) -> Result<u32, Error> {
    u32::try_from(n)
        .map_err(|_| Error::InvalidInput(format!("{what} {n} does not fit a zkey's 32-bit field")))
}

/// Per variable, `dense[j]` picks the next of `points`, else the identity.
fn spread<P: Copy>(points: &[P], dense: &[bool], identity: P) -> Result<Vec<P>, Error> {
    let mut it = points.iter();
    let out: Vec<P> = dense
        .iter()
        .map(|&d| {
            if d {
                it.next().copied()
            } else {
                Some(identity)
            }
        })
        .collect::<Option<_>>()
        .ok_or_else(|| {
            Error::InvalidInput("the key has fewer query points than the circuit uses".into())
        })?;
    if it.next().is_some() {
        return Err(Error::InvalidInput(
            "the key has more query points than the circuit uses".into(),
        ));
    }
    Ok(out)
}

/// The sections of a zkey for `params` and `circuit`, in file order.
///
/// # Errors
/// [`Error::InvalidInput`] when `params` is not an odd-coset key of
/// `circuit`'s shape.
pub fn zkey_sections(
    params: &Parameters,
    circuit: &CircomR1cs,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let r1cs = &circuit.r1cs;
    if params.h_query != HQuery::OddCoset {
        return Err(Error::InvalidInput(
            "a zkey needs snarkjs's odd-coset H query (`setup_for(…, HQuery::OddCoset, …)`)".into(),
        ));
    }
    params
        .check_shape(r1cs)
        .map_err(|e| Error::InvalidInput(format!("the key does not fit the circuit: {e}")))?;
    let n = 1usize << domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
    let vk = &params.vk;

    let mut header = Vec::new();
    header.extend(48u32.to_le_bytes());
    header.extend(BLS12_381_P);
    header.extend(32u32.to_le_bytes());
    header.extend(BLS12_381_R);
    header.extend(u32_of(circuit.num_wires, "variable count")?.to_le_bytes());
    header.extend(u32_of(circuit.num_public(), "public signal count")?.to_le_bytes());
    header.extend(u32_of(n, "domain size")?.to_le_bytes());
    g1(&mut header, &vk.alpha_g1);
    g1(&mut header, &vk.beta_g1);
    g2(&mut header, &vk.beta_g2);
    g2(&mut header, &vk.gamma_g2);
    g1(&mut header, &vk.delta_g1);
    g2(&mut header, &vk.delta_g2);

    let g1s = |points: &[G1Affine]| {
        let mut out = Vec::with_capacity(96 * points.len());
        points.iter().for_each(|p| g1(&mut out, p));
        out
    };

    // Per constraint its A terms then its B terms, then `1·signalᵢ` in A
    // at row constraints + i for the one and each public signal; values
    // times R² (snarkjs keeps them in Montgomery form twice over).
    let r2 = zkey_coefficient_scale()
        .inverse()
        .expect("R² is invertible mod r");
    let rows = r1cs.num_constraints();
    let count = r1cs.a.nnz() + r1cs.b.nnz() + r1cs.num_inputs;
    let mut coefs = Vec::with_capacity(4 + 44 * count);
    coefs.extend(u32_of(count, "coefficient count")?.to_le_bytes());
    let mut term = |m: u32, row: usize, col: u32, v: &zkpipe_core::Fr| -> Result<(), Error> {
        coefs.extend(m.to_le_bytes());
        coefs.extend(u32_of(row, "constraint")?.to_le_bytes());
        coefs.extend(col.to_le_bytes());
        coefs.extend(v.mul(&r2).to_bytes_le());
        Ok(())
    };
    for row in 0..rows {
        for (tag, m) in [(0u32, &r1cs.a), (1u32, &r1cs.b)] {
            for k in m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize {
                term(tag, row, m.cols[k], &m.vals[k])?;
            }
        }
    }
    for input in 0..r1cs.num_inputs {
        term(0, rows + input, input as u32, &zkpipe_core::Fr::one())?;
    }

    let d = r1cs.density();
    let in_a: Vec<bool> = std::iter::repeat_n(true, r1cs.num_inputs)
        .chain(d.a_aux.iter().copied())
        .collect();
    let in_b: Vec<bool> = d.b_input.iter().chain(&d.b_aux).copied().collect();
    let a = spread(&params.a, &in_a, G1Affine::identity())?;
    let b1 = spread(&params.b_g1, &in_b, G1Affine::identity())?;
    let b2 = spread(&params.b_g2, &in_b, G2Affine::identity())?;
    let mut b2_bytes = Vec::with_capacity(192 * b2.len());
    b2.iter().for_each(|p| g2(&mut b2_bytes, p));

    let mut contributions = vec![0u8; 64];
    contributions.extend(0u32.to_le_bytes());
    Ok(vec![
        (1, 1u32.to_le_bytes().to_vec()),
        (2, header),
        (3, g1s(&vk.ic)),
        (4, coefs),
        (5, g1s(&a)),
        (6, g1s(&b1)),
        (7, b2_bytes),
        (8, g1s(&params.l)),
        (9, g1s(&params.h)),
        (10, contributions),
    ])
}

/// Writes `params` for `circuit` as a snarkjs zkey at `path`, atomically.
///
/// # Errors
/// As [`zkey_sections`]; [`Error::Io`] naming `path`.
pub fn write_zkey(path: &Path, params: &Parameters, circuit: &CircomR1cs) -> Result<(), Error> {
    let sections = zkey_sections(params, circuit)?;
    write_atomically_with(path, |w| {
        w.write_all(b"zkey")?;
        w.write_all(&1u32.to_le_bytes())?;
        w.write_all(&(sections.len() as u32).to_le_bytes())?;
        for (ty, data) in &sections {
            w.write_all(&ty.to_le_bytes())?;
            w.write_all(&(data.len() as u64).to_le_bytes())?;
            w.write_all(data)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binfile::tests::container;
    use crate::r1cs::tests::square_r1cs;
    use zkpipe_core::groth16::setup_for;
    use zkpipe_core::util::progress::Silent;

    #[test]
    fn a_written_zkey_reads_back_as_the_same_key() {
        let c = CircomR1cs::from_bytes("t", square_r1cs(&BLS12_381_R)).unwrap();
        let params = setup_for(&c.r1cs, 4, HQuery::OddCoset, &Silent);
        let bytes = container(b"zkey", 1, &zkey_sections(&params, &c).unwrap());
        let back = crate::zkey_from_bytes("t.zkey", bytes, &c, "t.r1cs").unwrap();
        assert_eq!(back, params);
    }

    #[test]
    fn a_bellman_key_is_refused() {
        let c = CircomR1cs::from_bytes("t", square_r1cs(&BLS12_381_R)).unwrap();
        let params = setup_for(&c.r1cs, 4, HQuery::TauPowers, &Silent);
        let e = zkey_sections(&params, &c).unwrap_err();
        assert!(e.to_string().contains("odd-coset"), "{e}");
    }
}
