//! Field and curve types that cross the plugin seam.
//!
//! Each type is a `#[repr(C)]` limb array bit-identical to blst's in-memory
//! layout (Montgomery form, little-endian `u64` limbs), so a slice of them is
//! handed to blst, a GPU or another plugin with no copy or conversion.
//! Arithmetic goes through blst; these types add only what the engine needs.

use abi_stable::StableAbi;
use blst::*;
use std::fmt;

use crate::Error;

/// Declares a seam type mirroring a blst type, with layout assertions and
/// zero-cost views in both directions.
macro_rules! seam_type {
    ($(#[$doc:meta])* $name:ident => $blst:ty { $($field:ident : $fty:ty),+ }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(StableAbi, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name { $(pub $field: $fty),+ }

        const _: () = {
            assert!(std::mem::size_of::<$name>() == std::mem::size_of::<$blst>());
            assert!(std::mem::align_of::<$name>() == std::mem::align_of::<$blst>());
        };

        impl $name {
            /// Views this value as the blst type it mirrors.
            #[inline]
            pub fn as_blst(&self) -> &$blst {
                // SAFETY: same size, alignment and field layout (asserted above).
                unsafe { &*(self as *const Self as *const $blst) }
            }
            /// Mutable view as the blst type it mirrors.
            #[inline]
            pub fn as_blst_mut(&mut self) -> &mut $blst {
                // SAFETY: same size, alignment and field layout (asserted above).
                unsafe { &mut *(self as *mut Self as *mut $blst) }
            }
            /// Wraps a blst value.
            #[inline]
            pub fn from_blst(v: $blst) -> Self {
                // SAFETY: same size and layout; every bit pattern is valid for both.
                unsafe { std::mem::transmute::<$blst, Self>(v) }
            }
            /// Views a slice as the blst type it mirrors (no copy).
            #[inline]
            pub fn slice_as_blst(s: &[Self]) -> &[$blst] {
                // SAFETY: same size, alignment and layout element by element.
                unsafe { std::slice::from_raw_parts(s.as_ptr() as *const $blst, s.len()) }
            }
            /// Mutable slice view as the blst type it mirrors (no copy).
            #[inline]
            pub fn slice_as_blst_mut(s: &mut [Self]) -> &mut [$blst] {
                // SAFETY: same size, alignment and layout element by element.
                unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut $blst, s.len()) }
            }
        }
    };
}

seam_type!(
    /// An element of the scalar field Fr of BLS12-381 (r ≈ 2^255), Montgomery form.
    Fr => blst_fr { limbs: [u64; 4] }
);
seam_type!(
    /// An element of the base field Fp of BLS12-381 (381 bits), Montgomery form.
    Fp => blst_fp { limbs: [u64; 6] }
);
seam_type!(
    /// An element of Fp2 = Fp\[u\]/(u²+1): `c[0] + c[1]·u`.
    Fp2 => blst_fp2 { c: [Fp; 2] }
);
seam_type!(
    /// A G1 point in affine coordinates; the identity is all zeros (blst's convention).
    G1Affine => blst_p1_affine { x: Fp, y: Fp }
);
seam_type!(
    /// A G1 point in blst's projective (Jacobian) coordinates; `z = 0` is the identity.
    /// Equality of the representation is not equality of points: use [`G1Projective::eq_point`].
    G1Projective => blst_p1 { x: Fp, y: Fp, z: Fp }
);
seam_type!(
    /// A G2 point in affine coordinates; the identity is all zeros.
    G2Affine => blst_p2_affine { x: Fp2, y: Fp2 }
);
seam_type!(
    /// A G2 point in blst's projective (Jacobian) coordinates; `z = 0` is the identity.
    /// Equality of the representation is not equality of points: use [`G2Projective::eq_point`].
    G2Projective => blst_p2 { x: Fp2, y: Fp2, z: Fp2 }
);

// ---------------------------------------------------------------- Fr

/// r − 1 >> 32: the odd part of the multiplicative group order, little-endian limbs.
const R_MINUS_1_ODD: [u64; 4] = [
    0xfffe5bfeffffffff,
    0x09a1d80553bda402,
    0x299d7d483339d808,
    0x0000000073eda753,
];

