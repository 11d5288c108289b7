//! Recorded R1CS: a circuit's constraints captured once as CSR matrices
//! A, B, C, so later proofs run witness-only synthesis and then
//! `a, b, c = A·w, B·w, C·w` (SpMV) instead of rebuilding constraints.
//!
//! Variables are numbered inputs first (index 0 is the constant one), then
//! aux: column `j < num_inputs` is input `j`, column `num_inputs + k` is aux `k`.

use blstrs::Scalar;
use rayon::prelude::*;

use crate::types::Fr;
use crate::{Error, ScalarField};

pub mod cache;
pub mod circuit;
mod cs;
mod file;
mod pieces;
mod qap;
mod record;

pub use cs::{CountingCs, Counts, RecordingCs, WitnessCs};
pub use pieces::{Block, WitnessPiece, witness_in_pieces};
pub use qap::qap_coefficients;
pub use record::{Column, R1csBuilder, Witness};

/// Converts a bellpepper scalar to the seam type (same bits, no copy of note).
#[inline]
pub fn fr(s: Scalar) -> Fr {
    Fr::from_blst(s.into())
}

/// `Scalar` and `Fr` share their layout, so this collects in place (the
/// standard library reuses the allocation) instead of copying the vector.
pub(crate) fn to_fr(v: Vec<Scalar>) -> Vec<Fr> {
    v.into_iter().map(fr).collect()
}

/// A sparse matrix in compressed sparse row form, over BLS12-381's scalar
/// field unless `F` says otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr<F = Fr> {
    /// `row_ptr[r]..row_ptr[r + 1]` indexes row `r`'s entries.
    pub row_ptr: Vec<u64>,
    /// Column (variable) of each entry.
    pub cols: Vec<u32>,
    /// Coefficient of each entry.
    pub vals: Vec<F>,
}

impl<F> Default for Csr<F> {
    fn default() -> Self {
        Csr::new()
    }
}

impl<F> Csr<F> {
    /// No rows.
    pub fn new() -> Self {
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
}

impl Csr {
    /// `self · w`, one value per row, on the current rayon pool.
    pub fn mul_vec(&self, w: &[Fr]) -> Vec<Fr> {
        self.mul_split(w, &[])
    }

    /// `self · (head ‖ tail)` without building the concatenation (a
    /// witness's inputs and aux: the copy would cost as much as the products).
    pub fn mul_split(&self, head: &[Fr], tail: &[Fr]) -> Vec<Fr> {
        (0..self.rows())
            .into_par_iter()
            .with_min_len(1024)
            .map(|r| self.row_times(r, head, tail))
            .collect()
    }

    /// [`Csr::mul_split`] into `out[..rows]` (`out` at least `rows` long).
    pub fn mul_split_into(&self, head: &[Fr], tail: &[Fr], out: &mut [Fr]) {
        out[..self.rows()]
            .par_iter_mut()
            .with_min_len(1024)
            .enumerate()
            .for_each(|(r, o)| *o = self.row_times(r, head, tail));
    }

