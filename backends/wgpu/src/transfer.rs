//! Host ↔ device copies through host-visible buffers. Large copies move in
//! pieces through two kept buffers per direction, used in turn, so the
//! host's copy of one piece overlaps the device's transfer of the other (as
//! the CUDA backend's staging does); whole-size buffers would also cost a
//! dedicated allocation of that size.

use std::sync::mpsc;
use std::time::Instant;

use wgpu::util::DeviceExt;
use zkpipe_core::plugin::AccelError;

use crate::gpu::{Gpu, internal};

/// Copies smaller than this stay on the calling thread, in one piece.
const PARALLEL_COPY_MIN_BYTES: usize = 1 << 20;
/// Large copies move in pieces of this many bytes.
const PIECE_BYTES: usize = 32 << 20;
/// Host-visible buffers per direction, used in turn.
const SLOTS: usize = 2;

/// One direction's host-visible buffers and the submission that last used
/// each (the next use of a buffer waits for that one only).
#[derive(Default)]
pub(crate) struct Ring {
    bufs: [Option<wgpu::Buffer>; SLOTS],
    last: [Option<wgpu::SubmissionIndex>; SLOTS],
}

impl Ring {
    /// Bytes its buffers hold.
    pub(crate) fn bytes(&self) -> u64 {
        self.bufs.iter().flatten().map(wgpu::Buffer::size).sum()
    }

    /// Buffer `slot` of at least `size` bytes (made, or remade larger).
    fn buffer(
        &mut self,
        gpu: &Gpu,
        slot: usize,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        if self.bufs[slot].as_ref().is_none_or(|b| b.size() < size) {
            self.bufs[slot] = None; // free the old one first
            self.bufs[slot] = Some(gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("host-visible piece"),
                size,
                usage,
                mapped_at_creation: false,
            }));
        }
        self.bufs[slot].clone().expect("set above")
    }
}

/// Bytes `k·PIECE_BYTES ..` of a copy of `len` bytes.
fn piece(k: usize, len: usize) -> std::ops::Range<usize> {
    k * PIECE_BYTES..((k + 1) * PIECE_BYTES).min(len)
}

