//! `replay.html`: a run's 3D replay, one self-contained page that opens in any browser (no
//! network, no other file). It shows every controller's run of the scenario (a selector), the
//! robot's bodies as their collision shapes, the world frame, the walls and ground of the scene,
//! the targets, the contact forces and pushes as arrows, the joint torques (bars and a plot),
//! with a time slider and play/pause.
//!
//! The page is `assets/replay/page.html` with, inlined: three.js r147 (`three.min.js`, and its
//! `OrbitControls.js`, from the npm package `three@0.147.0`, MIT: `assets/three/`), the page's
//! own script (`assets/replay/replay.js`) and the run's data as JSON (see [`chain`] for what it
//! holds and how it is decimated) in one shape for every kind ([`PageData`]). The chain
//! (joint-space) scenarios write one, the humanoid's ([`humanoid`], pushed or walking), the
//! planar walker's ([`biped`]) and the real robots pushed ([`legged`]).

pub mod biped;
pub mod chain;
mod hull;
pub mod humanoid;
pub mod legged;
mod mesh;

use serde::Serialize;
use serde_json::Value;

use crate::run::report::ReportHeader;

/// What a replay page draws (`replay.js` reads it as JSON), one shape for every kind: the
/// scene, the robot's bodies and joints, and the runs. Each kind's module fills it from its
/// report and recorder.
#[derive(Debug, Serialize)]
pub struct PageData {
    /// "hil replay 1".
    pub format: &'static str,
    /// The report's scenario name.
    pub scenario: String,
    /// The scenario file.
    pub scenario_file: String,
    /// The scenario's kind.
    pub kind: String,
    /// The mode it ran in.
    pub mode: String,
    /// The robot's name.
    pub robot: String,
    /// Whether the robot's root is free (its body drawn as the floating base).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub floating_base: bool,
    /// Whether the view follows the root body (a walk).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub follow: bool,
    /// The robot's description, as the page shows it.
    pub urdf: String,
    /// Gravity, m/s², the page's world (z up).
    pub gravity: [f64; 3],
    /// Per joint: name, whether prismatic, effort.
    pub joints: Vec<Value>,
    /// Per body: its link, centre and collision shapes.
    pub bodies: Vec<Value>,
    /// The convex hulls the shapes refer to.
    pub meshes: Vec<Value>,
    /// The scene's walls.
    pub walls: Vec<Value>,
    /// The ground (`null`: none).
    pub ground: Value,
    /// Keyframes, as ghosts.
    pub keyframes: Vec<Value>,
    /// The hand point (`null`: none).
    pub hand: Value,
    /// The hand's targets.
    pub hand_targets: Vec<Value>,
    /// Pushes, as arrows.
    pub pushes: Vec<Value>,
    /// Notes for the reader.
    pub notes: Vec<String>,
    /// How the runs were sampled and rounded.
    pub decimation: String,
    /// The runs shown.
    pub runs: Vec<Value>,
}

impl PageData {
    /// The page of `header`'s run with the robot `robot` described by `urdf`: nothing in the
    /// scene yet but level ground at z = 0, no keyframe, hand or push.
    pub fn new(header: &ReportHeader, robot: &str, urdf: &str) -> Self {
        Self {
            format: "hil replay 1",
            scenario: header.scenario.clone(),
            scenario_file: header.scenario_file.clone(),
            kind: header.kind.to_owned(),
            mode: header.mode.to_owned(),
            robot: robot.to_owned(),
            floating_base: false,
            follow: false,
            urdf: urdf.to_owned(),
            gravity: [0.0, 0.0, -9.81],
            joints: Vec::new(),
            bodies: Vec::new(),
            meshes: Vec::new(),
            walls: Vec::new(),
            ground: serde_json::json!({ "height": 0.0 }),
            keyframes: Vec::new(),
            hand: Value::Null,
            hand_targets: Vec::new(),
            pushes: Vec::new(),
            notes: Vec::new(),
            decimation: String::new(),
            runs: Vec::new(),
        }
    }

