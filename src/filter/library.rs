//! The named kernels: Gaussian, box, binomial, LoG, unsharp mask and the classic 3×3 stencils.
//!
//! Generators compute in f64 and round each weight once to f32. Separable families (Gaussian,
//! box, binomial) are built from their exact 1D factors, so the separable path uses the factors
//! themselves rather than a numerical factorization.

use super::kernel::Kernel;
use super::FilterError;

/// OpenCV's `getGaussianKernel` default: σ = 0.3·((n−1)·0.5 − 1) + 0.8.
pub fn default_sigma(n: usize) -> f64 {
    0.3 * ((n as f64 - 1.0) * 0.5 - 1.0) + 0.8
}

/// The 1D Gaussian exactly as OpenCV's `getGaussianKernel(n, sigma, CV_64F)` computes it,
/// including its fixed tables for odd n ≤ 9 when no σ is given (9 taps: {4,13,30,51,60,…}/256)
/// and its flat top for even n.
pub fn gaussian_1d(n: usize, sigma: Option<f64>) -> Vec<f64> {
    const SMALL: [&[f64]; 5] = [
        &[1.0],
        &[0.25, 0.5, 0.25],
        &[0.0625, 0.25, 0.375, 0.25, 0.0625],
        &[
            0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125,
        ],
        &[
            0.015625, 0.05078125, 0.1171875, 0.19921875, 0.234375, 0.19921875, 0.1171875,
            0.05078125, 0.015625,
        ],
    ];
    if sigma.is_none() && n % 2 == 1 && n <= 9 {
        return SMALL[n / 2].to_vec();
    }
    let s = sigma.unwrap_or_else(|| default_sigma(n));
    let scale2 = -0.5 / (s * s);
    let raw: Vec<f64> = (0..n)
        .map(|i| {
            let x = i as f64 - (n as f64 - 1.0) * 0.5;
            // OpenCV quirk kept for compatibility: for even n the two centre taps are
            // exp(0) = 1 rather than exp(scale2 · 0.25), giving a flat top.
            if x.abs() == 0.5 {
                1.0
            } else {
                (scale2 * x * x).exp()
            }
        })
        .collect();
    let sum: f64 = raw.iter().sum();
    raw.into_iter().map(|v| v / sum).collect()
}

/// Row `n − 1` of Pascal's triangle divided by 2^(n−1).
pub fn binomial_1d(n: usize) -> Vec<f64> {
    let mut row = vec![1f64];
    for _ in 1..n {
        let mut next = vec![1f64; row.len() + 1];
        for i in 1..row.len() {
            next[i] = row[i - 1] + row[i];
        }
        row = next;
    }
    let sum: f64 = row.iter().sum();
    row.into_iter().map(|v| v / sum).collect()
}

/// A `w × h` Gaussian, the outer product of two [`gaussian_1d`] factors (σ shared; `None`
/// takes each side's OpenCV default).
pub fn gaussian(
    w: usize,
    h: usize,
    sigma: Option<f64>,
    name: String,
) -> Result<Kernel, FilterError> {
    Kernel::from_factors(name, &gaussian_1d(h, sigma), &gaussian_1d(w, sigma))
}

/// A `w × h` box (mean) filter: every weight 1/(w·h), built from factors 1/h and 1/w.
pub fn box_filter(w: usize, h: usize, name: String) -> Result<Kernel, FilterError> {
    Kernel::from_factors(name, &vec![1.0 / h as f64; h], &vec![1.0 / w as f64; w])
}

/// A `w × h` binomial filter, the outer product of two [`binomial_1d`] rows.
pub fn binomial(w: usize, h: usize, name: String) -> Result<Kernel, FilterError> {
    Kernel::from_factors(name, &binomial_1d(h), &binomial_1d(w))
}

/// Laplacian of Gaussian with a positive centre: −∇²G = (2σ² − r²)/σ⁴ · G, G the normalized 2D
/// Gaussian, then shifted by its mean so the weights sum to zero (in f64, before rounding).
pub fn log(n: usize, sigma: Option<f64>, name: String) -> Result<Kernel, FilterError> {
    let s = sigma.unwrap_or_else(|| default_sigma(n));
    let c = (n as f64 - 1.0) * 0.5;
    let mut w = Vec::with_capacity(n * n);
    for y in 0..n {
        for x in 0..n {
            let r2 = (x as f64 - c).powi(2) + (y as f64 - c).powi(2);
            let g = (-r2 / (2.0 * s * s)).exp() / (2.0 * std::f64::consts::PI * s * s);
            w.push((2.0 * s * s - r2) / s.powi(4) * g);
        }
    }
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    Kernel::new(
        name,
        n,
        n,
        w.into_iter().map(|v| (v - mean) as f32).collect(),
    )
}

