//! Zero allocations on the control thread once its loop runs: a counting global allocator with a
//! per-thread counter, around thousands of ticks of the real control-core arrival servo
//! ([`runtime::synthetic::ServoOnPlant`]), fed through the real exchange, including watchdog
//! (safe-output) ticks and per-tick telemetry records both delivered and dropped (channel full);
//! and the same harness catches one allocation injected into one tick.

use std::time::Duration;

use control_core::servo::JointState;
use runtime::alloc_count::{CountingAllocator, allocations_on_this_thread};
use runtime::synthetic::ServoOnPlant;
use runtime::{Controller, PeriodicBuilder, StateSample, TickInfo, channels, telemetry};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Wraps a controller and records how many allocations the control thread made from the start
/// of its first tick to the start of its latest one: whole loop iterations, runtime included
/// (summary histograms, telemetry `try_send`, output queue, state exchange).
struct AllocationProbe<C> {
    inner: C,
    at_first_tick: Option<u64>,
    since_first_tick: u64,
    /// Allocate (one `Box`) in the tick with this release index: the probe must see it.
    inject_at: Option<u64>,
}

impl<C> AllocationProbe<C> {
    fn probe(&mut self, tick: &TickInfo) {
        let now = allocations_on_this_thread();
        match self.at_first_tick {
            None => self.at_first_tick = Some(now),
            Some(first) => self.since_first_tick = now - first,
        }
        if self.inject_at == Some(tick.release_index) {
            std::hint::black_box(Box::new(tick.release_index));
        }
    }
}

impl<C: Controller> Controller for AllocationProbe<C> {
    type State = C::State;
    type Output = C::Output;
    fn tick(&mut self, tick: &TickInfo, state: Option<StateSample<C::State>>) -> C::Output {
        self.probe(tick);
        self.inner.tick(tick, state)
    }
    fn safe_output(&mut self, tick: &TickInfo, last: Option<StateSample<C::State>>) -> C::Output {
        self.probe(tick);
        self.inner.safe_output(tick, last)
    }
}

const TICKS: u64 = 5_000;
/// States are published for the first FEED_UNTIL ticks only: the watchdog then trips.
const FEED_UNTIL: u64 = 3_500;
/// Telemetry is drained for records before this release only: the channel then fills and drops.
const DRAIN_UNTIL: u64 = 2_500;
const TELEMETRY_CAPACITY: usize = 256;
const RATE_HZ: f64 = 2_000.0;

/// What a probed run gives back.
struct Probed {
    outcome: runtime::RunOutcome<AllocationProbe<ServoOnPlant>>,
    torques_received: u64,
    records_received: u64,
}

/// Runs the servo at SCHED_FIFO (where permitted) for [`TICKS`] ticks with watchdog, exchange
/// and a telemetry channel, in every path: fresh states, safe outputs, records sent and dropped.
fn probed_run(inject_at: Option<u64>) -> Probed {
    let probe = AllocationProbe {
        inner: ServoOnPlant::new(1.0 / RATE_HZ).expect("valid servo config"),
        at_first_tick: None,
        since_first_tick: 0,
        inject_at,
    };
    let (mut io, ctl) = channels::<JointState, f64>(256);
    let (records, record_rx) = telemetry::channel(TELEMETRY_CAPACITY);
    let rt = PeriodicBuilder::from_rate_hz(RATE_HZ)
        .expect("valid rate")
        .priority(80)
        .watchdog_ticks(10)
        .max_ticks(TICKS)
        .telemetry(records)
        .spawn(probe, ctl)
        .expect("control thread starts");
    // The I/O side: a moving joint, one state per torque received, until FEED_UNTIL; the
    // telemetry consumer, polling, until DRAIN_UNTIL.
    let (mut torques_received, mut records_received) = (0_u64, 0_u64);
    let mut draining = true;
    while !rt.is_finished() || !io.outputs.is_abandoned() {
        if draining {
            for r in record_rx.try_iter() {
                records_received += 1;
                draining = r.release_index + 1 < DRAIN_UNTIL;
                if !draining {
                    break;
                }
            }
        }
        let Some(out) = io.outputs.recv_timeout(Duration::from_millis(50)) else {
            if rt.is_finished() {
                break;
            }
            continue;
        };
        torques_received += 1;
        if out.release_index < FEED_UNTIL {
            let t = out.release_index as f64 / RATE_HZ;
            io.states.publish(JointState {
                position_rad: 0.3 * (2.0 * t).sin(),
                velocity_rad_s: 0.6 * (2.0 * t).cos(),
            });
        }
    }
    let outcome = rt.join().expect("control thread ends cleanly");
    // Whatever the channel still holds was sent, too.
    records_received += record_rx.try_iter().count() as u64;
    Probed {
        outcome,
        torques_received,
        records_received,
    }
}

#[test]
fn control_thread_never_allocates_after_start() {
    let Probed {
        outcome,
        torques_received,
        records_received,
    } = probed_run(None);
    let probe = outcome.controller;
    let counts = probe.inner.counts();
    let c = outcome.report.counters;
    eprintln!(
        "ticks {} torques {torques_received} records {records_received} servo {counts:?}",
        c.ticks
    );
    assert_eq!(c.ticks, TICKS);
    assert!(probe.at_first_tick.is_some());
    assert!(
        counts.external_states > 1_000,
        "the exchange was exercised: {counts:?}"
    );
    assert!(
        counts.safe_outputs > 0,
        "the safe path was exercised: {counts:?}"
    );
    assert!(counts.plans > 0);
    // Both telemetry paths ran: records sent, and records dropped once nobody drained.
    assert!(c.telemetry_sent >= DRAIN_UNTIL, "{c:?}");
    assert!(c.telemetry_dropped > 0, "{c:?}");
    assert_eq!(c.telemetry_sent + c.telemetry_dropped, TICKS);
    assert_eq!(records_received, c.telemetry_sent);
    // The summaries cover every tick.
    assert_eq!(outcome.report.wake_latency_us.count, TICKS);
    assert_eq!(outcome.report.compute_us.count, TICKS);
    assert_eq!(
        probe.since_first_tick, 0,
        "the control thread allocated {} times after its first tick",
        probe.since_first_tick
    );
}

/// The probe is not blind: one allocation in one tick of the same run is seen.
#[test]
fn an_allocation_injected_into_one_tick_is_caught() {
    let Probed { outcome, .. } = probed_run(Some(1_000));
    assert_eq!(outcome.report.counters.ticks, TICKS);
    assert_eq!(
        outcome.controller.since_first_tick, 1,
        "exactly the injected allocation"
    );
}
