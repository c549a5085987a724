//! `cpu-seq`: the sequential reference. Plain nested loops that spell out the arithmetic
//! contract, one output sample at a time; no cleverness, so it can be trusted and read.

use crate::backend::{filter_planes, Backend, BackendError, PlaneFilter};
use crate::filter::{finish, Decomposition, Plan};
use crate::frame::{Frame, PlaneMut, PlaneRef};

/// The `cpu-seq` backend: single-threaded, stateless, the reference the others must match.
#[derive(Debug, Default)]
pub struct CpuSeq;

impl CpuSeq {
    /// The backend (it holds no state).
    pub fn new() -> Self {
        CpuSeq
    }
}

impl Backend for CpuSeq {
    fn name(&self) -> String {
        "cpu-seq".into()
    }

    fn filter_frame(
        &mut self,
        plan: &Plan,
        src: &Frame,
        dst: &mut Frame,
    ) -> Result<(), BackendError> {
        filter_planes(self, plan, src, dst)
    }
}

impl PlaneFilter for CpuSeq {
    fn filter_plane(
        &mut self,
        plan: &Plan,
        src: PlaneRef<'_>,
        mut dst: PlaneMut<'_>,
        mask: u8,
    ) -> Result<(), BackendError> {
        let (w, h, ch) = (src.layout.width, src.layout.height, src.layout.channels);
        let depth = src.layout.depth;
        let k = &plan.kernel;
        let (kw, kh) = (k.width(), k.height());
        let (ax, ay) = k.anchor();
        let (border, offset, abs, max) = (plan.border, k.offset(), plan.abs, depth.max());
        let px = |x: usize, y: usize, c: usize| depth.get(src.row(y), x * ch + c) as f32;

        match &plan.decomposition {
            Decomposition::Full => {
                for y in 0..h {
                    for x in 0..w {
                        for c in 0..ch {
                            let out = if mask & (1 << c) == 0 {
                                depth.get(src.row(y), x * ch + c)
                            } else {
                                let mut acc = 0f32;
                                for ky in 0..kh {
                                    let Some(sy) =
                                        border.map(y as isize + ky as isize - ay as isize, h)
                                    else {
                                        continue;
                                    };
                                    for kx in 0..kw {
                                        let Some(sx) =
                                            border.map(x as isize + kx as isize - ax as isize, w)
                                        else {
                                            continue;
                                        };
                                        acc = k.weights()[ky * kw + kx].mul_add(px(sx, sy, c), acc);
                                    }
                                }
                                finish(acc, offset, abs, max)
                            };
                            depth.put(dst.row_mut(y), x * ch + c, out);
                        }
                    }
                }
            }
            Decomposition::Separable { col, row } => {
                // Horizontal pass over every source row into an f32 intermediate (allocated
                // fallibly: its size comes from the input).
                let mut tmp = Vec::new();
                tmp.try_reserve_exact(w * h * ch).map_err(|_| {
                    BackendError::Unsupported(format!(
                        "cannot allocate {} bytes for the separable intermediate (out of memory)",
                        4 * w * h * ch
                    ))
                })?;
                tmp.resize(w * h * ch, 0f32);
                for y in 0..h {
                    for x in 0..w {
                        for c in 0..ch {
                            let mut acc = 0f32;
                            for (kx, &wt) in row.iter().enumerate() {
                                let Some(sx) =
                                    border.map(x as isize + kx as isize - ax as isize, w)
                                else {
                                    continue;
                                };
                                acc = wt.mul_add(px(sx, y, c), acc);
                            }
                            tmp[(y * w + x) * ch + c] = acc;
                        }
                    }
                }
                // Vertical pass; a zero-border row contributes nothing.
                for y in 0..h {
                    for x in 0..w {
                        for c in 0..ch {
                            let out = if mask & (1 << c) == 0 {
                                depth.get(src.row(y), x * ch + c)
                            } else {
                                let mut acc = 0f32;
                                for (ky, &wt) in col.iter().enumerate() {
                                    let Some(sy) =
                                        border.map(y as isize + ky as isize - ay as isize, h)
                                    else {
                                        continue;
                                    };
                                    acc = wt.mul_add(tmp[(sy * w + x) * ch + c], acc);
                                }
                                finish(acc, offset, abs, max)
                            };
                            depth.put(dst.row_mut(y), x * ch + c, out);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
