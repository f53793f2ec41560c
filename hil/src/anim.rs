//! An animated side view (GIF) of a planar walking character: each frame draws the character's
//! links as thick segments, its centre of mass, the ground's contact forces as arrows, the ground
//! line with scrolling distance ticks, and a progress bar in place of a clock (shapes only: no
//! fonts are needed, none exist on CI machines). The camera follows the centre of mass forward.
//!
//! This is for looking at a run after it finished: it runs off the real-time path, allocates
//! freely and takes milliseconds per frame. It never panics: non-finite numbers in the poses are
//! skipped (a bone, arrow or centre of mass with one is not drawn; a pose with a non-finite time
//! is not used), bad settings and an empty run are reported as [`AnimError`].

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use plotters::backend::{BitMapBackend, DrawingBackend};
use plotters::style::RGBColor;

/// One planar body drawn as a thick segment (a link of the character), world metres, x forward,
/// y up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bone {
    /// One end of the segment, m.
    pub from_m: [f64; 2],
    /// The other end of the segment, m.
    pub to_m: [f64; 2],
    /// The thickness of the drawn segment, m (drawn at least about 2 pixels thick).
    pub width_m: f64,
    /// Which part of the character it is: chooses the colour.
    pub kind: BoneKind,
}

/// Which part of the character a [`Bone`] belongs to (one colour each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoneKind {
    /// The torso (and anything not a leg): grey.
    Torso,
    /// The left leg: blue.
    Left,
    /// The right leg: orange.
    Right,
}

/// A force drawn as an arrow from a point (a contact force of the ground on a foot).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForceArrow {
    /// Where the force acts (the arrow's tail), world m.
    pub at_m: [f64; 2],
    /// The force, N, world axes; drawn [`GifSettings::newtons_per_m`] newtons per metre long.
    pub force_n: [f64; 2],
}

/// One animation frame: the character at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Pose {
    /// The simulated time of this pose, s.
    pub time_s: f64,
    /// The links, drawn in this order (a later bone covers an earlier one).
    pub bones: Vec<Bone>,
    /// The centre of mass, world m: drawn as a disc with a cross; the camera follows its x.
    pub com_m: [f64; 2],
    /// The contact forces, drawn as arrows over the bones.
    pub forces: Vec<ForceArrow>,
}

/// How to render the GIF.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GifSettings {
    /// Image width, pixels, 64..=1920.
    pub width_px: u32,
    /// Image height, pixels, 64..=1920.
    pub height_px: u32,
    /// Frames per second of simulated time, 1..=50 (the frame delay is 1/fps rounded to the
    /// GIF's unit, a hundredth of a second).
    pub frames_per_s: f64,
    /// The width of the world shown, m (the height follows from the image's aspect ratio, from
    /// 0.1 m below the ground up).
    pub view_width_m: f64,
    /// The arrow scale: newtons per metre of arrow, > 0.
    pub newtons_per_m: f64,
    /// A time, s (e.g. when the walker fell): frames at or after it get a red border.
    pub marker: Option<f64>,
}

impl Default for GifSettings {
    /// 480×270 pixels, 20 frames per second, a 3.2 m wide view, 1000 N per metre of arrow, no
    /// marker.
    fn default() -> Self {
        Self {
            width_px: 480,
            height_px: 270,
            frames_per_s: 20.0,
            view_width_m: 3.2,
            newtons_per_m: 1000.0,
            marker: None,
        }
    }
}

/// What [`write_gif`] wrote.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GifSummary {
    /// The number of frames in the file.
    pub frames: usize,
    /// The size of the file, bytes.
    pub bytes: u64,
    /// How long one loop of the GIF plays, s: frames × the frame delay (so 41 × 0.05 s =
    /// 2.05 s for a 2 s run at 20 frames per second).
    pub duration_s: f64,
}

/// Why [`write_gif`] wrote no (complete) file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnimError {
    /// No pose (with a finite time) to draw.
    NoPoses,
    /// A setting out of its range (or the run would need more than [`MAX_FRAMES`] frames).
    BadSettings(String),
    /// Creating or writing the file failed.
    Io(String),
    /// The drawing backend refused a shape.
    Draw(String),
}

impl fmt::Display for AnimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoPoses => write!(f, "no pose with a finite time to animate"),
            Self::BadSettings(why) => write!(f, "bad animation settings: {why}"),
            Self::Io(why) => write!(f, "writing the GIF: {why}"),
            Self::Draw(why) => write!(f, "drawing a GIF frame: {why}"),
        }
    }
}

impl std::error::Error for AnimError {}

