//! SHA-256 witness generation: the assignments bellperson's `sha256` gadget
//! allocates, in its order, computed on machine words.
//!
//! The gadget (bellperson 0.27 `gadgets::sha256`, over bellpepper-core's
//! `Boolean`) allocates one variable per non-constant bit of every XOR, `ch`
//! and `maj` (two for `maj`: the result, then `b AND c`) and the full-width
//! sum bits of every `UInt32::addmany` (33-36 bits, carries included), and
//! folds constants away bit by bit (IV, round constants, padding, the fill of
//! `shr`). It also builds a linear combination per addition, which is 68 % of
//! its time on a witness-only constraint system; here no linear combination
//! exists. Each bit carries what decides the gadget's allocations: whether it
//! is a constant, its value, and whether bellperson holds it as `Not(bit)`
//! (then the variable's value is the negation of the bit's).

use bellperson::gadgets::boolean::Boolean;
use bellperson::SynthesisError;
use blstrs::Scalar;
use ff::{Field, PrimeField};

/// Where allocated bit values go: the aux vector of a witness-only
/// constraint system.
pub(crate) trait BitSink {
    /// Appends one allocated variable holding `bit`.
    fn push_bit(&mut self, bit: bool);
    /// Appends one allocated variable holding any field element (the
    /// Poseidon replay's S-box values).
    fn push_value(&mut self, value: Scalar);
    /// Appends the low `n` bits of `bits`, least significant first.
    fn push_bits(&mut self, bits: u64, n: u32) {
        for i in 0..n {
            self.push_bit((bits >> i) & 1 == 1);
        }
    }
}

impl BitSink for Vec<Scalar> {
    #[inline]
    fn push_bit(&mut self, bit: bool) {
        self.push(if bit { Scalar::ONE } else { Scalar::ZERO });
    }
    #[inline]
    fn push_value(&mut self, value: Scalar) {
        self.push(value);
    }
}

/// 32 of bellperson's `Boolean`s (a `UInt32`, least significant bit first)
/// as masks: `val` the bits' values, `var` which bits are variables (the
/// rest are constants), `neg` which variables are held negated
/// (`Boolean::Not`; a subset of `var`). A variable's own value is
/// `val ^ neg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    val: u32,
    var: u32,
    neg: u32,
}

const ALL: u32 = u32::MAX;

impl Word {
    /// A constant word (`UInt32::constant`).
    pub(crate) const fn constant(val: u32) -> Self {
        Self { val, var: 0, neg: 0 }
    }

    fn is_constant(self) -> bool {
        self.var == 0
    }

    fn rotr(self, by: u32) -> Self {
        Self { val: self.val.rotate_right(by), var: self.var.rotate_right(by), neg: self.neg.rotate_right(by) }
    }

    /// `UInt32::shr`: the vacated high bits are constant zeros.
    fn shr(self, by: u32) -> Self {
        Self { val: self.val >> by, var: self.var >> by, neg: self.neg >> by }
    }

    fn bit(self, i: u32) -> Bit {
        Bit { val: (self.val >> i) & 1 == 1, var: (self.var >> i) & 1 == 1, neg: (self.neg >> i) & 1 == 1 }
    }

    fn set_bit(&mut self, i: u32, b: Bit) {
        let m = 1u32 << i;
        self.val = (self.val & !m) | if b.val { m } else { 0 };
        self.var = (self.var & !m) | if b.var { m } else { 0 };
        self.neg = (self.neg & !m) | if b.neg && b.var { m } else { 0 };
    }

    /// `UInt32::xor`, bit by bit as `Boolean::xor`.
    fn xor(self, other: Self, sink: &mut impl BitSink) -> Self {
        if self.var & other.var == ALL {
            // Every bit allocates `u_a ^ u_b` (the variables' own values);
            // the result is negated where exactly one operand was.
            sink.push_bits(u64::from(self.val ^ self.neg ^ other.val ^ other.neg), 32);
            return Self { val: self.val ^ other.val, var: ALL, neg: self.neg ^ other.neg };
        }
        self.bitwise(other, sink, |a, b, sink| a.xor(b, sink))
    }

