//! One opened adapter: device, queue, pipelines (built at first use) and
//! the plumbing every op shares (buffers, dispatch grids, read-back, errors).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use wgpu::util::DeviceExt;
use zkpipe_core::Curve;
use zkpipe_core::plugin::{AccelError, ErrorCode};

use crate::shader::{self, FpLayout};
use crate::shape;
use crate::slow_notice::SlowNotice;
use crate::transfer::Ring;

/// A device table of the NTT over a curve's Fr: twiddles `(log n,
/// inverse)` or factors `c·x^i` `(x, c, log n)`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum TableKey {
    Twiddles(Curve, u32, bool),
    Factors(Curve, [u64; 4], [u64; 4], u32),
}

/// A table's buffers (one, or pieces of the data's piece length).
pub(crate) type TablePieces = Arc<Vec<wgpu::Buffer>>;

/// One recorded kernel launch: entry point, bind group, workgroups (x, y).
pub(crate) type Dispatch = (&'static str, wgpu::BindGroup, (u32, u32));

/// A shader build taking longer than this is announced on stderr, as any
/// long phase is (NVIDIA's driver spends minutes on the G2 MSM's first
/// build on a machine).
const SLOW_BUILD: Duration = Duration::from_secs(2);

/// Pipelines built at first use, or why they could not be.
type Built = OnceLock<Result<Arc<Kernels>, String>>;

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
    /// The MSM's Fp form per curve (follows `int64`); see [`Gpu::fp`].
    fp_layouts: [FpLayout; 2],
    /// log2 of the NTT's workgroup-memory tile (elements), from the adapter's limit.
    pub ntt_tile_log: u32,
    /// Bytes one storage binding may hold: the adapter's limit, or less when
    /// the `max_binding_mib` setting asks (tests use it to force splits).
    pub max_binding: u64,
    /// Per curve (`Curve as usize`): NTT pipelines for data in 1, 2 and 4
    /// buffers; MSM and base-conversion pipelines for G1 ([0]) and G2 ([1]).
    /// Each is built at its first use, so BN254's cost a BLS12-381 user nothing.
    ntt: [[Built; 3]; 2],
    msm: [[Built; 2]; 2],
    bases: [[Built; 2]; 2],
    /// SpMV pipelines for the private witness in 1 to 4 buffers, and the
    /// quotient's pointwise ones (spmv.rs).
    spmv: [Built; 4],
    quotient: Built,
    /// Device tables (twiddles, scaling factors) per key and piece length,
    /// in buffers of at most that many elements, kept across calls.
    pub tables: Mutex<HashMap<(TableKey, usize), TablePieces>>,
    /// One op at a time on this device.
    pub busy: Mutex<()>,
    /// Host-visible pieces for large uploads and read-backs (`transfer`).
    pub(crate) upload_ring: Mutex<Ring>,
    pub(crate) readback_ring: Mutex<Ring>,
    /// Device buffers an op needs only while it runs, per label, kept and
    /// grown for the same reason (an MSM's sorted indices and bucket sums
    /// are 100 MiB and more from 2^20 points); dropped after any error.
    scratch: Mutex<HashMap<&'static str, wgpu::Buffer>>,
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

/// What a pipeline's label starts with: nothing for BLS12-381 (the labels
/// its traces always had), the curve for BN254.
fn label_prefix(curve: Curve) -> &'static str {
    match curve {
        Curve::Bls12_381 => "",
        Curve::Bn254 => "bn254 ",
    }
}

pub(crate) fn internal(msg: impl Into<String>) -> AccelError {
    AccelError::new(ErrorCode::INTERNAL, msg)
}

/// Bytes one storage binding may hold on an adapter with `limits`, at most
/// `cap` when given (the `max_binding_mib` setting).
pub(crate) fn binding_limit(limits: &wgpu::Limits, cap: Option<u64>) -> u64 {
    limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
        .min(cap.unwrap_or(u64::MAX))
}

