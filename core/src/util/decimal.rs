//! Field elements as decimal strings of their canonical integers
//! (snarkjs's and circom's JSON convention).

use crate::Error;
use crate::types::Fr;

/// Decimal digits of a little-endian multi-limb integer.
pub fn limbs_to_decimal(limbs: &[u64]) -> String {
    let mut limbs = limbs.to_vec();
    let mut chunks = Vec::new();
    const TEN19: u128 = 10_000_000_000_000_000_000;
    while limbs.iter().any(|&l| l != 0) {
        let mut rem: u128 = 0;
        for l in limbs.iter_mut().rev() {
            let cur = (rem << 64) | *l as u128;
            *l = (cur / TEN19) as u64;
            rem = cur % TEN19;
        }
        chunks.push(rem as u64);
    }
    match chunks.split_last() {
        None => "0".into(),
        Some((top, rest)) => {
            let mut s = top.to_string();
            for d in rest.iter().rev() {
                s.push_str(&format!("{d:019}"));
            }
            s
        }
    }
}

/// The little-endian limbs of a decimal string, if it fits in `N` limbs.
pub fn decimal_to_limbs<const N: usize>(s: &str) -> Option<[u64; N]> {
    if s.is_empty() || s.len() > 20 * N || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut limbs = [0u64; N];
    for d in s.bytes() {
        let mut carry = (d - b'0') as u128;
        for l in limbs.iter_mut() {
            let cur = *l as u128 * 10 + carry;
            *l = cur as u64;
            carry = cur >> 64;
        }
        if carry != 0 {
            return None;
        }
    }
    Some(limbs)
}

/// Formats a field element as a decimal string (snarkjs' convention).
pub fn fr_to_decimal(x: &Fr) -> String {
    let bytes = x.to_bytes_le();
    let limbs: [u64; 4] =
        std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()));
    limbs_to_decimal(&limbs)
}

/// Parses a decimal string into a field element.
///
/// # Errors
/// [`Error::InvalidEncoding`] for a non-decimal string or a value ≥ r.
pub fn fr_from_decimal(s: &str) -> Result<Fr, Error> {
    let bad = || Error::InvalidEncoding(format!("`{s}` is not a decimal field element"));
    let limbs = decimal_to_limbs::<4>(s).ok_or_else(bad)?;
    let mut bytes = [0u8; 32];
    for (i, l) in limbs.iter().enumerate() {
        bytes[8 * i..8 * i + 8].copy_from_slice(&l.to_le_bytes());
    }
    Fr::from_bytes_le(&bytes).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limbs_round_trip_across_chunks() {
        assert_eq!(limbs_to_decimal(&[0, 0]), "0");
        assert_eq!(limbs_to_decimal(&[]), "0");
        // 2^64 and 10^19 + 7: a zero-padded chunk below the top one.
        assert_eq!(limbs_to_decimal(&[0, 1]), "18446744073709551616");
        let s = "100000000000000000000000000000000000007";
        let l = decimal_to_limbs::<3>(s).unwrap();
        assert_eq!(limbs_to_decimal(&l), s);
        assert_eq!(decimal_to_limbs::<1>("18446744073709551616"), None);
        assert_eq!(
            decimal_to_limbs::<1>("18446744073709551615"),
            Some([u64::MAX])
        );
        for bad in ["", "-1", "1 ", "0x10"] {
            assert_eq!(decimal_to_limbs::<4>(bad), None, "{bad}");
        }
    }
}
