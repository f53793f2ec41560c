//! The walking controllers of a `simbicon_walk` scenario, the same object in lockstep and in real
//! time: SIMBICON's basic walk ([`control_core::simbicon`]) with its fixed gains (`simbicon`,
//! kp 300, kd 30 on every joint) or with the gains our stability analysis chooses for the control
//! period and the inertia each joint moves (`simbicon_analytic`).
//!
//! A state frame is read with [`sim_host::walk::read_biped_frame`] (the in-process walk reads
//! it the same way); a frame that is not a biped's makes the run's plant "lost" (wrong plant),
//! never driven. [`WalkController::tick`] runs on the control thread in real time: it never
//! allocates, blocks or panics. A tick whose input SIMBICON refuses (NaN, time going back)
//! sends zero torque (a limp walker) and is flagged in the command and counted.

use control_core::frames::StateFrame;
use control_core::simbicon::{
    Gains, JOINTS, RoleGains, RoleInertias, Simbicon, SimbiconConfig, SimbiconError,
};
use sim_host::walk::{BipedReading, read_biped_frame};

use super::super::session::{LoopCommand, LoopController, LoopState};

/// Which gains the walker uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkLaw {
    /// SIMBICON's fixed gains (kp 300 N·m/rad, kd 30 N·m·s/rad, every joint and the torso).
    Simbicon,
    /// SIMBICON's pair as the design, moved into the sampled loop's stable region for the
    /// control period and each role's inertia (`Gains::analytic`).
    SimbiconAnalytic,
}

impl WalkLaw {
    /// Both, in report order.
    pub const ALL: [Self; 2] = [Self::Simbicon, Self::SimbiconAnalytic];

    /// The name in scenarios and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Simbicon => "simbicon",
            Self::SimbiconAnalytic => "simbicon_analytic",
        }
    }

    /// The animation file of a run with this law.
    pub const fn gif_name(self) -> &'static str {
        match self {
            Self::Simbicon => "walk_simbicon.gif",
            Self::SimbiconAnalytic => "walk_simbicon_analytic.gif",
        }
    }

    /// The law named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }

    /// The gains of this law for control period `period_s`.
    pub const fn gains(self, period_s: f64) -> Gains {
        match self {
            Self::Simbicon => Gains::SIMBICON,
            Self::SimbiconAnalytic => Gains::analytic(period_s),
        }
    }
}

/// One state of the walker as the controller sees it: the frame's reading, or the shape of a
/// frame that is not a biped's.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkState {
    /// The reading (meaningful when `shape` is `None`).
    pub reading: BipedReading,
    /// `Some((joints, bodies))` when the frame is not a biped's.
    pub shape: Option<(usize, usize)>,
    /// Step of the frame.
    pub step: u64,
    /// Time of the frame, s.
    pub sim_time_s: f64,
}

impl WalkState {
    /// The state a frame carries.
    pub fn of(frame: &StateFrame) -> Self {
        match read_biped_frame(frame) {
            Ok(reading) => Self {
                reading,
                shape: None,
                step: frame.step,
                sim_time_s: frame.sim_time_s,
            },
            Err(_) => Self {
                reading: BipedReading::default(),
                shape: Some((frame.joints.len(), frame.bodies.len())),
                step: frame.step,
                sim_time_s: frame.sim_time_s,
            },
        }
    }
}

impl LoopState for WalkState {
    fn step(&self) -> u64 {
        self.step
    }

    fn sim_time_s(&self) -> f64 {
        self.sim_time_s
    }
}

/// What a tick sends, and what the recorder keeps of it.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkTick {
    /// The plant step it answers.
    pub step: u64,
    /// Its time, s.
    pub time_s: f64,
    /// The safe state's output.
    pub safe: bool,
    /// SIMBICON refused the input (zero torque sent).
    pub refused: bool,
    /// The torques, joint order, N·m.
    pub torques_nm: [f64; JOINTS],
    /// The state machine's state after the tick (0–3).
    pub state: u8,
    /// Whether the tick changed state.
    pub transitioned: bool,
    /// Torques the limit cut this tick.
    pub limited: u8,
    /// The swing hip's target after feedback, rad.
    pub swing_hip_target_rad: f64,
}

impl LoopCommand for WalkTick {
    fn step(&self) -> u64 {
        self.step
    }

    fn is_safe(&self) -> bool {
        self.safe
    }

    fn torques(&self) -> &[f64] {
        &self.torques_nm
    }
}

/// The walker of one run.
#[derive(Debug, Clone)]
pub struct WalkController {
    walker: Simbicon,
    /// Damping of the safe state per joint, N·m·s/rad.
    safe_damping: [f64; JOINTS],
}

