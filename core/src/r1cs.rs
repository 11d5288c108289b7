//! Recorded R1CS: a circuit's constraints captured once as CSR matrices
//! A, B, C, so later proofs run witness-only synthesis and then
//! `a, b, c = A·w, B·w, C·w` (SpMV) instead of rebuilding constraints.
//!
//! Variables are numbered inputs first (index 0 is the constant one), then
//! aux: column `j < num_inputs` is input `j`, column `num_inputs + k` is aux `k`.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::path::Path;

use crate::Error;
use crate::types::Fr;

/// Converts a bellpepper scalar to the seam type (same bits, no copy of note).
#[inline]
pub fn fr(s: Scalar) -> Fr {
    Fr::from_blst(s.into())
}

/// A sparse matrix in compressed sparse row form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// `row_ptr[r]..row_ptr[r + 1]` indexes row `r`'s entries.
    pub row_ptr: Vec<u64>,
    /// Column (variable) of each entry.
    pub cols: Vec<u32>,
    /// Coefficient of each entry.
    pub vals: Vec<Fr>,
}

impl Csr {
    fn new() -> Self {
        Csr {
            row_ptr: vec![0],
            cols: vec![],
            vals: vec![],
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    fn push_row(&mut self, lc: &LinearCombination<Scalar>) {
        for (var, coeff) in lc.iter() {
            self.cols.push(tag(var));
            self.vals.push(fr(*coeff));
        }
        self.row_ptr.push(self.cols.len() as u64);
    }

    /// `self · w`, one value per row, on the current rayon pool.
    pub fn mul_vec(&self, w: &[Fr]) -> Vec<Fr> {
        self.mul_split(w, &[])
    }

    /// `self · (head ‖ tail)` without building the concatenation (a
    /// witness's inputs and aux: the copy would cost as much as the products).
    pub fn mul_split(&self, head: &[Fr], tail: &[Fr]) -> Vec<Fr> {
        let split = head.len();
        (0..self.rows())
            .into_par_iter()
            .with_min_len(1024)
            .map(|r| {
                let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
                let mut acc = Fr::ZERO;
                for k in lo..hi {
                    let col = self.cols[k] as usize;
                    let v = if col < split {
                        &head[col]
                    } else {
                        &tail[col - split]
                    };
                    let c = &self.vals[k];
                    // Most coefficients are one: skip the multiplication then.
                    acc = acc.add(&if *c == ONE_MONT { *v } else { v.mul(c) });
                }
                acc
            })
            .collect()
    }
}

/// Fr's one in Montgomery form (2^256 mod r).
const ONE_MONT: Fr = Fr {
    limbs: [
        0x00000001fffffffe,
        0x5884b7fa00034802,
        0x998c4fefecbc4ff5,
        0x1824b159acc5056f,
    ],
};

/// While recording, aux columns carry this bit; they are renumbered after
/// the inputs once their count is known.
const AUX_BIT: u32 = 1 << 31;

fn tag(v: Variable) -> u32 {
    match v.get_unchecked() {
        Index::Input(i) => i as u32,
        Index::Aux(i) => AUX_BIT | i as u32,
    }
}

/// A full assignment: `inputs[0]` is one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witness {
    /// Public inputs, the constant one first.
    pub inputs: Vec<Fr>,
    /// Private (auxiliary) variables.
    pub aux: Vec<Fr>,
}

impl Witness {
    /// Runs `circuit` in witness-only mode: values are computed, constraints are not built.
    ///
    /// # Errors
    /// [`Error::Synthesis`] when the circuit fails (e.g. a missing assignment).
    pub fn generate<C: Circuit<Scalar>>(circuit: C) -> Result<Witness, Error> {
        let mut cs = WitnessCs {
            inputs: vec![Scalar::ONE],
            aux: vec![],
        };
        circuit.synthesize(&mut cs).map_err(synthesis)?;
        Ok(Witness {
            inputs: cs.inputs.into_iter().map(fr).collect(),
            aux: cs.aux.into_iter().map(fr).collect(),
        })
    }

    /// `inputs ‖ aux`, the vector the matrices multiply.
    pub fn full(&self) -> Vec<Fr> {
        [self.inputs.as_slice(), self.aux.as_slice()].concat()
    }

    /// The public inputs a verifier is given (without the leading one).
    pub fn public_inputs(&self) -> &[Fr] {
        &self.inputs[1..]
    }
}

fn synthesis(e: SynthesisError) -> Error {
    Error::Synthesis(e.to_string())
}

/// A circuit's constraint system, recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct R1cs {
    /// Number of public inputs, the constant one included.
    pub num_inputs: usize,
    /// Number of private variables.
    pub num_aux: usize,
    /// Left factors, one row per constraint.
    pub a: Csr,
    /// Right factors.
    pub b: Csr,
    /// Products.
    pub c: Csr,
}

