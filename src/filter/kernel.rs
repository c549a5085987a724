//! The convolution kernel as plain data: weights, size, offset and (when rank 1) its factors.
//!
//! A kernel is applied as OpenCV's `filter2D` applies it: correlation (no flip), anchor at
//! (W/2, H/2). Weights are stored as f32 in row-major order, already divided by any divisor, so
//! every backend sums exactly the same numbers.

use super::FilterError;

/// Tight tolerance for rank-1 detection, relative to the largest weight magnitude.
pub const SEPARABLE_TOLERANCE: f64 = 1e-6;

/// Most taps a kernel may have (4096 × 4096). Spec and file parsers check sizes against it
/// before any weight is allocated.
pub const MAX_TAPS: usize = 1 << 24;

/// Longest kernel side (a 1D kernel longer than the largest frame side has no use).
pub const MAX_SIDE: usize = crate::frame::MAX_SIDE;

/// Largest sum of |weights|, and largest |offset|: with them, no f32 sum of the contract can
/// overflow for any sample value, so every output is a finite number before rounding.
pub const MAX_WEIGHT_SUM: f64 = 1e9;

/// A 2D kernel: `width × height` f32 weights (row-major) plus a constant added to every sum.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Human-readable description, e.g. `gaussian:5` or `file:sobel.txt`.
    pub name: String,
    width: usize,
    height: usize,
    weights: Vec<f32>,
    offset: f32,
    /// Column (vertical, `height` long) and row (horizontal, `width` long) factors when the
    /// kernel is rank 1; `weights[y][x] ≈ col[y] · row[x]`.
    factors: Option<(Vec<f32>, Vec<f32>)>,
}

impl Kernel {
    /// Builds a kernel from row-major weights; detects separability itself.
    pub fn new(
        name: impl Into<String>,
        width: usize,
        height: usize,
        weights: Vec<f32>,
    ) -> Result<Self, FilterError> {
        Self::check_shape(width, height, weights.len())?;
        Self::check_weights(&weights)?;
        let factors = factor_rank1(width, height, &weights);
        Ok(Kernel {
            name: name.into(),
            width,
            height,
            weights,
            offset: 0.0,
            factors,
        })
    }

    /// Builds the kernel `col ⊗ row` (outer product in f64, rounded to f32) whose factors are
    /// known exactly; used for Gaussian, box and binomial kernels.
    pub fn from_factors(
        name: impl Into<String>,
        col: &[f64],
        row: &[f64],
    ) -> Result<Self, FilterError> {
        Self::check_shape(row.len(), col.len(), row.len().saturating_mul(col.len()))?;
        let weights: Vec<f32> = col
            .iter()
            .flat_map(|c| row.iter().map(move |r| (c * r) as f32))
            .collect();
        Self::check_weights(&weights)?;
        let to32 = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        Ok(Kernel {
            name: name.into(),
            width: row.len(),
            height: col.len(),
            weights,
            offset: 0.0,
            factors: Some((to32(col), to32(row))),
        })
    }

    fn check_shape(width: usize, height: usize, len: usize) -> Result<(), FilterError> {
        if width == 0 || height == 0 {
            return Err(FilterError::Invalid(format!(
                "kernel size {width}x{height} is empty"
            )));
        }
        if width > MAX_SIDE || height > MAX_SIDE || width.saturating_mul(height) > MAX_TAPS {
            return Err(FilterError::Invalid(format!(
                "kernel size {width}x{height} is over the limit ({MAX_SIDE} per side, {MAX_TAPS} \
                taps)"
            )));
        }
        if len != width * height {
            return Err(FilterError::Invalid(format!(
                "kernel {width}x{height} needs {} weights, got {len}",
                width * height
            )));
        }
        Ok(())
    }

