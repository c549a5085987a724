//! The kernel library: values against independently computed references (OpenCV 5.0's
//! getGaussianKernel, printed by opencv-python), rank-1 detection, and every grammar error.

use convflow::filter::kernel::factor_rank1;
use convflow::filter::spec::{parse_kernel_text, parse_spec};
use convflow::filter::{library, Filter, FilterError, Kernel, Mode};

fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
}

#[test]
fn gaussian_matches_opencv_get_gaussian_kernel() {
    // cv2.getGaussianKernel(n, sigma, ktype=cv2.CV_64F), OpenCV 5.0.0.
    let refs: [(usize, Option<f64>, &[f64]); 6] = [
        (3, None, &[0.25, 0.5, 0.25]),
        (5, None, &[0.0625, 0.25, 0.375, 0.25, 0.0625]),
        (
            9,
            None,
            &[
                0.015625, 0.05078125, 0.1171875, 0.19921875, 0.234375, 0.19921875, 0.1171875,
                0.05078125, 0.015625,
            ],
        ),
        (
            4,
            None,
            &[
                0.11165005380519624,
                0.38834994619480373,
                0.38834994619480373,
                0.11165005380519624,
            ],
        ),
        (
            15,
            None,
            &[
                0.004107253313193926,
                0.010743414616120042,
                0.024237534414825176,
                0.04716173732015951,
                0.07914917738276535,
                0.11456666473620247,
                0.14302942373257452,
                0.15400958896831815,
                0.14302942373257452,
                0.11456666473620247,
                0.07914917738276535,
                0.04716173732015951,
                0.024237534414825176,
                0.010743414616120042,
                0.004107253313193926,
            ],
        ),
        (
            7,
            Some(2.0),
            &[
                0.07015932695902606,
                0.13107487896736597,
                0.19071282356963734,
                0.21610594100794114,
                0.19071282356963734,
                0.13107487896736597,
                0.07015932695902606,
            ],
        ),
    ];
    for (n, sigma, want) in refs {
        let got = library::gaussian_1d(n, sigma);
        assert!(close(&got, want, 1e-15), "n={n} sigma={sigma:?}: {got:?}");
    }
    assert!((library::default_sigma(15) - 2.6).abs() < 1e-12);
    // The 2D kernel is the outer product, rounded once to f32.
    let k = parse_spec("gaussian:5").unwrap();
    assert_eq!(k.weights()[12], 0.140625);
    assert_eq!(k.weights()[0], 0.00390625);
}

#[test]
fn binomial_5_is_the_1_over_256_matrix() {
    let k = parse_spec("binomial:5").unwrap();
    let p = [1.0, 4.0, 6.0, 4.0, 1.0];
    let want: Vec<f32> = p
        .iter()
        .flat_map(|a| p.iter().map(move |b| (a * b / 256.0) as f32))
        .collect();
    assert_eq!(k.weights(), want.as_slice());
    assert_eq!(parse_spec("binomial:1").unwrap().weights(), &[1.0]);
}

#[test]
fn log_sums_to_zero_with_positive_centre() {
    for spec in ["log:5", "log:9:1.4", "log:4"] {
        let k = parse_spec(spec).unwrap();
        assert!(k.sum().abs() < 1e-6, "{spec} sums to {}", k.sum());
        let max = k.weights().iter().cloned().fold(f32::MIN, f32::max);
        let centre = k.weights()[k.anchor().1 * k.width() + k.anchor().0];
        assert!(
            centre > 0.0 && (centre - max).abs() < 1e-6 || k.width().is_multiple_of(2),
            "{spec}: centre {centre}"
        );
    }
}

#[test]
fn fixed_stencils_and_unsharp() {
    assert_eq!(
        parse_spec("edge").unwrap().weights(),
        &[-1., -1., -1., -1., 8., -1., -1., -1., -1.]
    );
    assert_eq!(
        parse_spec("sobel-y").unwrap().weights(),
        &[-1., -2., -1., 0., 0., 0., 1., 2., 1.]
    );
    assert_eq!(
        parse_spec("emboss").unwrap().weights(),
        &[-2., -1., 0., -1., 1., 1., 0., 1., 2.]
    );
    let u = parse_spec("unsharp:3::0.5").err();
    assert!(u.is_some(), "empty sigma field is an error");
    let u = parse_spec("unsharp:3:1:0.5").unwrap();
    assert!((u.sum() - 1.0).abs() < 1e-6, "unsharp keeps brightness");
    let b = parse_spec("box:3x2").unwrap();
    assert_eq!((b.width(), b.height(), b.anchor()), (3, 2, (1, 1)));
    assert!(b.weights().iter().all(|&w| (w - 1.0 / 6.0).abs() < 1e-7));
}