/// The most frames [`write_gif`] writes (83 minutes at 20 frames per second); a longer run at
/// the chosen rate is refused as [`AnimError::BadSettings`].
pub const MAX_FRAMES: usize = 100_000;

/// Distance between ground ticks, m (every second one is darker: one per metre).
const TICK_SPACING_M: f64 = 0.5;
/// How far below the ground the view reaches, m.
const BELOW_GROUND_M: f64 = 0.1;
/// The marker border's thickness, px.
const BORDER_PX: i32 = 3;

const WHITE: RGBColor = RGBColor(255, 255, 255);
const GROUND_FILL: RGBColor = RGBColor(238, 238, 238);
const GROUND_LINE: RGBColor = RGBColor(80, 80, 80);
const MINOR_TICK: RGBColor = RGBColor(160, 160, 160);
const MAJOR_TICK: RGBColor = RGBColor(60, 60, 60);
const TORSO: RGBColor = RGBColor(128, 128, 128);
const LEFT: RGBColor = RGBColor(31, 119, 180);
const RIGHT: RGBColor = RGBColor(255, 127, 14);
const COM: RGBColor = RGBColor(20, 20, 20);
const FORCE: RGBColor = RGBColor(44, 160, 44);
const BAR_TRACK: RGBColor = RGBColor(222, 222, 222);
const BAR_FILL: RGBColor = RGBColor(90, 90, 90);
const MARKER: RGBColor = RGBColor(220, 20, 20);

/// Write `poses` (samples in time order, any rate) as an animated GIF at `path`, one frame every
/// 1/fps of simulated time from the first pose's time to the last, each frame showing the pose
/// nearest to its time. The file loops forever.
///
/// Poses with a non-finite time are ignored; the others are used in time order even if given
/// out of order. Errors: [`AnimError::BadSettings`] (checked first, before any file is made),
/// [`AnimError::NoPoses`], [`AnimError::Io`], [`AnimError::Draw`]; on an error after the file
/// was created it is left incomplete.
pub fn write_gif(
    path: &Path,
    poses: &[Pose],
    settings: &GifSettings,
) -> Result<GifSummary, AnimError> {
    check_settings(settings)?;
    let mut sorted: Vec<&Pose> = poses.iter().filter(|p| p.time_s.is_finite()).collect();
    if sorted.is_empty() {
        return Err(AnimError::NoPoses);
    }
    sorted.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    let (t0, t1) = match (sorted.first(), sorted.last()) {
        (Some(first), Some(last)) => (first.time_s, last.time_s),
        _ => return Err(AnimError::NoPoses),
    };
    let fps = settings.frames_per_s;
    let span = t1 - t0;
    // The small allowance keeps a 2 s run at 20 fps at 41 frames despite rounding in the times.
    let last_frame = (span * fps + 1e-6).floor();
    if !last_frame.is_finite() || last_frame >= MAX_FRAMES as f64 {
        return Err(AnimError::BadSettings(format!(
            "the poses span {span:.3e} s: at {fps} frames per second that is more than \
             {MAX_FRAMES} frames"
        )));
    }
    let frames = last_frame as usize + 1;
    let delay_cs = (100.0 / fps).round().clamp(1.0, 100.0) as u32;

    // Create the file ourselves first so that an unwritable path is reported with the
    // operating system's reason (the backend truncates and reuses it).
    std::fs::File::create(path).map_err(|e| AnimError::Io(format!("{}: {e}", path.display())))?;
    let size = (settings.width_px, settings.height_px);
    let mut backend = BitMapBackend::gif(path, size, delay_cs * 10)
        .map_err(|e| AnimError::Io(format!("{}: {e}", path.display())))?;

    let view = View::new(settings);
    let mut camera_x = sorted
        .iter()
        .map(|p| p.com_m[0])
        .find(|x| x.is_finite())
        .unwrap_or(0.0);
    for k in 0..frames {
        let t = t0 + k as f64 / fps;
        let Some(pose) = nearest(&sorted, t) else {
            return Err(AnimError::NoPoses);
        };
        if pose.com_m[0].is_finite() {
            camera_x = pose.com_m[0];
        }
        let progress = if span > 0.0 {
            ((t - t0) / span).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let marked = settings.marker.is_some_and(|m| t >= m);
        let mut canvas = Canvas {
            backend: &mut backend,
            w: settings.width_px as f64,
            h: settings.height_px as f64,
        };
        draw_frame(&mut canvas, &view, camera_x, pose, progress, marked)
            .map_err(|e| AnimError::Draw(e.to_string()))?;
        backend
            .present()
            .map_err(|e| AnimError::Io(format!("writing frame {k}: {e}")))?;
    }
    // Dropping the backend writes the GIF trailer (and ignores a failure to: checked below).
    drop(backend);
    let bytes = check_trailer(path)?;
    Ok(GifSummary {
        frames,
        bytes,
        duration_s: frames as f64 * delay_cs as f64 / 100.0,
    })
}

/// Refuse settings out of range (NaN included).
fn check_settings(s: &GifSettings) -> Result<(), AnimError> {
    let bad = |why: String| Err(AnimError::BadSettings(why));
    if !(1.0..=50.0).contains(&s.frames_per_s) {
        return bad(format!("frames_per_s {} is not in [1, 50]", s.frames_per_s));
    }
    for (name, px) in [("width_px", s.width_px), ("height_px", s.height_px)] {
        if !(64..=1920).contains(&px) {
            return bad(format!("{name} {px} is not in 64..=1920"));
        }
    }
    if !(s.view_width_m.is_finite() && s.view_width_m > 0.0) {
        return bad(format!(
            "view_width_m {} is not a positive number",
            s.view_width_m
        ));
    }
    if !(s.newtons_per_m.is_finite() && s.newtons_per_m > 0.0) {
        return bad(format!(
            "newtons_per_m {} is not a positive number",
            s.newtons_per_m
        ));
    }
    if let Some(m) = s.marker
        && !m.is_finite()
    {
        return bad(format!("marker {m} is not a finite time"));
    }
    Ok(())
}

/// The file's size, after checking it ends with the GIF trailer (the backend writes it when
/// dropped and cannot report a failure).
fn check_trailer(path: &Path) -> Result<u64, AnimError> {
    let io = |e: std::io::Error| AnimError::Io(format!("{}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(io)?;
    let bytes = file.metadata().map_err(io)?.len();
    let mut last = [0u8; 1];
    if bytes == 0 {
        return Err(AnimError::Io(format!("{} is empty", path.display())));
    }
    file.seek(SeekFrom::End(-1)).map_err(io)?;
    file.read_exact(&mut last).map_err(io)?;
    if last[0] != 0x3B {
        return Err(AnimError::Io(format!(
            "{} has no GIF trailer (incomplete write)",
            path.display()
        )));
    }
    Ok(bytes)
}

/// The pose nearest in time to `t` (`sorted` in time order), the earlier on a tie; `None` only
/// for no poses.
fn nearest<'a>(sorted: &[&'a Pose], t: f64) -> Option<&'a Pose> {
    let i = sorted.partition_point(|p| p.time_s < t);
    let after = sorted.get(i).copied();
    let before = i.checked_sub(1).and_then(|j| sorted.get(j)).copied();
    match (before, after) {
        (Some(b), Some(a)) if t - b.time_s > a.time_s - t => Some(a),
        (Some(b), _) => Some(b),
        (None, a) => a,
    }
}

