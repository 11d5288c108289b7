//! ark-prover ZKEY WTNS PROOF_JSON PUBLIC_JSON
//!
//! BN254 Groth16 with arkworks on circom-layout files: the proving key and
//! constraint matrices from a snarkjs `.zkey` (ark-circom's `read_zkey`), the
//! full assignment from a snarkjs `.wtns`, the witness map snarkjs and
//! rapidsnark use (ark-circom's `CircomReduction`), so the proof checks
//! against the same verifying key. Writes proof and public signals as
//! snarkjs JSON and prints one timing line to stdout.
//!
//! Exit codes: 0 proved; 2 bad arguments or a file it refuses; 1 the
//! prover itself failed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::panic::{self, AssertUnwindSafe};
use std::process::exit;
use std::time::Instant;

use ark_bn254::{Bn254, Fq, Fr, G1Affine, G2Affine};
use ark_circom::{CircomReduction, read_zkey};
use ark_ec::AffineRepr;
use ark_ff::{BigInt, BigInteger, PrimeField};
use ark_groth16::{Groth16, Proof};
use ark_relations::utils::matrix::Matrix;
use ark_std::UniformRand;
use num_bigint::BigUint;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Failures: 2 for the caller's inputs, 1 for the prover.
struct Fail(i32, String);

fn refuse<T>(msg: impl Into<String>) -> Result<T, Fail> {
    Err(Fail(2, msg.into()))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: ark-prover ZKEY WTNS PROOF_JSON PUBLIC_JSON");
        exit(2);
    }
    if let Err(Fail(code, msg)) = run(&args[1], &args[2], &args[3], &args[4]) {
        eprintln!("ark-prover: {msg}");
        exit(code);
    }
}

fn run(zkey: &str, wtns: &str, proof_out: &str, public_out: &str) -> Result<(), Fail> {
    // The witness is read first (against the zkey header's variable count)
    // so a bad one is refused before the long key read; its time counts
    // towards "proved in", as witness-to-proof.
    let n_vars = check_zkey_header(zkey)?;
    let t_wtns = Instant::now();
    let full = read_wtns(wtns, n_vars)?;
    let wtns_s = t_wtns.elapsed().as_secs_f64();

    let t_zkey = Instant::now();
    let file = File::open(zkey).or_else(|e| refuse(format!("{zkey}: {e}")))?;
    // read_zkey does many small reads; unbuffered it would time syscalls.
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let (pk, m) = guarded(|| read_zkey(&mut reader))
        .or_else(|p| refuse(format!("{zkey}: malformed zkey ({p})")))?
        .or_else(|e| refuse(format!("{zkey}: malformed zkey ({e})")))?;
    let zkey_s = t_zkey.elapsed().as_secs_f64();

    let t_prove = Instant::now();
    // a_query has one point per variable (the constant one included); the
    // prover's MSMs zip it with the assignment, so a shorter witness would
    // be truncated silently rather than rejected.
    if pk.a_query.len() != n_vars || pk.b_g2_query.len() != n_vars {
        return refuse(format!(
            "{zkey}: key has {} points for {n_vars} variables",
            pk.a_query.len()
        ));
    }
    let n_pub = m.num_instance_variables - 1;
    // An out-of-range signal index in the zkey would panic the witness map.
    if m.a.iter().chain(&m.b).flatten().any(|&(_, i)| i >= n_vars) {
        return refuse(format!("{zkey}: a constraint names a signal >= {n_vars}"));
    }

    let mut rng = StdRng::from_entropy();
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let matrices: [Matrix<Fr>; 3] = [m.a, m.b, m.c];
    let proof = guarded(|| {
        Groth16::<Bn254, CircomReduction>::create_proof_with_reduction_and_matrices(
            &pk,
            r,
            s,
            &matrices,
            m.num_instance_variables,
            m.num_constraints,
            &full,
        )
    })
    .or_else(|p| Err(Fail(1, format!("prover panicked: {p}"))))?
    .or_else(|e| Err(Fail(1, format!("prover failed: {e}"))))?;
    let prove_s = wtns_s + t_prove.elapsed().as_secs_f64();

    write(proof_out, &proof_json(&proof))?;
    let public: Vec<String> = full[1..=n_pub].iter().map(|v| quote(dec(*v))).collect();
    write(public_out, &format!("[\n {}\n]\n", public.join(",\n ")))?;
    println!("ark-groth16: zkey read {zkey_s:.3} s, proved in {prove_s:.3} s");
    Ok(())
}

