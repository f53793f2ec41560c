//! The real control thread run for real time, checked against what the system did, seen from
//! outside the thread: its scheduling policy and priority and CPU affinity read by tid from this
//! thread (`sched_getscheduler`, `sched_getparam`, `sched_getaffinity`), locked memory from
//! `/proc/self/status`, the CPU latency request from `/dev/cpu_dma_latency`, and every output
//! and telemetry record as received. Run as root (as CI does) the real-time requests must have
//! been granted. Nothing here asserts a latency: only counts and states.

use std::time::{Duration, Instant};

use runtime::{
    Controller, PeriodicBuilder, RunReport, SpawnError, StateSample, TickInfo, TickRecord,
    channels, telemetry,
};

/// Echoes the state's value; the safe output is `u64::MAX`.
struct Echo;

impl Controller for Echo {
    type State = u64;
    type Output = u64;
    fn tick(&mut self, _: &TickInfo, state: Option<StateSample<u64>>) -> u64 {
        state.map_or(0, |s| s.value)
    }
    fn safe_output(&mut self, _: &TickInfo, _: Option<StateSample<u64>>) -> u64 {
        u64::MAX
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A thread's scheduling as the kernel reports it to another thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Observed {
    policy: i32,
    priority: i32,
    cpus: usize,
    only_cpu: Option<usize>,
}

/// Reads thread `tid`'s policy, priority and affinity from the calling thread, after checking
/// that `tid` is a thread of this process named `name`.
fn observe(tid: i32, name: &str) -> Observed {
    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .unwrap_or_else(|e| panic!("thread {tid} is not one of ours: {e}"));
    assert_eq!(comm.trim_end(), name, "tid {tid} is the control thread");
    // SAFETY: sched_getscheduler takes a tid and touches no memory of ours.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    assert!(policy >= 0, "sched_getscheduler({tid}) failed");
    let mut param = libc::sched_param { sched_priority: -1 };
    // SAFETY: `param` is a valid, writable sched_param for the duration of the call.
    let rc = unsafe { libc::sched_getparam(tid, &mut param) };
    assert_eq!(rc, 0, "sched_getparam({tid}) failed");
    // SAFETY: all-zeroes is a valid (empty) cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed, writable for the call.
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity({tid}) failed");
    let in_set: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `set` is initialised; CPU_ISSET only reads bit `c` < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    Observed {
        policy,
        priority: param.sched_priority,
        cpus: in_set.len(),
        only_cpu: (in_set.len() == 1).then(|| in_set[0]),
    }
}

/// Thread `tid`'s blocked-signal mask (`SigBlk` in its /proc status).
fn blocked_signals(tid: i32) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no SigBlk for thread {tid}"))
}

/// Locked memory of this process, kB (`VmLck` in /proc/self/status).
fn locked_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The CPU latency currently requested of the whole system, µs (None if unreadable).
fn cpu_dma_latency_us() -> Option<i32> {
    let bytes = std::fs::read("/dev/cpu_dma_latency").ok()?;
    Some(i32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?))
}

