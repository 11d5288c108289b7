//! Groth16 proofs on BN254 as snarkjs and rapidsnark make them, on a
//! backend's BN254 ops: A·w and B·w from the key's QAP coefficients,
//! C·w = (A·w)∘(B·w), the three moved to the odd coset of the 2n-th roots
//! (an inverse NTT, then a forward NTT shifted by ω₂ₙ), and h = a·b − c
//! there, which the key's H points take as they are.
//!
//! The stages are separate ([`quotient`], [`msms_g1`], [`msm_b_g2`],
//! [`assemble`]) so that a scheduler can time and place them; [`prove`]
//! runs them all for one proof.

use std::sync::Arc;

use rayon::prelude::*;

use super::groth16::{KeyPoints, Proof};
use super::{FR_TWO_ADICITY, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use crate::backend::lent_buffers::{BufferPool, FrBuffer};
use crate::plugin::{BasesHandle, BasesRef, MsmConfig, NttConfigOf, NttDirection, ops};
use crate::r1cs::{R1cs, qap_coefficients};
use crate::{Backend, Error};

/// One QAP coefficient: `value` at (`row`, `signal`) of matrix A (0) or
/// B (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coefficient {
    /// 0: A, 1: B.
    pub matrix: u32,
    /// The constraint (row of the domain).
    pub row: u32,
    /// The signal (variable).
    pub signal: u32,
    /// The value.
    pub value: Fr,
}

/// A BN254 proving key: what snarkjs's zkey holds for proving.
#[derive(Debug)]
pub struct ProvingKey {
    /// Points of the domain (a power of two below 2^28).
    pub domain_size: usize,
    /// Public signals (without the constant one).
    pub num_public: usize,
    /// Signals, the constant one first.
    pub num_vars: usize,
    /// A's and B's QAP coefficients.
    pub coefficients: Vec<Coefficient>,
    /// The verifying key and the queries.
    pub points: KeyPoints,
}

impl ProvingKey {
    /// The key of `r1cs` with `points` (from [`super::setup::setup`] or a
    /// ceremony for the same circuit): its counts and QAP coefficients.
    pub fn new(r1cs: &R1cs<Fr>, points: KeyPoints) -> ProvingKey {
        let log_n = crate::groth16::domain_log_size(r1cs.num_constraints(), r1cs.num_inputs);
        ProvingKey {
            domain_size: 1 << log_n,
            num_public: r1cs.num_inputs.saturating_sub(1),
            num_vars: r1cs.num_inputs + r1cs.num_aux,
            coefficients: qap_coefficients(r1cs)
                .map(|(matrix, row, signal, value)| Coefficient {
                    matrix,
                    row,
                    signal,
                    value,
                })
                .collect(),
            points,
        }
    }

    /// Why the key cannot prove, if it cannot: a domain that is not a power
    /// of two below 2^28 (the odd coset needs twice the domain), or queries
    /// and coefficients of other lengths than its counts say.
    pub fn defect(&self) -> Option<String> {
        let n = self.domain_size;
        if !n.is_power_of_two() || n.trailing_zeros() >= FR_TWO_ADICITY {
            return Some(format!(
                "a domain of {n} points: BN254 proofs need a power of two below 2^{FR_TWO_ADICITY}"
            ));
        }
        let private = self.num_vars.checked_sub(self.num_public + 1);
        let Some(private) = private else {
            return Some(format!(
                "{} public signals but {} signals in all",
                self.num_public, self.num_vars
            ));
        };
        let p = &self.points;
        for (what, len, want) in [
            ("A", p.a.len(), self.num_vars),
            ("B in G1", p.b_g1.len(), self.num_vars),
            ("B in G2", p.b_g2.len(), self.num_vars),
            ("C", p.c.len(), private),
            ("H", p.h.len(), n),
            ("IC", p.vk.ic.len(), self.num_public + 1),
        ] {
            if len != want {
                return Some(format!("{what} has {len} points, not {want}"));
            }
        }
        self.coefficients
            .iter()
            .position(|c| c.matrix > 1 || c.row as usize >= n || c.signal as usize >= self.num_vars)
            .map(|i| format!("coefficient {i} is past matrix B, the domain or the signals"))
    }

