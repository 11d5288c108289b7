//! R1CS matrices resident on a device and Groth16's quotient straight from
//! a witness: SpMV into three domain-length device buffers, the satisfaction
//! check, then the quotient's transforms on those buffers (see `ntt.rs`).

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use rayon::prelude::*;
use zkpipe_core::Fr;
use zkpipe_core::plugin::{AccelError, CsrRef, R1csRef, R1csShape};

use crate::error::driver_err;
use crate::lane::{Lane, Profile, grid};
use crate::words::{limbs, limbs_mut};

/// Column bit marking a coefficient of one (`SPMV_ONE` in `spmv.cu`).
const ONE_BIT: u32 = 1 << 31;
/// Rows longer than this go to `spmv_long` (`SPMV_SHORT` in `spmv.cu`).
const SHORT: u64 = 32;

/// One matrix on a device.
struct DeviceCsr {
    row_ptr: CudaSlice<u64>,
    /// Columns, bit 31 set where the coefficient is one.
    cols: CudaSlice<u32>,
    vals: CudaSlice<u64>,
    /// The rows of more than `SHORT` entries.
    long_rows: CudaSlice<u32>,
    long_count: u32,
    /// Bytes one product moves at least: row starts, columns, the
    /// coefficients that are not one, one witness value per entry.
    traffic: u64,
}

/// A constraint system on a device.
pub(crate) struct DeviceR1cs {
    pub(crate) device: u32,
    pub(crate) shape: R1csShape,
    mats: [DeviceCsr; 3],
    /// Device bytes held.
    pub(crate) bytes: usize,
}

impl DeviceR1cs {
    /// Checks that the CUDA kernels can index `r`: columns below 2^31 (bit
    /// 31 is the one-coefficient mark), rows below 2^28 (the domain limit).
    ///
    /// # Errors
    /// `INVALID_INPUT`.
    pub(crate) fn fits(r: &R1csRef<'_>) -> Result<(), AccelError> {
        let vars = r.num_inputs + r.num_aux;
        if vars > ONE_BIT as u64 || r.a.rows() >= 1 << 28 {
            return Err(AccelError::invalid_input(format!(
                "upload_r1cs: {vars} variables and {} rows; the CUDA backend takes up to 2^31 and 2^28",
                r.a.rows()
            )));
        }
        Ok(())
    }
}

/// `v` on the device, one zero element when empty (no zero-length buffers).
fn padded<T: cudarc::driver::DeviceRepr + Default + Copy>(
    lane: &Lane<'_>,
    v: &[T],
) -> Result<CudaSlice<T>, AccelError> {
    let one = [T::default()];
    let src = if v.is_empty() { &one[..] } else { v };
    lane.stream
        .clone_htod(src)
        .map_err(driver_err("copying to the device"))
}

