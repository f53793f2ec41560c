//! `replay.html`, the 3D replay `hil run` writes with a joint-space, humanoid (push or walk), planar walker or robot_push run's outputs,
//! tested as a user sees it: the real `hil` runs a scenario, then headless Chromium opens the page from the
//! run folder (no server, no network) and takes a screenshot, which is decoded and looked at:
//! the robot's colour fills enough of the 3D view, it moves when the page is opened at another
//! instant, the keyframe ghost and a contact force arrow are drawn; and the page's DOM says
//! it drew a frame with no script error.
//!
//! Chromium is Debian's package `chromium` (`.ci/run` installs it). When it is not on the PATH
//! (nor named by `HIL_CHROMIUM`) this test installs it with apt-get (with sudo when not root),
//! as `.ci/run` does; if that fails, the test fails saying so. It never skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use e2e::{hil_run, out_dir, robots_dir, scenario_copy, workspace_root};
use serde_json::Value;

/// The screenshot's size, CSS pixels (device pixel ratio 1).
const WIDTH: usize = 1280;
const HEIGHT: usize = 800;
/// The 3D view between the page's panels (left panel ≤ 340 px, right panel from 960 px, the
/// time bar the last 52 px).
const VIEW: (std::ops::Range<usize>, std::ops::Range<usize>) = (350..950, 0..740);

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The browser: `HIL_CHROMIUM`, or `chromium` on the PATH, or Debian's `chromium` installed now.
fn chromium() -> &'static Path {
    static BROWSER: OnceLock<PathBuf> = OnceLock::new();
    BROWSER.get_or_init(|| {
        if let Some(p) = std::env::var_os("HIL_CHROMIUM") {
            return PathBuf::from(p);
        }
        if let Some(p) = on_path("chromium") {
            return p;
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let apt = |args: &[&str]| {
            let mut c = if root {
                Command::new("apt-get")
            } else {
                let mut c = Command::new("sudo");
                c.args(["-n", "apt-get"]);
                c
            };
            let out = c
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .stdin(Stdio::null())
                .output()
                .unwrap_or_else(|e| panic!("chromium is not installed and apt-get cannot run: {e}"));
            assert!(
                out.status.success(),
                "chromium is not installed and `apt-get {}` failed (install Debian's chromium package, or set HIL_CHROMIUM): {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        };
        eprintln!("replay test: chromium not found: installing Debian's chromium with apt-get");
        apt(&["update", "-qq"]);
        apt(&["install", "-y", "-qq", "chromium"]);
        on_path("chromium").expect("apt-get installed chromium, but it is not on the PATH")
    })
}

/// Open `page` (with `#fragment`) in headless Chromium: its screenshot (RGB rows) and its DOM
/// once loaded.
fn open(page: &Path, fragment: &str, shot: &Path) -> (Vec<[u8; 3]>, String) {
    let profile = shot.with_extension("profile");
    let _ = std::fs::remove_dir_all(&profile);
    let _ = std::fs::remove_file(shot);
    let url = format!("file://{}#{fragment}", page.display());
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            // WebGL on the CPU (SwiftShader) without a GPU.
            "--enable-unsafe-swiftshader",
            "--no-first-run",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={WIDTH},{HEIGHT}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--dump-dom")
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium().display()));
    // The DOM comes on stdout: read it on a thread so that a full pipe never blocks chromium.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for chromium") {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish with {url} in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = reader.join().unwrap_or_default();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let _ = std::fs::remove_dir_all(&profile);
    assert!(status.success(), "chromium {url}: {status}: {stderr}");
    let file = std::fs::File::open(shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot {}: {e}; chromium said: {stderr}",
            shot.display()
        )
    });
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    assert_eq!(
        (info.width as usize, info.height as usize),
        (WIDTH, HEIGHT),
        "screenshot size"
    );
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (pixels, dom)
}

