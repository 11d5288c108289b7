//! The constraint systems circuits are synthesised into, one of each kind:
//!
//! - [`WitnessCs`]: values only, the per-proof hot path. Names and linear
//!   combinations are never built (their closures are dropped uncalled),
//!   and the bulk methods some gadgets use (neptune's Poseidon) are there.
//!   It can synthesise one piece of a circuit on its own thread
//!   ([`WitnessCs::carried`], [`witness_in_pieces`](super::witness_in_pieces)),
//!   or one block of a circuit's repeated part ([`WitnessCs::split_at`]).
//! - [`RecordingCs`]: the constraints as CSR matrices, once per shape,
//!   with or without the values.
//! - [`CountingCs`]: what recording would hold, counted, before and from a
//!   block on.
//!
//! Each implements the `ConstraintSystem` of bellpepper-core 0.4 and, with
//! the `bellpepper-core-02` feature, of 0.2 (bellperson 0.27's, which
//! Filecoin's circuits are written against): the two traits are the same
//! to the letter, so one macro writes both on the hooks of [`Synthesis`].
//! Variables are numbered as bellperson numbers them: input 0 is the
//! constant one, then inputs and aux in allocation order.

mod counting;
mod recording;
mod witness;

use blstrs::Scalar;
use ff::Field;

use super::Column;
use crate::Error;

pub use counting::{CountingCs, Counts};
pub use recording::RecordingCs;
pub use witness::WitnessCs;

/// A linear combination of either bellpepper-core version, as columns and
/// coefficients.
trait Terms {
    fn terms(&self) -> impl Iterator<Item = (Column, &Scalar)>;
}

/// What a constraint system does on each call, whichever version's trait
/// makes it. Generic in the closures' error and combination types, which
/// differ between the versions.
trait Synthesis {
    /// Allocates an aux variable; `value` is called only by the systems
    /// that keep values (blank circuits have none to give).
    fn aux<E>(&mut self, value: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E>;

    /// Allocates a public input, as [`Synthesis::aux`].
    fn input<E>(&mut self, value: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E>;

    /// `a · b = c`, the sides built by `abc` only in the systems that look
    /// at them.
    fn enforce<L: Terms>(&mut self, abc: impl FnOnce() -> [L; 3]);

    /// Enters a namespace; `name` is built only where it is looked at.
    #[inline]
    fn push_namespace<N: Into<String>>(&mut self, _name: impl FnOnce() -> N) {}

    #[inline]
    fn pop_namespace(&mut self) {}
}

/// Implements `$bp::ConstraintSystem<Scalar>` (and [`Terms`] for its
/// linear combinations) on the [`Synthesis`] hooks. [`WitnessCs`] alone is
/// a witness generator, with the bulk methods on its value vectors.
macro_rules! constraint_systems {
    ($bp:ident) => {
        impl Terms for $bp::LinearCombination<Scalar> {
            #[inline]
            fn terms(&self) -> impl Iterator<Item = (Column, &Scalar)> {
                self.iter().map(|(var, coeff)| {
                    let col = match var.get_unchecked() {
                        $bp::Index::Input(i) => Column::Input(i),
                        $bp::Index::Aux(i) => Column::Aux(i),
                    };
                    (col, coeff)
                })
            }
        }
        constraint_systems!(@impl $bp, RecordingCs, {});
        constraint_systems!(@impl $bp, CountingCs, {});
        constraint_systems!(@impl $bp, WitnessCs, {
            fn is_witness_generator(&self) -> bool {
                true
            }

            fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
                self.inputs.extend_from_slice(new_inputs);
            }

            fn extend_aux(&mut self, new_aux: &[Scalar]) {
                self.aux.extend_from_slice(new_aux);
            }

            fn allocate_empty(
                &mut self,
                aux_n: usize,
                inputs_n: usize,
            ) -> (&mut [Scalar], &mut [Scalar]) {
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
        });
    };
    (@impl $bp:ident, $ty:ty, { $($witness:tt)* }) => {
        impl $bp::ConstraintSystem<Scalar> for $ty {
            type Root = Self;

            #[inline]
            fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<$bp::Variable, $bp::SynthesisError>
            where
                F: FnOnce() -> Result<Scalar, $bp::SynthesisError>,
                A: FnOnce() -> AR,
                AR: Into<String>,
            {
                let i = Synthesis::aux(self, f)?;
                Ok($bp::Variable::new_unchecked($bp::Index::Aux(i)))
            }

            #[inline]
            fn alloc_input<F, A, AR>(
                &mut self,
                _: A,
                f: F,
            ) -> Result<$bp::Variable, $bp::SynthesisError>
            where
                F: FnOnce() -> Result<Scalar, $bp::SynthesisError>,
                A: FnOnce() -> AR,
                AR: Into<String>,
            {
                let i = Synthesis::input(self, f)?;
                Ok($bp::Variable::new_unchecked($bp::Index::Input(i)))
            }

            #[inline]
            fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
            where
                A: FnOnce() -> AR,
                AR: Into<String>,
                LA: FnOnce($bp::LinearCombination<Scalar>) -> $bp::LinearCombination<Scalar>,
                LB: FnOnce($bp::LinearCombination<Scalar>) -> $bp::LinearCombination<Scalar>,
                LC: FnOnce($bp::LinearCombination<Scalar>) -> $bp::LinearCombination<Scalar>,
            {
                let zero = $bp::LinearCombination::zero;
                Synthesis::enforce(self, || [a(zero()), b(zero()), c(zero())]);
            }

            #[inline]
            fn push_namespace<NR, N>(&mut self, name: N)
            where
                NR: Into<String>,
                N: FnOnce() -> NR,
            {
                Synthesis::push_namespace(self, name);
            }

            #[inline]
            fn pop_namespace(&mut self) {
                Synthesis::pop_namespace(self);
            }

            fn get_root(&mut self) -> &mut Self::Root {
                self
            }

            $($witness)*
        }
    };
}

constraint_systems!(bellpepper_core);
#[cfg(feature = "bellpepper-core-02")]
constraint_systems!(bellpepper_core_02);

/// Where a circuit's repeated part begins: at the first top-level
/// namespace whose name starts with a prefix, as the (inputs, aux)
/// allocated before it.
#[derive(Clone, Debug)]
struct Split {
    prefix: String,
    depth: usize,
    at: Option<(usize, usize)>,
}

impl Split {
    fn new(prefix: &str) -> Self {
        Split {
            prefix: prefix.to_owned(),
            depth: 0,
            at: None,
        }
    }

    /// Enters a namespace with `here` allocated so far. Only top-level
    /// names are built, and none once the split is found: most gadgets
    /// `format!` theirs.
    #[inline]
    fn push<N: Into<String>>(&mut self, name: impl FnOnce() -> N, here: (usize, usize)) {
        if self.depth == 0 && self.at.is_none() && name().into().starts_with(&self.prefix) {
            self.at = Some(here);
        }
        self.depth += 1;
    }

    #[inline]
    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Whether the split was passed.
    #[inline]
    fn passed(&self) -> bool {
        self.at.is_some()
    }

    /// (inputs, aux) before the split.
    ///
    /// # Errors
    /// [`Error::Failed`] when the circuit has no such namespace.
    fn at(&self) -> Result<(usize, usize), Error> {
        self.at.ok_or_else(|| {
            Error::Failed(format!(
                "the circuit has no top-level namespace `{}…`",
                self.prefix
            ))
        })
    }
}

#[cfg(test)]
mod tests;
