//! Lockstep: the plant steps only when the torques for its step have arrived, and the controller
//! ticks once per state, on simulated time. Same scenario and seed, bit-identical outputs. The
//! controller runs on this thread, driven by the arrival of states (there is no wall-clock
//! schedule to keep), so a run goes as fast as the plant steps.
//!
//! A plant that dies, hangs or sends only malformed frames shows as no accepted state within the
//! watchdog window; a signal is noticed between waits. Either way the driver returns the cut and
//! [`Session::end`] enters the safe state.

use std::time::Instant;

use transport::LinkError;

use super::recorder::KindRecorder;
use super::report::{Faults, Timing};
use super::session::{Admitted, Cut, LoopController, LoopState as _, Session, admit};

/// Drive `session` in lockstep until the plant's final state (`None`) or a cut.
/// `progress` is called with the simulated time of each state.
pub fn drive<C: LoopController, K: KindRecorder<C>>(
    session: &mut Session<C, K>,
    faults: &mut Faults,
    mut progress: impl FnMut(f64),
) -> Option<Cut> {
    let mut last_send: Option<Instant> = None;
    // Until the plant's first datagram: its start-up; then the watchdog window from the newest
    // usable state.
    let mut deadline = Instant::now() + session.watchdog.max(super::session::STARTUP_GRACE);
    loop {
        let (mut rx, _) = session.link.split();
        let frame = match Session::<C, K>::next_state(
            &mut rx,
            &session.stop,
            &mut deadline,
            session.watchdog,
        ) {
            Ok(f) => f,
            Err(Ok(sig)) => return Some(Cut::Signal(sig)),
            Err(Err(e)) => {
                if matches!(e, LinkError::TimedOut) {
                    faults.watchdog_trips += 1;
                }
                return Some(Cut::from_link(&e, session.last_time_s(), session.watchdog));
            }
        };
        let received = Instant::now();
        let (state, last) = match admit(&mut session.check, &session.controller, &frame) {
            Admitted::Tick { state, last } => (state, last),
            Admitted::Refused => continue,
            Admitted::Cut(cut) => return Some(cut),
        };
        deadline = received + session.watchdog;
        if let Some(sent) = last_send.take() {
            session.recorder.round_trip(received - sent);
        }
        session.recorder.admitted(&frame, state);
        if last {
            progress(state.sim_time_s());
            return None;
        }
        progress(state.sim_time_s());
        let t0 = Instant::now();
        let cmd = session.controller.tick(state);
        let compute = t0.elapsed();
        if let Some(reason) = session.controller.lost() {
            return Some(Cut::PlantLost { reason });
        }
        session.recorder.tick(&cmd, Some(compute));
        session.sequence += 1;
        let frame = super::session::torque_frame(session.sequence, &cmd);
        // Timed from the start of the send: read after it, the clock can include a preemption
        // during which the plant already answered.
        let sending = Instant::now();
        if let Err(e) = session.link.send_torques(&frame) {
            // A plant that died shows here as often as on the receive side.
            return Some(Cut::from_link(
                &e,
                Some(state.sim_time_s()),
                session.watchdog,
            ));
        }
        last_send = Some(sending);
    }
}

/// The timing a lockstep run reports (no wall-clock schedule: the wake-up fields are `null`).
pub fn timing(state_period_s: f64) -> Timing {
    Timing {
        state_period_s,
        control_period_s: state_period_s,
        ..Timing::default()
    }
}
