//! One opened adapter: device, queue, pipelines (built at first use) and
//! the plumbing every op shares (buffers, dispatch grids, read-back, errors).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use wgpu::util::DeviceExt;
use zkpipe_core::plugin::{AccelError, ErrorCode};

use crate::shader;

/// Threads per workgroup of the 1-D kernels (2-D grids above the dimension limit).
const WG: u64 = 256;

/// Compute pipelines sharing one bind group layout.
pub(crate) struct Kernels {
    pub layout: wgpu::BindGroupLayout,
    pub pipelines: HashMap<&'static str, wgpu::ComputePipeline>,
}

pub(crate) struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: wgpu::Limits,
    /// Whether the shaders multiply through 64-bit integers.
    pub int64: bool,
    /// log2 of the NTT's workgroup-memory tile (elements), from the adapter's limit.
    pub ntt_tile_log: u32,
    ntt: OnceLock<Result<Arc<Kernels>, String>>,
    msm: OnceLock<Result<Arc<Kernels>, String>>,
    /// Device tables (twiddles, scaling factors) per key, kept across calls.
    pub tables: Mutex<HashMap<crate::ntt::TableKey, Arc<wgpu::Buffer>>>,
    /// One op at a time on this device.
    pub busy: Mutex<()>,
    /// Errors wgpu reports outside an error scope (it would panic by default).
    uncaptured: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("int64", &self.int64)
            .finish_non_exhaustive()
    }
}

pub(crate) fn internal(msg: impl Into<String>) -> AccelError {
    AccelError::new(ErrorCode::INTERNAL, msg)
}

