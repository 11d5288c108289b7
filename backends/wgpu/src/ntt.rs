//! Radix-2 NTT over a curve's Fr (BLS12-381's or BN254's: one shader
//! source, the modulus generated in) on the device, with the CPU backend's semantics:
//! natural input runs Gentleman–Sande stages and ends bit-reversed,
//! bit-reversed input runs Cooley–Tukey stages and ends natural, the other
//! two orders add one permutation; coset shifts and 1/n are pointwise passes
//! with factor tables kept on the device. The data buffers are kept for the
//! next call too (the largest size so far: 512 MiB after a 2^24 transform).
//!
//! The stages run in passes of up to `tile_log` stages, one dispatch each:
//! a workgroup loads the elements those stages pair up into workgroup
//! memory, runs the stages there and writes back once (`stages` in
//! shaders/ntt.wgsl), so a 2^20 transform reads and writes memory twice
//! instead of twenty times.
//!
//! Data larger than one storage binding (lavapipe: 128 MiB, 2^22 elements)
//! is split into 2 or 4 buffers of equal power-of-two length, bound side by
//! side, and so are the tables; the shaders pick the buffer from an index's
//! top bits.

use std::sync::Arc;
use std::time::Instant;

use zkpipe_core::plugin::{AccelError, NttConfigOf, NttDirection};
use zkpipe_core::{Curve, Fr, bn254};

use crate::gpu::{Dispatch, Gpu, Kernels, TableKey, TablePieces, as_bytes, as_bytes_mut};
use crate::shader;

/// The passes of a 2^`log_n` transform as (lo, s): the stages of half-widths
/// 2^lo … 2^(lo+s−1), in execution order; DIT runs the passes upward, DIF
/// downward. Full tiles from bit 0 up: a short last pass keeps long
/// contiguous runs, and every pass has lo ≥ w − s (w = min(tile_log, log_n)),
/// which `stages` relies on.
pub(crate) fn passes(log_n: u32, tile_log: u32, dit: bool) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = (0..log_n)
        .step_by(tile_log as usize)
        .map(|lo| (lo, tile_log.min(log_n - lo)))
        .collect();
    if !dit {
        v.reverse();
    }
    v
}

/// Most buffers an NTT's data (and each of its tables) is split over:
/// 1, 2 or 4, two storage bindings per piece within the adapter's limit.
pub(crate) fn max_pieces(limits: &wgpu::Limits) -> u32 {
    [4, 2, 1]
        .into_iter()
        .find(|p| 2 * p <= limits.max_storage_buffers_per_shader_stage)
        .unwrap_or(1)
}

/// The kept data buffers' names, one per piece (at most four).
const DATA_LABELS: [&str; 4] = ["ntt data 0", "ntt data 1", "ntt data 2", "ntt data 3"];

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// One dispatch: kernel, table pieces, parameters, workgroups (x, y).
type Step = (&'static str, TablePieces, [u32; 8], (u32, u32));

/// A scalar field the NTT runs over: four u64 Montgomery limbs with
/// R = 2^256, as the shaders' `Fr_t` holds them.
pub(crate) trait NttField: Copy + Send + Sync + 'static {
    const CURVE: Curve;
    fn limbs(&self) -> [u64; 4];
    fn from_limbs(limbs: [u64; 4]) -> Self;
    fn one() -> Self;
    fn from_u64(v: u64) -> Self;
    fn inverse(&self) -> Option<Self>;
    fn mul(&self, rhs: &Self) -> Self;
    /// A primitive 2^`log_n`-th root of unity (the one the CPU backend uses).
    fn root_of_unity(log_n: u32) -> Self;
}

macro_rules! ntt_field {
    ($t:ty, $curve:expr) => {
        impl NttField for $t {
            const CURVE: Curve = $curve;
            fn limbs(&self) -> [u64; 4] {
                self.limbs
            }
            fn from_limbs(limbs: [u64; 4]) -> Self {
                Self { limbs }
            }
            fn one() -> Self {
                <$t>::one()
            }
            fn from_u64(v: u64) -> Self {
                <$t>::from_u64(v)
            }
            fn inverse(&self) -> Option<Self> {
                <$t>::inverse(self)
            }
            fn mul(&self, rhs: &Self) -> Self {
                <$t>::mul(self, rhs)
            }
            fn root_of_unity(log_n: u32) -> Self {
                <$t>::root_of_unity(log_n)
            }
        }
    };
}

ntt_field!(Fr, Curve::Bls12_381);
ntt_field!(bn254::Fr, Curve::Bn254);

fn powers<F: NttField>(x: &F, c: &F, n: usize) -> Vec<F> {
    let mut out = Vec::with_capacity(n);
    let mut acc = *c;
    for _ in 0..n {
        out.push(acc);
        acc = NttField::mul(&acc, x);
    }
    out
}