/// Two-adicity of r − 1: Fr has roots of unity of order up to 2^32.
pub const FR_TWO_ADICITY: u32 = 32;

impl Fr {
    /// The additive identity.
    pub const ZERO: Fr = Fr { limbs: [0; 4] };

    /// The field element with the given small integer value.
    pub fn from_u64(v: u64) -> Fr {
        let mut out = Fr::ZERO;
        // SAFETY: blst reads four limbs from the pointer.
        unsafe { blst_fr_from_uint64(out.as_blst_mut(), [v, 0, 0, 0].as_ptr()) };
        out
    }
    /// The multiplicative identity.
    pub fn one() -> Fr {
        Fr::from_u64(1)
    }
    /// Whether this is zero.
    pub fn is_zero(&self) -> bool {
        self.limbs == [0; 4]
    }
    /// `self + rhs`.
    #[inline]
    pub fn add(&self, rhs: &Fr) -> Fr {
        let mut out = Fr::ZERO;
        // SAFETY: valid pointers to initialised field elements.
        unsafe { blst_fr_add(out.as_blst_mut(), self.as_blst(), rhs.as_blst()) };
        out
    }
    /// `self − rhs`.
    #[inline]
    pub fn sub(&self, rhs: &Fr) -> Fr {
        let mut out = Fr::ZERO;
        // SAFETY: valid pointers to initialised field elements.
        unsafe { blst_fr_sub(out.as_blst_mut(), self.as_blst(), rhs.as_blst()) };
        out
    }
    /// `self · rhs`.
    #[inline]
    pub fn mul(&self, rhs: &Fr) -> Fr {
        let mut out = Fr::ZERO;
        // SAFETY: valid pointers to initialised field elements.
        unsafe { blst_fr_mul(out.as_blst_mut(), self.as_blst(), rhs.as_blst()) };
        out
    }
    /// `−self`.
    pub fn neg(&self) -> Fr {
        let mut out = Fr::ZERO;
        // SAFETY: valid pointers to initialised field elements.
        unsafe { blst_fr_cneg(out.as_blst_mut(), self.as_blst(), true) };
        out
    }
    /// `1/self`, or `None` for zero.
    pub fn inverse(&self) -> Option<Fr> {
        if self.is_zero() {
            return None;
        }
        let mut out = Fr::ZERO;
        // SAFETY: valid pointers to initialised field elements.
        unsafe { blst_fr_inverse(out.as_blst_mut(), self.as_blst()) };
        Some(out)
    }
    /// `self^exp`, exponent as little-endian limbs.
    pub fn pow(&self, exp: &[u64]) -> Fr {
        let mut acc = Fr::one();
        for limb in exp.iter().rev() {
            for bit in (0..64).rev() {
                acc = acc.mul(&acc);
                if (limb >> bit) & 1 == 1 {
                    acc = acc.mul(self);
                }
            }
        }
        acc
    }
    /// A primitive `2^log_n`-th root of unity: `7^((r−1)/2^32)` squared `32 − log_n`
    /// times (the generator and convention of bellman/bellperson and blstrs).
    ///
    /// # Panics
    /// If `log_n > 32` (Fr has no such root).
    pub fn root_of_unity(log_n: u32) -> Fr {
        assert!(
            log_n <= FR_TWO_ADICITY,
            "Fr has no 2^{log_n}-th root of unity"
        );
        let mut w = Fr::from_u64(7).pow(&R_MINUS_1_ODD);
        for _ in log_n..FR_TWO_ADICITY {
            w = w.mul(&w);
        }
        w
    }
    /// Canonical little-endian bytes (the encoding bellperson and blstrs use).
    pub fn to_bytes_le(&self) -> [u8; 32] {
        let mut s = blst_scalar::default();
        let mut out = [0u8; 32];
        // SAFETY: valid pointers; out has 32 bytes.
        unsafe {
            blst_scalar_from_fr(&mut s, self.as_blst());
            blst_lendian_from_scalar(out.as_mut_ptr(), &s);
        }
        out
    }
    /// Parses canonical little-endian bytes.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] if the value is not below the modulus r.
    pub fn from_bytes_le(bytes: &[u8; 32]) -> Result<Fr, Error> {
        let mut s = blst_scalar::default();
        // SAFETY: bytes has 32 bytes.
        unsafe { blst_scalar_from_lendian(&mut s, bytes.as_ptr()) };
        // SAFETY: valid scalar.
        if !unsafe { blst_scalar_fr_check(&s) } {
            return Err(Error::InvalidEncoding(
                "scalar is not below the modulus r".into(),
            ));
        }
        let mut out = Fr::ZERO;
        // SAFETY: valid pointers.
        unsafe { blst_fr_from_scalar(out.as_blst_mut(), &s) };
        Ok(out)
    }
    /// The field element `bytes mod r` for any number of little-endian bytes
    /// (64 uniform bytes give a uniform element).
    pub fn from_bytes_le_mod_order(bytes: &[u8]) -> Fr {
        let mut s = blst_scalar::default();
        // SAFETY: the pointer covers `bytes.len()` bytes.
        unsafe { blst_scalar_from_le_bytes(&mut s, bytes.as_ptr(), bytes.len()) };
        let mut out = Fr::ZERO;
        // SAFETY: valid pointers.
        unsafe { blst_fr_from_scalar(out.as_blst_mut(), &s) };
        out
    }
    /// A uniform random element.
    pub fn random(rng: &mut impl rand_core::RngCore) -> Fr {
        let mut b = [0u8; 64];
        rng.fill_bytes(&mut b);
        Fr::from_bytes_le_mod_order(&b)
    }
}

