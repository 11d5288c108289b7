//! The pairing-friendly curves zkpipe knows, by name.
//!
//! A curve is data, not a type: keys, proofs, requests and plugins say
//! which one they are for, and every place that takes one of them checks it
//! with [`Curve::expect`] so that a BN254 key given to a BLS12-381 path is
//! refused by name rather than misread.

use abi_stable::StableAbi;
use std::fmt;

use crate::Error;

/// A curve zkpipe can name. BLS12-381 is Filecoin's (and the default
/// everywhere); BN254 is circom's default prime and Ethereum's precompiles.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Curve {
    /// BLS12-381: 255-bit scalars, 381-bit base field.
    #[default]
    Bls12_381,
    /// BN254 (alt_bn128, snarkjs's `bn128`): 254-bit scalars and base field.
    Bn254,
}

impl Curve {
    /// Every curve, in display order.
    pub const ALL: [Curve; 2] = [Curve::Bls12_381, Curve::Bn254];

    /// The name users see: `BLS12-381`, `BN254`.
    pub fn name(self) -> &'static str {
        match self {
            Curve::Bls12_381 => "BLS12-381",
            Curve::Bn254 => "BN254",
        }
    }

    /// The name snarkjs writes in its JSON (`"curve"`): `bls12381`, `bn128`.
    pub fn snarkjs_name(self) -> &'static str {
        match self {
            Curve::Bls12_381 => "bls12381",
            Curve::Bn254 => "bn128",
        }
    }

    /// The curve a name means, in any of the spellings in use (zkpipe's,
    /// snarkjs's, circom's `--prime`, Ethereum's), case-insensitively.
    pub fn from_name(name: &str) -> Option<Curve> {
        match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "bls12381" => Some(Curve::Bls12_381),
            "bn254" | "bn128" | "altbn128" | "bn256" => Some(Curve::Bn254),
            _ => None,
        }
    }

    /// The scalar field's modulus r, little-endian (what circom's files
    /// store as their prime).
    pub fn scalar_modulus_le(self) -> [u8; 32] {
        let limbs: [u64; 4] = match self {
            Curve::Bls12_381 => [
                0xffff_ffff_0000_0001,
                0x53bd_a402_fffe_5bfe,
                0x3339_d808_09a1_d805,
                0x73ed_a753_299d_7d48,
            ],
            Curve::Bn254 => [
                0x43e1_f593_f000_0001,
                0x2833_e848_79b9_7091,
                0xb850_45b6_8181_585d,
                0x3064_4e72_e131_a029,
            ],
        };
        let mut out = [0u8; 32];
        for (chunk, limb) in out.chunks_exact_mut(8).zip(limbs) {
            chunk.copy_from_slice(&limb.to_le_bytes());
        }
        out
    }

    /// The curve whose scalar field has modulus `prime` (little-endian,
    /// any length: trailing zero bytes are ignored).
    pub fn from_scalar_modulus_le(prime: &[u8]) -> Option<Curve> {
        let significant = prime.len() - prime.iter().rev().take_while(|b| **b == 0).count();
        Curve::ALL.into_iter().find(|c| {
            let r = c.scalar_modulus_le();
            let len = 32 - r.iter().rev().take_while(|b| **b == 0).count();
            prime[..significant] == r[..len]
        })
    }

    /// Two-adicity of the scalar field: its NTTs go up to 2^this points.
    pub fn two_adicity(self) -> u32 {
        match self {
            Curve::Bls12_381 => 32,
            Curve::Bn254 => 28,
        }
    }

    /// Refuses `found` where this curve is expected: "`what` is for BN254,
    /// not BLS12-381". Every path into BN254 work passes here, so it also
    /// refuses BN254 on a CPU that cannot run it ([`crate::bn254::cpu`]).
    ///
    /// # Errors
    /// [`Error::WrongCurve`] when the curves differ; [`Error::InvalidInput`]
    /// for BN254 on such a CPU.
    pub fn expect(self, found: Curve, what: &str) -> Result<(), Error> {
        if self == found {
            match self {
                Curve::Bn254 => crate::bn254::cpu::check(),
                Curve::Bls12_381 => Ok(()),
            }
        } else {
            Err(Error::WrongCurve {
                what: what.to_string(),
                found,
                expected: self,
            })
        }
    }
}

impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Curve {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Curve::from_name(s).ok_or_else(|| {
            Error::InvalidInput(format!(
                "unknown curve `{s}`: known are bls12-381 and bn254 (also spelled bn128, alt_bn128)"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_in_use_names_its_curve() {
        for s in ["BLS12-381", "bls12_381", "bls12381"] {
            assert_eq!(s.parse::<Curve>().unwrap(), Curve::Bls12_381, "{s}");
        }
        for s in ["BN254", "bn128", "alt_bn128", "bn256"] {
            assert_eq!(s.parse::<Curve>().unwrap(), Curve::Bn254, "{s}");
        }
        let e = "secp256k1".parse::<Curve>().unwrap_err().to_string();
        assert!(e.contains("unknown curve `secp256k1`"), "{e}");
    }

    #[test]
    fn a_prime_names_its_curve_and_a_stranger_none() {
        for c in Curve::ALL {
            assert_eq!(
                Curve::from_scalar_modulus_le(&c.scalar_modulus_le()),
                Some(c)
            );
            let mut padded = c.scalar_modulus_le().to_vec();
            padded.extend([0; 16]);
            assert_eq!(Curve::from_scalar_modulus_le(&padded), Some(c));
        }
        let mut other = Curve::Bn254.scalar_modulus_le();
        other[0] ^= 2;
        assert_eq!(Curve::from_scalar_modulus_le(&other), None);
        assert_eq!(Curve::from_scalar_modulus_le(&[]), None);
    }

    #[test]
    fn the_wrong_curve_is_refused_naming_both() {
        assert!(Curve::Bn254.expect(Curve::Bn254, "the key").is_ok());
        let e = Curve::Bls12_381
            .expect(Curve::Bn254, "the key")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "the key is for BN254, not BLS12-381");
    }
}
