//! A run owns its output folder, end to end: a second run into a held folder is refused naming
//! the holder; a killed holder blocks nothing; the folder is replaced as a whole (no stale file
//! stays beside a new report, also after `--only`); a copied scenario that keeps its `name` goes
//! to its own default folder; an output folder that is a mount point is published into (staged
//! inside it). See `hil/src/run/output.rs`.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use e2e::{executable, hil, out_dir, processes_mentioning, report, staging_needle};

/// What a complete ball-blocking run writes, sorted.
const OUTPUT_FILES: [&str; 5] = [
    "angle.svg",
    "latency.svg",
    "report.json",
    "scene.json",
    "trajectory.csv",
];

/// The names in `dir`, sorted (hidden ones included).
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

/// `hil run --only analytic --quiet --out <out> <args>` against the real plant (a lockstep
/// run of the built-in scenario's one controller: well under a second in release).
fn quick_run(args: &[&str], out: &Path) -> Output {
    hil()
        .args(["run", "--only", "analytic", "--quiet", "--out"])
        .arg(out)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Start `hil run --only analytic` into `out` against the fake plant going silent after 20
/// steps, so that the run stays busy for `watchdog_ms`; returns once its plant is running (its
/// command line names a path starting with `needle`: the run's staging folder).
fn busy_run(out: &Path, watchdog_ms: u64, needle: &str) -> Child {
    let child = hil()
        .env("HIL_SIM_HOST", executable("fake-plant"))
        .env("FAKE_PLANT", "silent-after:20")
        .args(["run", "--only", "analytic", "--quiet", "--watchdog-ms"])
        .arg(watchdog_ms.to_string())
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"));
    let start = Instant::now();
    while processes_mentioning(needle).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the plant never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

/// The staging folders beside `out` (none must be left after a run).
fn staging_beside(out: &Path) -> Vec<PathBuf> {
    let needle = staging_needle(out);
    let parent = out.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().starts_with(&needle))
        .collect()
}

/// Two runs into one folder at the same time: the second is refused with exit 2 before
/// anything runs, naming the first's pid and command; the first completes untouched.
#[test]
fn a_second_run_into_a_held_folder_is_refused_naming_the_holder() {
    let out = out_dir("held");
    let first = busy_run(&out, 1500, &staging_needle(&out));
    let started = Instant::now();
    let second = quick_run(&[], &out);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the refusal took {:?}",
        started.elapsed()
    );
    assert!(err.contains("in use by another run"), "{err}");
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    assert!(
        err.contains("--watchdog-ms 1500"),
        "names the command: {err}"
    );
    assert!(err.contains(".held.lock"), "names the lock file: {err}");
    assert!(
        String::from_utf8_lossy(&second.stdout).is_empty(),
        "the refused run printed a result"
    );

    // The first run ends on its watchdog (a lost plant: exit 1), its outputs whole and its own.
    let first = first.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let err = stderr(&first);
    assert_eq!(first.status.code(), Some(1), "{err}");
    assert!(err.contains("plant lost"), "{err}");
    assert_eq!(names(&out), OUTPUT_FILES);
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(r["faults"]["plant_lost"], true);
    assert!(staging_beside(&out).is_empty());
}

/// A run whose `hil` is killed with SIGKILL mid-run (no chance to clean up) does not block the
/// next run into its folder, which also clears the killed run's staging folder.
#[test]
fn a_killed_holder_does_not_block_the_next_run() {
    let out = out_dir("killed_holder");
    let mut first = busy_run(&out, 60_000, &staging_needle(&out));
    let pid = i32::try_from(first.id()).unwrap_or(0);
    // SAFETY: kill(2) on the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let status = first.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    assert_eq!(staging_beside(&out).len(), 1, "the killed run's staging");
    // Its plant dies with it (PR_SET_PDEATHSIG).
    let needle = staging_needle(&out);
    let start = Instant::now();
    while !processes_mentioning(&needle).is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }

    let next = quick_run(&[], &out);
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    assert_eq!(names(&out), OUTPUT_FILES);
    assert_eq!(report(&out)["complete"], true);
    assert!(
        staging_beside(&out).is_empty(),
        "{:?}",
        staging_beside(&out)
    );
}

/// Files that are not this run's are gone after it: a stray file and an earlier run's extra
/// outputs, after a full run and after a run with `--only`; the outputs are this run's.
#[test]
fn the_folder_is_replaced_as_a_whole() {
    let out = out_dir("stale");
    // A folder of the user's own (not empty, no report.json) is never replaced.
    std::fs::write(out.join("notes.txt"), "mine").unwrap_or_default();
    let refused = quick_run(&[], &out);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("holds no report.json"));
    assert_eq!(names(&out), ["notes.txt"]);
    std::fs::remove_file(out.join("notes.txt")).unwrap_or_default();
    let first = quick_run(&[], &out);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    std::fs::write(out.join("stale.txt"), "old").unwrap_or_default();
    std::fs::create_dir_all(out.join("old_plots")).unwrap_or_default();
    std::fs::write(out.join("old_plots/walk.gif"), "old").unwrap_or_default();
    let run = hil()
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(names(&out), OUTPUT_FILES);
    assert_eq!(
        report(&out)["controllers"].as_array().map(Vec::len),
        Some(3)
    );

    std::fs::write(out.join("stale.txt"), "old").unwrap_or_default();
    let run = quick_run(&[], &out);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(names(&out), OUTPUT_FILES);
    let r = report(&out);
    let controllers = r["controllers"].as_array().cloned().unwrap_or_default();
    assert_eq!(controllers.len(), 1, "the --only run's report");
    assert_eq!(controllers[0]["name"], "analytic");
    assert!(staging_beside(&out).is_empty());
}

