//! Crosscheck: each op and one whole proof on a backend under test and on a
//! reference backend, from identical seeded inputs, compared bit for bit.
//! BLS12-381's here, BN254's in [`bn254`].

mod bn254;

use std::sync::Arc;

use crate::backend::group::{G1, G2, Group};
use crate::backend::loader::Registry;
use crate::groth16::{self, ProverBuilder};
use crate::plugin::{MsmConfig, NttConfigOf, NttDirection, NttOrder, SpmvConfig};
use crate::r1cs::R1cs;
use crate::r1cs::circuit::CircuitSource;
use crate::{Backend, Error, Fr, ScalarField, util::sample};

/// Largest op size a crosscheck takes, as log2 (the reference's naive
/// parts and the host memory bound it).
pub const MAX_LOG_SIZE: u32 = 26;

/// How one check came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Bit-identical results.
    Match,
    /// Different results: the first difference.
    Mismatch(String),
    /// The backend under test does not run this op.
    Skipped(String),
    /// An op failed.
    Failed(String),
}

/// One check: what ran, and how it came out.
#[derive(Debug, Clone)]
pub struct Check {
    /// The op and size, e.g. `msm_g1/257`, `ntt/forward/NN/2^16`.
    pub what: String,
    /// The outcome.
    pub outcome: Outcome,
}

/// What to check.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Largest op size, as log2 (at most [`MAX_LOG_SIZE`]).
    pub max_log_size: u32,
    /// Seed of the inputs and of `r, s`.
    pub seed: u64,
    /// Device of the backend under test.
    pub device: u32,
}

/// Runs BLS12-381's checks (every op, and a whole proof of `circuit`),
/// calling `report` as each finishes; returns whether all matched (skipped
/// ops count as matched).
///
/// # Errors
/// [`Error::InvalidInput`] for a size past [`MAX_LOG_SIZE`]; the backend
/// under test having no such device.
pub fn run(
    test: &Arc<Backend>,
    reference: &Arc<Backend>,
    registry: &Registry,
    circuit: &dyn CircuitSource,
    r1cs: Arc<R1cs>,
    spec: &Spec,
    report: &mut dyn FnMut(&Check),
) -> Result<bool, Error> {
    let (ops, sizes) = prepare(test, reference, spec)?;
    let mut tally = Tally::new(report);
    let mut check = |what, result| tally.check(what, result);
    for &n in &sizes {
        check(format!("msm_g1/{n}"), ops.msm::<G1>(n));
        check(format!("msm_g2/{n}"), ops.msm::<G2>(n.min(1 << 14)));
    }
    for log in [1u32, 5, spec.max_log_size] {
        for (name, cfg) in ntt_configs::<Fr>(spec.device) {
            check(format!("ntt/{name}/2^{log}"), ops.ntt(log, &cfg));
        }
    }
    check(
        format!(
            "spmv + quotient from the witness ({} {})",
            circuit.name(),
            circuit.size()
        ),
        ops.spmv(circuit, &r1cs),
    );
    check(
        format!(
            "groth16 proof bytes ({} {})",
            circuit.name(),
            circuit.size()
        ),
        ops.whole_proof(registry, circuit, r1cs),
    );
    Ok(tally.all)
}

/// Runs BN254's checks (its MSMs and NTTs, and a whole proof of a
/// squaring chain of its own), as [`run`] does BLS12-381's.
///
/// # Errors
/// As [`run`].
pub fn run_bn254(
    test: &Arc<Backend>,
    reference: &Arc<Backend>,
    spec: &Spec,
    report: &mut dyn FnMut(&Check),
) -> Result<bool, Error> {
    let (ops, sizes) = prepare(test, reference, spec)?;
    let mut tally = Tally::new(report);
    bn254::checks(&ops, &sizes, spec.max_log_size, &mut |what, result| {
        tally.check(what, result)
    });
    Ok(tally.all)
}

/// The ops of `spec` and the MSM sizes: 1, 5, 255, 2^k + 1 every fourth
/// k from 8, and 2^max.
fn prepare<'a>(
    test: &'a Arc<Backend>,
    reference: &'a Arc<Backend>,
    spec: &Spec,
) -> Result<(Ops<'a>, Vec<usize>), Error> {
    if spec.max_log_size > MAX_LOG_SIZE {
        return Err(Error::InvalidInput(format!(
            "--max-log-size {} is over the {MAX_LOG_SIZE} a crosscheck takes",
            spec.max_log_size
        )));
    }
    test.device_info(spec.device)?;
    let ops = Ops {
        test,
        reference,
        seed: spec.seed,
        device: spec.device,
    };
    let max = spec.max_log_size;
    let sizes = [1usize, 5, 255]
        .into_iter()
        .chain((8..=max).step_by(4).map(|k| (1usize << k) + 1))
        .chain([1usize << max])
        .collect();
    Ok((ops, sizes))
}

/// Outcomes told as they come, and whether all matched so far.
struct Tally<'r> {
    report: &'r mut dyn FnMut(&Check),
    all: bool,
}

impl<'r> Tally<'r> {
    fn new(report: &'r mut dyn FnMut(&Check)) -> Self {
        Tally { report, all: true }
    }

