//! Unit and property tests of [`super`]: special values, agreement of the direct tables with the
//! iterative path at every table boundary, and never a panic or NaN on any input.

use super::generated::{W0_NEG, W0_POS, W0_Q, WM1_NEG, WM1_Q};
use super::methods::{Table, branch, halley_exp, w0_start, wm1_general};
use super::*;
use proptest::prelude::*;

/// |a − b| in units of the spacing of doubles at b.
fn ulps(a: f64, b: f64) -> f64 {
    let spacing = f64::from_bits(b.abs().to_bits() + 1) - b.abs();
    (a - b).abs() / spacing
}

#[test]
fn special_values_w0() {
    assert_eq!(w0(f64::NAN), None);
    assert_eq!(w0(f64::NEG_INFINITY), None);
    assert_eq!(w0(f64::INFINITY), Some(f64::INFINITY));
    assert_eq!(w0(0.0).map(f64::to_bits), Some(0.0f64.to_bits()));
    assert_eq!(w0(-0.0).map(f64::to_bits), Some((-0.0f64).to_bits()));
    // The double nearest −1/e is below −1/e: outside the domain.
    assert_eq!(w0(BRANCH_POINT), None);
    assert_eq!(w0(-1.0), None);
    let first = f64::from_bits(BRANCH_POINT.to_bits() - 1); // next double toward zero
    let w = w0(first).unwrap();
    assert!(w > -1.0 && w < -0.9999999, "{w}");
    assert_eq!(w0(5e-324), Some(5e-324));
    assert_eq!(w0(-5e-324), Some(-5e-324));
    assert_eq!(w0(1e-310), Some(1e-310));
    assert!(ulps(w0(1.0).unwrap(), 0.567_143_290_409_784) <= 1.0);
    assert!(ulps(w0(core::f64::consts::E).unwrap(), 1.0) <= 1.0);
    let big = w0(f64::MAX).unwrap();
    assert!(ulps(big, 703.227_033_104_770_3) <= 2.0, "{big}");
}

#[test]
fn special_values_wm1() {
    assert_eq!(wm1(f64::NAN), None);
    assert_eq!(wm1(0.0), None);
    assert_eq!(wm1(1.0), None);
    assert_eq!(wm1(f64::INFINITY), None);
    assert_eq!(wm1(f64::NEG_INFINITY), None);
    assert_eq!(wm1(-0.0), Some(f64::NEG_INFINITY));
    assert_eq!(wm1(BRANCH_POINT), None);
    let first = f64::from_bits(BRANCH_POINT.to_bits() - 1);
    let w = wm1(first).unwrap();
    assert!(w < -1.0 && w > -1.0000001, "{w}");
    // W₋₁(−5e−324) = −745.1…; e^w underflows there, the log form keeps it accurate.
    let w = wm1(-5e-324).unwrap();
    assert!((w + 751.0).abs() < 1.0, "{w}");
    assert!(ulps(wm1(-0.1).unwrap(), -3.577_152_063_957_297) <= 1.0);
    assert!(ulps(wm1(-2.0 * (-2.0f64).exp()).unwrap(), -2.0) <= 1.0);
}

#[test]
fn branch_distance_entry_points() {
    assert_eq!(w0_from_branch_distance(0.0), Some(-1.0));
    assert_eq!(wm1_from_branch_distance(0.0), Some(-1.0));
    assert_eq!(w0_from_branch_distance(-1e-300), None);
    assert_eq!(wm1_from_branch_distance(-1e-300), None);
    assert_eq!(w0_from_branch_distance(f64::NAN), None);
    assert_eq!(wm1_from_branch_distance(f64::NAN), None);
    assert_eq!(w0_from_branch_distance(f64::INFINITY), Some(f64::INFINITY));
    assert_eq!(wm1_from_branch_distance(INV_E_HI), Some(f64::NEG_INFINITY));
    assert_eq!(wm1_from_branch_distance(0.5), None);
    // q = 1e−20: w = −1 ± p − p²/3, p = √(2e·1e−20).
    let p = (2.0 * core::f64::consts::E * 1e-20f64).sqrt();
    assert_eq!(w0_from_branch_distance(1e-20), Some(-1.0 + p));
    assert_eq!(wm1_from_branch_distance(1e-20), Some(-1.0 - p));
    // Consistent with the x entry points away from the branch point.
    let x = -0.2;
    let q = (x + INV_E_HI) + INV_E_LO;
    assert!(ulps(w0_from_branch_distance(q).unwrap(), w0(x).unwrap()) <= 2.0);
    assert!(ulps(wm1_from_branch_distance(q).unwrap(), wm1(x).unwrap()) <= 2.0);
}