    /// Host bytes the key holds.
    pub fn host_bytes(&self) -> u64 {
        let (p, g1) = (&self.points, std::mem::size_of::<G1Affine>());
        let g1s = p.a.len() + p.b_g1.len() + p.c.len() + p.h.len();
        (g1s * g1
            + p.b_g2.len() * std::mem::size_of::<G2Affine>()
            + self.coefficients.len() * std::mem::size_of::<Coefficient>()) as u64
    }

    /// Host bytes one partition holds in flight: its witness and the
    /// quotient's four domain-sized vectors.
    pub fn partition_bytes(&self) -> u64 {
        ((self.num_vars + 4 * self.domain_size) * std::mem::size_of::<Fr>()) as u64
    }

    /// Checks that `witness` fits the key: one value per signal, the
    /// constant one first.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] saying what differs.
    pub fn check_witness(&self, witness: &[Fr]) -> Result<(), Error> {
        if witness.len() == self.num_vars && witness.first() == Some(&Fr::one()) {
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "the witness has {} values{}; the key's circuit has {} signals, the one first",
            witness.len(),
            if witness.first() == Some(&Fr::one()) {
                ""
            } else {
                " and does not start with 1"
            },
            self.num_vars
        )))
    }

    /// The public signals of `witness` (without the constant one).
    pub fn public<'w>(&self, witness: &'w [Fr]) -> &'w [Fr] {
        &witness[1..=self.num_public]
    }
}

/// A key's query points kept by a backend (G1: A, B, C, H; G2: B), so
/// that its proofs do not copy them. Freed when dropped.
pub struct ResidentQueries {
    backend: Arc<Backend>,
    device: u32,
    /// A, B, C, H; `None` for an empty query (taken from the host).
    g1: Vec<Option<BasesHandle>>,
    b_g2: Option<BasesHandle>,
    /// Host buffers for A·w and B·w (then h), from memory the backend
    /// lends where it does (page-locked: the quotient's copies run at the
    /// link's speed), kept from proof to proof.
    buffers: Arc<BufferPool<Fr>>,
}

impl std::fmt::Debug for ResidentQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentQueries")
            .field("backend", &self.backend.name())
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl ResidentQueries {
    /// Keeps `key`'s queries on `device` of `backend`; `Ok(None)` where
    /// the backend does not keep BN254 bases.
    ///
    /// # Errors
    /// The backend's (out of memory among them); what was uploaded before
    /// the error is freed.
    pub fn upload(
        backend: &Arc<Backend>,
        key: &ProvingKey,
        device: u32,
    ) -> Result<Option<ResidentQueries>, Error> {
        if !backend.capabilities().supports(ops::bn254::RESIDENT_BASES) {
            return Ok(None);
        }
        let p = &key.points;
        let mut r = ResidentQueries {
            backend: backend.clone(),
            device,
            g1: Vec::with_capacity(4),
            b_g2: None,
            buffers: BufferPool::new(backend),
        };
        for q in [&p.a, &p.b_g1, &p.c, &p.h] {
            let h = match q.is_empty() {
                true => None,
                false => Some(backend.bn254_upload_bases_g1(q, device)?),
            };
            r.g1.push(h);
        }
        if !p.b_g2.is_empty() {
            r.b_g2 = Some(backend.bn254_upload_bases_g2(&p.b_g2, device)?);
        }
        Ok(Some(r))
    }

    /// [`ResidentQueries::upload`] where it saves copies: `device` is a
    /// GPU (on a host backend the queries would be a second copy in the
    /// same memory); `Ok(None)` elsewhere.
    ///
    /// # Errors
    /// As [`ResidentQueries::upload`].
    pub fn keep_on_gpu(
        backend: &Arc<Backend>,
        key: &ProvingKey,
        device: u32,
    ) -> Result<Option<Arc<ResidentQueries>>, Error> {
        let on_gpu = backend
            .info()
            .devices
            .get(device as usize)
            .is_some_and(|d| d.kind == crate::plugin::DeviceKind::Gpu);
        match on_gpu {
            true => Ok(Self::upload(backend, key, device)?.map(Arc::new)),
            false => Ok(None),
        }
    }

    /// The device the queries are on.
    pub fn device(&self) -> u32 {
        self.device
    }
}