/// Unsharp ("sharp") mask: (1 + a)·δ − a·G with G the n×n Gaussian.
pub fn unsharp(
    n: usize,
    sigma: Option<f64>,
    amount: f64,
    name: String,
) -> Result<Kernel, FilterError> {
    let g = gaussian_1d(n, sigma);
    let mut w = Vec::with_capacity(n * n);
    for y in 0..n {
        for x in 0..n {
            let delta = if x == n / 2 && y == n / 2 {
                1.0 + amount
            } else {
                0.0
            };
            w.push((delta - amount * g[y] * g[x]) as f32);
        }
    }
    Kernel::new(name, n, n, w)
}

/// The fixed 3×3 stencils, by name.
pub fn stencil(name: &str) -> Option<[f32; 9]> {
    Some(match name {
        "edge" => [-1., -1., -1., -1., 8., -1., -1., -1., -1.],
        "laplacian" => [0., -1., 0., -1., 4., -1., 0., -1., 0.],
        "sharpen" => [0., -1., 0., -1., 5., -1., 0., -1., 0.],
        "emboss" => [-2., -1., 0., -1., 1., 1., 0., 1., 2.],
        "sobel-x" => [-1., 0., 1., -2., 0., 2., -1., 0., 1.],
        "sobel-y" => [-1., -2., -1., 0., 0., 0., 1., 2., 1.],
        _ => return None,
    })
}

/// The kernel names of the spec grammar (`box`, `gaussian`, …, `custom`), from [`CATALOGUE`].
pub fn names() -> impl Iterator<Item = &'static str> {
    CATALOGUE
        .iter()
        .map(|(form, _)| form.split([':', ' ']).next().unwrap_or(form))
}

/// The kernel names closest to a mistyped one (`gausian` → `gaussian`, `sobel` → `sobel-x`
/// and `sobel-y`), if any is close enough to be what was meant (Jaro–Winkler similarity ≥ 0.8,
/// as clap's own suggestions); names scoring equally are all given, in catalogue order.
pub fn suggest(name: &str) -> Vec<&'static str> {
    let lower = name.to_ascii_lowercase();
    let scored: Vec<(f64, &str)> = names()
        .map(|n| (strsim::jaro_winkler(&lower, n), n))
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    let best = scored.iter().map(|s| s.0).fold(0.0, f64::max);
    scored
        .into_iter()
        .filter(|s| s.0 == best)
        .map(|s| s.1)
        .collect()
}

/// Every spec form with a one-line description, for `convflow kernels`.
pub const CATALOGUE: &[(&str, &str)] = &[
    (
        "box:N | box:WxH",
        "mean filter, every weight 1/(W·H); separable",
    ),
    (
        "gaussian:N[:SIGMA] | gaussian:WxH[:SIGMA]",
        "sampled Gaussian, normalized; SIGMA as OpenCV getGaussianKernel \
        (0.3·((N−1)·0.5−1)+0.8); separable",
    ),
    (
        "binomial:N | binomial:WxH",
        "Pascal row outer product / 4^(N−1); separable",
    ),
    (
        "log:N[:SIGMA]",
        "Laplacian of Gaussian, positive centre, sums to zero",
    ),
    (
        "unsharp:N[:SIGMA[:AMOUNT]]",
        "sharp mask (1+AMOUNT)·δ − AMOUNT·gaussian (AMOUNT defaults to 1)",
    ),
    ("edge", "[-1 -1 -1; -1 8 -1; -1 -1 -1]"),
    ("laplacian", "[0 -1 0; -1 4 -1; 0 -1 0]"),
    ("sharpen", "[0 -1 0; -1 5 -1; 0 -1 0]"),
    ("emboss", "[-2 -1 0; -1 1 1; 0 1 2]"),
    ("sobel-x", "[-1 0 1; -2 0 2; -1 0 1]; separable"),
    ("sobel-y", "[-1 -2 -1; 0 0 0; 1 2 1]; separable"),
    (
        "custom:WxH:v1,v2,...",
        "W·H weights, row-major; a value may be a fraction like 1/16",
    ),
];