/// Within a few thousand ulps of q = 1/e (x = q − 1/e → 0), where forming x in plain f64 cancels:
/// the q entry points agree with the x entry points at x = (q − INV_E_HI) − INV_E_LO (exact: the
/// first difference by Sterbenz, the second far below an ulp of x), and are finite.
#[test]
fn branch_distance_entry_points_near_one_over_e() {
    let mut q = INV_E_HI;
    for _ in 0..3000 {
        q = q.next_down();
        let x = (q - INV_E_HI) - INV_E_LO;
        let (a, b) = (wm1_from_branch_distance(q).unwrap(), wm1(x).unwrap());
        assert!(
            ulps(a, b) <= 1.0,
            "wm1_from_branch_distance({q:e}) = {a} vs wm1({x:e}) = {b}"
        );
        let (a, b) = (w0_from_branch_distance(q).unwrap(), w0(x).unwrap());
        assert!(
            ulps(a, b) <= 1.0,
            "w0_from_branch_distance({q:e}) = {a} vs w0({x:e}) = {b}"
        );
    }
    let mut q = INV_E_HI;
    for _ in 0..3000 {
        q = q.next_up();
        let x = (q - INV_E_HI) - INV_E_LO;
        let (a, b) = (w0_from_branch_distance(q).unwrap(), w0(x).unwrap());
        assert!(
            ulps(a, b) <= 1.0,
            "w0_from_branch_distance({q:e}) = {a} vs w0({x:e}) = {b}"
        );
    }
}

/// The log entry points agree with the x entry points wherever e^L is a normal double (the x entry
/// points see e^L rounded, so up to ~|dW/dx|·|x|·2⁻⁵³ apart: a few ulp at most here).
#[test]
fn log_argument_entry_points_agree_with_x() {
    let mut l = -700.0;
    while l < 700.0 {
        let (a, b) = (w0_of_exp(l).unwrap(), w0(libm::exp(l)).unwrap());
        assert!(ulps(a, b) <= 3.0, "w0_of_exp({l}) = {a} vs {b}");
        if l <= -1.1 {
            let (a, b) = (wm1_of_neg_exp(l).unwrap(), wm1(-libm::exp(l)).unwrap());
            assert!(ulps(a, b) <= 3.0, "wm1_of_neg_exp({l}) = {a} vs {b}");
        }
        l += 0.123_456_789;
    }
}

#[test]
fn log_argument_entry_points() {
    assert_eq!(w0_of_exp(f64::NAN), None);
    assert_eq!(w0_of_exp(f64::INFINITY), Some(f64::INFINITY));
    assert_eq!(w0_of_exp(f64::NEG_INFINITY), Some(0.0));
    assert!(ulps(w0_of_exp(1.0).unwrap(), 1.0) <= 2.0);
    // W₀(e^1e5): w + ln w = 1e5.
    let w = w0_of_exp(1e5).unwrap();
    assert!((w + w.ln() - 1e5).abs() <= 2e-11, "{w}");
    assert_eq!(wm1_of_neg_exp(f64::NAN), None);
    assert_eq!(wm1_of_neg_exp(-0.5), None);
    assert_eq!(wm1_of_neg_exp(-1.0), Some(-1.0));
    assert_eq!(wm1_of_neg_exp(f64::NEG_INFINITY), Some(f64::NEG_INFINITY));
    let w = wm1_of_neg_exp(-1e5).unwrap();
    assert!((w + (-w).ln() + 1e5).abs() <= 2e-11, "{w}");
    assert!(ulps(wm1_of_neg_exp(-2.0 + 2f64.ln()).unwrap(), -2.0) <= 4.0);
}

#[test]
fn special_values_f32() {
    assert_eq!(w0_f32(f32::NAN), None);
    assert_eq!(w0_f32(f32::INFINITY), Some(f32::INFINITY));
    assert_eq!(w0_f32(-1.0), None);
    assert_eq!(w0_f32(-0.0).map(f32::to_bits), Some((-0.0f32).to_bits()));
    assert_eq!(w0_f32(1e-45), Some(1e-45));
    assert_eq!(wm1_f32(-0.0), Some(f32::NEG_INFINITY));
    assert_eq!(wm1_f32(0.0), None);
    assert_eq!(wm1_f32(f32::NAN), None);
    assert!(wm1_f32(-1e-45).is_some_and(|w| (-110.0..-100.0).contains(&w)));
    assert!(w0_f32(f32::MAX).is_some_and(|w| (84.0..86.0).contains(&w)));
    // Near −1/e in f32: the f32 nearest −1/e (0xbebc5ab2) is below −1/e, the next one up is
    // inside the domain.
    let b = f32::from_bits(0xbebc_5ab2);
    assert_eq!(w0_f32(b), None);
    assert_eq!(wm1_f32(b), None);
    let b = f32::from_bits(0xbebc_5ab1);
    assert!(w0_f32(b).is_some_and(|w| w > -1.0 && w < -0.99));
    assert!(wm1_f32(b).is_some_and(|w| w < -1.0 && w > -1.01));
}

/// The iterative path (start value + one Halley step, or the branch-point step), independent
/// of the direct tables: a reference to compare them with.
fn w0_iterative(x: f64) -> f64 {
    let q = (x + INV_E_HI) + INV_E_LO;
    if x < -0.3 && q < Q_BRANCH {
        branch(q, 1.0)
    } else {
        halley_exp(w0_start(x), x, 0.0)
    }
}

fn wm1_iterative(x: f64) -> f64 {
    let q = (x + INV_E_HI) + INV_E_LO;
    if x < -0.3 && q < Q_BRANCH {
        branch(q, -1.0)
    } else {
        wm1_general(x, 0.0)
    }
}

