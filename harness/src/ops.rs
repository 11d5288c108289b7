//! The field ops timed per size: the NTT and Groth16's quotient.

use std::ops::RangeInclusive;
use std::sync::Arc;
use zkpipe_core::backend::lent_buffers::BufferPool;
use zkpipe_core::plugin::{NttConfig, NttDirection, NttOrder, QuotientConfig, ops};
use zkpipe_core::{Backend, Curve, Error, Fr, util::sample};

use crate::report::{Report, Sink, measure, row};

/// The sizes and runs of an op bench, and where it runs.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Sizes as log2, inclusive.
    pub log_sizes: RangeInclusive<u32>,
    /// Timed runs per size, after one warm-up (at most 3 where the warm-up
    /// takes over 5 s).
    pub runs: u32,
    /// The backend's device.
    pub device: u32,
    /// Seed of the random inputs.
    pub seed: u64,
    /// The curve whose ops are timed.
    pub curve: Curve,
}

impl Sizes {
    /// The largest size's element count.
    pub(crate) fn max(&self) -> usize {
        1usize << self.log_sizes.end()
    }

    /// Refuses sizes whose inputs cannot fit this machine's memory
    /// (`bytes_per_element` for the largest size), before any work.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the op, the size and what is missing.
    pub fn check_fits(&self, op: &str, bytes_per_element: u64) -> Result<(), Error> {
        let log = *self.log_sizes.end();
        zkpipe_core::util::machine::check_memory(
            &format!("bench {op} at 2^{log}"),
            bytes_per_element.saturating_mul(1u64 << log),
        )
    }
}

/// The NTT asked for.
#[derive(Debug, Clone, Copy)]
pub struct NttRequest {
    /// Inverse transform.
    pub inverse: bool,
    /// On the coset 7·⟨ω⟩ (bellperson's shift).
    pub coset: bool,
    /// Input/output orders.
    pub order: NttOrder,
    /// Values in host memory the backend lends (page-locked for a GPU) instead of the heap.
    pub lent: bool,
}

/// Times the NTT on `be` for each size.
///
/// # Errors
/// A size that does not fit memory, `lent` of a backend that lends none,
/// or the backend's.
pub fn ntt(
    be: &Arc<Backend>,
    sizes: &Sizes,
    req: NttRequest,
    sink: &mut dyn Sink,
) -> Result<Report, Error> {
    if sizes.curve == Curve::Bn254 {
        return crate::bn254::ntt(be, sizes, req, sink);
    }
    // Input, the working copy, twiddles.
    sizes.check_fits("ntt", 3 * 32)?;
    let pool = buffer_pool(be, req.lent)?;
    let cfg = NttConfig {
        device: sizes.device,
        direction: if req.inverse {
            NttDirection::Inverse
        } else {
            NttDirection::Forward
        },
        order: req.order,
        coset: req.coset.then(|| Fr::from_u64(7)).into(),
        ext: Default::default(),
    };
    let name = format!(
        "ntt {}{} {:?}{}",
        if req.inverse { "inverse" } else { "forward" },
        if req.coset { " coset" } else { "" },
        req.order,
        memory_note(req.lent)
    );
    let mut report = Report::new(be, sizes.device, name, None)?;
    sink.header(&report);
    let input = sample::scalars(sizes.max(), sizes.seed);
    for log in sizes.log_sizes.clone() {
        let n = 1usize << log;
        // Each run transforms the previous output: as random as the input, no copy timed.
        let mut buf = pool.take(n);
        buf.copy_from_slice(&input[..n]);
        let times = measure(sizes.runs, &mut [&mut || be.ntt(&mut buf, &cfg)])?.remove(0);
        let r = row(log, &times, None);
        sink.row(&r);
        report.rows.push(r);
    }
    Ok(report)
}

/// Times Groth16's quotient h from a, b, c on `be` for each size: the
/// fused op where the backend has it, else the prover's seven NTTs on it.
/// `lent`: a, b, c in host memory the backend lends, as in a proof.
///
/// # Errors
/// As [`ntt`].
pub fn quotient(
    be: &Arc<Backend>,
    sizes: &Sizes,
    lent: bool,
    sink: &mut dyn Sink,
) -> Result<Report, Error> {
    if sizes.curve != Curve::Bls12_381 {
        return Err(Error::InvalidInput(format!(
            "bench quotient is BLS12-381 only for now, not {}",
            sizes.curve
        )));
    }
    // a, b, c and their copies.
    sizes.check_fits("quotient", 6 * 32)?;
    let fused = be.capabilities().supports(ops::QUOTIENT);
    let name = if fused {
        "quotient (fused op)"
    } else {
        "quotient (7 NTT calls + host pointwise)"
    };
    let pool = buffer_pool(be, lent)?;
    let name = format!("{name}{}", memory_note(lent));
    let mut report = Report::new(be, sizes.device, name, None)?;
    sink.header(&report);
    let inputs: Vec<Vec<Fr>> = (0..3)
        .map(|i| sample::scalars(sizes.max(), sizes.seed.wrapping_add(i)))
        .collect();
    let g = Fr::from_u64(7);
    for log in sizes.log_sizes.clone() {
        let n = 1usize << log;
        let [mut a, b, c] = [0, 1, 2].map(|i| {
            let mut v = pool.take(n);
            v.copy_from_slice(&inputs[i][..n]);
            v
        });
        let (b, c) = (&b[..], &c[..]);
        let times = measure(
            sizes.runs,
            // Each run takes the previous run's h as its a (as random as
            // the input; no host copy in the timing).
            &mut [&mut || {
                if fused {
                    let cfg = QuotientConfig {
                        device: sizes.device,
                        coset: g,
                        ext: Default::default(),
                    };
                    be.quotient(&mut a, b, c, &cfg)
                } else {
                    let (mut b, mut c) = (b.to_vec(), c.to_vec());
                    zkpipe_core::groth16::quotient_by_ntts(
                        be,
                        &mut a,
                        &mut b,
                        &mut c,
                        g,
                        sizes.device,
                    )
                }
            }],
        )?
        .remove(0);
        let r = row(log, &times, None);
        sink.row(&r);
        report.rows.push(r);
    }
    Ok(report)
}

/// Where a bench's vectors live: memory `be` lends (`lent`), else the heap.
///
/// # Errors
/// [`Error::InvalidInput`] when `lent` is asked of a backend that lends none.
fn buffer_pool(be: &Arc<Backend>, lent: bool) -> Result<Arc<BufferPool>, Error> {
    if !lent {
        return Ok(BufferPool::heap());
    }
    if !be.capabilities().supports(ops::HOST_MEMORY) {
        return Err(Error::InvalidInput(format!(
            "--lent: backend `{}` lends no host memory (no `{}` op)",
            be.name(),
            ops::HOST_MEMORY
        )));
    }
    Ok(BufferPool::new(be))
}

fn memory_note(lent: bool) -> &'static str {
    if lent {
        ", values in lent host memory"
    } else {
        ""
    }
}
