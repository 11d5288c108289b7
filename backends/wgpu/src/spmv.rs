//! R1CS matrices resident on a device and Groth16's quotient straight from
//! a witness: SpMV into three domain-length vectors on the device, the
//! satisfaction check, then the quotient's transforms on those vectors
//! (`Gpu::ntt_steps`) and a pointwise pass; only h is read back.
//!
//! Each matrix is kept in chunks of rows, each chunk's columns and
//! coefficients within one storage binding and its rows within one aligned
//! block of 2^`block_log` rows (the largest power of two of elements one
//! binding holds). A domain vector split for the NTT has pieces of at least
//! that many elements, so a chunk's rows always fall in one piece and a
//! dispatch binds that piece alone. The private witness is split the same
//! way, over up to four buffers.

use rayon::prelude::*;
use zkpipe_core::plugin::{
    AccelError, CsrRef, NttConfig, NttDirection, NttOrder, R1csRef, R1csShape,
};
use zkpipe_core::{Curve, Fr};

use crate::gpu::{Dispatch, Gpu, Kernels, as_bytes, as_bytes_mut};
use crate::shape::{SPMV_ONE_BIT, SPMV_SEGMENT};

/// Most buffers the private witness is split over.
const MAX_AUX_PIECES: u32 = 4;
/// Storage bindings of the SpMV kernels besides the private witness.
const FIXED_BINDINGS: u32 = 5;

const AUX_LABELS: [&str; 4] = ["spmv aux 0", "spmv aux 1", "spmv aux 2", "spmv aux 3"];
const VECTOR_LABELS: [[&str; 4]; 3] = [
    ["spmv a 0", "spmv a 1", "spmv a 2", "spmv a 3"],
    ["spmv b 0", "spmv b 1", "spmv b 2", "spmv b 3"],
    ["spmv c 0", "spmv c 1", "spmv c 2", "spmv c 3"],
];

/// Rows of one matrix on the device.
struct Chunk {
    /// Its first row in the matrix.
    row0: u64,
    rows: u32,
    /// Row starts relative to the chunk (rows + 1), then the rows longer
    /// than one segment, longest first.
    meta: wgpu::Buffer,
    /// Columns, `SPMV_ONE_BIT` set where the coefficient is one.
    cols: wgpu::Buffer,
    vals: wgpu::Buffer,
    /// Long rows still going in pass k + 1 (entries past (k + 1)·SEG).
    passes: Vec<u32>,
}

/// A constraint system on a device.
pub(crate) struct DeviceR1cs {
    pub(crate) device: u32,
    pub(crate) shape: R1csShape,
    mats: [Vec<Chunk>; 3],
    /// The private witness's buffers and log2 of the elements in each.
    aux_pieces: u32,
    block_log: u32,
    /// Device bytes held.
    pub(crate) bytes: u64,
}

impl std::fmt::Debug for DeviceR1cs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceR1cs")
            .field("shape", &self.shape)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

/// A chunk's host arrays before upload.
struct HostChunk {
    row0: u64,
    meta: Vec<u32>,
    cols: Vec<u32>,
    vals: std::ops::Range<usize>,
    passes: Vec<u32>,
}

/// Rows `rows` of `m` as a chunk: row starts rebased, long rows listed
/// longest first, columns marked where the coefficient is one.
fn host_chunk(m: &CsrRef<'_>, rows: std::ops::Range<usize>) -> HostChunk {
    let ptr = m.row_ptr.as_slice();
    let (lo, hi) = (ptr[rows.start] as usize, ptr[rows.end] as usize);
    let mut meta: Vec<u32> = ptr[rows.start..=rows.end]
        .iter()
        .map(|&p| (p as usize - lo) as u32)
        .collect();
    let len = |r: usize| ptr[rows.start + r + 1] - ptr[rows.start + r];
    let seg = u64::from(SPMV_SEGMENT);
    let mut long: Vec<u32> = (0..rows.len())
        .filter(|&r| len(r) > seg)
        .map(|r| r as u32)
        .collect();
    long.sort_by_key(|&r| std::cmp::Reverse(len(r as usize)));
    let longest = long.first().map_or(0, |&r| len(r as usize));
    let passes = (1..longest.div_ceil(seg))
        .map(|k| long.partition_point(|&r| len(r as usize) > k * seg) as u32)
        .collect();
    meta.extend(&long);
    let one = Fr::one();
    let cols = m.cols.as_slice()[lo..hi]
        .par_iter()
        .zip(&m.vals.as_slice()[lo..hi])
        .with_min_len(1 << 14)
        .map(|(&c, v)| if *v == one { c | SPMV_ONE_BIT } else { c })
        .collect();
    HostChunk {
        row0: rows.start as u64,
        meta,
        cols,
        vals: lo..hi,
        passes,
    }
}