/// Every piece boundary of a [`Table`] (as values of its variable) and the doubles next to it.
fn boundaries<const B: usize, const N: usize>(table: &Table<B, N>) -> Vec<f64> {
    let mut out = Vec::new();
    for (b, &(_, shift)) in (0u64..).zip(table.bins.iter()) {
        for j in 0..(1u64 << (52 - shift)) {
            let v = f64::from_bits(((table.e0 + b) << 52) | (j << shift));
            out.extend([v, v.next_down(), v.next_up(), v.next_down().next_down()]);
        }
    }
    out
}

/// The direct tables agree with the iterative path (both are within 1 ulp of W) at every piece
/// boundary, at every exponent boundary of the L / M tables and at the region thresholds.
#[test]
fn direct_tables_agree_with_the_iterative_path() {
    let mut x0 = Vec::new();
    let mut xm = Vec::new();
    x0.extend(boundaries(&W0_POS));
    x0.extend(boundaries(&W0_NEG).iter().map(|v| -v));
    xm.extend(boundaries(&WM1_NEG).iter().map(|v| -v));
    for v in boundaries(&W0_Q).into_iter().chain(boundaries(&WM1_Q)) {
        x0.push(v - INV_E_HI);
        xm.push(v - INV_E_HI);
    }
    for n in -1074..=1023 {
        let v = 2f64.powi(n);
        for m in [1.0, 1.0 + 1.0 / 256.0, 1.5, 2.0 - 1.0 / 1024.0] {
            let u = v * m;
            for w in [u, u.next_down(), u.next_up()] {
                x0.push(w);
                xm.push(-w);
            }
        }
    }
    for t in [0.3, X_TAYLOR, X_LOG, WM1_X_MIN, Q_TABLE - INV_E_HI] {
        for w in [t, t.next_down(), t.next_up()] {
            x0.extend([w, -w]);
            xm.push(-w);
        }
    }
    let mut checked = 0;
    for x in x0 {
        // The iterative path's Halley step needs |w| ≥ ~1e−4 and x·2ᵏ normal (x ≥ 1e−300).
        if x.abs() > 2.0 * X_TAYLOR && x > -INV_E_HI && x.is_finite() {
            let (a, b) = (w0(x).unwrap(), w0_iterative(x));
            assert!(ulps(a, b) <= 2.0, "w0({x:e}) = {a} vs {b}");
            checked += 1;
        }
    }
    for x in xm {
        if x < -1e-300 && x > -INV_E_HI {
            let (a, b) = (wm1(x).unwrap(), wm1_iterative(x));
            assert!(ulps(a, b) <= 2.0, "wm1({x:e}) = {a} vs {b}");
            checked += 1;
        }
    }
    assert!(checked > 10_000, "{checked}");
}

/// w·eʷ ≈ x (relative), checked where the product is representable and the problem is well
/// conditioned (|1 + w| not tiny).
fn check_identity(x: f64, w: f64) {
    if w.is_finite() && w.abs() < 700.0 && (1.0 + w).abs() > 1e-3 && x.abs() > 1e-300 {
        let back = w * w.exp();
        let tol = 1e-14 * x.abs() * (1.0 + w.abs());
        assert!(
            (back - x).abs() <= tol,
            "x = {x:e}, w = {w}, w·e^w = {back:e}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn w0_never_panics_and_inverts(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        match w0(x) {
            Some(w) => {
                prop_assert!(x >= -INV_E_HI && !w.is_nan());
                prop_assert!(w >= -1.0);
                check_identity(x, w);
            }
            None => prop_assert!(x.is_nan() || x <= BRANCH_POINT),
        }
    }

    #[test]
    fn wm1_never_panics_and_inverts(bits in any::<u64>()) {
        let x = -f64::from_bits(bits & !(1u64 << 63));
        match wm1(x) {
            Some(w) => {
                prop_assert!(w <= -1.0);
                check_identity(x, w);
            }
            None => prop_assert!(x.is_nan() || x <= BRANCH_POINT),
        }
    }

    #[test]
    fn domain_values_invert(x in -0.367_879_441_171_442_2f64..50.0) {
        let w = w0(x).unwrap_or(f64::NAN);
        check_identity(x, w);
        if x < 0.0 {
            let w = wm1(x).unwrap_or(f64::NAN);
            check_identity(x, w);
        }
    }

    #[test]
    fn entry_points_never_panic(v in any::<f64>()) {
        let _ = w0_from_branch_distance(v);
        let _ = wm1_from_branch_distance(v);
        if let Some(w) = w0_of_exp(v) { prop_assert!(!w.is_nan()); }
        if let Some(w) = wm1_of_neg_exp(v) { prop_assert!(!w.is_nan() && w <= -1.0); }
    }

    #[test]
    fn f32_never_panics(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        if let Some(w) = w0_f32(x) { prop_assert!(!w.is_nan() && w >= -1.0); }
        if let Some(w) = wm1_f32(x) { prop_assert!(!w.is_nan() && w <= -1.0); }
    }
}