/// World to pixel mapping, up to the camera's x.
struct View {
    /// Pixels per metre (both axes).
    scale: f64,
    /// Image width and height, px.
    w: f64,
    h: f64,
    /// Newtons per metre of force arrow.
    newtons_per_m: f64,
}

impl View {
    fn new(s: &GifSettings) -> Self {
        let w = s.width_px as f64;
        Self {
            scale: w / s.view_width_m,
            w,
            h: s.height_px as f64,
            newtons_per_m: s.newtons_per_m,
        }
    }

    /// Pixel coordinates (x right, y down) of world point `p` with the camera at `cx`.
    fn px(&self, cx: f64, p: [f64; 2]) -> [f64; 2] {
        [
            (p[0] - cx) * self.scale + self.w / 2.0,
            self.h - (p[1] + BELOW_GROUND_M) * self.scale,
        ]
    }
}

/// The drawing surface of one frame, in floating-point pixels: every shape is drawn as
/// rectangles of whole pixels clipped to the image, in flat colours (no antialiasing: a frame
/// has a dozen colours, which keeps the GIF small and its palette exact).
struct Canvas<'b, 'a> {
    backend: &'b mut BitMapBackend<'a>,
    w: f64,
    h: f64,
}

type DrawResult = Result<(), String>;

impl Canvas<'_, '_> {
    /// Fill the pixels [x0, x1) × [y0, y1), clipped to the image; nothing if non-finite.
    fn rect(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, c: RGBColor) -> DrawResult {
        if ![x0, y0, x1, y1].iter().all(|v| v.is_finite()) {
            return Ok(());
        }
        let cx = |v: f64| v.round().clamp(-1.0, self.w + 1.0) as i32;
        let cy = |v: f64| v.round().clamp(-1.0, self.h + 1.0) as i32;
        let (ax, bx) = (cx(x0.min(x1)), cx(x0.max(x1)));
        let (ay, by) = (cy(y0.min(y1)), cy(y0.max(y1)));
        if ax >= bx || ay >= by {
            return Ok(());
        }
        self.backend
            .draw_rect((ax, ay), (bx, by), &c, true)
            .map_err(|e| e.to_string())
    }

