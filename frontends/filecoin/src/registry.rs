//! Proof types by the numbers Lotus, Curio and cuzk send (go-state-types'
//! `abi.RegisteredSealProof` / `RegisteredPoStProof` /
//! `RegisteredUpdateProof`), by name, and the prover id of a miner actor.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use zkpipe_core::Error;

use RegisteredPoStProof as Post;
use RegisteredSealProof as Seal;
use RegisteredUpdateProof as Update;

/// Seal proof types, indexed by their go-state-types number.
pub const SEAL_PROOFS: [RegisteredSealProof; 20] = [
    Seal::StackedDrg2KiBV1,
    Seal::StackedDrg8MiBV1,
    Seal::StackedDrg512MiBV1,
    Seal::StackedDrg32GiBV1,
    Seal::StackedDrg64GiBV1,
    Seal::StackedDrg2KiBV1_1,
    Seal::StackedDrg8MiBV1_1,
    Seal::StackedDrg512MiBV1_1,
    Seal::StackedDrg32GiBV1_1,
    Seal::StackedDrg64GiBV1_1,
    Seal::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
    Seal::StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
    Seal::StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
    Seal::StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
    Seal::StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
    Seal::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
    Seal::StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
    Seal::StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
    Seal::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
    Seal::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
];

/// PoSt proof types, indexed by their go-state-types number (Go's
/// `StackedDrgWindow*V1_1` are filecoin-proofs' `*V1_2`).
pub const POST_PROOFS: [RegisteredPoStProof; 15] = [
    Post::StackedDrgWinning2KiBV1,
    Post::StackedDrgWinning8MiBV1,
    Post::StackedDrgWinning512MiBV1,
    Post::StackedDrgWinning32GiBV1,
    Post::StackedDrgWinning64GiBV1,
    Post::StackedDrgWindow2KiBV1,
    Post::StackedDrgWindow8MiBV1,
    Post::StackedDrgWindow512MiBV1,
    Post::StackedDrgWindow32GiBV1,
    Post::StackedDrgWindow64GiBV1,
    Post::StackedDrgWindow2KiBV1_2,
    Post::StackedDrgWindow8MiBV1_2,
    Post::StackedDrgWindow512MiBV1_2,
    Post::StackedDrgWindow32GiBV1_2,
    Post::StackedDrgWindow64GiBV1_2,
];

/// SnapDeals (sector update) proof types, indexed by their go-state-types
/// number.
pub const UPDATE_PROOFS: [RegisteredUpdateProof; 5] = [
    Update::StackedDrg2KiBV1,
    Update::StackedDrg8MiBV1,
    Update::StackedDrg512MiBV1,
    Update::StackedDrg32GiBV1,
    Update::StackedDrg64GiBV1,
];

/// The seal proof type numbered `n`.
///
/// # Errors
/// [`Error::InvalidInput`] for a number no seal proof has.
pub fn seal_proof(n: u64) -> Result<RegisteredSealProof, Error> {
    usize::try_from(n)
        .ok()
        .and_then(|i| SEAL_PROOFS.get(i).copied())
        .ok_or_else(|| {
            Error::InvalidInput(format!("{n} is not a registered seal proof number (0–19)"))
        })
}

/// The PoSt proof type numbered `n`.
///
/// # Errors
/// [`Error::InvalidInput`] for a number no PoSt proof has.
pub fn post_proof(n: u64) -> Result<RegisteredPoStProof, Error> {
    usize::try_from(n)
        .ok()
        .and_then(|i| POST_PROOFS.get(i).copied())
        .ok_or_else(|| {
            Error::InvalidInput(format!("{n} is not a registered PoSt proof number (0–14)"))
        })
}

/// The sector update proof type numbered `n`.
///
/// # Errors
/// [`Error::InvalidInput`] for a number no update proof has.
pub fn update_proof(n: u64) -> Result<RegisteredUpdateProof, Error> {
    usize::try_from(n)
        .ok()
        .and_then(|i| UPDATE_PROOFS.get(i).copied())
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "{n} is not a registered sector update proof number (0–4)"
            ))
        })
}

/// The seal proof for `sector_size`: the current interactive PoRep of that
/// size (the `…V1_1` one Lotus and Curio seal).
///
/// # Errors
/// [`Error::InvalidInput`] for a size Filecoin does not register.
pub fn seal_proof_for(sector_size: u64) -> Result<RegisteredSealProof, Error> {
    SEAL_PROOFS
        .iter()
        .rev()
        .filter(|s| format!("{s:?}").ends_with("V1_1"))
        .find(|s| u64::from(s.sector_size()) == sector_size)
        .copied()
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "sector size {} is not one Filecoin registers (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)",
                crate::shape::sector_size_name(sector_size)
            ))
        })
}

/// The sector update proof type for `sector_size`.
///
/// # Errors
/// [`Error::InvalidInput`] for a size Filecoin does not register.
pub fn update_proof_for(sector_size: u64) -> Result<RegisteredUpdateProof, Error> {
    UPDATE_PROOFS
        .iter()
        .find(|p| u64::from(p.sector_size()) == sector_size)
        .copied()
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "sector size {} is not one Filecoin registers",
                crate::shape::sector_size_name(sector_size)
            ))
        })
}

