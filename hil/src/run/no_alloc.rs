//! Zero allocations on the control thread, for every controller `hil` ships: the guarantee of
//! `runtime/tests/no_alloc.rs` (a counting global allocator with a per-thread counter, around
//! thousands of ticks through the real exchange) extended to the arm's five servos, the chain's
//! eight laws, the walker's two, Dynamo's three and `robot_push`'s two (those on a small floating
//! robot of the tests', the others each built as `hil run` builds it from the shipped scenario
//! file), and driven the way [`super::realtime::drive`] drives it: hil's own
//! [`OnThread`] adapter on a [`PeriodicBuilder`] thread with a watchdog and a telemetry channel,
//! fed states converted from plausible, time-varying [`StateFrame`]s by the controller's own
//! [`LoopController::state_of`] (and passed by its [`LoopController::accepts`]), then starved so
//! that the watchdog trips and the safe output runs. The same harness catches one allocation
//! injected into one tick.
//!
//! The allocator below is the whole test binary's (one `#[global_allocator]` per binary); it only
//! counts, per thread, and forwards to [`System`], so hil's other unit tests are unaffected.

use std::path::Path;
use std::time::Duration;

use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
use control_core::frames::{BodyId, BodyMotion, ContactForce, Event, JointState, StateFrame};
use runtime::alloc_count::{CountingAllocator, allocations_on_this_thread};
use runtime::{Controller, PeriodicBuilder, RunReport, StateSample, TickInfo, channels, telemetry};

use super::arm::controller::ArmController;
use super::arm::scenario::Scenario;
use super::biped::WalkScenario;
use super::biped::controller::WalkController;
use super::chain::ChainScenario;
use super::chain::controller::{ChainController, ChainLaw};
use super::dynamo::controller::{DynamoController, DynamoLaw, GainScope};
use super::dynamo::{DynamoScenario, GRAVITY_M_S2, QpOut};
use super::realtime::OnThread;
use super::session::{LoopCommand, LoopController};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The pace of a probed run: the control thread's rate, its ticks, and the release before which
/// states are published (the watchdog then trips).
#[derive(Debug, Clone, Copy)]
struct Pace {
    rate_hz: f64,
    ticks: u64,
    feed_until: u64,
}

/// 10,000 ticks at 10 kHz, so that they take a second; states for the first 7,000.
const FAST: Pace = Pace {
    rate_hz: 10_000.0,
    ticks: 10_000,
    feed_until: 7_000,
};

/// A balance QP's probed run solved ticks (not only refused states it cannot map), and ran the QP
/// as the controller poses it on most ticks: torque limits far from binding left out.
fn check_qp_ran(name: &str, qp: &QpOut) {
    eprintln!(
        "no_alloc: {name}: {} of {} QP ticks solved, {:.2} torque limits left out a tick",
        qp.solved, qp.ticks, qp.mean_limits_left_out
    );
    assert!(qp.solved > 0, "{name}: no QP tick solved");
    assert!(
        qp.mean_limits_left_out > 0.0,
        "{name}: no tick left a limit out"
    );
}

/// For a controller whose tick takes a large part of a millisecond (the balance QP): 2,000 ticks at
/// its scenario's 200 Hz (10 s), states for the first 1,400.
const QP: Pace = Pace {
    rate_hz: 200.0,
    ticks: 2_000,
    feed_until: 1_400,
};

/// For the walker with its ground-contact stabiliser (a tick of 0.1–0.2 ms): 4,000 ticks at
/// 2 kHz (2 s), states for the first 2,800.
const STABILISED: Pace = Pace {
    rate_hz: 2_000.0,
    ticks: 4_000,
    feed_until: 2_800,
};

/// Ticks without a fresh state before the safe output.
const WATCHDOG_TICKS: u64 = 10;
/// Fresh states a run must consume at least, however many releases it skipped.
const MIN_FRESH_STATES: u64 = 200;
/// Safe outputs a run must give after its last fresh state: the unfed tail is 600 ticks or
/// more, so this leaves the feeding thread 400 ticks of lag.
const MIN_SAFE_TAIL: u64 = 200;
/// SCHED_FIFO where permitted (the runtime falls back to normal scheduling and says so).
const PRIORITY: u8 = 80;
/// As [`super::realtime::drive`]'s record channel.
const TELEMETRY_CAPACITY: usize = 8192;