/// Which variables appear in A and B (bellperson's density bitmaps: its
/// parameter files omit the A and B query points of the others).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Density {
    /// Aux variables appearing in A.
    pub a_aux: Vec<bool>,
    /// Inputs appearing in B.
    pub b_input: Vec<bool>,
    /// Aux variables appearing in B.
    pub b_aux: Vec<bool>,
}

impl R1cs {
    /// Synthesizes `circuit`, recording its constraints and its assignment.
    ///
    /// # Errors
    /// [`Error::Synthesis`] when the circuit fails.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<(R1cs, Witness), Error> {
        let mut cs = RecordingCs {
            r1cs: R1cs {
                num_inputs: 1,
                num_aux: 0,
                a: Csr::new(),
                b: Csr::new(),
                c: Csr::new(),
            },
            witness: Witness {
                inputs: vec![Fr::one()],
                aux: vec![],
            },
        };
        circuit.synthesize(&mut cs).map_err(synthesis)?;
        let RecordingCs { mut r1cs, witness } = cs;
        let n_in = r1cs.num_inputs as u32;
        for m in [&mut r1cs.a, &mut r1cs.b, &mut r1cs.c] {
            m.cols.par_iter_mut().for_each(|c| {
                if *c & AUX_BIT != 0 {
                    *c = (*c & !AUX_BIT) + n_in;
                }
            });
        }
        Ok((r1cs, witness))
    }

    /// Number of constraints (rows).
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// `(A·w, B·w, C·w)` for the full assignment `w = inputs ‖ aux`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the witness has the wrong shape.
    pub fn spmv(&self, w: &Witness) -> Result<[Vec<Fr>; 3], Error> {
        if w.inputs.len() != self.num_inputs || w.aux.len() != self.num_aux {
            return Err(Error::InvalidInput(format!(
                "witness has {} inputs and {} aux; the R1CS expects {} and {}",
                w.inputs.len(),
                w.aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        let (i, x) = (w.inputs.as_slice(), w.aux.as_slice());
        Ok([
            self.a.mul_split(i, x),
            self.b.mul_split(i, x),
            self.c.mul_split(i, x),
        ])
    }

    /// Index of the first row where `a·b ≠ c`, if any.
    ///
    /// # Errors
    /// As [`R1cs::spmv`].
    pub fn first_unsatisfied(&self, w: &Witness) -> Result<Option<usize>, Error> {
        let [a, b, c] = self.spmv(w)?;
        Ok((0..a.len()).find(|&i| a[i].mul(&b[i]) != c[i]))
    }

    /// Which variables appear in A and B.
    pub fn density(&self) -> Density {
        let n_in = self.num_inputs;
        let mark = |m: &Csr, inputs: bool| {
            let mut d = vec![false; if inputs { n_in } else { self.num_aux }];
            for &c in &m.cols {
                let c = c as usize;
                match (inputs, c < n_in) {
                    (true, true) => d[c] = true,
                    (false, false) => d[c - n_in] = true,
                    _ => {}
                }
            }
            d
        };
        Density {
            a_aux: mark(&self.a, false),
            b_input: mark(&self.b, true),
            b_aux: mark(&self.b, false),
        }
    }
}

/// Records constraints and values.
struct RecordingCs {
    r1cs: R1cs,
    witness: Witness,
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.witness.aux.push(fr(f()?));
        self.r1cs.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.r1cs.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.witness.inputs.push(fr(f()?));
        self.r1cs.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(
            self.r1cs.num_inputs - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.r1cs.a.push_row(&a(LinearCombination::zero()));
        self.r1cs.b.push_row(&b(LinearCombination::zero()));
        self.r1cs.c.push_row(&c(LinearCombination::zero()));
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Computes values only.
struct WitnessCs {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let (a0, i0) = (self.aux.len(), self.inputs.len());
        self.aux.resize(a0 + aux_n, Scalar::ZERO);
        self.inputs.resize(i0 + inputs_n, Scalar::ZERO);
        (&mut self.aux[a0..], &mut self.inputs[i0..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        let i0 = self.inputs.len();
        self.inputs.resize(i0 + n, Scalar::ZERO);
        &mut self.inputs[i0..]
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        let a0 = self.aux.len();
        self.aux.resize(a0 + n, Scalar::ZERO);
        &mut self.aux[a0..]
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}

// ------------------------------------------------------------------ on-disk cache

const MAGIC: &[u8; 8] = b"ZKPR1CS\0";
/// Bump when the file layout or the recording's meaning changes.
const FORMAT_VERSION: u32 = 1;

fn corrupt(path: &Path, why: impl Into<String>) -> Error {
    Error::Cache {
        path: path.to_path_buf(),
        reason: why.into(),
    }
}

impl R1cs {
    /// Writes the matrices to `path` (atomically: a temporary file, then a
    /// rename), tagged with `key` — whatever identifies the circuit shape
    /// (name, size, code version); [`R1cs::load`] rejects another key.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn save(&self, path: &Path, key: &str) -> Result<(), Error> {
        let mut buf = Vec::with_capacity(64 + 3 * (self.a.nnz() * 36 + self.num_constraints() * 8));
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
        buf.extend_from_slice(key.as_bytes());
        for v in [self.num_inputs, self.num_aux, self.num_constraints()] {
            buf.extend_from_slice(&(v as u64).to_le_bytes());
        }
        for m in [&self.a, &self.b, &self.c] {
            buf.extend_from_slice(&(m.nnz() as u64).to_le_bytes());
            m.row_ptr
                .iter()
                .for_each(|p| buf.extend_from_slice(&p.to_le_bytes()));
            m.cols
                .iter()
                .for_each(|c| buf.extend_from_slice(&c.to_le_bytes()));
            m.vals.iter().for_each(|v| {
                v.limbs
                    .iter()
                    .for_each(|l| buf.extend_from_slice(&l.to_le_bytes()))
            });
        }
        let sum = Sha256::digest(&buf);
        buf.extend_from_slice(&sum);
        crate::fsutil::write_atomically(path, &buf)
    }

    /// Reads matrices written by [`R1cs::save`] with the same `key`.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Cache`] when the file is corrupt, truncated, of
    /// another format version, or recorded for another key (stale).
    pub fn load(path: &Path, key: &str) -> Result<R1cs, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if bytes.len() < MAGIC.len() + 32 || &bytes[..8] != MAGIC {
            return Err(corrupt(path, "not a zkpipe R1CS cache file"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body)[..] != *sum {
            return Err(corrupt(
                path,
                "checksum mismatch (truncated or corrupted); delete it to re-record",
            ));
        }
        let mut r = Reader { b: &body[8..] };
        let version = r.u32().ok_or_else(|| corrupt(path, "truncated header"))?;
        if version != FORMAT_VERSION {
            return Err(corrupt(
                path,
                format!(
                    "format version {version}, this zkpipe reads {FORMAT_VERSION}; delete it to re-record"
                ),
            ));
        }
        let found = r
            .u32()
            .and_then(|n| r.take(n as usize))
            .map(|k| String::from_utf8_lossy(k).into_owned());
        let found = found.ok_or_else(|| corrupt(path, "truncated header"))?;
        if found != key {
            return Err(corrupt(
                path,
                format!("stale: recorded for `{found}`, expected `{key}`; delete it to re-record"),
            ));
        }
        r.matrices()
            .ok_or_else(|| corrupt(path, "sizes in the header do not match the data"))
    }
}

impl Reader<'_> {
    fn matrices(&mut self) -> Option<R1cs> {
        let (num_inputs, num_aux, rows) = (
            self.u64()? as usize,
            self.u64()? as usize,
            self.u64()? as usize,
        );
        let mut mats = Vec::with_capacity(3);
        for _ in 0..3 {
            let nnz = self.u64()? as usize;
            // Bound allocations by what the file can hold before trusting counts.
            if rows.checked_add(1)?.checked_mul(8)? > self.b.len()
                || nnz.checked_mul(36)? > self.b.len()
            {
                return None;
            }
            let row_ptr: Vec<u64> = (0..=rows).map(|_| self.u64()).collect::<Option<_>>()?;
            let cols: Vec<u32> = (0..nnz).map(|_| self.u32()).collect::<Option<_>>()?;
            let vals: Vec<Fr> = (0..nnz)
                .map(|_| {
                    Some(Fr {
                        limbs: [self.u64()?, self.u64()?, self.u64()?, self.u64()?],
                    })
                })
                .collect::<Option<_>>()?;
            let cols_ok = cols.iter().all(|&c| (c as usize) < num_inputs + num_aux);
            let rows_ok = row_ptr[0] == 0
                && row_ptr.windows(2).all(|w| w[0] <= w[1])
                && row_ptr[rows] as usize == nnz;
            if !cols_ok || !rows_ok {
                return None;
            }
            mats.push(Csr {
                row_ptr,
                cols,
                vals,
            });
        }
        let [a, b, c]: [Csr; 3] = mats.try_into().ok()?;
        self.b.is_empty().then_some(R1cs {
            num_inputs,
            num_aux,
            a,
            b,
            c,
        })
    }
}

/// Little-endian cursor over a buffer whose length the checksum already vouched for.
struct Reader<'a> {
    b: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.b.len() {
            return None;
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Some(h)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_constant_is_montgomery_one() {
        assert_eq!(ONE_MONT, Fr::one());
    }
}
