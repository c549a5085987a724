//! What a CUDA backend reads of its device once, when it is created: the limits its launches
//! and copies must meet (shared memory a block may take, texture alignments), the rates the
//! benchmarks' floors and `fast`'s rules go by (the fp32 FMA peak, peak DRAM bytes per
//! multiprocessor cycle), and the L2 cache the timed passes rotate their copies past.

use cudarc::driver::sys::CUdevice_attribute_enum as A;
use cudarc::driver::CudaContext;

use super::{fast, CudaError};

/// A device's attributes as its backend uses them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Attributes {
    /// Shared memory a block may take (opted in), bytes.
    pub max_smem: usize,
    /// Where a texture may start, bytes.
    pub tex_align: u64,
    /// What a 2D texture's pitch must be a multiple of, bytes.
    pub tex_pitch_align: usize,
    /// The fp32 FMA peak, per second: multiprocessors × 128 lanes × SM clock; None where the
    /// driver lacks an attribute (the benchmarks' floors then fail, not the backend).
    pub fma_per_s: Option<f64>,
    /// Bytes of L2 cache (0 where the driver does not say).
    pub l2_bytes: usize,
    /// Peak DRAM bytes per multiprocessor per SM clock cycle
    /// ([`fast::memory_bytes_per_sm_cycle`]); None where the driver lacks an attribute.
    pub memory_rate: Option<f64>,
}

impl Attributes {
    /// Reads them from the device of `ctx`.
    pub fn read(ctx: &CudaContext) -> Result<Attributes, CudaError> {
        let attr = |a| {
            ctx.attribute(a)
                .map_err(|e| CudaError::driver("reading device attributes", e))
        };
        // The rates only inform the benchmarks and a rule: a driver without them leaves those
        // out, not the backend.
        let optional = |a| ctx.attribute(a).map(i64::from).unwrap_or(0);
        let (sms, sm_khz) = (
            optional(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            optional(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        );
        Ok(Attributes {
            max_smem: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as usize,
            tex_align: attr(A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)?.max(1) as u64,
            tex_pitch_align: attr(A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)?.max(1) as usize,
            fma_per_s: (sms > 0 && sm_khz > 0).then_some(sms as f64 * 128.0 * sm_khz as f64 * 1e3),
            l2_bytes: optional(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).max(0) as usize,
            memory_rate: fast::memory_bytes_per_sm_cycle(
                optional(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
                optional(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
                sms,
                sm_khz,
            ),
        })
    }

    /// The line `convflow info` prints of them: the memory rate and which of `fast`'s rules it
    /// gives ([`fast::fast_memory`]).
    pub fn details(&self) -> Vec<String> {
        let rules = if fast::fast_memory(self.memory_rate) {
            "fast-memory launch rules"
        } else {
            "standard launch rules"
        };
        vec![match self.memory_rate {
            Some(r) => format!("memory: {r:.1} bytes per multiprocessor cycle at peak, {rules}"),
            None => format!("memory: rate unknown, {rules}"),
        }]
    }
}
