//! The `sha256` circuit's synthesis.
//!
//! Recording runs bellpepper's SHA-256 gadget. Witness-only synthesis runs
//! a model of that gadget on machine words: the same bit rules (constants
//! fold, negations are free, every other bit operation allocates one
//! variable), so it allocates the same values in the same order, without
//! the linear combinations the gadget builds outside `enforce` (most of its
//! cost). The circuit splits into pieces — message bits, one compression
//! per block from chaining values computed natively, the digest — that
//! synthesize on several threads ([`zkpipe_core::r1cs::witness_in_pieces`]).

use bellpepper::gadgets::multipack;
use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;

/// SHA-256's round constants.
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256's initial hash value.
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// Message bits per message piece (64 blocks' worth): allocating them is
/// cheap next to a block's compression.
const MESSAGE_PIECE_BITS: usize = 64 * 512;

/// A bit as the gadget holds it (bellpepper's `Boolean`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bit {
    Const(bool),
    /// An allocated bit of value `val`, negated when `neg`.
    Var {
        val: bool,
        neg: bool,
    },
}

use Bit::{Const, Var};

impl Bit {
    fn value(self) -> bool {
        match self {
            Const(c) => c,
            Var { val, neg } => val ^ neg,
        }
    }

    fn not(self) -> Bit {
        match self {
            Const(c) => Const(!c),
            Var { val, neg } => Var { val, neg: !neg },
        }
    }

    fn is_const(self) -> bool {
        matches!(self, Const(_))
    }
}

/// The values allocated, in order.
type Out = Vec<bool>;

fn alloc(out: &mut Out, v: bool) -> Bit {
    out.push(v);
    Var { val: v, neg: false }
}

/// `Boolean::xor`.
fn xor(out: &mut Out, a: Bit, b: Bit) -> Bit {
    match (a, b) {
        (Const(false), x) | (x, Const(false)) => x,
        (Const(true), x) | (x, Const(true)) => x.not(),
        (Var { val: va, neg: na }, Var { val: vb, neg: nb }) => {
            out.push(va ^ vb);
            Var {
                val: va ^ vb,
                neg: na ^ nb,
            }
        }
    }
}

/// `Boolean::and`.
fn and(out: &mut Out, a: Bit, b: Bit) -> Bit {
    match (a, b) {
        (Const(false), _) | (_, Const(false)) => Const(false),
        (Const(true), x) | (x, Const(true)) => x,
        _ => alloc(out, a.value() & b.value()),
    }
}

/// `Boolean::sha256_ch`: `(a and b) xor ((not a) and c)`.
fn ch(out: &mut Out, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Const(_), Const(_), Const(_)) => Const(v),
        (Const(false), _, c) => c,
        (a, Const(false), c) => and(out, a.not(), c),
        (a, b, Const(false)) => and(out, a, b),
        (a, b, Const(true)) => and(out, a, b.not()).not(),
        (a, Const(true), c) => and(out, a.not(), c.not()).not(),
        _ => alloc(out, v),
    }
}

/// `Boolean::sha256_maj`: `(a and b) xor (a and c) xor (b and c)`.
fn maj(out: &mut Out, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Const(_), Const(_), Const(_)) => Const(v),
        (Const(false), b, c) => and(out, b, c),
        (a, Const(false), c) => and(out, a, c),
        (a, b, Const(false)) => and(out, a, b),
        (a, b, Const(true)) => and(out, a.not(), b.not()).not(),
        (a, Const(true), c) => and(out, a.not(), c.not()).not(),
        (Const(true), b, c) => and(out, b.not(), c.not()).not(),
        _ => {
            let m = alloc(out, v);
            and(out, b, c);
            m
        }
    }
}

/// bellpepper's `UInt32`: bits least significant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word([Bit; 32]);

impl Word {
    fn constant(v: u32) -> Word {
        Word(std::array::from_fn(|i| Const((v >> i) & 1 == 1)))
    }

    /// Allocated bits (a previous compression's output).
    fn var(v: u32) -> Word {
        Word(std::array::from_fn(|i| Var {
            val: (v >> i) & 1 == 1,
            neg: false,
        }))
    }