/// Cuts `m`'s rows into chunks of at most `max_entries` entries within
/// blocks of 2^`block_log` rows.
///
/// # Errors
/// `INVALID_INPUT` for a row longer than `max_entries`.
fn chunk_rows(
    m: &CsrRef<'_>,
    name: &str,
    block_log: u32,
    max_entries: u64,
) -> Result<Vec<std::ops::Range<usize>>, AccelError> {
    let ptr = m.row_ptr.as_slice();
    let block = 1usize << block_log;
    let mut out = Vec::new();
    let mut start = 0;
    for r in 0..m.rows() {
        let len = ptr[r + 1] - ptr[r];
        if len > max_entries {
            return Err(AccelError::invalid_input(format!(
                "upload_r1cs: {name} row {r} has {len} entries; one storage binding of this \
                 adapter holds {max_entries} coefficients"
            )));
        }
        if r > start && (r % block == 0 || ptr[r + 1] - ptr[start] > max_entries) {
            out.push(start..r);
            start = r;
        }
    }
    if start < m.rows() {
        out.push(start..m.rows());
    }
    Ok(out)
}

impl Gpu {
    /// log2 of the rows of one block and of the elements of one witness
    /// piece: the largest power of two of elements one binding holds.
    fn block_log(&self) -> u32 {
        (self.max_binding / 32).max(1).ilog2()
    }

    /// Witness buffers the SpMV kernels may bind besides their other five.
    pub(crate) fn max_aux_pieces(limits: &wgpu::Limits) -> u32 {
        limits
            .max_storage_buffers_per_shader_stage
            .saturating_sub(FIXED_BINDINGS)
            .min(MAX_AUX_PIECES)
    }

    /// A storage buffer holding `data`, or one zero element when it is
    /// empty (no zero-sized bindings).
    fn upload_padded(&self, label: &str, data: &[u8]) -> Result<wgpu::Buffer, AccelError> {
        let data = if data.is_empty() {
            &[0u8; 32][..]
        } else {
            data
        };
        self.upload(label, data, wgpu::BufferUsages::empty())
    }