    /// As JSON.
    pub fn value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The page's template: `{{TITLE}}`, `{{THREE}}`, `{{ORBIT}}`, `{{DATA}}`, `{{APP}}` are filled.
const PAGE: &str = include_str!("../../assets/replay/page.html");
/// three.js r147, minified, as npm's `three@0.147.0` ships it (`build/three.min.js`).
const THREE: &str = include_str!("../../assets/three/three.min.js");
/// three.js r147's orbit controls (`examples/js/controls/OrbitControls.js`: sets
/// `THREE.OrbitControls`).
const ORBIT: &str = include_str!("../../assets/three/OrbitControls.js");
/// The page's script.
const APP: &str = include_str!("../../assets/replay/replay.js");

/// The page's push arrow of a replay showing runs pushed by different impulses: the largest
/// shown, `force_n` on `body` (link `link`) from `start_s` for `duration_s`; `notes` say so.
pub(crate) fn push_arrow(
    (body, link): (usize, &str),
    force_n: [f64; 3],
    (start_s, duration_s): (f64, f64),
    largest_ns: f64,
    notes: &mut Vec<String>,
) -> Value {
    notes.push(format!(
        "the push arrow is the largest push shown ({largest_ns} N·s); each run has its own"
    ));
    serde_json::json!({
        "body": body, "link": link,
        "force": force_n.map(|x| significant(x, 4)),
        "start": start_s, "duration": duration_s,
    })
}

/// The page for `data` (shown by `replay.js`), titled `title`.
pub fn page(title: &str, data: &Value) -> String {
    // Inside <script>, `</` could end the element: JSON allows `<\/` for it.
    let json = data.to_string().replace("</", "<\\/");
    let title = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let mut out =
        String::with_capacity(PAGE.len() + THREE.len() + ORBIT.len() + APP.len() + json.len());
    let mut rest = PAGE;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open..].find("}}") else {
            break;
        };
        out.push_str(&rest[..open]);
        match &rest[open + 2..open + close] {
            "TITLE" => out.push_str(&title),
            "THREE" => out.push_str(THREE),
            "ORBIT" => out.push_str(ORBIT),
            "DATA" => out.push_str(&json),
            "APP" => out.push_str(APP),
            other => {
                out.push_str("{{");
                out.push_str(other);
                out.push_str("}}");
            }
        }
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    out
}

/// `x` rounded to a multiple of `step` (what the page needs: it shrinks the JSON).
pub(crate) fn round(x: f64, step: f64) -> f64 {
    let r = (x / step).round() * step;
    // Drop the binary tail (0.30000000000000004) the multiplication leaves.
    let digits = (-step.log10()).ceil().max(0.0) as i32;
    let k = 10f64.powi(digits);
    (r * k).round() / k
}

/// `x` to `digits` significant digits.
pub(crate) fn significant(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = x.abs().log10().floor() as i32;
    let k = 10f64.powi(digits - 1 - e);
    (x * k).round() / k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_inlines_everything_and_escapes_the_data() {
        let data = serde_json::json!({ "name": "</script><b>" });
        let p = page("a <b> & c", &data);
        assert!(p.starts_with("<!DOCTYPE html>"));
        assert!(p.contains("<title>a &lt;b&gt; &amp; c"));
        assert!(!p.contains("{{"), "a placeholder is left");
        assert!(p.contains(r#""name":"<\/script><b>""#));
        assert_eq!(
            p.matches("</script>").count(),
            4,
            "three, controls, data, app"
        );
        // Nothing loads another file: no src, href, import or fetch outside three.js.
        for part in [PAGE, APP] {
            for needle in ["src=", "href=", "import ", "fetch(", "XMLHttpRequest"] {
                assert!(!part.contains(needle), "{needle}");
            }
        }
    }

    #[test]
    fn rounding_gives_short_numbers() {
        assert_eq!(round(0.123_456, 1e-4).to_string(), "0.1235");
        assert_eq!(round(0.1 + 0.2, 1e-4).to_string(), "0.3");
        assert_eq!(significant(123.456, 3), 123.0);
        assert_eq!(significant(-0.001_234_5, 3), -0.001_23);
    }
}