/// The page drew a frame and reported no script error (`#status`, the title).
fn assert_drawn(dom: &str, what: &str) {
    let status = dom
        .find("<div id=\"status\"")
        .map(|i| &dom[i..dom[i..].find("</div>").map_or(dom.len(), |j| i + j)])
        .unwrap_or_else(|| panic!("{what}: no #status in the DOM: {dom:.2000}"));
    let title = dom
        .find("<title>")
        .map(|i| &dom[i + 7..dom[i..].find("</title>").map_or(dom.len(), |j| i + j)])
        .unwrap_or_default();
    assert!(
        status.contains("data-state=\"ready\"") && !title.starts_with("replay error"),
        "{what}: the page did not draw: {status} (title {title:?})"
    );
}

/// (count, centroid x, centroid y) of the 3D view's pixels that `hit` picks.
fn pixels(image: &[[u8; 3]], hit: impl Fn(i32, i32, i32) -> bool) -> (usize, f64, f64) {
    let (mut n, mut sx, mut sy) = (0, 0.0, 0.0);
    for y in VIEW.1.clone() {
        for x in VIEW.0.clone() {
            let [r, g, b] = image[y * WIDTH + x].map(i32::from);
            if hit(r, g, b) {
                n += 1;
                sx += x as f64;
                sy += y as f64;
            }
        }
    }
    (n, sx / n.max(1) as f64, sy / n.max(1) as f64)
}

/// The robot's orange (#e8772e, #d4621a, lit and shaded).
fn orange(r: i32, g: i32, b: i32) -> bool {
    r > 90 && r > g + 40 && g > b + 15
}

/// The keyframe ghost's cyan (#2aa7c9 at 30 % over the background).
fn cyan(r: i32, g: i32, b: i32) -> bool {
    b > r + 25 && g > r + 15
}

/// The contact arrows' red (#d62828, lit and shaded).
fn red(r: i32, g: i32, b: i32) -> bool {
    r > 120 && g < 90 && b < 90 && (g - b).abs() < 30
}

/// The JSON the page draws.
fn data(page: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"replay-data\">";
    let start = page.find(open).expect("the data element") + open.len();
    let end = start + page[start..].find("</script>").expect("its end");
    serde_json::from_str(&page[start..end]).expect("the data is JSON")
}

/// The names of the runs on the page.
fn run_names(d: &Value) -> Vec<&str> {
    d["runs"]
        .as_array()
        .map(|r| r.iter().filter_map(|x| x["name"].as_str()).collect())
        .unwrap_or_default()
}

/// The sum of the upward (z) contact forces of `run` at its first sample at or after `t_s`, N.
fn upward_force_at(run: &Value, t_s: f64) -> f64 {
    let at = run["t"]
        .as_array()
        .and_then(|t| t.iter().position(|x| x.as_f64().is_some_and(|t| t >= t_s)))
        .unwrap_or_else(|| panic!("a sample at {t_s} s"));
    run["contacts"]
        .as_array()
        .expect("contacts")
        .iter()
        .filter(|c| c[0].as_u64() == Some(at as u64))
        .map(|c| c[4].as_f64().unwrap_or(f64::NAN))
        .sum()
}

/// Run `hil run scenario --only controller` (lockstep) into a fresh folder: its replay.html.
fn run(test: &str, scenario: &str, controller: &str) -> (PathBuf, String) {
    let out = out_dir(test);
    let scenario = workspace_root().join("scenarios").join(scenario);
    let s = scenario.to_string_lossy().into_owned();
    let run = hil_run(&[&s, "--only", controller], &out);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("replay.html"),
        "the console lists replay.html"
    );
    let page = out.join("replay.html");
    let text = std::fs::read_to_string(&page).expect("replay.html written");
    // Self-contained: no script, style or image from anywhere else.
    for needle in ["<script src", "<link", "<img", "<iframe"] {
        assert!(!text.contains(needle), "replay.html has {needle}");
    }
    assert!(text.len() < 5 << 20, "replay.html is {} bytes", text.len());
    (page, text)
}

