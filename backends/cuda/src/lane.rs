//! Lanes: a device with one stream (and its page-locked staging pieces)
//! taken for the length of an op, so concurrent callers run on their own
//! streams. Also what every op's launches share: `grid`, `Profile`, memory checks.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use zkpipe_core::plugin::{AccelError, ErrorCode};

use crate::device::{Gpu, pool_keep};
use crate::error::driver_err;
use crate::staging::{self, Staging};

/// Whether `ZKPIPE_CUDA_PROFILE` asks for times on stderr (read once).
pub(crate) fn profiling() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("ZKPIPE_CUDA_PROFILE").is_some())
}

/// Per-step times on stderr when `ZKPIPE_CUDA_PROFILE` is set (it
/// synchronises after every step, so totals grow a little).
pub(crate) struct Profile<'a> {
    stream: Option<&'a Arc<CudaStream>>,
    last: Instant,
    marks: Vec<(&'static str, f64)>,
}

impl<'a> Profile<'a> {
    pub(crate) fn new(stream: &'a Arc<CudaStream>) -> Self {
        Profile {
            stream: profiling().then_some(stream),
            last: Instant::now(),
            marks: vec![],
        }
    }

    pub(crate) fn mark(&mut self, what: &'static str) {
        if let Some(s) = self.stream {
            let _ = s.synchronize();
            let now = Instant::now();
            self.marks
                .push((what, (now - self.last).as_secs_f64() * 1e3));
            self.last = now;
        }
    }

    pub(crate) fn report(&self, what: &str) {
        if self.stream.is_some() {
            let parts: Vec<String> = self
                .marks
                .iter()
                .map(|(w, ms)| format!("{} {ms:.3}", w.trim_start_matches("msm_")))
                .collect();
            eprintln!("cuda {what}: {} ms", parts.join(", "));
        }
    }
}

/// A device with one lane taken for the length of an op. Buffers shared
/// between lanes (resident bases, twiddles, factors) are complete before
/// they are shared, and an op keeps the ones it used until its stream has
/// finished with them: freeing one is queued on the stream that made it,
/// which knows nothing of this op's queued kernels.
pub(crate) struct Lane<'g> {
    gpu: &'g Gpu,
    pub(crate) stream: Arc<CudaStream>,
    staging: Mutex<Staging>,
    held: Mutex<Vec<Arc<CudaSlice<u64>>>>,
}

impl std::ops::Deref for Lane<'_> {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        self.gpu
    }
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        // After an error work may still be queued: finish it before the
        // held buffers go and before the lane serves another op.
        // Poisoned locks are taken as they are: a panic here, during an
        // unwind, would abort the host process.
        let _ = self.stream.synchronize();
        let held = self.held.get_mut().unwrap_or_else(PoisonError::into_inner);
        held.clear();
        let staging = self
            .staging
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let staging = std::mem::take(staging);
        self.gpu
            .lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((self.stream.clone(), staging));
    }
}

/// Synchronises a side stream when dropped: declared after the buffers a
/// side stream copies into, it keeps them from being freed (on the lane's
/// stream) while a copy into them may still run, on every path out.
pub(crate) struct IdleOnDrop<'a>(pub(crate) &'a Arc<CudaStream>);

impl Drop for IdleOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.synchronize();
    }
}

impl Gpu {
    /// An idle lane, or a new stream when every lane is busy; binds the
    /// device's context to this thread.
    pub(crate) fn lane(&self) -> Result<Lane<'_>, AccelError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver_err("binding the context"))?;
        let idle = self.lanes.lock().unwrap().pop();
        let (stream, staging) = match idle {
            Some(l) => l,
            None => (
                self.ctx
                    .new_stream()
                    .map_err(driver_err("creating a stream"))?,
                Staging::default(),
            ),
        };
        Ok(Lane {
            gpu: self,
            stream,
            staging: Mutex::new(staging),
            held: Mutex::new(Vec::new()),
        })
    }
}

pub(crate) fn grid(count: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count.div_ceil(256).max(1) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl Lane<'_> {
    /// A device copy of `words`, through page-locked memory when large.
    /// Returns once the last piece is queued (the pieces' events guard their
    /// reuse; the copy is ordered before later work on this lane's stream).
    pub(crate) fn upload(&self, words: &[u64]) -> Result<CudaSlice<u64>, AccelError> {
        staging::upload(&self.stream, &self.ctx, &self.staging, &self.lent, words)
    }

    /// As [`Lane::upload`], queued on `stream`: a copy that should run
    /// beside the kernels already queued on this lane's stream (the caller
    /// makes the lane's stream wait for it).
    pub(crate) fn upload_on(
        &self,
        stream: &Arc<CudaStream>,
        words: &[u64],
    ) -> Result<CudaSlice<u64>, AccelError> {
        staging::upload(stream, &self.ctx, &self.staging, &self.lent, words)
    }

    /// Copies `words` into `dev` on `stream`, as [`Lane::upload_on`].
    pub(crate) fn upload_into_on(
        &self,
        stream: &Arc<CudaStream>,
        words: &[u64],
        dev: &mut CudaSlice<u64>,
    ) -> Result<(), AccelError> {
        staging::upload_into(stream, &self.ctx, &self.staging, &self.lent, words, dev)
    }

    /// Copies `dev` into `out`, through page-locked memory when large
    /// (straight into `out` when it is memory this plugin lent).
    pub(crate) fn download(&self, dev: &CudaSlice<u64>, out: &mut [u64]) -> Result<(), AccelError> {
        staging::download(&self.stream, &self.ctx, &self.staging, &self.lent, dev, out)
    }

    /// `buf`, kept alive until this op's stream is done (see [`Lane`]).
    pub(crate) fn hold(&self, buf: &Arc<CudaSlice<u64>>) -> Arc<CudaSlice<u64>> {
        self.held.lock().unwrap().push(buf.clone());
        buf.clone()
    }

    /// Free device memory, counting what the stream-ordered pool keeps as
    /// free (it is handed back first when the driver's count looks short).
    pub(crate) fn free_bytes(&self) -> Result<usize, AccelError> {
        self.free_beyond(usize::MAX - (64 << 20))
    }

    /// Free memory, with the pool trimmed if less than `bytes` + 64 MiB is.
    fn free_beyond(&self, bytes: usize) -> Result<usize, AccelError> {
        let query = || {
            self.ctx
                .mem_get_info()
                .map(|(free, _)| free)
                .map_err(driver_err("querying memory"))
        };
        let free = query()?;
        if free >= bytes + (64 << 20) {
            return Ok(free);
        }
        // Memory the pool keeps counts as used: hand it back, then look again.
        self.stream
            .synchronize()
            .map_err(driver_err("synchronising"))?;
        pool_keep(&self.ctx, None);
        query()
    }

    pub(crate) fn check_free(&self, bytes: usize) -> Result<(), AccelError> {
        let free = self.free_beyond(bytes)?;
        if free < bytes + (64 << 20) {
            return Err(AccelError::new(
                ErrorCode::OUT_OF_MEMORY,
                format!("needs {bytes} bytes of device memory, {free} free"),
            ));
        }
        Ok(())
    }
}
