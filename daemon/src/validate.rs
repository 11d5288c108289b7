//! Every field of a request checked before the daemon acts on it. Names
//! reach the file system only as a built-in circuit's name and a parsed
//! size, under the configured key folder.

use std::sync::Arc;

use crate::circom_keys::CIRCOM;
use crate::daemon::{CircomWitnesses, JobInputs, MAX_PARTITIONS, NewJob};
use crate::keys::{KeyId, key_id};
use crate::proto::{self, Priority, submit_request::Inputs};
use zkpipe_circom::CurveWitness;

/// Longest caller request id.
pub const MAX_REQUEST_ID: usize = 128;
/// Longest `Await` timeout.
pub const MAX_TIMEOUT_MS: u32 = 3_600_000;
/// Most keys in one Preload or Evict call.
pub const MAX_KEYS_PER_CALL: usize = 64;

/// A submission, checked.
///
/// # Errors
/// The field that is wrong and why.
pub fn new_job(req: &proto::SubmitRequest) -> Result<NewJob, String> {
    let id = &req.request_id;
    if id.len() > MAX_REQUEST_ID || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "request_id: up to {MAX_REQUEST_ID} printable ASCII characters without spaces"
        ));
    }
    let key = key(req.key.as_ref())?;
    let priority = match Priority::try_from(req.priority) {
        Ok(Priority::Unspecified) => Priority::Normal,
        Ok(p) => p,
        Err(_) => {
            return Err(format!(
                "priority: {} is not LOW, NORMAL, HIGH or CRITICAL",
                req.priority
            ));
        }
    };
    let partitions = match req.partitions {
        0 => 1,
        p if p <= MAX_PARTITIONS => p,
        p => {
            return Err(format!(
                "partitions: {p} is over the limit of {MAX_PARTITIONS}"
            ));
        }
    };
    let circom = key.circuit == CIRCOM;
    let (inputs, partitions) = match &req.inputs {
        Some(Inputs::Builtin(b)) if !circom => (JobInputs::Seed(b.seed), partitions),
        Some(Inputs::Circom(c)) if circom => {
            let n = c.wtns.len();
            if n == 0 || n > MAX_PARTITIONS as usize {
                return Err(format!(
                    "inputs.circom.wtns: 1 to {MAX_PARTITIONS} witnesses, not {n}"
                ));
            }
            if req.partitions != 0 && req.partitions as usize != n {
                return Err(format!(
                    "partitions: {} but {n} witnesses were sent (one per partition)",
                    req.partitions
                ));
            }
            let (mut bls, mut bn) = (vec![], vec![]);
            for (i, bytes) in c.wtns.iter().enumerate() {
                let name = format!("inputs.circom.wtns[{i}]");
                match zkpipe_circom::wtns_either_from_bytes(&name, bytes.clone())
                    .map_err(|e| format!("inputs: {e}"))?
                {
                    CurveWitness::Bls12_381(v) => bls.push(v),
                    CurveWitness::Bn254(v) => bn.push(v),
                }
                if !bls.is_empty() && !bn.is_empty() {
                    return Err(format!(
                        "inputs: {name} is over another curve's prime than inputs.circom.wtns[0] \
                         (one job's witnesses are all BLS12-381 or all BN254)"
                    ));
                }
            }
            let values = match bn.is_empty() {
                true => CircomWitnesses::Bls12_381(bls),
                false => CircomWitnesses::Bn254(bn),
            };
            (JobInputs::Circom(Arc::new(values)), n as u32)
        }
        Some(_) if circom => {
            return Err("inputs: a circom key takes `circom { wtns }`".into());
        }
        Some(_) => return Err("inputs: a built-in circuit takes `builtin { seed }`".into()),
        None => return Err("inputs: missing (a built-in circuit takes `builtin { seed }`, a circom key `circom { wtns }`)".into()),
    };
    Ok(NewJob {
        request_id: id.clone(),
        key,
        priority,
        partitions,
        inputs,
    })
}