#[test]
fn one_second_at_1_khz_granted_what_was_asked_and_delivered_every_record() {
    const NAME: &str = "rt-test-1khz";
    let cpu = if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        1
    } else {
        0
    };
    let (mut io, ctl) = channels::<u64, u64>(4096);
    let (records, record_rx) = telemetry::channel(telemetry::capacity_for(1_000.0, 2.0));
    let consumer = std::thread::spawn(move || {
        let mut got: Vec<TickRecord> = Vec::new();
        telemetry::consume(&record_rx, Duration::from_millis(5), |r| got.push(r));
        got
    });
    let rt = PeriodicBuilder::from_rate_hz(1_000.0)
        .expect("valid rate")
        .priority(80)
        .cpu(cpu)
        .name(NAME)
        .telemetry(records)
        .spawn(Echo, ctl)
        .expect("control thread starts");
    let start = Instant::now();
    let mut k = 0;
    let mut seen = None;
    let mut dma_while_running = None;
    let mut sigblk = 0;
    while start.elapsed() < Duration::from_secs(1) {
        k += 1;
        io.states.publish(k);
        while io.outputs.try_recv().is_some() {}
        if seen.is_none() && start.elapsed() > Duration::from_millis(300) {
            seen = Some(observe(rt.setup().tid, NAME));
            dma_while_running = cpu_dma_latency_us();
            sigblk = blocked_signals(rt.setup().tid);
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    let outcome = rt.stop().expect("control thread ends cleanly");
    let got = consumer.join().expect("consumer ends when the run does");
    let r: &RunReport = &outcome.report;
    eprintln!("{}", serde_json::to_string_pretty(r).unwrap_or_default());
    let seen = seen.expect("observed while running");
    eprintln!("observed from outside: {seen:?}, cpu_dma_latency {dma_while_running:?}");

    // The control thread blocks the asynchronous signals (handlers run elsewhere); this thread
    // does not.
    for sig in runtime::os::ASYNC_SIGNALS {
        assert_ne!(
            sigblk & (1 << (sig - 1)),
            0,
            "signal {sig} not blocked: {sigblk:#x}"
        );
    }
    // SAFETY: gettid has no arguments and cannot fail.
    let me = unsafe { libc::gettid() };
    assert_eq!(blocked_signals(me) & (1 << (libc::SIGINT - 1)), 0);

    // Counts: every release passed is a tick or a skip.
    let periods = r.elapsed_ns / r.period_ns;
    let passed = r.counters.ticks + r.counters.skipped_releases;
    assert!(
        passed.abs_diff(periods) <= 1,
        "ticks + skipped = {passed}, elapsed periods = {periods}"
    );
    assert_eq!(r.releases, passed);
    assert!(r.counters.ticks > 0);

    // Scheduling: the report says what the kernel says, and as root it is what was asked.
    assert_eq!(r.sched_fifo, seen.policy == libc::SCHED_FIFO, "{seen:?}");
    assert_eq!(
        !r.sched_fifo,
        r.warnings.iter().any(|w| w.contains("NORMAL priority"))
    );
    if r.sched_fifo {
        assert_eq!(seen.priority, 80);
    }
    if is_root() {
        assert_eq!((seen.policy, seen.priority), (libc::SCHED_FIFO, 80));
        assert!(r.setup.mlockall, "{:?}", r.setup);
    }
    // Pinned to exactly the CPU asked for.
    assert_eq!((seen.cpus, seen.only_cpu), (1, Some(cpu)));
    assert_eq!(r.setup.cpu, Some(cpu));
    // Memory locked: the kernel counts locked pages.
    assert_eq!(
        r.setup.mlockall,
        locked_kb() > 0,
        "VmLck {} kB",
        locked_kb()
    );
    // CPU latency held at 0 while running, if the report says so.
    if r.setup.dma_latency_held {
        assert_eq!(dma_while_running, Some(0));
    }

    // Telemetry: every record the loop reports as sent reached the consumer, once, in order.
    let c = r.counters;
    assert_eq!(c.telemetry_sent + c.telemetry_dropped, c.ticks);
    assert_eq!(got.len() as u64, c.telemetry_sent);
    assert!(
        got.windows(2)
            .all(|w| w[0].release_index < w[1].release_index)
    );
    if c.telemetry_dropped == 0 {
        // Nothing lost: each record leads to the next release run.
        assert!(
            got.windows(2)
                .all(|w| w[0].release_index + 1 + w[0].skipped_after == w[1].release_index)
        );
        let skipped: u64 = got.iter().map(|t| t.skipped_after).sum();
        let misses = got.iter().filter(|t| t.missed_deadline).count() as u64;
        assert_eq!((skipped, misses), (c.skipped_releases, c.deadline_misses));
        assert_eq!(got.first().map(|t| t.release_index), Some(0));
    }
    // The summaries cover every tick, records delivered or not.
    assert_eq!(r.wake_latency_us.count, c.ticks);
    assert_eq!(r.compute_us.count, c.ticks);
}

#[test]
fn watchdog_safe_output_reaches_the_output_queue_on_the_tick_it_trips() {
    const N: u64 = 20;
    let (mut io, ctl) = channels::<u64, u64>(8192);
    let rt = PeriodicBuilder::from_rate_hz(1_000.0)
        .expect("valid rate")
        .priority(80)
        .watchdog_ticks(N)
        .spawn(Echo, ctl)
        .expect("control thread starts");
    let mut outputs = Vec::new();
    // Feed one state per output received, for 300 outputs.
    io.states.publish(1);
    while outputs.len() < 300 {
        if let Some(o) = io.outputs.recv_timeout(Duration::from_millis(100)) {
            outputs.push(o);
            io.states.publish(outputs.len() as u64 + 1);
        }
    }
    // Stop feeding; wait (bounded, as a liveness guard only) for a safe output.
    let guard = Instant::now();
    while !outputs.last().is_some_and(|o| o.safe) && guard.elapsed() < Duration::from_secs(20) {
        if let Some(o) = io.outputs.recv_timeout(Duration::from_millis(100)) {
            outputs.push(o);
        }
    }
    let outcome = rt.stop().expect("control thread ends cleanly");
    // Everything still queued, so that `outputs` is every output of the run.
    outputs.extend(std::iter::from_fn(|| io.outputs.try_recv()));
    let c = outcome.report.counters;
    assert_eq!(c.outputs_dropped, 0);
    assert_eq!(
        outputs.len() as u64,
        c.ticks,
        "one output per tick, all received"
    );

    let last_seq = outputs
        .iter()
        .filter_map(|o| o.state_seq)
        .max()
        .expect("states were seen");
    let fresh_at = outputs
        .iter()
        .position(|o| o.state_seq == Some(last_seq))
        .expect("last state seen");
    let safe_at = outputs
        .iter()
        .skip(fresh_at)
        .position(|o| o.safe)
        .expect("a safe output after the state stopped");
    // The tick that saw the last state fresh, then N stale ticks: the N-th is safe.
    assert_eq!(
        safe_at as u64, N,
        "safe output {safe_at} ticks after the last fresh state"
    );
    // The release the runtime says the watchdog tripped at is the one whose output, as
    // received, is the first safe one, carrying the safe value.
    let first_safe = outputs[fresh_at + safe_at];
    assert_eq!(
        c.first_watchdog_trip_release,
        Some(first_safe.release_index)
    );
    assert_eq!(first_safe.value, u64::MAX);
    assert!(outputs[..fresh_at + safe_at].iter().all(|o| !o.safe));
    // No fresh state after that: every later output is safe, and they are the safe ticks.
    assert!(
        outputs[fresh_at + safe_at..]
            .iter()
            .all(|o| o.safe && o.value == u64::MAX)
    );
    assert_eq!(c.watchdog_trips, 1);
    assert_eq!(c.safe_ticks, (outputs.len() - fresh_at - safe_at) as u64);
}

#[test]
fn priority_0_is_normal_scheduling_even_when_spawned_from_a_fifo_thread() {
    const NAME: &str = "rt-test-prio0";
    // A dedicated spawner thread whose policy we may change without touching the harness's.
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 10 };
        // SAFETY: `param` is valid for the call; pid 0 is this thread.
        let spawner_fifo = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
        if is_root() {
            assert!(spawner_fifo, "root can make the spawner SCHED_FIFO");
        }
        let (_io, ctl) = channels::<u64, u64>(64);
        let rt = PeriodicBuilder::from_rate_hz(1_000.0)
            .expect("valid rate")
            .priority(0)
            .max_ticks(200)
            .name(NAME)
            .spawn(Echo, ctl)
            .expect("control thread starts");
        let seen = observe(rt.setup().tid, NAME);
        let outcome = rt.join().expect("control thread ends cleanly");
        let r = &outcome.report;
        eprintln!("spawner SCHED_FIFO: {spawner_fifo}; control thread: {seen:?}");
        assert_eq!((seen.policy, seen.priority), (libc::SCHED_OTHER, 0));
        assert!(!r.sched_fifo);
        assert_eq!(r.setup.requested_priority, None);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.counters.ticks, 200);
    })
    .join()
    .expect("spawner thread");

    // Above 99 is refused before any thread starts.
    let (_io, ctl) = channels::<u64, u64>(4);
    assert!(matches!(
        PeriodicBuilder::from_rate_hz(1_000.0)
            .expect("valid rate")
            .priority(100)
            .spawn(Echo, ctl),
        Err(SpawnError::InvalidPriority(100))
    ));
}

