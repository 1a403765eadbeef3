//! `WitnessCs`: a constraint system that records what a Groth16 prover needs.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use c2_core::{CompactWitness, Density, Synthesized};
use ff::Field;

/// The constraint system behind [`synthesize`]: records assignments, A/B/C
/// evaluations and densities, and nothing else (no names, no constraint
/// matrices), like bellperson's `ProvingAssignment`.
#[derive(Debug, Default, PartialEq)]
pub struct WitnessCs {
    out: Synthesized,
}

impl WitnessCs {
    /// The recorded result.
    pub fn into_synthesized(self) -> Synthesized {
        self.out
    }
}

/// Evaluates `lc` at the current assignment and marks the variables it uses
/// with a non-zero coefficient in the given masks (bellperson's
/// `eval_with_trackers`: zero coefficients neither add nor mark).
fn eval_tracked(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            acc += if *coeff == Scalar::ONE { inputs[i] } else { inputs[i] * coeff };
            if let Some(d) = input_density.as_deref_mut() {
                d.set(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += if *coeff == Scalar::ONE { aux[i] } else { aux[i] * coeff };
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(i);
            }
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.out.aux_assignment.push(f()?);
        self.out.a_aux_density.push(false);
        self.out.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(self.out.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.out.input_assignment.push(f()?);
        self.out.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(self.out.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let o = &mut self.out;
        let (inputs, aux) = (&o.input_assignment, &o.aux_assignment);
        // Inputs are dense in A by construction (the `x · 0 = 0` constraints).
        let a_val = eval_tracked(&a, None, Some(&mut o.a_aux_density), inputs, aux);
        let b_val = eval_tracked(&b, Some(&mut o.b_input_density), Some(&mut o.b_aux_density), inputs, aux);
        // C has no query of its own (it is folded into L), so no density.
        let c_val = eval_tracked(&c, None, None, inputs, aux);
        o.a.push(a_val);
        o.b.push(b_val);
        o.c.push(c_val);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends a separately synthesized sub-system (which starts with its own
    /// ONE input), as bellperson's `ProvingAssignment::extend` does.
    fn extend(&mut self, other: &Self) {
        let (o, x) = (&mut self.out, &other.out);
        o.a_aux_density.extend(&x.a_aux_density, false);
        o.b_input_density.extend(&x.b_input_density, true);
        o.b_aux_density.extend(&x.b_aux_density, false);
        o.a.extend_from_slice(&x.a);
        o.b.extend_from_slice(&x.b);
        o.c.extend_from_slice(&x.c);
        o.input_assignment.extend_from_slice(x.input_assignment.get(1..).unwrap_or(&[]));
        o.aux_assignment.extend_from_slice(&x.aux_assignment);
    }
}

/// `ConstraintSystem` for a witness-only system: `$t` has an `inputs`
/// vector and `push_aux(value) -> index`; constraints are not evaluated
/// and names are not kept. `new` where `$t: Default`; `extend` where `$t`
/// has `append_part` (a sub-system synthesized on its own, which starts
/// with its own ONE input: FallbackPoSt's sector groups).
macro_rules! witness_only_constraint_system {
    ($t:ty $(, $new:ident)? $(; $append:ident)?) => {
        impl ConstraintSystem<Scalar> for $t {
            type Root = Self;

            $(fn $new() -> Self {
                Self::default()
            })?

            $(fn is_extensible() -> bool {
                true
            }

            fn extend(&mut self, other: &Self) {
                self.$append(other)
            })?

            fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
            where
                F: FnOnce() -> Result<Scalar, SynthesisError>,
                A: FnOnce() -> AR,
                AR: Into<String>,
            {
                let value = f()?;
                Ok(Variable::new_unchecked(Index::Aux(self.push_aux(value))))
            }

            fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
            where
                F: FnOnce() -> Result<Scalar, SynthesisError>,
                A: FnOnce() -> AR,
                AR: Into<String>,
            {
                self.inputs.push(f()?);
                Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
            }

            fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
            where
                A: FnOnce() -> AR,
                AR: Into<String>,
                LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
                LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
                LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
            {
            }

            fn push_namespace<NR, N>(&mut self, _: N)
            where
                NR: Into<String>,
                N: FnOnce() -> NR,
            {
            }

            fn pop_namespace(&mut self) {}

            fn get_root(&mut self) -> &mut Self::Root {
                self
            }
        }
    };
}

/// A constraint system that records only the assignments (inputs, aux):
/// constraints are not evaluated, so synthesis costs only the witness
/// computation. With the circuit's [`crate::ConstraintMatrices`], a, b, c
/// follow as A·z, B·z, C·z.
#[derive(Debug, Default, PartialEq)]
pub struct AssignmentCs {
    /// Public inputs, ONE first.
    pub inputs: Vec<Scalar>,
    /// Aux variables.
    pub aux: Vec<Scalar>,
}

impl AssignmentCs {
    fn push_aux(&mut self, value: Scalar) -> usize {
        self.aux.push(value);
        self.aux.len() - 1
    }

    /// Appends a sub-system's assignments, its ONE input left out.
    fn append_part(&mut self, other: &Self) {
        self.inputs.extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
    }
}

witness_only_constraint_system!(AssignmentCs, new; append_part);

/// A witness-only constraint system that writes its aux assignments into a
/// slice of known length: a challenge's place in its partition's aux
/// vector, so the challenges of a partition fill one vector concurrently
/// instead of growing their own and being copied together (4.2 GB per
/// 32 GiB partition: 4.7 s that way on the H200 host's 16 cores, against
/// ~0.5 s of witness computation). Inputs are few and kept in a vector.
pub(crate) struct SliceCs<'a> {
    /// Public inputs allocated (none of them ONE).
    pub(crate) inputs: Vec<Scalar>,
    aux: &'a mut [Scalar],
    len: usize,
    overflow: bool,
}

impl<'a> SliceCs<'a> {
    /// An empty system over `aux`.
    pub(crate) fn new(aux: &'a mut [Scalar]) -> Self {
        Self { inputs: Vec::new(), aux, len: 0, overflow: false }
    }

    /// Whether exactly the slice was filled: no more, no fewer allocations.
    pub(crate) fn filled(&self) -> bool {
        !self.overflow && self.len == self.aux.len()
    }

    /// Aux assignments written so far (or attempted, past the end).
    pub(crate) fn allocated(&self) -> usize {
        self.len
    }

    /// Writes the next aux value; past the end of the slice it is dropped
    /// and the overflow recorded ([`SliceCs::filled`] turns false).
    fn push_aux(&mut self, value: Scalar) -> usize {
        match self.aux.get_mut(self.len) {
            Some(slot) => *slot = value,
            None => self.overflow = true,
        }
        self.len += 1;
        self.len - 1
    }
}

impl crate::native::BitSink for SliceCs<'_> {
    #[inline]
    fn push_bit(&mut self, bit: bool) {
        self.push_aux(if bit { Scalar::ONE } else { Scalar::ZERO });
    }
    #[inline]
    fn push_value(&mut self, value: Scalar) {
        self.push_aux(value);
    }
}

witness_only_constraint_system!(SliceCs<'_>);

/// A witness-only constraint system that keeps the aux assignments in
/// compact form ([`CompactWitness`]: 0/1 as bits, other values listed):
/// what a challenge's native witness generation writes on the GPU path
/// (~30x fewer bytes than full scalars).
#[derive(Debug, Default)]
pub struct CompactCs {
    /// Public inputs, in allocation order.
    pub inputs: Vec<Scalar>,
    /// Aux assignments.
    pub aux: CompactWitness,
}

impl crate::native::BitSink for CompactCs {
    #[inline]
    fn push_bit(&mut self, bit: bool) {
        self.aux.push_bit(bit);
    }
    #[inline]
    fn push_value(&mut self, value: Scalar) {
        self.push_aux(value);
    }
}

impl CompactCs {
    fn push_aux(&mut self, value: Scalar) -> usize {
        self.aux.push(&value);
        self.aux.len() - 1
    }

    /// Appends a sub-system's assignments, its ONE input left out.
    fn append_part(&mut self, other: &Self) {
        self.inputs.extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        self.aux.append(&other.aux);
    }
}

witness_only_constraint_system!(CompactCs, new; append_part);

impl crate::native::BitSink for AssignmentCs {
    #[inline]
    fn push_bit(&mut self, bit: bool) {
        self.aux.push(if bit { Scalar::ONE } else { Scalar::ZERO });
    }
    #[inline]
    fn push_value(&mut self, value: Scalar) {
        self.push_aux(value);
    }
}

/// Synthesizes `circuit` the way bellperson's Groth16 prover does: allocate
/// the ONE input, run the circuit, then add `input_i · 0 = 0` for every input
/// (which makes the input part of the A query dense and binds the inputs).
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Synthesized, SynthesisError> {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.out.input_assignment.len() {
        cs.enforce(|| "input binding", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
    }
    Ok(cs.into_synthesized())
}

/// Runs `circuit` on the witness-only system `cs` after allocating the ONE
/// input: the (inputs, aux) that [`synthesize`] records, ONE first.
pub(crate) fn witness_of<C: Circuit<Scalar>, CS: ConstraintSystem<Scalar>>(
    circuit: C,
    mut cs: CS,
) -> Result<CS, SynthesisError> {
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(cs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x · y = z with z public, plus a term with a zero coefficient.
    struct Mul {
        x: u64,
        y: u64,
    }

    impl Circuit<Scalar> for Mul {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(self.x)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(self.y)))?;
            let z = cs.alloc_input(|| "z", || Ok(Scalar::from(self.x * self.y)))?;
            // The zero coefficient on y in A must neither add nor mark A's density.
            cs.enforce(|| "mul", |lc| lc + x + (Scalar::ZERO, y), |lc| lc + y, |lc| lc + z);
            Ok(())
        }
    }

    #[test]
    fn records_what_bellpersons_prover_records() {
        let s = synthesize(Mul { x: 3, y: 4 }).unwrap();
        let f = |v: u64| Scalar::from(v);
        assert_eq!(s.input_assignment, vec![f(1), f(12)]);
        assert_eq!(s.aux_assignment, vec![f(3), f(4)]);
        // One circuit constraint, then `input · 0 = 0` for ONE and z.
        assert_eq!(s.a, vec![f(3), f(1), f(12)]);
        assert_eq!(s.b, vec![f(4), f(0), f(0)]);
        assert_eq!(s.c, vec![f(12), f(0), f(0)]);
        assert_eq!(s.a_aux_density.iter().collect::<Vec<_>>(), vec![true, false]);
        assert_eq!(s.b_aux_density.iter().collect::<Vec<_>>(), vec![false, true]);
        assert_eq!(s.b_input_density.iter().collect::<Vec<_>>(), vec![false, false]);
        assert_eq!(s.num_constraints(), 3);
    }

    #[test]
    fn extend_equals_sequential_synthesis() {
        // Two sub-systems synthesized apart and joined give the same record
        // as one run (the basis for parallel synthesis inside a partition).
        let mut whole = WitnessCs::new();
        whole.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        Mul { x: 3, y: 4 }.synthesize(&mut whole).unwrap();
        Mul { x: 5, y: 6 }.synthesize(&mut whole).unwrap();

        let mut joined = WitnessCs::new();
        joined.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        for (x, y) in [(3, 4), (5, 6)] {
            let mut part = WitnessCs::new();
            part.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
            Mul { x, y }.synthesize(&mut part).unwrap();
            joined.extend(&part);
        }
        // Variable indices of the second part are local to it, so the A/B/C
        // values differ only where they reference variables: here they are
        // equal because each part's constraint uses only its own variables.
        assert_eq!(joined.out.input_assignment, whole.out.input_assignment);
        assert_eq!(joined.out.aux_assignment, whole.out.aux_assignment);
        assert_eq!(joined.out.a, whole.out.a);
        assert_eq!(joined.out.b, whole.out.b);
        assert_eq!(joined.out.c, whole.out.c);
        assert_eq!(joined.out.b_input_density, whole.out.b_input_density);
        assert_eq!(joined.out.a_aux_density, whole.out.a_aux_density);
        assert_eq!(joined.out.b_aux_density, whole.out.b_aux_density);
    }

    #[test]
    fn synthesis_errors_propagate() {
        struct Missing;
        impl Circuit<Scalar> for Missing {
            fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                cs.alloc(|| "w", || Err(SynthesisError::AssignmentMissing))?;
                Ok(())
            }
        }
        assert!(matches!(synthesize(Missing), Err(SynthesisError::AssignmentMissing)));
    }
}