    fn bitwise(self, other: Self, sink: &mut impl BitSink, f: impl Fn(Bit, Bit, &mut dyn FnMut(bool)) -> Bit) -> Self {
        let mut out = Self::constant(0);
        let mut push = |b: bool| sink.push_bit(b);
        for i in 0..32 {
            out.set_bit(i, f(self.bit(i), other.bit(i), &mut push));
        }
        out
    }

    /// `UInt32::sha256_ch(e, f, g)`.
    fn ch(e: Self, f: Self, g: Self, sink: &mut impl BitSink) -> Self {
        if e.var & f.var & g.var == ALL {
            sink.push_bits(u64::from((e.val & f.val) ^ (!e.val & g.val)), 32);
            return Self { val: (e.val & f.val) ^ (!e.val & g.val), var: ALL, neg: 0 };
        }
        let mut out = Self::constant(0);
        let mut push = |b: bool| sink.push_bit(b);
        for i in 0..32 {
            out.set_bit(i, Bit::ch(e.bit(i), f.bit(i), g.bit(i), &mut push));
        }
        out
    }

    /// `UInt32::sha256_maj(a, b, c)`.
    fn maj(a: Self, b: Self, c: Self, sink: &mut impl BitSink) -> Self {
        let maj = (a.val & b.val) ^ (a.val & c.val) ^ (b.val & c.val);
        if a.var & b.var & c.var == ALL {
            // Per bit: the result, then `b AND c`.
            let bc = b.val & c.val;
            for i in 0..32 {
                sink.push_bit((maj >> i) & 1 == 1);
                sink.push_bit((bc >> i) & 1 == 1);
            }
            return Self { val: maj, var: ALL, neg: 0 };
        }
        let mut out = Self::constant(0);
        let mut push = |b: bool| sink.push_bit(b);
        for i in 0..32 {
            out.set_bit(i, Bit::maj(a.bit(i), b.bit(i), c.bit(i), &mut push));
        }
        out
    }

    /// `UInt32::addmany`: a constant when every bit of every operand is one;
    /// otherwise the sum's bits are allocated at full width
    /// (`bitlen(n · (2^32 - 1))` of them, carries included) and the low 32
    /// are the result.
    fn addmany(operands: &[Self], sink: &mut impl BitSink) -> Self {
        debug_assert!((2..=10).contains(&operands.len()));
        let sum: u64 = operands.iter().map(|w| u64::from(w.val)).sum();
        if operands.iter().all(|w| w.is_constant()) {
            return Self::constant(sum as u32);
        }
        let max = operands.len() as u64 * u64::from(u32::MAX);
        sink.push_bits(sum, 64 - max.leading_zeros());
        Self { val: sum as u32, var: ALL, neg: 0 }
    }
}

/// One `Boolean`: constant or variable, its value, and for a variable
/// whether it is held negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bit {
    val: bool,
    var: bool,
    neg: bool,
}

impl Bit {
    const fn constant(val: bool) -> Self {
        Self { val, var: false, neg: false }
    }

    /// A freshly allocated bit (`Boolean::Is`).
    fn alloc(val: bool, push: &mut dyn FnMut(bool)) -> Self {
        push(val);
        Self { val, var: true, neg: false }
    }

    fn is(self, val: bool) -> bool {
        !self.var && self.val == val
    }

    fn not(self) -> Self {
        Self { val: !self.val, var: self.var, neg: self.var && !self.neg }
    }

    /// `Boolean::xor`.
    fn xor(self, other: Self, push: &mut dyn FnMut(bool)) -> Self {
        match (self.var, other.var) {
            (false, _) => {
                if self.val {
                    other.not()
                } else {
                    other
                }
            }
            (_, false) => {
                if other.val {
                    self.not()
                } else {
                    self
                }
            }
            // `AllocatedBit::xor` of the underlying variables, negated where
            // exactly one operand is `Not`.
            (true, true) => {
                let own = (self.val ^ self.neg) ^ (other.val ^ other.neg);
                push(own);
                Self { val: self.val ^ other.val, var: true, neg: self.neg ^ other.neg }
            }
        }
    }