/// hil's [`OnThread`] adapter, as [`super::realtime::drive`] spawns it, wrapped to record how
/// many allocations the control thread made from the start of its first tick to the start of
/// its latest one: whole loop iterations, runtime included (summaries, telemetry `try_send`,
/// output queue, state exchange); and how many fresh states it consumed and safe outputs it
/// gave.
struct AllocationProbe<C> {
    inner: OnThread<C>,
    at_first_tick: Option<u64>,
    since_first_tick: u64,
    /// Allocate (one `Box`) in the first tick with at least this release index: the probe must
    /// see it.
    inject_at: Option<u64>,
    fresh_states: u64,
    safe_outputs: u64,
    /// The release from which no more states are published ([`Pace::feed_until`]).
    feed_until: u64,
    /// Ticks run (normal and safe) at releases before `feed_until`: under load the thread
    /// skips releases, so these can be fewer than `feed_until`.
    fed_window_ticks: u64,
    /// Ticks seen (normal and safe).
    ticks_seen: u64,
    /// The ordinal (1-based, in `ticks_seen`) of the last tick with a fresh state.
    last_fresh_tick: u64,
    /// Safe outputs since that tick.
    safe_since_fresh: u64,
}

impl<C> AllocationProbe<C> {
    fn new(controller: C, feed_until: u64, inject_at: Option<u64>) -> Self {
        Self {
            inner: OnThread(controller),
            at_first_tick: None,
            since_first_tick: 0,
            inject_at,
            fresh_states: 0,
            safe_outputs: 0,
            feed_until,
            fed_window_ticks: 0,
            ticks_seen: 0,
            last_fresh_tick: 0,
            safe_since_fresh: 0,
        }
    }

    fn probe(&mut self, tick: &TickInfo) {
        let now = allocations_on_this_thread();
        match self.at_first_tick {
            None => self.at_first_tick = Some(now),
            Some(first) => self.since_first_tick = now - first,
        }
        self.fed_window_ticks += u64::from(tick.release_index < self.feed_until);
        // The first tick at or past the index: under load the thread may skip releases, and an
        // exact index could be one of them.
        if self.inject_at.is_some_and(|at| tick.release_index >= at) {
            self.inject_at = None;
            std::hint::black_box(Box::new(tick.release_index));
        }
    }
}

impl<C: LoopController> Controller for AllocationProbe<C> {
    type State = C::State;
    type Output = C::Command;

    fn tick(&mut self, tick: &TickInfo, state: Option<StateSample<C::State>>) -> C::Command {
        self.probe(tick);
        self.ticks_seen += 1;
        if state.as_ref().is_some_and(StateSample::is_fresh) {
            self.fresh_states += 1;
            self.last_fresh_tick = self.ticks_seen;
            self.safe_since_fresh = 0;
        }
        self.inner.tick(tick, state)
    }

    fn safe_output(&mut self, tick: &TickInfo, last: Option<StateSample<C::State>>) -> C::Command {
        self.probe(tick);
        self.ticks_seen += 1;
        self.safe_outputs += 1;
        self.safe_since_fresh += 1;
        self.inner.safe_output(tick, last)
    }
}

/// What a probed run gives back.
struct Probed {
    name: String,
    pace: Pace,
    report: RunReport,
    since_first_tick: u64,
    ticked: bool,
    fresh_states: u64,
    /// Ticks run at releases before [`Pace::feed_until`].
    fed_window_ticks: u64,
    safe_outputs: u64,
    /// Ticks after the last one with a fresh state (the unfed tail).
    tail_ticks: u64,
    /// Safe outputs in that tail.
    safe_in_tail: u64,
    outputs_received: u64,
    safe_received: u64,
    records_received: u64,
}

impl Probed {
    /// One line for `--nocapture`.
    fn line(&self) -> String {
        let c = &self.report.counters;
        format!(
            "{:<32} ticks {} fresh states {} (of {} ticks before the feed stops) safe outputs {} (received {}; {} in the unfed tail of {}) outputs {} dropped {} telemetry {} sched_fifo {} allocations after the first tick {}",
            self.name,
            c.ticks,
            self.fresh_states,
            self.fed_window_ticks,
            self.safe_outputs,
            self.safe_received,
            self.safe_in_tail,
            self.tail_ticks,
            self.outputs_received,
            c.outputs_dropped,
            self.records_received,
            self.report.sched_fifo,
            self.since_first_tick
        )
    }

