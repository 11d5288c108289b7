//! Sector sizes to the Merkle tree shapes filecoin-proofs is generic over.

/// Calls `$f::<Tree>(args…)` for the tree shape of sector size `$size`
/// (bytes), or returns [`zkpipe_core::Error::InvalidInput`] for a size
/// Filecoin does not register.
macro_rules! with_tree {
    ($size:expr, $f:ident $(, $arg:expr)* $(,)?) => {{
        use filecoin_proofs::constants as fc;
        match $size {
            fc::SECTOR_SIZE_2_KIB => $f::<fc::SectorShape2KiB>($($arg),*),
            fc::SECTOR_SIZE_8_MIB => $f::<fc::SectorShape8MiB>($($arg),*),
            fc::SECTOR_SIZE_512_MIB => $f::<fc::SectorShape512MiB>($($arg),*),
            fc::SECTOR_SIZE_32_GIB => $f::<fc::SectorShape32GiB>($($arg),*),
            fc::SECTOR_SIZE_64_GIB => $f::<fc::SectorShape64GiB>($($arg),*),
            other => Err(zkpipe_core::Error::InvalidInput(format!(
                "sector size {other} is not one Filecoin registers (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"
            ))),
        }
    }};
}
pub(crate) use with_tree;

/// `2KiB`, `32GiB`: how Filecoin names sector sizes.
pub fn sector_size_name(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{name}", bytes / unit);
        }
    }
    format!("{bytes}B")
}

/// Parses `2KiB`, `8MiB`, `32GiB` (or a number of bytes).
///
/// # Errors
/// [`zkpipe_core::Error::InvalidInput`] for anything else.
pub fn parse_sector_size(s: &str) -> Result<u64, zkpipe_core::Error> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        _ => 0,
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            zkpipe_core::Error::InvalidInput(format!(
                "sector size `{s}`: expected 2KiB, 8MiB, 512MiB, 32GiB or 64GiB"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (s, b) in [("2KiB", 2048u64), ("8MiB", 8 << 20), ("32GiB", 32 << 30)] {
            assert_eq!(parse_sector_size(s).unwrap(), b);
            assert_eq!(sector_size_name(b), s);
        }
        for bad in ["", "KiB", "2XiB", "-1", "0", "99999999999999999999GiB"] {
            assert!(parse_sector_size(bad).is_err(), "{bad}");
        }
    }
}