    /// `Boolean::and`: `and`, `and_not` or `nor` of the underlying variables,
    /// each allocating the value of the AND.
    fn and(self, other: Self, push: &mut dyn FnMut(bool)) -> Self {
        if self.is(false) || other.is(false) {
            return Self::constant(false);
        }
        if self.is(true) {
            return other;
        }
        if other.is(true) {
            return self;
        }
        Self::alloc(self.val & other.val, push)
    }

    /// `Boolean::sha256_ch`, its cases in its order.
    fn ch(a: Self, b: Self, c: Self, push: &mut dyn FnMut(bool)) -> Self {
        let value = (a.val & b.val) ^ (!a.val & c.val);
        if !a.var && !b.var && !c.var {
            return Self::constant(value);
        }
        if a.is(false) {
            return c;
        }
        if b.is(false) {
            return a.not().and(c, push);
        }
        if c.is(false) {
            return a.and(b, push);
        }
        if c.is(true) {
            return a.and(b.not(), push).not();
        }
        if b.is(true) {
            return a.not().and(c.not(), push).not();
        }
        // `a` constant true, or all three variables.
        Self::alloc(value, push)
    }

    /// `Boolean::sha256_maj`, its cases in its order.
    fn maj(a: Self, b: Self, c: Self, push: &mut dyn FnMut(bool)) -> Self {
        let value = (a.val & b.val) ^ (a.val & c.val) ^ (b.val & c.val);
        if !a.var && !b.var && !c.var {
            return Self::constant(value);
        }
        if a.is(false) {
            return b.and(c, push);
        }
        if b.is(false) {
            return a.and(c, push);
        }
        if c.is(false) {
            return a.and(b, push);
        }
        if c.is(true) {
            return a.not().and(b.not(), push).not();
        }
        if b.is(true) {
            return a.not().and(c.not(), push).not();
        }
        if a.is(true) {
            return b.not().and(c.not(), push).not();
        }
        // All three variables: the result, then `b AND c`.
        let out = Self::alloc(value, push);
        b.and(c, push);
        out
    }
}

/// A bellperson `Boolean` as a [`Bit`]; `AssignmentMissing` for a variable
/// without a value (a blank circuit has no witness to compute).
fn bit_of(b: &Boolean) -> Result<Bit, SynthesisError> {
    Ok(match b {
        Boolean::Constant(v) => Bit::constant(*v),
        Boolean::Is(x) => {
            let v = x.get_value().ok_or(SynthesisError::AssignmentMissing)?;
            Bit { val: v, var: true, neg: false }
        }
        Boolean::Not(x) => {
            let v = x.get_value().ok_or(SynthesisError::AssignmentMissing)?;
            Bit { val: !v, var: true, neg: true }
        }
    })
}

/// `UInt32::from_bits_be` of 32 bits (most significant first).
fn word_be(bits: &[Bit]) -> Word {
    let mut w = Word::constant(0);
    for (k, b) in bits.iter().enumerate() {
        w.set_bit(31 - k as u32, *b);
    }
    w
}

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// A sum the gadget defers (`Maybe::Deferred`): its operands, added (and
/// allocated) only when the word is read.
enum Deferred {
    Concrete(Word),
    Sum(Vec<Word>),
}

impl Deferred {
    fn compute(self, more: &[Word], sink: &mut impl BitSink) -> Word {
        match self {
            Self::Concrete(w) => w,
            Self::Sum(mut v) => {
                v.extend_from_slice(more);
                Word::addmany(&v, sink)
            }
        }
    }
}

