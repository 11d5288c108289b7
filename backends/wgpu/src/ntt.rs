//! Radix-2 NTT over Fr on the device, with the CPU backend's semantics:
//! natural input runs Gentleman–Sande stages and ends bit-reversed,
//! bit-reversed input runs Cooley–Tukey stages and ends natural, the other
//! two orders add one permutation; coset shifts and 1/n are pointwise passes
//! with factor tables kept on the device.

use std::sync::Arc;

use zkpipe_core::Fr;
use zkpipe_core::plugin::{AccelError, NttConfig, NttDirection};

use crate::gpu::{Gpu, as_bytes, u64s};

/// A device table: twiddles `(log n, inverse)` or factors `c·x^i` `(x, c, log n)`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum TableKey {
    Twiddles(u32, bool),
    Factors([u64; 4], [u64; 4], u32),
}

fn powers(x: &Fr, c: &Fr, n: usize) -> Vec<Fr> {
    let mut out = Vec::with_capacity(n);
    let mut acc = *c;
    for _ in 0..n {
        out.push(acc);
        acc = acc.mul(x);
    }
    out
}

impl Gpu {
    fn table(&self, key: TableKey) -> Arc<wgpu::Buffer> {
        if let Some(t) = self.tables.lock().unwrap().get(&key) {
            return t.clone();
        }
        let host = match key {
            TableKey::Twiddles(log_n, inverse) => {
                let mut w = Fr::root_of_unity(log_n);
                if inverse {
                    w = w.inverse().expect("roots of unity are nonzero");
                }
                powers(&w, &Fr::one(), (1usize << log_n) / 2)
            }
            TableKey::Factors(x, c, log_n) => {
                powers(&Fr { limbs: x }, &Fr { limbs: c }, 1 << log_n)
            }
        };
        let buf = Arc::new(self.upload("ntt table", as_bytes(&host), wgpu::BufferUsages::empty()));
        let mut tables = self.tables.lock().unwrap();
        if tables.len() >= 16 {
            tables.clear(); // bound the device memory the cache holds
        }
        tables.insert(key, buf.clone());
        buf
    }

    /// In-place NTT of `values` (length a power of two ≥ 2, checked by the caller).
    ///
    /// # Errors
    /// `INVALID_INPUT` when the data exceed one storage binding; device errors.
    pub(crate) fn ntt(&self, values: &mut [Fr], cfg: &NttConfig) -> Result<(), AccelError> {
        let n = values.len();
        let bytes = (n * 32) as u64;
        self.check_binding(&format!("an NTT of 2^{}", n.trailing_zeros()), bytes)?;
        let k = self.ntt_kernels()?;
        let _busy = self.busy.lock().unwrap();
        let out = self.scoped(|| {
            let log_n = n.trailing_zeros();
            let inverse = cfg.direction == NttDirection::Inverse;
            let coset = cfg.coset.into_option();
            let (in_rev, out_rev) = (cfg.order.input_reversed(), cfg.order.output_reversed());
            let data = self.upload("ntt data", as_bytes(values), wgpu::BufferUsages::COPY_SRC);
            let twiddles = self.table(TableKey::Twiddles(log_n, inverse));
            let n32 = n as u32;
            let mut enc = self.device.create_command_encoder(&Default::default());
            // (kernel, table, parameters) per dispatch, in order.
            let mut steps: Vec<(&str, Arc<wgpu::Buffer>, [u32; 8], u64)> = Vec::new();
            let scale = |x: &Fr, c: &Fr, rev: bool| {
                let t = self.table(TableKey::Factors(x.limbs, c.limbs, log_n));
                (
                    "scale",
                    t,
                    [n32, log_n, 0, 0, rev as u32, 0, 0, 0],
                    n as u64,
                )
            };
            if let (false, Some(g)) = (inverse, coset) {
                steps.push(scale(&g, &Fr::one(), in_rev));
            }
            let permute = (
                "bit_reverse",
                twiddles.clone(),
                [n32, log_n, 0, 0, 0, 0, 0, 0],
                n as u64,
            );
            let plan = cfg.order.radix2();
            if plan.permute_first {
                steps.push(permute);
            }
            for half in plan.halves(log_n) {
                let p = [n32, log_n, half, n32 / (2 * half), plan.dit as u32, 0, 0, 0];
                steps.push(("stage", twiddles.clone(), p, n as u64 / 2));
            }
            if inverse {
                let n_inv = Fr::from_u64(n as u64).inverse().expect("n < r");
                let g_inv = coset
                    .map(|g| g.inverse().unwrap_or(Fr::ZERO))
                    .unwrap_or_else(Fr::one);
                steps.push(scale(&g_inv, &n_inv, out_rev));
            }
            let groups: Vec<_> = steps
                .iter()
                .map(|(_, t, p, _)| {
                    let prm = self.params(*p);
                    self.bind_group(&k, &[(0, &data), (1, t), (2, &prm)])
                })
                .collect();
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                for ((name, _, _, threads), bg) in steps.iter().zip(&groups) {
                    pass.set_pipeline(&k.pipelines[name]);
                    pass.set_bind_group(0, bg, &[]);
                    let (x, y) = self.grid(*threads);
                    pass.dispatch_workgroups(x, y, 1);
                }
            }
            self.finish_and_read(enc, &data, bytes)
        })?;
        for (v, l) in values.iter_mut().zip(out.chunks_exact(32)) {
            for (d, s) in v.limbs.iter_mut().zip(u64s(l)) {
                *d = s;
            }
        }
        Ok(())
    }
}