    /// A segment from `a` to `b` thickened to `half` pixels on each side, as a polygon (a
    /// square for a segment of no length).
    fn thick_segment(&mut self, a: [f64; 2], b: [f64; 2], half: f64, c: RGBColor) -> DrawResult {
        let d = [b[0] - a[0], b[1] - a[1]];
        let len = d[0].hypot(d[1]);
        if !(len.is_finite() && half.is_finite()) {
            return Ok(());
        }
        if len < 1e-9 {
            return self.rect(a[0] - half, a[1] - half, a[0] + half, a[1] + half, c);
        }
        let n = [-d[1] / len * half, d[0] / len * half];
        self.polygon(
            &[
                [a[0] + n[0], a[1] + n[1]],
                [b[0] + n[0], b[1] + n[1]],
                [b[0] - n[0], b[1] - n[1]],
                [a[0] - n[0], a[1] - n[1]],
            ],
            c,
        )
    }

    /// Fill a convex polygon by pixel rows (a pixel is filled if its centre is inside), without
    /// antialiasing so that a frame keeps a handful of flat colours; nothing if any vertex is
    /// non-finite.
    fn polygon(&mut self, points: &[[f64; 2]], c: RGBColor) -> DrawResult {
        if points.len() < 3 || !points.iter().flatten().all(|v| v.is_finite()) {
            return Ok(());
        }
        let (lo, hi) = points
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p[1]), hi.max(p[1]))
            });
        for row in self.rows(lo, hi) {
            let yc = row + 0.5;
            let mut span = (f64::INFINITY, f64::NEG_INFINITY);
            for (i, p) in points.iter().enumerate() {
                let q = points[(i + 1) % points.len()];
                if (p[1] <= yc) != (q[1] <= yc) {
                    let x = p[0] + (yc - p[1]) / (q[1] - p[1]) * (q[0] - p[0]);
                    span = (span.0.min(x), span.1.max(x));
                }
            }
            self.span(span.0, span.1, row, c)?;
        }
        Ok(())
    }

    /// A filled disc of `radius` pixels, drawn like [`Canvas::polygon`].
    fn disc(&mut self, centre: [f64; 2], radius: f64, c: RGBColor) -> DrawResult {
        if !(centre.iter().all(|v| v.is_finite()) && radius.is_finite()) {
            return Ok(());
        }
        for row in self.rows(centre[1] - radius, centre[1] + radius) {
            let dy = row + 0.5 - centre[1];
            let dx = (radius * radius - dy * dy).sqrt();
            self.span(centre[0] - dx, centre[0] + dx, row, c)?;
        }
        Ok(())
    }

    /// The pixel rows whose centres lie in [lo, hi], within the image (empty if non-finite).
    fn rows(&self, lo: f64, hi: f64) -> impl Iterator<Item = f64> + use<> {
        let first = (lo - 0.5).ceil().max(0.0);
        let last = (hi - 0.5).floor().min(self.h - 1.0);
        let n = if first.is_finite() && last.is_finite() && last >= first {
            (last - first) as u32 + 1
        } else {
            0
        };
        (0..n).map(move |i| first + i as f64)
    }

    /// Fill the pixels of row `row` whose centres lie in [x0, x1].
    fn span(&mut self, x0: f64, x1: f64, row: f64, c: RGBColor) -> DrawResult {
        let first = (x0 - 0.5).ceil();
        let last = (x1 - 0.5).floor();
        if last >= first {
            self.rect(first, row, last + 1.0, row + 1.0, c)?;
        }
        Ok(())
    }
}