    /// Everything but the allocation count: the run exercised what it must.
    fn assert_exercised(&self) {
        let c = &self.report.counters;
        let name = &self.name;
        let Pace {
            ticks, feed_until, ..
        } = self.pace;
        assert_eq!(c.ticks, ticks, "{name}: {c:?}");
        assert!(self.ticked, "{name}: never ticked");
        // Half of the ticks the thread ran while states were published, not of the releases:
        // a loaded machine makes the thread skip releases it overran (counted in the report),
        // which says nothing about the exchange.
        assert!(
            self.fresh_states > self.fed_window_ticks / 2 && self.fresh_states >= MIN_FRESH_STATES,
            "{name}: the exchange was exercised: {} fresh states in {} ticks before release {feed_until} \
             ({} releases skipped in the run)",
            self.fresh_states,
            self.fed_window_ticks,
            c.skipped_releases
        );
        // The unfed tail starts when the feeding thread, a normal thread behind the
        // real-time one, has published its last state: under load it lags the release index
        // `feed_until` by as much as the output queue holds. The tail is then exact: normal
        // ticks while fewer than `WATCHDOG_TICKS` have passed without a fresh state, safe
        // outputs from then on.
        assert_eq!(
            self.safe_in_tail,
            self.tail_ticks.saturating_sub(WATCHDOG_TICKS - 1),
            "{name}: safe outputs in the unfed tail of {} ticks",
            self.tail_ticks
        );
        assert!(
            self.safe_in_tail >= MIN_SAFE_TAIL,
            "{name}: the safe path was exercised: {} safe outputs after the last fresh state \
             (the feeding thread lagged {} ticks behind the release it stops at)",
            self.safe_in_tail,
            (ticks - feed_until).saturating_sub(self.tail_ticks)
        );
        assert_eq!(self.safe_outputs, c.safe_ticks, "{name}");
        assert!(c.watchdog_trips >= 1, "{name}: {c:?}");
        assert_eq!(self.outputs_received + c.outputs_dropped, ticks, "{name}");
        assert!(self.safe_received > 0, "{name}");
        assert_eq!(c.telemetry_sent + c.telemetry_dropped, ticks, "{name}");
        assert_eq!(self.records_received, c.telemetry_sent, "{name}");
    }
}

/// Runs `controller` for `pace.ticks` ticks at `pace.rate_hz` on a periodic thread through the
/// real exchange: the state of `frame(step, t)` (step k at k · `state_period_s`) is published
/// before the thread starts and then once per output received, until `pace.feed_until`; every
/// output goes to `on_output`.
fn probed_run<C: LoopController>(
    name: &str,
    pace: Pace,
    controller: C,
    state_period_s: f64,
    frame: impl Fn(u64, f64) -> StateFrame,
    inject_at: Option<u64>,
    mut on_output: impl FnMut(&C::Command),
) -> Probed {
    // As the realtime driver: a clone checks every state before it is published.
    let checker = controller.clone();
    let state_at = |step: u64| {
        let f = frame(step, step as f64 * state_period_s);
        let state = C::state_of(&f)
            .unwrap_or_else(|| panic!("{name}: no state in the frame of step {step}"));
        if let Err(e) = checker.accepts(&state) {
            panic!("{name}: the state of step {step} is refused: {e}");
        }
        state
    };
    let (mut io, ctl) = channels::<C::State, C::Command>(256);
    io.states.publish(state_at(0));
    let (records, record_rx) = telemetry::channel(TELEMETRY_CAPACITY);
    let rt = PeriodicBuilder::from_rate_hz(pace.rate_hz)
        .expect("valid rate")
        .priority(PRIORITY)
        .watchdog_ticks(WATCHDOG_TICKS)
        .max_ticks(pace.ticks)
        .telemetry(records)
        .name("no-alloc")
        .spawn(
            AllocationProbe::new(controller, pace.feed_until, inject_at),
            ctl,
        )
        .expect("control thread starts");
    let (mut outputs_received, mut safe_received, mut records_received) = (0_u64, 0_u64, 0_u64);
    while !rt.is_finished() || !io.outputs.is_abandoned() {
        records_received += record_rx.try_iter().count() as u64;
        let Some(out) = io.outputs.recv_timeout(Duration::from_millis(50)) else {
            if rt.is_finished() {
                break;
            }
            continue;
        };
        outputs_received += 1;
        if out.value.is_safe() {
            safe_received += 1;
        }
        on_output(&out.value);
        if out.release_index < pace.feed_until {
            io.states.publish(state_at(out.release_index + 1));
        }
    }
    // Drain what is still queued.
    while let Some(out) = io.outputs.try_recv() {
        outputs_received += 1;
        safe_received += u64::from(out.value.is_safe());
        on_output(&out.value);
    }
    let outcome = rt.join().expect("control thread ends cleanly");
    records_received += record_rx.try_iter().count() as u64;
    let probe = outcome.controller;
    Probed {
        name: name.to_owned(),
        pace,
        report: outcome.report,
        since_first_tick: probe.since_first_tick,
        ticked: probe.at_first_tick.is_some(),
        fresh_states: probe.fresh_states,
        fed_window_ticks: probe.fed_window_ticks,
        safe_outputs: probe.safe_outputs,
        tail_ticks: probe.ticks_seen - probe.last_fresh_tick,
        safe_in_tail: probe.safe_since_fresh,
        outputs_received,
        safe_received,
        records_received,
    }
}

/// Print every run, check each was exercised, then that none allocated (all runs are listed
/// before any fails, so a report names every allocating controller at once).
fn assert_none_allocated(runs: &[Probed]) {
    for r in runs {
        eprintln!("no_alloc: {}", r.line());
    }
    for r in runs {
        r.assert_exercised();
    }
    let allocating: Vec<String> = runs
        .iter()
        .filter(|r| r.since_first_tick != 0)
        .map(|r| format!("{} ({} allocations)", r.name, r.since_first_tick))
        .collect();
    assert!(
        allocating.is_empty(),
        "the control thread allocated after its first tick: {}",
        allocating.join(", ")
    );
}

