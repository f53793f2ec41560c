//! The controller as Cortex-M firmware under QEMU (`hil run --controller-in firmware`): the same
//! outcome as the host's controller to the bit, the firmware's faults, QEMU dying or hanging,
//! and the instruction counts held to the committed figures (`firmware/instructions.json`).
//!
//! Needs `qemu-system-arm` (Debian: `apt-get install qemu-system-arm`; `.ci/run` installs it)
//! and the three Cortex-M Rust targets, which these tests add with rustup when they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use e2e::{controller, hil, hil_run, out_dir, report, workspace_root};

/// The targets the firmware builds for, the core each stands for in the committed figures, and
/// the QEMU machine that runs it (QEMU has no MPS2 board with a Cortex-M0: the thumbv6m build,
/// whose instructions the M3 executes as they are, runs on the M3 one).
const TARGETS: [(&str, &str, &str); 3] = [
    ("thumbv7em-none-eabihf", "cortex-m4f", "mps2-an386"),
    ("thumbv7m-none-eabi", "cortex-m3", "mps2-an385"),
    ("thumbv6m-none-eabi", "cortex-m0", "mps2-an385"),
];

/// Most a figure may grow over the committed one before the gate fails.
const REGRESSION: f64 = 1.10;

/// QEMU present, the Rust targets installed (added here if missing).
fn toolchain() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let qemu = Command::new("qemu-system-arm").arg("--version").output();
        assert!(
            qemu.is_ok_and(|o| o.status.success()),
            "qemu-system-arm is needed (Debian: apt-get install qemu-system-arm)"
        );
        let installed = Command::new("rustup")
            .args(["target", "list", "--installed"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let missing: Vec<&str> = TARGETS
            .iter()
            .map(|(t, _, _)| *t)
            .filter(|t| !installed.lines().any(|l| l.trim() == *t))
            .collect();
        if !missing.is_empty() {
            let ok = Command::new("rustup")
                .args(["target", "add"])
                .args(&missing)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "cannot add the Rust targets {missing:?} with rustup");
        }
    });
}

/// The firmware image for `target`, built (release profile, every servo).
fn image(target: &str) -> PathBuf {
    build(target, "release", &[])
}

/// The firmware image for `target` built with cargo profile `profile` and `features`.
fn build(target: &str, profile: &str, features: &[&str]) -> PathBuf {
    toolchain();
    let dir = workspace_root().join("firmware");
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.args([
        "build",
        "--quiet",
        "--bin",
        "hil-firmware",
        "--target",
        target,
    ])
    .args(["--profile", profile])
    .current_dir(&dir);
    if !features.is_empty() {
        c.arg("--features").arg(features.join(","));
    }
    let status = c.status().expect("cargo runs");
    assert!(
        status.success(),
        "the firmware builds for {target} ({profile}, {features:?})"
    );
    dir.join("target")
        .join(target)
        .join(profile)
        .join("hil-firmware")
}

fn scenario() -> String {
    workspace_root()
        .join("scenarios/ball_blocking_firmware.toml")
        .display()
        .to_string()
}

fn run_in_firmware(out: &Path, image: &Path, extra: &[&str]) -> std::process::Output {
    run_in_firmware_on("mps2-an386", out, image, extra)
}

/// As [`run_in_firmware`], on QEMU machine `machine` (`HIL_QEMU_MACHINE`).
fn run_in_firmware_on(
    machine: &str,
    out: &Path,
    image: &Path,
    extra: &[&str],
) -> std::process::Output {
    run_in_firmware_with(out, image, extra, &[("HIL_QEMU_MACHINE", machine)])
}