impl Drop for ResidentQueries {
    fn drop(&mut self) {
        for h in self.g1.drain(..).flatten().chain(self.b_g2.take()) {
            // A backend that cannot free a handle has nothing to give back.
            let _ = self.backend.drop_bases(h);
        }
    }
}

/// Runs `ops` at once, each on its own thread (they wait on the backend's
/// pool), and returns the first error.
fn side_by_side<F, E>(ops: impl IntoIterator<Item = F>, panicked: impl Fn() -> E) -> Result<(), E>
where
    F: FnOnce() -> Result<(), E> + Send,
    E: Send,
{
    std::thread::scope(|scope| {
        let running: Vec<_> = ops.into_iter().map(|op| scope.spawn(op)).collect();
        running
            .into_iter()
            .try_for_each(|t| t.join().unwrap_or_else(|_| Err(panicked())))
    })
}

fn thread_panicked() -> Error {
    Error::Failed("a BN254 proving thread panicked".into())
}

/// h = a·b − c on the odd coset, from a checked witness: A·w and B·w on
/// the host (in `resident`'s reused buffers where given), then the
/// backend's [`ops::bn254::QUOTIENT`] where it lists it, else
/// [`odd_coset_quotient`] on its NTTs.
///
/// # Errors
/// The backend's.
pub fn quotient(
    be: &Backend,
    key: &ProvingKey,
    resident: Option<&ResidentQueries>,
    witness: &[Fr],
) -> Result<FrBuffer<Fr>, Error> {
    let n = key.domain_size;
    let (mut a, mut b) = match resident {
        Some(r) => (r.buffers.take(n), r.buffers.take(n)),
        None => (vec![Fr::ZERO; n].into(), vec![Fr::ZERO; n].into()),
    };
    evaluate_a_b(key, witness, &mut a, &mut b);
    let log_n = n.trailing_zeros();
    if be.capabilities().supports_size(ops::bn254::QUOTIENT, log_n) {
        be.bn254_quotient(&mut a, &b, resident.map_or(0, ResidentQueries::device))?;
    } else {
        odd_coset_quotient(
            &mut a,
            &mut b,
            &|v, cfg| be.bn254_ntt(v, cfg),
            thread_panicked,
        )?;
    }
    Ok(a)
}

/// An NTT over BN254's Fr: a backend's, or one the caller holds.
pub type Ntt<'a, E> = dyn Fn(&mut [Fr], &NttConfigOf<Fr>) -> Result<(), E> + Sync + 'a;

/// The BN254 quotient's definition, on any NTT: with c = a∘b, the three
/// vectors (evaluations over the n-th roots) are moved to the odd coset
/// ω₂ₙ·⟨ω⟩ by `ntt` (the inverse NTT, then the forward NTT shifted by
/// ω₂ₙ), and `a` becomes h = a·b − c there (`b` is transformed in place).
/// The prover's host path and the CPU backend's op both run it.
///
/// # Errors
/// `ntt`'s; `panicked()` for a transform thread that panicked.
pub fn odd_coset_quotient<E: Send>(
    a: &mut [Fr],
    b: &mut [Fr],
    ntt: &Ntt<'_, E>,
    panicked: impl Fn() -> E,
) -> Result<(), E> {
    let n = a.len();
    let mut c: Vec<Fr> = a.par_iter().zip(&*b).map(|(x, y)| x.mul(y)).collect();
    let inverse = &NttConfigOf {
        direction: NttDirection::Inverse,
        ..Default::default()
    };
    let odd_coset = &NttConfigOf {
        coset: Some(Fr::root_of_unity(n.trailing_zeros() + 1)).into(),
        ..Default::default()
    };
    // The three vectors side by side: one NTT's parallel parts leave
    // threads idle on a large machine that the others then use.
    side_by_side(
        [&mut *a, &mut *b, &mut c[..]].map(|v| {
            move || {
                ntt(v, inverse)?;
                ntt(v, odd_coset)
            }
        }),
        panicked,
    )?;
    a.par_iter_mut()
        .zip(&*b)
        .zip(&c)
        .for_each(|((x, y), z)| *x = x.mul(y).sub(z));
    Ok(())
}

