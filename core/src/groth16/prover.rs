//! The prover pipeline over any [`Backend`]: `witness` → `spmv` →
//! `quotient` → `msm` → `assemble`. Stage names are the waterfall's.

use bellpepper_core::Circuit;
use blstrs::Scalar;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::keys::Parameters;
use super::proof::Proof;
use crate::Error;
use crate::backend::lent_buffers::{BufferPool, FrBuffer};
use crate::backend::{Backend, is_unsupported};
use crate::plugin::{BasesHandle, DeviceKind, ErrorCode, MsmConfig, R1csHandle, SpmvConfig, ops};
use crate::r1cs::{R1cs, Witness};
use crate::stage::Stage;
use crate::types::{Fr, G1Affine, G1Projective, G2Projective};
use rayon::prelude::*;

/// Wall time per stage of one proof. Stages may overlap (B in G2 beside
/// the G1 MSMs), so [`StageTimes::total`] is the wall time, not their sum.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// `(stage, time)` in the order run.
    pub stages: Vec<(Stage, Duration)>,
    /// Wall time of everything timed.
    pub wall: Duration,
}

impl StageTimes {
    /// Time of one stage (zero if it did not run).
    pub fn get(&self, s: Stage) -> Duration {
        self.stages
            .iter()
            .filter(|(t, _)| *t == s)
            .map(|(_, d)| *d)
            .sum()
    }
    /// Wall time of the proof.
    pub fn total(&self) -> Duration {
        self.wall
    }
    /// Each stage that ran, in pipeline order, as `name=12.3ms`, separated
    /// by spaces: the line a front end prints per proof.
    pub fn summary(&self) -> String {
        Stage::ALL
            .iter()
            .filter(|s| self.stages.iter().any(|(ran, _)| ran == *s))
            .map(|s| format!("{}={:.1}ms", s.name(), self.get(*s).as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(" ")
    }
    fn time<T>(&mut self, s: Stage, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        let d = t.elapsed();
        self.stages.push((s, d));
        self.wall += d;
        out
    }
}

/// The G1 MSM results of one proof.
#[derive(Clone, Copy, Debug)]
pub struct G1Sums {
    /// Σ over the A query.
    pub a: G1Projective,
    /// Σ over the B query in G1.
    pub b: G1Projective,
    /// Σ over the L query.
    pub l: G1Projective,
    /// Σ over the H query.
    pub h: G1Projective,
}

/// Where one query's bases are: resident in the backend, or the host copy.
#[derive(Debug)]
enum Query {
    Resident(BasesHandle),
    Host,
}

/// A prover bound to one key, one recorded circuit shape and one backend.
/// Bases are uploaded once (when the backend keeps resident bases) and
/// reused for every proof.
#[derive(Debug)]
pub struct Prover {
    /// The proving backend (the others, if different, are the fallback).
    primary: Arc<Backend>,
    /// The device of the proving backend that this prover is bound to.
    device: u32,
    /// The device index each op names on its backend (`device`, or 0 on
    /// the fallback): NTT, G1 MSMs, G2 MSM.
    pub(super) op_devices: [u32; 3],
    /// Runs the NTTs of the quotient.
    pub(super) ntt: Arc<Backend>,
    /// Runs the G1 MSMs.
    g1: Arc<Backend>,
    /// Runs B in G2.
    g2: Arc<Backend>,
    /// Whether `ntt` has the fused quotient op.
    pub(super) fused_quotient: bool,
    /// The matrices resident in `ntt` when SpMV and the quotient run there
    /// in one call from the witness ([`ops::SPMV`]): a, b, c never reach
    /// host memory.
    r1cs_handle: Option<R1csHandle>,
    /// Why SpMV runs on the host although the NTT backend was to run it
    /// (it refused the matrices: no room on its device).
    spmv_refused: Option<String>,
    /// Takes an MSM the chosen backend turns down at run time (e.g. a bucket
    /// over a driver limit) with an `UNSUPPORTED` error.
    fallback: Option<Arc<Backend>>,
    pub(super) params: Arc<Parameters>,
    r1cs: Arc<R1cs>,
    /// Positions in `inputs ‖ aux` whose scalars the A query takes (the
    /// density bitmaps as gather lists: every input, the aux in A).
    a_vars: Vec<u32>,
    /// The same for the B queries (G1 and G2).
    b_vars: Vec<u32>,
    /// Run the stage's MSMs side by side, each on its own thread (a GPU
    /// backend overlaps one's copies and small passes with another's
    /// kernels): set when the MSM backends are GPUs with room for eight
    /// MSMs' scratch (`msm_room`) unless turned off.
    concurrent_msms: bool,
    msm_room: bool,
    pub(super) log_n: u32,
    queries: [Query; 5], // a, b_g1, b_g2, l, h
    /// The evaluation vectors' memory, lent by `ntt` where it offers some.
    buffers: Arc<BufferPool>,
}

/// The device index a prover bound to `device` of `backend` names on `be`:
/// `device` itself, or 0 on a fallback backend (the CPU's one device).
fn device_on(backend: &Arc<Backend>, be: &Arc<Backend>, device: u32) -> u32 {
    if Arc::ptr_eq(backend, be) { device } else { 0 }
}

/// Whether `backend` can run `op` for a proof over a 2^`log_n` domain: the
/// NTTs run on the whole domain, so their size limit counts too.
fn runs(backend: &Backend, op: &str, log_n: u32) -> bool {
    let log = if op == ops::NTT { log_n } else { 0 };
    backend.capabilities().supports_size(op, log)
}

const A: usize = 0;
const B1: usize = 1;
const B2: usize = 2;
const L: usize = 3;
const H: usize = 4;

impl Prover {
    /// A prover on device 0 of `backend` with no fallback: see
    /// [`ProverBuilder`](super::ProverBuilder) for the device, the
    /// fallback backend and the other choices.
    ///
    /// # Errors
    /// As [`ProverBuilder::build`](super::ProverBuilder::build).
    pub fn new(
        backend: Arc<Backend>,
        params: Arc<Parameters>,
        r1cs: Arc<R1cs>,
    ) -> Result<Self, Error> {
        super::ProverBuilder::new(backend).build(params, r1cs)
    }

    /// Whether a prover of `r1cs` on `backend` needs a fallback backend: an
    /// op it does not declare, or NTTs past its size limit.
    pub fn needs_fallback(backend: &Backend, r1cs: &R1cs) -> bool {
        let log_n = super::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
        [ops::NTT, ops::MSM_G1, ops::MSM_G2]
            .iter()
            .any(|op| !runs(backend, op, log_n))
    }

    /// Checks that `params` fit `r1cs`, routes each op to `backend` or, when
    /// `backend` does not run it, to `fallback`, and uploads the bases to
    /// `device`, and the matrices where SpMV runs in the NTT backend
    /// (`device_spmv`: `None` where its device is a GPU; see
    /// [`ProverBuilder`](super::ProverBuilder)).
    pub(super) fn build(
        backend: Arc<Backend>,
        device: u32,
        fallback: Option<Arc<Backend>>,
        params: Arc<Parameters>,
        r1cs: Arc<R1cs>,
        device_spmv: Option<bool>,
    ) -> Result<Self, Error> {
        params.check_shape(&r1cs)?;
        let log_n = super::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
        let pick = |op: &str| -> Result<Arc<Backend>, Error> {
            if runs(&backend, op, log_n) {
                return Ok(backend.clone());
            }
            match &fallback {
                Some(f) if runs(f, op, log_n) => Ok(f.clone()),
                _ => Err(Error::InvalidInput(format!(
                    "backend `{}` does not support {op}{} and no fallback backend does",
                    backend.name(),
                    if op == ops::NTT {
                        format!(" at 2^{log_n}")
                    } else {
                        String::new()
                    }
                ))),
            }
        };
        let (ntt, g1, g2) = (pick(ops::NTT)?, pick(ops::MSM_G1)?, pick(ops::MSM_G2)?);
        let density = r1cs.density();
        let mut queries = [
            Query::Host,
            Query::Host,
            Query::Host,
            Query::Host,
            Query::Host,
        ];
        let mut uploaded: Vec<(Arc<Backend>, BasesHandle)> = Vec::new();
        let uploads: [(usize, &Arc<Backend>); 5] =
            [(A, &g1), (B1, &g1), (B2, &g2), (L, &g1), (H, &g1)];
        for (i, be) in uploads {
            if !be.capabilities().supports(ops::RESIDENT_BASES) {
                continue;
            }
            let on = device_on(&backend, be, device);
            let r = if i == B2 {
                be.upload_bases_g2(&params.b_g2, on)
            } else {
                be.upload_bases_g1(
                    [&params.a, &params.b_g1, &params.b_g1, &params.l, &params.h][i],
                    on,
                )
            };
            match r {
                Ok(h) => {
                    uploaded.push((be.clone(), h));
                    queries[i] = Query::Resident(h);
                }
                Err(e) => {
                    uploaded
                        .into_iter()
                        .for_each(|(be, h)| drop(be.drop_bases(h)));
                    return Err(e);
                }
            }
        }
        let buffers = BufferPool::new(&ntt);
        let mut prover = Prover {
            device,
            op_devices: [&ntt, &g1, &g2].map(|be| device_on(&backend, be, device)),
            primary: backend.clone(),
            fused_quotient: ntt.capabilities().supports_size(ops::QUOTIENT, log_n),
            r1cs_handle: None,
            ntt,
            g1,
            g2,
            fallback,
            params,
            a_vars: gather_list(&vec![true; r1cs.num_inputs], &density.a_aux),
            b_vars: gather_list(&density.b_input, &density.b_aux),
            r1cs,
            log_n,
            queries,
            buffers,
            concurrent_msms: false,
            msm_room: false,
            spmv_refused: None,
        };
        let room = 8 * prover.msm_device_bytes().0;
        let roomy_gpu = |be: &Arc<Backend>| {
            be.info()
                .devices
                .get(device_on(&backend, be, device) as usize)
                .is_some_and(|d| d.kind == DeviceKind::Gpu && d.memory_bytes >= room)
        };
        prover.msm_room = roomy_gpu(&prover.g1) && roomy_gpu(&prover.g2);
        prover.concurrent_msms = prover.msm_room;
        // On a host backend the matrices would be a second copy in the
        // same memory, for no gain: there it is asked for, not assumed.
        let ntt_device = prover.op_devices[0];
        let on_gpu = prover
            .ntt
            .info()
            .devices
            .get(ntt_device as usize)
            .is_some_and(|d| d.kind == DeviceKind::Gpu);
        if device_spmv.unwrap_or(on_gpu)
            && prover.params.h_query == super::HQuery::TauPowers
            && prover.ntt.capabilities().supports_size(ops::SPMV, log_n)
        {
            // On failure `prover`'s drop frees the bases. A device without
            // room for the matrices still proves, with SpMV on the host.
            match prover.ntt.upload_r1cs(&prover.r1cs, ntt_device) {
                Ok(handle) => prover.r1cs_handle = Some(handle),
                Err(e) if is_unsupported(&e) || e.code() == Some(ErrorCode::OUT_OF_MEMORY) => {
                    prover.spmv_refused = Some(e.to_string());
                }
                Err(e) => return Err(e),
            }
        }
        Ok(prover)
    }

    /// The device index this prover's backend ops name.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// The recorded circuit this prover proves.
    pub fn r1cs(&self) -> &R1cs {
        &self.r1cs
    }

    /// The key this prover proves with.
    pub fn params(&self) -> &Parameters {
        &self.params
    }

    /// A line saying which ops run on the fallback backend instead of the
    /// proving one, if any do.
    pub fn fallback_note(&self) -> Option<String> {
        let spmv = self.spmv_refused.as_ref().map(|why| {
            format!(
                "backend `{}` refused the matrices ({why}): SpMV runs on the host",
                self.ntt.name()
            )
        });
        match (spmv, self.ops_fallback_note()) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }

    /// Which ops the fallback backend runs instead of the proving one.
    fn ops_fallback_note(&self) -> Option<String> {
        let fallback = self.fallback.as_ref()?;
        let moved: Vec<&str> = [
            (ops::NTT, &self.ntt),
            (ops::MSM_G1, &self.g1),
            (ops::MSM_G2, &self.g2),
        ]
        .into_iter()
        .filter(|(_, be)| !Arc::ptr_eq(be, &self.primary))
        .map(|(op, _)| op)
        .collect();
        (!moved.is_empty()).then(|| {
            format!(
                "backend `{}` does not run {} (unsupported, or past its size limit): \
                 the {} backend runs them",
                self.primary.name(),
                moved.join(", "),
                fallback.name()
            )
        })
    }

    /// Which backend runs each op: `(op, backend name)`.
    pub fn routing(&self) -> [(&'static str, &str); 3] {
        [
            (ops::NTT, self.ntt.name()),
            (ops::MSM_G1, self.g1.name()),
            (ops::MSM_G2, self.g2.name()),
        ]
    }

    /// Host bytes one proof holds at its peak: the witness, the three
    /// domain-sized evaluation vectors (none where SpMV runs in the
    /// backend: only `h` comes back) and the MSM scalar copies (for
    /// admission by memory budget).
    pub fn partition_bytes(&self) -> u64 {
        let n = 1u64 << self.log_n;
        let vars = (self.r1cs.num_inputs + self.r1cs.num_aux) as u64;
        let vectors = if self.device_spmv() { 1 } else { 4 };
        32 * (2 * vars + vectors * n)
    }

    /// Whether SpMV and the quotient run in the NTT backend, from the
    /// witness, over matrices resident there ([`Prover::quotient_from_witness`]).
    pub fn device_spmv(&self) -> bool {
        self.r1cs_handle.is_some()
    }

    /// Device bytes this prover's device stages need at their peak besides
    /// the resident bases, as its backends declare them
    /// ([`Capabilities::scratch_bytes`](crate::plugin::Capabilities::scratch_bytes)):
    /// the larger of the quotient's and the MSM stage's (five MSMs when
    /// they run side by side). 0 for host backends.
    pub fn partition_device_bytes(&self) -> u64 {
        let n = 1u64 << self.log_n;
        let quotient = if self.device_spmv() {
            self.ntt.capabilities().scratch_bytes(ops::SPMV, n)
        } else if self.fused_quotient {
            self.ntt.capabilities().scratch_bytes(ops::QUOTIENT, n)
        } else {
            // a, b, c stay on the host; one NTT at a time on the device.
            self.ntt.capabilities().scratch_bytes(ops::NTT, n)
        };
        let (g1, g2) = self.msm_device_bytes();
        let msm = if self.concurrent_msms {
            4 * g1 + g2
        } else {
            g1.max(g2)
        };
        quotient.max(msm)
    }

    /// Device scratch of one G1 and of the G2 MSM of this prover.
    fn msm_device_bytes(&self) -> (u64, u64) {
        let n = 1u64 << self.log_n;
        let m = n.max((self.r1cs.num_inputs + self.r1cs.num_aux) as u64);
        (
            self.g1.capabilities().scratch_bytes(ops::MSM_G1, m),
            self.g2.capabilities().scratch_bytes(ops::MSM_G2, m),
        )
    }

    /// Memory of the device the MSMs run on left for proofs: what its
    /// backend reports, less the bases and the R1CS matrices this prover
    /// keeps resident there (0: unknown).
    pub fn device_memory(&self) -> u64 {
        let total = self
            .g1
            .info()
            .devices
            .get(self.device as usize)
            .map_or(0, |d| d.memory_bytes);
        let p = &*self.params;
        let bytes = [
            std::mem::size_of_val(&p.a[..]),
            std::mem::size_of_val(&p.b_g1[..]),
            std::mem::size_of_val(&p.b_g2[..]),
            std::mem::size_of_val(&p.l[..]),
            std::mem::size_of_val(&p.h[..]),
        ];
        let resident: u64 = [A, B1, B2, L, H]
            .into_iter()
            .filter(|&q| matches!(self.queries[q], Query::Resident(_)))
            .filter(|&q| q != B2 || Arc::ptr_eq(&self.g2, &self.g1))
            .map(|q| bytes[q] as u64)
            .sum();
        let matrices = match self.r1cs_handle {
            Some(_) if Arc::ptr_eq(&self.ntt, &self.g1) => self.r1cs.as_seam().bytes(),
            _ => 0,
        };
        total.saturating_sub(resident + matrices)
    }

    /// One G1 MSM on this prover's backend, or on `on` from host bases.
    fn g1(
        &self,
        on: Option<&Backend>,
        q: usize,
        host: &[G1Affine],
        scalars: &[Fr],
    ) -> Result<G1Projective, Error> {
        let here = self.msm_config();
        let elsewhere = MsmConfig::default();
        let r = match (on, &self.queries[q]) {
            (Some(be), _) => return be.msm_g1(host, scalars, &elsewhere),
            (None, Query::Resident(h)) => self.g1.msm_g1(*h, scalars, &here),
            (None, Query::Host) => self.g1.msm_g1(host, scalars, &here),
        };
        match (r, &self.fallback) {
            (Err(e), Some(f)) if is_unsupported(&e) => f.msm_g1(host, scalars, &elsewhere),
            (r, _) => r,
        }
    }

    /// Synthesizes `circuit` (witness only) and proves it.
    ///
    /// # Errors
    /// [`Error::Synthesis`], or as [`Prover::prove`].
    pub fn prove_circuit<C: Circuit<Scalar>>(
        &self,
        circuit: C,
        r: Fr,
        s: Fr,
    ) -> Result<(Proof, Witness, StageTimes), Error> {
        let mut times = StageTimes::default();
        let witness = times.time(Stage::Witness, || Witness::generate(circuit))?;
        let (proof, rest) = self.prove(&witness, r, s)?;
        times.stages.extend(rest.stages);
        times.wall += rest.wall;
        Ok((proof, witness, times))
    }

    /// Proves a witness of the recorded circuit with blinding `r, s`: the
    /// stages below, in order, on this prover's backend.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a witness of another shape or one that
    /// does not satisfy the circuit (checked on `spmv`'s result, before any
    /// device work: its proof could not verify); backend errors.
    pub fn prove(&self, w: &Witness, r: Fr, s: Fr) -> Result<(Proof, StageTimes), Error> {
        let mut times = StageTimes::default();
        let h = if self.device_spmv() {
            // One backend call: its span is the spmv stage's.
            times.time(Stage::Spmv, || self.quotient_from_witness(w, true))?
        } else {
            let abc = times.time(Stage::Spmv, || {
                let abc = self.spmv(w)?;
                let m = self.r1cs.num_constraints();
                match crate::r1cs::first_unsatisfied_row(abc.each_ref().map(|v| &v[..m])) {
                    None => Ok(abc),
                    Some(row) => Err(unsatisfied(row)),
                }
            })?;
            times.time(Stage::Quotient, || self.quotient(abc))?
        };
        let t0 = Instant::now();
        let mut spans = Vec::new();
        let msms = self.msm_stage(w, &h, true, &mut |s, a, b| spans.push((s, b - a)));
        times.stages.extend(spans);
        times.wall += t0.elapsed();
        let (g1, b_g2) = msms?;
        let b_g2 = b_g2.expect("asked for");
        let proof = times.time(Stage::Assemble, || self.assemble(&g1, &b_g2, r, s));
        Ok((proof, times))
    }

    /// Runs the device stages once on zeros, so that the first proof finds
    /// the device's tables, buffers and kernels made (a first quotient
    /// otherwise pays for making them). Meant to run beside the first
    /// witness's synthesis, which
    /// needs only the host; a no-op where the quotient's NTTs run on the
    /// host (there it would compete with the synthesis).
    ///
    /// # Errors
    /// Backend errors (a real proof meets the same ones).
    pub fn warm_up(&self) -> Result<(), Error> {
        let device = self.op_devices[0] as usize;
        let on_gpu = self
            .ntt
            .info()
            .devices
            .get(device)
            .is_some_and(|d| d.kind == DeviceKind::Gpu);
        if !on_gpu {
            return Ok(());
        }
        let r1cs = &self.r1cs;
        let mut inputs = vec![Fr::ZERO; r1cs.num_inputs];
        inputs[0] = Fr::one();
        let w = Witness {
            inputs,
            aux: vec![Fr::ZERO; r1cs.num_aux],
        };
        let h = if self.device_spmv() {
            self.quotient_from_witness(&w, false)?
        } else {
            let n = 1usize << self.log_n;
            self.quotient([(); 3].map(|_| self.buffers.take_zeroed(n)))?
        };
        self.msm_stage(&w, &h, true, &mut |_, _, _| {})?;
        Ok(())
    }

    /// Stage `spmv`: `[A·w, B·w, C·w]` over the whole domain, in this
    /// prover's buffers: the constraints' rows, then bellman's extra rows
    /// `input_i · 1 = 0` (in A), then zeros.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a witness of another shape.
    pub fn spmv(&self, w: &Witness) -> Result<[FrBuffer; 3], Error> {
        let n = 1usize << self.log_n;
        let mut abc = [(); 3].map(|_| self.buffers.take(n));
        let [a, b, c] = &mut abc;
        self.r1cs
            .domain_evaluations_into(&w.inputs, &w.aux, [a, b, c])?;
        Ok(abc)
    }

    /// Makes the host evaluation vectors of `partitions` partitions in
    /// flight now rather than in their first proofs (see
    /// [`BufferPool::reserve`]): A·w, B·w, C·w, or only `h` where SpMV
    /// runs on the device.
    pub fn reserve_buffers(&self, partitions: usize) {
        let per_partition = if self.r1cs_handle.is_some() { 1 } else { 3 };
        self.buffers
            .reserve(per_partition * partitions, 1usize << self.log_n);
    }

    /// Stages `spmv` and `quotient` in one call of the NTT backend, over
    /// the matrices resident there: `h`'s n − 1 coefficients, as
    /// [`Prover::spmv`] then [`Prover::quotient`] give them, with `a, b, c`
    /// kept inside the backend. With `check`, a witness that does not
    /// satisfy the circuit is refused as [`Prover::prove`] refuses it.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when this prover has no resident matrices
    /// ([`Prover::device_spmv`]), for a witness of another shape, or an
    /// unsatisfied constraint; backend errors.
    pub fn quotient_from_witness(&self, w: &Witness, check: bool) -> Result<FrBuffer, Error> {
        let handle = self.r1cs_handle.ok_or_else(|| {
            Error::InvalidInput(format!(
                "this prover runs SpMV on the host: backend `{}` holds no matrices for it",
                self.ntt.name()
            ))
        })?;
        self.r1cs.check_witness(w)?;
        let n = 1usize << self.log_n;
        let mut h = self.buffers.take(n);
        let cfg = SpmvConfig {
            device: self.op_devices[0],
            coset: Fr::from_u64(super::COSET_SHIFT),
            log_n: self.log_n,
            check,
            ext: Default::default(),
        };
        match self
            .ntt
            .quotient_from_witness(handle, &w.inputs, &w.aux, &mut h, &cfg)?
        {
            Some(row) => Err(unsatisfied(row as usize)),
            None => {
                h.truncate(n - 1);
                Ok(h)
            }
        }
    }

    /// The pool the evaluation vectors come from (its idle blocks are
    /// memory this prover keeps between proofs).
    pub fn buffers(&self) -> &BufferPool {
        &self.buffers
    }

    /// Stage `msm`, G1 part: the A, B₁, L and H sums (on this prover's backend).
    ///
    /// # Errors
    /// Backend errors (an `OutOfMemory` among them).
    pub fn msm_g1(&self, w: &Witness, h: &[Fr]) -> Result<G1Sums, Error> {
        self.msm_g1_on(None, w, h)
    }

    /// [`Prover::msm_g1`] on `on` from host bases when given (a host
    /// fallback after the device ran out of memory).
    ///
    /// # Errors
    /// Backend errors.
    pub fn msm_g1_on(&self, on: Option<&Backend>, w: &Witness, h: &[Fr]) -> Result<G1Sums, Error> {
        let a_scalars = self.gather(w, &self.a_vars);
        let b_scalars = self.gather(w, &self.b_vars);
        self.g1_sums(on, w, h, &a_scalars, &b_scalars)
    }

    /// The A query's and the B queries' scalars, in this prover's buffers
    /// (after the quotient, B·w's and C·w's: the gathers add no memory).
    fn gather(&self, w: &Witness, vars: &[u32]) -> FrBuffer {
        let mut out = self.buffers.take(vars.len());
        gather_into(w, vars, &mut out);
        out
    }

    /// The G1 sums, given the A and B scalars.
    fn g1_sums(
        &self,
        on: Option<&Backend>,
        w: &Witness,
        h: &[Fr],
        a_scalars: &[Fr],
        b_scalars: &[Fr],
    ) -> Result<G1Sums, Error> {
        let p = &*self.params;
        let [a, b, l, h] = self.side_by_side(
            on.is_none(),
            [
                &|| self.g1(on, A, &p.a, a_scalars),
                &|| self.g1(on, B1, &p.b_g1, b_scalars),
                &|| self.g1(on, L, &p.l, &w.aux),
                &|| self.g1(on, H, &p.h, h),
            ],
        );
        Ok(G1Sums {
            a: a?,
            b: b?,
            l: l?,
            h: h?,
        })
    }

    /// The stage's MSMs on this prover's backends, B in G2 too when asked,
    /// side by side where [`Prover`] found room for that. `rec` gets the
    /// spans of the G1 part (`msm`) and of B in G2 (`msm_g2`), failed ones
    /// included, for a waterfall.
    ///
    /// # Errors
    /// Backend errors.
    pub fn msm_stage(
        &self,
        w: &Witness,
        h: &[Fr],
        with_b_g2: bool,
        rec: &mut dyn FnMut(Stage, Instant, Instant),
    ) -> Result<(G1Sums, Option<G2Projective>), Error> {
        let t0 = Instant::now();
        // B's scalars serve both groups: gathered once.
        let (a_scalars, b_scalars) = (self.gather(w, &self.a_vars), self.gather(w, &self.b_vars));
        let timed_g2 = || {
            let t0 = Instant::now();
            (self.b_g2_sum(&b_scalars), t0, Instant::now())
        };
        if !(self.concurrent_msms && with_b_g2) {
            let g1 = self.g1_sums(None, w, h, &a_scalars, &b_scalars);
            rec(Stage::Msm, t0, Instant::now());
            let g1 = g1?;
            let g2 = if with_b_g2 {
                let (g2, t0, t1) = timed_g2();
                rec(Stage::MsmG2, t0, t1);
                Some(g2?)
            } else {
                None
            };
            return Ok((g1, g2));
        }
        std::thread::scope(|s| {
            let g2 = s.spawn(timed_g2);
            let g1 = self.g1_sums(None, w, h, &a_scalars, &b_scalars);
            rec(Stage::Msm, t0, Instant::now());
            let (g2, t0, t1) = g2
                .join()
                .expect("B in G2 does not panic: backend calls are guarded");
            rec(Stage::MsmG2, t0, t1);
            Ok((g1?, Some(g2?)))
        })
    }

    /// Allows side-by-side MSMs (the default where the backends have room
    /// for them) or turns them off: a scheduler whose partitions already
    /// share the device (`device_lock=op`) fills it better without them
    /// (docs/bench-log.md, "Device workers side by side").
    pub fn allow_msms_side_by_side(&mut self, allow: bool) {
        self.concurrent_msms = allow && self.msm_room;
    }

    /// Runs `jobs` one after another, or each on its own thread when
    /// `allowed` and this prover runs MSMs side by side.
    fn side_by_side<T: Send, const K: usize>(
        &self,
        allowed: bool,
        jobs: [&(dyn Fn() -> T + Sync); K],
    ) -> [T; K] {
        if !(allowed && self.concurrent_msms) {
            return jobs.map(|f| f());
        }
        std::thread::scope(|s| {
            jobs.map(|f| s.spawn(f)).map(|t| {
                t.join()
                    .expect("MSMs do not panic: backend calls are guarded")
            })
        })
    }

    /// Stage `msm`, G2 part: B in G2 on this prover's backend.
    ///
    /// # Errors
    /// Backend errors.
    pub fn msm_b_g2(&self, w: &Witness) -> Result<G2Projective, Error> {
        self.b_g2_sum(&self.gather(w, &self.b_vars))
    }

    /// B in G2 over the gathered B scalars.
    fn b_g2_sum(&self, scalars: &[Fr]) -> Result<G2Projective, Error> {
        let cfg = MsmConfig {
            device: self.op_devices[2],
            ..Default::default()
        };
        let r = match self.queries[B2] {
            Query::Resident(h) => self.g2.msm_g2(h, scalars, &cfg),
            Query::Host => self.g2.msm_g2(&self.params.b_g2[..], scalars, &cfg),
        };
        match (r, &self.fallback) {
            (Err(e), Some(f)) if is_unsupported(&e) => {
                f.msm_g2(&self.params.b_g2[..], scalars, &MsmConfig::default())
            }
            (r, _) => r,
        }
    }

    /// The MSM settings of this prover's G1 backend: its device.
    fn msm_config(&self) -> MsmConfig {
        MsmConfig {
            device: self.op_devices[1],
            ..Default::default()
        }
    }

    /// B in G2 on another backend (e.g. a CPU pool while the GPU runs the G1
    /// MSMs: the split start/finalize of a proving daemon), from host bases.
    ///
    /// # Errors
    /// Backend errors.
    pub fn msm_b_g2_on(&self, backend: &Backend, w: &Witness) -> Result<G2Projective, Error> {
        backend.msm_g2(
            &self.params.b_g2[..],
            &self.gather(w, &self.b_vars),
            &MsmConfig::default(),
        )
    }

    /// Stage `assemble`: adds the blinding terms.
    pub fn assemble(&self, g1: &G1Sums, b_g2: &G2Projective, r: Fr, s: Fr) -> Proof {
        let vk = &self.params.vk;
        let delta_g1 = G1Projective::from(vk.delta_g1);
        let g_a = G1Projective::from(vk.alpha_g1)
            .add(&g1.a)
            .add(&delta_g1.mul(&r));
        let g_b = G2Projective::from(vk.beta_g2)
            .add(b_g2)
            .add(&G2Projective::from(vk.delta_g2).mul(&s));
        let g_b1 = G1Projective::from(vk.beta_g1)
            .add(&g1.b)
            .add(&delta_g1.mul(&s));
        let g_c =
            g1.l.add(&g1.h)
                .add(&g_a.mul(&s))
                .add(&g_b1.mul(&r))
                .add(&delta_g1.mul(&r.mul(&s)).neg());
        Proof {
            a: g_a.to_affine(),
            b: g_b.to_affine(),
            c: g_c.to_affine(),
        }
    }
}

/// The error of a witness whose constraint `row` fails.
fn unsatisfied(row: usize) -> Error {
    Error::InvalidInput(format!(
        "the witness does not satisfy the circuit: constraint {row} fails"
    ))
}

impl Drop for Prover {
    fn drop(&mut self) {
        if let Some(h) = self.r1cs_handle {
            let _ = self.ntt.drop_r1cs(h);
        }
        for (i, q) in self.queries.iter().enumerate() {
            if let Query::Resident(h) = q {
                let _ = if i == B2 { &self.g2 } else { &self.g1 }.drop_bases(*h);
            }
        }
    }
}

/// Positions in `inputs ‖ aux` of the variables set in `inputs` then `aux`.
fn gather_list(inputs: &[bool], aux: &[bool]) -> Vec<u32> {
    inputs
        .iter()
        .chain(aux)
        .enumerate()
        .filter(|(_, set)| **set)
        .map(|(i, _)| i as u32)
        .collect()
}

/// The scalars at `vars` (positions in `inputs ‖ aux`) into `out`, on the
/// rayon pool: on one thread the gather was a large share of a GPU's MSM
/// stage.
fn gather_into(w: &Witness, vars: &[u32], out: &mut [Fr]) {
    let split = w.inputs.len();
    out.par_iter_mut()
        .zip(vars)
        .with_min_len(1 << 14)
        .for_each(|(o, &i)| {
            let i = i as usize;
            *o = if i < split {
                w.inputs[i]
            } else {
                w.aux[i - split]
            };
        });
}
