//! Mass properties of the plants the controllers drive, shared by the plant (`sim-host` builds its
//! Rapier scene from them) and the controller (which feeds gravity forward from them).
//!
//! Convention for the one-DoF arm: the shoulder hinge turns about +z; the arm swings in the
//! vertical x–y plane; gravity points along −y. The joint angle θ is 0 when the arm points along
//! +x and grows counter-clockwise seen from +z, so θ = +π/2 points the arm straight up.
//!
//! Never allocates, never panics: every function is plain arithmetic on `f64`.

/// A uniform rigid arm (a box of square cross-section) on a one-DoF shoulder hinge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmModel {
    /// Length from the hinge axis to the tip, m.
    pub length_m: f64,
    /// Side of the square cross-section, m.
    pub thickness_m: f64,
    /// Mass of the arm, kg.
    pub mass_kg: f64,
    /// Magnitude of gravity, m/s² (acts along −y).
    pub gravity_m_s2: f64,
}

impl ArmModel {
    /// Moment of inertia about the hinge axis (kg·m²): a box of length L and square side a turning
    /// about an axis through one end, perpendicular to its length: M(L²/3 + a²/12).
    pub fn inertia_about_hinge_kgm2(&self) -> f64 {
        self.mass_kg
            * (self.length_m * self.length_m / 3.0 + self.thickness_m * self.thickness_m / 12.0)
    }

    /// Torque that gravity exerts about the hinge at angle `angle_rad` (N·m, positive
    /// counter-clockwise): −M g (L/2) cos θ.
    pub fn gravity_torque_nm(&self, angle_rad: f64) -> f64 {
        -self.mass_kg * self.gravity_m_s2 * 0.5 * self.length_m * libm::cos(angle_rad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test arm: 1 m long, 0.1 m thick, 2 kg, g = 9.8 m/s².
    const ARM: ArmModel = ArmModel {
        length_m: 1.0,
        thickness_m: 0.1,
        mass_kg: 2.0,
        gravity_m_s2: 9.8,
    };

    #[test]
    fn gravity_pulls_a_horizontal_arm_down_and_spares_a_vertical_one() {
        let arm = ARM;
        assert!((arm.gravity_torque_nm(0.0) + 9.8).abs() < 1e-12);
        assert!(arm.gravity_torque_nm(core::f64::consts::FRAC_PI_2).abs() < 1e-12);
    }

    #[test]
    fn inertia_of_a_box_about_its_end() {
        let i = ARM.inertia_about_hinge_kgm2();
        assert!((i - 2.0 * (1.0 / 3.0 + 0.01 / 12.0)).abs() < 1e-15);
    }
}