    fn check(&mut self, what: String, result: Result<Option<String>, Error>) {
        let outcome = match result {
            Ok(None) => Outcome::Match,
            Ok(Some(d)) => Outcome::Mismatch(d),
            Err(e) if crate::backend::is_unsupported(&e) => Outcome::Skipped(e.to_string()),
            Err(e) => Outcome::Failed(e.to_string()),
        };
        self.all &= matches!(outcome, Outcome::Match | Outcome::Skipped(_));
        (self.report)(&Check { what, outcome });
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

fn compare<T: PartialEq + std::fmt::Debug>(got: T, want: T) -> Option<String> {
    (got != want).then(|| format!("got {got:?}, reference {want:?}"))
}

/// Where two vectors first differ, said.
fn first_mismatch<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T]) -> Option<String> {
    got.iter().zip(want).position(|(x, y)| x != y).map(|i| {
        format!(
            "first mismatch at index {i}: got {:?}, reference {:?}",
            got[i], want[i]
        )
    })
}

/// Every order × direction × coset combination, named, on `device`.
pub fn ntt_configs<F: ScalarField>(device: u32) -> Vec<(String, NttConfigOf<F>)> {
    let mut out = Vec::new();
    for order in NttOrder::ALL {
        for direction in [NttDirection::Forward, NttDirection::Inverse] {
            for coset in [None, Some(F::from_u64(7))] {
                let name = format!(
                    "{}/{order:?}{}",
                    if direction == NttDirection::Forward {
                        "forward"
                    } else {
                        "inverse"
                    },
                    if coset.is_some() { "/coset" } else { "" }
                );
                out.push((
                    name,
                    NttConfigOf {
                        device,
                        direction,
                        order,
                        coset: coset.into(),
                        ext: Default::default(),
                    },
                ));
            }
        }
    }
    out
}

/// The two backends and the inputs' seed.
struct Ops<'a> {
    test: &'a Arc<Backend>,
    reference: &'a Arc<Backend>,
    seed: u64,
    device: u32,
}

impl Ops<'_> {
    fn on_test(&self) -> MsmConfig {
        MsmConfig {
            device: self.device,
            ..Default::default()
        }
    }

    fn msm<G: Group>(&self, n: usize) -> Result<Option<String>, Error> {
        let mut bases = G::sample(n, self.seed);
        if n > 3 {
            bases[2] = G::identity_affine();
        }
        let s = scalars(n, self.seed + 1);
        Ok(compare(
            G::to_affine(&G::msm(
                self.test,
                (&bases[..]).into(),
                &s,
                &self.on_test(),
            )?),
            G::to_affine(&G::msm(
                self.reference,
                (&bases[..]).into(),
                &s,
                &MsmConfig::default(),
            )?),
        ))
    }

    fn ntt(&self, log: u32, cfg: &NttConfigOf<Fr>) -> Result<Option<String>, Error> {
        let input = sample::scalars(1 << log, self.seed);
        let (mut a, mut b) = (input.clone(), input);
        self.test.ntt(&mut a, cfg)?;
        let on_reference = NttConfigOf {
            device: 0,
            ..cfg.clone()
        };
        self.reference.ntt(&mut b, &on_reference)?;
        Ok(first_mismatch(&a, &b))
    }

    /// The circuit's `h` from its witness over uploaded matrices, with the
    /// check, on both backends.
    fn spmv(&self, circuit: &dyn CircuitSource, r1cs: &R1cs) -> Result<Option<String>, Error> {
        let w = circuit.witness(self.seed)?;
        let log_n = groth16::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
        let run = |be: &Backend, device: u32| -> Result<Vec<Fr>, Error> {
            let handle = be.upload_r1cs(r1cs, device)?;
            let mut h = vec![Fr::ZERO; 1 << log_n];
            let cfg = SpmvConfig {
                device,
                coset: Fr::from_u64(groth16::COSET_SHIFT),
                log_n,
                check: true,
                ext: Default::default(),
            };
            let r = be.quotient_from_witness(handle, &w.inputs, &w.aux, &mut h, &cfg);
            let _ = be.drop_r1cs(handle);
            match r? {
                None => Ok(h),
                Some(row) => Err(Error::InvalidInput(format!(
                    "{}: constraint {row} fails for the witness",
                    be.name()
                ))),
            }
        };
        let (a, b) = (run(self.test, self.device)?, run(self.reference, 0)?);
        Ok(first_mismatch(&a, &b))
    }

    /// One proof with the same keys, witness and `r, s` on both backends.
    fn whole_proof(
        &self,
        registry: &Registry,
        circuit: &dyn CircuitSource,
        r1cs: Arc<R1cs>,
    ) -> Result<Option<String>, Error> {
        let params = Arc::new(groth16::setup(&r1cs, self.seed));
        let w = circuit.witness(self.seed)?;
        let mut rng = sample::rng(self.seed);
        let (r, s) = (Fr::random(&mut rng), Fr::random(&mut rng));
        let (a, _) = ProverBuilder::new(self.test.clone())
            .device(self.device)
            .cpu_fallback(registry)
            .build(params.clone(), r1cs.clone())?
            .prove(&w, r, s)?;
        let (b, _) = ProverBuilder::new(self.reference.clone())
            .build(params, r1cs)?
            .prove(&w, r, s)?;
        let differing: Vec<&str> = [("A", a.a != b.a), ("B", a.b != b.b), ("C", a.c != b.c)]
            .iter()
            .filter(|(_, d)| *d)
            .map(|(n, _)| *n)
            .collect();
        Ok(
            (!differing.is_empty())
                .then(|| format!("proof points {} differ", differing.join(", "))),
        )
    }
}