impl Lane<'_> {
    fn upload_csr(&self, m: &CsrRef<'_>) -> Result<DeviceCsr, AccelError> {
        let one = Fr::one();
        let cols: Vec<u32> = m
            .cols
            .as_slice()
            .par_iter()
            .zip(m.vals.as_slice())
            .with_min_len(1 << 14)
            .map(|(&c, v)| if *v == one { c | ONE_BIT } else { c })
            .collect();
        let non_one = cols.iter().filter(|&&c| c & ONE_BIT == 0).count() as u64;
        let ptr = m.row_ptr.as_slice();
        let long: Vec<u32> = (0..m.rows())
            .filter(|&r| ptr[r + 1] - ptr[r] > SHORT)
            .map(|r| r as u32)
            .collect();
        let vals = if m.vals.is_empty() {
            padded(self, &[0u64; 4])?
        } else {
            self.upload(limbs(m.vals.as_slice()))?
        };
        let csr = DeviceCsr {
            row_ptr: padded(self, ptr)?,
            cols: padded(self, &cols)?,
            vals,
            long_count: long.len() as u32,
            long_rows: padded(self, &long)?,
            traffic: 8 * ptr.len() as u64
                + 4 * cols.len() as u64
                + 32 * (non_one + cols.len() as u64),
        };
        // The host vectors above go when this returns.
        self.stream
            .synchronize()
            .map_err(driver_err("synchronising"))?;
        Ok(csr)
    }

    /// Copies checked matrices (see [`DeviceR1cs::fits`]) to this lane's device.
    pub(crate) fn upload_r1cs(
        &self,
        r: &R1csRef<'_>,
        device: u32,
    ) -> Result<DeviceR1cs, AccelError> {
        DeviceR1cs::fits(r)?;
        let bytes = r.bytes() as usize;
        self.check_free(bytes)?;
        Ok(DeviceR1cs {
            device,
            shape: r.shape(),
            mats: [
                self.upload_csr(&r.a)?,
                self.upload_csr(&r.b)?,
                self.upload_csr(&r.c)?,
            ],
            bytes,
        })
    }

    /// `h` from the witness `inputs ‖ aux` over `r`'s matrices on the
    /// coset `g·⟨ω⟩` (n = `h.len()`, checked against `r` by the caller):
    /// a, b, c are made and consumed on the device. With `check`, the first
    /// constraint with `a·b ≠ c`, if any, is returned and `h` left alone.
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
        self.check_free(n * 32 * 5 + (inputs.len() + aux.len()) * 32)?;
        let mut prof = Profile::new(&self.stream);
        let upload = |v: &[Fr]| match v.is_empty() {
            true => padded(self, &[0u64; 4]),
            false => self.upload(limbs(v)),
        };
        let (inp, wit) = (upload(inputs)?, upload(aux)?);
        prof.mark("witness in");
        let (ni, m, n32) = (inputs.len() as u32, r.shape.rows as u32, n as u32);
        let mut bufs = Vec::with_capacity(3);
        for (k, mat) in r.mats.iter().enumerate() {
            // SAFETY: spmv_rows writes every row but the long ones, which
            // spmv_long writes.
            let mut out =
                unsafe { self.stream.alloc::<u64>(4 * n) }.map_err(driver_err("allocating"))?;
            let extra = if k == 0 { ni } else { 0 };
            let mut l = self.stream.launch_builder(&self.spmv_rows);
            l.arg(&mut out)
                .arg(&mat.row_ptr)
                .arg(&mat.cols)
                .arg(&mat.vals)
                .arg(&inp)
                .arg(&wit)
                .arg(&ni)
                .arg(&m)
                .arg(&extra)
                .arg(&n32);
            // SAFETY: out holds n elements, the matrix m rows (m + extra ≤ n,
            // checked by the caller) whose columns index the witness (checked
            // at upload); one thread per row < n.
            unsafe { l.launch(grid(n)) }.map_err(driver_err("spmv_rows kernel"))?;
            if mat.long_count > 0 {
                let mut l = self.stream.launch_builder(&self.spmv_long);
                l.arg(&mut out)
                    .arg(&mat.long_rows)
                    .arg(&mat.long_count)
                    .arg(&mat.row_ptr)
                    .arg(&mat.cols)
                    .arg(&mat.vals)
                    .arg(&inp)
                    .arg(&wit)
                    .arg(&ni);
                let cfg = LaunchConfig {
                    grid_dim: ((mat.long_count as usize).div_ceil(8) as u32, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: as above; one warp per listed row (rows < m), 8 per block.
                unsafe { l.launch(cfg) }.map_err(driver_err("spmv_long kernel"))?;
            }
            bufs.push(out);
        }
        prof.mark("spmv");
        let [a, b, c]: [CudaSlice<u64>; 3] = bufs.try_into().expect("three buffers");
        if check && m > 0 {
            let mut first = self
                .stream
                .clone_htod(&[u64::MAX])
                .map_err(driver_err("copying to the device"))?;
            let mut l = self.stream.launch_builder(&self.r1cs_check);
            l.arg(&a).arg(&b).arg(&c).arg(&m).arg(&mut first);
            // SAFETY: a, b, c hold n ≥ m elements; one thread per row < m.
            unsafe { l.launch(grid(m as usize)) }.map_err(driver_err("r1cs_check kernel"))?;
            let mut row = [0u64];
            self.stream
                .memcpy_dtoh(&first, &mut row)
                .map_err(driver_err("copying from the device"))?;
            self.stream
                .synchronize()
                .map_err(driver_err("synchronising"))?;
            prof.mark("check");
            if row[0] != u64::MAX {
                return Ok(Some(row[0]));
            }
        }
        let mut bufs = [a, b, c];
        for buf in &mut bufs {
            self.to_coset(buf, log_n, g)?;
        }
        prof.mark("transforms");
        let qa = self.quotient_from_coset(bufs, log_n, g)?;
        prof.mark("combine + transform");
        self.download(&qa, limbs_mut(h))?;
        prof.mark("copy out");
        let traffic: u64 = r.mats.iter().map(|m| m.traffic).sum::<u64>() + 3 * 32 * n as u64;
        prof.report(&format!("quotient_from_witness n={n} spmv_bytes={traffic}"));
        Ok(None)
    }
}