#[test]
fn rank1_detection_accepts_separable_and_rejects_the_rest() {
    // Detection runs on the weights alone, as for a custom kernel typed by a user.
    for spec in [
        "gaussian:7",
        "gaussian:6x3:1.2",
        "box:5",
        "binomial:7",
        "sobel-x",
        "sobel-y",
    ] {
        let k = parse_spec(spec).unwrap();
        assert!(
            factor_rank1(k.width(), k.height(), k.weights()).is_some(),
            "{spec} should be separable"
        );
        assert!(k.is_separable());
    }
    for spec in [
        "laplacian",
        "log:5",
        "log:9",
        "edge",
        "sharpen",
        "emboss",
        "unsharp:5",
    ] {
        let k = parse_spec(spec).unwrap();
        assert!(
            factor_rank1(k.width(), k.height(), k.weights()).is_none(),
            "{spec} should not be separable"
        );
        let mut f = Filter::new(k);
        f.mode = Mode::Separable;
        assert!(matches!(f.plan(), Err(FilterError::NotSeparable(_))));
    }
    let custom = parse_spec("custom:3x3:1,2,1,2,4,2,1,2,1").unwrap();
    let (col, row) = custom.factors().unwrap();
    for (y, c) in col.iter().enumerate() {
        for (x, r) in row.iter().enumerate() {
            assert!((c * r - custom.weights()[y * 3 + x]).abs() < 1e-6);
        }
    }
}

#[test]
fn large_kernels_have_no_size_cap() {
    let k = parse_spec("gaussian:151").unwrap();
    assert_eq!((k.width(), k.height()), (151, 151));
    assert!((k.sum() - 1.0).abs() < 1e-4);
    assert!(parse_spec("box:64").is_ok());
}

#[test]
fn every_grammar_error_is_reported() {
    let cases = [
        ("", "empty"),
        ("blur:3", "unknown kernel 'blur'"),
        ("gaussian", "missing kernel size"),
        ("gaussian:0", "at least 1"),
        ("box:0x3", "at least 1"),
        ("box:-3", "not a positive integer"),
        ("box:3.5", "not a positive integer"),
        ("gaussian:5:-1", "sigma must be positive"),
        ("gaussian:5:abc", "'abc' is not a number"),
        ("gaussian:5:1:2", "too many fields"),
        ("edge:3", "too many fields"),
        ("log:5x3", "must be square"),
        ("custom:2x2:1,2,3", "needs 4 values, got 3"),
        ("custom:2x2", "missing values"),
        ("custom:2x2:1,2,x,4", "'x' is not a number"),
        ("custom:1x1:1/0", "divides by zero"),
        ("custom:1x1:inf", "not a finite number"),
        ("unsharp:5:1:0", "amount must be positive"),
        ("box:5000x5000", "more than"),
    ];
    for (spec, want) in cases {
        let err = parse_spec(spec).map(|_| ()).expect_err(spec).to_string();
        assert!(err.contains(want), "'{spec}': expected '{want}' in '{err}'");
        assert!(!err.contains('\n'), "one-line error for '{spec}'");
    }
}

#[test]
fn kernel_file_format() {
    let k = parse_kernel_text(
        "k.txt",
        "# Gaussian 3x3\ndivisor 16\noffset 0.5\n1 2 1\n2, 4, 2\n1 2 1 # last\n",
    )
    .unwrap();
    assert_eq!(k.weights()[4], 0.25);
    assert_eq!(k.offset(), 0.5);
    assert!(k.is_separable());
    let bad = [
        (
            "1 2\n1 2 3\n",
            "line 2: row has 3 values but the first row has 2",
        ),
        ("divisor 0\n1\n", "divisor must not be zero"),
        ("divisor 2\ndivisor 3\n1\n", "line 2: 'divisor' given twice"),
        ("offset\n1\n", "line 1: 'offset' takes exactly one number"),
        ("1 a\n", "line 1: 'a' is not a number"),
        ("# nothing\n", "no kernel rows"),
    ];
    for (text, want) in bad {
        let err = parse_kernel_text("k.txt", text)
            .map(|_| ())
            .expect_err(text)
            .to_string();
        assert!(err.contains(want), "expected '{want}' in '{err}'");
    }
}

#[test]
fn kernel_rejects_non_finite_weights() {
    assert!(Kernel::new("x", 1, 1, vec![f32::NAN]).is_err());
}
