//! `hil study sweep`, `hil study jobs` and `hil study merge`: the grid of cells (controller ×
//! rate × damping scale × seed), each cell a separate `hil study cell` process run in parallel
//! and streamed to cells.jsonl, and the study built from the lines (study.json, the heat maps,
//! the printed table), whether they came from a sweep or were collected elsewhere.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::bound::{Bound, bound, lightest_inertia_kgm2};
use super::cell::{CellSpec, Controller, check_duration, check_rate, check_scale};
use super::spawn::{Record, current_exe, parse_record, run_cell_process};
use super::{plot, pool, prepare_out, resolve_jobs};

/// The default damping scales: from 0.0625 (every cell falls: too little damping on the heavy
/// roles) to 3 (every cell falls: too much on the ankles), finer between 0.125 and 0.5 where
/// the fixed gains' stable window closes as the rate drops (a first sweep from 0.03125 to 4
/// showed nothing but falls below 0.125 and above 2).
pub const DEFAULT_SCALES: &str = "0.0625,0.125,0.1875,0.25,0.375,0.5,0.75,1,1.5,2,3";

/// The grid of a sweep (shared by `sweep` and `jobs`).
#[derive(Debug, Clone, clap::Args)]
pub struct GridArgs {
    /// Control rates, Hz, each in [50, 20000].
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "2000,1000,500,300,250,200"
    )]
    pub rates: Vec<f64>,
    /// Damping scales S (the design kd is 30·S), each in (0, 100].
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_SCALES)]
    pub scales: Vec<f64>,
    /// Controllers: simbicon, simbicon_analytic.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "simbicon,simbicon_analytic"
    )]
    pub controllers: Vec<String>,
    /// Start seeds (0: JSimbicon's start; N > 0 perturbed, see `hil study cell --help`); every
    /// cell runs once per seed.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub seeds: Vec<u64>,
    /// Length of every run, s, in (0, 600].
    #[arg(long, default_value_t = 20.0)]
    pub duration_s: f64,
}

/// Arguments of `hil study sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// The grid.
    #[command(flatten)]
    pub grid: GridArgs,
    /// Cells run at once (default: the available cores), 1..=1024.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Output folder: cells.jsonl, study.json, heatmap_simbicon.svg,
    /// heatmap_simbicon_analytic.svg.
    #[arg(long, default_value = "out/study")]
    pub out: PathBuf,
}

/// Arguments of `hil study jobs`.
#[derive(Debug, Clone, clap::Args)]
pub struct JobsArgs {
    /// The grid.
    #[command(flatten)]
    pub grid: GridArgs,
    /// The program the printed lines start (as the cluster's nodes find it).
    #[arg(long, default_value = "hil")]
    pub program: String,
}

/// Arguments of `hil study merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// cells.jsonl files (cell lines and failed-cell records, one per line).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output folder: study.json and the heat maps.
    #[arg(long, default_value = "out/study")]
    pub out: PathBuf,
}

fn no_duplicates<T: PartialEq + std::fmt::Display>(flag: &str, v: &[T]) -> Result<(), String> {
    if v.is_empty() {
        return Err(format!("{flag}: give at least one value"));
    }
    for (i, a) in v.iter().enumerate() {
        if v.iter().skip(i + 1).any(|b| b == a) {
            return Err(format!("{flag}: {a} is given twice"));
        }
    }
    Ok(())
}