/// `hil run` of the firmware scenario with the controller in `image`, `extra` arguments and
/// `envs` set.
fn run_in_firmware_with(
    out: &Path,
    image: &Path,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> std::process::Output {
    let mut c = hil();
    c.arg("run")
        .arg(scenario())
        .args(["--controller-in", "firmware"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .env("HIL_FIRMWARE", image)
        .envs(envs.iter().copied());
    c.output().expect("hil runs")
}

#[test]
fn the_firmware_controller_matches_the_host_to_the_bit() {
    let image = image("thumbv7em-none-eabihf");
    let host_out = out_dir("mcu_host");
    let host = hil_run(&[&scenario()], &host_out);
    assert!(host.status.success(), "{host:?}");
    let fw_out = out_dir("mcu_firmware");
    let fw = run_in_firmware(&fw_out, &image, &[]);
    assert!(fw.status.success(), "{fw:?}");
    let (h, f) = (report(&host_out), report(&fw_out));
    assert_eq!(f["complete"], true);
    for name in ["analytic", "analytic_f32", "analytic_fixed"] {
        let (hc, fc) = (controller(&h, name), controller(&f, name));
        assert_eq!(fc["blocked"], 4, "{name}");
        assert_eq!(
            fc["max_arrival_error_rad"], hc["max_arrival_error_rad"],
            "{name}"
        );
        let firmware = &fc["firmware"];
        assert_eq!(firmware["mismatches"], 0, "{name}: {firmware}");
        assert_eq!(firmware["answered"], fc["ticks"], "{name}");
        assert_eq!(firmware["machine"], "mps2-an386");
        assert!(
            hc.get("firmware").is_none(),
            "a host run has no firmware section"
        );
        // A one-joint state frame decodes within the budget.
        let decode = firmware["decode_instructions"]["max"]
            .as_f64()
            .unwrap_or(f64::MAX);
        assert!(decode <= 2000.0, "{name}: decode {decode} instructions");
    }
    // Every tick's angle, torque, gains and status, as the plant and the recorder saw them.
    let csv = |dir: &Path| std::fs::read_to_string(dir.join("trajectory.csv")).expect("csv");
    assert_eq!(csv(&host_out), csv(&fw_out));
}

#[test]
fn a_hard_fault_in_the_firmware_ends_the_run_with_its_report() {
    let image = image("thumbv7em-none-eabihf");
    let out = out_dir("mcu_fault");
    let o = run_in_firmware_with(
        &out,
        &image,
        &["--only", "analytic"],
        &[("HIL_FIRMWARE_FAULT_AT_STEP", "100")],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let r = report(&out);
    assert_eq!(r["complete"], false);
    let reason = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("HardFault"), "{reason}");
    let a = controller(&r, "analytic");
    // Steps 0..=99 answered by the firmware; step 100's tick is not recorded; the safe state
    // (computed by the host's controller: the firmware is gone) is the 101st record.
    assert_eq!(a["firmware"]["answered"], 100);
    assert_eq!(a["ticks"], 101, "100 ticks and the safe state");
    assert_eq!(
        r["faults"]["safe_state"]["sent_at_step"], 100,
        "{}",
        r["faults"]
    );
    assert!(
        a["firmware"]["lost"]
            .as_str()
            .is_some_and(|l| l.contains("step 100")),
        "{}",
        a["firmware"]
    );
}

/// A `qemu-system-arm` in front of the real one that sends QEMU `signal` once the firmware has
/// answered 100 requests (read from the mailbox word `ANSWERED` of the RAM file).
fn qemu_wrapper(name: &str, signal: &str) -> PathBuf {
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v qemu-system-arm"])
            .output()
            .expect("sh runs")
            .stdout,
    )
    .expect("utf-8 path");
    let dir = out_dir(name).with_extension("bin");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("wrapper folder");
    let script = format!(
        r#"#!/bin/bash
mem=$(printf '%s\n' "$@" | sed -n 's/.*mem-path=\([^,]*\),.*/\1/p')
exec 3<"$mem"
me=$$
( while :; do n=$(od -An -j {answered} -N 4 -t u4 /dev/fd/3 | tr -d ' '); [ "${{n:-0}}" -ge 100 ] && break; sleep 0.005; done; kill -{signal} $me ) &
exec {real} "$@"
"#,
        answered = control_core::mailbox::ANSWERED,
        real = real.trim()
    );
    let path = dir.join("qemu-system-arm");
    std::fs::write(&path, script).expect("wrapper written");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

fn run_with_wrapper(name: &str, signal: &str) -> (std::process::Output, serde_json::Value) {
    let image = image("thumbv7em-none-eabihf");
    let bin = qemu_wrapper(name, signal);
    let out = out_dir(name);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = run_in_firmware_with(&out, &image, &["--only", "analytic"], &[("PATH", &path)]);
    (o, report(&out))
}

#[test]
fn qemu_dying_mid_run_is_a_lost_peer() {
    let (o, r) = run_with_wrapper("mcu_qemu_killed", "KILL");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(r["complete"], false);
    let reason = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("QEMU ended"), "{reason}");
    let ticks = controller(&r, "analytic")["ticks"].as_u64().unwrap_or(0);
    assert!((100..800).contains(&ticks), "{ticks}");
}

#[test]
fn qemu_hanging_mid_run_is_a_lost_peer_after_the_answer_timeout() {
    let started = std::time::Instant::now();
    let (o, r) = run_with_wrapper("mcu_qemu_stopped", "STOP");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let reason = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("hung"), "{reason}");
    // The 2 s answer timeout, not a hang (generous: the machine may be loaded).
    assert!(started.elapsed().as_secs() < 60);
}

#[test]
fn firmware_is_refused_where_it_cannot_run() {
    let out = out_dir("mcu_refused");
    let beat = workspace_root().join("scenarios/on_the_beat.toml");
    let o = hil_run(
        &[&beat.display().to_string(), "--controller-in", "firmware"],
        &out,
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("ball-blocking arm"));
    let o = run_in_firmware(&out, Path::new("/nonexistent/image"), &[]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("HIL_FIRMWARE"));
}

/// In real time the firmware answers on the control thread: every answer still matches the
/// host's bit for bit (how many ticks there are, and whether they keep their deadlines, is
/// QEMU's emulation speed on this machine, not an MCU's: not asserted).
#[test]
fn in_real_time_the_firmware_answers_match_the_host() {
    let image = image("thumbv7em-none-eabihf");
    let out = out_dir("mcu_realtime");
    let o = run_in_firmware(
        &out,
        &image,
        // A loaded test machine can stall QEMU for a while: this test is about the answers.
        &[
            "--mode",
            "realtime",
            "--only",
            "analytic_f32",
            "--watchdog-ms",
            "5000",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let r = report(&out);
    assert_eq!(r["complete"], true);
    assert_eq!(r["mode"], "realtime");
    let f = &controller(&r, "analytic_f32")["firmware"];
    assert_eq!(f["mismatches"], 0, "{f}");
    assert!(f["answered"].as_u64().unwrap_or(0) > 0, "{f}");
}

/// Sizes of an ELF image's sections by name, from binutils' `size -A`.
fn sections(image: &Path) -> Vec<(String, u64)> {
    let o = Command::new("size")
        .arg("-A")
        .arg(image)
        .output()
        .expect("binutils' size runs");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_owned(), w.next()?.parse().ok()?))
        })
        .collect()
}