/// A key name, checked against the built-in circuits (an empty size is the
/// circuit's demo size).
///
/// # Errors
/// The field that is wrong and why.
pub fn key(k: Option<&proto::KeyId>) -> Result<KeyId, String> {
    let k = k.ok_or("key: missing")?;
    let size = if k.size.is_empty() {
        zkpipe_circuits::default_size(&k.circuit)
    } else {
        &k.size
    };
    key_id(&k.circuit, size).map_err(|e| format!("key: {e}"))
}

/// The keys of a Preload or Evict call.
///
/// # Errors
/// The field that is wrong and why.
pub fn keys(req: &proto::KeysRequest) -> Result<Vec<KeyId>, String> {
    if req.keys.is_empty() || req.keys.len() > MAX_KEYS_PER_CALL {
        return Err(format!("keys: 1 to {MAX_KEYS_PER_CALL} keys per call"));
    }
    req.keys.iter().map(|k| key(Some(k))).collect()
}

/// An `Await` timeout (`None`: no limit).
///
/// # Errors
/// The field that is wrong and why.
pub fn timeout(ms: u32) -> Result<Option<std::time::Duration>, String> {
    match ms {
        0 => Ok(None),
        ms if ms <= MAX_TIMEOUT_MS => Ok(Some(std::time::Duration::from_millis(ms as u64))),
        ms => Err(format!(
            "timeout_ms: {ms} is over the limit of {MAX_TIMEOUT_MS}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> proto::SubmitRequest {
        proto::SubmitRequest {
            request_id: "r-1".into(),
            key: Some(proto::KeyId {
                circuit: "squaring-chain".into(),
                size: "64".into(),
            }),
            priority: Priority::High as i32,
            partitions: 2,
            inputs: Some(Inputs::Builtin(proto::BuiltinInputs { seed: 7 })),
        }
    }

    /// A `.wtns` over `curve`'s prime holding `values`; `count` is the
    /// witness count its header claims.
    fn wtns_of(curve: zkpipe_core::Curve, values: &[u64], count: u32) -> Vec<u8> {
        let mut header = 32u32.to_le_bytes().to_vec();
        header.extend(curve.scalar_modulus_le());
        header.extend(count.to_le_bytes());
        let data: Vec<u8> = values
            .iter()
            .flat_map(|v| {
                let mut b = [0u8; 32];
                b[..8].copy_from_slice(&v.to_le_bytes());
                b
            })
            .collect();
        let mut out = b"wtns".to_vec();
        out.extend(2u32.to_le_bytes());
        out.extend(2u32.to_le_bytes());
        for (ty, section) in [(1u32, header), (2, data)] {
            out.extend(ty.to_le_bytes());
            out.extend((section.len() as u64).to_le_bytes());
            out.extend(section);
        }
        out
    }

    #[test]
    fn circom_witnesses_are_read_by_their_prime_and_bad_ones_refused() {
        use zkpipe_core::Curve;
        let with = |w: Vec<Vec<u8>>| {
            let mut r = request();
            r.key = Some(proto::KeyId {
                circuit: "circom".into(),
                size: "ab".repeat(32),
            });
            r.partitions = 0;
            r.inputs = Some(Inputs::Circom(proto::CircomInputs { wtns: w }));
            new_job(&r)
        };
        let bn = wtns_of(Curve::Bn254, &[1, 9, 3], 3);
        let bls = wtns_of(Curve::Bls12_381, &[1, 9, 3], 3);
        let JobInputs::Circom(w) = with(vec![bn.clone(), bn.clone()]).unwrap().inputs else {
            panic!("circom inputs expected");
        };
        assert_eq!(w.curve(), Curve::Bn254);
        let JobInputs::Circom(w) = with(vec![bls.clone()]).unwrap().inputs else {
            panic!("circom inputs expected");
        };
        assert_eq!(w.curve(), Curve::Bls12_381);
        // Every truncation, a count past the values, a value not below r.
        for cut in 0..bn.len() {
            let e = with(vec![bn[..cut].to_vec()]).unwrap_err();
            assert!(e.starts_with("inputs: "), "cut at {cut}: {e}");
        }
        let e = with(vec![wtns_of(Curve::Bn254, &[1, 9, 3], u32::MAX)]).unwrap_err();
        assert!(e.starts_with("inputs: "), "{e}");
        let mut over_r = bn.clone();
        let last = over_r.len() - 32;
        over_r[last..].copy_from_slice(&Curve::Bn254.scalar_modulus_le());
        let e = with(vec![over_r]).unwrap_err();
        assert!(e.contains("not below r"), "{e}");
        // One job, two primes.
        for pair in [vec![bn.clone(), bls.clone()], vec![bls, bn]] {
            let e = with(pair).unwrap_err();
            assert!(e.contains("another curve's prime"), "{e}");
        }
    }

    #[test]
    fn a_good_request_passes() {
        let job = new_job(&request()).unwrap();
        assert_eq!((job.partitions, &job.inputs), (2, &JobInputs::Seed(7)));
        assert_eq!(job.priority, Priority::High);
    }

    type Spoil = Box<dyn Fn(&mut proto::SubmitRequest)>;

    #[test]
    fn each_bad_field_is_named() {
        let cases: Vec<(&str, Spoil)> = vec![
            ("request_id", Box::new(|r| r.request_id = "x".repeat(129))),
            ("request_id", Box::new(|r| r.request_id = "a b".into())),
            ("key", Box::new(|r| r.key = None)),
            (
                "key",
                Box::new(|r| r.key.as_mut().unwrap().circuit = "../../etc/passwd".into()),
            ),
            (
                "key",
                Box::new(|r| r.key.as_mut().unwrap().size = "-3".into()),
            ),
            (
                "key",
                Box::new(|r| r.key.as_mut().unwrap().size = "9".repeat(100)),
            ),
            ("priority", Box::new(|r| r.priority = 99)),
            ("partitions", Box::new(|r| r.partitions = 65)),
            ("inputs", Box::new(|r| r.inputs = None)),
        ];
        for (field, spoil) in cases {
            let mut r = request();
            spoil(&mut r);
            let e = new_job(&r).unwrap_err();
            assert!(e.starts_with(field), "{field}: {e}");
        }
        // circom keys and inputs.
        let circom_key = |r: &mut proto::SubmitRequest| {
            r.key = Some(proto::KeyId {
                circuit: "circom".into(),
                size: "ab".repeat(32),
            })
        };
        let wtns = |r: &mut proto::SubmitRequest, w: Vec<Vec<u8>>| {
            r.inputs = Some(Inputs::Circom(proto::CircomInputs { wtns: w }))
        };
        let circom_cases: Vec<(&str, Spoil)> = vec![
            (
                "key",
                Box::new(move |r| {
                    circom_key(r);
                    r.key.as_mut().unwrap().size = "../x.zkey".into();
                }),
            ),
            ("inputs", Box::new(move |r| circom_key(r))),
            ("inputs", Box::new(move |r| wtns(r, vec![b"wtns".to_vec()]))),
            (
                "inputs.circom.wtns",
                Box::new(move |r| {
                    circom_key(r);
                    wtns(r, vec![]);
                }),
            ),
            (
                "partitions",
                Box::new(move |r| {
                    circom_key(r);
                    wtns(r, vec![vec![], vec![], vec![]]);
                }),
            ),
            (
                "inputs: invalid encoding: inputs.circom.wtns[0]",
                Box::new(move |r| {
                    circom_key(r);
                    r.partitions = 0;
                    wtns(r, vec![b"wtns garbage".to_vec()]);
                }),
            ),
        ];
        for (field, spoil) in circom_cases {
            let mut r = request();
            spoil(&mut r);
            let e = new_job(&r).unwrap_err();
            assert!(e.starts_with(field), "{field}: {e}");
        }
        assert!(timeout(MAX_TIMEOUT_MS + 1).is_err());
        assert!(keys(&proto::KeysRequest { keys: vec![] }).is_err());
    }
}