impl GridArgs {
    /// The cells, controller-major, then rate, scale and seed in the order given; or what is
    /// wrong with the arguments.
    pub fn cells(&self) -> Result<Vec<CellSpec>, String> {
        no_duplicates("--rates", &self.rates)?;
        no_duplicates("--scales", &self.scales)?;
        no_duplicates("--controllers", &self.controllers)?;
        no_duplicates("--seeds", &self.seeds)?;
        for &r in &self.rates {
            check_rate(r).map_err(|e| format!("--rates: {e}"))?;
        }
        for &s in &self.scales {
            check_scale(s).map_err(|e| format!("--scales: {e}"))?;
        }
        check_duration(self.duration_s).map_err(|e| format!("--duration-s: {e}"))?;
        let controllers = self
            .controllers
            .iter()
            .map(|c| Controller::parse(c).map_err(|e| format!("--controllers: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut cells = Vec::new();
        for &controller in &controllers {
            for &rate_hz in &self.rates {
                for &damping_scale in &self.scales {
                    for &seed in &self.seeds {
                        cells.push(CellSpec {
                            controller,
                            rate_hz,
                            damping_scale,
                            gains: None,
                            duration_s: self.duration_s,
                            push: None,
                            seed,
                        });
                    }
                }
            }
        }
        Ok(cells)
    }
}

/// `arg` quoted for a POSIX shell when it needs to be.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,/=+:@%".contains(c));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The command line that runs `spec` with `program`.
pub fn command_line(program: &str, spec: &CellSpec) -> String {
    let mut words = vec![shell_quote(program), "study".into(), "cell".into()];
    words.extend(spec.args().iter().map(|a| shell_quote(a)));
    words.join(" ")
}

/// `hil study jobs`.
pub fn jobs(args: &JobsArgs) -> ExitCode {
    match args.grid.cells() {
        Ok(cells) => {
            let mut out = std::io::stdout().lock();
            for c in &cells {
                if writeln!(out, "{}", command_line(&args.program, c)).is_err() {
                    return ExitCode::from(1);
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hil: study jobs: {e}");
            ExitCode::from(2)
        }
    }
}

/// One line of progress for a finished cell.
pub fn progress(done: usize, total: usize, r: &Record) -> String {
    match r {
        Record::Done(l) => {
            let what = match l.fell_at_s {
                Some(t) => format!("fell at {t:.2} s after {:.2} m", l.distance_m),
                None => format!(
                    "walked {:.2} m at {:.3} m/s",
                    l.distance_m, l.mean_speed_mps
                ),
            };
            format!(
                "study [{done}/{total}] {} {} Hz S={} seed {}: {what} ({:.2} s)",
                l.controller, l.rate_hz, l.damping_scale, l.seed, l.wall_s
            )
        }
        Record::Failed(f) => format!(
            "study [{done}/{total}] {} {} Hz S={} seed {}: FAILED ({}): {}",
            f.controller,
            f.rate_hz,
            f.damping_scale,
            f.seed,
            f.reason,
            f.stderr.lines().last().unwrap_or("no stderr")
        ),
    }
}

/// A file every line is appended to as it arrives, flushed per line; the first write error is
/// kept.
pub struct LineSink {
    inner: Mutex<(File, usize, Option<String>)>,
    total: usize,
}

impl LineSink {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path, total: usize) -> Result<Self, String> {
        let f = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(Self {
            inner: Mutex::new((f, 0, None)),
            total,
        })
    }

    /// Appends `line`, flushes, and returns how many lines were written so far.
    pub fn push(&self, line: &str) -> usize {
        let mut g = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (file, n, err) = &mut *g;
        if let Err(e) = writeln!(file, "{line}").and_then(|()| file.flush()) {
            err.get_or_insert_with(|| e.to_string());
        }
        *n += 1;
        *n
    }

    /// How many lines are expected.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The first write error, if any.
    pub fn error(&self) -> Option<String> {
        match self.inner.lock() {
            Ok(g) => g.2.clone(),
            Err(poisoned) => poisoned.into_inner().2.clone(),
        }
    }
}

/// `hil study sweep`.
pub fn sweep(args: &SweepArgs) -> ExitCode {
    let started = Instant::now();
    let cells = match args.grid.cells() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hil: study sweep: {e}");
            return ExitCode::from(2);
        }
    };
    let jobs = match resolve_jobs(args.jobs) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("hil: study sweep: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err((code, e)) = prepare_out(&args.out) {
        eprintln!("hil: study sweep: {e}");
        return ExitCode::from(code);
    }
    let setup = current_exe().and_then(|exe| {
        let sink = LineSink::create(&args.out.join("cells.jsonl"), cells.len())?;
        Ok((exe, sink, pool(jobs)?))
    });
    let (exe, sink, pool) = match setup {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hil: study sweep: {e}");
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "study: {} cells, {jobs} at a time, streaming to {}",
        cells.len(),
        args.out.join("cells.jsonl").display()
    );
    let records: Vec<Record> = pool.install(|| {
        cells
            .par_iter()
            .map(|spec| {
                let r = run_cell_process(&exe, spec);
                let done = sink.push(&r.to_line());
                eprintln!("{}", progress(done, sink.total(), &r));
                r
            })
            .collect()
    });
    let wall_s = started.elapsed().as_secs_f64();
    let mut failures = Vec::new();
    if let Some(e) = sink.error() {
        failures.push(format!("cells.jsonl: {e}"));
    }
    let failed = records
        .iter()
        .filter(|r| matches!(r, Record::Failed(_)))
        .count();
    if failed > 0 {
        failures.push(format!(
            "{failed} of {} cells failed (recorded in cells.jsonl with their stderr)",
            records.len()
        ));
    }
    if let Err(e) = write_study(&args.out, &records, &[], Some(wall_s)) {
        failures.push(e);
    }
    eprintln!(
        "study: {} cells in {wall_s:.1} s wall ({jobs} jobs); wrote {}",
        records.len(),
        args.out.display()
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in failures {
            eprintln!("hil: study sweep: {f}");
        }
        ExitCode::from(1)
    }
}

/// A line of a merged file that could not be read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unparsable {
    /// The file.
    pub file: String,
    /// The line number, from 1.
    pub line: usize,
    /// Why.
    pub error: String,
    /// The line's start (up to 200 characters).
    pub text: String,
}

/// Reads the records of cells.jsonl-like files; blank lines are skipped, unreadable ones
/// returned (never dropped). An unreadable file is an error, and so is one that is not a regular
/// file (a FIFO, a device) or is larger than 64 MiB (`sim_host::input::read_text`).
pub fn read_records(files: &[PathBuf]) -> Result<(Vec<Record>, Vec<Unparsable>), String> {
    let mut records = Vec::new();
    let mut bad = Vec::new();
    for path in files {
        let text = sim_host::input::read_text(path, sim_host::input::InputKind::Records)
            .map_err(|e| format!("cannot read {e}"))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match parse_record(line) {
                Ok(r) => records.push(r),
                Err(error) => bad.push(Unparsable {
                    file: path.display().to_string(),
                    line: i + 1,
                    error,
                    text: line.chars().take(200).collect(),
                }),
            }
        }
    }
    Ok((records, bad))
}