/// A pending thread does its setup and no tick until started; started (with a phase anchor), it
/// runs its ticks; dropped unstarted, it ends without a tick.
#[test]
fn a_pending_thread_ticks_only_once_started() {
    use runtime::{Clock, MonotonicClock};
    let (mut io, ctl) = channels::<u64, u64>(64);
    let pending = PeriodicBuilder::from_rate_hz(1_000.0)
        .expect("valid rate")
        .max_ticks(20)
        .spawn_pending(Echo, ctl)
        .expect("control thread set up");
    let _ = pending.setup();
    std::thread::sleep(Duration::from_millis(30));
    assert!(io.outputs.try_recv().is_none(), "no tick before the start");
    io.states.publish(7);
    let anchor = MonotonicClock.now_ns() + 5_000_000 + 123_456;
    let rt = pending.start(anchor);
    let outcome = rt.join().expect("the loop ends after its ticks");
    assert_eq!(outcome.report.counters.ticks, 20);
    let outputs: Vec<_> = std::iter::from_fn(|| io.outputs.try_recv()).collect();
    assert_eq!(outputs.len(), 20);
    assert!(outputs.iter().all(|o| o.value == 7));

    // Dropped before its start: the thread ends, having ticked nothing.
    let (mut io, ctl) = channels::<u64, u64>(64);
    let pending = PeriodicBuilder::from_rate_hz(1_000.0)
        .expect("valid rate")
        .spawn_pending(Echo, ctl)
        .expect("control thread set up");
    drop(pending);
    std::thread::sleep(Duration::from_millis(20));
    assert!(io.outputs.try_recv().is_none());
}
