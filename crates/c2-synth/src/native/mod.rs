//! Native witness generation: the assignments of the StackedDrg circuit's
//! hot gadgets computed on machine words, in exactly the order and with
//! exactly the values bellperson's gadgets allocate them (checked against
//! the gadget path, vector for vector).

pub(crate) mod sha256;
pub(crate) mod stacked;
