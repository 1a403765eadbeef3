//! The compact witness: 0/1 assignments as bits, the rest as (index, value).
//!
//! Real StackedDrg witnesses are ~51 % zeros, ~46 % ones and ~3 % other
//! values (measured on 2 KiB / 8 MiB / 512 MiB aux assignments), so a
//! 32 GiB partition's 130.2 M aux scalars (4.2 GB as full field elements)
//! fit in 16 MB of bits plus a few million (index, value) pairs: what
//! crosses PCIe and what a partition in flight holds on the host.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// A witness vector (aux or inputs) in compact form: bit `i` is variable
/// `i`'s value when that value is 0 or 1; every other value is listed in
/// `full_index` / `full_value` (ascending index; its bit is 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactWitness {
    len: usize,
    bits: Vec<u64>,
    full_index: Vec<u32>,
    full_value: Vec<Scalar>,
}

impl CompactWitness {
    /// An empty witness.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of variables.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no variable.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value bits, 64 variables per word, least significant first.
    pub fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// Indices of the values other than 0 and 1, ascending.
    pub fn full_index(&self) -> &[u32] {
        &self.full_index
    }

    /// The values other than 0 and 1, in `full_index` order.
    pub fn full_value(&self) -> &[Scalar] {
        &self.full_value
    }

    /// Bytes held: the bits, the indices and the full values (what a copy
    /// to the device moves).
    pub fn bytes(&self) -> usize {
        8 * self.bits.len() + 4 * self.full_index.len() + 32 * self.full_value.len()
    }

    /// Appends a variable whose value is 0 (`false`) or 1 (`true`).
    #[inline]
    pub fn push_bit(&mut self, bit: bool) {
        let (word, shift) = (self.len / 64, self.len % 64);
        if shift == 0 {
            self.bits.push(0);
        }
        if bit {
            self.bits[word] |= 1 << shift;
        }
        self.len += 1;
    }

    /// Appends a variable of any value. Panics past 2^32 variables (the
    /// index width; a 32 GiB partition has 130.2 M).
    #[inline]
    pub fn push(&mut self, value: &Scalar) {
        if *value == Scalar::ZERO {
            self.push_bit(false);
        } else if *value == Scalar::ONE {
            self.push_bit(true);
        } else {
            let index = u32::try_from(self.len).expect("a compact witness holds at most 2^32 variables");
            self.full_index.push(index);
            self.full_value.push(*value);
            self.push_bit(false);
        }
    }

    /// The compact form of `values`.
    pub fn from_scalars(values: &[Scalar]) -> Self {
        let mut w = Self::new();
        w.bits.reserve(values.len().div_ceil(64));
        for v in values {
            w.push(v);
        }
        w
    }

    /// Appends `other` after this witness's variables (its indices moved
    /// by `self.len()`; bits shifted into place when `self.len()` is not a
    /// multiple of 64).
    pub fn append(&mut self, other: &CompactWitness) {
        let base = self.len;
        let shift = base % 64;
        if shift == 0 {
            self.bits.extend_from_slice(&other.bits);
        } else {
            for &word in &other.bits {
                let last = self.bits.len() - 1;
                self.bits[last] |= word << shift;
                self.bits.push(word >> (64 - shift));
            }
        }
        self.len += other.len;
        self.bits.truncate(self.len.div_ceil(64));
        let base = u32::try_from(base).expect("a compact witness holds at most 2^32 variables");
        self.full_index.extend(other.full_index.iter().map(|&i| i + base));
        self.full_value.extend_from_slice(&other.full_value);
    }

    /// Room for `len` more variables, `full` of them listed in full, so
    /// appends do not grow the vectors (a doubling `Vec` would hold up to
    /// twice the witness while parts are joined).
    pub fn reserve(&mut self, len: usize, full: usize) {
        self.bits.reserve((self.len + len).div_ceil(64) + 1 - self.bits.len());
        self.full_index.reserve(full);
        self.full_value.reserve(full);
    }

    /// How many values are listed in full (neither 0 nor 1).
    pub fn full_count(&self) -> usize {
        self.full_value.len()
    }

    /// Value of variable `i` (`None` past the end).
    pub fn get(&self, i: usize) -> Option<Scalar> {
        if i >= self.len {
            return None;
        }
        if let Ok(k) = self.full_index.binary_search(&(i as u32)) {
            return Some(self.full_value[k]);
        }
        Some(if (self.bits[i / 64] >> (i % 64)) & 1 == 1 { Scalar::ONE } else { Scalar::ZERO })
    }

    /// The full vector (on every core).
    pub fn expand(&self) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::with_capacity(self.len);
        out.par_extend((0..self.len).into_par_iter().map(|i| {
            if (self.bits[i / 64] >> (i % 64)) & 1 == 1 {
                Scalar::ONE
            } else {
                Scalar::ZERO
            }
        }));
        for (&i, v) in self.full_index.iter().zip(&self.full_value) {
            out[i as usize] = *v;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of every kind: 0, 1, r-1, 2, a large one.
    fn values(n: usize) -> Vec<Scalar> {
        (0..n as u64)
            .map(|i| match i % 7 {
                0 | 3 => Scalar::ZERO,
                1 | 4 | 6 => Scalar::ONE,
                2 => -Scalar::ONE,
                _ => Scalar::from(i + 2).square(),
            })
            .collect()
    }

    #[test]
    fn round_trips_every_kind_of_value() {
        for n in [0, 1, 63, 64, 65, 1000] {
            let v = values(n);
            let w = CompactWitness::from_scalars(&v);
            assert_eq!(w.len(), n);
            assert_eq!(w.expand(), v, "n = {n}");
            assert!((0..n).all(|i| w.get(i) == Some(v[i])));
            assert_eq!(w.get(n), None);
            assert_eq!(w.full_index().len(), v.iter().filter(|x| **x != Scalar::ZERO && **x != Scalar::ONE).count());
        }
    }

    #[test]
    fn append_equals_one_vector_at_any_offset() {
        for (a, b) in [(0, 5), (1, 64), (63, 2), (64, 64), (65, 130), (100, 0), (127, 1)] {
            let (va, vb) = (values(a), values(b + 3)[3..].to_vec());
            let mut joined = CompactWitness::from_scalars(&va);
            joined.append(&CompactWitness::from_scalars(&vb));
            let whole: Vec<Scalar> = va.iter().chain(&vb).copied().collect();
            assert_eq!(joined, CompactWitness::from_scalars(&whole), "{a} + {b}");
        }
    }

    #[test]
    fn reserve_makes_room_for_the_parts_appended() {
        for (a, parts) in [(0usize, vec![5usize, 64]), (63, vec![2, 130, 1]), (64, vec![64]), (1, vec![])] {
            let parts: Vec<CompactWitness> = parts.iter().map(|&n| CompactWitness::from_scalars(&values(n))).collect();
            let mut joined = CompactWitness::from_scalars(&values(a));
            joined.reserve(parts.iter().map(|p| p.len()).sum(), parts.iter().map(|p| p.full_count()).sum());
            let caps = (joined.bits.capacity(), joined.full_index.capacity(), joined.full_value.capacity());
            for p in &parts {
                joined.append(p);
            }
            let after = (joined.bits.capacity(), joined.full_index.capacity(), joined.full_value.capacity());
            assert_eq!(caps, after, "{a} + {} parts: no growth while appending", parts.len());
        }
    }

    #[test]
    fn bytes_count_bits_indices_and_values() {
        let w = CompactWitness::from_scalars(&values(70));
        assert_eq!(w.bytes(), 8 * 2 + 36 * w.full_index().len());
    }
}