fn storage(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

fn uniform(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

impl Gpu {
    /// Opens `adapter` with its own limits; SHADER_INT64 when offered and `want_int64`.
    ///
    /// # Errors
    /// Why the device could not be created.
    pub fn open(adapter: &wgpu::Adapter, want_int64: bool) -> Result<Gpu, String> {
        let int64 = want_int64 && adapter.features().contains(wgpu::Features::SHADER_INT64);
        let limits = adapter.limits();
        let features = if int64 {
            wgpu::Features::SHADER_INT64
        } else {
            wgpu::Features::empty()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("zkpipe"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| format!("request_device: {e}"))?;
        let uncaptured = Arc::new(Mutex::new(None));
        let slot = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            *slot.lock().unwrap() = Some(e.to_string());
        }));
        Ok(Gpu {
            device,
            queue,
            int64,
            ntt_tile_log: crate::ntt::tile_log(&limits),
            limits,
            ntt: OnceLock::new(),
            msm: OnceLock::new(),
            tables: Mutex::new(HashMap::new()),
            busy: Mutex::new(()),
            uncaptured,
        })
    }

    fn build(
        &self,
        label: &str,
        source: String,
        layout: &[wgpu::BindGroupLayoutEntry],
        entries: &[&'static str],
    ) -> Result<Arc<Kernels>, String> {
        let trace = std::env::var_os("ZKPIPE_WGPU_TRACE").is_some();
        let t0 = std::time::Instant::now();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let bgl = self
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries: layout,
            });
        let pl = self
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(&bgl)],
                immediate_size: 0,
            });
        let pipelines = entries
            .iter()
            .map(|&e| {
                let t1 = std::time::Instant::now();
                let p = self
                    .device
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(e),
                        layout: Some(&pl),
                        module: &module,
                        entry_point: Some(e),
                        compilation_options: Default::default(),
                        cache: None,
                    });
                if trace {
                    eprintln!(
                        "wgpu: {label}/{e} built in {:.2} s",
                        t1.elapsed().as_secs_f64()
                    );
                }
                (e, p)
            })
            .collect();
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(format!("{label} shaders: {e}"));
        }
        if trace {
            eprintln!(
                "wgpu: {label} shaders built in {:.2} s",
                t0.elapsed().as_secs_f64()
            );
        }
        Ok(Arc::new(Kernels {
            layout: bgl,
            pipelines,
        }))
    }

    /// NTT pipelines, compiled at first use.
    ///
    /// # Errors
    /// The shader compiler's message.
    pub fn ntt_kernels(&self) -> Result<Arc<Kernels>, AccelError> {
        self.ntt
            .get_or_init(|| {
                self.build(
                    "ntt",
                    shader::ntt(self.int64, self.ntt_tile_log),
                    &[storage(0, false), storage(1, true), uniform(2)],
                    &["bit_reverse", "stages", "scale"],
                )
            })
            .clone()
            .map_err(internal)
    }

    /// MSM pipelines, compiled at first use.
    ///
    /// # Errors
    /// The shader compiler's message.
    pub fn msm_kernels(&self) -> Result<Arc<Kernels>, AccelError> {
        self.msm
            .get_or_init(|| {
                let mut layout = vec![uniform(0), storage(1, false), storage(2, true)];
                layout.extend((3..8).map(|b| storage(b, false)));
                self.build(
                    "msm",
                    shader::msm(self.int64),
                    &layout,
                    &["digits", "scan", "scatter", "chunk", "tree", "reduce"],
                )
            })
            .clone()
            .map_err(internal)
    }

    /// Checks that one binding of `bytes` fits the adapter's limits.
    ///
    /// # Errors
    /// `INVALID_INPUT` naming the limit.
    pub fn check_binding(&self, what: &str, bytes: u64) -> Result<(), AccelError> {
        let max = self
            .limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size);
        if bytes > max {
            return Err(AccelError::invalid_input(format!(
                "{what} needs a {} MiB buffer; this adapter binds at most {} MiB \
                 (max_storage_buffer_binding_size)",
                bytes >> 20,
                max >> 20
            )));
        }
        Ok(())
    }

    /// A zeroed storage buffer.
    pub fn buffer(&self, label: &str, bytes: u64, extra: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(4),
            usage: wgpu::BufferUsages::STORAGE | extra,
            mapped_at_creation: false,
        })
    }

    /// A storage buffer holding `data`.
    pub fn upload(&self, label: &str, data: &[u8], extra: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: data,
                usage: wgpu::BufferUsages::STORAGE | extra,
            })
    }

    /// A uniform buffer of eight u32 parameters.
    pub fn params(&self, p: [u32; 8]) -> wgpu::Buffer {
        let bytes: Vec<u8> = p.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    pub fn bind_group(&self, k: &Kernels, buffers: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .map(|&(binding, b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &k.layout,
            entries: &entries,
        })
    }

    /// Workgroups (x, y) covering `threads` threads of 256-wide groups.
    pub fn grid(&self, threads: u64) -> (u32, u32) {
        self.groups(threads.div_ceil(WG))
    }

    /// A 2-D grid of at least `groups` workgroups (kernels index them as
    /// x + y·width), within the per-dimension limit.
    pub fn groups(&self, groups: u64) -> (u32, u32) {
        let groups = groups.max(1);
        let gx = groups.min(self.limits.max_compute_workgroups_per_dimension as u64);
        (gx as u32, groups.div_ceil(gx) as u32)
    }

    /// Submits `enc` after copying `src` into a mapped buffer, waits, returns the bytes.
    ///
    /// # Errors
    /// A failed map or device loss.
    pub fn finish_and_read(
        &self,
        mut enc: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<Vec<u8>, AccelError> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // ZKPIPE_WGPU_TRACE: wait for the kernels (and uploads) alone first,
        // so the copy back is timed on its own.
        let trace = std::env::var_os("ZKPIPE_WGPU_TRACE").is_some();
        let t0 = std::time::Instant::now();
        if trace {
            self.queue.submit([enc.finish()]);
            self.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| {
                    AccelError::new(ErrorCode::DEVICE_UNAVAILABLE, format!("poll: {e}"))
                })?;
            enc = self.device.create_command_encoder(&Default::default());
        }
        let t1 = std::time::Instant::now();
        enc.copy_buffer_to_buffer(src, 0, &staging, 0, bytes);
        self.queue.submit([enc.finish()]);
        let slice = staging.slice(..);
        let (tx, rx) = mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| AccelError::new(ErrorCode::DEVICE_UNAVAILABLE, format!("poll: {e}")))?;
        rx.recv()
            .map_err(|_| internal("read-back callback never ran"))?
            .map_err(|e| internal(format!("mapping the result: {e}")))?;
        let out = slice
            .get_mapped_range()
            .map_err(|e| internal(format!("mapped range: {e}")))?
            .to_vec();
        staging.unmap();
        if trace {
            eprintln!(
                "wgpu: uploads + kernels {:.3} ms, read-back of {} KiB {:.3} ms",
                (t1 - t0).as_secs_f64() * 1e3,
                bytes >> 10,
                t1.elapsed().as_secs_f64() * 1e3
            );
        }
        Ok(out)
    }

    /// Runs `f` inside out-of-memory and validation error scopes; a captured
    /// error replaces `f`'s result.
    ///
    /// # Errors
    /// `f`'s error, `OUT_OF_MEMORY` for an allocation failure, `INTERNAL` for
    /// a validation error (a bug here).
    pub fn scoped<R>(&self, f: impl FnOnce() -> Result<R, AccelError>) -> Result<R, AccelError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let r = f();
        let v = pollster::block_on(val.pop());
        let o = pollster::block_on(oom.pop());
        if let Some(e) = o {
            return Err(AccelError::new(ErrorCode::OUT_OF_MEMORY, e.to_string()));
        }
        if let Some(e) = v {
            return Err(internal(format!("wgpu validation: {e}")));
        }
        if let Some(e) = self.uncaptured.lock().unwrap().take() {
            return Err(internal(format!("wgpu: {e}")));
        }
        r
    }
}

/// Bytes of a slice of plain limb types (`Fr`, `G1Affine`, …).
pub(crate) fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: the seam types are repr(C) arrays of u64 without padding; any
    // byte view of initialised values is valid.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Little-endian u64 limbs of little-endian bytes.
pub(crate) fn u64s(b: &[u8]) -> impl Iterator<Item = u64> + '_ {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
}

#[cfg(not(target_endian = "little"))]
compile_error!("the wgpu backend uploads blst's limbs as bytes: little-endian hosts only");
