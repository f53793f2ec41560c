//! Records one arm controller's run (`ball_blocking`): turns what the run produced (accepted
//! plant states, the controller's tick records, round trips, the control thread's timing
//! records) into the report's figures, streams one CSV row per tick to `trajectory.csv`, and
//! keeps a decimated trajectory for the plot: the arm's [`KindRecorder`] inside the shared
//! [`crate::run::recorder::Recorder`]; never runs on the control thread.

use control_core::frames::{Event, StateFrame};
use control_core::servo::ServoStatus;

use super::controller::{ArmCommand, ArmState, ArmTick};
use super::report::{ArmRun, BallOutcome};
use super::scenario::Target;
use crate::run::recorder::{CsvFile, Decimated, KindRecorder};
use crate::run::session::LoopController;

/// Most weight-contact instants kept for the plot (all are counted).
pub const MAX_CONTACT_TIMES: usize = 1024;

/// Short names of servo statuses, for the CSV and the counts.
pub fn status_name(record: &ArmTick) -> &'static str {
    if record.safe {
        return "safe";
    }
    match record.output.status {
        ServoStatus::Idle => "idle",
        ServoStatus::Tracking => "tracking",
        ServoStatus::GainClamped => "gain_clamped",
        ServoStatus::Infeasible(_) => "infeasible",
        ServoStatus::Holding => "holding",
        ServoStatus::BadState => "bad_state",
        ServoStatus::Saturated(_) => "saturated",
        _ => "other",
    }
}

/// The CSV header of `trajectory.csv`.
pub const CSV_HEADER: &str = "controller,step,t_s,angle_rad,velocity_rad_s,torque_nm,stiffness_nm_per_rad,damping_nms_per_rad,status,torque_limited";

/// `trajectory.csv`, written row by row as ticks are recorded (shared by the controllers of a
/// run, one after the other).
#[derive(Debug)]
pub struct TrajectoryCsv(CsvFile);

impl TrajectoryCsv {
    /// Create the file and write its header.
    pub fn create(path: &std::path::Path) -> std::io::Result<Self> {
        CsvFile::create(path, CSV_HEADER).map(Self)
    }

    fn row(&mut self, controller: &str, r: &ArmTick) {
        let s = &r.state;
        let o = &r.output;
        // `{:?}` prints the shortest representation that round-trips: bit-exact CSV.
        self.0.line(format_args!(
            "{controller},{},{:?},{:?},{:?},{:?},{:?},{:?},{},{}",
            s.step,
            s.sim_time_s,
            s.joint.position_rad,
            s.joint.velocity_rad_s,
            o.torque_nm,
            o.stiffness_nm_per_rad,
            o.damping_nms_per_rad,
            status_name(r),
            u8::from(o.torque_limited)
        ));
    }

    /// Flush; the first write error, if any, is returned here.
    pub fn finish(self) -> std::io::Result<()> {
        self.0.finish()
    }
}

/// What a scene's body id names, for the ball-blocking scene (balls first, then weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Ball(usize),
    Weight,
}

/// What the arm's recorder measures of one controller's run.
#[derive(Debug)]
pub struct ArmRecorder {
    name: &'static str,
    balls: Vec<BallOutcome>,
    targets: Vec<Target>,
    /// Per target: (|t − t_d|, angle) of the state nearest its instant, once reached.
    arrivals: Vec<Option<(f64, f64)>>,
    next_target: usize,
    half_state_period_s: f64,
    weight_contacts: u64,
    weight_contacts_s: Vec<f64>,
    status_counts: Vec<(&'static str, u64)>,
    torque_limited_ticks: u64,
    max_damping_nms_per_rad: f64,
    trajectory: Decimated,
    csv: Option<TrajectoryCsv>,
}

impl ArmRecorder {
    /// A recorder for controller `name`; one ball per target; `csv` receives the tick rows.
    pub fn new(
        name: &'static str,
        targets: &[Target],
        state_period_s: f64,
        csv: Option<TrajectoryCsv>,
    ) -> Self {
        Self {
            name,
            balls: vec![BallOutcome::default(); targets.len()],
            targets: targets.to_vec(),
            arrivals: vec![None; targets.len()],
            next_target: 0,
            half_state_period_s: 0.5 * state_period_s,
            weight_contacts: 0,
            weight_contacts_s: Vec::new(),
            status_counts: Vec::new(),
            torque_limited_ticks: 0,
            max_damping_nms_per_rad: 0.0,
            trajectory: Decimated::default(),
            csv,
        }
    }

    fn body(&self, id: u16) -> Body {
        let i = usize::from(id);
        if i < self.balls.len() {
            Body::Ball(i)
        } else {
            Body::Weight
        }
    }