/// Rows of the domain one task evaluates.
const ROWS_PER_TASK: usize = 1 << 14;

/// Most runs of row-ordered coefficients evaluated in pieces.
const MAX_RUNS: usize = 16;

/// A·w and B·w over the domain, written over whatever `a` and `b` held
/// (each the domain's size). The coefficients are cut into runs in row
/// order (one for zkpipe's keys, a few where a writer lists A's before
/// B's); each run is cut at row boundaries and evaluated side by side,
/// the first run clearing its rows as it goes. A key in no such order is
/// evaluated one coefficient after another.
fn evaluate_a_b(key: &ProvingKey, witness: &[Fr], a: &mut [Fr], b: &mut [Fr]) {
    let coefficients = &key.coefficients[..];
    let add = |a: &mut [Fr], b: &mut [Fr], first_row: usize, terms: &[Coefficient]| {
        for c in terms {
            let t = if c.matrix == 0 { &mut *a } else { &mut *b };
            let row = c.row as usize - first_row;
            t[row] = t[row].add(&c.value.mul(&witness[c.signal as usize]));
        }
    };
    let mut starts: Vec<usize> = (1..coefficients.len())
        .into_par_iter()
        .filter(|&i| coefficients[i].row < coefficients[i - 1].row)
        .collect();
    if starts.len() >= MAX_RUNS {
        a.par_iter_mut()
            .chain(b.par_iter_mut())
            .for_each(|x| *x = Fr::ZERO);
        add(a, b, 0, coefficients);
        return;
    }
    starts.insert(0, 0);
    starts.push(coefficients.len());
    for (i, run) in starts
        .windows(2)
        .map(|w| &coefficients[w[0]..w[1]])
        .enumerate()
    {
        a.par_chunks_mut(ROWS_PER_TASK)
            .zip(b.par_chunks_mut(ROWS_PER_TASK))
            .enumerate()
            .for_each(|(k, (a, b))| {
                if i == 0 {
                    a.fill(Fr::ZERO);
                    b.fill(Fr::ZERO);
                }
                let first = k * ROWS_PER_TASK;
                let lo = run.partition_point(|c| (c.row as usize) < first);
                let hi = run.partition_point(|c| (c.row as usize) < first + a.len());
                add(a, b, first, &run[lo..hi]);
            });
    }
}

/// The G1 sums of one proof (and B in G2 when it ran beside them).
#[derive(Clone, Copy, Debug)]
pub struct Sums {
    /// Σ over the A query.
    pub a: G1Projective,
    /// Σ over the B query in G1.
    pub b_g1: G1Projective,
    /// Σ over the C query (private signals).
    pub c: G1Projective,
    /// Σ over the H query.
    pub h: G1Projective,
    /// Σ over the B query in G2, when asked for.
    pub b_g2: Option<G2Projective>,
}

/// The four G1 MSMs, and B in G2 with them when `with_b_g2`, side by side;
/// bases from `resident` (kept by `be`) where given, else from the key.
///
/// # Errors
/// The backend's.
pub fn msms_g1<'a>(
    be: &Backend,
    key: &'a ProvingKey,
    resident: Option<&ResidentQueries>,
    witness: &'a [Fr],
    h: &'a [Fr],
    with_b_g2: bool,
) -> Result<Sums, Error> {
    let cfg = &msm_config(resident);
    let private = &witness[key.num_public + 1..];
    let (mut b_g2, mut g1) = (None, [G1Projective::identity(); 4]);
    let p = &key.points;
    let query = |i: usize, host: &'a [G1Affine]| -> BasesRef<'a, G1Affine> {
        match resident.and_then(|r| r.g1[i]) {
            Some(handle) => handle.into(),
            None => host.into(),
        }
    };
    let bases = [
        query(0, &p.a),
        query(1, &p.b_g1),
        query(2, &p.c),
        query(3, &p.h),
    ];
    let terms = bases.into_iter().zip([witness, witness, private, h]);
    let mut ops: Vec<Box<dyn FnOnce() -> Result<(), Error> + Send + '_>> = vec![];
    if with_b_g2 {
        ops.push(Box::new(|| {
            b_g2 = Some(msm_b_g2(be, key, resident, witness)?);
            Ok(())
        }));
    }
    for (out, (bases, scalars)) in g1.iter_mut().zip(terms) {
        ops.push(Box::new(move || {
            *out = be.bn254_msm_g1(bases, scalars, cfg)?;
            Ok(())
        }));
    }
    side_by_side(ops, thread_panicked)?;
    let [a, b_g1, c, h] = g1;
    Ok(Sums {
        a,
        b_g1,
        c,
        h,
        b_g2,
    })
}