/// `sha256_compression_function`: one 512-bit block on the state `cur`.
fn compress(block: &[Word; 16], cur: &[Word; 8], sink: &mut impl BitSink) -> [Word; 8] {
    let mut w = [Word::constant(0); 64];
    w[..16].copy_from_slice(block);
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(w[i - 15].rotr(18), sink).xor(w[i - 15].shr(3), sink);
        let s1 = w[i - 2].rotr(17).xor(w[i - 2].rotr(19), sink).xor(w[i - 2].shr(10), sink);
        w[i] = Word::addmany(&[w[i - 16], s0, w[i - 7], s1], sink);
    }

    let mut a = Deferred::Concrete(cur[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *cur;
    let mut e = Deferred::Concrete(cur[4]);
    for i in 0..64 {
        let new_e = e.compute(&[], sink);
        let s1 = new_e.rotr(6).xor(new_e.rotr(11), sink).xor(new_e.rotr(25), sink);
        let ch = Word::ch(new_e, f, g, sink);
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), w[i]];

        let new_a = a.compute(&[], sink);
        let s0 = new_a.rotr(2).xor(new_a.rotr(13), sink).xor(new_a.rotr(22), sink);
        let maj = Word::maj(new_a, b, c, sink);

        h = g;
        g = f;
        f = new_e;
        e = Deferred::Sum(temp1.iter().copied().chain([d]).collect());
        d = c;
        c = b;
        b = new_a;
        a = Deferred::Sum(temp1.iter().copied().chain([s0, maj]).collect());
    }

    [
        a.compute(&[cur[0]], sink),
        Word::addmany(&[cur[1], b], sink),
        Word::addmany(&[cur[2], c], sink),
        Word::addmany(&[cur[3], d], sink),
        e.compute(&[cur[4]], sink),
        Word::addmany(&[cur[5], f], sink),
        Word::addmany(&[cur[6], g], sink),
        Word::addmany(&[cur[7], h], sink),
    ]
}

/// The assignments of bellperson's `sha256(cs, input)` appended to `sink`,
/// in the gadget's order; returns the digest's 32 bytes (big-endian words,
/// the gadget's output bits in order, most significant first per byte).
pub(crate) fn sha256(input: &[Boolean], sink: &mut impl BitSink) -> Result<[u8; 32], SynthesisError> {
    assert!(input.len().is_multiple_of(8), "the gadget takes whole bytes");
    let mut bits = input.iter().map(bit_of).collect::<Result<Vec<_>, _>>()?;
    // Padding as the gadget appends it: constants.
    let len = bits.len() as u64;
    bits.push(Bit::constant(true));
    while !(bits.len() + 64).is_multiple_of(512) {
        bits.push(Bit::constant(false));
    }
    bits.extend((0..64).rev().map(|i| Bit::constant((len >> i) & 1 == 1)));

    let mut cur = IV.map(Word::constant);
    for block in bits.chunks_exact(512) {
        let words: [Word; 16] = std::array::from_fn(|j| word_be(&block[32 * j..32 * j + 32]));
        cur = compress(&words, &cur, sink);
    }
    let mut digest = [0u8; 32];
    for (j, w) in cur.iter().enumerate() {
        digest[4 * j..4 * j + 4].copy_from_slice(&w.val.to_be_bytes());
    }
    Ok(digest)
}