/// A shipped scenario file.
macro_rules! scenario_file {
    ($name:literal) => {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/", $name))
    };
}

/// A few events, now and then, as a plant reports them (no controller reads them).
fn add_events(f: &mut StateFrame, step: u64) {
    let body = BodyId(u16::try_from(step / 400 % 8).unwrap_or(0) + 1);
    match step % 400 {
        0 => {
            let _ = f.push_event(Event::ContactBegan { body });
        }
        1 => {
            let _ = f.push_event(Event::ContactEnded { body });
            let _ = f.push_event(Event::PlaneCrossed { body });
        }
        _ => {}
    }
}

/// A pitch (rotation about +z) as a quaternion, w, x, y, z.
fn pitch(rad: f64) -> [f64; 4] {
    let (s, c) = (0.5 * rad).sin_cos();
    [c, 0.0, 0.0, s]
}

// ---- the arm ------------------------------------------------------------------------------

/// The ball-blocking arm's frame: the shoulder swinging through the targets' range, a ball
/// flying in, and its events.
fn arm_frame(step: u64, t: f64) -> StateFrame {
    let mut f = StateFrame::new(step + 1, step, t);
    let _ = f.push_joint(JointState {
        position_rad: 0.6 + 0.5 * (1.3 * t).sin(),
        velocity_rad_s: 0.65 * (1.3 * t).cos(),
    });
    let _ = f.push_body(BodyMotion {
        com_m: [2.0 - (t % 1.0) * 2.0, 0.5, 0.0],
        orientation: pitch(3.0 * t),
        velocity_m_s: [-2.0, 0.0, 0.0],
        angular_velocity_rad_s: [0.0, 0.0, 3.0],
    });
    add_events(&mut f, step);
    f
}

/// The arm's controllers of one ball-blocking scenario file, built as `run_one` builds them.
fn arm_runs(path: &Path, inject_at: Option<u64>, only_first: bool) -> Vec<Probed> {
    let (scenario, file) = Scenario::load(Some(path)).expect("the shipped scenario loads");
    let state_period = super::arm::state_period_s(&scenario);
    let mut kinds = scenario.controller_kinds();
    if only_first {
        kinds.truncate(1);
    }
    kinds
        .into_iter()
        .map(|kind| {
            let controller = ArmController::new(kind, &scenario, state_period)
                .unwrap_or_else(|e| panic!("{file}: controller {}: {e}", kind.name()));
            probed_run(
                &format!("arm {}", kind.name()),
                FAST,
                controller,
                state_period,
                arm_frame,
                inject_at,
                |_| {},
            )
        })
        .collect()
}

#[test]
fn no_alloc_arm_controllers() {
    let mut runs = arm_runs(scenario_file!("ball_blocking.toml"), None, false);
    runs.extend(arm_runs(
        scenario_file!("ball_blocking_firmware.toml"),
        None,
        false,
    ));
    let mut names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names,
        [
            "arm analytic",
            "arm analytic_f32",
            "arm analytic_fixed",
            "arm fixed_gain",
            "arm static_timing"
        ],
        "the five arm controllers ran"
    );
    assert_none_allocated(&runs);
}

/// The probe is not blind: one allocation in one tick of the same run is seen.
#[test]
fn no_alloc_an_allocation_injected_into_one_tick_is_caught() {
    let runs = arm_runs(scenario_file!("ball_blocking.toml"), Some(1_000), true);
    let [run] = runs.as_slice() else {
        panic!("one run")
    };
    eprintln!("no_alloc: injected: {}", run.line());
    run.assert_exercised();
    assert_eq!(run.since_first_tick, 1, "exactly the injected allocation");
}

// ---- the chain ----------------------------------------------------------------------------