/// Σ over the B query in G2 alone, its bases from `resident` (kept by
/// `be`) where given.
///
/// # Errors
/// The backend's.
pub fn msm_b_g2(
    be: &Backend,
    key: &ProvingKey,
    resident: Option<&ResidentQueries>,
    witness: &[Fr],
) -> Result<G2Projective, Error> {
    let cfg = &msm_config(resident);
    match resident.and_then(|r| r.b_g2) {
        Some(h) => be.bn254_msm_g2(h, witness, cfg),
        None => be.bn254_msm_g2(&key.points.b_g2, witness, cfg),
    }
}

/// MSMs on the device `resident` is on (else device 0).
fn msm_config(resident: Option<&ResidentQueries>) -> MsmConfig {
    MsmConfig {
        device: resident.map_or(0, ResidentQueries::device),
        ..MsmConfig::default()
    }
}

/// The proof from its sums and blinding `r, s`.
pub fn assemble(key: &ProvingKey, g1: &Sums, b_g2: &G2Projective, r: Fr, s: Fr) -> Proof {
    let (key, vk) = (&key.points, &key.points.vk);
    let pi_a =
        g1.a.add(&vk.alpha_g1.to_projective())
            .add(&key.delta_g1.mul(&r));
    let pi_b = b_g2
        .add(&vk.beta_g2.to_projective())
        .add(&vk.delta_g2.mul(&s));
    let b_g1 = g1
        .b_g1
        .add(&key.beta_g1.to_projective())
        .add(&key.delta_g1.mul(&s));
    let pi_c =
        g1.c.add(&g1.h)
            .add(&pi_a.to_affine().mul(&s))
            .add(&b_g1.to_affine().mul(&r))
            .add(&key.delta_g1.mul(&r.mul(&s).neg()));
    Proof {
        a: pi_a.to_affine(),
        b: pi_b.to_affine(),
        c: pi_c.to_affine(),
    }
}

/// Proves `witness` (every signal, the one first) under `key` on `be`'s
/// BN254 ops with blinding `r, s`; returns the proof and the public
/// signals, the proof verified.
///
/// # Errors
/// [`Error::InvalidInput`] for a witness of another length, whose first
/// value is not one, or that does not satisfy the circuit (the proof fails
/// its check); the backend's errors.
pub fn prove(
    be: &Backend,
    key: &ProvingKey,
    witness: &[Fr],
    r: Fr,
    s: Fr,
) -> Result<(Proof, Vec<Fr>), Error> {
    prove_with(be, key, None, witness, r, s)
}