/// The field element filecoin's SHA-256 gadgets pack a digest into
/// (`multipack::pack_bits` of the digest's bits, each byte's bits reversed,
/// the first `Fr::CAPACITY` = 254 of them): the digest read as a
/// little-endian integer with its top two bits cleared.
pub(crate) fn packed_digest(mut digest: [u8; 32]) -> Scalar {
    digest[31] &= 0x3f;
    // 254 bits are always below the modulus.
    Scalar::from_repr_vartime(digest).unwrap_or(Scalar::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AssignmentCs;
    use bellperson::gadgets::boolean::AllocatedBit;
    use bellperson::gadgets::multipack;
    use bellperson::gadgets::sha256::sha256 as sha256_gadget;
    use bellperson::ConstraintSystem;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use sha2::Digest;

    /// Input bits of every kind the gadget meets: constants of both values,
    /// allocated bits, and negated allocated bits; `kinds` chooses the mix.
    fn input(cs: &mut AssignmentCs, rng: &mut ChaCha8Rng, bytes: usize, kinds: u8) -> Vec<Boolean> {
        (0..8 * bytes)
            .map(|i| {
                let v: bool = rng.gen();
                match (kinds, rng.gen_range(0..3)) {
                    (0, _) => Boolean::constant(v),
                    (1, _) | (2, 0) => {
                        Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("{i}")), Some(v)).unwrap())
                    }
                    (2, 1) => Boolean::constant(v),
                    _ => Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("{i}")), Some(v)).unwrap()).not(),
                }
            })
            .collect()
    }

    fn bytes_of(bits: &[Boolean]) -> Vec<u8> {
        bits.chunks(8).map(|c| c.iter().fold(0u8, |acc, b| (acc << 1) | u8::from(b.get_value().unwrap()))).collect()
    }

    /// The gadget and the native generator, from the same input bits, append
    /// the same assignments and give the same digest and packed value.
    #[test]
    fn native_sha256_allocates_what_the_gadget_allocates() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // 0..3 blocks with every padding case, the 64-byte Merkle node and
        // the 1,248-byte label preimage; all-constant, all-variable, mixed.
        for bytes in [0usize, 1, 3, 55, 56, 63, 64, 65, 119, 120, 128, 1248] {
            for kinds in 0..3u8 {
                let mut gadget = AssignmentCs::new();
                let bits = input(&mut gadget, &mut rng, bytes, kinds);
                let mut native = AssignmentCs { inputs: gadget.inputs.clone(), aux: gadget.aux.clone() };
                let start = gadget.aux.len();

                let out = sha256_gadget(gadget.namespace(|| "sha"), &bits).unwrap();
                let le: Vec<Boolean> = out.chunks(8).flat_map(|c| c.iter().rev()).take(254).cloned().collect();
                let packed = multipack::pack_bits(gadget.namespace(|| "pack"), &le).unwrap();

                let digest = sha256(&bits, &mut native.aux).unwrap();
                native.aux.push(packed_digest(digest));

                assert_eq!(digest.to_vec(), bytes_of(&out), "{bytes} bytes, kinds {kinds}: digest");
                assert_eq!(digest.to_vec(), sha2::Sha256::digest(bytes_of(&bits)).to_vec());
                assert_eq!(Some(packed_digest(digest)), packed.get_value());
                assert_eq!(native.aux.len(), gadget.aux.len(), "{bytes} bytes, kinds {kinds}: count");
                let first_diff = (start..gadget.aux.len()).find(|&i| native.aux[i] != gadget.aux[i]);
                assert_eq!(first_diff, None, "{bytes} bytes, kinds {kinds}: first differing assignment");
            }
        }
    }

    /// The word operations against the bit-by-bit rules on random masks
    /// (both paths exist: the word fast path for all-variable operands).
    #[test]
    fn word_fast_paths_equal_the_bit_rules() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let word = |rng: &mut ChaCha8Rng, var: u32| {
            let neg = rng.gen::<u32>() & var;
            Word { val: rng.gen(), var, neg }
        };
        for _ in 0..200 {
            let (x, y, z) = (word(&mut rng, ALL), word(&mut rng, ALL), word(&mut rng, ALL));
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            let r_fast = x.xor(y, &mut fast);
            let r_slow = x.bitwise(y, &mut slow, |a, b, p| a.xor(b, p));
            assert_eq!((r_fast, &fast), (r_slow, &slow));
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            let r_fast = Word::ch(x, y, z, &mut fast);
            let mut r_slow = Word::constant(0);
            let mut push = |b: bool| slow.push_bit(b);
            for i in 0..32 {
                r_slow.set_bit(i, Bit::ch(x.bit(i), y.bit(i), z.bit(i), &mut push));
            }
            assert_eq!((r_fast, &fast), (r_slow, &slow));
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            let r_fast = Word::maj(x, y, z, &mut fast);
            let mut r_slow = Word::constant(0);
            let mut push = |b: bool| slow.push_bit(b);
            for i in 0..32 {
                r_slow.set_bit(i, Bit::maj(x.bit(i), y.bit(i), z.bit(i), &mut push));
            }
            assert_eq!((r_fast, &fast), (r_slow, &slow));
        }
    }
}
