//! The CPU backends: `cpu-seq` ([`seq`]), the plain sequential reference that spells out the
//! arithmetic contract, and `cpu-par` ([`par`]), rayon over row bands with SIMD loops,
//! bit-identical to it. Both filter plane by plane ([`super::PlaneFilter`]).

mod bands;
#[cfg(target_arch = "x86_64")]
mod int;
#[cfg(target_arch = "x86_64")]
mod int_sep;
pub mod par;
pub mod seq;
mod simd;

pub use par::CpuPar;
pub use seq::CpuSeq;
pub use simd::simd_level;
