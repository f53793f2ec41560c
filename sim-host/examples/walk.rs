//! SIMBICON's basic walk on the Rapier biped, swept over control rates and gains: every cell a
//! fresh 20 s run from JSimbicon's start ([`sim_host::walk::jsimbicon_start`]), physics dt =
//! control period = 1/rate (no zero-order hold over several physics steps), stopped at the fall.
//!
//! Run: `cargo run --release -p sim-host --example walk
//! [-- SECONDS [RATES,..]]` (about 5 s for the whole sweep on a shared 2-core machine); with
//! `-- --pushes`, the push and cost tables below instead.
//!
//! Gains: `simbicon` is SIMBICON's fixed kp 300, kd 30 on every role; `analytic` is the same
//! pair as the design, kept for every role whose sampled loop is stable at the period and
//! otherwise moved inside the stable region at the same damping ratio, to half the edge's
//! natural frequency (`control_core::simbicon`, "The rule and its derivation"). On this model
//! only the ankles (0.012 kg·m², stable with 300/30 only above 1255 Hz) move: k 47.6, γ 11.95
//! at 1 kHz; 4.29, 3.59 at 300 Hz; 1.90, 2.39 at 200 Hz. At 2 kHz both rows are the same
//! controller.
//!
//! Measured (fell: torso centre below 0.8 m or a non-foot body on the ground; distance: whole
//! body COM x; steps: stance changes; limited: torques the ±1000 N·m limit cut):
//!
//! | rate Hz | gains | fell | fell at s | distance m | mean speed m/s | steps | limited |
//! |---|---|---|---|---|---|---|---|
//! | 2000 | simbicon | no | – | 20.40 | 1.020 | 56 | 0 |
//! | 2000 | analytic | no | – | 20.40 | 1.020 | 56 | 0 |
//! | 1000 | simbicon | no | – | 24.48 | 1.224 | 59 | 17915 |
//! | 1000 | analytic | no | – | 21.59 | 1.080 | 57 | 0 |
//! | 500 | simbicon | yes | 0.658 | 0.73 | 1.106 | 1 | 519 |
//! | 500 | analytic | no | – | 22.20 | 1.110 | 58 | 0 |
//! | 300 | simbicon | yes | 0.560 | 0.51 | 0.902 | 1 | 301 |
//! | 300 | analytic | no | – | 22.36 | 1.118 | 58 | 0 |
//! | 250 | simbicon | yes | 0.480 | 0.41 | 0.847 | 1 | 216 |
//! | 250 | analytic | no | – | 22.31 | 1.116 | 58 | 0 |
//! | 200 | simbicon | yes | 0.590 | 0.55 | 0.932 | 1 | 232 |
//! | 200 | analytic | no | – | 22.35 | 1.117 | 58 | 0 |
//!
//! SIMBICON's fixed 300/30 walk at 2 kHz and, with its ankles chattering at the limit (their
//! loop is unstable there), at 1 kHz, and fall at 500 Hz and below, within 0.7 s. The analytic
//! gains walk all 20 s at every rate, 1.08–1.12 m/s, no torque cut, with no per-rate tuning:
//! the same design pair, inertias and margin at every period. Before (commit 9fdc434) the
//! analytic mode was critically damped per role and fell at about 1 s at every rate (its swing
//! hip's damping, 61 N·m·s/rad instead of 30, swung the leg too slowly); that rule was
//! replaced.
//!
//! ## Pushes and cost at 300 Hz
//!
//! Run: `cargo run --release -p sim-host --example walk -- --pushes` (about 12 s on a shared
//! 2-core machine). Each push is a horizontal force on the torso's centre of mass for 0.2 s
//! (SIMBICON's 3D paper: 350 N for 0.2 s, 70 N·s) from t = 5 s, mid-stride: the analytic walk
//! is then 0.23 s into state 0 (early swing), so the push spans the end of state 0 and the
//! start of state 1. Survived: no fall over the whole 20 s run. The largest force is searched
//! coarse to fine (25 N steps from 0 to 1000 N, then bisection to 1 N between the last force
//! survived and the first that fell), which assumes survival is monotone in force below the
//! first fall.
//!
//! | gains | push | largest force N | impulse N·s (0.2 s) |
//! |---|---|---|---|
//! | simbicon | forward +x | falls unpushed | falls unpushed |
//! | simbicon | backward −x | falls unpushed | falls unpushed |
//! | analytic | forward +x | 591 | 118.3 |
//! | analytic | backward −x | 652 | 130.3 |
//!
//! The analytic gains take 1.7× (forward) and 1.9× (backward) the paper's 70 N·s at 300 Hz;
//! SIMBICON's fixed gains fall within 0.6 s at 300 Hz without any push.
//!
//! Cost, measured in process on a shared 2-core machine over the unpushed 20 s analytic run at
//! 300 Hz (6000 ticks): `std::time::Instant` around each `Simbicon::tick` and each
//! `BipedPlant::step`, and around the whole lockstep loop (two runs; the second in brackets):
//!
//! | call | median µs | p99 µs |
//! |---|---|---|
//! | controller tick | 0.07 (0.07) | 0.16 (0.13) |
//! | plant step (Rapier, 7 bodies) | 30.9 (30.5) | 60.9 (51.9) |
//!
//! Whole 20 s lockstep run: 0.199 s (0.187 s) wall, 100× (107×) real time.
#![allow(missing_docs)]