/// Every law of a chain scenario file, built as `chain::run_scenario` builds them; the
/// keyframes (hand targets) reached are checked.
fn chain_runs(path: &Path) -> Vec<Probed> {
    let scenario = ChainScenario::load(path).expect("the shipped scenario loads");
    let setup = super::chain::setup(&scenario).expect("the scenario sets up");
    let (model, effort, plant_joints) = (setup.model, setup.effort, setup.plant_joints);
    let hand = scenario.hand.as_ref().map(|hand| {
        super::chain::controller::HandPoint::of(&setup.robot, &hand.link, hand.point_m)
            .expect("hand.link is a moving link")
    });
    let hand_body = hand.map(|h| BodyId(u16::try_from(h.body).expect("a body id")));
    let state_period = scenario.control_period_s().max(scenario.physics_dt_s);
    let joints = plant_joints.len();
    let targets = scenario.keyframes.len().max(scenario.hand_targets.len());
    let frame = move |step: u64, t: f64| {
        let mut f = StateFrame::new(step + 1, step, t);
        for j in 0..joints {
            let (w, phase) = (1.1 + 0.3 * j as f64, 0.7 * j as f64);
            let _ = f.push_joint(JointState {
                position_rad: 0.5 * (w * t + phase).sin(),
                velocity_rad_s: 0.5 * w * (w * t + phase).cos(),
            });
        }
        if let Some(body) = hand_body {
            // The wall pushing the hand back, some of the time.
            let pressing = (0.9 * t).sin().max(0.0);
            let _ = f.push_contact(ContactForce {
                point: 0,
                body,
                force_n: [-12.0 * pressing, 3.0 * pressing, 0.0],
            });
        }
        add_events(&mut f, step);
        f
    };
    ChainLaw::of(scenario.kind)
        .iter()
        .map(|&law| {
            let controller =
                ChainController::new(law, &scenario, model.clone(), &effort, state_period, hand)
                    .unwrap_or_else(|e| panic!("controller {}: {e}", law.name()));
            let (mut last_keyframe, mut model_errors) = (0, 0_u64);
            let run = probed_run(
                &format!("chain {}", law.name()),
                FAST,
                controller,
                state_period,
                frame,
                None,
                |cmd| {
                    last_keyframe = last_keyframe.max(cmd.record.keyframe);
                    model_errors += u64::from(cmd.record.model_error);
                },
            );
            // The states drove the law's own path, through every keyframe (hand target).
            assert_eq!(model_errors, 0, "{}: model errors", run.name);
            assert_eq!(last_keyframe + 1, targets, "{}: keyframes", run.name);
            run
        })
        .collect()
}

#[test]
fn no_alloc_chain_on_the_beat_controllers() {
    let runs = chain_runs(scenario_file!("on_the_beat.toml"));
    assert_eq!(runs.len(), ChainLaw::BEAT.len());
    assert_none_allocated(&runs);
}

#[test]
fn no_alloc_pose_tour_controllers() {
    // The robot plant's model: a fixed-base tree (arm3 through the robot loader).
    let runs = chain_runs(scenario_file!("pose_tour.toml"));
    assert_eq!(runs.len(), ChainLaw::TOUR.len());
    assert_none_allocated(&runs);
}

#[test]
fn no_alloc_chain_kenwright_reach_controllers() {
    let runs = chain_runs(scenario_file!("kenwright_reach.toml"));
    assert_eq!(runs.len(), ChainLaw::REACH.len());
    assert_none_allocated(&runs);
}

// ---- the walker ---------------------------------------------------------------------------

/// A biped's frame (6 joints, 7 bodies, the feet's ground forces as contacts 0 and 1): legs
/// swinging, walking forward at 1 m/s, the feet touching down in turn (double support between)
/// so that SIMBICON's state machine goes round.
fn walk_frame(step: u64, t: f64) -> StateFrame {
    use sim_host::biped::{BODIES, JOINTS, LEFT_FOOT, RIGHT_FOOT};
    let mut f = StateFrame::new(step + 1, step, t);
    let w = std::f64::consts::TAU / 0.8;
    let swing = (w * t).sin();
    let swing_rate = w * (w * t).cos();
    for j in 0..JOINTS {
        let side = if j < 3 { 1.0 } else { -1.0 };
        let amplitude = [0.4, 0.3, 0.15][j % 3];
        let _ = f.push_joint(JointState {
            position_rad: side * amplitude * swing,
            velocity_rad_s: side * amplitude * swing_rate,
        });
    }
    let x = t;
    // Torso, left thigh, shin, foot, right thigh, shin, foot: (x offset, height, pitch sign).
    let layout: [(f64, f64, f64); BODIES] = [
        (0.0, 1.18, 0.0),
        (0.1, 0.7, 1.0),
        (0.15, 0.3, 0.7),
        (0.15, 0.03, 0.2),
        (-0.1, 0.7, -1.0),
        (-0.15, 0.3, -0.7),
        (-0.15, 0.03, -0.2),
    ];
    for (dx, y, sign) in layout {
        let p = if sign == 0.0 {
            0.05 * (0.5 * w * t).sin()
        } else {
            0.4 * sign * swing
        };
        let rate = if sign == 0.0 {
            0.025 * w * (0.5 * w * t).cos()
        } else {
            0.4 * sign * swing_rate
        };
        let _ = f.push_body(BodyMotion {
            com_m: [x + dx * swing, y, 0.0],
            orientation: pitch(p),
            velocity_m_s: [1.0 + dx * swing_rate, 0.0, 0.0],
            angular_velocity_rad_s: [0.0, 0.0, rate],
        });
    }
    // Left down for the first 55% of each 0.8 s cycle, right from 45% to 100%.
    let phase = (t / 0.8).fract();
    for (foot, down) in [(LEFT_FOOT, phase < 0.55), (RIGHT_FOOT, phase >= 0.45)] {
        let _ = f.push_contact(ContactForce {
            point: 0,
            body: BodyId(u16::try_from(foot).unwrap_or(0)),
            force_n: if down { [20.0, 450.0, 0.0] } else { [0.0; 3] },
        });
    }
    add_events(&mut f, step);
    f
}

