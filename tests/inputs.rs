//! Hostile input files end to end ("trust nothing the plant says", its input side): a FIFO, a
//! device or an oversize file as the scenario or as the URDF a scenario names, a URDF nested
//! 100 000 elements deep, a list of 200 000 entries, a fixed-size vector with an extra element,
//! 1e308 where a physical bound applies, URDF masses of 1e300 and 0, a misspelt `kind`. Each is
//! refused promptly by `hil run` with exit status 2, a message naming the file, the field (or
//! the URDF element) and the reason, and no output folder (nor its staging folder) left behind.
//! None runs physics.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use e2e::{hil, out_dir, scenario_copy, workspace_root};

const ON_THE_BEAT: &str = include_str!("../scenarios/on_the_beat.toml");
const DYNAMO: &str = include_str!("../scenarios/dynamo_push.toml");
const BALL: &str = include_str!("../scenarios/ball_blocking.toml");

/// A refusal must come well within this (each is a file check, not a run).
const PROMPT: Duration = Duration::from_secs(20);

/// `hil run <scenario> --out <out> --quiet`, killed (and the test failed) if it has not exited
/// within [`PROMPT`]: a run that blocks on a FIFO can never hang the test.
fn hil_run_promptly(scenario: &Path, out: &Path) -> Output {
    let mut child = hil()
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"));
    let start = Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if start.elapsed() > PROMPT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "hil run {} did not exit within {PROMPT:?}",
                scenario.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("cannot wait for hil: {e}"))
}

/// Runs `scenario` into `<dir>/out` and asserts the refusal: exit 2, stderr naming the scenario
/// file and each of `needles`, no output folder and no staging folder. Returns stderr.
fn refused(dir: &Path, scenario: &Path, needles: &[&str]) -> String {
    let out = dir.join("out");
    let run = hil_run_promptly(scenario, &out);
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(2), "{}: {err}", scenario.display());
    let file = scenario.display().to_string();
    assert!(err.contains(&file), "names the file {file}: {err}");
    for n in needles {
        assert!(err.contains(n), "says `{n}`: {err}");
    }
    assert!(
        !out.exists(),
        "{}: an output folder was created",
        out.display()
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".out"))
        .collect();
    assert!(leftovers.is_empty(), "staging left behind: {leftovers:?}");
    err
}

