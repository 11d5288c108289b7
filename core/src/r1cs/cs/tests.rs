use std::cell::Cell;
use std::ops::Range;

use blstrs::Scalar;

use super::*;
use crate::r1cs::{Block, R1cs, Witness};

/// What a synthesis asked the circuit for.
#[derive(Default)]
struct Seen {
    names: Cell<usize>,
    combinations: Cell<usize>,
    values: Cell<usize>,
}

impl Seen {
    fn count(c: &Cell<usize>) {
        c.set(c.get() + 1);
    }
}

/// A shared part (one input, two aux, one constraint), then a top-level
/// namespace `block j` per block: an aux, an input, two constraints, all
/// in a nested namespace. Blank circuits' values fail.
macro_rules! circuit {
    ($bp:ident, $name:ident) => {
        fn $name<CS: $bp::ConstraintSystem<Scalar>>(
            cs: &mut CS,
            blocks: Range<u64>,
            blank: bool,
            seen: &Seen,
        ) -> Result<(), $bp::SynthesisError> {
            use $bp::ConstraintSystem as _;
            let value = |v: u64| {
                Seen::count(&seen.values);
                if blank {
                    Err($bp::SynthesisError::AssignmentMissing)
                } else {
                    Ok(Scalar::from(v))
                }
            };
            let name = |s: String| {
                Seen::count(&seen.names);
                s
            };
            let lc = |lc: $bp::LinearCombination<Scalar>| {
                Seen::count(&seen.combinations);
                lc
            };
            let x = cs.alloc_input(|| name("x".into()), || value(3))?;
            let s = cs.alloc(|| name("s".into()), || value(5))?;
            let t = cs.alloc(|| name("t".into()), || value(15))?;
            cs.enforce(
                || name("x s".into()),
                |l| lc(l + x),
                |l| lc(l + s),
                |l| lc(l + t),
            );
            for j in blocks {
                let mut cs = cs.namespace(|| name(format!("block {j}")));
                let mut cs = cs.namespace(|| name(format!("inner {j}")));
                let b = cs.alloc(|| name("b".into()), || value(15 * j))?;
                let o = cs.alloc_input(|| name("o".into()), || value(15 * j + 1))?;
                let one = CS::one();
                cs.enforce(
                    || name("t j".into()),
                    |l| lc(l + t),
                    |l| lc(l + (Scalar::from(j), one)),
                    |l| lc(l + b),
                );
                cs.enforce(
                    || name("o".into()),
                    |l| lc(l + b + one),
                    |l| lc(l + one),
                    |l| lc(l + o),
                );
            }
            Ok(())
        }
    };
}

circuit!(bellpepper_core, synthesize);

fn witness(blocks: Range<u64>) -> Witness {
    let mut cs = WitnessCs::new();
    synthesize(&mut cs, blocks, false, &Seen::default()).unwrap();
    cs.into_witness()
}

fn record(blocks: Range<u64>) -> (R1cs, Witness) {
    let mut cs = RecordingCs::with_values();
    synthesize(&mut cs, blocks, false, &Seen::default()).unwrap();
    let (r1cs, w) = cs.finish();
    (r1cs, w.unwrap())
}

/// The witness of blocks `0..3` through `synthesize`, which must build
/// no names and no linear combinations.
fn witness_building_nothing<E: std::fmt::Debug>(
    synthesize: impl FnOnce(&mut WitnessCs, &Seen) -> Result<(), E>,
) -> Witness {
    let seen = Seen::default();
    let mut cs = WitnessCs::new();
    synthesize(&mut cs, &seen).unwrap();
    assert_eq!((seen.names.get(), seen.combinations.get()), (0, 0));
    assert_eq!(seen.values.get(), 3 + 3 * 2);
    cs.into_witness()
}

#[test]
fn witness_synthesis_builds_no_names_and_no_combinations() {
    let w = witness_building_nothing(|cs, seen| synthesize(cs, 0..3, false, seen));
    assert_eq!(w, witness(0..3));
    // A split builds top-level names until it is found, and nothing else.
    let seen = Seen::default();
    let mut cs = WitnessCs::split_at("block");
    synthesize(&mut cs, 0..3, false, &seen).unwrap();
    assert_eq!((seen.names.get(), seen.combinations.get()), (1, 0));
}