/// Draw one frame: background and ground, bones, centre of mass, forces, progress bar, marker.
fn draw_frame(
    canvas: &mut Canvas<'_, '_>,
    view: &View,
    camera_x: f64,
    pose: &Pose,
    progress: f64,
    marked: bool,
) -> DrawResult {
    let (w, h, s) = (view.w, view.h, view.scale);
    canvas.rect(0.0, 0.0, w, h, WHITE)?;

    // The ground: a light band below y = 0, its line, and ticks every 0.5 m of world x.
    let ground_y = view.px(camera_x, [0.0, 0.0])[1];
    canvas.rect(0.0, ground_y, w, h, GROUND_FILL)?;
    let half_view_m = w / s / 2.0;
    let first = ((camera_x - half_view_m) / TICK_SPACING_M).floor();
    let last = ((camera_x + half_view_m) / TICK_SPACING_M).ceil();
    let count = last - first;
    // More ticks than pixel columns would be a grey smear: draw none then.
    if count.is_finite() && count >= 0.0 && count <= w {
        for i in 0..=(count as u32) {
            let k = first + i as f64;
            let major = k.rem_euclid(2.0) == 0.0;
            let x = view.px(camera_x, [k * TICK_SPACING_M, 0.0])[0];
            let (len, colour) = if major {
                (12.0, MAJOR_TICK)
            } else {
                (6.0, MINOR_TICK)
            };
            canvas.rect(x - 1.0, ground_y, x + 1.0, ground_y + len, colour)?;
        }
    }
    canvas.rect(0.0, ground_y - 1.0, w, ground_y + 1.0, GROUND_LINE)?;

    for bone in &pose.bones {
        let colour = match bone.kind {
            BoneKind::Torso => TORSO,
            BoneKind::Left => LEFT,
            BoneKind::Right => RIGHT,
        };
        if !bone.width_m.is_finite() {
            continue;
        }
        let half = (bone.width_m.abs() * s / 2.0).max(1.0);
        let a = view.px(camera_x, bone.from_m);
        let b = view.px(camera_x, bone.to_m);
        canvas.thick_segment(a, b, half, colour)?;
    }

    let com = view.px(camera_x, pose.com_m);
    if com.iter().all(|v| v.is_finite()) {
        canvas.disc(com, 5.5, COM)?;
        canvas.rect(
            com[0] - 4.0,
            com[1] - 0.5,
            com[0] + 4.0,
            com[1] + 0.5,
            WHITE,
        )?;
        canvas.rect(
            com[0] - 0.5,
            com[1] - 4.0,
            com[0] + 0.5,
            com[1] + 4.0,
            WHITE,
        )?;
    }

    for force in &pose.forces {
        let tail = view.px(camera_x, force.at_m);
        // Pixels of arrow per newton, y flipped below.
        let per_n = s / view.newtons_per_m;
        let v = [force.force_n[0] * per_n, -force.force_n[1] * per_n];
        draw_arrow(canvas, tail, v)?;
    }

    // The progress bar inside the marker border's place, along the top edge.
    let (x0, x1, y0) = (5.0, w - 5.0, 5.0);
    canvas.rect(x0, y0, x1, y0 + 4.0, BAR_TRACK)?;
    canvas.rect(x0, y0, x0 + (x1 - x0) * progress, y0 + 4.0, BAR_FILL)?;

    if marked {
        let b = BORDER_PX as f64;
        canvas.rect(0.0, 0.0, w, b, MARKER)?;
        canvas.rect(0.0, h - b, w, h, MARKER)?;
        canvas.rect(0.0, 0.0, b, h, MARKER)?;
        canvas.rect(w - b, 0.0, w, h, MARKER)?;
    }
    Ok(())
}