#[test]
fn no_alloc_walk_controllers() {
    let scenario =
        WalkScenario::load(scenario_file!("simbicon_walk.toml")).expect("the shipped scenario");
    let period = scenario.control_period_s();
    let runs: Vec<Probed> = scenario
        .laws()
        .into_iter()
        .map(|law| {
            let controller = WalkController::new(law.gains(period), period)
                .unwrap_or_else(|e| panic!("controller {}: {e}", law.name()));
            let (mut transitions, mut refused, mut states) = (0_u64, 0_u64, [false; 4]);
            let run = probed_run(
                &format!("walk {}", law.name()),
                FAST,
                controller,
                period,
                walk_frame,
                None,
                |cmd| {
                    if !cmd.safe {
                        transitions += u64::from(cmd.transitioned);
                        refused += u64::from(cmd.refused);
                        if let Some(s) = states.get_mut(usize::from(cmd.state)) {
                            *s = true;
                        }
                    }
                },
            );
            assert_eq!(refused, 0, "{}: refused ticks", run.name);
            assert!(transitions > 10, "{}: {transitions} transitions", run.name);
            assert_eq!(states, [true; 4], "{}: every state visited", run.name);
            run
        })
        .collect();
    assert_eq!(runs.len(), 2);
    assert_none_allocated(&runs);
}

// ---- Dynamo's humanoid --------------------------------------------------------------------

/// The state frame of step `step` at `t` of the humanoid `model` swaying, twisting its joints and
/// drifting forward, with the ground's force on the feet and toes.
fn humanoid_frame(
    model: &robot_model::humanoid::HumanoidModel,
) -> impl Fn(u64, f64) -> StateFrame + '_ {
    use robot_model::humanoid::{BodyPose, JointKind};
    // Each joint's axis of motion here: its hinge, its first free axis, or a tilted one.
    let axes: Vec<Vector3<f64>> = model
        .joints
        .iter()
        .map(|j| match j.kind {
            JointKind::Hinge { axis, .. } => Vector3::new(axis[0], axis[1], axis[2]),
            JointKind::TwoAxis { axes, .. } => Vector3::new(axes[0][0], axes[0][1], axes[0][2]),
            JointKind::Ball { .. } => Vector3::new(0.3, 0.2, 1.0).normalize(),
        })
        .collect();
    // Forward kinematics of the humanoid swaying, twisting its joints and drifting forward.
    let poses = move |t: f64| {
        let root_q = UnitQuaternion::from_scaled_axis(Vector3::new(
            0.05 * (1.7 * t).sin(),
            0.4 * t,
            0.08 * (1.1 * t).sin(),
        ));
        let q = root_q.quaternion();
        let root = BodyPose {
            com_m: [0.2 * t.sin(), 1.0 + 0.02 * (2.3 * t).sin(), 0.1 * t],
            orientation: [q.w, q.i, q.j, q.k],
        };
        let rotations: Vec<[f64; 4]> = axes
            .iter()
            .enumerate()
            .map(|(j, a)| {
                let angle = 0.3 * (1.3 * t + 0.5 * j as f64).sin();
                let q = UnitQuaternion::from_scaled_axis(a * angle);
                let q = q.quaternion();
                [q.w, q.i, q.j, q.k]
            })
            .collect();
        model.pose(root, &rotations)
    };
    move |step: u64, t: f64| {
        let h = 1e-4;
        let (now, next) = (poses(t), poses(t + h));
        let mut f = StateFrame::new(step + 1, step, t);
        for (a, b) in now.iter().zip(&next) {
            let qa = UnitQuaternion::from_quaternion(a.orientation.into_quaternion());
            let qb = UnitQuaternion::from_quaternion(b.orientation.into_quaternion());
            let w = (qb * qa.inverse()).scaled_axis() / h;
            let _ = f.push_body(BodyMotion {
                com_m: a.com_m,
                orientation: a.orientation,
                velocity_m_s: core::array::from_fn(|k| (b.com_m[k] - a.com_m[k]) / h),
                angular_velocity_rad_s: [w.x, w.y, w.z],
            });
        }
        for (k, &body) in model.ground_contact_bodies.iter().enumerate() {
            let _ = f.push_contact(ContactForce {
                point: 0,
                body: BodyId(u16::try_from(body).unwrap_or(0)),
                force_n: [0.0, 150.0 + 20.0 * (t + k as f64).sin(), 0.0],
            });
        }
        add_events(&mut f, step);
        f
    }
}

