//! SIMBICON's basic walk on the Rapier biped, swept over control rates and gains: every cell a
//! fresh 20 s run from JSimbicon's start ([`sim_host::walk::jsimbicon_start`]), physics dt =
//! control period = 1/rate (no zero-order hold over several physics steps), stopped at the fall.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-plant cargo run --release -p sim-host --example walk
//! [-- SECONDS [RATES,..]]` (about 10 s for the whole sweep on a shared 2-core machine).
//!
//! Measured (fell: torso centre below 0.8 m or a non-foot body on the ground; distance: whole
//! body COM x; steps: stance changes; limited: torques the ±1000 N·m limit cut):
//!
//! | rate Hz | gains | fell | fell at s | distance m | mean speed m/s | steps | limited |
//! |---|---|---|---|---|---|---|---|
//! | 2000 | simbicon | no | – | 20.40 | 1.020 | 56 | 0 |
//! | 2000 | analytic | yes | 1.032 | 1.31 | 1.272 | 3 | 0 |
//! | 1000 | simbicon | no | – | 24.48 | 1.224 | 59 | 17915 |
//! | 1000 | analytic | yes | 1.034 | 1.32 | 1.273 | 3 | 0 |
//! | 500 | simbicon | yes | 0.658 | 0.73 | 1.106 | 1 | 519 |
//! | 500 | analytic | yes | 1.034 | 1.32 | 1.275 | 3 | 0 |
//! | 300 | simbicon | yes | 0.560 | 0.51 | 0.902 | 1 | 301 |
//! | 300 | analytic | yes | 0.950 | 1.21 | 1.277 | 3 | 2 |
//! | 250 | simbicon | yes | 0.480 | 0.41 | 0.847 | 1 | 216 |
//! | 250 | analytic | yes | 0.908 | 1.16 | 1.280 | 2 | 0 |
//! | 200 | simbicon | yes | 0.590 | 0.55 | 0.932 | 1 | 232 |
//! | 200 | analytic | yes | 0.850 | 1.06 | 1.249 | 2 | 0 |
//!
//! SIMBICON's fixed 300/30 walk at 2 kHz and (chattering at the limit) at 1 kHz, and fall at
//! 500 Hz and below: an ankle's loop (0.012 kg·m², β = h·30/m) is unstable below ~1.3 kHz. The
//! analytic gains do **not** walk at any rate yet: they fall at about 1 s, the same at every
//! rate, so not from sampling. Measured cause: their critically damped swing hip (61 N·m·s/rad
//! on the nominal 3.09 kg·m² leg, against SIMBICON's 30) swings the leg too slowly during the
//! 0.3 s timed state and the swing foot lands under the hip; with only that damping set to 30
//! (k 300 unchanged) the same controller walked 20 s at 2000, 300 and 200 Hz at 1.06–1.12 m/s
//! (a diagnostic, not committed: it is a gain choice for the issue to make).
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