    /// Copies checked matrices to this device.
    ///
    /// # Errors
    /// `INVALID_INPUT` for a system the kernels cannot index or bind (with
    /// the limit), `OUT_OF_MEMORY`, device errors.
    pub(crate) fn upload_r1cs(
        &self,
        r: &R1csRef<'_>,
        device: u32,
    ) -> Result<DeviceR1cs, AccelError> {
        let shape = r.shape();
        let block_log = self.block_log();
        let per_binding = 1u64 << block_log;
        let most = Self::max_aux_pieces(&self.limits);
        let aux_pieces = shape.num_aux.div_ceil(per_binding).max(1);
        let refuse = |what: String| Err(AccelError::invalid_input(format!("upload_r1cs: {what}")));
        if shape.num_inputs + shape.num_aux >= u64::from(SPMV_ONE_BIT) {
            return refuse(format!(
                "{} variables; the wgpu backend takes fewer than 2^31",
                shape.num_inputs + shape.num_aux
            ));
        }
        if shape.num_inputs > per_binding || aux_pieces > u64::from(most) {
            return refuse(format!(
                "{} inputs and {} aux need {aux_pieces} buffers of {per_binding} elements for \
                 the private witness (and one for the inputs); this adapter binds at most {most} \
                 beside the kernels' other bindings",
                shape.num_inputs, shape.num_aux
            ));
        }
        let max_rows = u64::from(crate::ntt::max_pieces(&self.limits)) << block_log;
        if shape.rows + shape.num_inputs > max_rows {
            return refuse(format!(
                "{} rows and {} inputs need a domain above the 2^{} this adapter transforms",
                shape.rows,
                shape.num_inputs,
                max_rows.ilog2()
            ));
        }
        let max_entries = self.max_binding / 32;
        let mut bytes = 0;
        let mut upload_matrix = |name: &str, m: &CsrRef<'_>| -> Result<Vec<Chunk>, AccelError> {
            let ranges = chunk_rows(m, name, block_log, max_entries)?;
            ranges
                .into_iter()
                .map(|rows| {
                    let h = host_chunk(m, rows.clone());
                    let vals = &m.vals.as_slice()[h.vals.clone()];
                    let chunk = self.scoped(|| {
                        Ok(Chunk {
                            row0: h.row0,
                            rows: rows.len() as u32,
                            meta: self.upload_padded("r1cs rows", as_bytes(&h.meta))?,
                            cols: self.upload_padded("r1cs columns", as_bytes(&h.cols))?,
                            vals: self.upload_padded("r1cs coefficients", as_bytes(vals))?,
                            passes: h.passes,
                        })
                    })?;
                    bytes += chunk.meta.size() + chunk.cols.size() + chunk.vals.size();
                    Ok(chunk)
                })
                .collect()
        };
        let mats = [
            upload_matrix("A", &r.a)?,
            upload_matrix("B", &r.b)?,
            upload_matrix("C", &r.c)?,
        ];
        Ok(DeviceR1cs {
            device,
            shape,
            mats,
            aux_pieces: aux_pieces as u32,
            block_log,
            bytes,
        })
    }

    /// h from the witness `inputs ‖ aux` over `r`'s matrices on the coset
    /// `g·⟨ω⟩` (n = `h.len()`, checked against `r` by the caller): a, b, c
    /// are made and consumed on the device. With `check`, the first
    /// constraint with `a·b ≠ c`, if any, is returned and `h` left alone.
    ///
    /// # Errors
    /// `INVALID_INPUT` for a domain the NTT cannot split or `gⁿ = 1`;
    /// `OUT_OF_MEMORY`; device errors.
    pub(crate) fn quotient_from_witness(
        &self,
        r: &DeviceR1cs,
        inputs: &[Fr],
        aux: &[Fr],
        h: &mut [Fr],
        g: &Fr,
        check: bool,
    ) -> Result<Option<u64>, AccelError> {
        let n = h.len();
        let log_n = n.trailing_zeros();
        let z_inv = zkpipe_core::groth16::vanishing_inverse(g, n).ok_or_else(|| {
            AccelError::invalid_input("quotient_from_witness: gⁿ = 1 for this coset shift")
        })?;
        let (pieces, piece) = self.ntt_split(n)?;
        debug_assert!(piece >= 1 << r.block_log.min(log_n), "a chunk spans pieces");
        let ntt = self.ntt_kernels(Curve::Bls12_381, pieces as u32)?;
        let sp = self.spmv_kernels(r.aux_pieces)?;
        let q = self.quotient_kernels()?;
        let _busy = self.busy.lock().unwrap();
        self.scoped(|| {
            let copy = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            let inp = self.scratch("spmv inputs", (inputs.len() * 32).max(32) as u64, copy);
            if !inputs.is_empty() {
                self.write(&inp, as_bytes(inputs))?;
            }
            let aux_len = 1usize << r.block_log;
            let aux_bufs = (0..r.aux_pieces as usize)
                .map(|k| {
                    let part = aux.get(k * aux_len..).unwrap_or(&[]);
                    let part = &part[..part.len().min(aux_len)];
                    let buf = self.scratch(AUX_LABELS[k], (part.len() * 32).max(32) as u64, copy);
                    if !part.is_empty() {
                        self.write(&buf, as_bytes(part))?;
                    }
                    Ok(buf)
                })
                .collect::<Result<Vec<_>, AccelError>>()?;
            let vectors: [Vec<wgpu::Buffer>; 3] = VECTOR_LABELS.map(|labels| {
                labels[..pieces]
                    .iter()
                    .map(|l| self.scratch(l, (piece * 32) as u64, copy))
                    .collect()
            });
            self.queue
                .submit([self.domain_rows(r, &vectors, &inp, piece).finish()]);
            let steps = self.spmv_steps(&sp, r, &vectors, &inp, &aux_bufs, piece);
            self.queue
                .submit([self.dispatch_all(&sp, &steps)?.finish()]);
            let first = self.scratch("spmv first row", 4, copy);
            let z = fr_words(&z_inv);
            let pointwise = |name: &'static str, rows: usize| -> Vec<Dispatch> {
                (0..pieces)
                    .map(|p| (p, rows.saturating_sub(p * piece).min(piece)))
                    .filter(|&(_, count)| count > 0)
                    .map(|(p, count)| {
                        let mut words = vec![count as u32, (p * piece) as u32, 0, 0];
                        words.extend(z);
                        let prm = self.uniform_words(&words);
                        let [a, b, c] = [0, 1, 2].map(|v| vectors[v][p].as_entire_binding());
                        let bg = self.bind_group(
                            &q,
                            &[
                                (0, prm.as_entire_binding()),
                                (1, a),
                                (2, b),
                                (3, c),
                                (4, first.as_entire_binding()),
                            ],
                        );
                        (name, bg, self.grid(count as u64))
                    })
                    .collect()
            };
            let m = r.shape.rows as usize;
            if check && m > 0 {
                self.write(&first, &u32::MAX.to_le_bytes())?;
                let enc = self.dispatch_all(&q, &pointwise("check", m))?;
                let row = self.finish_and_read(enc, &first, 4)?;
                let row = u32::from_le_bytes(row.try_into().expect("four bytes"));
                if row != u32::MAX {
                    return Ok(Some(u64::from(row)));
                }
            }
            let cfg = |direction, order, coset: Option<Fr>| NttConfig {
                direction,
                order,
                coset: coset.into(),
                ..Default::default()
            };
            // Bit-reversed coefficients feed the coset NTT directly, as in
            // core's `quotient_steps`.
            for v in &vectors {
                let mut steps = self.ntt_steps(
                    &ntt,
                    v,
                    log_n,
                    &cfg(NttDirection::Inverse, NttOrder::NR, None),
                )?;
                steps.extend(self.ntt_steps(
                    &ntt,
                    v,
                    log_n,
                    &cfg(NttDirection::Forward, NttOrder::RN, Some(*g)),
                )?);
                self.queue
                    .submit([self.dispatch_all(&ntt, &steps)?.finish()]);
            }
            let enc = self.dispatch_all(&q, &pointwise("combine", n))?;
            self.queue.submit([enc.finish()]);
            let last = cfg(NttDirection::Inverse, NttOrder::NN, Some(*g));
            let steps = self.ntt_steps(&ntt, &vectors[0], log_n, &last)?;
            let mut enc = Some(self.dispatch_all(&ntt, &steps)?);
            for (d, out) in vectors[0].iter().zip(h.chunks_mut(piece)) {
                let e = enc
                    .take()
                    .unwrap_or_else(|| self.device.create_command_encoder(&Default::default()));
                self.finish_and_read_into(e, d, as_bytes_mut(out))?;
            }
            Ok(None)
        })
    }

    /// Copies and clears for the domain's rows past the constraints:
    /// bellman's `input_i · 1 = 0` rows (the inputs, in a), then zeros.
    fn domain_rows(
        &self,
        r: &DeviceR1cs,
        vectors: &[Vec<wgpu::Buffer>; 3],
        inp: &wgpu::Buffer,
        piece: usize,
    ) -> wgpu::CommandEncoder {
        let (m, ni) = (r.shape.rows as usize, r.shape.num_inputs as usize);
        let mut enc = self.device.create_command_encoder(&Default::default());
        for (v, bufs) in vectors.iter().enumerate() {
            let copied = if v == 0 { ni } else { 0 };
            for (p, buf) in bufs.iter().enumerate() {
                let (lo, hi) = (p * piece, (p + 1) * piece);
                // Global rows [m, m + copied) take inputs, [m + copied, n) zeros.
                let (c0, c1) = (m.clamp(lo, hi), (m + copied).clamp(lo, hi));
                if c1 > c0 {
                    let at = |row: usize| (32 * row) as u64;
                    enc.copy_buffer_to_buffer(inp, at(c0 - m), buf, at(c0 - lo), at(c1 - c0));
                }
                if hi > c1 {
                    enc.clear_buffer(buf, (32 * (c1 - lo)) as u64, Some((32 * (hi - c1)) as u64));
                }
            }
        }
        enc
    }

    /// The SpMV dispatches: every chunk of the three matrices into the
    /// piece of a, b or c its rows fall in.
    fn spmv_steps(
        &self,
        sp: &Kernels,
        r: &DeviceR1cs,
        vectors: &[Vec<wgpu::Buffer>; 3],
        inp: &wgpu::Buffer,
        aux: &[wgpu::Buffer],
        piece: usize,
    ) -> Vec<Dispatch> {
        let ni = r.shape.num_inputs as u32;
        let mut steps = Vec::new();
        for (chunks, out) in r.mats.iter().zip(vectors) {
            for ch in chunks {
                let (p, base) = (ch.row0 as usize / piece, ch.row0 as usize % piece);
                let bind = |prm: [u32; 8]| {
                    let prm = self.params(prm);
                    let mut entries = vec![
                        (0, prm.as_entire_binding()),
                        (1, ch.meta.as_entire_binding()),
                        (2, ch.cols.as_entire_binding()),
                        (3, ch.vals.as_entire_binding()),
                        (4, out[p].as_entire_binding()),
                        (5, inp.as_entire_binding()),
                    ];
                    entries.extend((0..).zip(aux).map(|(k, b)| (6 + k, b.as_entire_binding())));
                    self.bind_group(sp, &entries)
                };
                let at = [ch.rows, base as u32, 0, 0, ch.rows + 1, ni, r.block_log, 0];
                steps.push(("rows", bind(at), self.grid(u64::from(ch.rows))));
                for (k, &count) in (1..).zip(&ch.passes) {
                    let mut prm = at;
                    (prm[2], prm[3]) = (k, count);
                    steps.push(("long_rows", bind(prm), self.grid(u64::from(count))));
                }
            }
        }
        steps
    }
}

/// The eight little-endian u32 words of `x` (blst's Montgomery limbs).
fn fr_words(x: &Fr) -> [u32; 8] {
    let mut w = [0u32; 8];
    for (k, l) in x.limbs.iter().enumerate() {
        (w[2 * k], w[2 * k + 1]) = (*l as u32, (*l >> 32) as u32);
    }
    w
}
