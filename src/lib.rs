//! convflow: 2D convolution of video and image frames on NVIDIA GPUs and CPUs, as a pipeline.
//!
//! Layers, arrows only downward: the command line (the binary's `cli` module) → [`pipeline`]
//! (with [`io`] sources and sinks beside it) → [`backend`] (one trait: cpu-seq, cpu-par, cuda)
//! → kernels (the CPU inner loops in `backend::cpu` and the CUDA sources in `kernels/`).
//! [`device`] (frames in device memory and how they move) and [`frame`] are data both sides
//! share. What is computed — a [`filter::Filter`] with its [`border::Border`] — is plain data,
//! resolved into a [`filter::Plan`] (its decomposition included) from the filter alone; how it
//! runs is a [`backend::Schedule`]. ARCHITECTURE.md has the map.
//!
//! # Filtering one frame
//!
//! A kernel from the spec grammar (`convflow kernels` lists it), a [`Filter`] with the
//! defaults (clamp border, auto decomposition), its [`Plan`], and a backend:
//!
//! ```
//! use convflow::{backend, filter::spec, BackendKind, Filter, Frame, PixelFormat, Schedule};
//!
//! let plan = Filter::new(spec::parse_spec("gaussian:5")?).plan()?;
//! let mut src = Frame::new(PixelFormat::Gray8, 64, 48)?;
//! for (i, b) in src.data_mut().iter_mut().enumerate() {
//!     *b = (i * 37 % 251) as u8;
//! }
//! let mut dst = Frame::like(&src);
//! let mut cpu = backend::create(BackendKind::CpuPar, &Schedule::default())?;
//! cpu.filter_frame(&plan, &src, &mut dst)?;
//! // Every backend and CUDA variant gives these bytes exactly (the contract in README.md).
//! let mut reference = Frame::like(&src);
//! backend::create(BackendKind::CpuSeq, &Schedule::default())?
//!     .filter_frame(&plan, &src, &mut reference)?;
//! assert!(dst.same_pixels(&reference));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `BackendKind::Cuda` runs the same plan on an NVIDIA GPU (feature `cuda`, on by default:
//! the driver and NVRTC are loaded at run time, so the crate builds without CUDA).
//!
//! # Streams of frames
//!
//! [`pipeline::run`] drives a [`io::Source`] through a backend into a [`io::Sink`] on
//! overlapping threads (read → upload → filter → download → write). Sources and sinks for
//! video files (feature `video`), y4m, images, frame directories and synthetic frames are in
//! [`io`]; your own are a trait implementation each (see `examples/custom_sink.rs`):
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use convflow::{backend, filter::spec, io, pipeline, BackendKind, Filter, Schedule};
//!
//! let plan = Filter::new(spec::parse_spec("box:3")?).plan()?;
//! let mut source = io::open_source("synthetic:320x240:yuv420p:10".as_ref(), None)?;
//! let sink = Box::<io::NullSink>::default();
//! let mut cpu = backend::create(BackendKind::CpuPar, &Schedule::default())?;
//! let stop = AtomicBool::new(false);
//! let stats = pipeline::run(
//!     source.as_mut(),
//!     sink,
//!     cpu.as_mut(),
//!     &plan,
//!     pipeline::Options::new(3, &stop),
//! )?;
//! assert_eq!(stats.frames, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! - `cli` (default): the `convflow` binary and what only it needs (clap, indicatif, the
//!   benchmark charts with plotters, completions, man page). A library user leaves it out:
//!   `convflow = { version = "0.1", default-features = false, features = ["cuda"] }`.
//! - `cuda` (default): the CUDA backend (cudarc, dynamic loading).
//! - `video` (default): video files through FFmpeg's shared libraries (ffmpeg-next);
//!   `video-static` links FFmpeg statically.

#![warn(missing_docs)]

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
pub mod stats;

pub use backend::{Backend, BackendKind, Schedule};
pub use border::Border;
pub use filter::{Filter, Kernel, Mode, Plan};
pub use frame::{Frame, PixelFormat};