pub(crate) fn storage(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
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
    /// Opens `adapter` with its own limits; SHADER_INT64 when offered and
    /// `want_int64`; bindings of at most `binding_cap` bytes when given.
    ///
    /// # Errors
    /// Why the device could not be created.
    pub fn open(
        adapter: &wgpu::Adapter,
        want_int64: bool,
        binding_cap: Option<u64>,
    ) -> Result<Gpu, String> {
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
            fp_layouts: Curve::ALL.map(|c| FpLayout::new(c, int64)),
            ntt_tile_log: shape::tile_log(limits.max_compute_workgroup_storage_size),
            max_binding: binding_limit(&limits, binding_cap),
            limits,
            ntt: Default::default(),
            msm: Default::default(),
            bases: Default::default(),
            spmv: Default::default(),
            quotient: Default::default(),
            tables: Mutex::new(HashMap::new()),
            busy: Mutex::new(()),
            upload_ring: Default::default(),
            readback_ring: Default::default(),
            scratch: Mutex::new(HashMap::new()),
            uncaptured,
        })
    }

    pub(crate) fn build(
        &self,
        label: &str,
        source: String,
        layout: &[wgpu::BindGroupLayoutEntry],
        entries: &[&'static str],
    ) -> Result<Arc<Kernels>, String> {
        let trace = std::env::var_os("ZKPIPE_WGPU_TRACE").is_some();
        let t0 = std::time::Instant::now();
        let what = label.to_string();
        let _notice = SlowNotice::new(SLOW_BUILD, move || {
            eprintln!(
                "zkpipe wgpu: the driver is still compiling the {what} shaders after {} s \
                 (a machine's first use can take minutes; later runs reuse the driver's cache)",
                SLOW_BUILD.as_secs()
            )
        });
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

    /// The MSM's Fp form for `curve`.
    pub fn fp(&self, curve: Curve) -> &FpLayout {
        &self.fp_layouts[curve as usize]
    }

    /// NTT pipelines over `curve`'s Fr for data and tables in `pieces` (1,
    /// 2 or 4) buffers each, compiled at first use.
    ///
    /// # Errors
    /// The shader compiler's message.
    pub fn ntt_kernels(&self, curve: Curve, pieces: u32) -> Result<Arc<Kernels>, AccelError> {
        self.ntt[curve as usize][pieces.ilog2() as usize]
            .get_or_init(|| {
                let mut layout = vec![storage(0, false), storage(1, true), uniform(2)];
                for k in 1..pieces {
                    let (d, t) = shader::ntt_bindings(k);
                    layout.extend([storage(d, false), storage(t, true)]);
                }
                self.build(
                    &format!("{}ntt", label_prefix(curve)),
                    shader::ntt(curve, self.int64, self.ntt_tile_log, pieces),
                    &layout,
                    &["bit_reverse", "stages", "scale"],
                )
            })
            .clone()
            .map_err(internal)
    }

    /// MSM pipelines over `curve`'s G1 or G2 (`g2`), compiled at first use.
    ///
    /// # Errors
    /// The shader compiler's message.
    pub fn msm_kernels(&self, curve: Curve, g2: bool) -> Result<Arc<Kernels>, AccelError> {
        self.msm[curve as usize][usize::from(g2)]
            .get_or_init(|| {
                let mut layout = vec![uniform(0), storage(1, false), storage(2, true)];
                layout.extend((3..8).map(|b| storage(b, false)));
                self.build(
                    &format!("{}msm g{}", label_prefix(curve), 1 + u8::from(g2)),
                    shader::msm(self.int64, self.fp(curve), g2),
                    &layout,
                    &[
                        "digits", "scan", "scatter", "chunk", "tree", "reduce", "merge",
                    ],
                )
            })
            .clone()
            .map_err(internal)
    }

    /// The pipeline converting `curve`'s G1 or G2 (`g2`) bases to the
    /// MSM's Fp form, compiled at first use.
    ///
    /// # Errors
    /// The shader compiler's message.
    pub fn bases_kernels(&self, curve: Curve, g2: bool) -> Result<Arc<Kernels>, AccelError> {
        self.bases[curve as usize][usize::from(g2)]
            .get_or_init(|| {
                self.build(
                    &format!("{}msm bases g{}", label_prefix(curve), 1 + u8::from(g2)),
                    shader::bases(self.fp(curve), g2),
                    &[uniform(0), storage(1, true), storage(2, false)],
                    &["convert"],
                )
            })
            .clone()
            .map_err(internal)
    }

    /// SpMV pipelines for a private witness in `aux_pieces` (1 to 4)
    /// buffers, compiled at first use.
    ///
    /// # Errors
    /// The shader compiler's message.
    pub fn spmv_kernels(&self, aux_pieces: u32) -> Result<Arc<Kernels>, AccelError> {
        self.spmv[aux_pieces as usize - 1]
            .get_or_init(|| {
                let mut layout = vec![uniform(0)];
                layout.extend((1..=3).map(|b| storage(b, true)));
                layout.extend([storage(4, false), storage(5, true)]);
                layout.extend((0..aux_pieces).map(|k| storage(6 + k, true)));
                self.build(
                    "spmv",
                    shader::spmv(self.int64, aux_pieces),
                    &layout,
                    &["rows", "long_rows"],
                )
            })
            .clone()
            .map_err(internal)
    }

    /// The quotient's pointwise pipelines (the satisfaction check and
    /// `(a·b − c)/Z`), compiled at first use.
    ///
    /// # Errors
    /// The shader compiler's message.
    pub fn quotient_kernels(&self) -> Result<Arc<Kernels>, AccelError> {
        self.quotient
            .get_or_init(|| {
                let layout = [
                    uniform(0),
                    storage(1, false),
                    storage(2, true),
                    storage(3, true),
                    storage(4, false),
                ];
                self.build(
                    "quotient",
                    shader::quotient(self.int64),
                    &layout,
                    &["check", "combine"],
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
        let max = self.max_binding;
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

    /// A storage buffer of at least `bytes` bytes that only this call uses
    /// (callers hold `busy`), kept for the next call under `label`. Its
    /// contents are left over from earlier calls.
    pub fn scratch(
        &self,
        label: &'static str,
        bytes: u64,
        extra: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let mut kept = self.scratch.lock().unwrap();
        let usage = wgpu::BufferUsages::STORAGE | extra;
        match kept.get(label) {
            Some(b) if b.size() >= bytes && b.usage().contains(usage) => return b.clone(),
            _ => kept.remove(label), // free the old one first
        };
        let b = self.buffer(label, bytes, extra);
        kept.insert(label, b.clone());
        b
    }

    /// Device and host-visible bytes kept between calls: NTT tables, scratch
    /// (NTT data, SpMV vectors and witness, MSM buckets) and the copy rings;
    /// resident bases and matrices not included.
    pub fn kept_bytes(&self) -> u64 {
        let tables: u64 = (self.tables.lock().unwrap().values())
            .flat_map(|t| t.iter())
            .map(wgpu::Buffer::size)
            .sum();
        let scratch: u64 = self
            .scratch
            .lock()
            .unwrap()
            .values()
            .map(wgpu::Buffer::size)
            .sum();
        let rings =
            self.upload_ring.lock().unwrap().bytes() + self.readback_ring.lock().unwrap().bytes();
        tables + scratch + rings
    }

    /// A uniform buffer of eight u32 parameters.
    pub fn params(&self, p: [u32; 8]) -> wgpu::Buffer {
        self.uniform_words(&p)
    }

    /// A uniform buffer of `words` (a multiple of four: WGSL's 16-byte
    /// uniform alignment).
    pub fn uniform_words(&self, words: &[u32]) -> wgpu::Buffer {
        let bytes: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    pub fn bind_group(
        &self,
        k: &Kernels,
        buffers: &[(u32, wgpu::BindingResource<'_>)],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding: *binding,
                resource: resource.clone(),
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
        self.groups(threads.div_ceil(shape::WORKGROUP_THREADS))
    }

    /// A 2-D grid of at least `groups` workgroups (kernels index them as
    /// x + y·width), within the per-dimension limit.
    pub fn groups(&self, groups: u64) -> (u32, u32) {
        let groups = groups.max(1);
        let gx = groups.min(self.limits.max_compute_workgroups_per_dimension as u64);
        (gx as u32, groups.div_ceil(gx) as u32)
    }

    /// Records `steps` (kernel, bind group, workgroups) into one compute
    /// pass of a new encoder. With `ZKPIPE_WGPU_TRACE` each step is submitted
    /// and waited for alone, and its time printed (the total grows a little).
    ///
    /// # Errors
    /// Device loss while tracing.
    pub fn dispatch(
        &self,
        k: &Kernels,
        steps: &[(&'static str, &wgpu::BindGroup, (u32, u32))],
    ) -> Result<wgpu::CommandEncoder, AccelError> {
        let record = |enc: &mut wgpu::CommandEncoder, steps: &[_]| {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for &(name, bg, (x, y)) in steps {
                pass.set_pipeline(&k.pipelines[name]);
                pass.set_bind_group(0, bg, &[]);
                pass.dispatch_workgroups(x, y, 1);
            }
        };
        let mut enc = self.device.create_command_encoder(&Default::default());
        if std::env::var_os("ZKPIPE_WGPU_TRACE").is_none() {
            record(&mut enc, steps);
            return Ok(enc);
        }
        let mut times = Vec::new();
        let mut t = std::time::Instant::now();
        // The first submit also carries the uploads queued before.
        for (i, step) in steps.iter().enumerate() {
            record(&mut enc, std::slice::from_ref(step));
            self.queue.submit([enc.finish()]);
            self.wait()?;
            let name = if i == 0 {
                format!("uploads+{}", step.0)
            } else {
                step.0.to_string()
            };
            times.push(format!("{name} {:.3}", t.elapsed().as_secs_f64() * 1e3));
            t = std::time::Instant::now();
            enc = self.device.create_command_encoder(&Default::default());
        }
        eprintln!("wgpu steps: {} ms", times.join(", "));
        Ok(enc)
    }

    /// [`Gpu::dispatch`] of owned steps.
    ///
    /// # Errors
    /// As [`Gpu::dispatch`].
    pub fn dispatch_all(
        &self,
        k: &Kernels,
        steps: &[Dispatch],
    ) -> Result<wgpu::CommandEncoder, AccelError> {
        let steps: Vec<_> = steps.iter().map(|(n, bg, xy)| (*n, bg, *xy)).collect();
        self.dispatch(k, &steps)
    }

    /// Blocks until the queue is idle.
    pub(crate) fn wait(&self) -> Result<(), AccelError> {
        self.wait_for(None)
    }

    /// Blocks until submission `index` has run (all so far when `None`).
    pub(crate) fn wait_for(&self, index: Option<wgpu::SubmissionIndex>) -> Result<(), AccelError> {
        let poll = wgpu::PollType::Wait {
            submission_index: index,
            timeout: None,
        };
        self.device
            .poll(poll)
            .map(|_| ())
            .map_err(|e| AccelError::new(ErrorCode::DEVICE_UNAVAILABLE, format!("poll: {e}")))
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
        if o.is_some() || v.is_some() || r.is_err() {
            // A kept buffer may be the one that failed; free them all.
            self.scratch.lock().unwrap().clear();
        }
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

/// As [`as_bytes`], writable: results are read straight into the seam's vectors.
pub(crate) fn as_bytes_mut<T: Copy>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as for `as_bytes`; every byte pattern is a valid value of the
    // seam's u64-limb types, so writes cannot break an invariant of `T`.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
}

#[cfg(not(target_endian = "little"))]
compile_error!("the wgpu backend uploads blst's limbs as bytes: little-endian hosts only");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shader::tests::{
        device_p, fp_test_source, host_add, host_sub, integer, plus_p, to_host,
    };
    use crate::shader::{HostFp, host_from_u64, host_mul};

    /// The MSM's Fp code (both forms, both curves) on the first adapter
    /// against the host's (blst for BLS12-381, halo2curves for BN254): add,
    /// sub, mul, sqr and is_zero on every pair of 0, 1, 2, p − 1 and
    /// pseudo-random elements, each given reduced and plus p (the shaders'
    /// values lie anywhere in [0, 2p)); results must be limbs below 2^bits
    /// with a value below 2p. Passes with a note when there is no adapter.
    #[test]
    fn narrow_field_ops_match_the_host() {
        let Some((_instance, adapter)) = crate::adapter::test_adapter() else {
            return;
        };
        for curve in Curve::ALL {
            let fp = |v| host_from_u64(curve, v);
            let mut elems = vec![fp(0), fp(1), fp(2)];
            elems.push(host_sub(curve, &fp(0), &fp(1)));
            let mut x = fp(7);
            for _ in 0..4 {
                x = host_add(curve, &host_mul(curve, &x, &x), &fp(3));
                elems.push(x);
            }
            for int64 in [true, false] {
                let gpu = Gpu::open(&adapter, int64, None).unwrap();
                if gpu.int64 != int64 {
                    continue; // no SHADER_INT64 here
                }
                check_narrow_ops(&gpu, curve, &elems);
            }
        }
    }

    fn check_narrow_ops(gpu: &Gpu, curve: Curve, elems: &[HostFp]) {
        let int64 = gpu.int64;
        let l = *gpu.fp(curve);
        let p = device_p(&l);
        let two_p = integer(&l, &plus_p(&l, &p));
        let values: Vec<(HostFp, Vec<u32>)> = elems
            .iter()
            .flat_map(|e| {
                let d = l.device_form(e);
                let above = plus_p(&l, &d);
                [(*e, d), (*e, above)]
            })
            .collect();
        let pairs: Vec<_> = values
            .iter()
            .flat_map(|a| values.iter().map(move |b| (a, b)))
            .collect();
        let input: Vec<u32> = pairs
            .iter()
            .flat_map(|(a, b)| a.1.iter().chain(&b.1).copied())
            .collect();
        let source = fp_test_source(&l);
        let k = gpu
            .build(
                "fp test",
                source,
                &[storage(0, true), storage(1, false)],
                &["fp_ops"],
            )
            .unwrap();
        let per = 4 * l.limbs + 1;
        let out_bytes = (pairs.len() * per * 4) as u64;
        let inp = gpu
            .upload("fp test in", as_bytes(&input), wgpu::BufferUsages::empty())
            .unwrap();
        let out = gpu.buffer("fp test out", out_bytes, wgpu::BufferUsages::COPY_SRC);
        let bg = gpu.bind_group(
            &k,
            &[(0, inp.as_entire_binding()), (1, out.as_entire_binding())],
        );
        let groups = (pairs.len() as u32).div_ceil(64);
        let enc = gpu.dispatch(&k, &[("fp_ops", &bg, (groups, 1))]).unwrap();
        let bytes = gpu.finish_and_read(enc, &out, out_bytes).unwrap();
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        for (((a, da), (b, db)), got) in pairs.iter().zip(words.chunks_exact(per)) {
            let want = [
                host_add(curve, a, b),
                host_sub(curve, a, b),
                host_mul(curve, a, b),
                host_mul(curve, a, a),
            ];
            for (i, (name, w)) in ["add", "sub", "mul", "sqr"].iter().zip(want).enumerate() {
                let g = &got[i * l.limbs..(i + 1) * l.limbs];
                let what = format!("{curve:?} int64={int64} {name}({da:x?}, {db:x?}) = {g:x?}");
                assert!(
                    g.iter().all(|&v| v < 1 << l.bits),
                    "{what}: a limb too wide"
                );
                let v = integer(&l, g);
                assert!(
                    (0..7)
                        .rev()
                        .find(|&k| v[k] != two_p[k])
                        .is_some_and(|k| v[k] < two_p[k]),
                    "{what}: not below 2p"
                );
                assert_eq!(to_host(&l, g), w, "{what}");
            }
            let zero = *a == [0; 6];
            assert_eq!(
                got[4 * l.limbs] == 1,
                zero,
                "{curve:?} int64={int64} is_zero({da:x?})"
            );
        }
    }
}