#[test]
fn recording_keeps_the_values_it_is_asked_for_and_asks_for_no_others() {
    let (r1cs, w) = record(0..3);
    assert_eq!(w, witness(0..3));
    assert_eq!(
        (r1cs.num_inputs, r1cs.num_aux, r1cs.num_constraints()),
        (5, 5, 7)
    );
    assert_eq!(r1cs.first_unsatisfied(&w).unwrap(), None);
    let seen = Seen::default();
    let mut cs = RecordingCs::new();
    synthesize(&mut cs, 0..3, true, &seen).unwrap();
    assert_eq!(seen.values.get(), 0);
    assert_eq!(cs.finish(), (r1cs, None));
    let mut cs = RecordingCs::with_values();
    assert!(synthesize(&mut cs, 0..3, true, &Seen::default()).is_err());
}

#[test]
fn blocks_synthesised_apart_join_into_the_whole_witness() {
    let blocks: Vec<Block> = (0..4)
        .map(|j| {
            let mut cs = WitnessCs::split_at("block");
            synthesize(&mut cs, j..j + 1, false, &Seen::default()).unwrap();
            cs.into_block().unwrap()
        })
        .collect();
    assert_eq!(Block::join(blocks), Some(witness(0..4)));
    let mut cs = WitnessCs::split_at("chunk");
    synthesize(&mut cs, 0..1, false, &Seen::default()).unwrap();
    assert!(matches!(cs.into_block(), Err(Error::Failed(_))));
}

#[test]
fn counts_of_one_block_scale_to_the_recording() {
    let seen = Seen::default();
    let mut cs = CountingCs::split_at("block");
    synthesize(&mut cs, 1..2, true, &seen).unwrap();
    assert_eq!(seen.values.get(), 0);
    let (shared, block) = cs.finish().unwrap();
    let c = shared.plus_times(block, 3);
    let (r1cs, _) = record(1..4);
    let d = r1cs.density();
    let ones = |v: &[bool]| v.iter().filter(|&&b| b).count() as u64;
    assert_eq!(
        c,
        Counts {
            constraints: r1cs.num_constraints() as u64,
            inputs: r1cs.num_inputs as u64,
            aux: r1cs.num_aux as u64,
            nonzeros: (r1cs.a.nnz() + r1cs.b.nnz() + r1cs.c.nnz()) as u64,
            a_aux: ones(&d.a_aux),
            b_inputs: ones(&d.b_input),
            b_aux: ones(&d.b_aux),
        }
    );
    let mut cs = CountingCs::split_at("chunk");
    synthesize(&mut cs, 0..1, true, &Seen::default()).unwrap();
    assert!(matches!(cs.finish(), Err(Error::Failed(_))));
}

/// bellpepper-core 0.2's trait drives the same systems to the same results.
#[cfg(feature = "bellpepper-core-02")]
mod bellpepper_core_02_trait {
    use super::*;

    circuit!(bellpepper_core_02, synthesize_02);

    #[test]
    fn both_versions_record_count_and_witness_alike() {
        let w = witness_building_nothing(|cs, seen| synthesize_02(cs, 0..3, false, seen));
        assert_eq!(w, witness(0..3));

        let mut cs = RecordingCs::with_values();
        synthesize_02(&mut cs, 0..3, false, &Seen::default()).unwrap();
        let (r1cs, w) = record(0..3);
        assert_eq!(cs.finish(), (r1cs, Some(w)));

        let mut cs = CountingCs::split_at("block");
        synthesize_02(&mut cs, 1..2, true, &Seen::default()).unwrap();
        let mut cs4 = CountingCs::split_at("block");
        synthesize(&mut cs4, 1..2, true, &Seen::default()).unwrap();
        assert_eq!(cs.finish().unwrap(), cs4.finish().unwrap());

        let mut cs = WitnessCs::split_at("block");
        synthesize_02(&mut cs, 2..3, false, &Seen::default()).unwrap();
        assert!(cs.into_block().is_ok());
    }
}
