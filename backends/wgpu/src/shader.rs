//! WGSL assembly: the multiply-accumulate variant (u32 emulation or 64-bit
//! integers), the generated field code for Fr and Fp, then the op shaders.

use zkpipe_core::{Fp, Fr};

const MAC_U32: &str = include_str!("../shaders/mac_u32.wgsl");
const MAC_U64: &str = include_str!("../shaders/mac_u64.wgsl");
const NTT: &str = include_str!("../shaders/ntt.wgsl");
const MSM: &str = include_str!("../shaders/msm.wgsl");

/// Little-endian u32 limbs of little-endian u64 limbs.
pub(crate) fn u32_limbs(l: &[u64]) -> Vec<u32> {
    l.iter()
        .flat_map(|&v| [v as u32, (v >> 32) as u32])
        .collect()
}

fn wgsl_list(l: &[u32]) -> String {
    l.iter()
        .map(|v| format!("0x{v:08x}u"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// r, from blst: the canonical form of −1, plus one.
fn fr_modulus() -> Vec<u64> {
    let b = Fr::one().neg().to_bytes_le();
    let mut l: Vec<u64> = b
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    l[0] += 1; // r − 1 is even: no carry
    l
}

/// p, from blst: the canonical form of −1, plus one.
fn fp_modulus() -> Vec<u64> {
    let one = blst::blst_fp { l: fp_one().limbs };
    let mut minus_one = blst::blst_fp::default();
    let mut bytes = [0u8; 48];
    // SAFETY: valid pointers to blst values; `bytes` has 48 bytes.
    unsafe {
        blst::blst_fp_cneg(&mut minus_one, &one, true);
        blst::blst_lendian_from_fp(bytes.as_mut_ptr(), &minus_one);
    }
    let mut l: Vec<u64> = bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    l[0] += 1; // p − 1 is even
    l
}

/// Montgomery 1 in Fp (R mod p), blst's limbs.
pub(crate) fn fp_one() -> Fp {
    let mut one = blst::blst_fp::default();
    // SAFETY: blst reads six limbs.
    unsafe { blst::blst_fp_from_uint64(&mut one, [1u64, 0, 0, 0, 0, 0].as_ptr()) };
    Fp { limbs: one.l }
}

fn field(prefix: &str, modulus: &[u64]) -> String {
    crate::field::wgsl(prefix, &u32_limbs(modulus))
}

fn prelude(int64: bool) -> String {
    let mac = if int64 { MAC_U64 } else { MAC_U32 };
    format!("{mac}\n{}", field("Fr", &fr_modulus()))
}

/// The NTT module; `int64`: multiply through 64-bit integers (SHADER_INT64);
/// tiles of 2^`tile_log` elements in workgroup memory (see ntt.rs).
pub(crate) fn ntt(int64: bool, tile_log: u32) -> String {
    format!(
        "{}\nconst TILE: u32 = {}u;\nconst TILE_WG: u32 = {}u;\n{NTT}",
        prelude(int64),
        1u32 << tile_log,
        crate::ntt::tile_threads(tile_log)
    )
}

/// The MSM module; `int64` as for [`ntt`].
pub(crate) fn msm(int64: bool) -> String {
    format!(
        "{}\n{}\nconst FP_ONE = Fp_t({});\nconst CHUNK: u32 = {}u;\nconst FAN: u32 = {}u;\n{MSM}",
        prelude(int64),
        field("Fp", &fp_modulus()),
        wgsl_list(&u32_limbs(&fp_one().limbs)),
        crate::msm::CHUNK,
        crate::msm::FAN,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::minv;

    #[test]
    fn constants() {
        assert_eq!(
            fr_modulus(),
            [
                0xffffffff00000001,
                0x53bda402fffe5bfe,
                0x3339d80809a1d805,
                0x73eda753299d7d48
            ]
        );
        assert_eq!(fp_modulus()[5], 0x1a0111ea397fe69a);
        assert_eq!(minv(1), 0xffffffff);
        assert_eq!(minv(fp_modulus()[0] as u32), 0xfffcfffd);
    }

    /// Both variants are assembled (tests/device.rs compiles and runs them).
    #[test]
    fn substituted() {
        for int64 in [false, true] {
            let s = msm(int64);
            assert!(s.contains("fn Fp_mul") && s.contains("fn Fr_mul"));
        }
    }
}