    /// Row `r` times `head ‖ tail`.
    fn row_times(&self, r: usize, head: &[Fr], tail: &[Fr]) -> Fr {
        let split = head.len();
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

/// A circuit's constraint system, recorded (over BLS12-381's scalar field
/// unless `F` says otherwise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct R1cs<F = Fr> {
    /// Number of public inputs, the constant one included.
    pub num_inputs: usize,
    /// Number of private variables.
    pub num_aux: usize,
    /// Left factors, one row per constraint.
    pub a: Csr<F>,
    /// Right factors.
    pub b: Csr<F>,
    /// Products.
    pub c: Csr<F>,
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

impl<F> Default for R1cs<F> {
    fn default() -> Self {
        R1cs {
            num_inputs: 0,
            num_aux: 0,
            a: Csr::new(),
            b: Csr::new(),
            c: Csr::new(),
        }
    }
}

impl<F> R1cs<F> {
    /// Number of constraints (rows).
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Which variables appear in A and B.
    pub fn density(&self) -> Density {
        let n_in = self.num_inputs;
        let mark = |m: &Csr<F>, inputs: bool| {
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

impl<F: ScalarField> R1cs<F> {
    /// The first row where `(A·w)·(B·w) ≠ C·w` for the full assignment `w`
    /// (inputs then aux), on either curve's field; rows in parallel.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `w` has not one value per variable.
    pub fn first_failing_row(&self, w: &[F]) -> Result<Option<usize>, Error> {
        if w.len() != self.num_inputs + self.num_aux {
            return Err(Error::InvalidInput(format!(
                "the witness has {} values, the circuit {} variables",
                w.len(),
                self.num_inputs + self.num_aux
            )));
        }
        let dot = |m: &Csr<F>, r: usize| {
            (m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize).fold(F::ZERO, |acc, k| {
                acc.add(&m.vals[k].mul(&w[m.cols[k] as usize]))
            })
        };
        Ok((0..self.num_constraints())
            .into_par_iter()
            .with_min_len(1024)
            .find_first(|&r| dot(&self.a, r).mul(&dot(&self.b, r)) != dot(&self.c, r)))
    }
}

impl R1cs {
    /// The matrices as the plugin seam borrows them.
    pub fn as_seam(&self) -> crate::plugin::R1csRef<'_> {
        fn csr(m: &Csr) -> crate::plugin::CsrRef<'_> {
            crate::plugin::CsrRef {
                row_ptr: m.row_ptr.as_slice().into(),
                cols: m.cols.as_slice().into(),
                vals: m.vals.as_slice().into(),
            }
        }
        crate::plugin::R1csRef {
            a: csr(&self.a),
            b: csr(&self.b),
            c: csr(&self.c),
            num_inputs: self.num_inputs as u64,
            num_aux: self.num_aux as u64,
        }
    }

    /// Builds an R1CS from matrices borrowed at the seam (copies them).
    pub fn from_seam(r: &crate::plugin::R1csRef<'_>) -> R1cs {
        let csr = |m: &crate::plugin::CsrRef<'_>| Csr {
            row_ptr: m.row_ptr.to_vec(),
            cols: m.cols.to_vec(),
            vals: m.vals.to_vec(),
        };
        R1cs {
            num_inputs: r.num_inputs as usize,
            num_aux: r.num_aux as usize,
            a: csr(&r.a),
            b: csr(&r.b),
            c: csr(&r.c),
        }
    }

    /// `(A·w, B·w, C·w)` for the full assignment `w = inputs ‖ aux`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the witness has the wrong shape.
    pub fn spmv(&self, w: &Witness) -> Result<[Vec<Fr>; 3], Error> {
        self.check_witness(w)?;
        let (i, x) = (w.inputs.as_slice(), w.aux.as_slice());
        Ok([
            self.a.mul_split(i, x),
            self.b.mul_split(i, x),
            self.c.mul_split(i, x),
        ])
    }

    /// [`R1cs::spmv`] into the first [`R1cs::num_constraints`] elements of
    /// each of `out` (the rest untouched).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the witness has the wrong shape or an
    /// output is shorter than the rows.
    pub fn spmv_into(&self, w: &Witness, out: [&mut [Fr]; 3]) -> Result<(), Error> {
        self.check_witness(w)?;
        if let Some(o) = out.iter().find(|o| o.len() < self.num_constraints()) {
            return Err(Error::InvalidInput(format!(
                "spmv: output of {} elements for {} constraints",
                o.len(),
                self.num_constraints()
            )));
        }
        let (i, x) = (w.inputs.as_slice(), w.aux.as_slice());
        let [a, b, c] = out;
        self.a.mul_split_into(i, x, a);
        self.b.mul_split_into(i, x, b);
        self.c.mul_split_into(i, x, c);
        Ok(())
    }

    /// `[A·w, B·w, C·w]` for `w = inputs ‖ aux` over a whole domain (the
    /// length of `out`'s vectors): the constraints' rows, then bellman's
    /// extra rows `input_i · 1 = 0` (the inputs, in A), then zeros. What the
    /// quotient takes; the host path and the CPU backend's
    /// [`ops::SPMV`](crate::plugin::ops::SPMV) both run it.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a witness of another shape, or vectors
    /// of unequal lengths or too short for the rows and the inputs.
    pub fn domain_evaluations_into(
        &self,
        inputs: &[Fr],
        aux: &[Fr],
        out: [&mut [Fr]; 3],
    ) -> Result<(), Error> {
        if inputs.len() != self.num_inputs || aux.len() != self.num_aux {
            return Err(Error::InvalidInput(format!(
                "witness has {} inputs and {} aux; the R1CS expects {} and {}",
                inputs.len(),
                aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        let (m, n) = (self.num_constraints(), out[0].len());
        if out.iter().any(|o| o.len() != n) || n < m + self.num_inputs {
            return Err(Error::InvalidInput(format!(
                "spmv: vectors of {}, {} and {} elements for {m} constraints and {} inputs",
                out[0].len(),
                out[1].len(),
                out[2].len(),
                self.num_inputs
            )));
        }
        let [a, b, c] = out;
        self.a.mul_split_into(inputs, aux, a);
        self.b.mul_split_into(inputs, aux, b);
        self.c.mul_split_into(inputs, aux, c);
        fill_rows(a, m, inputs);
        fill_rows(b, m, &[]);
        fill_rows(c, m, &[]);
        Ok(())
    }

    /// Refuses a witness of another shape than this system's.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] with both shapes.
    pub fn check_witness(&self, w: &Witness) -> Result<(), Error> {
        if w.inputs.len() != self.num_inputs || w.aux.len() != self.num_aux {
            return Err(Error::InvalidInput(format!(
                "witness has {} inputs and {} aux; the R1CS expects {} and {}",
                w.inputs.len(),
                w.aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        Ok(())
    }

    /// Index of the first row where `a·b ≠ c`, if any.
    ///
    /// # Errors
    /// As [`R1cs::spmv`].
    pub fn first_unsatisfied(&self, w: &Witness) -> Result<Option<usize>, Error> {
        let [a, b, c] = self.spmv(w)?;
        Ok(first_unsatisfied_row([&a, &b, &c]))
    }
}

/// `v[from..]` = `head`, then zeros: the rows after the constraints. The
/// zeros are written on all threads (at 2^25 a pool's reused buffer holds
/// the last proof's values; a fresh one's pages fault in).
fn fill_rows(v: &mut [Fr], from: usize, head: &[Fr]) {
    let (rows, zeros) = v[from..].split_at_mut(head.len());
    rows.copy_from_slice(head);
    zeros
        .par_iter_mut()
        .with_min_len(1 << 16)
        .for_each(|x| *x = Fr::ZERO);
}

/// Index of the first row where `a·b ≠ c` in `[A·w, B·w, C·w]`, if any
/// (all threads: it runs on every proof).
pub fn first_unsatisfied_row([a, b, c]: [&[Fr]; 3]) -> Option<usize> {
    (0..a.len())
        .into_par_iter()
        .with_min_len(1 << 12)
        .find_first(|&i| a[i].mul(&b[i]) != c[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_constant_is_montgomery_one() {
        assert_eq!(ONE_MONT, Fr::one());
    }

    #[test]
    fn rows_after_the_constraints_are_inputs_then_zeros() {
        let x = Fr::from_u64(5);
        let mut v = vec![x; 1 << 17];
        fill_rows(&mut v, 3, &[Fr::one(), Fr::one()]);
        assert!(v[..3].iter().all(|e| *e == x));
        assert_eq!(&v[3..5], &[Fr::one(), Fr::one()]);
        assert!(v[5..].iter().all(|e| *e == Fr::ZERO));
    }

    #[test]
    fn first_failing_row_on_bn254() {
        use crate::bn254::Fr as B;
        // x·x = y, with y public.
        let m = |col: u32| Csr {
            row_ptr: vec![0, 1],
            cols: vec![col],
            vals: vec![B::one()],
        };
        let r = R1cs {
            num_inputs: 2,
            num_aux: 1,
            a: m(2),
            b: m(2),
            c: m(1),
        };
        let w = [B::one(), B::from_u64(9), B::from_u64(3)];
        assert_eq!(r.first_failing_row(&w).unwrap(), None);
        let bad = [B::one(), B::from_u64(8), B::from_u64(3)];
        assert_eq!(r.first_failing_row(&bad).unwrap(), Some(0));
        assert!(r.first_failing_row(&w[..2]).is_err());
    }
}