impl Gpu {
    /// The table `key` (over `F`, whose curve the key names) in buffers of
    /// at most `piece` elements.
    fn table<F: NttField>(&self, key: TableKey, piece: usize) -> Result<TablePieces, AccelError> {
        if let Some(t) = self.tables.lock().unwrap().get(&(key, piece)) {
            return Ok(t.clone());
        }
        let host: Vec<F> = match key {
            TableKey::Twiddles(curve, log_n, inverse) => {
                debug_assert_eq!(curve, F::CURVE);
                let mut w = F::root_of_unity(log_n);
                if inverse {
                    w = NttField::inverse(&w).expect("roots of unity are nonzero");
                }
                powers(&w, &F::one(), (1usize << log_n) / 2)
            }
            TableKey::Factors(curve, x, c, log_n) => {
                debug_assert_eq!(curve, F::CURVE);
                powers(&F::from_limbs(x), &F::from_limbs(c), 1 << log_n)
            }
        };
        let bufs = host
            .chunks(piece)
            .map(|c| self.upload("ntt table", as_bytes(c), wgpu::BufferUsages::empty()))
            .collect::<Result<Vec<_>, _>>()?;
        let bufs = Arc::new(bufs);
        let mut tables = self.tables.lock().unwrap();
        if tables.len() >= 16 {
            tables.clear(); // bound the device memory the cache holds
        }
        tables.insert((key, piece), bufs.clone());
        Ok(bufs)
    }

    /// How a vector of `n` elements (a power of two) is split for the NTT:
    /// (buffers, elements per buffer), both powers of two.
    ///
    /// # Errors
    /// `INVALID_INPUT` when it needs more buffers of one binding each than
    /// [`max_pieces`].
    pub(crate) fn ntt_split(&self, n: usize) -> Result<(usize, usize), AccelError> {
        let per_binding = (self.max_binding / 32).max(1) as usize;
        let pieces = n.div_ceil(per_binding).next_power_of_two();
        let most = max_pieces(&self.limits) as usize;
        if pieces > most {
            return Err(AccelError::invalid_input(format!(
                "an NTT of 2^{} needs {pieces} buffers of {:.1} MiB; one binding holds at most \
                 {:.1} MiB here (the adapter's max_storage_buffer_binding_size, or the \
                 max_binding_mib setting) and the NTT binds at most {most}",
                n.trailing_zeros(),
                ((n / pieces) * 32) as f64 / (1 << 20) as f64,
                self.max_binding as f64 / (1 << 20) as f64
            )));
        }
        Ok((pieces, n / pieces))
    }

    /// The dispatches of an in-place NTT of the 2^`log_n` elements in
    /// `data` (pieces of equal power-of-two length, as [`Gpu::ntt_split`]
    /// gives them) with `k` = `ntt_kernels(data.len())`: the steps only,
    /// so that vectors already on the device (the SpMV's) transform
    /// without a copy.
    ///
    /// # Errors
    /// Device errors while making the tables.
    pub(crate) fn ntt_steps<F: NttField>(
        &self,
        k: &Kernels,
        data: &[wgpu::Buffer],
        log_n: u32,
        cfg: &NttConfigOf<F>,
    ) -> Result<Vec<Dispatch>, AccelError> {
        let n = 1usize << log_n;
        let piece = n / data.len();
        let inverse = cfg.direction == NttDirection::Inverse;
        let coset = cfg.coset.as_ref().into_option().copied();
        let (in_rev, out_rev) = (cfg.order.input_reversed(), cfg.order.output_reversed());
        let twiddles = self.table::<F>(TableKey::Twiddles(F::CURVE, log_n, inverse), piece)?;
        let piece_log = piece.ilog2();
        let n32 = n as u32;
        let mut steps: Vec<Step> = Vec::new();
        let pointwise = self.grid(n as u64);
        let scale = |x: &F, c: &F, rev: bool| {
            let key = TableKey::Factors(F::CURVE, x.limbs(), c.limbs(), log_n);
            let t = self.table::<F>(key, piece)?;
            Ok::<_, AccelError>((
                "scale",
                t,
                [n32, log_n, 0, 0, rev as u32, 0, piece_log, 0],
                pointwise,
            ))
        };
        if let (false, Some(g)) = (inverse, coset) {
            steps.push(scale(&g, &F::one(), in_rev)?);
        }
        let permute = (
            "bit_reverse",
            twiddles.clone(),
            [n32, log_n, 0, 0, 0, 0, piece_log, 0],
            pointwise,
        );
        let plan = cfg.order.radix2();
        if plan.permute_first {
            steps.push(permute);
        }
        // Each workgroup holds 2^w elements: one tile, or all of a smaller input.
        let w = self.ntt_tile_log.min(log_n);
        for (lo, s) in passes(log_n, self.ntt_tile_log, plan.dit) {
            let p = [n32, log_n, lo, s, plan.dit as u32, w, piece_log, 0];
            steps.push(("stages", twiddles.clone(), p, self.groups((n >> w) as u64)));
        }
        if inverse {
            let n_inv = NttField::inverse(&F::from_u64(n as u64)).expect("n < r");
            let g_inv = coset
                .map(|g| NttField::inverse(&g).unwrap_or(F::from_limbs([0; 4])))
                .unwrap_or_else(F::one);
            steps.push(scale(&g_inv, &n_inv, out_rev)?);
        }
        Ok(steps
            .into_iter()
            .map(|(name, t, p, xy)| {
                let prm = self.params(p);
                let mut entries = vec![(2, prm.as_entire_binding())];
                for (i, d) in data.iter().enumerate() {
                    // A twiddle table has half as many pieces: the
                    // shader never reads the slots past them.
                    let tp = t.get(i).unwrap_or(&t[0]);
                    let (db, tb) = shader::ntt_bindings(i as u32);
                    entries.extend([(db, d.as_entire_binding()), (tb, tp.as_entire_binding())]);
                }
                (name, self.bind_group(k, &entries), xy)
            })
            .collect())
    }