/// Runs `f`, turning a panic into Err(its message) without printing it:
/// ark-circom's reader asserts on malformed input (a missing section, a
/// point off the curve) instead of returning an error.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let out = panic::catch_unwind(AssertUnwindSafe(f));
    panic::set_hook(hook);
    out.map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into())
    })
}

/// Section table of a snarkjs binary file (magic, version, count, then
/// id u32 + size u64 + body per section): id -> (body offset, size).
/// Every section must lie inside the file.
fn sections<R: Read + Seek>(
    r: &mut R,
    magic: &[u8; 4],
    name: &str,
) -> Result<HashMap<u32, (u64, u64)>, Fail> {
    let bad = |what: &str| Fail(2, format!("{name}: {what}"));
    let len = r.seek(SeekFrom::End(0)).map_err(|e| bad(&e.to_string()))?;
    r.seek(SeekFrom::Start(0))
        .map_err(|e| bad(&e.to_string()))?;
    let mut head = [0u8; 12];
    r.read_exact(&mut head)
        .map_err(|_| bad("too short for a header"))?;
    if &head[..4] != magic {
        return Err(bad(&format!(
            "not a {} file",
            String::from_utf8_lossy(magic)
        )));
    }
    let count = u32::from_le_bytes(head[8..12].try_into().unwrap());
    let mut out = HashMap::new();
    let mut pos = 12u64;
    for _ in 0..count {
        let mut sh = [0u8; 12];
        r.read_exact(&mut sh)
            .map_err(|_| bad("truncated section table"))?;
        let id = u32::from_le_bytes(sh[..4].try_into().unwrap());
        let size = u64::from_le_bytes(sh[4..].try_into().unwrap());
        let body = pos + 12;
        let end = body.checked_add(size).filter(|&e| e <= len);
        let end = end.ok_or_else(|| bad(&format!("section {id} runs past the end")))?;
        // First occurrence wins, as in snarkjs and ark-circom.
        out.entry(id).or_insert((body, size));
        pos = end;
        r.seek(SeekFrom::Start(pos))
            .map_err(|e| bad(&e.to_string()))?;
    }
    Ok(out)
}

/// Refuses, before ark-circom reads it, a zkey that is not Groth16 over
/// BN254 or lacks a section its reader would unwrap; returns its variable
/// count (the constant one included).
fn check_zkey_header(path: &str) -> Result<usize, Fail> {
    let mut f = File::open(path).or_else(|e| refuse(format!("{path}: {e}")))?;
    let secs = sections(&mut f, b"zkey", path)?;
    if let Some(id) = (1..=9).find(|id| !secs.contains_key(id)) {
        return refuse(format!("{path}: no section {id}"));
    }
    let mut read_at = |off: u64, n: usize| -> Result<Vec<u8>, Fail> {
        let mut b = vec![0u8; n];
        f.seek(SeekFrom::Start(off))
            .and_then(|_| f.read_exact(&mut b))
            .or_else(|e| refuse(format!("{path}: {e}")))?;
        Ok(b)
    };
    let protocol = read_at(secs[&1].0, 4)?;
    if protocol != 1u32.to_le_bytes() {
        return refuse(format!("{path}: not a Groth16 zkey"));
    }
    // Groth header: n8q, q, n8r, r, nVars, nPublic, domain size, points.
    let h = read_at(secs[&2].0, 4 + 32 + 4 + 32 + 4 + 4)?;
    let q = Fq::MODULUS.to_bytes_le();
    let r = Fr::MODULUS.to_bytes_le();
    if h[..4] != 32u32.to_le_bytes()
        || h[4..36] != q[..]
        || h[36..40] != 32u32.to_le_bytes()
        || h[40..72] != r[..]
    {
        return refuse(format!("{path}: not a BN254 zkey"));
    }
    let n_vars = u32::from_le_bytes(h[72..76].try_into().unwrap()) as usize;
    let n_pub = u32::from_le_bytes(h[76..80].try_into().unwrap()) as usize;
    // ark-circom subtracts these unchecked.
    if n_pub >= n_vars {
        return refuse(format!(
            "{path}: {n_pub} public signals but {n_vars} variables"
        ));
    }
    Ok(n_vars)
}

