use super::*;
use proptest::prelude::*;

/// One body (isotropic inertia `i`) hanging by a ball joint from a base of inertia `base`,
/// held at the base's orientation by a PD.
struct Rig {
    bodies: [BodyMotion; 2],
    inertia: [f64; 2],
    h: f64,
    kp: f64,
    kd: f64,
}

fn quat(b: &BodyMotion) -> UnitQuaternion<f64> {
    let [w, x, y, z] = b.orientation;
    UnitQuaternion::from_quaternion(Quaternion::new(w, x, y, z))
}

/// The PD: the child towards the parent's orientation, damped on their relative angular
/// velocity (the 3D walker's law for a joint held in its parent's frame).
fn pd(kp: f64, kd: f64, bodies: &[BodyMotion], out: &mut [[f64; 3]]) -> bool {
    let (p, c) = (&bodies[0], &bodies[1]);
    let e = (quat(p) * quat(c).inverse()).scaled_axis();
    let w = Vector3::from(p.angular_velocity_rad_s) - Vector3::from(c.angular_velocity_rad_s);
    let t = e * kp + w * kd;
    out[0] = [t.x, t.y, t.z];
    true
}

impl Rig {
    /// At `angle` rad about (1, 2, 2)/3 from the base, at rest; `kd h / i` = `ratio`.
    fn new(angle: f64, ratio: f64, h: f64) -> Self {
        let i = 0.1;
        let kd = ratio * i / h;
        let axis = nalgebra::Unit::new_normalize(Vector3::new(1.0, 2.0, 2.0));
        let q = UnitQuaternion::from_axis_angle(&axis, angle);
        let c = q.as_ref();
        let mut bodies = [BodyMotion::default(); 2];
        bodies[1].orientation = [c.w, c.i, c.j, c.k];
        Self {
            bodies,
            inertia: [1e6, i],
            h,
            // k_p h = k_d / 10 (the walker's gains have k_p h / k_d = 0.03–0.05 at 200–300 Hz).
            kp: 0.1 * kd / h,
            kd,
        }
    }

    /// One period under the joint torque `t` and an external torque `ext` on the body
    /// (semi-implicit Euler, as the plant integrates).
    fn step(&mut self, t: [f64; 3], ext: Vector3<f64>) {
        let t = Vector3::from(t);
        for (k, sign) in [(0, -1.0), (1, 1.0)] {
            let b = &mut self.bodies[k];
            let extra = if k == 1 { ext } else { Vector3::zeros() };
            let w = Vector3::from(b.angular_velocity_rad_s)
                + (t * sign + extra) * (self.h / self.inertia[k]);
            let q = UnitQuaternion::from_scaled_axis(w * self.h) * quat(b);
            let c = q.as_ref();
            b.angular_velocity_rad_s = [w.x, w.y, w.z];
            b.orientation = [c.w, c.i, c.j, c.k];
        }
    }

    fn angle(&self) -> f64 {
        (quat(&self.bodies[0]) * quat(&self.bodies[1]).inverse()).angle()
    }

    /// Runs `n` periods, plain (sampled) PD or stable PD with the body's inertia estimated as
    /// `estimate` times the true one; the largest angle in the last 10 periods.
    fn run(&mut self, n: usize, stable: Option<f64>, ext: Vector3<f64>) -> f64 {
        let joints = [SpdJoint {
            parent: 0,
            child: 1,
        }];
        let mut spd = stable.map(|r| {
            let i = [[self.inertia[0]; 3], [self.inertia[1] * r; 3]];
            StablePd::new(&i, &joints, self.h).unwrap()
        });
        let (kp, kd) = (self.kp, self.kd);
        let mut worst = 0.0f64;
        for k in 0..n {
            let mut t = [[0.0; 3]];
            match spd.as_mut() {
                Some(s) => {
                    let time = k as f64 * self.h;
                    s.torques(time, &self.bodies, |b, o| pd(kp, kd, b, o), &mut t)
                        .unwrap();
                }
                None => {
                    pd(kp, kd, &self.bodies, &mut t);
                }
            }
            self.step(t[0], ext);
            if k + 10 >= n {
                worst = worst.max(self.angle());
            }
            if !self.angle().is_finite() || self.angle() > 3.0 {
                return f64::INFINITY;
            }
        }
        worst
    }
}