use std::time::Instant;

use control_core::simbicon::{Gains, Simbicon, SimbiconConfig};
use sim_host::biped::{BipedPlant, BipedScene, TorsoPush};
use sim_host::walk::{jsimbicon_start, read_biped_frame, run_walk};

/// Control rate of the push and cost figures, Hz.
const PUSH_RATE_HZ: f64 = 300.0;
/// Length of every push and cost run, s.
const PUSH_RUN_S: f64 = 20.0;
/// When the push starts, s.
const PUSH_START_S: f64 = 5.0;
/// How long the push lasts, s (SIMBICON's 3D paper: 0.2 s).
const PUSH_DURATION_S: f64 = 0.2;
/// The largest push force tried, N.
const PUSH_MAX_N: f64 = 1000.0;
/// Step of the coarse sweep over force, N.
const PUSH_COARSE_N: f64 = 25.0;
/// Resolution the bisection stops at, N.
const PUSH_FINE_N: f64 = 1.0;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--pushes") {
        pushes_and_cost();
        return;
    }
    let secs: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20.0);
    let rates: Vec<f64> = match args.get(2) {
        Some(r) => r.split(',').filter_map(|x| x.parse().ok()).collect(),
        None => vec![2000.0, 1000.0, 500.0, 300.0, 250.0, 200.0],
    };
    println!(
        "| rate Hz | gains | fell | fell at s | distance m | mean speed m/s | steps | limited | lowest torso m |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &rate in &rates {
        let dt = 1.0 / rate;
        for (name, gains) in [
            ("simbicon", Gains::SIMBICON),
            ("analytic", Gains::analytic(dt)),
        ] {
            let mut scene = BipedScene::new(secs, [0.0, -9.81]);
            scene.dt_s = dt;
            jsimbicon_start(&mut scene);
            let config = SimbiconConfig {
                gains,
                ..SimbiconConfig::default()
            };
            let s = run_walk(&scene, config, true, |_, _| {}).unwrap();
            println!(
                "| {rate} | {name} | {} | {} | {:.2} | {:.3} | {} | {} | {:.3} |",
                if s.fell { "yes" } else { "no" },
                s.fell_at_s.map_or("–".into(), |t| format!("{t:.3}")),
                s.distance_m,
                s.mean_speed_mps,
                s.steps,
                s.limited_torques,
                s.lowest_torso_m,
            );
        }
    }
}

/// A fresh 300 Hz, 20 s scene from JSimbicon's start with one horizontal torso push of
/// `force_x_n` (none when 0).
fn push_scene(force_x_n: f64) -> BipedScene {
    let mut scene = BipedScene::new(PUSH_RUN_S, [0.0, -9.81]);
    scene.dt_s = 1.0 / PUSH_RATE_HZ;
    jsimbicon_start(&mut scene);
    if force_x_n != 0.0 {
        scene.pushes.push(TorsoPush {
            force_n: [force_x_n, 0.0],
            start_s: PUSH_START_S,
            duration_s: PUSH_DURATION_S,
        });
    }
    scene
}

/// Whether the walker walks the whole run under a push of `force_x_n`.
fn survives(gains: Gains, force_x_n: f64) -> bool {
    let config = SimbiconConfig {
        gains,
        ..SimbiconConfig::default()
    };
    let s = run_walk(&push_scene(force_x_n), config, true, |_, _| {}).unwrap();
    !s.fell
}

