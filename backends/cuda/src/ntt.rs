//! The NTT and Groth16's fused quotient on a lane: twiddle and scaling
//! tables (kept on the device), the passes' launches, and the quotient's
//! upload → transforms → combine → download sequence.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaViewMut, DevicePtrMut, LaunchConfig, PushKernelArg};
use zkpipe_core::plugin::{AccelError, NttConfig, NttConfigOf, NttDirection, NttOrder};
use zkpipe_core::{Fr, bn254};

use crate::device::CurveKernels;
use crate::error::driver_err;
use crate::lane::{IdleOnDrop, Lane, Profile, grid};
use crate::ntt_plan::{NttPass, ntt_passes, with_top_rows};
use crate::words::{DeviceScalar, limbs, limbs_mut};

/// Consecutive powers each thread of the `powers` kernel writes (one
/// exponentiation per thread, then one product per entry).
const POWERS_PER_THREAD: u32 = 64;

impl Lane<'_> {
    /// Twiddles for every stage of transforms up to 2^log_n, stage after
    /// stage: entry 2^h + j is ω_(2^(h+1))^j (inverted for the inverse), so
    /// a stage's factors are contiguous and one table serves all smaller
    /// sizes. Rebuilt only when a larger transform comes.
    fn twiddles<F: DeviceScalar>(
        &self,
        k: &CurveKernels,
        log_n: u32,
        inverse: bool,
    ) -> Result<Arc<CudaSlice<u64>>, AccelError> {
        let mut cache = k.twiddles.lock().unwrap();
        let slot = &mut cache[inverse as usize];
        if let Some((_, t)) = slot.as_ref().filter(|(log, _)| *log >= log_n) {
            return Ok(self.hold(t));
        }
        // Built on the device: on the host a 2^27 table was a 4-GiB vector
        // and a pageable upload on the first proof of that size.
        let (n, half) = (1usize << log_n, (1usize << log_n) / 2);
        let mut w = F::root_of_unity(log_n);
        if inverse {
            w = w.inverse().expect("roots of unity are nonzero");
        }
        let mut dev = self
            .stream
            .alloc_zeros::<u64>(4 * n)
            .map_err(driver_err("allocating twiddles"))?;
        // The top stage (entries half..n) holds ω^j; each lower stage every
        // 2^(log_n−1−h)-th of them; entry 0 is unused.
        self.fill_powers(k, &mut dev.slice_mut(4 * half..), &w, &F::one(), n - half)?;
        if log_n >= 2 {
            let mut l = self.stream.launch_builder(&k.twiddle_lower);
            l.arg(&mut dev).arg(&log_n);
            // SAFETY: the table holds n elements; the kernel reads entries
            // ≥ half and writes entries < half.
            unsafe { l.launch(grid(half)) }.map_err(driver_err("twiddle_lower kernel"))?;
        }
        self.stream
            .synchronize()
            .map_err(driver_err("synchronising"))?;
        let dev = Arc::new(dev);
        *slot = Some((log_n, dev.clone()));
        Ok(self.hold(&dev))
    }

    /// `out[i] = c·x^i` for i < n (`out` holds n elements), on the device.
    fn fill_powers<F: DeviceScalar>(
        &self,
        k: &CurveKernels,
        out: &mut CudaViewMut<'_, u64>,
        x: &F,
        c: &F,
        n: usize,
    ) -> Result<(), AccelError> {
        let (x, c, n32, per) = (x.limbs(), c.limbs(), n as u32, POWERS_PER_THREAD);
        let mut l = self.stream.launch_builder(&k.powers);
        l.arg(out);
        for v in x.iter().chain(&c) {
            l.arg(v);
        }
        l.arg(&n32).arg(&per);
        // SAFETY: `out` holds n elements; thread t writes entries
        // t·per .. min((t+1)·per, n).
        unsafe { l.launch(grid(n.div_ceil(per as usize))) }.map_err(driver_err("powers kernel"))?;
        Ok(())
    }

    /// `buf[p] *= c·x^i` (i the natural index of p), with the factors kept
    /// on the device per (x, c, n): a prover's quotient repeats the same few.
    fn scale<F: DeviceScalar>(
        &self,
        k: &CurveKernels,
        buf: &mut CudaSlice<u64>,
        x: &F,
        c: &F,
        log_n: u32,
        reversed: bool,
    ) -> Result<(), AccelError> {
        let n = 1usize << log_n;
        let key = (x.limbs(), c.limbs(), log_n);
        let cached = k.factors.lock().unwrap().get(&key).cloned();
        let s = match cached {
            Some(s) => self.hold(&s),
            None => {
                let mut s = self
                    .stream
                    .alloc_zeros::<u64>(4 * n)
                    .map_err(driver_err("allocating factors"))?;
                self.fill_powers(k, &mut s.slice_mut(..), x, c, n)?;
                let s = Arc::new(s);
                self.stream
                    .synchronize()
                    .map_err(driver_err("synchronising"))?;
                self.hold(&s);
                let mut cache = k.factors.lock().unwrap();
                if cache.len() >= 8 {
                    cache.clear(); // bound device memory held by the cache
                }
                cache.insert(key, s.clone());
                s
            }
        };
        let (n32, rev) = (n as u32, reversed as i32);
        let mut l = self.stream.launch_builder(&k.scale);
        l.arg(buf).arg(&*s).arg(&n32).arg(&log_n).arg(&rev);
        // SAFETY: `buf` and `s` hold n field elements; the kernel reads/writes indices < n.
        unsafe { l.launch(grid(n)) }.map_err(driver_err("scale kernel"))?;
        Ok(())
    }

    /// An NTT of `values` over the scalar field `F` (either curve's).
    ///
    /// # Errors
    /// `OUT_OF_MEMORY` when the buffers do not fit; the curve's kernels
    /// failing to load; driver errors.
    pub(crate) fn ntt<F: DeviceScalar>(
        &self,
        values: &mut [F],
        cfg: &NttConfigOf<F>,
    ) -> Result<(), AccelError> {
        let n = values.len();
        self.check_free(n * 32 * 3)?;
        let k = self.kernels(F::KERNELS)?;
        let mut prof = Profile::new(&self.stream);
        let mut buf = self.upload(limbs(values))?;
        prof.mark("copy in");
        self.ntt_on_device(k, &mut buf, n.trailing_zeros(), cfg)?;
        prof.mark("transform");
        self.download(&buf, limbs_mut(values))?;
        prof.mark("copy out");
        prof.report(&format!("ntt n={n} {:?}", cfg.order));
        Ok(())
    }

    /// Groth16's quotient with a, b, c on the device from upload to download.
    pub(crate) fn quotient(
        &self,
        a: &mut [Fr],
        b: &[Fr],
        c: &[Fr],
        g: &Fr,
    ) -> Result<(), AccelError> {
        let n = a.len();
        let log_n = n.trailing_zeros();
        self.check_free(n * 32 * 5)?;
        // The inputs move on a stream of their own, each input's transforms
        // queued (behind its copy's event) as soon as its copy is: the copy
        // engine moves the next input while the kernels transform this one,
        // and for pageable inputs the host copies the next into the staging
        // pieces meanwhile. The buffers are made on the lane's stream (their
        // frees are queued there, after its kernels).
        let mut prof = Profile::new(&self.stream);
        let e = |what| driver_err(what);
        let mut bufs = Vec::with_capacity(3);
        for _ in 0..3 {
            // SAFETY: each buffer is written by its copy before a kernel reads it.
            bufs.push(unsafe { self.stream.alloc::<u64>(4 * n) }.map_err(e("allocating"))?);
        }
        let copies = self.ctx.new_stream().map_err(e("creating a stream"))?;
        let made = self
            .stream
            .record_event(None)
            .map_err(e("recording an event"))?;
        copies.wait(&made).map_err(e("waiting for the buffers"))?;
        let _copies_done = IdleOnDrop(&copies); // dropped before `bufs`
        for (buf, v) in bufs.iter_mut().zip([&*a, b, c]) {
            self.upload_into_on(&copies, limbs(v), buf)?;
            let copied = copies.record_event(None).map_err(e("recording an event"))?;
            self.stream.wait(&copied).map_err(e("waiting for a copy"))?;
            self.to_coset(buf, log_n, g)?;
        }
        prof.mark("copy in + transforms");
        let qa = self.quotient_from_coset(bufs.try_into().expect("three buffers"), log_n, g)?;
        prof.mark("combine + transform");
        self.download(&qa, limbs_mut(a))?;
        prof.mark("copy out");
        prof.report(&format!("quotient n={n}"));
        Ok(())
    }

    /// Evaluations over ⟨ω⟩ in `buf` → evaluations on the coset g·⟨ω⟩.
    pub(crate) fn to_coset(
        &self,
        buf: &mut CudaSlice<u64>,
        log_n: u32,
        g: &Fr,
    ) -> Result<(), AccelError> {
        self.to_coset_of(&self.bls12_381, buf, log_n, g)
    }

    /// [`Lane::to_coset`] over `F`, with its curve's `kernels`.
    fn to_coset_of<F: DeviceScalar + Default>(
        &self,
        kernels: &CurveKernels,
        buf: &mut CudaSlice<u64>,
        log_n: u32,
        g: &F,
    ) -> Result<(), AccelError> {
        // Bit-reversed coefficients feed the coset NTT directly: no permutation between.
        let to_coeffs = NttConfigOf::<F> {
            direction: NttDirection::Inverse,
            order: NttOrder::NR,
            ..Default::default()
        };
        let to_coset = NttConfigOf::<F> {
            order: NttOrder::RN,
            coset: Some(*g).into(),
            ..Default::default()
        };
        self.ntt_on_device(kernels, buf, log_n, &to_coeffs)?;
        self.ntt_on_device(kernels, buf, log_n, &to_coset)
    }

    /// `a = (a·b − c)·z` elementwise over `F` (n elements each).
    fn combine<F: DeviceScalar>(
        &self,
        kernels: &CurveKernels,
        a: &mut CudaSlice<u64>,
        b: &CudaSlice<u64>,
        c: &CudaSlice<u64>,
        z: &F,
        n: usize,
    ) -> Result<(), AccelError> {
        let (z, n32) = (z.limbs(), n as u32);
        let mut l = self.stream.launch_builder(&kernels.quotient_combine);
        l.arg(a)
            .arg(b)
            .arg(c)
            .arg(&z[0])
            .arg(&z[1])
            .arg(&z[2])
            .arg(&z[3]);
        l.arg(&n32);
        // SAFETY: the three buffers hold n elements each; one thread per index < n.
        unsafe { l.launch(grid(n)) }.map_err(driver_err("quotient_combine kernel"))?;
        Ok(())
    }

    /// BN254's quotient (`Accelerator::bn254_quotient`) from upload to
    /// download: c = a∘b, the three moved to the odd coset ω₂ₙ·⟨ω⟩, then
    /// a = a·b − c there.
    pub(crate) fn bn254_quotient(
        &self,
        a: &mut [bn254::Fr],
        b: &[bn254::Fr],
    ) -> Result<(), AccelError> {
        let n = a.len();
        let log_n = n.trailing_zeros();
        // a, b, c and a transform's scratch.
        self.check_free(n * 32 * 4)?;
        let k = self.kernels(bn254::Fr::KERNELS)?;
        let mut prof = Profile::new(&self.stream);
        let e = |what| driver_err(what);
        let mut qa = self.upload(limbs(a))?;
        let mut qb = self.upload(limbs(b))?;
        prof.mark("copy in");
        // c = a∘b: a copy of a, times b, less nothing.
        // SAFETY: written by the copy before a kernel reads it.
        let mut qc = unsafe { self.stream.alloc::<u64>(4 * n) }.map_err(e("allocating"))?;
        self.stream
            .memcpy_dtod(&qa, &mut qc)
            .map_err(e("copying a"))?;
        let zeros = self
            .stream
            .alloc_zeros::<u64>(4 * n)
            .map_err(e("allocating"))?;
        let one = bn254::Fr::one();
        self.combine(k, &mut qc, &qb, &zeros, &one, n)?;
        drop(zeros);
        let shift = bn254::Fr::root_of_unity(log_n + 1);
        for buf in [&mut qa, &mut qb, &mut qc] {
            self.to_coset_of(k, buf, log_n, &shift)?;
        }
        self.combine(k, &mut qa, &qb, &qc, &one, n)?;
        prof.mark("transforms + combine");
        self.download(&qa, limbs_mut(a))?;
        prof.mark("copy out");
        prof.report(&format!("bn254 quotient n={n}"));
        Ok(())
    }

    /// From a, b, c on the coset g·⟨ω⟩ (2^log_n elements each): the
    /// coefficients of h = (a·b − c)/Z, in `a`'s buffer.
    pub(crate) fn quotient_from_coset(
        &self,
        [mut qa, qb, qc]: [CudaSlice<u64>; 3],
        log_n: u32,
        g: &Fr,
    ) -> Result<CudaSlice<u64>, AccelError> {
        let n = 1usize << log_n;
        let z_inv = zkpipe_core::groth16::vanishing_inverse(g, n)
            .ok_or_else(|| AccelError::invalid_input("quotient: gⁿ = 1 for this coset shift"))?;
        let (z, n32) = (z_inv.limbs, n as u32);
        let mut l = self.stream.launch_builder(&self.bls12_381.quotient_combine);
        l.arg(&mut qa)
            .arg(&qb)
            .arg(&qc)
            .arg(&z[0])
            .arg(&z[1])
            .arg(&z[2])
            .arg(&z[3])
            .arg(&n32);
        // SAFETY: the three buffers hold n elements each; one thread per index < n.
        unsafe { l.launch(grid(n)) }.map_err(driver_err("quotient_combine kernel"))?;
        let from_coset = NttConfig {
            direction: NttDirection::Inverse,
            coset: Some(*g).into(),
            ..Default::default()
        };
        self.ntt_on_device(&self.bls12_381, &mut qa, log_n, &from_coset)?;
        Ok(qa)
    }

    /// The NTT of `buf` (2^log_n elements of `F` on this device), in
    /// place, with `F`'s curve's `kernels`.
    fn ntt_on_device<F: DeviceScalar>(
        &self,
        kernels: &CurveKernels,
        buf: &mut CudaSlice<u64>,
        log_n: u32,
        cfg: &NttConfigOf<F>,
    ) -> Result<(), AccelError> {
        let n = 1usize << log_n;
        let inverse = cfg.direction == NttDirection::Inverse;
        let coset = cfg.coset.into_option();
        let (in_rev, out_rev) = (cfg.order.input_reversed(), cfg.order.output_reversed());
        if let (false, Some(g)) = (inverse, coset) {
            self.scale(kernels, buf, &g, &F::one(), log_n, in_rev)?;
        }
        if n > 1 {
            let tw = self.twiddles::<F>(kernels, log_n, inverse)?;
            // The permutation an order needs rides on the last pass's writes
            // (scattered 32-byte writes cost less than scattered reads, as
            // measured against permuting on the first pass's reads), so the
            // transform is the
            // opposite decimation of the plan that permutes first.
            let plan = cfg.order.radix2();
            let (permute, dit) = (plan.permute_first, plan.dit ^ plan.permute_first);
            let passes = ntt_passes(log_n, dit, self.ntt_shape);
            // A permuting pass writes elements other blocks have yet to read,
            // so it goes to a second buffer unless it is the only block.
            let mut scratch = if permute && passes.len() > 1 {
                Some(
                    self.stream
                        .alloc_zeros::<u64>(4 * n)
                        .map_err(driver_err("allocating NTT scratch"))?,
                )
            } else {
                None
            };
            let count = passes.len();
            for (k, pass) in passes.into_iter().enumerate() {
                let last = k + 1 == count;
                // DIF ends on the lowest pass: permuting there, it takes its
                // rows from the top bits (a DIT top pass's reversed writes
                // are runs already).
                let top = permute && last && !dit && count > 1;
                let NttPass { lo, s, w, low } = if top {
                    with_top_rows(pass, log_n)
                } else {
                    pass
                };
                let (d, rev) = (dit as i32, (permute && last) as i32);
                let (src, _sb) = buf.device_ptr_mut(&self.stream);
                let out = scratch
                    .as_mut()
                    .filter(|_| last)
                    .map(|t| t.device_ptr_mut(&self.stream));
                let dst = out.as_ref().map_or(src, |t| t.0);
                let kernel = if top {
                    &kernels.ntt_pass_top
                } else {
                    &kernels.ntt_pass
                };
                let mut l = self.stream.launch_builder(kernel);
                l.arg(&src)
                    .arg(&dst)
                    .arg(&*tw)
                    .arg(&log_n)
                    .arg(&lo)
                    .arg(&s)
                    .arg(&w)
                    .arg(&low)
                    .arg(&d)
                    .arg(&rev);
                let cfg = LaunchConfig {
                    grid_dim: ((n >> w) as u32, 1, 1),
                    block_dim: (1 << (w - 1), 1, 1),
                    shared_mem_bytes: 32 << w,
                };
                // SAFETY: src and dst hold n elements; each block reads and
                // writes its own 2^w indices < n (tile_index is a bijection
                // for low ≤ lo and lo + w − low ≤ log_n, and with top rows
                // for lo = low = 0 and w ≤ log_n; bit reversal too), and a permuting pass
                // writes another buffer unless it is the only pass (then
                // one block: w = s = log_n); twiddle indices < 2^log_n,
                // the table's length at least;
                // 1 ≤ w ≤ 10: 2^(w−1) ≤ 512 threads, one butterfly each, and
                // 32·2^w bytes of shared memory ≤ 32 KiB.
                unsafe { l.launch(cfg) }.map_err(driver_err("ntt_pass kernel"))?;
            }
            if let Some(t) = scratch.as_mut() {
                std::mem::swap(buf, t);
            }
        }
        if inverse {
            let n_inv = F::from_u64(n as u64).inverse().expect("n < r");
            let g_inv = coset
                .map(|g| g.inverse().unwrap_or(F::ZERO))
                .unwrap_or_else(F::one);
            self.scale(kernels, buf, &g_inv, &n_inv, log_n, out_rev)?;
        }
        Ok(())
    }
}
