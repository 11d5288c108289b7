//! One MSM over several devices of a backend: the points cut into one
//! contiguous piece per device, each piece's MSM on its own host thread
//! (each device works alone), and the partial sums added on the host.
//!
//! Cutting by points rather than by windows keeps every device's work a
//! whole MSM of its own (its own bases, its own buckets), so a device needs
//! only its share of the bases and no backend change is needed.

use std::ops::Range;

use crate::backend::Backend;
use crate::plugin::{BasesHandle, BasesRef, MsmConfig};
use crate::types::Fr;

use crate::backend::group::Group;
use crate::{Error, plugin::AccelError};

/// The pieces of `n` points over `k` devices: contiguous, in order, sizes
/// differing by at most one (the first `n % k` one larger).
pub fn pieces(n: usize, k: usize) -> Vec<Range<usize>> {
    let k = k.max(1);
    let (base, extra) = (n / k, n % k);
    let mut start = 0;
    (0..k)
        .map(|i| {
            let len = base + usize::from(i < extra);
            start += len;
            start - len..start
        })
        .collect()
}

/// Bases kept on several devices, one piece each (see [`pieces`]).
#[derive(Debug)]
pub struct SplitBases {
    /// (device, the piece's points, its handle), in point order.
    parts: Vec<(u32, Range<usize>, BasesHandle)>,
}

impl SplitBases {
    /// Uploads `bases`, one piece per device of `devices`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for no device or a device named twice; the
    /// backend's upload error (pieces already uploaded are dropped).
    pub fn upload<G: Group>(
        be: &Backend,
        bases: &[G::Affine],
        devices: &[u32],
    ) -> Result<SplitBases, Error> {
        check_devices(devices)?;
        let mut parts = Vec::with_capacity(devices.len());
        for (&device, range) in devices.iter().zip(pieces(bases.len(), devices.len())) {
            match G::upload(be, &bases[range.clone()], device) {
                Ok(h) => parts.push((device, range, h)),
                Err(e) => {
                    for (_, _, h) in parts {
                        let _ = be.drop_bases(h); // the upload's error is the one to report
                    }
                    return Err(e);
                }
            }
        }
        Ok(SplitBases { parts })
    }

    /// Points held, over all devices.
    pub fn len(&self) -> usize {
        self.parts.last().map_or(0, |(_, r, _)| r.end)
    }

    /// Whether no points are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frees every piece.
    ///
    /// # Errors
    /// The first backend error (every piece is still asked to go).
    pub fn drop_from(self, be: &Backend) -> Result<(), Error> {
        let mut first = Ok(());
        for (_, _, h) in self.parts {
            if let Err(e) = be.drop_bases(h)
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }
}

/// Where a split MSM's bases are.
#[derive(Debug)]
pub enum SplitSource<'a, A> {
    /// On the host: each device copies its piece in.
    Host(&'a [A], &'a [u32]),
    /// Kept on the devices by [`SplitBases::upload`].
    Resident(&'a SplitBases),
}

fn check_devices(devices: &[u32]) -> Result<(), Error> {
    if devices.is_empty() {
        return Err(Error::InvalidInput(
            "a split MSM needs at least one device".into(),
        ));
    }
    for (i, d) in devices.iter().enumerate() {
        if devices[..i].contains(d) {
            return Err(Error::InvalidInput(format!(
                "device {d} is named twice for one split MSM"
            )));
        }
    }
    Ok(())
}

/// `Σ scalars[i]·bases[i]` with the points cut over several devices.
/// Resident bases may hold more points than there are scalars (a prefix is
/// used, as with one device's handle).
///
/// # Errors
/// [`Error::InvalidInput`] for host bases of another length than the
/// scalars, more scalars than resident points, or bad devices; the first
/// backend error of any piece.
pub fn msm<G: Group>(
    be: &Backend,
    bases: SplitSource<'_, G::Affine>,
    scalars: &[Fr],
) -> Result<G::Proj, Error> {
    let jobs: Vec<(u32, Range<usize>, Option<BasesHandle>)> = match bases {
        SplitSource::Host(b, devices) => {
            check_devices(devices)?;
            if b.len() != scalars.len() {
                return Err(Error::InvalidInput(format!(
                    "split MSM: {} bases for {} scalars",
                    b.len(),
                    scalars.len()
                )));
            }
            devices
                .iter()
                .zip(pieces(b.len(), devices.len()))
                .map(|(&d, r)| (d, r, None))
                .collect()
        }
        SplitSource::Resident(s) => {
            if scalars.len() > s.len() {
                return Err(Error::InvalidInput(format!(
                    "split MSM: {} scalars for {} resident points",
                    scalars.len(),
                    s.len()
                )));
            }
            s.parts
                .iter()
                .map(|(d, r, h)| (*d, r.start..r.end.min(scalars.len()), Some(*h)))
                .collect()
        }
    };
    let host = match bases {
        SplitSource::Host(b, _) => Some(b),
        SplitSource::Resident(_) => None,
    };
    let sums = std::thread::scope(|sc| {
        let threads: Vec<_> = jobs
            .into_iter()
            .filter(|(_, r, _)| !r.is_empty())
            .map(|(device, r, handle)| {
                sc.spawn(move || {
                    let config = MsmConfig {
                        device,
                        ..Default::default()
                    };
                    let b = match (handle, host) {
                        (Some(h), _) => BasesRef::Resident(h),
                        (None, Some(b)) => BasesRef::from(&b[r.clone()]),
                        (None, None) => unreachable!("host bases come with no handle"),
                    };
                    G::msm(be, b, &scalars[r], &config)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join().unwrap_or_else(|_| {
                    Err(Error::Backend {
                        backend: be.name().to_string(),
                        source: AccelError::new(
                            crate::plugin::ErrorCode::INTERNAL,
                            "a split MSM's thread panicked",
                        ),
                    })
                })
            })
            .collect::<Result<Vec<_>, Error>>()
    })?;
    Ok(sums.iter().fold(G::identity(), |acc, p| G::add(&acc, p)))
}