impl fmt::Debug for Fr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fr(0x")?;
        for b in self.to_bytes_le().iter().rev() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

// ---------------------------------------------------------------- Fp, Fp2

impl fmt::Debug for Fp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = [0u8; 48];
        // SAFETY: out has 48 bytes; self is a valid element.
        unsafe { blst_lendian_from_fp(out.as_mut_ptr(), self.as_blst()) };
        write!(f, "0x")?;
        for b in out.iter().rev() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fp2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:?} + {:?}·u)", self.c[0], self.c[1])
    }
}

// ---------------------------------------------------------------- points

/// Maps a blst decoding status to the engine's error.
fn decode_status(e: BLST_ERROR, what: &str) -> Result<(), Error> {
    match e {
        BLST_ERROR::BLST_SUCCESS => Ok(()),
        BLST_ERROR::BLST_POINT_NOT_ON_CURVE => Err(Error::NotOnCurve(what.into())),
        BLST_ERROR::BLST_POINT_NOT_IN_GROUP => Err(Error::NotInSubgroup(what.into())),
        other => Err(Error::InvalidEncoding(format!("{what}: {other:?}"))),
    }
}

/// Group operations shared by G1 and G2, written once over blst's `p1`/`p2` functions.
macro_rules! curve_impl {
    ($aff:ident, $proj:ident, $group:literal, $compressed:literal,
     blst: $b_aff:ty, $b_proj:ty,
     $from_affine:ident, $to_affine:ident, $batch_to_affine:ident, $add:ident, $add_aff:ident,
     $double:ident, $cneg:ident, $is_equal:ident, $is_inf:ident, $generator:ident, $mult:ident,
     $compress:ident, $serialize:ident, $uncompress:ident, $deserialize:ident,
     $in_group:ident, $on_curve:ident, $aff_is_inf:ident) => {
        impl $aff {
            /// Size of the compressed zcash encoding in bytes.
            pub const COMPRESSED_SIZE: usize = $compressed;
            /// Size of the uncompressed zcash encoding in bytes.
            pub const UNCOMPRESSED_SIZE: usize = 2 * $compressed;

            /// The identity (point at infinity).
            pub fn identity() -> Self {
                Self::default()
            }
            /// Whether this is the identity.
            pub fn is_identity(&self) -> bool {
                // SAFETY: valid pointer.
                unsafe { $aff_is_inf(self.as_blst()) }
            }
            /// The standard generator.
            pub fn generator() -> Self {
                $proj::generator().to_affine()
            }
            /// Whether the point satisfies the curve equation (the identity does).
            pub fn is_on_curve(&self) -> bool {
                // SAFETY: valid pointer.
                unsafe { $on_curve(self.as_blst()) }
            }
            /// Whether the point is in the prime-order subgroup.
            pub fn is_in_subgroup(&self) -> bool {
                // SAFETY: valid pointer.
                unsafe { $in_group(self.as_blst()) }
            }
            /// `−self`.
            pub fn neg(&self) -> Self {
                $proj::from(*self).neg().to_affine()
            }
            /// Compressed zcash encoding (flags in the top bits of the first byte).
            pub fn to_compressed(&self) -> [u8; $compressed] {
                let mut out = [0u8; $compressed];
                // SAFETY: out has the encoding's size.
                unsafe { $compress(out.as_mut_ptr(), self.as_blst()) };
                out
            }
            /// Uncompressed zcash encoding.
            pub fn to_uncompressed(&self) -> [u8; 2 * $compressed] {
                let mut out = [0u8; 2 * $compressed];
                // SAFETY: out has the encoding's size.
                unsafe { $serialize(out.as_mut_ptr(), self.as_blst()) };
                out
            }
            /// Decodes a compressed point and checks it is on the curve and in the subgroup.
            ///
            /// # Errors
            /// [`Error::InvalidEncoding`], [`Error::NotOnCurve`] or [`Error::NotInSubgroup`].
            pub fn from_compressed(bytes: &[u8; $compressed]) -> Result<Self, Error> {
                let p = Self::from_compressed_unchecked(bytes)?;
                p.check_subgroup()?;
                Ok(p)
            }
            /// Decodes a compressed point, checking the curve equation but not the
            /// subgroup (for trusted inputs such as a key file already validated).
            ///
            /// # Errors
            /// [`Error::InvalidEncoding`] or [`Error::NotOnCurve`].
            pub fn from_compressed_unchecked(bytes: &[u8; $compressed]) -> Result<Self, Error> {
                let mut p = Self::default();
                // SAFETY: bytes has the encoding's size.
                let st = unsafe { $uncompress(p.as_blst_mut(), bytes.as_ptr()) };
                decode_status(st, concat!("compressed ", $group, " point"))?;
                Ok(p)
            }
            /// Decodes an uncompressed point and checks it is on the curve and in the subgroup.
            ///
            /// # Errors
            /// [`Error::InvalidEncoding`], [`Error::NotOnCurve`] or [`Error::NotInSubgroup`].
            pub fn from_uncompressed(bytes: &[u8; 2 * $compressed]) -> Result<Self, Error> {
                let p = Self::from_uncompressed_unchecked(bytes)?;
                p.check_subgroup()?;
                Ok(p)
            }
            /// Decodes an uncompressed point, checking the curve equation only.
            ///
            /// # Errors
            /// [`Error::InvalidEncoding`] or [`Error::NotOnCurve`].
            pub fn from_uncompressed_unchecked(
                bytes: &[u8; 2 * $compressed],
            ) -> Result<Self, Error> {
                let mut p = Self::default();
                // SAFETY: bytes has the encoding's size.
                let st = unsafe { $deserialize(p.as_blst_mut(), bytes.as_ptr()) };
                decode_status(st, concat!("uncompressed ", $group, " point"))?;
                Ok(p)
            }
            fn check_subgroup(&self) -> Result<(), Error> {
                if self.is_in_subgroup() {
                    Ok(())
                } else {
                    Err(Error::NotInSubgroup(concat!($group, " point").into()))
                }
            }
        }

        impl fmt::Debug for $aff {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                if self.is_identity() {
                    return write!(f, concat!(stringify!($aff), "(identity)"));
                }
                write!(f, concat!(stringify!($aff), "(0x"))?;
                for b in self.to_compressed() {
                    write!(f, "{b:02x}")?;
                }
                write!(f, ")")
            }
        }

        impl From<$aff> for $proj {
            fn from(p: $aff) -> Self {
                let mut out = $proj::default();
                // SAFETY: valid pointers.
                unsafe { $from_affine(out.as_blst_mut(), p.as_blst()) };
                out
            }
        }

        impl $proj {
            /// The identity (point at infinity).
            pub fn identity() -> Self {
                Self::default()
            }
            /// The standard generator.
            pub fn generator() -> Self {
                // SAFETY: blst returns a pointer to a static point.
                Self::from_blst(unsafe { *$generator() })
            }
            /// Whether this is the identity.
            pub fn is_identity(&self) -> bool {
                // SAFETY: valid pointer.
                unsafe { $is_inf(self.as_blst()) }
            }
            /// Whether both represent the same point (coordinates may differ).
            pub fn eq_point(&self, other: &Self) -> bool {
                // SAFETY: valid pointers.
                unsafe { $is_equal(self.as_blst(), other.as_blst()) }
            }
            /// `self + rhs` (complete: handles doubling and the identity).
            pub fn add(&self, rhs: &Self) -> Self {
                let mut out = Self::default();
                // SAFETY: valid pointers.
                unsafe { $add(out.as_blst_mut(), self.as_blst(), rhs.as_blst()) };
                out
            }
            /// `self + rhs` for an affine `rhs` (complete).
            pub fn add_affine(&self, rhs: &$aff) -> Self {
                let mut out = Self::default();
                // SAFETY: valid pointers.
                unsafe { $add_aff(out.as_blst_mut(), self.as_blst(), rhs.as_blst()) };
                out
            }
            /// `2·self`.
            pub fn double(&self) -> Self {
                let mut out = Self::default();
                // SAFETY: valid pointers.
                unsafe { $double(out.as_blst_mut(), self.as_blst()) };
                out
            }
            /// `−self`.
            pub fn neg(&self) -> Self {
                let mut out = *self;
                // SAFETY: valid pointer.
                unsafe { $cneg(out.as_blst_mut(), true) };
                out
            }
            /// `k·self` through blst's constant-time ladder.
            pub fn mul(&self, k: &Fr) -> Self {
                let bytes = k.to_bytes_le();
                let mut out = Self::default();
                // SAFETY: bytes covers 255 bits.
                unsafe { $mult(out.as_blst_mut(), self.as_blst(), bytes.as_ptr(), 255) };
                out
            }
            /// The affine form.
            pub fn to_affine(&self) -> $aff {
                let mut out = $aff::default();
                // SAFETY: valid pointers.
                unsafe { $to_affine(out.as_blst_mut(), self.as_blst()) };
                out
            }
            /// Converts many points to affine with one shared inversion.
            pub fn batch_to_affine(points: &[Self]) -> Vec<$aff> {
                let mut out = vec![$aff::default(); points.len()];
                if points.is_empty() {
                    return out;
                }
                let ptrs = [points.as_ptr() as *const $b_proj, std::ptr::null()];
                // SAFETY: blst reads `len` contiguous points (null-terminated pointer list
                // means "one contiguous array") and writes `len` affine points.
                unsafe {
                    $batch_to_affine(out.as_mut_ptr() as *mut $b_aff, ptrs.as_ptr(), points.len())
                };
                out
            }
        }

        impl fmt::Debug for $proj {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($proj), "({:?})"), self.to_affine())
            }
        }
    };
}