#[test]
fn a_pose_tour_replay_shows_the_robot_moving_and_the_next_keyframe() {
    let started = Instant::now();
    let (page, text) = run("replay_pose_tour", "pose_tour.toml", "arrival");
    let d = data(&text);
    assert_eq!(d["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(d["runs"][0]["name"], "arrival");
    assert_eq!(
        d["bodies"].as_array().map(Vec::len),
        Some(4),
        "arm3: base + 3"
    );
    assert_eq!(d["keyframes"].as_array().map(Vec::len), Some(8));
    // 9 s at one sample per 10 ms (and the last state).
    let samples = d["runs"][0]["t"].as_array().map_or(0, Vec::len);
    assert!((895..=905).contains(&samples), "{samples} samples");
    assert_eq!(
        d["runs"][0]["poses"].as_array().map(Vec::len),
        Some(samples * 4 * 7)
    );
    assert_eq!(
        d["runs"][0]["tau"].as_array().map(Vec::len),
        Some(samples * 3)
    );

    let dir = page.parent().expect("the run folder").to_path_buf();
    let (start, dom) = open(&page, "t=0", &dir.join("t0.png"));
    assert_drawn(&dom, "t = 0");
    let (later, dom) = open(&page, "t=2.5&run=arrival", &dir.join("t2.5.png"));
    assert_drawn(&dom, "t = 2.5 s");
    let (n0, x0, y0) = pixels(&start, orange);
    let (n1, x1, y1) = pixels(&later, orange);
    // The arm (three links, some 0.76 m) covers thousands of pixels of the view.
    assert!(
        n0 > 3000 && n1 > 3000,
        "robot pixels: {n0} at 0 s, {n1} at 2.5 s"
    );
    assert!(
        (x1 - x0).hypot(y1 - y0) > 15.0,
        "the robot did not move on screen: ({x0:.0}, {y0:.0}) → ({x1:.0}, {y1:.0})"
    );
    let (ghost, _, _) = pixels(&later, cyan);
    assert!(ghost > 500, "keyframe ghost pixels: {ghost}");
    eprintln!(
        "replay pose_tour: {} bytes, robot {n0} / {n1} px, ghost {ghost} px, {:.1} s",
        text.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_reach_replay_shows_the_wall_force_on_the_hand_as_an_arrow() {
    let started = Instant::now();
    let (page, text) = run("replay_reach", "kenwright_reach.toml", "jt_nullspace");
    let d = data(&text);
    assert_eq!(d["walls"].as_array().map(Vec::len), Some(1));
    assert_eq!(d["hand_targets"].as_array().map(Vec::len), Some(4));
    // While pressing (from 4.5 s), the wall pushes the hand back along −x, about 15 N.
    let run = &d["runs"][0];
    let t = run["t"].as_array().expect("times");
    let hand = d["hand"]["body"].as_u64().expect("the hand's body");
    let pressing: Vec<f64> = run["contacts"]
        .as_array()
        .expect("contacts")
        .iter()
        .filter(|c| {
            c[1].as_u64() == Some(hand)
                && c[0]
                    .as_u64()
                    .and_then(|i| t.get(i as usize))
                    .and_then(Value::as_f64)
                    .is_some_and(|t| t > 5.5)
        })
        .map(|c| c[2].as_f64().unwrap_or(f64::NAN))
        .collect();
    assert!(!pressing.is_empty(), "no contact on the hand after 5.5 s");
    assert!(
        pressing.iter().all(|&fx| (-25.0..-5.0).contains(&fx)),
        "{pressing:?}"
    );

    let dir = page.parent().expect("the run folder").to_path_buf();
    let (free, dom) = open(&page, "t=1", &dir.join("t1.png"));
    assert_drawn(&dom, "t = 1 s");
    let (pressed, dom) = open(&page, "t=5.8", &dir.join("t5.8.png"));
    assert_drawn(&dom, "t = 5.8 s");
    let (before, _, _) = pixels(&free, red);
    let (during, _, _) = pixels(&pressed, red);
    assert!(
        during > before + 300,
        "the contact arrow: {before} red pixels before contact, {during} while pressing"
    );
    let (robot, _, _) = pixels(&pressed, orange);
    assert!(robot > 2000, "robot pixels: {robot}");
    eprintln!(
        "replay kenwright_reach: {} bytes, arrow {during} − {before} px, {:.1} s",
        text.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_humanoid_replay_shows_the_pushed_body_and_the_ground_under_its_feet() {
    let started = Instant::now();
    let (page, text) = run("replay_humanoid", "dynamo_push.toml", "parent_space");
    let d = data(&text);
    // The largest push it survived and the first it fell to.
    let names = run_names(&d);
    assert_eq!(
        names,
        ["parent_space at 16 N·s", "parent_space at 18 N·s"],
        "{names:?}"
    );
    assert_eq!(d["bodies"].as_array().map(Vec::len), Some(15));
    assert_eq!(d["joints"].as_array().map(Vec::len), Some(14));
    assert_eq!(d["floating_base"], true);
    // 3.5 s at one sample per 20 ms.
    let run = &d["runs"][0];
    let samples = run["t"].as_array().map_or(0, Vec::len);
    assert!((170..=180).contains(&samples), "{samples} samples");
    assert_eq!(
        run["poses"].as_array().map(Vec::len),
        Some(samples * 15 * 7)
    );
    assert_eq!(run["tau"].as_array().map(Vec::len), Some(samples * 14));
    // Standing, the ground holds the body up (z up on the page): the feet's forces sum to about
    // its weight (70.4 kg) at 1 s.
    let up = upward_force_at(run, 1.0);
    assert!((0.8 * 690.6..1.2 * 690.6).contains(&up), "{up} N up at 1 s");

    let dir = page.parent().expect("the run folder").to_path_buf();
    let fall = "run=parent_space%20at%2018%20N%C2%B7s";
    let (standing, dom) = open(&page, &format!("t=1&{fall}"), &dir.join("t1.png"));
    assert_drawn(&dom, "t = 1 s");
    let (fallen, dom) = open(&page, &format!("t=3.4&{fall}"), &dir.join("t3.4.png"));
    assert_drawn(&dom, "t = 3.4 s");
    let (n0, x0, y0) = pixels(&standing, orange);
    let (n1, x1, y1) = pixels(&fallen, orange);
    assert!(
        n0 > 3000 && n1 > 1000,
        "body pixels: {n0} at 1 s, {n1} at 3.4 s"
    );
    assert!(
        (x1 - x0).hypot(y1 - y0) > 15.0,
        "the falling body did not move on screen: ({x0:.0}, {y0:.0}) → ({x1:.0}, {y1:.0})"
    );
    let (arrows, _, _) = pixels(&standing, red);
    assert!(
        arrows > 100,
        "the ground's forces on the feet: {arrows} red pixels"
    );
    eprintln!(
        "replay humanoid: {} bytes, body {n0} / {n1} px, arrows {arrows} px, {:.1} s",
        text.len(),
        started.elapsed().as_secs_f64()
    );
}

/// A `walk3d` replay: the animated window of the humanoid's walk (SIMBICON with Cartwheel's
/// gains, which falls at 1.16 s); walking, the ground carries it; fallen, it lies elsewhere on
/// screen.
#[test]
fn a_walk3d_replay_shows_the_humanoid_walking_and_fallen() {
    let started = Instant::now();
    let (page, text) = run("replay_walk3d", "walk3d.toml", "simbicon3d");
    let d = data(&text);
    assert_eq!(run_names(&d), ["simbicon3d at 300 Hz"]);
    let run = &d["runs"][0];
    let summary = run["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("fell at 1.16 s after 3 steps"),
        "{summary}"
    );
    assert_eq!(d["bodies"].as_array().map(Vec::len), Some(15));
    assert_eq!(d["joints"].as_array().map(Vec::len), Some(14));
    assert!(
        d["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("first 10 s")),
        "{}",
        d["notes"]
    );
    // The scenario's animation_s = 10 at one sample per 20 ms.
    let samples = run["t"].as_array().map_or(0, Vec::len);
    assert_eq!(samples, 500);
    assert_eq!(
        run["poses"].as_array().map(Vec::len),
        Some(samples * 15 * 7)
    );
    assert_eq!(run["tau"].as_array().map(Vec::len), Some(samples * 14));
    // Walking, the ground holds the body up on its feet (z up on the page): over the first half
    // second (the feet's contacts chatter from sample to sample) about its weight (70.4 kg).
    let t = run["t"].as_array().expect("times");
    let first: Vec<usize> = (0..t.len())
        .filter(|&k| t[k].as_f64().is_some_and(|t| t > 0.0 && t <= 0.5))
        .collect();
    let up = first
        .iter()
        .map(|&k| upward_force_at(run, t[k].as_f64().unwrap_or(f64::NAN)))
        .sum::<f64>()
        / first.len() as f64;
    assert!(
        (0.8 * 690.6..1.2 * 690.6).contains(&up),
        "{up} N up on average over the first 0.5 s"
    );

    let dir = page.parent().expect("the run folder").to_path_buf();
    let (walking, dom) = open(&page, "t=0.24", &dir.join("t0.24.png"));
    assert_drawn(&dom, "t = 0.24 s");
    let (fallen, dom) = open(&page, "t=5", &dir.join("t5.png"));
    assert_drawn(&dom, "t = 5 s");
    let (n0, x0, y0) = pixels(&walking, orange);
    let (n1, x1, y1) = pixels(&fallen, orange);
    assert!(
        n0 > 3000 && n1 > 1000,
        "body pixels: {n0} at 0.24 s, {n1} at 5 s"
    );
    assert!(
        (x1 - x0).hypot(y1 - y0) > 15.0,
        "the fallen body did not move on screen: ({x0:.0}, {y0:.0}) → ({x1:.0}, {y1:.0})"
    );
    let (arrows, _, _) = pixels(&walking, red);
    assert!(
        arrows > 100,
        "the ground's forces on the feet: {arrows} red pixels"
    );
    eprintln!(
        "replay walk3d: {} bytes, body {n0} / {n1} px, arrows {arrows} px, {:.1} s",
        text.len(),
        started.elapsed().as_secs_f64()
    );
}

/// A `simbicon_walk` replay: SIMBICON's planar walker with the analytic gains, walking its 20 s;
/// the ground carries its weight on its feet, and it is elsewhere on screen a second later.
#[test]
fn a_walk_replay_shows_the_planar_walker_walking() {
    let started = Instant::now();
    let (page, text) = run("replay_walk", "simbicon_walk.toml", "simbicon_analytic");
    let d = data(&text);
    assert_eq!(run_names(&d), ["simbicon_analytic"]);
    let run = &d["runs"][0];
    let summary = run["summary"].as_str().unwrap_or_default();
    assert!(summary.starts_with("walked 20.0 s"), "{summary}");
    assert_eq!(d["bodies"].as_array().map(Vec::len), Some(7));
    assert_eq!(d["joints"].as_array().map(Vec::len), Some(6));
    // 20 s at the animation's 50 samples a second.
    let samples = run["t"].as_array().map_or(0, Vec::len);
    assert!((999..=1001).contains(&samples), "{samples} samples");
    assert_eq!(run["poses"].as_array().map(Vec::len), Some(samples * 7 * 7));
    assert_eq!(run["tau"].as_array().map(Vec::len), Some(samples * 6));
    // The ground carries its weight (90 kg) on its feet (z up on the page), on average over the
    // first 2 s.
    let t = run["t"].as_array().expect("times");
    let first: Vec<f64> = t
        .iter()
        .filter_map(Value::as_f64)
        .filter(|&t| t > 0.0 && t <= 2.0)
        .collect();
    let up = first.iter().map(|&t| upward_force_at(run, t)).sum::<f64>() / first.len() as f64;
    assert!(
        (0.8 * 882.9..1.2 * 882.9).contains(&up),
        "{up} N up on average over the first 2 s"
    );

    // The torso walks on (body 0, x forward on the page): about 1.1 m in the second.
    let torso_x = |t_s: f64| {
        let k = t.iter().position(|x| x.as_f64().is_some_and(|x| x >= t_s));
        run["poses"][k.unwrap_or(0) * 7 * 7]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    let walked = torso_x(2.0) - torso_x(1.0);
    assert!(
        (0.8..1.5).contains(&walked),
        "the torso went {walked} m from 1 s to 2 s"
    );

    // The view follows the torso: the walker stays in view, its legs in another pose.
    let dir = page.parent().expect("the run folder").to_path_buf();
    let (early, dom) = open(&page, "t=1", &dir.join("t1.png"));
    assert_drawn(&dom, "t = 1 s");
    let (later, dom) = open(&page, "t=1.3", &dir.join("t1.3.png"));
    assert_drawn(&dom, "t = 1.3 s");
    let (n0, _, _) = pixels(&early, orange);
    let (n1, _, _) = pixels(&later, orange);
    assert!(
        n0 > 3000 && n1 > 3000,
        "body pixels: {n0} at 1 s, {n1} at 1.3 s"
    );
    let is_body = |p: &[u8; 3]| orange(i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
    let changed = early
        .iter()
        .zip(&later)
        .filter(|(a, b)| is_body(a) != is_body(b))
        .count();
    assert!(
        changed > 1000,
        "the legs did not move on screen: {changed} pixels changed"
    );
    eprintln!(
        "replay walk: {} bytes, body {n0} / {n1} px, {changed} px changed, {:.1} s",
        text.len(),
        started.elapsed().as_secs_f64()
    );
}

/// A real robot's `robot_push` replay (Solo-12 from example-robot-data, unmodified, its meshes as
/// hulls): the run it stood (0 N·s) and the one it fell to (4 N·s sideways); standing, the
/// ground carries its weight on its four feet; falling, it moves on screen.
#[test]
fn a_robot_push_replay_shows_a_real_robot_on_its_feet_and_falling() {
    let started = Instant::now();
    let urdf = robots_dir().join("solo_description/robots/solo12.urdf");
    let out = out_dir("replay_robot_push");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let source =
        std::fs::read_to_string(workspace_root().join("scenarios/robot_push_solo12.toml")).unwrap();
    let from = source
        .lines()
        .find(|l| l.starts_with("impulses_ns = "))
        .expect("impulses_ns")
        .to_owned();
    let scenario = scenario_copy(
        &out,
        "solo.toml",
        &source,
        &[(&from, "impulses_ns = [0.0, 4.0]")],
    );
    let report = out.join("out");
    let run = hil_run(
        &[
            &scenario.to_string_lossy(),
            "--urdf",
            &urdf.to_string_lossy(),
            "--only",
            "qp_balance",
        ],
        &report,
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let page = report.join("replay.html");
    let text = std::fs::read_to_string(&page).expect("replay.html written");
    let d = data(&text);
    let names = run_names(&d);
    assert_eq!(
        names,
        ["qp_balance at 0 N·s", "qp_balance at 4 N·s"],
        "{names:?}"
    );
    // Solo-12: the base and 4 × 3 leg bodies, 12 joints.
    let bodies = d["bodies"].as_array().map_or(0, Vec::len);
    assert_eq!(bodies, 13);
    assert_eq!(d["joints"].as_array().map(Vec::len), Some(12));
    assert_eq!(d["floating_base"], true);
    let stood = &d["runs"][0];
    let samples = stood["t"].as_array().map_or(0, Vec::len);
    assert!((300..=302).contains(&samples), "{samples} samples");
    assert_eq!(
        stood["poses"].as_array().map(Vec::len),
        Some(samples * bodies * 7)
    );
    let up = upward_force_at(stood, 0.5);
    assert!(
        (0.9 * 24.53..1.1 * 24.53).contains(&up),
        "{up} N up at 0.5 s"
    );

    let fall = "run=qp_balance%20at%204%20N%C2%B7s";
    let (standing, dom) = open(&page, &format!("t=0.5&{fall}"), &out.join("t0.5.png"));
    assert_drawn(&dom, "t = 0.5 s");
    let (fallen, dom) = open(&page, &format!("t=2.9&{fall}"), &out.join("t2.9.png"));
    assert_drawn(&dom, "t = 2.9 s");
    let (n0, x0, y0) = pixels(&standing, orange);
    let (n1, x1, y1) = pixels(&fallen, orange);
    assert!(
        n0 > 1000 && n1 > 500,
        "body pixels: {n0} at 0.5 s, {n1} at 2.9 s"
    );
    assert!(
        (x1 - x0).hypot(y1 - y0) > 15.0,
        "the falling robot did not move on screen: ({x0:.0}, {y0:.0}) → ({x1:.0}, {y1:.0})"
    );
    eprintln!(
        "replay robot_push: {} bytes, body {n0} / {n1} px, {:.1} s",
        text.len(),
        started.elapsed().as_secs_f64()
    );
}