/// [`prove`] with the MSMs' bases from `resident` (kept by `be`) where
/// given.
///
/// # Errors
/// As [`prove`].
pub fn prove_with(
    be: &Backend,
    key: &ProvingKey,
    resident: Option<&ResidentQueries>,
    witness: &[Fr],
    r: Fr,
    s: Fr,
) -> Result<(Proof, Vec<Fr>), Error> {
    key.check_witness(witness)?;
    let h = quotient(be, key, resident, witness)?;
    let sums = msms_g1(be, key, resident, witness, &h, true)?;
    let b_g2 = sums.b_g2.expect("B in G2 ran with the G1 MSMs");
    let proof = assemble(key, &sums, &b_g2, r, s);
    let public = key.public(witness).to_vec();
    if !super::groth16::verify(&key.points.vk, &proof, &public)? {
        return Err(Error::InvalidInput(
            "the proof does not verify: the witness does not satisfy the key's circuit".into(),
        ));
    }
    Ok((proof, public))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::bn254::groth16::VerifyingKey;

    fn key(domain_size: usize, num_public: usize, num_vars: usize) -> ProvingKey {
        let g1 = |n| vec![G1Affine::generator(); n];
        ProvingKey {
            domain_size,
            num_public,
            num_vars,
            coefficients: vec![Coefficient {
                matrix: 1,
                row: domain_size.saturating_sub(1) as u32,
                signal: num_vars.saturating_sub(1) as u32,
                value: Fr::one(),
            }],
            points: KeyPoints {
                vk: VerifyingKey {
                    alpha_g1: G1Affine::generator(),
                    beta_g2: G2Affine::generator(),
                    gamma_g2: G2Affine::generator(),
                    delta_g2: G2Affine::generator(),
                    ic: g1(num_public + 1),
                },
                beta_g1: G1Affine::generator(),
                delta_g1: G1Affine::generator(),
                a: g1(num_vars),
                b_g1: g1(num_vars),
                b_g2: vec![G2Affine::generator(); num_vars],
                c: g1(num_vars.saturating_sub(num_public + 1)),
                h: g1(domain_size),
            },
        }
    }

    /// Row-ordered coefficients, two row-ordered runs (A's then B's), and
    /// coefficients in no order give the same A·w and B·w.
    #[test]
    fn a_and_b_are_the_same_in_pieces_and_in_file_order() {
        use crate::util::sample::rng;
        use rand_core::RngCore;
        let n = 3 * ROWS_PER_TASK + 5;
        let mut r = rng(9);
        let witness: Vec<Fr> = (0..50).map(|_| Fr::random(&mut r)).collect();
        let mut k = key(4 * ROWS_PER_TASK, 1, witness.len());
        k.coefficients = (0..4 * n)
            .map(|i| Coefficient {
                matrix: (i % 3 == 0) as u32,
                row: (i / 4) as u32,
                signal: (r.next_u32() % 50),
                value: Fr::random(&mut r),
            })
            .collect();
        // Over buffers that held something (reused ones do).
        let eval = |k: &ProvingKey| {
            let stale = vec![Fr::one(); k.domain_size];
            let (mut a, mut b) = (stale.clone(), stale);
            evaluate_a_b(k, &witness, &mut a, &mut b);
            (a, b)
        };
        let pieces = eval(&k);
        assert!(pieces.0[n - 1] != Fr::ZERO && pieces.1[3] != Fr::ZERO);
        // Rows no coefficient touches are zero, not what the buffer held.
        assert!(pieces.0[n + 1] == Fr::ZERO && pieces.1[4 * ROWS_PER_TASK - 1] == Fr::ZERO);
        k.coefficients.sort_by_key(|c| c.matrix); // stable: two runs
        assert!(eval(&k) == pieces);
        for i in 0..MAX_RUNS {
            k.coefficients.swap(i * 7, n + i * 5); // past MAX_RUNS runs
        }
        assert!(eval(&k) == pieces);
    }

    #[test]
    fn keys_the_prover_cannot_take_say_why() {
        assert_eq!(key(4, 1, 3).defect(), None);
        let d = |k: ProvingKey| k.defect().unwrap();
        assert!(d(key(3, 1, 3)).contains("power of two"));
        let mut k = key(4, 0, 1);
        k.domain_size = 1 << 28;
        assert!(d(k).contains("below 2^28"));
        let mut k = key(4, 1, 3);
        k.points.b_g2.pop();
        assert_eq!(d(k), "B in G2 has 2 points, not 3");
        let mut k = key(4, 1, 3);
        k.num_public = 3;
        assert!(d(k).contains("3 public signals but 3 signals"));
        let mut k = key(4, 1, 3);
        k.coefficients[0].row = 4;
        assert!(d(k).contains("coefficient 0"));
    }

    #[test]
    fn witnesses_of_another_length_or_without_the_one_are_refused() {
        let k = key(4, 1, 3);
        assert!(k.check_witness(&[Fr::one(), Fr::ZERO, Fr::ZERO]).is_ok());
        let e = k.check_witness(&[Fr::one(), Fr::ZERO]).unwrap_err();
        assert!(e.to_string().contains("2 values"), "{e}");
        let e = k.check_witness(&[Fr::ZERO; 3]).unwrap_err();
        assert!(e.to_string().contains("does not start with 1"), "{e}");
        assert_eq!(
            k.public(&[Fr::one(), Fr::from_u64(9), Fr::ZERO]),
            [Fr::from_u64(9)]
        );
    }
}
