//! Synthesis into zkpipe's types: recording a circuit's constraints into
//! CSR matrices (once per shape), and witness-only synthesis (per proof).
//!
//! [`R1csBuilder`] is the recording half every front end shares: a
//! bellpepper-core 0.4 constraint system here, bellperson 0.27's (0.2) in
//! the Filecoin front end.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

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

fn terms(lc: &LinearCombination<Scalar>) -> impl Iterator<Item = (Column, &Scalar)> {
    lc.iter().map(|(var, coeff)| {
        let col = match var.get_unchecked() {
            Index::Input(i) => Column::Input(i),
            Index::Aux(i) => Column::Aux(i),
        };
        (col, coeff)
    })
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
        let mut cs = RecordingCs {
            builder: R1csBuilder::new(),
            witness: Witness {
                inputs: vec![Fr::one()],
                aux: vec![],
            },
        };
        circuit.synthesize(&mut cs).map_err(synthesis)?;
        Ok((cs.builder.finish(), cs.witness))
    }
}

/// Records constraints and values.
struct RecordingCs {
    builder: R1csBuilder,
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
        Ok(Variable::new_unchecked(Index::Aux(
            self.builder.alloc_aux(),
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.witness.inputs.push(fr(f()?));
        Ok(Variable::new_unchecked(Index::Input(
            self.builder.alloc_input(),
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
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        self.builder.enforce(terms(&a), terms(&b), terms(&c));
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
#[derive(Debug)]
pub(super) struct WitnessCs {
    pub(super) inputs: Vec<Scalar>,
    pub(super) aux: Vec<Scalar>,
}

impl WitnessCs {
    /// The constant one as input 0, and room for the counts given.
    pub(super) fn with_capacity(num_inputs: usize, num_aux: usize) -> Self {
        let mut inputs = Vec::with_capacity(num_inputs.max(1));
        inputs.push(Scalar::ONE);
        WitnessCs {
            inputs,
            aux: Vec::with_capacity(num_aux),
        }
    }

    pub(super) fn into_witness(self) -> Witness {
        Witness {
            inputs: to_fr(self.inputs),
            aux: to_fr(self.aux),
        }
    }
}

/// `Scalar` and `Fr` share their layout, so this collects in place (the
/// standard library reuses the allocation) instead of copying the vector.
pub(super) fn to_fr(v: Vec<Scalar>) -> Vec<Fr> {
    v.into_iter().map(fr).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

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