    fn value(&self) -> u32 {
        (0..32).fold(0, |acc, i| acc | (u32::from(self.0[i].value()) << i))
    }

    fn from_bits_be(bits: &[Bit]) -> Word {
        Word(std::array::from_fn(|i| bits[31 - i]))
    }

    fn rotr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| self.0[(i + by) % 32]))
    }

    fn shr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| {
            self.0.get(i + by).copied().unwrap_or(Const(false))
        }))
    }

    fn xor(&self, out: &mut Out, other: &Word) -> Word {
        // `from_fn` runs in index order: allocations stay in bit order.
        Word(std::array::from_fn(|i| xor(out, self.0[i], other.0[i])))
    }

    fn triop(
        out: &mut Out,
        a: &Word,
        b: &Word,
        c: &Word,
        f: fn(&mut Out, Bit, Bit, Bit) -> Bit,
    ) -> Word {
        Word(std::array::from_fn(|i| f(out, a.0[i], b.0[i], c.0[i])))
    }

    /// `UInt32::addmany`: the sum's bits, carries included, are allocated
    /// unless every operand is constant.
    fn addmany(out: &mut Out, ops: &[Word]) -> Word {
        let sum: u64 = ops.iter().map(|w| u64::from(w.value())).sum();
        if ops.iter().all(|w| w.0.iter().all(|b| b.is_const())) {
            return Word::constant(sum as u32);
        }
        let mut max = ops.len() as u64 * u64::from(u32::MAX);
        let mut r = [Const(false); 32];
        let mut i = 0;
        while max != 0 {
            let b = alloc(out, (sum >> i) & 1 == 1);
            if i < 32 {
                r[i] = b;
            }
            max >>= 1;
            i += 1;
        }
        Word(r)
    }
}

/// The gadget's deferred additions.
enum Maybe {
    Deferred(Vec<Word>),
    Concrete(Word),
}

impl Maybe {
    fn compute(self, out: &mut Out, others: &[Word]) -> Word {
        match self {
            // As the gadget: a concrete value ignores `others`.
            Maybe::Concrete(w) => w,
            Maybe::Deferred(mut v) => {
                v.extend_from_slice(others);
                Word::addmany(out, &v)
            }
        }
    }
}

/// `sha256_compression_function`'s allocations for one 512-bit block.
fn compress(out: &mut Out, input: &[Bit], cv: &[Word; 8]) -> [Word; 8] {
    let mut w: Vec<Word> = input.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(out, &w[i - 15].rotr(18));
        let s0 = s0.xor(out, &w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(out, &w[i - 2].rotr(19));
        let s1 = s1.xor(out, &w[i - 2].shr(10));
        let wi = Word::addmany(out, &[w[i - 16], s0, w[i - 7], s1]);
        w.push(wi);
    }
    let mut a = Maybe::Concrete(cv[0]);
    let (mut b, mut c, mut d) = (cv[1], cv[2], cv[3]);
    let mut e = Maybe::Concrete(cv[4]);
    let (mut f, mut g, mut h) = (cv[5], cv[6], cv[7]);
    for i in 0..64 {
        let new_e = e.compute(out, &[]);
        let s1 = new_e.rotr(6).xor(out, &new_e.rotr(11));
        let s1 = s1.xor(out, &new_e.rotr(25));
        let ch = Word::triop(out, &new_e, &f, &g, ch);
        let temp1 = [h, s1, ch, Word::constant(K[i]), w[i]];
        let new_a = a.compute(out, &[]);
        let s0 = new_a.rotr(2).xor(out, &new_a.rotr(13));
        let s0 = s0.xor(out, &new_a.rotr(22));
        let maj = Word::triop(out, &new_a, &b, &c, maj);
        h = g;
        g = f;
        f = new_e;
        e = Maybe::Deferred(temp1.iter().copied().chain([d]).collect());
        d = c;
        c = b;
        b = new_a;
        a = Maybe::Deferred(temp1.iter().copied().chain([s0, maj]).collect());
    }
    [
        a.compute(out, &[cv[0]]),
        Word::addmany(out, &[cv[1], b]),
        Word::addmany(out, &[cv[2], c]),
        Word::addmany(out, &[cv[3], d]),
        e.compute(out, &[cv[4]]),
        Word::addmany(out, &[cv[5], f]),
        Word::addmany(out, &[cv[6], g]),
        Word::addmany(out, &[cv[7], h]),
    ]
}

