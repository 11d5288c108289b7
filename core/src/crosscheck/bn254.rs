//! BN254's crosscheck: its MSMs and NTTs, and a whole proof of a squaring
//! chain at fixed `r, s`, on the backend under test and on the reference,
//! compared bit for bit.

use super::{Ops, compare, first_mismatch, ntt_configs};
use crate::Error;
use crate::bn254::prover::{self, ProvingKey, ResidentQueries};
use crate::bn254::{Fr, G1Affine, G2Affine, sample, setup};
use crate::plugin::ops;
use crate::r1cs::{Csr, R1cs};
use crate::util::progress::Silent;
use crate::util::sample::rng;

/// Constraints of the whole proof's circuit.
const CHAIN: usize = 1000;

/// Runs BN254's checks: MSMs of `sizes` (G2 up to 2^14), NTTs of 2^1, 2^5
/// and 2^`max_log` in every order, direction and coset, and one proof.
pub(super) fn checks(
    ops: &Ops<'_>,
    sizes: &[usize],
    max_log: u32,
    check: &mut dyn FnMut(String, Result<Option<String>, Error>),
) {
    for &n in sizes {
        check(format!("bn254.msm_g1/{n}"), ops.bn254_msm_g1(n));
        check(
            format!("bn254.msm_g2/{n}"),
            ops.bn254_msm_g2(n.min(1 << 14)),
        );
    }
    for log in [1u32, 5, max_log] {
        for (name, cfg) in ntt_configs::<Fr>(ops.device) {
            check(
                format!("bn254.ntt/{name}/2^{log}"),
                ops.bn254_ntt(log, &cfg),
            );
        }
    }
    if ops.test.capabilities().supports(ops::bn254::QUOTIENT) {
        for log in [1u32, max_log] {
            check(format!("bn254.quotient/2^{log}"), ops.bn254_quotient(log));
        }
    }
    check(
        format!("bn254 groth16 proof bytes (squaring chain {CHAIN})"),
        ops.bn254_whole_proof(false),
    );
    if ops.test.capabilities().supports(ops::bn254::RESIDENT_BASES) {
        check(
            format!("bn254 groth16 proof bytes, resident queries (squaring chain {CHAIN})"),
            ops.bn254_whole_proof(true),
        );
    }
}

/// Inputs with edge cases mixed in: zero and r − 1 scalars.
fn scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut s = sample::scalars(n, seed);
    if n > 2 {
        s[0] = Fr::ZERO;
        s[1] = Fr::one().neg();
    }
    s
}

/// `x₀ → x₀² → … → y`: constraint i is xᵢ·xᵢ = xᵢ₊₁, the last one's
/// product the public y. Signals: the one, y, then x₀ … x_{n−1}.
fn squaring_chain(n: usize, seed: u64) -> (R1cs<Fr>, Vec<Fr>) {
    let mut m = [Csr::new(), Csr::new(), Csr::new()];
    for i in 0..n {
        let x = 2 + i as u32;
        let product = if i + 1 == n { 1 } else { x + 1 };
        for (csr, col) in m.iter_mut().zip([x, x, product]) {
            csr.cols.push(col);
            csr.vals.push(Fr::one());
            csr.row_ptr.push(csr.cols.len() as u64);
        }
    }
    let [a, b, c] = m;
    let mut xs = vec![Fr::random(&mut rng(seed))];
    for i in 1..n {
        xs.push(xs[i - 1].mul(&xs[i - 1]));
    }
    let y = xs[n - 1].mul(&xs[n - 1]);
    let witness = [Fr::one(), y].into_iter().chain(xs).collect();
    let r1cs = R1cs {
        num_inputs: 2,
        num_aux: n,
        a,
        b,
        c,
    };
    (r1cs, witness)
}

impl Ops<'_> {
    fn bn254_msm_g1(&self, n: usize) -> Result<Option<String>, Error> {
        let mut bases = sample::g1_points(n, self.seed);
        if n > 3 {
            bases[2] = G1Affine::default();
        }
        let s = scalars(n, self.seed + 1);
        let test = self.test.bn254_msm_g1(&bases, &s, &self.on_test())?;
        let reference = self
            .reference
            .bn254_msm_g1(&bases, &s, &Default::default())?;
        Ok(compare(test.to_affine(), reference.to_affine()))
    }

    fn bn254_msm_g2(&self, n: usize) -> Result<Option<String>, Error> {
        let mut bases = sample::g2_points(n, self.seed);
        if n > 3 {
            bases[2] = G2Affine::default();
        }
        let s = scalars(n, self.seed + 1);
        let test = self.test.bn254_msm_g2(&bases, &s, &self.on_test())?;
        let reference = self
            .reference
            .bn254_msm_g2(&bases, &s, &Default::default())?;
        Ok(compare(test.to_affine(), reference.to_affine()))
    }

    fn bn254_ntt(
        &self,
        log: u32,
        cfg: &crate::plugin::NttConfigOf<Fr>,
    ) -> Result<Option<String>, Error> {
        let input = sample::scalars(1 << log, self.seed);
        let (mut a, mut b) = (input.clone(), input);
        self.test.bn254_ntt(&mut a, cfg)?;
        let on_reference = crate::plugin::NttConfigOf {
            device: 0,
            ..cfg.clone()
        };
        self.reference.bn254_ntt(&mut b, &on_reference)?;
        Ok(first_mismatch(&a, &b))
    }

    fn bn254_quotient(&self, log: u32) -> Result<Option<String>, Error> {
        let n = 1usize << log;
        let b = sample::scalars(n, self.seed + 1);
        let mut x = sample::scalars(n, self.seed);
        let mut y = x.clone();
        self.test.bn254_quotient(&mut x, &b, self.device)?;
        self.reference.bn254_quotient(&mut y, &b, 0)?;
        Ok(first_mismatch(&x, &y))
    }

    /// One proof of the squaring chain with the same key, witness and
    /// `r, s` on both backends (each verified by the prover); with
    /// `resident`, the tested backend's MSMs take the key's queries kept
    /// on its device.
    fn bn254_whole_proof(&self, resident: bool) -> Result<Option<String>, Error> {
        let (r1cs, witness) = squaring_chain(CHAIN, self.seed);
        let key = ProvingKey::new(&r1cs, setup::setup(&r1cs, self.seed, &Silent));
        let mut rng = rng(self.seed + 2);
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let kept = match resident {
            true => ResidentQueries::upload(self.test, &key, self.device)?,
            false => None,
        };
        let (a, _) = prover::prove_with(self.test, &key, kept.as_ref(), &witness, r, s)?;
        let (b, _) = prover::prove(self.reference, &key, &witness, r, s)?;
        Ok((a.to_bytes() != b.to_bytes()).then(|| {
            format!(
                "proof bytes differ: {} vs the reference's {}",
                hex(&a.to_bytes()),
                hex(&b.to_bytes())
            )
        }))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_is_satisfied_and_a_changed_value_is_not() {
        let (r1cs, mut w) = squaring_chain(20, 3);
        assert_eq!(r1cs.first_failing_row(&w).unwrap(), None);
        w[7] = w[7].add(&Fr::one());
        assert_eq!(r1cs.first_failing_row(&w).unwrap(), Some(4));
    }
}
