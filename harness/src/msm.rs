//! G1/G2 MSMs on a backend, optionally against blst called directly.

use zkpipe_core::backend::group::{G1, G2, Group};
use zkpipe_core::backend::msm_split::{self, SplitBases, SplitSource};
use zkpipe_core::plugin::MsmConfig;
use zkpipe_core::{Backend, Curve, Error, Fr, G1Affine, G2Affine, util::sample};

use crate::ops::Sizes;
use crate::report::{Report, Sink, measure, row};

/// The curve group of an MSM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsmGroup {
    G1,
    G2,
}

/// The MSM asked for.
#[derive(Debug, Clone)]
pub struct MsmRequest {
    pub group: MsmGroup,
    /// Upload each size's bases once and time MSMs on the resident set.
    pub resident: bool,
    /// Cut each MSM over these devices: one contiguous piece of the points
    /// per device, the sums added on the host. Empty: the one device of
    /// [`Sizes`].
    pub split_devices: Vec<u32>,
    /// Also time the curve's library called directly (`blst`'s Pippenger
    /// for BLS12-381, `halo2curves`' for BN254: no plugin in between) and
    /// report the plugin's overhead.
    pub baseline: Option<String>,
    /// Scalars 0 or 1 (a SHA-256 or PoRep witness's shape) instead of
    /// uniformly random.
    pub bit_scalars: bool,
}

/// Times the MSM on `be` for each size.
///
/// # Errors
/// A size that does not fit memory, or the backend's.
pub fn msm(
    be: &Backend,
    sizes: &Sizes,
    req: &MsmRequest,
    sink: &mut dyn Sink,
) -> Result<Report, Error> {
    let library = match sizes.curve {
        Curve::Bls12_381 => "blst",
        Curve::Bn254 => "halo2curves",
    };
    if let Some(b) = req.baseline.as_deref().filter(|b| *b != library) {
        return Err(Error::InvalidInput(format!(
            "--baseline {b} is not a {} library",
            sizes.curve
        )));
    }
    if sizes.curve == Curve::Bn254 {
        return crate::bn254::msm(be, sizes, req, sink);
    }
    // Bases (and a resident copy), scalars, Pippenger's buckets.
    let g1 = req.group == MsmGroup::G1;
    let per_point = if g1 { 3 * 96 + 32 } else { 3 * 192 + 32 };
    sizes.check_fits("msm", per_point)?;
    let name = format!(
        "msm_{}{}{}{}",
        if g1 { "g1" } else { "g2" },
        if req.resident {
            " (resident bases)"
        } else {
            ""
        },
        if req.bit_scalars {
            " (bit scalars)"
        } else {
            ""
        },
        if req.split_devices.is_empty() {
            String::new()
        } else {
            format!(" (split over devices {:?})", req.split_devices)
        }
    );
    let baseline = req
        .baseline
        .is_some()
        .then_some("blst MultiPoint::mult, scalars converted from Fr in parallel");
    let mut report = Report::new(be, sizes.device, name, baseline)?;
    sink.header(&report);
    if g1 {
        timed::<G1>(be, sizes, req, &mut report, sink)?;
    } else {
        timed::<G2>(be, sizes, req, &mut report, sink)?;
    }
    Ok(report)
}

/// A group's MSM through blst directly: the baseline without a plugin.
trait BlstBaseline: Group {
    fn blst_direct(bases: &[Self::Affine], scalar_bytes: &[u8]);
}

impl BlstBaseline for G1 {
    fn blst_direct(bases: &[G1Affine], scalar_bytes: &[u8]) {
        use blst::MultiPoint;
        let _ = G1Affine::slice_as_blst(bases).mult(scalar_bytes, 255);
    }
}

impl BlstBaseline for G2 {
    fn blst_direct(bases: &[G2Affine], scalar_bytes: &[u8]) {
        use blst::MultiPoint;
        let _ = G2Affine::slice_as_blst(bases).mult(scalar_bytes, 255);
    }
}

/// Bases kept for one size: on one device, or cut over several.
enum Held {
    One(zkpipe_core::plugin::BasesHandle),
    Split(SplitBases),
}

/// Canonical little-endian scalar bytes, as blst's Pippenger reads them.
fn scalar_bytes(scalars: &[Fr]) -> Vec<u8> {
    use rayon::prelude::*;
    let mut out = vec![0u8; scalars.len() * 32];
    out.par_chunks_mut(32)
        .zip(scalars)
        .for_each(|(o, s)| o.copy_from_slice(&s.to_bytes_le()));
    out
}

fn timed<G: BlstBaseline>(
    be: &Backend,
    sizes: &Sizes,
    req: &MsmRequest,
    report: &mut Report,
    sink: &mut dyn Sink,
) -> Result<(), Error> {
    let (c, resident, split, baseline) = (
        sizes,
        req.resident,
        &req.split_devices[..],
        req.baseline.is_some(),
    );
    let max = sizes.max();
    let bits = req.bit_scalars;
    eprintln!(
        "generating {max} random bases and {} (seed {}) …",
        if bits {
            "bit scalars (0 or 1)"
        } else {
            "scalars"
        },
        c.seed
    );
    let bases = G::sample(max, c.seed);
    let mut scalars = sample::scalars(max, c.seed.wrapping_add(1));
    if bits {
        let bit = |s: &Fr| {
            if s.limbs[0] & 1 == 1 {
                Fr::one()
            } else {
                Fr::ZERO
            }
        };
        scalars.iter_mut().for_each(|s| *s = bit(s));
    }
    let cfg = MsmConfig {
        device: c.device,
        ..Default::default()
    };
    for log in c.log_sizes.clone() {
        let n = 1usize << log;
        let (b, s) = (&bases[..n], &scalars[..n]);
        // A set of each size, as a key's query is: a backend may shape
        // what it keeps (precomputed multiples) by the set's size.
        let held = if resident {
            let t = std::time::Instant::now();
            let h = if split.is_empty() {
                Held::One(G::upload(be, b, c.device)?)
            } else {
                Held::Split(SplitBases::upload::<G>(be, b, split)?)
            };
            eprintln!(
                "2^{log} bases resident in {:.1} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
            Some(h)
        } else {
            None
        };
        let mut run_backend = || match (&held, split.is_empty()) {
            (Some(Held::One(h)), _) => G::msm(be, (*h).into(), s, &cfg).map(|_| ()),
            (Some(Held::Split(sb)), _) => {
                msm_split::msm::<G>(be, SplitSource::Resident(sb), s).map(|_| ())
            }
            (None, true) => G::msm(be, b.into(), s, &cfg).map(|_| ()),
            (None, false) => msm_split::msm::<G>(be, SplitSource::Host(b, split), s).map(|_| ()),
        };
        // The direct call pays the Fr → bytes conversion too, as any caller holding Fr would.
        let mut run_blst = || {
            G::blst_direct(b, &scalar_bytes(s));
            Ok(())
        };
        let mut times = if baseline {
            measure(c.runs, &mut [&mut run_backend, &mut run_blst])?
        } else {
            measure(c.runs, &mut [&mut run_backend])?
        };
        match held {
            Some(Held::One(h)) => be.drop_bases(h)?,
            Some(Held::Split(sb)) => sb.drop_from(be)?,
            None => {}
        }
        let base_times = (times.len() > 1).then(|| times.remove(1));
        let times = times.remove(0);
        let r = row(log, &times, base_times.as_deref());
        sink.row(&r);
        report.rows.push(r);
    }
    Ok(())
}