/// SHA-256's compression function on machine words (the chaining values).
fn compress_native(state: &mut [u32; 8], block: &[u8]) {
    let mut w = [0u32; 64];
    for (i, c) in block.chunks(4).enumerate() {
        w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    }
    for i in 16..64 {
        let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
        let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16]
            .wrapping_add(s0)
            .wrapping_add(w[i - 7])
            .wrapping_add(s1);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for i in 0..64 {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(K[i])
            .wrapping_add(w[i]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
    }
}

/// The message padded as the gadget pads it: message bits allocated, the
/// padding constant.
fn padded_bits(message: &[u8]) -> Vec<Bit> {
    let mut bits: Vec<Bit> = multipack::bytes_to_bits(message)
        .into_iter()
        .map(|v| Var { val: v, neg: false })
        .collect();
    let len = bits.len() as u64;
    bits.push(Const(true));
    while !(bits.len() + 64).is_multiple_of(512) {
        bits.push(Const(false));
    }
    bits.extend((0..64).rev().map(|i| Const((len >> i) & 1 == 1)));
    bits
}

/// The padded message as bytes, for the native chaining values.
fn padded_bytes(message: &[u8]) -> Vec<u8> {
    let mut bytes = message.to_vec();
    bytes.push(0x80);
    while !(bytes.len() + 8).is_multiple_of(64) {
        bytes.push(0);
    }
    bytes.extend_from_slice(&(8 * message.len() as u64).to_be_bytes());
    bytes
}

/// One piece of the circuit, in allocation order.
#[derive(Clone, Debug)]
pub(crate) enum Piece<'a> {
    /// Message bits, allocated.
    Message(&'a [bool]),
    /// One block's compression: its 512 padded bits, and the chaining
    /// value it starts from (`None`: the initial value, constant).
    Block {
        bits: &'a [Bit],
        cv: Option<[u32; 8]>,
    },
    /// The digest packed into public inputs.
    Digest([u32; 8]),
}

/// What the pieces of one message's circuit are cut from.
pub(crate) struct Plan {
    message_bits: Vec<bool>,
    padded: Vec<Bit>,
    /// Chaining value before each block, then the digest.
    chain: Vec<[u32; 8]>,
}

impl Plan {
    pub(crate) fn new(message: &[u8]) -> Plan {
        let mut chain = vec![IV];
        let mut state = IV;
        for block in padded_bytes(message).chunks(64) {
            compress_native(&mut state, block);
            chain.push(state);
        }
        Plan {
            message_bits: multipack::bytes_to_bits(message),
            padded: padded_bits(message),
            chain,
        }
    }

    /// The pieces in allocation order.
    pub(crate) fn pieces(&self) -> Vec<Piece<'_>> {
        let blocks = self
            .padded
            .chunks(512)
            .enumerate()
            .map(|(i, bits)| Piece::Block {
                bits,
                cv: (i > 0).then_some(self.chain[i]),
            });
        self.message_bits
            .chunks(MESSAGE_PIECE_BITS)
            .map(Piece::Message)
            .chain(blocks)
            .chain([Piece::Digest(self.chain[self.chain.len() - 1])])
            .collect()
    }
}

fn scalar(b: bool) -> Scalar {
    if b { Scalar::ONE } else { Scalar::ZERO }
}

/// Allocates `bits` as aux values in one step.
fn alloc_bits<CS: ConstraintSystem<Scalar>>(cs: &mut CS, bits: &[bool]) {
    for (s, &b) in cs.allocate_empty_aux(bits.len()).iter_mut().zip(bits) {
        *s = scalar(b);
    }
}