    /// In-place NTT of `values` (length a power of two ≥ 2, checked by the caller).
    ///
    /// # Errors
    /// `INVALID_INPUT` when the data need more buffers of one binding each
    /// than [`max_pieces`]; device errors.
    pub(crate) fn ntt<F: NttField>(
        &self,
        values: &mut [F],
        cfg: &NttConfigOf<F>,
    ) -> Result<(), AccelError> {
        let n = values.len();
        let (pieces, piece) = self.ntt_split(n)?;
        let k = self.ntt_kernels(F::CURVE, pieces as u32)?;
        let traced = std::env::var_os("ZKPIPE_WGPU_TRACE").is_some();
        let t_all = Instant::now();
        let _busy = self.busy.lock().unwrap();
        self.scoped(|| {
            let log_n = n.trailing_zeros();
            let t0 = Instant::now();
            let data = values
                .chunks(piece)
                .zip(DATA_LABELS)
                .map(|(c, label)| {
                    // Kept between calls: a new 2^24 transform's buffers
                    // would cost an allocation and its release each time.
                    let usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
                    let buf = self.scratch(label, (piece * 32) as u64, usage);
                    self.write(&buf, as_bytes(c))?;
                    Ok(buf)
                })
                .collect::<Result<Vec<_>, AccelError>>()?;
            let t_upload = ms(t0);
            let steps = self.ntt_steps(&k, &data, log_n, cfg)?;
            let t_prepare = ms(t0) - t_upload;
            let mut enc = Some(self.dispatch_all(&k, &steps)?);
            for (d, out) in data.iter().zip(values.chunks_mut(piece)) {
                let e = enc
                    .take()
                    .unwrap_or_else(|| self.device.create_command_encoder(&Default::default()));
                self.finish_and_read_into(e, d, as_bytes_mut(out))?;
            }
            if traced {
                eprintln!(
                    "wgpu: ntt 2^{log_n}: upload queued {t_upload:.3} ms, tables and bind groups \
                     {t_prepare:.3} ms, passes and read-back {:.3} ms",
                    ms(t0) - t_upload - t_prepare
                );
            }
            Ok(())
        })?;
        if traced {
            eprintln!(
                "wgpu: ntt 2^{}: {:.3} ms in all (the error scopes' close included)",
                n.trailing_zeros(),
                ms(t_all)
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_core::backend::reference;
    use zkpipe_core::plugin::{NttConfig, NttDirection, NttOrder};
    use zkpipe_core::util::sample;

    #[test]
    fn pass_plans() {
        assert_eq!(passes(20, 10, true), [(0, 10), (10, 10)]);
        assert_eq!(passes(14, 10, false), [(10, 4), (0, 10)]);
        assert_eq!(passes(3, 10, true), [(0, 3)]);
        assert_eq!(passes(7, 2, true), [(0, 2), (2, 2), (4, 2), (6, 1)]);
    }

    /// Tiles of 2, 4 and 8 elements on the first adapter: transforms up to
    /// 2^7 then take up to seven passes, with short passes (several columns
    /// per workgroup) and strided tiles, at sizes the quadratic reference
    /// checks quickly. Passes with a note when there is no adapter.
    #[test]
    fn small_tiles() {
        let Some((_instance, adapter)) = crate::adapter::test_adapter() else {
            return;
        };
        for tile_log in 1..=3 {
            let mut gpu = Gpu::open(&adapter, true, None).unwrap();
            gpu.ntt_tile_log = tile_log;
            // Up, then down: a smaller transform runs in the larger
            // transforms' kept buffers.
            for log in (1..=7u32).chain([2]) {
                for order in NttOrder::ALL {
                    for direction in [NttDirection::Forward, NttDirection::Inverse] {
                        for coset in [None, Some(Fr::from_u64(7))] {
                            let cfg = NttConfig {
                                direction,
                                order,
                                coset: coset.into(),
                                ..Default::default()
                            };
                            let input = sample::scalars(1 << log, log as u64);
                            let want = reference::ntt(&input, &cfg);
                            let mut got = input;
                            gpu.ntt(&mut got, &cfg).unwrap();
                            assert_eq!(got, want, "tile 2^{tile_log} {cfg:?} 2^{log}");
                        }
                    }
                }
            }
        }
    }
}
