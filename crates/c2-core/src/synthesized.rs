//! One synthesized partition, owned.

use blstrs::Scalar;

use crate::Density;

/// One synthesized circuit, owned: everything the NTT and MSM stages read.
///
/// Field by field identical to what bellperson 0.27's prover builds, so a
/// proof from it is bit-identical to bellperson's for the same `r`, `s`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Synthesized {
    /// `<A_j, z>` for every constraint `j` (the input constraints included).
    pub a: Vec<Scalar>,
    /// `<B_j, z>` per constraint.
    pub b: Vec<Scalar>,
    /// `<C_j, z>` per constraint.
    pub c: Vec<Scalar>,
    /// Public inputs; element 0 is the constant ONE.
    pub input_assignment: Vec<Scalar>,
    /// Private (auxiliary) variables.
    pub aux_assignment: Vec<Scalar>,
    /// Aux variables that occur in some A term (inputs are always dense in A).
    pub a_aux_density: Density,
    /// Inputs that occur in some B term.
    pub b_input_density: Density,
    /// Aux variables that occur in some B term.
    pub b_aux_density: Density,
}

impl Synthesized {
    /// Number of constraints, the input constraints included.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }
    /// Number of public inputs, ONE included.
    pub fn num_inputs(&self) -> usize {
        self.input_assignment.len()
    }
    /// Number of aux variables.
    pub fn num_aux(&self) -> usize {
        self.aux_assignment.len()
    }
    /// Bytes held (for memory budgets and reports).
    pub fn heap_bytes(&self) -> usize {
        let s = std::mem::size_of::<Scalar>();
        (self.a.len() + self.b.len() + self.c.len() + self.num_inputs() + self.num_aux()) * s
            + (self.a_aux_density.len() + self.b_input_density.len() + self.b_aux_density.len()) / 8
    }
}