/// An output folder that exists and is not a folder is refused with exit 2, naming it.
#[test]
fn a_file_in_place_of_the_folder_is_refused() {
    let dir = out_dir("not_a_folder");
    let out = dir.join("report");
    std::fs::write(&out, "x").unwrap_or_default();
    let run = quick_run(&[], &out);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&out.display().to_string()) && err.contains("not a folder"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap_or_default(), "x");
}

/// The default output folder is named after the scenario file: a copy `mine.toml` that keeps
/// `name = "ball_blocking"` goes to `out/mine`, leaving `out/ball_blocking` (the built-in's) alone.
#[test]
fn a_copied_scenario_goes_to_its_own_default_folder() {
    let cwd = out_dir("copied");
    std::fs::write(
        cwd.join("mine.toml"),
        include_str!("../scenarios/ball_blocking.toml"),
    )
    .unwrap_or_default();
    let run = |args: &[&str]| {
        let o = hil()
            .current_dir(&cwd)
            .args(["run", "--only", "analytic", "--quiet"])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    };
    run(&[]);
    let original = std::fs::read(cwd.join("out/ball_blocking/report.json")).unwrap_or_default();
    assert!(
        !original.is_empty(),
        "the built-in scenario's default folder"
    );
    run(&["mine.toml"]);
    let mine = report(&cwd.join("out/mine"));
    assert_eq!(mine["scenario"], "ball_blocking");
    assert_eq!(mine["scenario_file"], "mine.toml");
    assert_eq!(
        std::fs::read(cwd.join("out/ball_blocking/report.json")).unwrap_or_default(),
        original,
        "the copy overwrote the original's outputs"
    );
}

/// Unmounts on drop.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        unmount(&self.0);
    }
}

fn c_path(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap_or_default()
}

fn unmount(p: &Path) {
    let path = c_path(p);
    // SAFETY: umount2(2) with a NUL-terminated path that outlives the call.
    let _ = unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
}

/// Mount a fresh tmpfs on `dir`; the reason when this process may not.
fn mount_tmpfs(dir: &Path) -> Result<Mounted, String> {
    let (path, fs) = (c_path(dir), c"tmpfs");
    // SAFETY: mount(2) with NUL-terminated strings that outlive the call and no data.
    let rc = unsafe { libc::mount(fs.as_ptr(), path.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if rc == 0 {
        Ok(Mounted(dir.to_path_buf()))
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

fn device(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(p).unwrap_or_else(|e| panic!("{e}")))
}

/// `--out` on a mount point (a tmpfs: a folder that cannot be renamed, on another filesystem
/// than its parent): the run stages inside it and publishes there, replacing its contents as a
/// whole, the mount left in place. Skipped, saying so, where mounting is not permitted.
#[test]
fn a_mount_point_output_folder_is_published_into() {
    let dir = out_dir("mount");
    let out = dir.join("mnt");
    unmount(&out); // a mount left by an earlier, interrupted run of this test
    std::fs::create_dir_all(&out).unwrap_or_default();
    let _mounted = match mount_tmpfs(&out) {
        Ok(m) => m,
        Err(why) => {
            eprintln!(
                "SKIPPED a_mount_point_output_folder_is_published_into: cannot mount a tmpfs on {}: {why}",
                out.display()
            );
            return;
        }
    };
    assert_ne!(device(&out), device(&dir), "the tmpfs is mounted");
    // An earlier run's outputs (a folder of the user's own, with no report.json, is refused).
    std::fs::write(out.join("report.json"), "{}").unwrap_or_default();
    std::fs::write(out.join("stale.txt"), "old").unwrap_or_default();
    for pass in ["a fresh mount", "again"] {
        let run = quick_run(&[], &out);
        assert_eq!(run.status.code(), Some(0), "{pass}: {}", stderr(&run));
        assert_eq!(names(&out), OUTPUT_FILES, "{pass}");
        assert_eq!(report(&out)["complete"], true, "{pass}");
        assert_ne!(device(&out), device(&dir), "{pass}: still the mount");
        assert!(staging_beside(&out).is_empty(), "{pass}");
    }
    // The lock is beside it (the parent is writable), and a held mount is refused like any
    // folder.
    assert!(dir.join(".mnt.lock").is_file());
    let inside = out.join(".partial-").to_string_lossy().into_owned();
    let first = busy_run(&out, 1000, &inside);
    let second = quick_run(&[], &out);
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    let first = first.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    assert_eq!(names(&out), OUTPUT_FILES);
}