/// Synthesizes `piece` with the word model: allocations only, so `cs` must
/// be a witness generator (`allocate_empty_aux`).
///
/// # Errors
/// Whatever `cs` returns for an input.
pub(crate) fn synthesize_witness<CS: ConstraintSystem<Scalar>>(
    piece: &Piece<'_>,
    cs: &mut CS,
    out: &mut Out,
) -> Result<(), SynthesisError> {
    match piece {
        Piece::Message(bits) => alloc_bits(cs, bits),
        Piece::Block { bits, cv } => {
            // A later block starts from the sums the previous block
            // allocated: every block but the last holds message bits, so
            // those sums are never constant.
            let cv = cv.map_or(IV.map(Word::constant), |cv| cv.map(Word::var));
            out.clear();
            compress(out, bits, &cv);
            alloc_bits(cs, out);
        }
        Piece::Digest(digest) => {
            let bits: Vec<bool> = digest
                .iter()
                .flat_map(|w| (0..32).rev().map(move |i| (w >> i) & 1 == 1))
                .collect();
            for (i, v) in multipack::compute_multipacking::<Scalar>(&bits)
                .into_iter()
                .enumerate()
            {
                cs.alloc_input(|| format!("input {i}"), || Ok(v))?;
            }
        }
    }
    Ok(())
}

