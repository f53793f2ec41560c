//! SIMBICON's basic walk on the Rapier biped, swept over control rates and gains: every cell a
//! fresh 20 s run from JSimbicon's start ([`sim_host::walk::jsimbicon_start`]), physics dt =
//! control period = 1/rate (no zero-order hold over several physics steps), stopped at the fall.
//!
//! Run: `cargo run --release -p sim-host --example walk
//! [-- SECONDS [RATES,..]]` (about 5 s for the whole sweep on a shared 2-core machine).
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
#![allow(missing_docs)]

use control_core::simbicon::{Gains, SimbiconConfig};
use sim_host::biped::BipedScene;
use sim_host::walk::{jsimbicon_start, run_walk};

fn main() {
    let args: Vec<String> = std::env::args().collect();
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
