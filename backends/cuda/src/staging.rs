//! Staging copies: large host↔device copies go through two 32-MiB
//! page-locked pieces per lane, so the host copy of one piece overlaps the
//! device transfer of the other. Below lanes (a lane owns one `Staging`).
//! Memory this plugin lent (`lent_memory.rs`) is page-locked already: its
//! copies go straight, at the link's speed, with no host copy.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, PinnedHostSlice};
use zkpipe_core::plugin::AccelError;
use zkpipe_core::plugin::LentMemory;

use crate::error::driver_err;

/// Copies below this size skip the staging buffer.
const STAGING_MIN_BYTES: usize = 1 << 20;
/// Staged copies move in pieces of this many words (32 MiB), so the host
/// copy of one piece overlaps the device transfer of another.
const STAGING_PIECE_WORDS: usize = 1 << 22;
/// Page-locked pieces per lane, used in turn (64 MiB, whatever the copy's size).
const STAGING_PIECES: usize = 2;

/// A lane's page-locked staging pieces and the copy last queued on each.
#[derive(Default)]
pub(crate) struct Staging {
    pieces: [Option<PinnedHostSlice<u64>>; STAGING_PIECES],
    done: [Option<cudarc::driver::CudaEvent>; STAGING_PIECES],
}

/// `dst.copy_from_slice(src)` on the plugin's thread pool: one thread
/// cannot keep up with a pinned transfer.
fn parallel_copy(dst: &mut [u64], src: &[u64]) {
    use rayon::prelude::*;
    let chunk = src
        .len()
        .div_ceil(rayon::current_num_threads())
        .max(1 << 16);
    dst.par_chunks_mut(chunk)
        .zip(src.par_chunks(chunk))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

impl Staging {
    /// Piece `slot`, once the copy last queued on it has finished
    /// (allocated on first use).
    fn piece(&mut self, ctx: &Arc<CudaContext>, slot: usize) -> Result<&mut [u64], AccelError> {
        if let Some(done) = self.done[slot].take() {
            done.synchronize().map_err(driver_err("synchronising"))?;
        }
        if self.pieces[slot].is_none() {
            // SAFETY: a piece is written before it is read (uploads fill it,
            // downloads overwrite it).
            let buf = unsafe { ctx.alloc_pinned::<u64>(STAGING_PIECE_WORDS) }
                .map_err(driver_err("allocating page-locked host memory"))?;
            self.pieces[slot] = Some(buf);
        }
        let buf = self.pieces[slot].as_mut().expect("allocated above");
        // Never waits: this type tracks the pieces' copies itself.
        buf.as_mut_slice().map_err(driver_err("staging"))
    }
}

/// Whether `words` lie in memory this plugin lent (page-locked).
fn is_lent(lent: &LentMemory, words: &[u64]) -> bool {
    lent.contains(words.as_ptr() as usize, std::mem::size_of_val(words))
}

/// A device copy of `words` queued on `stream`: see [`upload_into`].
pub(crate) fn upload(
    stream: &Arc<CudaStream>,
    ctx: &Arc<CudaContext>,
    staging: &Mutex<Staging>,
    lent: &LentMemory,
    words: &[u64],
) -> Result<CudaSlice<u64>, AccelError> {
    // SAFETY: every element is written by the copy below before use.
    let mut dev = unsafe { stream.alloc::<u64>(words.len()) }
        .map_err(driver_err("allocating device memory"))?;
    upload_into(stream, ctx, staging, lent, words, &mut dev)?;
    Ok(dev)
}

/// Copies `words` into `dev` on `stream`, through the page-locked pieces of
/// `staging` when large. Returns once the last piece is queued (the pieces'
/// events guard their reuse; the copy is ordered before later work on
/// `stream`). From lent memory the copy is queued whole and runs after the
/// return: the op synchronises before it returns (`Lane`'s drop), so the
/// caller's memory is not read after that.
pub(crate) fn upload_into(
    stream: &Arc<CudaStream>,
    ctx: &Arc<CudaContext>,
    staging: &Mutex<Staging>,
    lent: &LentMemory,
    words: &[u64],
    dev: &mut CudaSlice<u64>,
) -> Result<(), AccelError> {
    if words.len() * 8 < STAGING_MIN_BYTES || is_lent(lent, words) {
        return stream
            .memcpy_htod(words, dev)
            .map_err(driver_err("copying to the device"));
    }
    let mut st = staging.lock().unwrap();
    // The threads fill one piece while the copy engine moves the other
    // (an asynchronous copy from page-locked memory returns at once).
    for (k, w) in words.chunks(STAGING_PIECE_WORDS).enumerate() {
        let slot = k % STAGING_PIECES;
        let host = &mut st.piece(ctx, slot)?[..w.len()];
        parallel_copy(host, w);
        let at = k * STAGING_PIECE_WORDS;
        stream
            .memcpy_htod(&*host, &mut dev.slice_mut(at..at + w.len()))
            .map_err(driver_err("copying to the device"))?;
        st.done[slot] = Some(
            stream
                .record_event(None)
                .map_err(driver_err("recording an event"))?,
        );
    }
    Ok(())
}

/// Copies `dev` into `out` on `stream`, through the page-locked pieces of
/// `staging` when large and `out` is not lent memory; returns when `out`
/// is filled.
pub(crate) fn download(
    stream: &Arc<CudaStream>,
    ctx: &Arc<CudaContext>,
    staging: &Mutex<Staging>,
    lent: &LentMemory,
    dev: &CudaSlice<u64>,
    out: &mut [u64],
) -> Result<(), AccelError> {
    if out.len() * 8 < STAGING_MIN_BYTES || is_lent(lent, out) {
        stream
            .memcpy_dtoh(dev, out)
            .map_err(driver_err("copying from the device"))?;
        return stream.synchronize().map_err(driver_err("synchronising"));
    }
    let mut st = staging.lock().unwrap();
    let count = out.len().div_ceil(STAGING_PIECE_WORDS);
    let len = out.len();
    let range = |k: usize| k * STAGING_PIECE_WORDS..((k + 1) * STAGING_PIECE_WORDS).min(len);
    // Piece k's copy is queued into its slot; the threads copy it out
    // once its event has passed, and the slot takes piece k + PIECES.
    let queue = |st: &mut Staging, k: usize| -> Result<(), AccelError> {
        let (r, slot) = (range(k), k % STAGING_PIECES);
        let host = &mut st.piece(ctx, slot)?[..r.len()];
        stream
            .memcpy_dtoh(&dev.slice(r), host)
            .map_err(driver_err("copying from the device"))?;
        st.done[slot] = Some(
            stream
                .record_event(None)
                .map_err(driver_err("recording an event"))?,
        );
        Ok(())
    };
    for k in 0..count.min(STAGING_PIECES) {
        queue(&mut st, k)?;
    }
    for k in 0..count {
        let r = range(k);
        let host = &st.piece(ctx, k % STAGING_PIECES)?[..r.len()];
        parallel_copy(&mut out[r], host);
        if k + STAGING_PIECES < count {
            queue(&mut st, k + STAGING_PIECES)?;
        }
    }
    Ok(())
}