/// An arrow from `tail` along `v` (pixels): a 2.5 pixel shaft and a triangular head.
fn draw_arrow(canvas: &mut Canvas<'_, '_>, tail: [f64; 2], v: [f64; 2]) -> DrawResult {
    let len = v[0].hypot(v[1]);
    if !(len.is_finite() && tail.iter().all(|t| t.is_finite())) || len < 1.0 {
        return Ok(());
    }
    let u = [v[0] / len, v[1] / len];
    let tip = [tail[0] + v[0], tail[1] + v[1]];
    let head = (0.35 * len).min(12.0);
    let base = [tip[0] - u[0] * head, tip[1] - u[1] * head];
    canvas.thick_segment(tail, base, 1.25, FORCE)?;
    let n = [-u[1] * head * 0.5, u[0] * head * 0.5];
    canvas.polygon(
        &[
            tip,
            [base[0] + n[0], base[1] + n[1]],
            [base[0] - n[0], base[1] - n[1]],
        ],
        FORCE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of this test's own under the system's temporary directory.
    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("hil-anim-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A stick figure walking forward at 1 m/s for `duration_s`, `rate_hz` samples a second:
    /// torso, two two-segment legs swinging at 1 Hz, the ground force on the lower foot.
    fn walk(duration_s: f64, rate_hz: f64) -> Vec<Pose> {
        let samples = (duration_s * rate_hz).round() as usize;
        (0..=samples)
            .map(|i| {
                let t = i as f64 / rate_hz;
                let x = t;
                let hip = [x, 0.9];
                let swing = 0.4 * (std::f64::consts::TAU * t).sin();
                let leg = |theta: f64| {
                    let knee = [hip[0] + 0.45 * theta.sin(), hip[1] - 0.45 * theta.cos()];
                    let shank = theta - 0.2;
                    let foot = [knee[0] + 0.45 * shank.sin(), knee[1] - 0.45 * shank.cos()];
                    (knee, foot)
                };
                let (left_knee, left_foot) = leg(swing);
                let (right_knee, right_foot) = leg(-swing);
                let bone = |from_m, to_m, width_m, kind| Bone {
                    from_m,
                    to_m,
                    width_m,
                    kind,
                };
                let stance = if left_foot[1] <= right_foot[1] {
                    left_foot
                } else {
                    right_foot
                };
                Pose {
                    time_s: t,
                    bones: vec![
                        bone(hip, left_knee, 0.08, BoneKind::Left),
                        bone(left_knee, left_foot, 0.07, BoneKind::Left),
                        bone(hip, [x, 1.5], 0.14, BoneKind::Torso),
                        bone(hip, right_knee, 0.08, BoneKind::Right),
                        bone(right_knee, right_foot, 0.07, BoneKind::Right),
                    ],
                    com_m: [x, 1.0],
                    forces: vec![ForceArrow {
                        at_m: stance,
                        force_n: [60.0 * swing.signum(), 750.0],
                    }],
                }
            })
            .collect()
    }

    /// The decoded frames (RGBA, full size) and their delays, and the image size.
    fn decode(path: &Path) -> (u16, u16, Vec<(Vec<u8>, u16)>) {
        let mut options = gif::DecodeOptions::new();
        options.set_color_output(gif::ColorOutput::RGBA);
        let mut decoder = options
            .read_info(std::fs::File::open(path).unwrap())
            .unwrap();
        let (w, h) = (decoder.width(), decoder.height());
        let mut frames = Vec::new();
        while let Some(frame) = decoder.read_next_frame().unwrap() {
            assert_eq!((frame.left, frame.top), (0, 0));
            assert_eq!((frame.width, frame.height), (w, h));
            frames.push((frame.buffer.to_vec(), frame.delay));
        }
        (w, h, frames)
    }

    /// Small frames for the tests that only count them (GIF encoding is slow in debug builds).
    fn small() -> GifSettings {
        GifSettings {
            width_px: 160,
            height_px: 90,
            ..GifSettings::default()
        }
    }

    fn is_red(rgba: &[u8]) -> bool {
        rgba[0] > 180 && rgba[1] < 70 && rgba[2] < 70
    }

    /// The border pixels (3 wide) of a frame that are red, and how many border pixels there are.
    fn red_border(frame: &[u8], w: usize, h: usize) -> (usize, usize) {
        let mut red = 0;
        let mut all = 0;
        for y in 0..h {
            for x in 0..w {
                if x < 3 || y < 3 || x >= w - 3 || y >= h - 3 {
                    all += 1;
                    let i = 4 * (y * w + x);
                    if is_red(&frame[i..i + 4]) {
                        red += 1;
                    }
                }
            }
        }
        (red, all)
    }

    #[test]
    fn a_two_second_walk_gives_41_frames_that_scroll_and_a_marked_border() {
        let dir = temp_dir("walk");
        let path = dir.join("walk.gif");
        let settings = GifSettings {
            marker: Some(1.0),
            ..GifSettings::default()
        };
        let summary = write_gif(&path, &walk(2.0, 300.0), &settings).unwrap();
        assert_eq!(summary.frames, 41);
        assert!(summary.bytes > 0);
        assert_eq!(summary.bytes, std::fs::metadata(&path).unwrap().len());
        assert!((summary.duration_s - 2.05).abs() < 1e-9, "{summary:?}");
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.starts_with(b"GIF89a"));

        let (w, h, frames) = decode(&path);
        assert_eq!((w, h), (480, 270));
        assert_eq!(frames.len(), 41);
        assert!(frames.iter().all(|(_, delay)| *delay == 5));
        for pair in frames.windows(2) {
            assert_ne!(pair[0].0, pair[1].0, "consecutive frames are the same");
        }
        // The band of ground ticks (just below the ground line) scrolls: 1 m/s is 7.5 px a
        // frame at 150 px/m.
        let (w, h) = (w as usize, h as usize);
        let ground_row = h - 15; // 0.1 m below the ground at 150 px/m
        let band =
            |frame: &[u8]| frame[4 * (ground_row + 2) * w..4 * (ground_row + 6) * w].to_vec();
        for pair in frames.windows(2) {
            assert_ne!(
                band(&pair[0].0),
                band(&pair[1].0),
                "the ground ticks did not move"
            );
        }
        // Frame 20 is at t = 1.0 s, the marker: from there on the border is red, before not.
        for (k, (frame, _)) in frames.iter().enumerate() {
            let (red, all) = red_border(frame, w, h);
            if k < 20 {
                assert_eq!(red, 0, "frame {k} is before the marker");
            } else {
                assert_eq!(red, all, "frame {k} is at or after the marker");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_frame_count_does_not_depend_on_the_sample_rate() {
        let dir = temp_dir("rates");
        for rate in [7.0, 20.0, 1000.0] {
            let summary = write_gif(&dir.join("walk.gif"), &walk(2.0, rate), &small()).unwrap();
            assert_eq!(summary.frames, 41, "{rate} Hz");
        }
        let settings = GifSettings {
            frames_per_s: 10.0,
            width_px: 64,
            height_px: 1920,
            ..GifSettings::default()
        };
        let summary = write_gif(&dir.join("walk.gif"), &walk(0.5, 300.0), &settings).unwrap();
        assert_eq!(summary.frames, 6);
        let (w, h, frames) = decode(&dir.join("walk.gif"));
        assert_eq!((w, h, frames.len()), (64, 1920, 6));
        assert!(frames.iter().all(|(_, delay)| *delay == 10));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_pose_is_one_frame_and_out_of_order_poses_are_sorted() {
        let dir = temp_dir("one");
        let path = dir.join("one.gif");
        let mut poses = walk(0.0, 300.0);
        assert_eq!(poses.len(), 1);
        let summary = write_gif(&path, &poses, &small()).unwrap();
        assert_eq!((summary.frames, summary.duration_s), (1, 0.05));

        poses = walk(1.0, 50.0);
        poses.reverse();
        let summary = write_gif(&path, &poses, &small()).unwrap();
        assert_eq!(summary.frames, 21);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_nearest_pose_is_chosen() {
        let poses = walk(1.0, 10.0);
        let sorted: Vec<&Pose> = poses.iter().collect();
        assert_eq!(nearest(&sorted, -5.0).unwrap().time_s, 0.0);
        assert_eq!(nearest(&sorted, 0.04).unwrap().time_s, 0.0);
        assert_eq!(nearest(&sorted, 0.06).unwrap().time_s, 0.1);
        assert_eq!(nearest(&sorted, 0.5).unwrap().time_s, 0.5);
        assert_eq!(nearest(&sorted, 7.0).unwrap().time_s, 1.0);
        assert_eq!(nearest(&sorted, f64::NAN).unwrap().time_s, 0.0);
        assert_eq!(nearest(&[], 0.0), None);
    }

    #[test]
    fn bad_settings_and_no_poses_are_refused_before_any_file_is_made() {
        let dir = temp_dir("bad");
        let path = dir.join("bad.gif");
        let poses = walk(0.5, 100.0);
        let d = GifSettings::default();
        assert_eq!(
            d,
            GifSettings {
                width_px: 480,
                height_px: 270,
                frames_per_s: 20.0,
                view_width_m: 3.2,
                newtons_per_m: 1000.0,
                marker: None,
            }
        );
        let bad = [
            GifSettings {
                frames_per_s: 0.99,
                ..d
            },
            GifSettings {
                frames_per_s: 50.01,
                ..d
            },
            GifSettings {
                frames_per_s: f64::NAN,
                ..d
            },
            GifSettings {
                frames_per_s: f64::INFINITY,
                ..d
            },
            GifSettings { width_px: 63, ..d },
            GifSettings {
                width_px: 1921,
                ..d
            },
            GifSettings { height_px: 63, ..d },
            GifSettings {
                height_px: 1921,
                ..d
            },
            GifSettings {
                view_width_m: 0.0,
                ..d
            },
            GifSettings {
                view_width_m: -1.0,
                ..d
            },
            GifSettings {
                view_width_m: f64::NAN,
                ..d
            },
            GifSettings {
                view_width_m: f64::INFINITY,
                ..d
            },
            GifSettings {
                newtons_per_m: 0.0,
                ..d
            },
            GifSettings {
                newtons_per_m: -1.0,
                ..d
            },
            GifSettings {
                newtons_per_m: f64::NAN,
                ..d
            },
            GifSettings {
                marker: Some(f64::NAN),
                ..d
            },
        ];
        for settings in bad {
            let error = write_gif(&path, &poses, &settings).unwrap_err();
            assert!(
                matches!(error, AnimError::BadSettings(_)),
                "{settings:?}: {error}"
            );
            // Bad settings win over no poses.
            let error = write_gif(&path, &[], &settings).unwrap_err();
            assert!(matches!(error, AnimError::BadSettings(_)), "{error}");
        }
        for limit in [(1.0, 64), (50.0, 1920)] {
            let edge = GifSettings {
                frames_per_s: limit.0,
                width_px: limit.1,
                height_px: limit.1,
                ..d
            };
            assert!(write_gif(&path, &poses[..2], &edge).is_ok(), "{edge:?}");
        }
        std::fs::remove_file(&path).unwrap();

        assert_eq!(write_gif(&path, &[], &d), Err(AnimError::NoPoses));
        let mut timeless = walk(0.1, 100.0);
        timeless.iter_mut().for_each(|p| p.time_s = f64::NAN);
        timeless[0].time_s = f64::INFINITY;
        assert_eq!(write_gif(&path, &timeless, &d), Err(AnimError::NoPoses));
        assert!(!path.exists());

        // Too many frames for MAX_FRAMES.
        let mut long = walk(0.0, 1.0);
        long.push(Pose {
            time_s: MAX_FRAMES as f64,
            ..long[0].clone()
        });
        let error = write_gif(&path, &long, &d).unwrap_err();
        assert!(matches!(error, AnimError::BadSettings(_)), "{error}");
        long[1].time_s = f64::MAX;
        long.push(Pose {
            time_s: -f64::MAX,
            ..long[0].clone()
        });
        let error = write_gif(&path, &long, &d).unwrap_err();
        assert!(matches!(error, AnimError::BadSettings(_)), "{error}");
        assert!(!path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_path_is_an_io_error() {
        let dir = temp_dir("io");
        let path = dir.join("no such directory").join("x.gif");
        let error = write_gif(&path, &walk(0.2, 100.0), &GifSettings::default()).unwrap_err();
        assert!(matches!(error, AnimError::Io(_)), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_say_what_went_wrong() {
        let errors = [
            AnimError::NoPoses,
            AnimError::BadSettings("fps".into()),
            AnimError::Io("disk full".into()),
            AnimError::Draw("polygon".into()),
        ];
        for error in errors {
            let boxed: Box<dyn std::error::Error> = Box::new(error.clone());
            assert!(boxed.to_string().len() > 10, "{error:?}");
        }
        assert!(
            AnimError::Io("disk full".into())
                .to_string()
                .contains("disk full")
        );
    }

    #[test]
    fn non_finite_and_huge_values_are_skipped_without_panicking() {
        let dir = temp_dir("nan");
        let path = dir.join("nan.gif");
        let mut poses = walk(1.0, 100.0);
        let weird = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            -f64::MAX,
            1e300,
            -1e-300,
            0.0,
        ];
        for (i, pose) in poses.iter_mut().enumerate() {
            let v = weird[i % weird.len()];
            let u = weird[(i / weird.len()) % weird.len()];
            match i % 6 {
                0 => pose.com_m = [v, u],
                1 => pose.bones[0].from_m = [v, u],
                2 => {
                    pose.bones[2].width_m = v;
                    pose.bones[1].to_m[1] = u;
                }
                3 => pose.forces[0].force_n = [v, u],
                4 => pose.forces[0].at_m = [u, v],
                _ => {
                    pose.bones.push(Bone {
                        from_m: [v, v],
                        to_m: [u, u],
                        width_m: u,
                        kind: BoneKind::Torso,
                    });
                    pose.forces.push(ForceArrow {
                        at_m: [0.0, 0.0],
                        force_n: [v, 1.0],
                    });
                }
            }
            if i % 17 == 5 {
                pose.time_s = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][i % 3];
            }
        }
        // A zero-length bone, a zero force, a bone far off the view and enormous forces.
        poses[3].bones[0].to_m = poses[3].bones[0].from_m;
        poses[4].forces[0].force_n = [0.0, 0.0];
        poses[6].bones[0].from_m = [-1e6, 1e6];
        poses[7].forces[0].force_n = [1e12, -1e12];
        let summary = write_gif(&path, &poses, &small()).unwrap();
        assert_eq!(summary.frames, 21);
        let (_, _, frames) = decode(&path);
        assert_eq!(frames.len(), 21);

        // A view so narrow or wide that the ticks or the ground leave the picture.
        for view_width_m in [1e-6, 1e9] {
            let settings = GifSettings {
                view_width_m,
                marker: Some(-1.0),
                ..small()
            };
            assert_eq!(write_gif(&path, &poses, &settings).unwrap().frames, 21);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