/// `hil study merge`.
pub fn merge(args: &MergeArgs) -> ExitCode {
    let (records, bad) = match read_records(&args.files) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hil: study merge: {e}");
            return ExitCode::from(2);
        }
    };
    for u in &bad {
        eprintln!(
            "hil: study merge: WARNING: {}:{}: {} (kept in study.json under unparsable_lines)",
            u.file, u.line, u.error
        );
    }
    if let Err((code, e)) = prepare_out(&args.out) {
        eprintln!("hil: study merge: {e}");
        return ExitCode::from(code);
    }
    match write_study(&args.out, &records, &bad, None) {
        Ok(()) => {
            eprintln!(
                "study: merged {} records ({} unparsable lines); wrote {}",
                records.len(),
                bad.len(),
                args.out.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hil: study merge: {e}");
            ExitCode::from(1)
        }
    }
}

/// The runs of one (controller, rate, scale) square, over its seeds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Square {
    /// Runs with a line.
    pub runs: usize,
    /// Of which fell.
    pub fell: usize,
    /// Cells that failed (no line).
    pub failed: usize,
    /// Mean distance over the runs, m (until the fall for those that fell).
    pub mean_distance_m: f64,
    /// Earliest fall, s.
    pub first_fall_s: Option<f64>,
}

/// The squares of a study: axes and values.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Rates, descending (the heat maps' x, left to right).
    pub rates: Vec<f64>,
    /// Scales, ascending (bottom to top).
    pub scales: Vec<f64>,
    /// (controller, rate index, scale index) → square.
    pub squares: BTreeMap<(Controller, usize, usize), Square>,
}

impl Grid {
    /// The square at (controller, rate index, scale index), if any cell ran there.
    pub fn at(&self, c: Controller, i: usize, j: usize) -> Option<&Square> {
        self.squares.get(&(c, i, j))
    }
}

fn distinct_sorted(mut v: Vec<f64>, descending: bool) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v.dedup();
    if descending {
        v.reverse();
    }
    v
}

