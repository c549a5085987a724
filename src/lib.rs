//! convflow: 2D convolution of video and image frames on NVIDIA GPUs and CPUs, as a pipeline.
//!
//! Layers, arrows only downward: the command line (the binary's `cli` module) → [`pipeline`]
//! (with [`io`] sources and sinks beside it) → [`backend`] (one trait: cpu-seq, cpu-par, cuda)
//! → kernels (the CPU inner loops in `backend::cpu` and the CUDA sources in `kernels/`).
//! [`device`] (frames in device memory and how they move) and [`frame`] are data both sides
//! share. What is computed — a [`filter::Filter`] with its [`border::Border`] — is plain data,
//! resolved into a [`filter::Plan`] (its decomposition included) from the filter alone; how it
//! runs is a [`backend::Schedule`]. ARCHITECTURE.md has the map.

pub mod backend;
pub mod bench;
pub mod border;
pub mod console;
pub mod device;
pub mod filter;
pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
pub mod io;
pub mod memory;
pub mod pipeline;
pub mod quote;

pub use backend::{Backend, BackendKind, Schedule};
pub use border::Border;
pub use filter::{Filter, Kernel, Mode, Plan};
pub use frame::{Frame, PixelFormat};
