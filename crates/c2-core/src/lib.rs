//! Types shared by the porep-c2 stages, so that no stage crate depends on
//! another stage crate for a type: the [`Density`] masks of the Groth16
//! queries, the constraint matrices' views ([`MatricesView`]), and the [`Synthesized`] partition that synthesis (`c2-synth`)
//! produces and the NTT (`c2-ntt`), MSM (`c2-msm`) and facade (`porep-c2`)
//! stages read, and the [`CompactWitness`] (0/1 values as bits).
#![deny(missing_docs)]

mod density;
mod matrices;
mod synthesized;
mod witness;

pub use density::Density;
pub use matrices::{CsrView, MatricesView};
pub use synthesized::Synthesized;
pub use witness::CompactWitness;