/// The records kept for the heat maps (the last of duplicates of the same controller, rate,
/// scale and seed; no per-role gains) and the warnings about the others.
pub fn dedup(records: &[Record]) -> (Vec<&Record>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut last: BTreeMap<(String, u64, u64, u64), usize> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        if let Record::Done(l) = r
            && l.gains_source == "per_role"
        {
            continue;
        }
        let (c, rate, scale, seed) = r.key();
        if last
            .insert((c.clone(), rate.to_bits(), scale.to_bits(), seed), i)
            .is_some()
        {
            warnings.push(format!(
                "{c} {rate} Hz S={scale} seed {seed} appears more than once: the last is drawn"
            ));
        }
    }
    let per_role = records
        .iter()
        .filter(|r| matches!(r, Record::Done(l) if l.gains_source == "per_role"))
        .count();
    if per_role > 0 {
        warnings.push(format!(
            "{per_role} cells with per-role gains are kept in study.json but not drawn"
        ));
    }
    let mut kept: Vec<usize> = last.into_values().collect();
    kept.sort_unstable();
    (
        kept.into_iter().filter_map(|i| records.get(i)).collect(),
        warnings,
    )
}

/// The heat maps' grid of `records` (after [`dedup`]); records of unknown controllers are left
/// out.
pub fn grid(records: &[&Record]) -> Grid {
    let known = |r: &&&Record| Controller::parse(&r.key().0).is_ok();
    let rates = distinct_sorted(
        records.iter().filter(known).map(|r| r.key().1).collect(),
        true,
    );
    let scales = distinct_sorted(
        records.iter().filter(known).map(|r| r.key().2).collect(),
        false,
    );
    let mut squares: BTreeMap<(Controller, usize, usize), Square> = BTreeMap::new();
    let mut sums: BTreeMap<(Controller, usize, usize), f64> = BTreeMap::new();
    for r in records {
        let (name, rate, scale, _) = r.key();
        let Ok(c) = Controller::parse(&name) else {
            continue;
        };
        let (Some(i), Some(j)) = (
            rates.iter().position(|&x| x == rate),
            scales.iter().position(|&x| x == scale),
        ) else {
            continue;
        };
        let sq = squares.entry((c, i, j)).or_default();
        match r {
            Record::Done(l) => {
                sq.runs += 1;
                *sums.entry((c, i, j)).or_default() += l.distance_m;
                if let Some(t) = l.fell_at_s {
                    sq.fell += 1;
                    sq.first_fall_s = Some(sq.first_fall_s.map_or(t, |f: f64| f.min(t)));
                } else if l.fell {
                    sq.fell += 1;
                }
            }
            Record::Failed(_) => sq.failed += 1,
        }
    }
    for (k, sq) in &mut squares {
        if sq.runs > 0 {
            sq.mean_distance_m = sums.get(k).copied().unwrap_or(0.0) / sq.runs as f64;
        }
    }
    Grid {
        rates,
        scales,
        squares,
    }
}

/// A square as the table prints it: the mean distance, `×` if every run fell, `k/n×` if some
/// did, `failed` if no cell gave a line.
pub fn square_text(sq: Option<&Square>) -> String {
    match sq {
        None => "–".into(),
        Some(s) if s.runs == 0 => "failed".into(),
        Some(s) => {
            let fell = match (s.fell, s.runs) {
                (0, _) => String::new(),
                (f, n) if f == n && n == 1 => "×".into(),
                (f, n) => format!(" {f}/{n}×"),
            };
            let failed = if s.failed > 0 {
                format!(" +{} failed", s.failed)
            } else {
                String::new()
            };
            format!("{:.2}{fell}{failed}", s.mean_distance_m)
        }
    }
}