    /// Every weight finite (a NaN from, say, a vanishing sigma would turn whole images black)
    /// and the sum of their magnitudes at most [`MAX_WEIGHT_SUM`].
    fn check_weights(weights: &[f32]) -> Result<(), FilterError> {
        if weights.iter().any(|w| !w.is_finite()) {
            return Err(FilterError::Invalid(
                "the kernel's weights are not all finite numbers (a sigma or amount out of range?)"
                    .into(),
            ));
        }
        let sum: f64 = weights.iter().map(|&w| (w as f64).abs()).sum();
        if sum > MAX_WEIGHT_SUM {
            return Err(FilterError::Invalid(format!(
                "the kernel's weights add up to {sum:.3e} in magnitude, more than the limit of \
                {MAX_WEIGHT_SUM:.0e}"
            )));
        }
        Ok(())
    }

    /// The kernel with `offset` added to every sum (finite, |offset| ≤ [`MAX_WEIGHT_SUM`]),
    /// checked before it is rounded to f32.
    pub fn with_offset(mut self, offset: impl Into<f64>) -> Result<Self, FilterError> {
        let offset: f64 = offset.into();
        if !offset.is_finite() || offset.abs() > MAX_WEIGHT_SUM {
            return Err(FilterError::Invalid(format!(
                "offset {offset:e} is out of range (at most {MAX_WEIGHT_SUM:.0e} in magnitude)"
            )));
        }
        self.offset = offset as f32;
        Ok(self)
    }

    /// The same kernel under another display name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Columns (taps per row).
    pub fn width(&self) -> usize {
        self.width
    }
    /// Rows.
    pub fn height(&self) -> usize {
        self.height
    }
    /// Row-major weights, `height` rows of `width`.
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }
    /// The constant added to every sum (0 unless set by [`Kernel::with_offset`]).
    pub fn offset(&self) -> f32 {
        self.offset
    }
    /// Anchor (x, y) = (W/2, H/2), as OpenCV's default anchor (-1, -1).
    pub fn anchor(&self) -> (usize, usize) {
        (self.width / 2, self.height / 2)
    }
    /// `(column, row)` factors if the kernel is rank 1.
    pub fn factors(&self) -> Option<(&[f32], &[f32])> {
        self.factors
            .as_ref()
            .map(|(c, r)| (c.as_slice(), r.as_slice()))
    }
    /// True when the kernel is rank 1 (has factors).
    pub fn is_separable(&self) -> bool {
        self.factors.is_some()
    }
    /// Sum of the weights in f64 (1 for a normalised blur, 0 for an edge detector).
    pub fn sum(&self) -> f64 {
        self.weights.iter().map(|&w| w as f64).sum()
    }
}

/// Factors a rank-1 matrix as `col ⊗ row`, or returns `None`.
///
/// Pivot on the largest |w|: `col[y] = w[y][px]`, `row[x] = w[py][x] / w[py][px]`, then accept
/// only if every weight is reproduced within [`SEPARABLE_TOLERANCE`] of the largest magnitude.
pub fn factor_rank1(width: usize, height: usize, w: &[f32]) -> Option<(Vec<f32>, Vec<f32>)> {
    let (mut pi, mut pmax) = (0usize, 0f64);
    for (i, &v) in w.iter().enumerate() {
        if (v as f64).abs() > pmax {
            pmax = (v as f64).abs();
            pi = i;
        }
    }
    if pmax == 0.0 {
        return None; // the all-zero kernel: nothing to gain, keep it full
    }
    let (py, px) = (pi / width, pi % width);
    let pivot = w[pi] as f64;
    let col: Vec<f64> = (0..height).map(|y| w[y * width + px] as f64).collect();
    let row: Vec<f64> = (0..width)
        .map(|x| w[py * width + x] as f64 / pivot)
        .collect();
    for y in 0..height {
        for x in 0..width {
            let err = (col[y] * row[x] - w[y * width + x] as f64).abs();
            if err > SEPARABLE_TOLERANCE * pmax {
                return None;
            }
        }
    }
    Some((
        col.iter().map(|&v| v as f32).collect(),
        row.iter().map(|&v| v as f32).collect(),
    ))
}
