//! Single-op comparisons between two backends on identical seeded inputs.

use zkpipe_core::plugin::{MsmConfig, NttConfig, NttDirection, NttOrder};
use zkpipe_core::{Backend, Error, Fr, sample};

/// Inputs with edge cases mixed in: zero and r − 1 scalars, identity bases.
fn scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut s = sample::scalars(n, seed);
    if n > 2 {
        s[0] = Fr::ZERO;
        s[1] = Fr::one().neg();
    }
    s
}

/// `None` when equal, else a description of the first difference.
pub type Mismatch = Option<String>;

fn compare<T: PartialEq + std::fmt::Debug>(got: T, want: T) -> Mismatch {
    (got != want).then(|| format!("got {got:?}, reference {want:?}"))
}

pub fn msm_g1(test: &Backend, reference: &Backend, n: usize, seed: u64) -> Result<Mismatch, Error> {
    let mut bases = sample::g1_points(n, seed);
    if n > 3 {
        bases[2] = zkpipe_core::G1Affine::identity();
    }
    let s = scalars(n, seed + 1);
    let cfg = MsmConfig::default();
    Ok(compare(
        test.msm_g1(&bases[..], &s, &cfg)?.to_affine(),
        reference.msm_g1(&bases[..], &s, &cfg)?.to_affine(),
    ))
}

pub fn msm_g2(test: &Backend, reference: &Backend, n: usize, seed: u64) -> Result<Mismatch, Error> {
    let mut bases = sample::g2_points(n, seed);
    if n > 3 {
        bases[2] = zkpipe_core::G2Affine::identity();
    }
    let s = scalars(n, seed + 1);
    let cfg = MsmConfig::default();
    Ok(compare(
        test.msm_g2(&bases[..], &s, &cfg)?.to_affine(),
        reference.msm_g2(&bases[..], &s, &cfg)?.to_affine(),
    ))
}

/// Every order × direction × coset combination, named.
pub fn ntt_configs() -> Vec<(String, NttConfig)> {
    let mut out = Vec::new();
    for order in NttOrder::ALL {
        for direction in [NttDirection::Forward, NttDirection::Inverse] {
            for coset in [None, Some(Fr::from_u64(7))] {
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
                    NttConfig {
                        direction,
                        order,
                        coset: coset.into(),
                        ..Default::default()
                    },
                ));
            }
        }
    }
    out
}

pub fn ntt(
    test: &Backend,
    reference: &Backend,
    log: u32,
    cfg: &NttConfig,
    seed: u64,
) -> Result<Mismatch, Error> {
    let input = sample::scalars(1 << log, seed);
    let (mut a, mut b) = (input.clone(), input);
    test.ntt(&mut a, cfg)?;
    reference.ntt(&mut b, cfg)?;
    Ok(a.iter().zip(&b).position(|(x, y)| x != y).map(|i| {
        format!(
            "first mismatch at index {i}: got {:?}, reference {:?}",
            a[i], b[i]
        )
    }))
}