/// The printed table: per controller, distance walked per rate (rows) and scale (columns),
/// with the stable bound S_max.
pub fn table(g: &Grid) -> String {
    let mut out = String::new();
    for c in Controller::ALL {
        if !g.squares.keys().any(|k| k.0 == c) {
            continue;
        }
        out.push_str(&format!(
            "\n{}: distance walked, m (× fell, then the distance until the fall)\n\n",
            c.name()
        ));
        out.push_str("| rate Hz | S_max stable | ");
        out.push_str(
            &g.scales
                .iter()
                .map(|s| format!("S={s}"))
                .collect::<Vec<_>>()
                .join(" | "),
        );
        out.push_str(" |\n|---|---|");
        out.push_str(&"---|".repeat(g.scales.len()));
        out.push('\n');
        for (i, &rate) in g.rates.iter().enumerate() {
            out.push_str(&format!("| {rate} | {:.3} | ", bound(rate).s_max_stable));
            let row: Vec<String> = (0..g.scales.len())
                .map(|j| square_text(g.at(c, i, j)))
                .collect();
            out.push_str(&row.join(" | "));
            out.push_str(" |\n");
        }
    }
    out
}

#[derive(Serialize)]
struct StudyJson<'a> {
    what: &'static str,
    controllers: Vec<&'static str>,
    rates_hz: &'a [f64],
    scales: &'a [f64],
    lightest_inertia_kgm2: f64,
    bound: Vec<Bound>,
    squares: Vec<SquareJson>,
    cells: Vec<serde_json::Value>,
    failed_cells: usize,
    unparsable_lines: &'a [Unparsable],
    warnings: Vec<String>,
    wall_s: Option<f64>,
}

#[derive(Serialize)]
struct SquareJson {
    controller: &'static str,
    rate_hz: f64,
    damping_scale: f64,
    #[serde(flatten)]
    square: Square,
}