/// The instruction gate: per core, per servo, the mean instructions of decode, control and
/// encode, and the image's `.text` and `.rodata`, each within 10 % of
/// `firmware/instructions.json`. `HIL_UPDATE_INSTRUCTIONS=1` rewrites that file from this run.
#[test]
fn instruction_counts_and_sizes_hold_to_the_committed_figures() {
    let mut measured = serde_json::Map::new();
    let builds = TARGETS
        .iter()
        .map(|&(target, core, machine)| (target, core.to_owned(), machine, "release", None))
        .chain([(
            "thumbv7em-none-eabihf",
            "cortex-m4f-f32-only-small".to_owned(),
            "mps2-an386",
            "small",
            Some("f32-only"),
        )]);
    for (target, core, machine, profile, feature) in builds {
        let image = build(target, profile, feature.as_slice());
        let servos: &[&str] = if feature.is_some() {
            &["analytic_f32"]
        } else {
            &["analytic", "analytic_f32", "analytic_fixed"]
        };
        let out = out_dir(&format!("mcu_gate_{core}"));
        let o = run_in_firmware_on(machine, &out, &image, &["--only", &servos.join(",")]);
        assert!(o.status.success(), "{core}: {o:?}");
        let r = report(&out);
        let mut entry = serde_json::Map::new();
        for name in servos {
            let f = &controller(&r, name)["firmware"];
            assert_eq!(f["mismatches"], 0, "{core} {name}");
            let mean = |k: &str| f[k]["mean"].as_f64().unwrap_or(f64::NAN).round();
            entry.insert(
                (*name).to_owned(),
                serde_json::json!({
                    "decode": mean("decode_instructions"),
                    "control": mean("control_instructions"),
                    "encode": mean("encode_instructions"),
                }),
            );
        }
        let s = sections(&image);
        let size = |n: &str| s.iter().find(|(k, _)| k == n).map_or(0, |(_, v)| *v);
        let flash = size(".vector_table") + size(".text") + size(".rodata") + size(".data");
        if feature.is_some() {
            // The small part's budget (the f32 servo build in 32 KB of flash).
            assert!(flash <= 32 * 1024, "{core}: {flash} bytes of flash");
        }
        entry.insert("text_bytes".into(), size(".text").into());
        entry.insert("rodata_bytes".into(), size(".rodata").into());
        entry.insert("flash_bytes".into(), flash.into());
        entry.insert(
            "static_ram_bytes".into(),
            (size(".data") + size(".bss")).into(),
        );
        entry.insert("target".into(), target.into());
        entry.insert("machine".into(), machine.into());
        entry.insert("profile".into(), profile.into());
        measured.insert(core, entry.into());
    }
    let measured = serde_json::Value::Object(measured);
    let file = workspace_root().join("firmware/instructions.json");
    if std::env::var_os("HIL_UPDATE_INSTRUCTIONS").is_some() {
        let text = serde_json::to_string_pretty(&measured).expect("json") + "\n";
        std::fs::write(&file, text).expect("figures written");
        return;
    }
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&file).expect("firmware/instructions.json is committed"),
    )
    .expect("committed figures are JSON");
    let mut regressions = Vec::new();
    for (core, entry) in measured.as_object().into_iter().flatten() {
        for (key, value) in entry.as_object().into_iter().flatten() {
            let pairs: Vec<(String, f64, f64)> = match value {
                serde_json::Value::Object(phases) => phases
                    .iter()
                    .map(|(p, v)| {
                        (
                            format!("{core} {key} {p}"),
                            v.as_f64().unwrap_or(f64::NAN),
                            committed[core][key][p].as_f64().unwrap_or(f64::NAN),
                        )
                    })
                    .collect(),
                serde_json::Value::Number(n) => vec![(
                    format!("{core} {key}"),
                    n.as_f64().unwrap_or(f64::NAN),
                    committed[core][key].as_f64().unwrap_or(f64::NAN),
                )],
                _ => Vec::new(),
            };
            for (what, now, then) in pairs {
                // NaN (a figure missing from the committed file) fails too.
                if now.is_nan() || then.is_nan() || now > then * REGRESSION {
                    regressions.push(format!("{what}: {now} against {then} committed"));
                }
            }
        }
    }
    assert!(
        regressions.is_empty(),
        "beyond 10 % of firmware/instructions.json (HIL_UPDATE_INSTRUCTIONS=1 rewrites it \
         when a rise is intended):\n{}",
        regressions.join("\n")
    );
}