#[test]
fn the_sampled_pd_rings_and_diverges_where_the_stable_one_settles() {
    // k_d h / I = 10: far beyond the sampled loop's limit of 2.
    let h = 1.0 / 300.0;
    let plain = Rig::new(0.05, 10.0, h).run(600, None, Vector3::zeros());
    assert!(plain > 0.5, "the sampled PD held: {plain}");
    let stable = Rig::new(0.05, 10.0, h).run(600, Some(1.0), Vector3::zeros());
    assert!(stable < 1e-6, "the stable PD did not settle: {stable}");
    // Within its limit the sampled PD settles too (the rig is a fair test).
    let low = Rig::new(0.05, 1.0, h).run(600, None, Vector3::zeros());
    assert!(low < 1e-6, "{low}");
}

#[test]
fn an_inertia_underestimated_up_to_several_fold_stays_stable_overestimated_twofold_does_not() {
    let h = 1.0 / 300.0;
    for ratio in [3.0, 10.0, 30.0, 100.0] {
        for estimate in [0.15, 0.3, 0.7, 1.0] {
            let a = Rig::new(0.05, ratio, h).run(3000, Some(estimate), Vector3::zeros());
            assert!(a < 1e-6, "k_d h / I = {ratio}, inertia × {estimate}: {a}");
        }
        for estimate in [0.05, 2.0] {
            let a = Rig::new(0.05, ratio, h).run(3000, Some(estimate), Vector3::zeros());
            assert!(
                a > 0.5,
                "k_d h / I = {ratio}, inertia × {estimate} held: {a}"
            );
        }
    }
}

#[test]
fn a_steady_external_torque_is_held_where_the_spring_balances_it() {
    // The observer carries the external torque: the body settles where k_p θ = τ_ext, as a
    // continuous PD would.
    let h = 1.0 / 300.0;
    let ext = Vector3::new(0.0, 0.0, 2.0);
    let mut rig = Rig::new(0.0, 10.0, h);
    rig.run(6000, Some(1.0), ext);
    let expected = ext.norm() / rig.kp;
    let got = rig.angle();
    assert!(
        (got - expected).abs() < 1e-6 * expected.max(1.0),
        "{got} against {expected}"
    );
}