#[test]
fn no_alloc_dynamo_controllers() {
    use robot_model::humanoid::HumanoidModel;
    // balance_push.toml: dynamo_push.toml's scene and Dynamo's three laws, and qp_balance.
    let scenario =
        DynamoScenario::load(scenario_file!("balance_push.toml")).expect("the shipped scenario");
    let model = HumanoidModel::load(&scenario.urdf).expect("the humanoid loads");
    let roles = scenario
        .joint_roles(&model)
        .expect("every joint plays a part");
    let reach = scenario.reach(&model).expect("reach.joint is a joint");
    let period = scenario.period_s();
    let frame = humanoid_frame(&model);
    // balance_reach.toml: qp_balance with a hand task as well.
    let reaching =
        DynamoScenario::load(scenario_file!("balance_reach.toml")).expect("the shipped scenario");
    let hand = reaching.hand.clone().expect("balance_reach has a hand");
    // As `dynamo::run_scenario`'s push runs build them.
    let build = |law: DynamoLaw| {
        DynamoController::new(
            law,
            (&model, &roles),
            (1.0, GainScope::AllJoints),
            Some(reach),
            (scenario.root_spring.into(), scenario.qp_balance),
            period,
            GRAVITY_M_S2,
        )
        .unwrap_or_else(|e| panic!("controller {}: {e}", law.name()))
    };
    let mut runs: Vec<Probed> = scenario
        .laws()
        .into_iter()
        .map(|law| {
            let controller = build(law);
            let (mut refused, mut reach_seen, mut spring_seen) = (0_u64, false, false);
            let mut qp_out = QpOut::default();
            let qp = law == DynamoLaw::QpBalance;
            let run = probed_run(
                &format!("dynamo {}", law.name()),
                if qp { QP } else { FAST },
                controller,
                period,
                &frame,
                None,
                |cmd| {
                    if !cmd.safe {
                        refused += u64::from(cmd.refused);
                        reach_seen |= cmd.reach_error_rad.is_some();
                        spring_seen |= cmd.spring.is_some();
                        if let Some(t) = &cmd.qp {
                            qp_out.add(t);
                        }
                    }
                },
            );
            assert_eq!(refused, 0, "{}: refused joint ticks", run.name);
            assert!(reach_seen, "{}", run.name);
            assert_eq!(
                spring_seen,
                law == DynamoLaw::WorldSpaceRootSpring,
                "{}: the root spring",
                run.name
            );
            if qp {
                check_qp_ran(&run.name, &qp_out);
            }
            run
        })
        .collect();
    let mut controller = build(DynamoLaw::QpBalance);
    controller
        .reach_with_hand(&hand, &model)
        .expect("the hand resolves");
    let mut hand_seen = false;
    let run = probed_run(
        "dynamo qp_balance with a hand",
        QP,
        controller,
        period,
        &frame,
        None,
        |cmd| {
            hand_seen |= cmd.hand_error_m.is_some();
        },
    );
    assert!(hand_seen, "{}: the hand's task never ran", run.name);
    runs.push(run);
    assert_eq!(runs.len(), 5);
    assert_none_allocated(&runs);
}