    /// Note the events and the joint `state` of an accepted state frame (`previous`: the state
    /// noted before).
    pub fn state(&mut self, frame: &StateFrame, state: ArmState, previous: Option<&ArmState>) {
        let t = frame.sim_time_s;
        for event in &frame.events {
            match *event {
                Event::ContactBegan { body } => match self.body(body.0) {
                    Body::Ball(i) => {
                        if let Some(b) = self.balls.get_mut(i) {
                            b.contact_s = Some(b.contact_s.map_or(t, |c| c.min(t)));
                        }
                    }
                    Body::Weight => {
                        self.weight_contacts += 1;
                        if self.weight_contacts_s.len() < MAX_CONTACT_TIMES {
                            self.weight_contacts_s.push(t);
                        }
                    }
                },
                Event::PlaneCrossed { body } => {
                    if let Body::Ball(i) = self.body(body.0)
                        && let Some(b) = self.balls.get_mut(i)
                    {
                        b.crossed_s.get_or_insert(t);
                    }
                }
                _ => {}
            }
        }
        self.arrival(state, previous);
        self.trajectory.push(t, state.joint.position_rad);
    }

    /// The arrival error is read from the state nearest each target's instant, once the plant
    /// has reached it (a state within half a state period of it, or past it).
    fn arrival(&mut self, state: ArmState, previous: Option<&ArmState>) {
        let t = state.sim_time_s;
        while let Some(target) = self.targets.get(self.next_target) {
            if t + self.half_state_period_s < target.time_s {
                break;
            }
            let mut best = (
                (t - target.time_s).abs(),
                (state.joint.position_rad - target.angle_rad).abs(),
            );
            if let Some(p) = previous {
                let d = (p.sim_time_s - target.time_s).abs();
                if d < best.0 {
                    best = (d, (p.joint.position_rad - target.angle_rad).abs());
                }
            }
            if let Some(slot) = self.arrivals.get_mut(self.next_target) {
                *slot = Some(best);
            }
            self.next_target += 1;
        }
    }

    /// Note one tick.
    pub fn tick(&mut self, record: &ArmTick) {
        if record.output.torque_limited {
            self.torque_limited_ticks += 1;
        }
        self.max_damping_nms_per_rad = self
            .max_damping_nms_per_rad
            .max(record.output.damping_nms_per_rad);
        let name = status_name(record);
        match self.status_counts.iter_mut().find(|(s, _)| *s == name) {
            Some((_, n)) => *n += 1,
            None => self.status_counts.push((name, 1)),
        }
        if let Some(csv) = &mut self.csv {
            csv.row(self.name, record);
        }
    }

    /// Close the record: the run's figures, and the CSV writer for the next one.
    fn close(self) -> (ArmRun, Option<TrajectoryCsv>) {
        let run = ArmRun {
            name: self.name,
            balls: self.balls,
            arrival_error_rad: self.arrivals.iter().map(|a| a.map(|(_, e)| e)).collect(),
            weight_contacts: self.weight_contacts,
            weight_contacts_s: self.weight_contacts_s,
            status_counts: self.status_counts,
            torque_limited_ticks: self.torque_limited_ticks,
            max_damping_nms_per_rad: self.max_damping_nms_per_rad,
            trajectory: self.trajectory.points,
            firmware: None,
        };
        (run, self.csv)
    }
}

impl<C: LoopController<State = ArmState, Command = ArmCommand>> KindRecorder<C> for ArmRecorder {
    type Outcome = (ArmRun, Option<TrajectoryCsv>);

    fn state(&mut self, frame: &StateFrame, state: &ArmState, previous: Option<&ArmState>) {
        Self::state(self, frame, *state, previous);
    }

    fn tick(&mut self, command: &ArmCommand, _last: Option<&ArmState>) {
        Self::tick(self, &command.record);
    }

    fn finish(self, _last: Option<&ArmState>) -> Self::Outcome {
        self.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control_core::frames::JointState;

    fn frame(step: u64, t: f64, angle: f64) -> StateFrame {
        let mut f = StateFrame::new(step + 1, step, t);
        let _ = f.push_joint(JointState {
            position_rad: angle,
            velocity_rad_s: 0.0,
        });
        f
    }

    #[test]
    fn arrival_error_is_read_at_the_target_instant_and_unreached_targets_stay_unknown() {
        let targets = [
            Target {
                time_s: 1.0,
                angle_rad: 0.5,
            },
            Target {
                time_s: 2.0,
                angle_rad: 0.0,
            },
        ];
        let mut r = ArmRecorder::new("analytic", &targets, 0.005, None);
        let mut previous = None;
        for (k, (t, a)) in [(0.995, 0.40), (1.0, 0.49), (1.005, 0.6)]
            .into_iter()
            .enumerate()
        {
            let f = frame(k as u64, t, a);
            let state = ArmState::of(&f);
            if let Some(s) = state {
                r.state(&f, s, previous.as_ref());
            }
            previous = state.or(previous);
        }
        let (run, _) = r.close();
        assert!((run.arrival_error_rad[0].unwrap_or(f64::NAN) - 0.01).abs() < 1e-12);
        assert_eq!(run.arrival_error_rad[1], None, "t = 2 s was never reached");
    }
}
