//! What the kernels read besides the frame: the plan's weights in the global buffer or in a
//! module's `__constant__` array (uploaded only when they change, so a stream of frames under
//! one plan uploads them once), the two-pass variants' f32 intermediate, and the texture
//! variant's source plane (an aligned copy when the frame's own rows are not aligned enough).

use super::abi::PlaneParams;
use super::memory::{grow, ptr};
use super::registry::ModuleKey;
use super::{raw, CudaBackend, CudaError};
use crate::filter::Plan;
use crate::frame::PlaneLayout;

impl CudaBackend {
    /// The plan's weights in the global weight buffer (uploaded unless already there); its
    /// device address.
    pub(super) fn global_weights(&mut self, plan: &Plan) -> Result<u64, CudaError> {
        let w = plan.weights();
        if self.w_host != w || self.d_w.is_none() {
            grow(&mut self.d_w, w.len(), &self.stream, "weights")?;
            let d = self.d_w.as_mut().expect("grown");
            self.stream
                .memcpy_htod(w, &mut d.slice_mut(..w.len()))
                .map_err(|e| CudaError::driver("uploading weights", e))?;
            self.w_host = w.to_vec();
        }
        Ok(ptr(self.d_w.as_ref().expect("uploaded"), &self.stream))
    }

    /// The plan's weights in the module's `__constant__` array `symbol` (uploaded unless it
    /// already holds them). The caller checked they fit.
    pub(super) fn constant_weights(
        &mut self,
        key: &ModuleKey,
        symbol: &'static str,
        plan: &Plan,
    ) -> Result<(), CudaError> {
        let bits = || plan.weights().iter().map(|w| w.to_bits());
        if self
            .const_host
            .get(&(key.clone(), symbol))
            .is_some_and(|h| h.iter().copied().eq(bits()))
        {
            return Ok(()); // the common case, every frame: nothing to allocate or upload
        }
        self.constant_words(key, symbol, &bits().collect::<Vec<u32>>())
    }

    /// 32-bit words (f32 bits or packed integers) in the module's `__constant__` array
    /// `symbol`, uploaded unless it already holds them. The caller checked they fit.
    pub(super) fn constant_words(
        &mut self,
        key: &ModuleKey,
        symbol: &'static str,
        words: &[u32],
    ) -> Result<(), CudaError> {
        let slot = (key.clone(), symbol);
        if self.const_host.get(&slot).is_some_and(|h| h == words) {
            return Ok(());
        }
        let module = self.registry.module(key)?;
        let mut global = module
            .get_global(symbol, &self.stream)
            .map_err(|e| CudaError::driver("finding constant memory", e))?;
        // SAFETY: the symbol is an array of 32-bit words of at least `words.len()` elements
        // (the callers check the size against MAX_CONST_TAPS or the specialization's size).
        let mut view = unsafe { global.transmute_mut::<u32>(words.len()) }.ok_or_else(|| {
            CudaError::Unsupported(format!(
                "{} weights do not fit constant memory",
                words.len()
            ))
        })?;
        self.stream
            .memcpy_htod(words, &mut view)
            .map_err(|e| CudaError::driver("uploading constant weights", e))?;
        self.const_host.insert(slot, words.to_vec());
        self.const_uploads += 1;
        Ok(())
    }

    /// An f32 intermediate of `len` values (the two-pass variants); its device address.
    pub(super) fn intermediate(&mut self, len: usize) -> Result<u64, CudaError> {
        grow(&mut self.d_tmp, len, &self.stream, "intermediate")?;
        Ok(ptr(self.d_tmp.as_ref().expect("grown"), &self.stream))
    }

    /// Where a texture can read the source plane of `p`: in place when its address and pitch
    /// meet the texture alignment, else an aligned copy. Returns (base, pitch).
    pub(super) fn texture_source(
        &mut self,
        p: &PlaneParams,
        l: PlaneLayout,
    ) -> Result<(u64, usize), CudaError> {
        if p.src.is_multiple_of(self.attrs.tex_align)
            && l.stride.is_multiple_of(self.attrs.tex_pitch_align)
        {
            return Ok((p.src, l.stride));
        }
        let pitch = l.row_bytes().next_multiple_of(self.attrs.tex_pitch_align);
        let len = pitch * l.height + self.attrs.tex_align as usize;
        grow(&mut self.d_scratch, len, &self.stream, "texture copy")?;
        let base = ptr(self.d_scratch.as_ref().expect("grown"), &self.stream)
            .next_multiple_of(self.attrs.tex_align);
        // SAFETY: the plane lies in the frame's device buffer; the scratch buffer holds
        // `height` rows at `pitch` past `base` (grown above); both outlive the stream's work.
        unsafe {
            raw::copy_2d_d2d(
                p.src,
                l.stride,
                base,
                pitch,
                l.row_bytes(),
                l.height,
                self.stream.cu_stream(),
            )
        }
        .map_err(|e| CudaError::driver("copying a plane for the texture", e))?;
        Ok((base, pitch))
    }
}