/// `walk3d`'s controllers (every law of `walk3d_tuned.toml` at every rate, and of
/// `walk3d_stabiliser.toml`, `walk3d_speed.toml` and `walk3d_stable_pd_stabiliser.toml` at
/// their first rate: the stabilised ones with their reduced models, at a slower pace; the speed
/// file's with the velocity tuning; the last through stable PD), fed the swaying humanoid's
/// states with its feet loaded: 0 allocations, no refused tick, steps taken, the stabiliser
/// ticking exactly in the stabilised ones, the tuning moving the desired forward velocity
/// exactly in the speed file's, stable PD solving every tick exactly in its controllers.
#[test]
fn no_alloc_walk3d_controllers() {
    use super::walk3d::Walk3d;
    let mut runs: Vec<Probed> = Vec::new();
    for (path, pace, rates) in [
        (scenario_file!("walk3d_tuned.toml"), FAST, usize::MAX),
        (scenario_file!("walk3d_stabiliser.toml"), STABILISED, 1),
        (scenario_file!("walk3d_speed.toml"), STABILISED, 1),
        (
            scenario_file!("walk3d_stable_pd_stabiliser.toml"),
            STABILISED,
            1,
        ),
    ] {
        let text = std::fs::read_to_string(path).expect("the shipped scenario");
        let doc = crate::run::scenario::Document::parse(&text, &path.display().to_string())
            .expect("the shipped scenario parses");
        let w = Walk3d::prepare(doc, path).expect("the shipped scenario prepares");
        let frame = humanoid_frame(&w.p.model);
        let first_rates: Vec<f64> = w.s.control_rates_hz.iter().copied().take(rates).collect();
        for (law, rate, controller) in &w.p.controllers {
            if !first_rates.contains(rate) {
                continue;
            }
            let (mut refused, mut steps, mut stabilised) = (0_u64, 0_u32, 0_u64);
            let (mut tuned, mut stable, mut fallbacks) = (false, 0_u64, 0_u64);
            let run = probed_run(
                &format!("walk3d {} at {rate} Hz", law.name()),
                pace,
                controller.clone(),
                1.0 / rate,
                &frame,
                None,
                |cmd| {
                    refused += u64::from(cmd.refused);
                    steps = steps.max(cmd.walk.steps);
                    stabilised += u64::from(cmd.walk.stabiliser.is_some());
                    tuned |= cmd.walk.desired_forward_m_s != 0.0;
                    stable += u64::from(cmd.walk.stable_pd.is_some());
                    fallbacks += u64::from(cmd.walk.stable_pd == Some(false));
                },
            );
            assert_eq!(
                stable > 0,
                law.stable_pd(),
                "{}: stable PD ticks {stable}",
                run.name
            );
            assert_eq!(fallbacks, 0, "{}: stable PD fallbacks", run.name);
            assert_eq!(
                tuned,
                w.s.speed_tuning.is_some(),
                "{}: the desired forward velocity moved: {tuned}",
                run.name
            );
            assert_eq!(refused, 0, "{}: refused ticks", run.name);
            assert!(steps > 0, "{}: no step taken", run.name);
            let named = law.stabiliser().is_some();
            assert_eq!(
                stabilised > 0,
                named,
                "{}: stabiliser ticks {stabilised}",
                run.name
            );
            runs.push(run);
        }
    }
    assert_eq!(runs.len(), 8 + 4 + 2 + 4);
    assert_none_allocated(&runs);
}

/// `robot_push`'s two controllers on a small floating robot (one leg, a sole of four corners:
/// `legged::fixtures`), fed states of its base swaying and its hip swinging with the ground's
/// force on the foot.
#[test]
fn no_alloc_robot_push_controllers() {
    use super::legged::{LeggedController, LeggedLaw, Robot, fixtures};
    let (scenario, model) = fixtures::hopper();
    let robot = Robot::resolve(&scenario, &model).expect("the hopper resolves");
    let period = 1.0 / scenario.control_rate_hz;
    let frame = |step: u64, t: f64| {
        let mut f = StateFrame::new(step + 1, step, t);
        let q =
            UnitQuaternion::from_scaled_axis(Vector3::new(0.05 * (1.7 * t).sin(), 0.0, 0.3 * t));
        let q = q.quaternion();
        let _ = f.push_joint(JointState {
            position_rad: 0.1 + 0.2 * (2.0 * t).sin(),
            velocity_rad_s: 0.4 * (2.0 * t).cos(),
        });
        let _ = f.push_body(BodyMotion {
            com_m: [0.01 * t, 0.0, 0.36 + 0.01 * (3.0 * t).sin()],
            orientation: [q.w, q.i, q.j, q.k],
            velocity_m_s: [0.01, 0.0, 0.03 * (3.0 * t).cos()],
            angular_velocity_rad_s: [0.085 * (1.7 * t).cos(), 0.0, 0.3],
        });
        let _ = f.push_contact(ContactForce {
            point: 0,
            body: BodyId(1),
            force_n: [0.0, 0.0, 24.0 + 2.0 * t.sin()],
        });
        add_events(&mut f, step);
        f
    };
    // 2,000 ticks at 1 kHz: the hopper's QP is small.
    let pace = Pace {
        rate_hz: 1000.0,
        ticks: 2_000,
        feed_until: 1_400,
    };
    let runs: Vec<Probed> = LeggedLaw::ALL
        .into_iter()
        .map(|law| {
            let (controller, _) = LeggedController::new(law, robot.clone(), &scenario, period)
                .unwrap_or_else(|e| panic!("{}: {e}", law.name()));
            let mut qp_out = QpOut::default();
            let run = probed_run(
                &format!("robot_push {}", law.name()),
                pace,
                controller,
                period,
                frame,
                None,
                |cmd| {
                    if let Some(t) = &cmd.qp {
                        qp_out.add(t);
                    }
                },
            );
            if law == LeggedLaw::QpBalance {
                check_qp_ran(&run.name, &qp_out);
            }
            run
        })
        .collect();
    assert_none_allocated(&runs);
}

/// `[w, x, y, z]` as a nalgebra quaternion.
trait IntoQuaternion {
    fn into_quaternion(self) -> control_core::articulated::nalgebra::Quaternion<f64>;
}

impl IntoQuaternion for [f64; 4] {
    fn into_quaternion(self) -> control_core::articulated::nalgebra::Quaternion<f64> {
        let [w, x, y, z] = self;
        control_core::articulated::nalgebra::Quaternion::new(w, x, y, z)
    }
}
