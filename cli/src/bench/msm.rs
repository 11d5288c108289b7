//! `bench msm`: G1/G2 MSMs on a backend, optionally against blst called
//! directly.

use super::*;
use zkpipe_core::msm_split::{self, SplitBases, SplitSource};

/// The group-specific calls of the MSM bench.
pub(super) trait MsmOps {
    type Aff: Copy + Sync;
    /// The same group for [`msm_split`].
    type Split: msm_split::Group<Affine = Self::Aff>;
    fn points(n: usize, seed: u64) -> Vec<Self::Aff>;
    fn msm(
        be: &Backend,
        bases: zkpipe_core::plugin::BasesRef<'_, Self::Aff>,
        s: &[Fr],
        cfg: &MsmConfig,
    ) -> Result<(), Error>;
    fn upload(
        be: &Backend,
        bases: &[Self::Aff],
        device: u32,
    ) -> Result<zkpipe_core::plugin::BasesHandle, Error>;
    fn blst_direct(bases: &[Self::Aff], scalar_bytes: &[u8]);
}

pub(super) struct G1Ops;
pub(super) struct G2Ops;

macro_rules! msm_ops {
    ($t:ident, $aff:ty, $split:ty, $points:path, $msm:ident, $upload:ident) => {
        impl MsmOps for $t {
            type Aff = $aff;
            type Split = $split;
            fn points(n: usize, seed: u64) -> Vec<$aff> {
                $points(n, seed)
            }
            fn msm(
                be: &Backend,
                bases: zkpipe_core::plugin::BasesRef<'_, $aff>,
                s: &[Fr],
                cfg: &MsmConfig,
            ) -> Result<(), Error> {
                be.$msm(bases, s, cfg).map(|_| ())
            }
            fn upload(
                be: &Backend,
                bases: &[$aff],
                device: u32,
            ) -> Result<zkpipe_core::plugin::BasesHandle, Error> {
                be.$upload(bases, device)
            }
            fn blst_direct(bases: &[$aff], scalar_bytes: &[u8]) {
                use blst::MultiPoint;
                let _ = <$aff>::slice_as_blst(bases).mult(scalar_bytes, 255);
            }
        }
    };
}
msm_ops!(
    G1Ops,
    G1Affine,
    msm_split::G1,
    sample::g1_points,
    msm_g1,
    upload_bases_g1
);
msm_ops!(
    G2Ops,
    G2Affine,
    msm_split::G2,
    sample::g2_points,
    msm_g2,
    upload_bases_g2
);

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

#[allow(clippy::too_many_arguments)] // the bench's flags, passed through
pub(super) fn bench_msm<G: MsmOps>(
    be: &Backend,
    c: &Common,
    resident: bool,
    split: &[u32],
    baseline: bool,
    shape: super::Scalars,
    report: &mut Report,
    p: &Printer,
) -> Result<(), Error> {
    let max = 1usize << c.log_size.end();
    let bits = shape == super::Scalars::Bits;
    eprintln!(
        "generating {max} random bases and {} (seed {}) …",
        if bits {
            "bit scalars (0 or 1)"
        } else {
            "scalars"
        },
        c.seed
    );
    let bases = G::points(max, c.seed);
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
    for log in c.log_size.clone() {
        let n = 1usize << log;
        let (b, s) = (&bases[..n], &scalars[..n]);
        // A set of each size, as a key's query is: a backend may shape
        // what it keeps (precomputed multiples) by the set's size.
        let held = if resident {
            let t = std::time::Instant::now();
            let h = if split.is_empty() {
                Held::One(G::upload(be, b, c.device)?)
            } else {
                Held::Split(SplitBases::upload::<G::Split>(be, b, split)?)
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
            (Some(Held::One(h)), _) => G::msm(be, (*h).into(), s, &cfg),
            (Some(Held::Split(sb)), _) => {
                msm_split::msm::<G::Split>(be, SplitSource::Resident(sb), s).map(|_| ())
            }
            (None, true) => G::msm(be, b.into(), s, &cfg),
            (None, false) => {
                msm_split::msm::<G::Split>(be, SplitSource::Host(b, split), s).map(|_| ())
            }
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
        p.row(&r);
        report.rows.push(r);
    }
    Ok(())
}