impl WalkController {
    /// The walker with `gains`, for control period `period_s` (which sizes the safe state's
    /// damping: each joint's kd = min(30, m/(2h)) on the inertia it moves, β = h·kd/m ≤ 0.5,
    /// a stable sampled damper at any rate).
    pub fn new(gains: Gains, period_s: f64) -> Result<Self, SimbiconError> {
        let walker = Simbicon::new(SimbiconConfig {
            gains,
            ..SimbiconConfig::default()
        })?;
        let safe_damping = Simbicon::safe_damping(&RoleInertias::SIMBICON_BIPED, period_s);
        Ok(Self {
            walker,
            safe_damping,
        })
    }

    /// The gains the walker uses (resolved when built).
    pub fn gains(&self) -> &RoleGains {
        self.walker.gains()
    }

    /// One control tick.
    pub fn tick(&mut self, s: WalkState) -> WalkTick {
        let mut out = WalkTick {
            step: s.step,
            time_s: s.sim_time_s,
            state: self.walker.state(),
            ..WalkTick::default()
        };
        match self.walker.tick(&s.reading.walker) {
            Ok(c) => {
                out.torques_nm = c.torques_nm;
                out.state = c.state;
                out.transitioned = c.transitioned;
                out.limited = u8::try_from(c.limited_count()).unwrap_or(u8::MAX);
                out.swing_hip_target_rad = c.swing_hip_target_rad;
            }
            Err(_) => out.refused = true,
        }
        out
    }

    /// The safe state: damping only on every joint's rate, within the torque limit.
    pub fn safe(&self, s: WalkState) -> WalkTick {
        let rates = s.reading.walker.joint_rate_rad_s;
        WalkTick {
            step: s.step,
            time_s: s.sim_time_s,
            safe: true,
            torques_nm: self.walker.safe_torques(&self.safe_damping, &rates),
            state: self.walker.state(),
            ..WalkTick::default()
        }
    }
}

impl LoopController for WalkController {
    type State = WalkState;
    type Command = WalkTick;

    fn state_of(frame: &StateFrame) -> Option<WalkState> {
        Some(WalkState::of(frame))
    }

    fn tick(&mut self, state: WalkState) -> WalkTick {
        Self::tick(self, state)
    }

    fn safe(&self, state: WalkState) -> WalkTick {
        Self::safe(self, state)
    }

    fn accepts(&self, state: &WalkState) -> Result<(), String> {
        match state.shape {
            None => Ok(()),
            Some((joints, bodies)) => Err(format!(
                "the plant's states carry {joints} joint(s) and {bodies} bodies with the feet's forces missing or misplaced: not the SIMBICON biped (6 joints, 7 bodies)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control_core::frames::JointState;

    #[test]
    fn a_frame_that_is_not_a_bipeds_is_refused_with_its_shape() {
        let mut f = StateFrame::new(1, 0, 0.0);
        let _ = f.push_joint(JointState::default());
        let s = WalkState::of(&f);
        assert_eq!(s.shape, Some((1, 0)));
        let c = WalkController::new(Gains::SIMBICON, 1.0 / 300.0).unwrap();
        let e = c.accepts(&s).unwrap_err();
        assert!(e.contains("1 joint(s) and 0 bodies"), "{e}");
    }

    #[test]
    fn the_safe_state_damps_within_the_limit_and_is_stable_for_the_rate() {
        let c = WalkController::new(Gains::SIMBICON, 1.0 / 200.0).unwrap();
        let mut s = WalkState::default();
        s.reading.walker.joint_rate_rad_s = [1.0, -2.0, 1e6, f64::NAN, 0.0, 3.0];
        let out = c.safe(s);
        assert!(out.safe);
        // Hip: min(30, 3.09/(2·0.005)) = 30; ankle: 0.012/0.01 = 1.2 N·m·s/rad, limited.
        assert_eq!(out.torques_nm[0], -30.0);
        assert_eq!(out.torques_nm[2], -1000.0);
        assert_eq!(out.torques_nm[3], 0.0);
        assert!((out.torques_nm[5] + 3.0 * 1.2).abs() < 1e-9);
        let m = RoleInertias::SIMBICON_BIPED;
        for (j, kd) in c.safe_damping.iter().enumerate() {
            let inertia = [m.swing_hip_kgm2, m.swing_knee_kgm2, m.swing_ankle_kgm2][j % 3];
            assert!(kd * (1.0 / 200.0) / inertia <= 0.5 + 1e-12);
        }
    }

    #[test]
    fn refused_input_sends_zero_torque_and_says_so() {
        let mut c = WalkController::new(Gains::analytic(1.0 / 300.0), 1.0 / 300.0).unwrap();
        let mut s = WalkState::default();
        s.reading.walker.torso_pitch_rad = f64::NAN;
        let out = c.tick(s);
        assert!(out.refused);
        assert_eq!(out.torques_nm, [0.0; JOINTS]);
    }

    #[test]
    fn laws_have_one_name_each_way() {
        for l in WalkLaw::ALL {
            assert_eq!(WalkLaw::from_name(l.name()), Some(l));
            assert!(l.gif_name().contains(l.name()));
        }
        assert_eq!(WalkLaw::from_name("pd"), None);
    }
}