/// The largest push (N, in the direction `sign`) survived, searched coarse to fine: the first
/// force of the coarse sweep the walker falls under, then bisection between it and the last
/// survived one. `None` when it survives every force up to [`PUSH_MAX_N`].
fn largest_push_n(gains: Gains, sign: f64) -> Option<f64> {
    let mut ok = 0.0;
    let mut f = PUSH_COARSE_N;
    while f <= PUSH_MAX_N {
        if !survives(gains, sign * f) {
            let mut bad = f;
            while bad - ok > PUSH_FINE_N {
                let mid = 0.5 * (ok + bad);
                if survives(gains, sign * mid) {
                    ok = mid;
                } else {
                    bad = mid;
                }
            }
            return Some(ok);
        }
        ok = f;
        f += PUSH_COARSE_N;
    }
    None
}

/// Median and 99th percentile of `v`, µs (sorts it).
fn median_p99_us(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// The push table (largest push survived at 300 Hz, both gain modes, each direction) and the
/// cost table (the analytic walk's controller tick, plant step and whole run at 300 Hz).
fn pushes_and_cost() {
    // Where in the stride the push lands: the controller state and time in it at PUSH_START_S.
    let config = SimbiconConfig {
        gains: Gains::analytic(1.0 / PUSH_RATE_HZ),
        ..SimbiconConfig::default()
    };
    let mut since = 0.0;
    let mut at_push = None;
    run_walk(&push_scene(0.0), config, true, |s, c| {
        if let Some(c) = c {
            let t = s.walker.time_s;
            if c.transitioned {
                since = t;
            }
            if at_push.is_none() && t >= PUSH_START_S - 1e-9 {
                at_push = Some((c.state, t - since));
            }
        }
    })
    .unwrap();
    if let Some((state, in_state)) = at_push {
        println!("analytic walk at {PUSH_START_S} s: state {state}, {in_state:.3} s into it\n");
    }
    println!("| gains | push | largest force N | impulse N·s ({PUSH_DURATION_S} s) |");
    println!("|---|---|---|---|");
    for (name, gains) in [
        ("simbicon", Gains::SIMBICON),
        ("analytic", Gains::analytic(1.0 / PUSH_RATE_HZ)),
    ] {
        let unpushed = survives(gains, 0.0);
        for (dir, sign) in [("forward +x", 1.0), ("backward −x", -1.0)] {
            let (force, impulse) = if !unpushed {
                ("falls unpushed".to_string(), "falls unpushed".to_string())
            } else {
                match largest_push_n(gains, sign) {
                    Some(f) => (format!("{f:.0}"), format!("{:.1}", f * PUSH_DURATION_S)),
                    None => (
                        format!("> {PUSH_MAX_N:.0}"),
                        format!("> {:.0}", PUSH_MAX_N * PUSH_DURATION_S),
                    ),
                }
            };
            println!("| {name} | {dir} | {force} | {impulse} |");
        }
    }

    // Cost: the same lockstep loop as `run_walk`, with an Instant around each call.
    let scene = push_scene(0.0);
    let mut plant = BipedPlant::new(&scene).unwrap();
    let mut walker = Simbicon::new(config).unwrap();
    let mut tick_us = Vec::new();
    let mut step_us = Vec::new();
    let mut fell = false;
    let run = Instant::now();
    while !plant.clock().is_finished() {
        let r = read_biped_frame(&plant.state_frame()).unwrap();
        fell |= r.fallen();
        let t = Instant::now();
        let torques = walker.tick(&r.walker).map_or([0.0; 6], |c| c.torques_nm);
        tick_us.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        plant.step(&torques).unwrap();
        step_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let wall_s = run.elapsed().as_secs_f64();
    let (tick_med, tick_p99) = median_p99_us(&mut tick_us);
    let (step_med, step_p99) = median_p99_us(&mut step_us);
    println!(
        "\n| analytic, {PUSH_RATE_HZ} Hz, {PUSH_RUN_S} s (fell: {fell}) | median µs | p99 µs |"
    );
    println!("|---|---|---|");
    println!("| controller tick | {tick_med:.2} | {tick_p99:.2} |");
    println!("| plant step | {step_med:.1} | {step_p99:.1} |");
    println!(
        "\nwhole run: {} ticks, {wall_s:.3} s wall, {:.1}× real time",
        tick_us.len(),
        PUSH_RUN_S / wall_s
    );
}
