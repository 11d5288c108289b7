//! A backend against the reference: every op and a whole proof (of a
//! built-in circuit; BN254's of a squaring chain), compared bit for bit
//! ([`zkpipe_core::crosscheck`]).

use std::sync::Arc;

use zkpipe_core::Error;
use zkpipe_core::crosscheck::{self, Check, Spec};

use crate::Session;
use crate::builtin::BuiltinRequest;

impl Session {
    /// Checks this session's backend against the backend `reference`
    /// (made without this session's backend-only settings) on every op up
    /// to `spec`'s size and on a whole proof of `circuit`, telling each
    /// check to `each`; returns whether all matched.
    ///
    /// # Errors
    /// A circuit too big for this machine; as [`Session::reference`] and
    /// [`crosscheck::run`].
    pub fn crosscheck(
        &self,
        circuit: &BuiltinRequest,
        reference: &str,
        spec: &Spec,
        each: &mut dyn FnMut(&Check),
    ) -> Result<bool, Error> {
        let source = circuit.source()?;
        circuit.check_fits()?;
        let reference = Arc::new(self.reference(reference)?);
        let r1cs = Arc::new(circuit.r1cs(&source, self.progress())?);
        crosscheck::run(
            self.backend(),
            &reference,
            self.registry(),
            &*source,
            r1cs,
            spec,
            each,
        )
    }

    /// Checks this session's backend against `reference` on BN254's ops
    /// and on a whole BN254 proof, as [`Session::crosscheck`] does
    /// BLS12-381's.
    ///
    /// # Errors
    /// As [`Session::reference`] and [`crosscheck::run_bn254`].
    pub fn crosscheck_bn254(
        &self,
        reference: &str,
        spec: &Spec,
        each: &mut dyn FnMut(&Check),
    ) -> Result<bool, Error> {
        let reference = Arc::new(self.reference(reference)?);
        crosscheck::run_bn254(self.backend(), &reference, spec, each)
    }
}