#[test]
fn bad_configurations_and_states_are_refused() {
    let j = [SpdJoint {
        parent: 0,
        child: 1,
    }];
    let i = [[1.0; 3]; 2];
    assert_eq!(
        StablePd::new(&i, &[], 0.01).err(),
        Some(StablePdError::Capacity)
    );
    assert_eq!(
        StablePd::new(&[], &j, 0.01).err(),
        Some(StablePdError::Capacity)
    );
    assert_eq!(
        StablePd::new(&[[1.0; 3]; 17], &j, 0.01).err(),
        Some(StablePdError::Capacity)
    );
    assert_eq!(
        StablePd::new(
            &i,
            &[SpdJoint {
                parent: 1,
                child: 1
            }],
            0.01
        )
        .err(),
        Some(StablePdError::Joint(0))
    );
    assert_eq!(
        StablePd::new(
            &i,
            &[SpdJoint {
                parent: 0,
                child: 2
            }],
            0.01
        )
        .err(),
        Some(StablePdError::Joint(0))
    );
    assert_eq!(
        StablePd::new(&[[1.0; 3], [1.0, 0.0, 1.0]], &j, 0.01).err(),
        Some(StablePdError::Inertia(1))
    );
    for p in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(StablePd::new(&i, &j, p).err(), Some(StablePdError::Period));
    }
    let mut s = StablePd::new(&i, &j, 0.01).unwrap();
    let bodies = [BodyMotion::default(); 2];
    let mut out = [[0.0; 3]];
    // Too few bodies, too little room for the torques.
    assert_eq!(
        s.torques(0.0, &bodies[..1], |b, o| pd(1.0, 1.0, b, o), &mut out),
        Err(StablePdError::State)
    );
    assert_eq!(
        s.torques(0.0, &bodies, |b, o| pd(1.0, 1.0, b, o), &mut []),
        Err(StablePdError::State)
    );
    // A refusing or non-finite controller.
    assert_eq!(
        s.torques(0.0, &bodies, |_, _| false, &mut out),
        Err(StablePdError::Controller)
    );
    assert_eq!(
        s.torques(
            0.0,
            &bodies,
            |_, o| {
                o[0] = [f64::NAN; 3];
                true
            },
            &mut out
        ),
        Err(StablePdError::NonFinite)
    );
    // A good tick, then one whose state is bad: nothing remembered, the next one unobserved.
    let r = s
        .torques(0.0, &bodies, |b, o| pd(1.0, 1.0, b, o), &mut out)
        .unwrap();
    assert!(!r.observed);
    assert_eq!(r.evaluations, 7);
    let r = s
        .torques(0.01, &bodies, |b, o| pd(1.0, 1.0, b, o), &mut out)
        .unwrap();
    assert!(r.observed);
    let mut bad = bodies;
    bad[1].orientation = [0.0; 4];
    assert_eq!(
        s.torques(0.02, &bad, |b, o| pd(1.0, 1.0, b, o), &mut out),
        Err(StablePdError::State)
    );
    let r = s
        .torques(0.03, &bodies, |b, o| pd(1.0, 1.0, b, o), &mut out)
        .unwrap();
    assert!(!r.observed);
    // A gap of more than MAX_GAP_PERIODS periods, or time going back: not observed.
    let r = s
        .torques(
            0.03 + 5.0 * 0.01,
            &bodies,
            |b, o| pd(1.0, 1.0, b, o),
            &mut out,
        )
        .unwrap();
    assert!(!r.observed);
    let r = s
        .torques(0.0, &bodies, |b, o| pd(1.0, 1.0, b, o), &mut out)
        .unwrap();
    assert!(!r.observed);
}

fn any_f64() -> impl Strategy<Value = f64> {
    any::<u64>().prop_map(f64::from_bits)
}

proptest! {
    #[test]
    fn any_state_gives_finite_torques_or_an_error(
        values in proptest::collection::vec(any_f64(), 26),
        small in proptest::collection::vec(-10.0f64..10.0, 26),
        mix in any::<u32>(),
        time in any_f64(),
        kd in 0.0f64..1e4,
    ) {
        let j = [SpdJoint { parent: 0, child: 1 }];
        let mut s = StablePd::new(&[[0.5, 0.2, 0.1], [0.05, 0.1, 0.02]], &j, 1.0 / 250.0).unwrap();
        let mut bodies = [BodyMotion::default(); 2];
        for (k, b) in bodies.iter_mut().enumerate() {
            let pick = |i: usize| if mix & (1 << (i % 32)) != 0 { values[i] } else { small[i] };
            let o = 13 * k;
            b.com_m = [pick(o), pick(o + 1), pick(o + 2)];
            b.orientation = [pick(o + 3), pick(o + 4), pick(o + 5), pick(o + 6)];
            b.velocity_m_s = [pick(o + 7), pick(o + 8), pick(o + 9)];
            b.angular_velocity_rad_s = [pick(o + 10), pick(o + 11), pick(o + 12)];
        }
        let mut out = [[0.0; 3]];
        for t in [time, time + 0.004] {
            if s.torques(t, &bodies, |b, o| pd(100.0, kd, b, o), &mut out).is_ok() {
                prop_assert!(out.iter().flatten().all(|v| v.is_finite()));
            }
        }
    }
}