/// A model file with `from` replaced by `to`, written to `<dir>/<name>`.
fn model_copy(dir: &Path, model: &str, name: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(workspace_root().join("models").join(model))
        .unwrap_or_else(|e| panic!("{model}: {e}"));
    assert!(text.contains(from), "{model}: `{from}` not in it");
    let file = dir.join(name);
    std::fs::write(&file, text.replacen(from, to, 1))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    file
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// The chain scenario naming `urdf` as its model.
fn chain_naming(dir: &Path, name: &str, urdf: &Path) -> PathBuf {
    scenario_copy(
        dir,
        name,
        ON_THE_BEAT,
        &[(
            "urdf = \"../models/arm3.urdf\"",
            &format!("urdf = {:?}", urdf.display().to_string()),
        )],
    )
}

/// The Dynamo scenario naming `urdf` as its humanoid.
fn dynamo_naming(dir: &Path, name: &str, urdf: &Path) -> PathBuf {
    scenario_copy(
        dir,
        name,
        DYNAMO,
        &[(
            "urdf = \"../models/humanoid15.urdf\"",
            &format!("urdf = {:?}", urdf.display().to_string()),
        )],
    )
}

#[test]
fn a_fifo_as_the_scenario_is_refused_without_blocking() {
    let dir = out_dir("inputs_fifo_scenario");
    let fifo = dir.join("scenario.fifo");
    mkfifo(&fifo);
    refused(&dir, &fifo, &["field `-`", "not a regular file (a FIFO)"]);
}

#[test]
fn a_fifo_as_the_urdf_a_scenario_names_is_refused_without_blocking() {
    let dir = out_dir("inputs_fifo_urdf");
    let fifo = dir.join("robot.urdf");
    mkfifo(&fifo);
    let fifo_name = fifo.display().to_string();
    let chain = chain_naming(&dir, "chain.toml", &fifo);
    refused(
        &dir,
        &chain,
        &[
            "field `model.urdf`",
            &fifo_name,
            "not a regular file (a FIFO)",
        ],
    );
    let dynamo = dynamo_naming(&dir, "dynamo.toml", &fifo);
    refused(
        &dir,
        &dynamo,
        &["field `urdf`", &fifo_name, "not a regular file (a FIFO)"],
    );
}

#[test]
fn dev_zero_and_a_folder_as_the_scenario_are_refused() {
    let dir = out_dir("inputs_dev_zero");
    refused(
        &dir,
        Path::new("/dev/zero"),
        &["not a regular file (a character device)"],
    );
    let folder = dir.join("folder.toml");
    std::fs::create_dir_all(&folder).unwrap_or_default();
    refused(&dir, &folder, &["not a regular file (a folder)"]);
}

#[test]
fn oversize_scenario_and_urdf_files_are_refused_before_they_are_read() {
    let dir = out_dir("inputs_oversize");
    // Sparse files: the size is refused from the metadata, nothing is read.
    let big = dir.join("big.toml");
    let f = std::fs::File::create(&big).unwrap_or_else(|e| panic!("{e}"));
    f.set_len(1 << 30).unwrap_or_else(|e| panic!("{e}"));
    refused(
        &dir,
        &big,
        &["larger than the 1 MiB limit for a scenario file (1073741824 bytes)"],
    );
    let urdf = dir.join("big.urdf");
    let f = std::fs::File::create(&urdf).unwrap_or_else(|e| panic!("{e}"));
    f.set_len(17 << 20).unwrap_or_else(|e| panic!("{e}"));
    let chain = chain_naming(&dir, "chain.toml", &urdf);
    refused(
        &dir,
        &chain,
        &[
            "field `model.urdf`",
            "larger than the 16 MiB limit for a URDF file",
        ],
    );
    let _ = std::fs::remove_file(&big);
    let _ = std::fs::remove_file(&urdf);
}

#[test]
fn a_urdf_nested_100000_deep_is_refused_without_overflowing_the_stack() {
    let dir = out_dir("inputs_deep_urdf");
    let n = 100_000;
    let deep = format!("{}{}</robot>", "<x>".repeat(n), "</x>".repeat(n));
    let arm = model_copy(&dir, "arm3.urdf", "deep_arm.urdf", "</robot>", &deep);
    let chain = chain_naming(&dir, "chain.toml", &arm);
    refused(
        &dir,
        &chain,
        &[
            "field `model.urdf`",
            "deep_arm.urdf",
            "elements nested deeper than 64 levels",
        ],
    );
    let body = model_copy(&dir, "humanoid15.urdf", "deep_body.urdf", "</robot>", &deep);
    let dynamo = dynamo_naming(&dir, "dynamo.toml", &body);
    refused(
        &dir,
        &dynamo,
        &[
            "field `urdf`",
            "deep_body.urdf",
            "elements nested deeper than 64 levels",
        ],
    );
}

#[test]
fn a_list_of_200000_entries_is_refused_with_its_cap() {
    let dir = out_dir("inputs_long_list");
    let scales = format!("gain_scales = [{}]", vec!["0.5"; 200_000].join(","));
    let file = scenario_copy(
        &dir,
        "scales.toml",
        DYNAMO,
        &[("gain_scales = [0.25, 0.5, 1.0, 2.0, 4.0]", &scales)],
    );
    refused(
        &dir,
        &file,
        &["field `gain_scales`", "200000 entries; at most 64"],
    );
    // The cap is checked before the order: equal entries keep the file under 1 MiB.
    let impulses = vec!["1"; 200_000];
    let file = scenario_copy(
        &dir,
        "impulses.toml",
        DYNAMO,
        &[(
            "impulses_ns = [0.0, 4.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0, 26.0, 28.0, 30.0, 32.0, 35.0, 40.0, 60.0]",
            &format!("impulses_ns = [{}]", impulses.join(",")),
        )],
    );
    refused(
        &dir,
        &file,
        &["field `impulses_ns`", "200000 entries; at most 64"],
    );
    // A controller named twice would be run twice.
    let file = scenario_copy(
        &dir,
        "twice.toml",
        DYNAMO,
        &[(
            "controllers = [\"parent_space\", \"world_space\", \"world_space_root_spring\"]",
            "controllers = [\"world_space\", \"world_space\"]",
        )],
    );
    refused(&dir, &file, &["field `controllers[1]`", "named twice"]);
}

#[test]
fn a_vector_with_an_extra_element_is_refused_naming_the_field() {
    let dir = out_dir("inputs_vector");
    for (name, source, from, to, field) in [
        (
            "gravity.toml",
            ON_THE_BEAT,
            "gravity_m_s2 = [0.0, -9.81, 0.0]",
            "gravity_m_s2 = [0.0, -9.81, 0.0, 7.0]",
            "model.gravity_m_s2",
        ),
        (
            "push.toml",
            ON_THE_BEAT,
            "force_n = [0.0, 30.0, 0.0]",
            "force_n = [0.0, 30.0, 0.0, 1.0]",
            "pushes[0].force_n",
        ),
        (
            "direction.toml",
            DYNAMO,
            "push_direction = [1.0, 0.0, 0.0]",
            "push_direction = [1.0, 0.0, 0.0, 0.0]",
            "push_direction",
        ),
        (
            "short.toml",
            DYNAMO,
            "rotation_rad = [0.0, 1.4, 0.0]",
            "rotation_rad = [0.0, 1.4]",
            "reach.rotation_rad",
        ),
    ] {
        let file = scenario_copy(&dir, name, source, &[(from, to)]);
        let field = format!("field `{field}`");
        let got = if to.matches(',').count() > from.matches(',').count() {
            "3 numbers expected, got 4"
        } else {
            "3 numbers expected, got 2"
        };
        refused(&dir, &file, &[&field, got]);
    }
}

#[test]
fn values_beyond_their_physical_bound_are_refused_stating_it() {
    let dir = out_dir("inputs_1e308");
    for (name, source, from, to, field, bound) in [
        (
            "spring.toml",
            DYNAMO,
            "stiffness_nm_per_rad = 690.0",
            "stiffness_nm_per_rad = 1e308",
            "root_spring.stiffness_nm_per_rad",
            "at most 1000000 N·m/rad, got 1e308",
        ),
        (
            "break.toml",
            DYNAMO,
            "break_torque_nm = 138.0",
            "break_torque_nm = 1e308",
            "root_spring.break_torque_nm",
            "at most 10000000 N·m, got 1e308",
        ),
        (
            "drop.toml",
            BALL,
            "drop_height_m = 1.5",
            "drop_height_m = 1e308",
            "weights.drop_height_m",
            "(0, 1000] (got 1e308)",
        ),
        (
            "tolerance.toml",
            BALL,
            "tolerance_rad = 0.05",
            "tolerance_rad = 1e308",
            "controllers.analytic.tolerance_rad",
            "got 1e308",
        ),
    ] {
        let file = scenario_copy(&dir, name, source, &[(from, to)]);
        refused(&dir, &file, &[&format!("field `{field}`"), bound]);
    }
}

#[test]
fn urdf_masses_of_1e300_and_0_are_refused_naming_the_link() {
    let dir = out_dir("inputs_mass");
    for (mass, element, says) in [
        (
            "1e300",
            r#"link "hand" <inertial><mass value>"#,
            "1e300 kg is beyond the bound of 1000000 kg",
        ),
        ("0", r#"link "hand""#, "a moving body needs a mass > 0"),
    ] {
        let urdf = model_copy(
            &dir,
            "arm3.urdf",
            &format!("arm_{mass}.urdf"),
            r#"<mass value="0.45"/>"#,
            &format!(r#"<mass value="{mass}"/>"#),
        );
        let file = chain_naming(&dir, &format!("chain_{mass}.toml"), &urdf);
        refused(
            &dir,
            &file,
            &[
                "field `model.urdf`",
                &urdf.display().to_string(),
                element,
                says,
            ],
        );
        let urdf = model_copy(
            &dir,
            "humanoid15.urdf",
            &format!("body_{mass}.urdf"),
            r#"<mass value="5.2"/>"#,
            &format!(r#"<mass value="{mass}"/>"#),
        );
        let file = dynamo_naming(&dir, &format!("dynamo_{mass}.toml"), &urdf);
        refused(
            &dir,
            &file,
            &[
                "field `urdf`",
                &urdf.display().to_string(),
                r#"link "head" <inertial>"#,
                "mass must be finite, greater than 0 and at most 1000000 kg",
            ],
        );
    }
}

#[test]
fn a_misspelt_or_mistyped_kind_is_refused_listing_every_kind() {
    let dir = out_dir("inputs_kind");
    for (name, source, from, to, says) in [
        (
            "beet.toml",
            ON_THE_BEAT,
            r#"kind = "on_the_beat""#,
            r#"kind = "on_the_beet""#,
            r#"unknown kind "on_the_beet""#,
        ),
        (
            "dash.toml",
            DYNAMO,
            r#"kind = "dynamo_push""#,
            r#"kind = "dynamo-push""#,
            r#"unknown kind "dynamo-push""#,
        ),
        (
            "number.toml",
            ON_THE_BEAT,
            r#"kind = "on_the_beat""#,
            "kind = 3",
            "must be a string",
        ),
    ] {
        let file = scenario_copy(&dir, name, source, &[(from, to)]);
        refused(
            &dir,
            &file,
            &[
                "field `kind`",
                says,
                r#""ball_blocking", "dynamo_push", "robot_push", "simbicon_walk", "walk3d", "on_the_beat", "kenwright_reach", "pose_tour""#,
                r#"none: "ball_blocking""#,
            ],
        );
    }
}