/// The compact f32 Lambert W (the f32 servo's) costs no more instructions per call on the
/// Cortex-M4F than the `lambert_w` crate's f32 functions, on the same inputs
/// (`firmware/src/bin/lambert_bench.rs` under QEMU with `-icount`, semihosting for its output).
#[test]
fn compact_lambert_w_is_no_dearer_than_the_lambert_w_crate_on_the_m4f() {
    toolchain();
    let dir = workspace_root().join("firmware");
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--quiet", "--bin", "lambert_bench"])
        .args(["--target", "thumbv7em-none-eabihf"])
        .current_dir(&dir)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the Lambert W benchmark builds");
    let image = dir.join("target/thumbv7em-none-eabihf/release/lambert_bench");
    let o = Command::new("timeout")
        .args([
            "120",
            "qemu-system-arm",
            "-machine",
            "mps2-an386",
            "-nographic",
        ])
        .args(["-monitor", "none", "-serial", "none", "-icount", "shift=6"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(&image)
        .output()
        .expect("qemu runs");
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let cost = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next()? == name).then(|| w.nth(1)?.parse().ok())?
            })
            .unwrap_or_else(|| panic!("no {name} in the benchmark's output:\n{text}"))
    };
    for (ours, theirs) in [
        ("compact_f32::w0", "lambert_w::lambert_w0f"),
        ("compact_f32::wm1", "lambert_w::lambert_wm1f"),
    ] {
        let (a, b) = (cost(ours), cost(theirs));
        assert!(
            a > 0 && a <= b,
            "{ours}: {a} instructions per call, {theirs}: {b}\n{text}"
        );
    }
}
