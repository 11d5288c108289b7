//! Replica and data commitments as callers hold them: 32 raw bytes, or the
//! binary CID Lotus and Curio keep (`cid.Bytes()`: CIDv1, codec
//! fil-commitment-sealed / -unsealed, a 32-byte multihash of Poseidon or
//! truncated SHA-256), as go-fil-commcid makes it; on a command line, 64 hex
//! digits or the CID's text (`bagboea4b5abc…`, `baga6ea4seaq…`).

use zkpipe_core::Error;

/// Which commitment: the codec and hash its CID must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commitment {
    /// CommR (`fil-commitment-sealed`, `poseidon-bls12_381-a2-fc1`).
    Sealed,
    /// CommD (`fil-commitment-unsealed`, `sha2-256-trunc254-padded`).
    Unsealed,
}

impl Commitment {
    fn codes(self) -> (u64, u64) {
        match self {
            Commitment::Sealed => (0xf102, 0xb401),
            Commitment::Unsealed => (0xf101, 0x1012),
        }
    }

    /// The 32-byte commitment in `bytes` (raw, or its binary CID).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `what` for anything else, and for a
    /// CID of the other kind of commitment.
    pub fn parse(self, what: &str, bytes: &[u8]) -> Result<[u8; 32], Error> {
        if let Ok(raw) = <[u8; 32]>::try_from(bytes) {
            return Ok(raw);
        }
        let bad = |why: &str| {
            Error::InvalidInput(format!(
                "{what}: {} bytes, neither a 32-byte commitment nor its CID ({why})",
                bytes.len()
            ))
        };
        let mut rest = bytes;
        let mut next = || varint(&mut rest).ok_or_else(|| bad("truncated"));
        let (version, codec, hash, len) = (next()?, next()?, next()?, next()?);
        if version != 1 {
            return Err(bad("not a CIDv1"));
        }
        if (codec, hash) != self.codes() {
            return Err(bad(&format!(
                "codec {codec:#x} with hash {hash:#x}; a {self:?} commitment's CID has {:#x} with {:#x}",
                self.codes().0,
                self.codes().1
            )));
        }
        if len != 32 {
            return Err(bad("its digest is not 32 bytes"));
        }
        <[u8; 32]>::try_from(rest).map_err(|_| bad("its digest is not 32 bytes"))
    }
}

impl Commitment {
    /// The commitment in `s`: 64 hex digits, or a CID in multibase base32
    /// (`b…`, as Lotus and Curio print them).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `what`.
    pub fn parse_text(self, what: &str, s: &str) -> Result<[u8; 32], Error> {
        // A 32-byte CID's text is 64 characters too, but never all hex.
        let hex = s.strip_prefix("0x").unwrap_or(s);
        if let Some(b32) = s.strip_prefix('b')
            && !hex.bytes().all(|c| c.is_ascii_hexdigit())
        {
            let bytes = base32_lower(b32)
                .ok_or_else(|| Error::InvalidInput(format!("{what}: `{s}` is not a base32 CID")))?;
            return self.parse(what, &bytes);
        }
        crate::registry::parse_hex32(what, s)
    }
}

/// RFC 4648 base32, lower case, no padding (multibase `b`).
fn base32_lower(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 5 / 8);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'a'..=b'z' => c - b'a',
            b'2'..=b'7' => c - b'2' + 26,
            _ => return None,
        };
        acc = (acc << 5) | u32::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// An unsigned LEB128 varint of at most 9 bytes (multiformats' limit).
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..9 {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cid(codec: &[u8], hash: &[u8], digest: &[u8]) -> Vec<u8> {
        [&[1u8][..], codec, hash, &[digest.len() as u8], digest].concat()
    }

    #[test]
    fn raw_and_cid_forms() {
        let d = [7u8; 32];
        let sealed = cid(&[0x82, 0xe2, 0x03], &[0x81, 0xe8, 0x02], &d);
        let unsealed = cid(&[0x81, 0xe2, 0x03], &[0x92, 0x20], &d);
        assert_eq!(Commitment::Sealed.parse("r", &d).unwrap(), d);
        assert_eq!(Commitment::Sealed.parse("r", &sealed).unwrap(), d);
        assert_eq!(Commitment::Unsealed.parse("d", &unsealed).unwrap(), d);
        // The other kind, truncated, short digest, CIDv0-ish, empty, junk.
        for bad in [
            unsealed.clone(),
            sealed[..sealed.len() - 1].to_vec(),
            cid(&[0x82, 0xe2, 0x03], &[0x81, 0xe8, 0x02], &d[..31]),
            [&[0u8][..], &sealed[1..]].concat(),
            vec![],
            vec![0xff; 40],
        ] {
            assert!(Commitment::Sealed.parse("r", &bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn text_forms() {
        // A CommD CID as Lotus prints it (the zero piece of a 2 KiB sector
        // has this CID; here only its decoding is checked).
        let cid = "baga6ea4seaqpy7usqklokfx2vxuynmupslkeutzexe2uqurdg5vhtebhxqmpqmy";
        let d = Commitment::Unsealed.parse_text("d", cid).unwrap();
        assert_eq!(d[0], 0xfc);
        assert!(Commitment::Sealed.parse_text("r", cid).is_err());
        let hex = "0a".repeat(32);
        assert_eq!(Commitment::Sealed.parse_text("r", &hex).unwrap(), [10; 32]);
        for bad in ["", "b", "bagb!", "zz", &"b".repeat(64)[..63]] {
            assert!(Commitment::Sealed.parse_text("r", bad).is_err(), "{bad}");
        }
    }
}