/// A PoSt proof type by number or by filecoin-proofs' name
/// (`StackedDrgWindow2KiBV1_2`).
///
/// # Errors
/// [`Error::InvalidInput`] naming the accepted forms.
pub fn parse_post_proof(s: &str) -> Result<RegisteredPoStProof, Error> {
    if let Ok(n) = s.parse::<u64>() {
        return post_proof(n);
    }
    POST_PROOFS
        .iter()
        .find(|p| format!("{p:?}") == s)
        .copied()
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "`{s}` is not a PoSt proof type: give its number (0–14) or name, e.g. StackedDrgWindow32GiBV1_2"
            ))
        })
}

/// The PoSt type a request names: `registered` (a number or a name, see
/// [`parse_post_proof`]) or else the current one for `sector_size`; a
/// WindowPoSt when `window`, else a WinningPoSt.
///
/// # Errors
/// [`Error::InvalidInput`] for a type or size Filecoin does not register,
/// a type of the other kind of PoSt, or neither given.
pub fn post_proof_asked(
    window: bool,
    registered: Option<&str>,
    sector_size: Option<u64>,
) -> Result<RegisteredPoStProof, Error> {
    let proof = match (registered, sector_size) {
        (Some(t), _) => parse_post_proof(t)?,
        (None, Some(size)) => post_proof_for(window, size)?,
        (None, None) => {
            return Err(Error::InvalidInput(
                "a PoSt needs its type or its sector size".into(),
            ));
        }
    };
    let is_window = proof.typ() == filecoin_proofs_api::PoStType::Window;
    if is_window != window {
        return Err(Error::InvalidInput(format!(
            "{proof:?} is a {} PoSt type",
            if is_window { "window" } else { "winning" }
        )));
    }
    Ok(proof)
}

/// The WindowPoSt (current version) or WinningPoSt type for `sector_size`.
///
/// # Errors
/// [`Error::InvalidInput`] for a size Filecoin does not register.
pub fn post_proof_for(window: bool, sector_size: u64) -> Result<RegisteredPoStProof, Error> {
    POST_PROOFS
        .iter()
        .rev()
        .find(|p| {
            let is_window = p.typ() == filecoin_proofs::types::PoStType::Window;
            is_window == window && u64::from(p.sector_size()) == sector_size
        })
        .copied()
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "sector size {} is not one Filecoin registers",
                crate::shape::sector_size_name(sector_size)
            ))
        })
}

/// The prover id of miner actor `f0<miner>`: its ID address's payload
/// (the number as an unsigned varint), zero-padded to 32 bytes, as Lotus
/// and Curio make it.
pub fn prover_id_of_miner(miner: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let (mut v, mut i) = (miner, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            id[i] = byte;
            return id;
        }
        id[i] = byte | 0x80;
        i += 1;
    }
}

/// Parses a 32-byte value given as 64 hex digits (an optional `0x`).
///
/// # Errors
/// [`Error::InvalidInput`] naming `what`.
pub fn parse_hex32(what: &str, s: &str) -> Result<[u8; 32], Error> {
    let t = s.strip_prefix("0x").unwrap_or(s);
    let bad = || {
        Error::InvalidInput(format!(
            "{what}: expected 64 hex digits (32 bytes), got `{s}`"
        ))
    };
    if t.len() != 64 || !t.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_filecoin_proofs_api() {
        // filecoin-proofs-api numbers seal proofs by porep id in the same order.
        for (n, p) in SEAL_PROOFS.iter().enumerate() {
            assert_eq!(seal_proof(n as u64).unwrap(), *p);
        }
        assert!(
            seal_proof(20).is_err() && post_proof(15).is_err() && post_proof(u64::MAX).is_err()
        );
        assert_eq!(
            parse_post_proof("10").unwrap(),
            Post::StackedDrgWindow2KiBV1_2
        );
        assert_eq!(
            parse_post_proof("StackedDrgWinning32GiBV1").unwrap(),
            Post::StackedDrgWinning32GiBV1
        );
        assert!(parse_post_proof("StackedDrgWindow").is_err());
        assert_eq!(update_proof(3).unwrap(), Update::StackedDrg32GiBV1);
        assert!(update_proof(5).is_err());
        assert_eq!(update_proof_for(2048).unwrap(), Update::StackedDrg2KiBV1);
        assert!(update_proof_for(4096).is_err());
        assert_eq!(
            post_proof_for(true, 2048).unwrap(),
            Post::StackedDrgWindow2KiBV1_2
        );
        assert_eq!(
            post_proof_for(false, 32 << 30).unwrap(),
            Post::StackedDrgWinning32GiBV1
        );
    }

    #[test]
    fn prover_ids_and_hex() {
        assert_eq!(prover_id_of_miner(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id_of_miner(5)[..2], [5, 0]);
        let h = "0x".to_string() + &"0a".repeat(32);
        assert_eq!(parse_hex32("x", &h).unwrap(), [10; 32]);
        for bad in ["", "0a", &"zz".repeat(32), &"é".repeat(32)] {
            assert!(parse_hex32("x", bad).is_err(), "{bad}");
        }
    }
}