curve_impl!(G1Affine, G1Projective, "G1", 48,
    blst: blst_p1_affine, blst_p1,
    blst_p1_from_affine, blst_p1_to_affine, blst_p1s_to_affine, blst_p1_add_or_double,
    blst_p1_add_or_double_affine, blst_p1_double, blst_p1_cneg, blst_p1_is_equal, blst_p1_is_inf,
    blst_p1_generator, blst_p1_mult, blst_p1_affine_compress, blst_p1_affine_serialize,
    blst_p1_uncompress, blst_p1_deserialize, blst_p1_affine_in_g1, blst_p1_affine_on_curve,
    blst_p1_affine_is_inf);
curve_impl!(G2Affine, G2Projective, "G2", 96,
    blst: blst_p2_affine, blst_p2,
    blst_p2_from_affine, blst_p2_to_affine, blst_p2s_to_affine, blst_p2_add_or_double,
    blst_p2_add_or_double_affine, blst_p2_double, blst_p2_cneg, blst_p2_is_equal, blst_p2_is_inf,
    blst_p2_generator, blst_p2_mult, blst_p2_affine_compress, blst_p2_affine_serialize,
    blst_p2_uncompress, blst_p2_deserialize, blst_p2_affine_in_g2, blst_p2_affine_on_curve,
    blst_p2_affine_is_inf);