/// Synthesizes `piece` with bellpepper's gadgets, allocating what earlier
/// pieces allocate (message bits, chaining values) as carried variables:
/// `sha256-gadget`'s witness on several threads, and the reference the
/// word model is checked against, piece by piece.
///
/// # Errors
/// A gadget's error.
pub(crate) fn synthesize_gadget(
    piece: &Piece<'_>,
    cs: &mut zkpipe_core::r1cs::WitnessCs,
) -> Result<(), SynthesisError> {
    use bellpepper::gadgets::sha256::sha256_compression_function;
    use bellpepper::gadgets::uint32::UInt32;
    use bellpepper_core::boolean::{AllocatedBit, Boolean};
    use zkpipe_core::r1cs::WitnessCs;
    let carried_u32 = |cs: &mut WitnessCs, v: &[u32; 8]| -> Result<Vec<UInt32>, SynthesisError> {
        cs.carried(|cs| {
            v.iter()
                .enumerate()
                .map(|(i, &v)| UInt32::alloc(cs.namespace(|| format!("cv {i}")), Some(v)))
                .collect()
        })
    };
    match piece {
        Piece::Message(bits) => {
            for (i, &b) in bits.iter().enumerate() {
                AllocatedBit::alloc(cs.namespace(|| format!("message bit {i}")), Some(b))?;
            }
        }
        Piece::Block { bits, cv } => {
            let input = cs.carried(|cs| {
                bits.iter()
                    .enumerate()
                    .map(|(i, b)| match *b {
                        Const(c) => Ok(Boolean::Constant(c)),
                        Var { val, neg } => {
                            let a = AllocatedBit::alloc(
                                cs.namespace(|| format!("bit {i}")),
                                Some(val),
                            )?;
                            Ok(if neg {
                                Boolean::Is(a).not()
                            } else {
                                Boolean::Is(a)
                            })
                        }
                    })
                    .collect::<Result<Vec<_>, SynthesisError>>()
            })?;
            let cv = match cv {
                Some(cv) => carried_u32(cs, cv)?,
                None => IV.iter().map(|&v| UInt32::constant(v)).collect(),
            };
            sha256_compression_function(cs.namespace(|| "block"), &input, &cv)?;
        }
        Piece::Digest(digest) => {
            let words = carried_u32(cs, digest)?;
            let bits: Vec<Boolean> = words.into_iter().flat_map(|w| w.into_bits_be()).collect();
            multipack::pack_into_inputs(cs.namespace(|| "digest"), &bits)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BenchCircuit, BuiltinCircuit, Shape};
    use sha2::{Digest, Sha256};
    use zkpipe_core::r1cs::circuit::CircuitSource;
    use zkpipe_core::r1cs::{R1cs, Witness, witness_in_pieces};

    /// The gadget's witness and R1CS (recording runs the gadget), against
    /// the word model sequentially, the word model in pieces and the gadget
    /// in pieces: all four witnesses must be equal, and satisfy the R1CS.
    fn check(message: Vec<u8>) -> R1cs {
        let c = BenchCircuit::Sha256 {
            message,
            gadget: false,
        };
        let (r1cs, gadget) = R1cs::record(c.clone()).unwrap();
        let BenchCircuit::Sha256 { message, .. } = &c else {
            unreachable!()
        };
        let len = message.len();
        let plan = Plan::new(message);
        let model = Witness::generate(c.clone()).unwrap();
        assert_eq!(model, gadget, "word model, {len} bytes");
        let model_pieces = witness_in_pieces(plan.pieces(), |p, cs| {
            synthesize_witness(&p, cs, &mut Vec::new())
        })
        .unwrap();
        assert_eq!(model_pieces, gadget, "word model in pieces, {len} bytes");
        let gadget_pieces =
            witness_in_pieces(plan.pieces(), |p, cs| synthesize_gadget(&p, cs)).unwrap();
        assert_eq!(gadget_pieces, gadget, "gadget in pieces, {len} bytes");
        assert_eq!(r1cs.first_unsatisfied(&model).unwrap(), None);
        if let Some(i) = model.aux.len().checked_sub(1) {
            let mut bad = model;
            let i = i.min(len * 8 + 100);
            bad.aux[i] = bad.aux[i].add(&zkpipe_core::types::Fr::one());
            assert!(r1cs.first_unsatisfied(&bad).unwrap().is_some());
        }
        r1cs
    }

    #[test]
    fn word_model_witness_is_the_gadgets() {
        for (blocks, seeds) in [(1, [0, 7]), (2, [3, 4]), (3, [11, 12]), (5, [1, 2])] {
            let record = |seed| match BenchCircuit::from_shape(
                Shape::Sha256 {
                    blocks,
                    gadget: false,
                },
                seed,
            ) {
                BenchCircuit::Sha256 { message, .. } => check(message),
                _ => unreachable!(),
            };
            // The shape never depends on the message.
            assert_eq!(record(seeds[0]), record(seeds[1]), "{blocks} blocks");
        }
    }

    #[test]
    fn word_model_follows_the_gadgets_constants() {
        // Constant-heavy last blocks, a block of padding only, and a
        // message long enough that the model may not index past it.
        for len in [0usize, 1, 13, 20, 55, 56, 63, 64, 100, 119, 120, 200] {
            let m: Vec<u8> = (0..len).map(|i| (i * 37 + 5) as u8).collect();
            check(m);
        }
    }

    #[test]
    fn source_witness_is_the_same_on_any_pool() {
        let c = BuiltinCircuit::new("sha256", "3").unwrap();
        let (_, gadget) = R1cs::record(c.build(9)).unwrap();
        let through_gadget = BuiltinCircuit::new("sha256-gadget", "3").unwrap();
        assert_eq!(through_gadget.witness(9).unwrap(), gadget, "sha256-gadget");
        assert_eq!(through_gadget.record().unwrap(), c.record().unwrap());
        for threads in [1, 2, 3, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(
                pool.install(|| through_gadget.witness(9)).unwrap(),
                gadget,
                "sha256-gadget, {threads} threads"
            );
            // Twice: the second reserves what the first allocated.
            for _ in 0..2 {
                assert_eq!(
                    pool.install(|| c.witness(9)).unwrap(),
                    gadget,
                    "{threads} threads"
                );
            }
        }
    }

    #[test]
    fn native_chain_is_sha256() {
        for len in [0usize, 3, 55, 56, 64, 119, 1000] {
            let m: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let plan = Plan::new(&m);
            let want: [u8; 32] = Sha256::digest(&m).into();
            let got: Vec<u8> = plan
                .chain
                .last()
                .unwrap()
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            assert_eq!(got, want, "length {len}");
            assert_eq!(plan.padded.len(), padded_bytes(&m).len() * 8);
        }
    }
}
