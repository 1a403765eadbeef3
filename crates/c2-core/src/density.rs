//! Density masks: which scalars of a query take part in an MSM.

/// A bit mask over the variables of one Groth16 query (A, B in G1, B in G2).
///
/// Bit `i` is set when variable `i` appears in at least one constraint of that
/// query. The parameter file stores bases only for set bits, in order, so an MSM
/// with a mask pairs the `k`-th *set* scalar with the `k`-th base. This matches
/// bellperson's `DensityTracker` bit for bit, including how masks of
/// separately synthesized sub-circuits are concatenated ([`Density::extend`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    set: usize,
}

impl Density {
    /// An empty mask.
    pub fn new() -> Self {
        Self::default()
    }

    /// A mask of `len` bits, all clear.
    pub fn with_len(len: usize) -> Self {
        Self { words: vec![0; len.div_ceil(64)], len, set: 0 }
    }

    /// A mask with all `len` bits set (a "full density" query).
    pub fn full(len: usize) -> Self {
        let mut d = Self::with_len(len);
        for i in 0..len {
            d.set(i);
        }
        d
    }

    /// Builds a mask from booleans.
    pub fn from_bools(bits: impl IntoIterator<Item = bool>) -> Self {
        let mut d = Self::new();
        for b in bits {
            d.push(b);
        }
        d
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the mask has no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits (the number of bases this query needs).
    pub fn count_ones(&self) -> usize {
        self.set
    }

    /// Appends one bit.
    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
        if bit {
            self.set(self.len - 1);
        }
    }

    /// Bit `i`; `false` beyond the end.
    pub fn get(&self, i: usize) -> bool {
        i < self.len && (self.words[i / 64] >> (i % 64)) & 1 == 1
    }

    /// Sets bit `i` (no-op when already set). Panics when `i >= len`, as
    /// bellperson's tracker does: synthesis only marks allocated variables.
    pub fn set(&mut self, i: usize) {
        assert!(i < self.len, "density index {i} out of range {}", self.len);
        let w = &mut self.words[i / 64];
        let m = 1u64 << (i % 64);
        if *w & m == 0 {
            *w |= m;
            self.set += 1;
        }
    }

    /// Iterates over the bits.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(move |i| self.get(i))
    }

    /// The packed words, least significant bit first (bit `i` is word `i/64`,
    /// bit `i%64`); the layout a GPU kernel reads.
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Concatenates `other` after `self`, like bellperson's
    /// `DensityTracker::extend`. For an input mask (`is_input == true`) the
    /// first bit of `other` belongs to the shared ONE input: it is merged into
    /// bit 0 of `self` instead of being appended.
    pub fn extend(&mut self, other: &Density, is_input: bool) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        let mut bits = other.iter();
        if is_input && bits.next() == Some(true) {
            self.set(0);
        }
        for b in bits {
            self.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_set_count() {
        let mut d = Density::new();
        for i in 0..130 {
            d.push(i % 3 == 0);
        }
        assert_eq!(d.len(), 130);
        assert_eq!(d.count_ones(), (0..130).filter(|i| i % 3 == 0).count());
        d.set(1);
        d.set(1);
        assert!(d.get(1));
        assert_eq!(d.count_ones(), 45);
        assert!(!d.get(500));
    }

    #[test]
    fn extend_merges_the_shared_one_input() {
        let mut a = Density::from_bools([false, true]);
        let b = Density::from_bools([true, false, true]);
        a.extend(&b, true);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![true, true, false, true]);
        assert_eq!(a.count_ones(), 3);

        let mut c = Density::from_bools([true]);
        c.extend(&Density::from_bools([true, true]), false);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![true, true, true]);
        assert_eq!(c.count_ones(), 3);
    }
}
