//! Hand-made circom files (no node tools needed): a small `.r1cs` and
//! `.wtns`, in iden3's binary container.

/// BLS12-381's r, little-endian.
pub const BLS_R: &str = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
/// BN254's r, little-endian (circom's default prime).
pub const BN254_R: &str = "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001";

pub fn le(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .rev()
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

pub fn container(magic: &[u8; 4], version: u32, sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = magic.to_vec();
    out.extend(version.to_le_bytes());
    out.extend((sections.len() as u32).to_le_bytes());
    for (ty, data) in sections {
        out.extend(ty.to_le_bytes());
        out.extend((data.len() as u64).to_le_bytes());
        out.extend(data);
    }
    out
}

pub fn scalar(v: u64) -> Vec<u8> {
    let mut b = vec![0u8; 32];
    b[..8].copy_from_slice(&v.to_le_bytes());
    b
}

/// `x·x = y`, then `y·1 = y + 0·x` padding rows up to `rows`: wires one, y
/// (public output), x (private input).
pub fn square_r1cs(prime: &str, rows: u32) -> Vec<u8> {
    let mut header = 32u32.to_le_bytes().to_vec();
    header.extend(le(prime));
    for v in [3u32, 1, 0, 1] {
        header.extend(v.to_le_bytes());
    }
    header.extend(3u64.to_le_bytes());
    header.extend(rows.to_le_bytes());
    let mut cons = Vec::new();
    let lc = |cons: &mut Vec<u8>, wire: u32| {
        cons.extend(1u32.to_le_bytes());
        cons.extend(wire.to_le_bytes());
        cons.extend(scalar(1));
    };
    lc(&mut cons, 2);
    lc(&mut cons, 2);
    lc(&mut cons, 1);
    for _ in 1..rows {
        lc(&mut cons, 1);
        lc(&mut cons, 0);
        lc(&mut cons, 1);
    }
    let labels: Vec<u8> = (0u64..3).flat_map(|l| l.to_le_bytes()).collect();
    container(b"r1cs", 1, &[(1, header), (2, cons), (3, labels)])
}

pub fn wtns_bytes(values: &[u64]) -> Vec<u8> {
    wtns_bytes_over(BLS_R, values)
}

/// A `.wtns` over `prime` (either curve's r).
pub fn wtns_bytes_over(prime: &str, values: &[u64]) -> Vec<u8> {
    let mut header = 32u32.to_le_bytes().to_vec();
    header.extend(le(prime));
    header.extend((values.len() as u32).to_le_bytes());
    let data = values.iter().flat_map(|&v| scalar(v)).collect();
    container(b"wtns", 2, &[(1, header), (2, data)])
}

/// A `.r1cs` of `rows` empty constraints (12 zero bytes each) over the
/// wires one, y (public output), x (private input).
#[allow(dead_code)]
pub fn empty_r1cs(rows: u32) -> Vec<u8> {
    let mut header = 32u32.to_le_bytes().to_vec();
    header.extend(le(BLS_R));
    for v in [3u32, 1, 0, 1] {
        header.extend(v.to_le_bytes());
    }
    header.extend(3u64.to_le_bytes());
    header.extend(rows.to_le_bytes());
    let cons = vec![0u8; 12 * rows as usize];
    let labels: Vec<u8> = (0u64..3).flat_map(|l| l.to_le_bytes()).collect();
    container(b"r1cs", 1, &[(1, header), (2, cons), (3, labels)])
}
