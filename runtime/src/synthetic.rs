//! A realistic tick for measurements and tests: the control-core arrival servo driving a
//! simulated 1-DoF joint (a pure inertia integrated inside the tick), re-planned periodically and
//! knocked now and then, so the servo re-solves its gains from moving state every tick.
//!
//! [`ServoOnPlant`] is a [`Controller`] with `State = JointState` and `Output = f64` (torque, N·m):
//! when the runtime hands it a state sample it uses that; without one it uses its own plant. Used
//! by `hil jitter` and by the zero-allocation test. Like every controller it must never allocate,
//! block or panic in `tick`/`safe_output`.

use control_core::servo::{
    ArrivalPlan, ArrivalServo, ConfigError, JointServo, JointState, ServoConfig,
};

use crate::controller::{Controller, TickInfo};
use crate::exchange::StateSample;

/// A pure inertia integrated with semi-implicit Euler (the plant's integrator in the design).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InertiaPlant {
    /// Moment of inertia, kg·m².
    pub inertia_kgm2: f64,
    /// Current joint state.
    pub state: JointState,
}

impl InertiaPlant {
    /// Advances by `dt_s` under `torque_nm`.
    pub fn step(&mut self, torque_nm: f64, dt_s: f64) {
        let accel = torque_nm / self.inertia_kgm2;
        self.state.velocity_rad_s += accel * dt_s;
        self.state.position_rad += self.state.velocity_rad_s * dt_s;
    }
}

/// Counts kept by [`ServoOnPlant`] (read after the run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServoOnPlantCounts {
    /// Normal ticks.
    pub ticks: u64,
    /// Safe outputs given.
    pub safe_outputs: u64,
    /// New plans issued.
    pub plans: u64,
    /// Ticks that used a state from the exchange (rather than the internal plant).
    pub external_states: u64,
}

/// The arrival servo on a simulated joint: see the module docs.
#[derive(Clone, Copy, Debug)]
pub struct ServoOnPlant {
    servo: ArrivalServo,
    plant: InertiaPlant,
    period_s: f64,
    replan_every_ticks: u64,
    knock_every_ticks: u64,
    next_target_rad: f64,
    counts: ServoOnPlantCounts,
}

/// Inertia of the simulated joint (a forearm-sized link), kg·m².
pub const PLANT_INERTIA_KGM2: f64 = 0.67;

impl ServoOnPlant {
    /// A servo for a tick period of `period_s` with a new ±0.5 rad target every second (due 0.8 s
    /// later) and a 0.3 rad/s knock every 0.37 s.
    pub fn new(period_s: f64) -> Result<Self, ConfigError> {
        let servo = ArrivalServo::new(ServoConfig {
            inertia_kgm2: PLANT_INERTIA_KGM2,
            period_s,
            torque_limit_nm: 200.0,
            ..ServoConfig::default()
        })?;
        let per_s = if period_s > 0.0 {
            (1.0 / period_s).round()
        } else {
            1.0
        };
        // Finite and ≥ 1 after max: the casts cannot saturate in a way that matters.
        let ticks_in = |s: f64| ((per_s * s).round() as u64).max(1);
        Ok(Self {
            servo,
            plant: InertiaPlant {
                inertia_kgm2: PLANT_INERTIA_KGM2,
                state: JointState::default(),
            },
            period_s,
            replan_every_ticks: ticks_in(1.0),
            knock_every_ticks: ticks_in(0.37),
            next_target_rad: 0.5,
            counts: ServoOnPlantCounts::default(),
        })
    }

    /// What it counted.
    pub fn counts(&self) -> ServoOnPlantCounts {
        self.counts
    }

    /// The simulated joint's state.
    pub fn plant_state(&self) -> JointState {
        self.plant.state
    }

    fn now_s(&self, tick: &TickInfo) -> f64 {
        tick.release_index as f64 * self.period_s
    }

    /// Advances the internal plant to this release (skipped releases included) under `torque`.
    fn step_plant(&mut self, tick: &TickInfo, torque_nm: f64) {
        let periods = tick.skipped_before.saturating_add(1) as f64;
        self.plant.step(torque_nm, self.period_s * periods);
        if tick
            .release_index
            .saturating_add(1)
            .is_multiple_of(self.knock_every_ticks)
        {
            self.plant.state.velocity_rad_s += 0.3;
        }
    }
}

impl Controller for ServoOnPlant {
    type State = JointState;
    type Output = f64;

    fn tick(&mut self, tick: &TickInfo, state: Option<StateSample<JointState>>) -> f64 {
        let now_s = self.now_s(tick);
        let measured = match state {
            Some(s) => {
                self.counts.external_states = self.counts.external_states.saturating_add(1);
                s.value
            }
            None => self.plant.state,
        };
        if tick.release_index.is_multiple_of(self.replan_every_ticks) {
            let plan = ArrivalPlan::approach(
                self.next_target_rad,
                0.05,
                measured.position_rad,
                now_s + 0.8,
            );
            if self.servo.set_plan(plan, now_s).is_ok() {
                self.counts.plans = self.counts.plans.saturating_add(1);
            }
            self.next_target_rad = -self.next_target_rad;
        }
        let out = self.servo.tick(now_s, measured, 0.0);
        self.step_plant(tick, out.torque_nm);
        self.counts.ticks = self.counts.ticks.saturating_add(1);
        out.torque_nm
    }

    fn safe_output(&mut self, tick: &TickInfo, last: Option<StateSample<JointState>>) -> f64 {
        let measured = last.map_or(self.plant.state, |s| s.value);
        let torque = self.servo.safe_torque(measured);
        self.step_plant(tick, torque);
        self.counts.safe_outputs = self.counts.safe_outputs.saturating_add(1);
        torque
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servo_moves_the_plant_towards_its_targets_and_replans() {
        let mut c = ServoOnPlant::new(0.005).expect("valid config");
        let mut info = TickInfo {
            period_ns: 5_000_000,
            ..TickInfo::default()
        };
        let mut reached = false;
        for k in 0..200 {
            info.release_index = k;
            let t = c.tick(&info, None);
            assert!(t.is_finite() && t.abs() <= 200.0);
            // Target +0.5 rad due at 0.8 s (k = 160); knocks perturb it a little.
            if k == 160 {
                reached = (c.plant_state().position_rad - 0.5).abs() < 0.05;
            }
        }
        assert!(reached, "plant at {:?}", c.plant_state());
        assert_eq!(c.counts().plans, 1);
        info.release_index = 200;
        let _ = c.tick(&info, None);
        assert_eq!(c.counts().plans, 2);
    }

    #[test]
    fn safe_output_only_damps() {
        let mut c = ServoOnPlant::new(0.001).expect("valid config");
        let s = StateSample {
            value: JointState {
                position_rad: 1.0,
                velocity_rad_s: 2.0,
            },
            seq: 1,
            published_ns: 0,
            age_ticks: 9,
            age_ns: 0,
        };
        let t = c.safe_output(&TickInfo::default(), Some(s));
        assert!(t < 0.0, "damping opposes motion: {t}");
        assert_eq!(c.counts().safe_outputs, 1);
    }
}
