//! Synthesis into zkpipe's types: recording a circuit's constraints into
//! CSR matrices (once per shape), and witness-only synthesis (per proof),
//! through the constraint systems of [`super::cs`].

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use rayon::prelude::*;

use super::cs::{RecordingCs, WitnessCs};
use super::{Csr, R1cs, fr};
use crate::Error;
use crate::types::Fr;

/// While recording, aux columns carry this bit; they are renumbered after
/// the inputs once their count is known.
const AUX_BIT: u32 = 1 << 31;

/// A variable as a constraint system names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Public input `i` (0 is the constant one).
    Input(usize),
    /// Private variable `i`.
    Aux(usize),
}

/// Builds an [`R1cs`] constraint by constraint.
#[derive(Debug)]
pub struct R1csBuilder {
    r1cs: R1cs,
}

impl Default for R1csBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl R1csBuilder {
    /// An empty system with the constant one as input 0.
    pub fn new() -> Self {
        R1csBuilder {
            r1cs: R1cs {
                num_inputs: 1,
                num_aux: 0,
                a: Csr::new(),
                b: Csr::new(),
                c: Csr::new(),
            },
        }
    }

    /// Adds a public input and returns its index.
    pub fn alloc_input(&mut self) -> usize {
        self.r1cs.num_inputs += 1;
        self.r1cs.num_inputs - 1
    }

    /// Adds a private variable and returns its index.
    pub fn alloc_aux(&mut self) -> usize {
        self.r1cs.num_aux += 1;
        self.r1cs.num_aux - 1
    }

    /// Adds the constraint `a · b = c`, each side a list of terms.
    pub fn enforce<'a>(
        &mut self,
        a: impl IntoIterator<Item = (Column, &'a Scalar)>,
        b: impl IntoIterator<Item = (Column, &'a Scalar)>,
        c: impl IntoIterator<Item = (Column, &'a Scalar)>,
    ) {
        self.r1cs.a.push_row(a);
        self.r1cs.b.push_row(b);
        self.r1cs.c.push_row(c);
    }

    /// The recorded system, aux columns numbered after the inputs.
    pub fn finish(self) -> R1cs {
        let mut r1cs = self.r1cs;
        let n_in = r1cs.num_inputs as u32;
        for m in [&mut r1cs.a, &mut r1cs.b, &mut r1cs.c] {
            m.cols.par_iter_mut().for_each(|c| {
                if *c & AUX_BIT != 0 {
                    *c = (*c & !AUX_BIT) + n_in;
                }
            });
        }
        r1cs
    }
}

impl Csr {
    fn push_row<'a>(&mut self, terms: impl IntoIterator<Item = (Column, &'a Scalar)>) {
        for (var, coeff) in terms {
            self.cols.push(match var {
                Column::Input(i) => i as u32,
                Column::Aux(i) => AUX_BIT | i as u32,
            });
            self.vals.push(fr(*coeff));
        }
        self.row_ptr.push(self.cols.len() as u64);
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
        Self::generate_sized(circuit, 1, 0)
    }

    /// [`Witness::generate`] with room for `num_inputs` inputs and `num_aux`
    /// aux variables reserved up front (an [`R1cs`]'s counts, or a previous
    /// witness's): growing the vectors costs copies of everything so far.
    ///
    /// # Errors
    /// As [`Witness::generate`].
    pub fn generate_sized<C: Circuit<Scalar>>(
        circuit: C,
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<Witness, Error> {
        let mut cs = WitnessCs::with_capacity(num_inputs, num_aux);
        circuit.synthesize(&mut cs).map_err(synthesis)?;
        Ok(cs.into_witness())
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

pub(super) fn synthesis(e: SynthesisError) -> Error {
    Error::Synthesis(e.to_string())
}

impl R1cs {
    /// Synthesizes `circuit`, recording its constraints and its assignment.
    ///
    /// # Errors
    /// [`Error::Synthesis`] when the circuit fails.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<(R1cs, Witness), Error> {
        let mut cs = RecordingCs::with_values();
        circuit.synthesize(&mut cs).map_err(synthesis)?;
        let (r1cs, witness) = cs.finish();
        Ok((r1cs, witness.expect("values were recorded")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::r1cs::to_fr;
    use bellpepper_core::ConstraintSystem;

    struct Squares(u64);
    impl Circuit<Scalar> for Squares {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            for k in 0..self.0 {
                cs.alloc(|| "x", || Ok(Scalar::from(k * k)))?;
            }
            cs.alloc_input(|| "out", || Ok(Scalar::from(self.0)))?;
            Ok(())
        }
    }

    #[test]
    fn sized_generation_matches_and_converts_in_place() {
        let w = Witness::generate(Squares(100)).unwrap();
        assert_eq!(w.aux.len(), 100);
        assert_eq!(w.aux[7], fr(Scalar::from(49)));
        for (i, a) in [(0, 0), (2, 100), (1, 50)] {
            assert_eq!(Witness::generate_sized(Squares(100), i, a).unwrap(), w);
        }
        let v: Vec<Scalar> = (0..1000).map(Scalar::from).collect();
        let p = v.as_ptr() as usize;
        let w = to_fr(v);
        assert_eq!(w.as_ptr() as usize, p);
    }
}