fn traced() -> bool {
    std::env::var_os("ZKPIPE_WGPU_TRACE").is_some()
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

impl Gpu {
    /// A storage buffer holding `data`.
    ///
    /// # Errors
    /// A failed map or device loss.
    pub fn upload(
        &self,
        label: &str,
        data: &[u8],
        extra: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, AccelError> {
        let usage = wgpu::BufferUsages::STORAGE | extra;
        if data.len() < PARALLEL_COPY_MIN_BYTES {
            let contents = data;
            let desc = wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            };
            return Ok(self.device.create_buffer_init(&desc));
        }
        let size = (data.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.write(&buf, data)?;
        Ok(buf)
    }

    /// Queues a copy of `data` (a multiple of 4 bytes) to the start of `dst`
    /// (`COPY_DST`), ahead of the work submitted after it.
    ///
    /// # Errors
    /// A failed map or device loss.
    pub fn write(&self, dst: &wgpu::Buffer, data: &[u8]) -> Result<(), AccelError> {
        if data.len() < PARALLEL_COPY_MIN_BYTES {
            self.queue.write_buffer(dst, 0, data);
            return Ok(());
        }
        let t0 = Instant::now();
        let mut ring = self.upload_ring.lock().unwrap();
        let usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
        let size = PIECE_BYTES.min(data.len()) as u64;
        let count = data.len().div_ceil(PIECE_BYTES);
        let mut waited = 0.0;
        for k in 0..count {
            let (r, slot) = (piece(k, data.len()), k % SLOTS);
            let buf = ring.buffer(self, slot, size, usage);
            let slice = buf.slice(..r.len() as u64);
            // Waits for this buffer's previous copy only: the other piece's
            // transfer runs meanwhile.
            let t = Instant::now();
            self.map_after(&slice, wgpu::MapMode::Write, ring.last[slot].take())?;
            waited += ms(t);
            {
                let mut view = slice
                    .get_mapped_range_mut()
                    .map_err(|e| internal(format!("mapping an upload: {e}")))?;
                parallel_copy(view.slice(..), &data[r.clone()]);
            }
            buf.unmap();
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&buf, 0, dst, r.start as u64, r.len() as u64);
            ring.last[slot] = Some(self.queue.submit([enc.finish()]));
        }
        if traced() {
            eprintln!(
                "wgpu: upload of {} KiB queued in {count} pieces: {:.3} ms, of which waiting {waited:.3} ms",
                data.len() >> 10,
                ms(t0)
            );
        }
        Ok(())
    }

    /// Maps `slice` and waits until it is mapped: after submission `after`
    /// (the last that used its buffer), or after all work so far.
    ///
    /// # Errors
    /// A failed map or device loss.
    fn map_after(
        &self,
        slice: &wgpu::BufferSlice<'_>,
        mode: wgpu::MapMode,
        after: Option<wgpu::SubmissionIndex>,
    ) -> Result<(), AccelError> {
        let (tx, rx) = mpsc::channel();
        slice.map_async(mode, move |r| {
            let _ = tx.send(r);
        });
        if let Some(index) = after {
            self.wait_for(Some(index))?;
        }
        let r = match rx.try_recv() {
            Ok(r) => r,
            Err(_) => {
                self.wait_for(None)?;
                rx.recv().map_err(|_| internal("map callback never ran"))?
            }
        };
        r.map_err(|e| internal(format!("mapping a host buffer: {e}")))
    }

    /// Submits `enc` after copying `src` into a mapped buffer, waits, returns the bytes.
    ///
    /// # Errors
    /// A failed map or device loss.
    pub fn finish_and_read(
        &self,
        enc: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<Vec<u8>, AccelError> {
        let mut out = vec![0u8; bytes as usize];
        self.finish_and_read_into(enc, src, &mut out)?;
        Ok(out)
    }

    /// As [`Gpu::finish_and_read`], into `out` (`out.len()` bytes, a
    /// multiple of 4).
    ///
    /// # Errors
    /// A failed map or device loss.
    pub fn finish_and_read_into(
        &self,
        enc: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        out: &mut [u8],
    ) -> Result<(), AccelError> {
        let len = out.len();
        if len == 0 {
            self.queue.submit([enc.finish()]);
            return Ok(());
        }
        // With ZKPIPE_WGPU_TRACE the kernels have run already (`dispatch`).
        let t0 = Instant::now();
        let mut ring = self.readback_ring.lock().unwrap();
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let size = PIECE_BYTES.min(len) as u64;
        let count = len.div_ceil(PIECE_BYTES);
        let mut enc = Some(enc);
        // Piece k's copy is queued into its slot; the host copies it out once
        // that copy has run, and the slot takes piece k + SLOTS.
        let mut queue = |ring: &mut Ring, k: usize| {
            let (r, slot) = (piece(k, len), k % SLOTS);
            let buf = ring.buffer(self, slot, size, usage);
            let mut e = enc
                .take()
                .unwrap_or_else(|| self.device.create_command_encoder(&Default::default()));
            e.copy_buffer_to_buffer(src, r.start as u64, &buf, 0, r.len() as u64);
            ring.last[slot] = Some(self.queue.submit([e.finish()]));
        };
        for k in 0..count.min(SLOTS) {
            queue(&mut ring, k);
        }
        let mut waited = 0.0;
        for k in 0..count {
            let (r, slot) = (piece(k, len), k % SLOTS);
            let buf = ring.bufs[slot].clone().expect("queued above");
            let slice = buf.slice(..r.len() as u64);
            let t = Instant::now();
            self.map_after(&slice, wgpu::MapMode::Read, ring.last[slot].take())?;
            waited += ms(t);
            {
                let view = slice
                    .get_mapped_range()
                    .map_err(|e| internal(format!("mapped range: {e}")))?;
                parallel_copy(wgpu::WriteOnly::from(&mut out[r]), &view);
            }
            buf.unmap();
            if k + SLOTS < count {
                queue(&mut ring, k + SLOTS);
            }
        }
        if traced() {
            eprintln!(
                "wgpu: read-back of {} KiB in {count} pieces: {:.3} ms, of which waiting {waited:.3} ms",
                len >> 10,
                ms(t0)
            );
        }
        Ok(())
    }
}

/// `dst.copy_from_slice(src)` on several threads: mapped memory may be
/// uncached or write-combined, which one core reads or fills far below the
/// bus's speed (several times slower than 16 threads on a GPU machine).
/// The threads are the plugin's standing pool:
/// spawning 16 per piece would cost a fair part of a ~1 ms piece.
fn parallel_copy(mut dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8]) {
    let threads = copy_threads(src.len());
    if threads == 1 {
        return dst.copy_from_slice(src);
    }
    let mut parts = Vec::with_capacity(threads);
    for s in src.chunks(src.len().div_ceil(threads)) {
        let (head, tail) = dst.split_at(s.len());
        dst = tail;
        parts.push((SendWriteOnly(head), s));
    }
    rayon::scope(|sc| {
        for (piece, s) in parts {
            sc.spawn(move |_| {
                let mut piece = piece; // the whole wrapper moves, not its field
                piece.0.copy_from_slice(s)
            });
        }
    });
}

/// A disjoint piece of the destination, handed to one copying thread.
struct SendWriteOnly<'a>(wgpu::WriteOnly<'a, [u8]>);
// SAFETY: `WriteOnly<T>` is `Send` for every `T: Send`; `[u8]` misses it only
// for not being `Sized`. Each piece covers its own bytes (split_at), and the
// scope joins every task before the destination is released.
unsafe impl Send for SendWriteOnly<'_> {}

/// Tasks for a copy of `bytes`: one per pool thread (at most 16), at least
/// 1 MiB each.
fn copy_threads(bytes: usize) -> usize {
    rayon::current_num_threads()
        .min(16)
        .min(bytes / PARALLEL_COPY_MIN_BYTES)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces cover a copy exactly, in order, the last one short.
    #[test]
    fn pieces_cover_the_copy() {
        let len = 2 * PIECE_BYTES + 12;
        let count = len.div_ceil(PIECE_BYTES);
        let ranges: Vec<_> = (0..count).map(|k| piece(k, len)).collect();
        assert_eq!(ranges.len(), 3);
        assert_eq!(ranges[0], 0..PIECE_BYTES);
        assert_eq!(ranges[2], 2 * PIECE_BYTES..len);
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
    }
}