/// Writes study.json and both heat maps into `out` and prints the table.
pub fn write_study(
    out: &Path,
    records: &[Record],
    unparsable: &[Unparsable],
    wall_s: Option<f64>,
) -> Result<(), String> {
    let (kept, warnings) = dedup(records);
    for w in &warnings {
        eprintln!("hil: study: WARNING: {w}");
    }
    let g = grid(&kept);
    let squares = g
        .squares
        .iter()
        .filter_map(|(&(c, i, j), &square)| {
            Some(SquareJson {
                controller: c.name(),
                rate_hz: *g.rates.get(i)?,
                damping_scale: *g.scales.get(j)?,
                square,
            })
        })
        .collect();
    let study = StudyJson {
        what: "SIMBICON walks per control rate and damping scale (hil study); distance in m, \
               bound: the damping scale S below which kp 300, kd 30·S is a stable sampled loop \
               on the lightest role inertia (s_max_stable), and beta = h·30·S/m = 0.5 \
               (s_beta_half)",
        controllers: Controller::ALL.iter().map(|c| c.name()).collect(),
        rates_hz: &g.rates,
        scales: &g.scales,
        lightest_inertia_kgm2: lightest_inertia_kgm2(),
        bound: g.rates.iter().map(|&r| bound(r)).collect(),
        squares,
        cells: records.iter().map(Record::to_value).collect(),
        failed_cells: records
            .iter()
            .filter(|r| matches!(r, Record::Failed(_)))
            .count(),
        unparsable_lines: unparsable,
        warnings,
        wall_s,
    };
    let path = out.join("study.json");
    let text = serde_json::to_string_pretty(&study).map_err(|e| format!("study.json: {e}"))?;
    std::fs::write(&path, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    for c in Controller::ALL {
        let path = out.join(format!("heatmap_{}.svg", c.name()));
        plot::heatmap(&path, c, &g).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    print!("{}", table(&g));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::cell::{CellLine, CellOutcome};
    use crate::study::spawn::FailedCell;

    fn grid_args() -> GridArgs {
        GridArgs {
            rates: vec![300.0, 2000.0],
            scales: vec![0.5, 1.0],
            controllers: vec!["simbicon".into()],
            seeds: vec![0],
            duration_s: 2.0,
        }
    }

    fn line(spec: &CellSpec, fell_at: Option<f64>, distance: f64) -> Record {
        Record::Done(CellLine::new(
            spec,
            spec.resolved_gains().unwrap(),
            &CellOutcome {
                fell: fell_at.is_some(),
                fell_at_s: fell_at,
                distance_m: distance,
                mean_speed_mps: 1.0,
                steps: 2,
                limited_torques: 0,
                refused_ticks: 0,
                wall_s: 0.1,
            },
        ))
    }

    #[test]
    fn the_grid_arguments_are_checked() {
        assert_eq!(grid_args().cells().unwrap().len(), 4);
        for (args, needle) in [
            (
                GridArgs {
                    rates: vec![10.0],
                    ..grid_args()
                },
                "--rates",
            ),
            (
                GridArgs {
                    rates: vec![300.0, 300.0],
                    ..grid_args()
                },
                "twice",
            ),
            (
                GridArgs {
                    scales: vec![0.0],
                    ..grid_args()
                },
                "--scales",
            ),
            (
                GridArgs {
                    scales: vec![],
                    ..grid_args()
                },
                "at least one",
            ),
            (
                GridArgs {
                    controllers: vec!["pd".into()],
                    ..grid_args()
                },
                "--controllers",
            ),
            (
                GridArgs {
                    duration_s: -1.0,
                    ..grid_args()
                },
                "--duration-s",
            ),
        ] {
            let e = args.cells().unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn jobs_lines_run_the_same_cells() {
        let cells = grid_args().cells().unwrap();
        let l = command_line("/opt/hil", &cells[0]);
        assert_eq!(
            l,
            "/opt/hil study cell --controller simbicon --rate-hz 300 --damping-scale 0.5 \
             --duration-s 2 --seed 0"
        );
        assert_eq!(shell_quote("{\"a\": 1}"), "'{\"a\": 1}'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn merged_lines_make_the_grid_with_duplicates_and_failures_kept() {
        let cells = grid_args().cells().unwrap();
        let mut records: Vec<Record> = vec![
            line(&cells[0], None, 20.0),
            line(&cells[1], Some(0.5), 0.4),
            line(&cells[2], None, 22.0),
        ];
        records.push(Record::Failed(FailedCell {
            failed: true,
            controller: "simbicon".into(),
            rate_hz: cells[3].rate_hz,
            damping_scale: cells[3].damping_scale,
            seed: 0,
            duration_s: 2.0,
            args: cells[3].args(),
            exit_code: Some(1),
            reason: "exit status 1".into(),
            stderr: "boom".into(),
            stdout: String::new(),
        }));
        // A rerun of the first cell: the last one is drawn, with a warning.
        records.push(line(&cells[0], None, 21.0));
        // Through text, as merge reads them.
        let dir = std::env::temp_dir().join(format!("hil-study-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cells.jsonl");
        let mut text: String = records.iter().map(|r| r.to_line() + "\n").collect();
        text.push_str("\n{\"truncated\n");
        std::fs::write(&file, text).unwrap();
        let (read, bad) = read_records(std::slice::from_ref(&file)).unwrap();
        assert_eq!(read, records);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].line, 7);
        let (kept, warnings) = dedup(&read);
        assert_eq!(kept.len(), 4);
        assert_eq!(warnings.len(), 1);
        let g = grid(&kept);
        assert_eq!(g.rates, vec![2000.0, 300.0]);
        assert_eq!(g.scales, vec![0.5, 1.0]);
        let c = Controller::Simbicon;
        // 300 Hz is rate index 1.
        assert_eq!(g.at(c, 1, 0).unwrap().mean_distance_m, 21.0);
        assert_eq!(square_text(g.at(c, 1, 1)), "0.40×");
        assert_eq!(square_text(g.at(c, 0, 1)), "failed");
        assert_eq!(square_text(g.at(Controller::SimbiconAnalytic, 0, 0)), "–");
        let t = table(&g);
        assert!(t.contains("| 300 | 0.223 | 21.00 | 0.40× |"), "{t}");
        write_study(&dir, &read, &bad, None).unwrap();
        let study: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("study.json")).unwrap())
                .unwrap();
        assert_eq!(study["cells"].as_array().unwrap().len(), 5);
        assert_eq!(study["failed_cells"], 1);
        assert_eq!(study["unparsable_lines"].as_array().unwrap().len(), 1);
        assert_eq!(study["bound"].as_array().unwrap().len(), 2);
        for name in ["heatmap_simbicon.svg", "heatmap_simbicon_analytic.svg"] {
            let svg = std::fs::read_to_string(dir.join(name)).unwrap();
            assert!(svg.starts_with("<svg"), "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