/// The full assignment from a snarkjs .wtns (section 1: n8, prime,
/// count; section 2: count values, n8 bytes little-endian each, plain
/// integers below the prime), which must have `n_vars` values.
fn read_wtns(path: &str, n_vars: usize) -> Result<Vec<Fr>, Fail> {
    let bytes = std::fs::read(path).or_else(|e| refuse(format!("{path}: {e}")))?;
    let secs = sections(&mut std::io::Cursor::new(&bytes), b"wtns", path)?;
    let body = |id: u32| -> Result<&[u8], Fail> {
        let &(off, size) = secs
            .get(&id)
            .ok_or_else(|| Fail(2, format!("{path}: no section {id}")))?;
        Ok(&bytes[off as usize..(off + size) as usize])
    };
    let header = body(1)?;
    if header.len() < 4 + 32 + 4 || header[..4] != 32u32.to_le_bytes() {
        return refuse(format!("{path}: header is not that of a 32-byte field"));
    }
    if header[4..36] != Fr::MODULUS.to_bytes_le()[..] {
        return refuse(format!("{path}: prime is not BN254's scalar field r"));
    }
    let count = u32::from_le_bytes(header[36..40].try_into().unwrap()) as usize;
    if count != n_vars {
        return refuse(format!(
            "{path}: {count} witness values, the zkey has {n_vars} variables"
        ));
    }
    let values = body(2)?;
    if values.len() as u64 != count as u64 * 32 {
        return refuse(format!(
            "{path}: section 2 has {} bytes, {count} values need {}",
            values.len(),
            count * 32
        ));
    }
    values
        .chunks_exact(32)
        .enumerate()
        .map(|(i, c)| {
            let limbs = std::array::from_fn(|k| {
                u64::from_le_bytes(c[8 * k..8 * k + 8].try_into().unwrap())
            });
            Fr::from_bigint(BigInt::new(limbs))
                .ok_or_else(|| Fail(2, format!("{path}: value {i} is not below r")))
        })
        .collect()
}

fn dec<F: PrimeField>(v: F) -> String {
    let n: BigUint = v.into();
    n.to_string()
}

fn quote(s: String) -> String {
    format!("\"{s}\"")
}

/// snarkjs's projective form: (x, y, 1), or (0, 1, 0) at infinity.
fn g1(p: &G1Affine) -> String {
    match p.xy() {
        Some((x, y)) => format!("[\"{}\", \"{}\", \"1\"]", dec(x), dec(y)),
        None => "[\"0\", \"1\", \"0\"]".into(),
    }
}

fn g2(p: &G2Affine) -> String {
    match p.xy() {
        Some((x, y)) => format!(
            "[[\"{}\", \"{}\"], [\"{}\", \"{}\"], [\"1\", \"0\"]]",
            dec(x.c0),
            dec(x.c1),
            dec(y.c0),
            dec(y.c1)
        ),
        None => "[[\"0\", \"0\"], [\"1\", \"0\"], [\"0\", \"0\"]]".into(),
    }
}

fn proof_json(p: &Proof<Bn254>) -> String {
    format!(
        "{{\n \"pi_a\": {},\n \"pi_b\": {},\n \"pi_c\": {},\n \"protocol\": \"groth16\",\n \"curve\": \"bn128\"\n}}\n",
        g1(&p.a),
        g2(&p.b),
        g1(&p.c)
    )
}

fn write(path: &str, text: &str) -> Result<(), Fail> {
    std::fs::write(path, text).or_else(|e| Err(Fail(1, format!("{path}: {e}"))))
}
