//! BN254's ops timed per size: G1/G2 MSMs (optionally against halo2curves
//! called directly, to show what the seam costs) and the NTT.

use halo2curves::bn256;
use zkpipe_core::bn254::{Fr, G1Affine, G2Affine, sample};
use zkpipe_core::plugin::{MsmConfig, NttConfigOf, NttDirection};
use zkpipe_core::{Backend, Error};

use crate::msm::{MsmGroup, MsmRequest};
use crate::ops::{NttRequest, Sizes};
use crate::report::{Report, Sink, measure, row};

/// Refuses what BN254's ops do not have yet: split bases, lent memory.
fn refuse(what: &str) -> Error {
    Error::InvalidInput(format!("{what} is BLS12-381 only for now"))
}

/// Times BN254 MSMs on `be` for each size.
///
/// # Errors
/// Split bases (not served on BN254), a size that does not fit memory, or
/// the backend's.
pub fn msm(
    be: &Backend,
    sizes: &Sizes,
    req: &MsmRequest,
    sink: &mut dyn Sink,
) -> Result<Report, Error> {
    zkpipe_core::bn254::cpu::check()?;
    if !req.split_devices.is_empty() {
        return Err(refuse("--split-devices"));
    }
    let g1 = req.group == MsmGroup::G1;
    // Bases, the backend's and the baseline's copies, scalars.
    sizes.check_fits("msm", if g1 { 3 * 64 + 64 } else { 3 * 128 + 64 })?;
    let name = format!(
        "bn254 msm_{}{}{}",
        if g1 { "g1" } else { "g2" },
        if req.bit_scalars {
            " (bit scalars)"
        } else {
            ""
        },
        if req.resident {
            " (resident bases)"
        } else {
            ""
        }
    );
    let baseline = req
        .baseline
        .is_some()
        .then_some("halo2curves msm_best, bases and scalars copied from the seam's types");
    let mut report = Report::new(be, sizes.device, name, baseline)?;
    sink.header(&report);
    let max = sizes.max();
    eprintln!(
        "generating {max} random BN254 bases and scalars (seed {}) …",
        sizes.seed
    );
    let mut scalars = sample::scalars(max, sizes.seed.wrapping_add(1));
    if req.bit_scalars {
        for s in &mut scalars {
            *s = if s.limbs[0] & 1 == 1 {
                Fr::one()
            } else {
                Fr::ZERO
            };
        }
    }
    let cfg = MsmConfig {
        device: sizes.device,
        ..Default::default()
    };
    let (g1_bases, g2_bases) = if g1 {
        (sample::g1_points(max, sizes.seed), vec![])
    } else {
        (vec![], sample::g2_points(max, sizes.seed))
    };
    for log in sizes.log_sizes.clone() {
        let n = 1usize << log;
        let s = &scalars[..n];
        // A set of each size, as a key's query is (see the BLS12-381 bench).
        let held = if req.resident {
            let t = std::time::Instant::now();
            let h = if g1 {
                be.bn254_upload_bases_g1(&g1_bases[..n], sizes.device)?
            } else {
                be.bn254_upload_bases_g2(&g2_bases[..n], sizes.device)?
            };
            eprintln!(
                "2^{log} bases resident in {:.1} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
            Some(h)
        } else {
            None
        };
        let mut run_backend = || match (held, g1) {
            (Some(h), true) => be.bn254_msm_g1(h, s, &cfg).map(drop),
            (Some(h), false) => be.bn254_msm_g2(h, s, &cfg).map(drop),
            (None, true) => be.bn254_msm_g1(&g1_bases[..n], s, &cfg).map(drop),
            (None, false) => be.bn254_msm_g2(&g2_bases[..n], s, &cfg).map(drop),
        };
        // The direct call pays the copies into halo2curves' types too, as
        // any caller holding the seam's types would.
        let mut run_direct = || {
            let s: Vec<bn256::Fr> = s.iter().map(Fr::h2c).collect();
            if g1 {
                let b: Vec<_> = g1_bases[..n].iter().map(G1Affine::h2c).collect();
                std::hint::black_box(halo2curves::msm::msm_best(&s, &b));
            } else {
                let b: Vec<_> = g2_bases[..n].iter().map(G2Affine::h2c).collect();
                std::hint::black_box(halo2curves::msm::msm_best(&s, &b));
            }
            Ok(())
        };
        let mut times = if req.baseline.is_some() {
            measure(sizes.runs, &mut [&mut run_backend, &mut run_direct])?
        } else {
            measure(sizes.runs, &mut [&mut run_backend])?
        };
        if let Some(h) = held {
            be.drop_bases(h)?;
        }
        let base_times = (times.len() > 1).then(|| times.remove(1));
        let r = row(log, &times.remove(0), base_times.as_deref());
        sink.row(&r);
        report.rows.push(r);
    }
    Ok(report)
}

/// Times the NTT over BN254's Fr on `be` for each size (coset shift 7).
///
/// # Errors
/// Lent memory (not served on BN254), a size that does not fit memory, or
/// the backend's.
pub fn ntt(
    be: &Backend,
    sizes: &Sizes,
    req: NttRequest,
    sink: &mut dyn Sink,
) -> Result<Report, Error> {
    zkpipe_core::bn254::cpu::check()?;
    if req.lent {
        return Err(refuse("--lent"));
    }
    sizes.check_fits("ntt", 3 * 32)?;
    let cfg = NttConfigOf {
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
        "bn254 ntt {}{} {:?}",
        if req.inverse { "inverse" } else { "forward" },
        if req.coset { " coset" } else { "" },
        req.order,
    );
    let mut report = Report::new(be, sizes.device, name, None)?;
    sink.header(&report);
    let input = sample::scalars(sizes.max(), sizes.seed);
    for log in sizes.log_sizes.clone() {
        let mut buf = input[..1usize << log].to_vec();
        let times = measure(sizes.runs, &mut [&mut || be.bn254_ntt(&mut buf, &cfg)])?.remove(0);
        let r = row(log, &times, None);
        sink.row(&r);
        report.rows.push(r);
    }
    Ok(report)
}
