//! snarkjs's `.wtns` (version 2): section 1 holds the field size, the prime
//! and the witness count; section 2 the values, canonical little-endian, in
//! wire order (the one first).

use std::path::Path;

use rayon::prelude::*;

use crate::binfile::BinFile;
use crate::field::check_prime_for;
use crate::r1cs::CircomR1cs;
use zkpipe_core::ScalarField;
use zkpipe_core::r1cs::Witness;
use zkpipe_core::{Error, Fr};

/// Reads a `.wtns` file as a full assignment, one value per wire.
///
/// # Errors
/// [`Error::Io`]; [`Error::InvalidEncoding`] for malformed bytes;
/// [`Error::InvalidInput`] for a prime other than BLS12-381's r.
pub fn load_wtns(path: &Path) -> Result<Vec<Fr>, Error> {
    read_wtns(&BinFile::load(path, b"wtns", &[2])?)
}

/// Parses `.wtns` bytes; `name` is used in messages.
///
/// # Errors
/// As [`load_wtns`].
pub fn wtns_from_bytes(name: &str, bytes: Vec<u8>) -> Result<Vec<Fr>, Error> {
    read_wtns(&BinFile::parse(name.into(), bytes, b"wtns", &[2])?)
}

/// A `.wtns`'s values over the prime it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CurveWitness {
    /// BLS12-381's r.
    Bls12_381(Vec<Fr>),
    /// BN254's r.
    Bn254(Vec<zkpipe_core::bn254::Fr>),
}

/// Parses `.wtns` bytes over whichever curve's prime they name; `name` is
/// used in messages.
///
/// # Errors
/// As [`read_wtns`].
pub fn wtns_either_from_bytes(name: &str, bytes: Vec<u8>) -> Result<CurveWitness, Error> {
    let f = BinFile::parse(name.into(), bytes, b"wtns", &[2])?;
    let mut h = f.section(1, "header")?;
    let n8 = h.u32("field size")? as usize;
    match zkpipe_core::Curve::from_scalar_modulus_le(h.take(n8, "prime")?) {
        Some(zkpipe_core::Curve::Bn254) => read_wtns(&f).map(CurveWitness::Bn254),
        _ => read_wtns(&f).map(CurveWitness::Bls12_381),
    }
}

/// The values of a loaded `.wtns` over `F`'s prime.
///
/// # Errors
/// [`Error::InvalidEncoding`] for malformed bytes or a value not below r;
/// a prime of the other curve as [`check_prime_for`] says.
pub fn read_wtns<F: ScalarField>(f: &BinFile) -> Result<Vec<F>, Error> {
    let mut h = f.section(1, "header")?;
    let n8 = h.u32("field size")? as usize;
    let prime = h.take(n8, "prime")?;
    check_prime_for::<F>(&h, prime)?;
    let count = h.u32("witness count")?;
    h.finish()?;
    let mut v = f.section(2, "values")?;
    let bytes = v.items(count.into(), 32, "values")?;
    v.finish()?;
    // Side by side: each value's move into Montgomery form is a
    // multiplication, millions of them for a large circuit.
    bytes
        .par_chunks_exact(32)
        .enumerate()
        .map(|(i, b)| {
            F::from_bytes_le(b.try_into().expect("32 bytes"))
                .map_err(|_| v.error(format_args!("value {i}: not below r")))
        })
        .collect()
}

/// A `.wtns` file's bytes (version 2, the prime of `F`'s curve), as
/// snarkjs writes them.
pub fn wtns_to_bytes<F: ScalarField>(values: &[F]) -> Vec<u8> {
    let mut out = b"wtns".to_vec();
    out.extend(2u32.to_le_bytes());
    out.extend(2u32.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    out.extend(40u64.to_le_bytes());
    out.extend(32u32.to_le_bytes());
    out.extend(F::CURVE.scalar_modulus_le());
    out.extend((values.len() as u32).to_le_bytes());
    out.extend(2u32.to_le_bytes());
    out.extend((32 * values.len() as u64).to_le_bytes());
    for v in values {
        out.extend(v.to_bytes_le());
    }
    out
}

/// Splits a full assignment into zkpipe's witness for `circuit`, checking
/// that it is one: as many values as wires, the constant one first.
///
/// # Errors
/// [`Error::InvalidInput`] naming the files that disagree.
pub fn witness_for(
    values: Vec<Fr>,
    circuit: &CircomR1cs,
    wtns_name: &str,
    r1cs_name: &str,
) -> Result<Witness, Error> {
    if values.len() != circuit.num_wires {
        return Err(Error::InvalidInput(format!(
            "{wtns_name} has {} values but {r1cs_name} has {} wires: a witness of another circuit?",
            values.len(),
            circuit.num_wires
        )));
    }
    if values[0] != Fr::one() {
        return Err(Error::InvalidInput(format!(
            "{wtns_name}: the first value (the constant wire) is not 1"
        )));
    }
    let mut inputs = values;
    let aux = inputs.split_off(circuit.r1cs.num_inputs);
    Ok(Witness { inputs, aux })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binfile::tests::container;
    use crate::field::BLS12_381_R;
    use zkpipe_core::bn254;

    fn wtns(values: &[u64]) -> Vec<u8> {
        let mut header = 32u32.to_le_bytes().to_vec();
        header.extend(BLS12_381_R);
        header.extend((values.len() as u32).to_le_bytes());
        let mut data = Vec::new();
        for v in values {
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&v.to_le_bytes());
            data.extend(b);
        }
        container(b"wtns", 2, &[(1, header), (2, data)])
    }

    #[test]
    fn reads_and_checks_against_the_circuit() {
        let circuit =
            CircomR1cs::from_bytes("c.r1cs", crate::r1cs::tests::square_r1cs(&BLS12_381_R))
                .unwrap();
        let values = wtns_from_bytes("w", wtns(&[1, 9, 3])).unwrap();
        let w = witness_for(values, &circuit, "w", "c").unwrap();
        assert_eq!(circuit.r1cs.first_unsatisfied(&w).unwrap(), None);
        let short = wtns_from_bytes("w", wtns(&[1, 9])).unwrap();
        let e = witness_for(short, &circuit, "w.wtns", "c.r1cs").unwrap_err();
        assert!(e.to_string().contains("another circuit"), "{e}");
        let bytes = wtns(&[1, 9, 3]);
        let values = wtns_from_bytes("w", bytes.clone()).unwrap();
        assert_eq!(wtns_to_bytes(&values), bytes);
        for cut in 0..bytes.len() {
            assert!(wtns_from_bytes("w", bytes[..cut].to_vec()).is_err());
        }
    }

    #[test]
    fn a_bn254_witness_reads_back_and_every_cut_or_the_other_curve_is_refused() {
        let read = |bytes: &[u8]| {
            BinFile::parse("w".into(), bytes.to_vec(), b"wtns", &[2])
                .and_then(|f| read_wtns::<bn254::Fr>(&f))
        };
        let values: Vec<bn254::Fr> = [1, 9, 3].map(bn254::Fr::from_u64).to_vec();
        let bytes = wtns_to_bytes(&values);
        assert_eq!(read(&bytes).unwrap(), values);
        for cut in 0..bytes.len() {
            assert!(read(&bytes[..cut]).is_err(), "{cut}");
        }
        let e = read(&wtns(&[1, 9, 3])).unwrap_err();
        assert!(matches!(e, Error::WrongCurve { .. }), "{e}");
        // A value not below r.
        let mut high = bytes.clone();
        let last = high.len() - 32;
        high[last..].fill(0xff);
        assert!(read(&high).unwrap_err().to_string().contains("value 2"));
    }
}
