//! The sampled-loop lines drawn on the heat maps: where SIMBICON's fixed pair (300, 30·S) stops
//! being a stable loop on the lightest role inertia, and Carensac et al.'s hand-tuned β = 0.5.
//!
//! A PD pair (k, γ) sampled every h on inertia m, integrated by semi-implicit Euler, is stable
//! exactly in the triangle α > 0, β > 0, α + 2β < 4 with α = h²k/m and β = hγ/m
//! (`control_core::simbicon`, "The rule and its derivation"; `Integrator::is_stable`). With
//! k = 300 and γ = 30·S the edge α + 2β = 4 is S_max = (4 − h²·300/m)·m/(2·h·30).

use control_core::simbicon::RoleInertias;
use serde::{Deserialize, Serialize};

use super::cell::{DESIGN_KD, DESIGN_KP};

/// The lightest inertia a role of [`RoleInertias::SIMBICON_BIPED`] moves, kg·m² (an ankle:
/// 0.012).
pub fn lightest_inertia_kgm2() -> f64 {
    let m = RoleInertias::SIMBICON_BIPED;
    [
        m.torso_kgm2,
        m.swing_hip_kgm2,
        m.swing_knee_kgm2,
        m.swing_ankle_kgm2,
        m.stance_knee_kgm2,
        m.stance_ankle_kgm2,
    ]
    .into_iter()
    .fold(f64::INFINITY, f64::min)
}

/// The largest damping scale S at which (300, 30·S) is a stable sampled loop at `rate_hz` on
/// the lightest role inertia (the loop is stable for 0 < S < this; ≤ 0: at no S).
pub fn s_max_stable(rate_hz: f64) -> f64 {
    let h = 1.0 / rate_hz;
    let m = lightest_inertia_kgm2();
    (4.0 - h * h * DESIGN_KP / m) * m / (2.0 * h * DESIGN_KD)
}

/// The damping scale at which β = hγ/m = 0.5 on the lightest role inertia (Carensac et al.'s
/// hand-tuned working line).
pub fn s_beta_half(rate_hz: f64) -> f64 {
    let h = 1.0 / rate_hz;
    0.5 * lightest_inertia_kgm2() / (h * DESIGN_KD)
}

/// Both lines at one rate, as study.json records them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// Control rate, Hz.
    pub rate_hz: f64,
    /// [`s_max_stable`].
    pub s_max_stable: f64,
    /// [`s_beta_half`].
    pub s_beta_half: f64,
}

/// Both lines at `rate_hz`.
pub fn bound(rate_hz: f64) -> Bound {
    Bound {
        rate_hz,
        s_max_stable: s_max_stable(rate_hz),
        s_beta_half: s_beta_half(rate_hz),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control_core::gains::Integrator;

    fn stable(rate_hz: f64, scale: f64) -> bool {
        let h = 1.0 / rate_hz;
        let m = lightest_inertia_kgm2();
        Integrator::SemiImplicitEuler.is_stable(h * h * DESIGN_KP / m, h * DESIGN_KD * scale / m)
    }

    #[test]
    fn the_bound_is_the_edge_of_is_stable() {
        assert_eq!(lightest_inertia_kgm2(), 0.012);
        for rate in [
            2000.0, 1255.0, 1000.0, 750.0, 500.0, 300.0, 250.0, 200.0, 100.0,
        ] {
            let s = s_max_stable(rate);
            assert!(s > 0.0, "{rate}");
            assert!(stable(rate, 0.999 * s), "{rate} Hz just inside");
            assert!(!stable(rate, 1.001 * s), "{rate} Hz just outside");
            assert!(stable(rate, 0.01 * s));
        }
        // SIMBICON's own pair (S = 1) is stable on an ankle only above 1255 Hz.
        assert!(s_max_stable(1300.0) > 1.0 && s_max_stable(1200.0) < 1.0);
        // Known values: 1.5975 at 2 kHz, 0.135 at 200 Hz.
        assert!((s_max_stable(2000.0) - 1.5975).abs() < 1e-9);
        assert!((s_max_stable(200.0) - 0.135).abs() < 1e-9);
        // β = 0.5 exactly.
        for rate in [2000.0, 300.0] {
            let b = 30.0 * s_beta_half(rate) / rate / 0.012;
            assert!((b - 0.5).abs() < 1e-12);
        }
    }
}
