//! Native witness generation: the assignments of the StackedDrg circuit's
//! hot gadgets computed on machine words, in exactly the order and with
//! exactly the values bellperson's gadgets allocate them (checked against
//! the gadget path, vector for vector).

pub(crate) mod poseidon;
pub(crate) mod post;
pub(crate) mod sha256;
pub(crate) mod stacked;

pub(crate) use sha256::BitSink;

/// A witness-only constraint system the native generators write into: the
/// gadgets they call allocate through [`bellperson::ConstraintSystem`],
/// the native hashes append bits through [`BitSink`].
pub(crate) trait Assignments: bellperson::ConstraintSystem<blstrs::Scalar, Root = Self> + BitSink {}

impl<T: bellperson::ConstraintSystem<blstrs::Scalar, Root = T> + BitSink> Assignments for T {}
