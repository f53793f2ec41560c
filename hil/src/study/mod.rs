//! `hil study`: offline studies of SIMBICON's walk over control rates and gains, to reproduce
//! Carensac et al. (2017), "Physics-based control of virtual characters in low frequency
//! simulations" (the range of valid gains per control frequency, their Fig. 2, and their
//! per-frequency CMA-ES, Algorithm 1) and to set our analytic gains
//! (`control_core::simbicon::Gains::analytic`) against them. An offline tool: nothing here runs
//! on the real-time path, and every cell is an ordinary batch process.
//!
//! - `hil study cell`: ONE walk (controller, rate, damping scale, optional per-role gains,
//!   push and start seed); prints one JSON line (the spec echoed, the gains used per role and
//!   the outcome). The walk itself is [`cell::run_cell`], the only place that knows how a
//!   cell runs: the plant in the cell's own process (`sim_host::walk::run_walk`, which reads
//!   the plant's state frames exactly as `hil run` does; `tests/walk.rs` checks that a cell and
//!   `hil run` against the `sim-host` process give bit-identical outcomes), so a cell costs one
//!   process, not two, and stops at the fall.
//! - `hil study sweep`: every (controller, rate, scale, seed) cell as a separate
//!   `hil study cell` process, `--jobs` at a time (rayon), each line appended to
//!   `OUT/cells.jsonl` as it arrives (flushed per line; a failed cell is recorded there with
//!   its stderr, never dropped), then `OUT/study.json`, `OUT/heatmap_simbicon.svg`,
//!   `OUT/heatmap_simbicon_analytic.svg` and a printed table. The heat maps carry the
//!   sampled-loop lines of [`bound`].
//! - `hil study cmaes`: Algorithm 1 ([`cma`]), every evaluation a `hil study cell --gains`
//!   process; `OUT/cmaes.jsonl` (every evaluation, streamed), `OUT/cmaes.json` and
//!   `OUT/gains_by_rate.svg`.
//! - `hil study jobs`: the `hil study cell` command lines of a sweep, one per line, not run.
//! - `hil study merge FILES... --out DIR`: study.json, heat maps and table from collected lines.
//! - `hil study walk3d-cell` and `hil study walk3d-cmaes`: the same for the 3D humanoid walker
//!   ([`walk3d`]): one walk with given joint-group gains, and Algorithm 1 whole (S_min, then
//!   S_max, per rate). Each evaluation is a `hil study walk3d-cell` command line, so it spreads
//!   over a batch scheduler as the planar cells do (one array task per line).
//!
//! Exit codes: 0 done (a fall is an outcome, not a failure); 1 a cell or evaluation failed
//! (recorded) or an output could not be written; 2 bad arguments (with a `hil: ...` message).
//! Same arguments, same results (the walks are deterministic and seeded; only `wall_s` and
//! the order lines arrive in differ).
//!
//! # Fanning a study out on a cluster
//! Every cell is independent, so a sweep is an array job. With Slurm:
//!
//! ```text
//! hil study jobs --rates 2000,1000,500,300,250,200 --seeds 0,1,2,3 > jobs.txt
//! mkdir -p cells
//! sbatch --array=1-$(wc -l < jobs.txt) cell.sh
//! # cell.sh:
//! #   #!/bin/sh
//! #   #SBATCH --time=00:10:00 --cpus-per-task=1
//! #   line=$(sed -n "${SLURM_ARRAY_TASK_ID}p" jobs.txt)
//! #   sh -c "$line" > "cells/task-${SLURM_ARRAY_TASK_ID}.jsonl"
//! # then, when the array is done:
//! hil study merge cells/*.jsonl --out out/study
//! ```
//!
//! `--program PATH` makes `jobs` print the path the nodes run (default `hil` on the PATH). A
//! task that failed leaves an empty (or partial) file and a non-zero exit in Slurm's
//! accounting; merge keeps any unparsable line in study.json (`unparsable_lines`) and warns,
//! and a cell missing from the grid shows as "–" in the table and the heat maps. Reruns of a
//! cell: the last line merged is drawn (warned).

pub mod bound;
pub mod cell;
pub mod cma;
pub mod plot;
pub mod spawn;
pub mod sweep;
pub mod walk3d;

use std::path::Path;
use std::process::ExitCode;

/// Arguments of `hil study`.
#[derive(Debug, Clone, clap::Args)]
pub struct StudyArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: StudyCommand,
}

/// The `hil study` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum StudyCommand {
    /// Run ONE walk and print its JSON line (spec, gains used per role, outcome).
    Cell(cell::CellArgs),
    /// Run every (controller, rate, scale, seed) cell as a separate process, in parallel;
    /// stream cells.jsonl; write study.json, the heat maps and a table.
    Sweep(sweep::SweepArgs),
    /// Carensac et al.'s Algorithm 1: per rate, stepping down, CMA-ES over the per-role gains.
    Cmaes(cma::CmaesArgs),
    /// Print the `hil study cell` command lines of a sweep, one per line, without running them.
    Jobs(sweep::JobsArgs),
    /// Build study.json, the heat maps and the table from collected cells.jsonl files.
    Merge(sweep::MergeArgs),
    /// Run ONE walk of the 3D humanoid (a `walk3d` scenario) with given group gains and print
    /// its JSON line.
    #[command(name = "walk3d-cell")]
    Walk3dCell(walk3d::CellArgs),
    /// Carensac et al.'s Algorithm 1 on the 3D humanoid: per rate, stepping down, S_min then
    /// S_max by CMA-ES over nine joint groups' gains.
    #[command(name = "walk3d-cmaes")]
    Walk3dCmaes(walk3d::CmaesArgs),
}

/// Runs `hil study ...`.
pub fn run(args: &StudyArgs) -> ExitCode {
    match &args.command {
        StudyCommand::Cell(a) => cell::main(a),
        StudyCommand::Sweep(a) => sweep::sweep(a),
        StudyCommand::Cmaes(a) => cma::main(a),
        StudyCommand::Jobs(a) => sweep::jobs(a),
        StudyCommand::Merge(a) => sweep::merge(a),
        StudyCommand::Walk3dCell(a) => walk3d::cell_main(a),
        StudyCommand::Walk3dCmaes(a) => walk3d::cmaes_main(a),
    }
}

/// `--jobs`: the given count (1..=1024) or the available cores.
pub fn resolve_jobs(jobs: Option<usize>) -> Result<usize, String> {
    match jobs {
        Some(j) if (1..=1024).contains(&j) => Ok(j),
        Some(j) => Err(format!("--jobs {j}: must be in 1..=1024")),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// A rayon pool of `jobs` threads.
pub fn pool(jobs: usize) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|i| format!("study-{i}"))
        .build()
        .map_err(|e| format!("cannot start {jobs} worker threads: {e}"))
}

/// Creates the output folder; (2, why) if it is a file, (1, why) if it cannot be created.
pub fn prepare_out(out: &Path) -> Result<(), (u8, String)> {
    if out.exists() && !out.is_dir() {
        return Err((
            2,
            format!(
                "output folder {}: exists and is not a folder",
                out.display()
            ),
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| (1, format!("cannot create {}: {e}", out.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_and_output_folders_are_checked() {
        assert_eq!(resolve_jobs(Some(3)), Ok(3));
        assert!(resolve_jobs(Some(0)).unwrap_err().contains("--jobs"));
        assert!(resolve_jobs(None).unwrap() >= 1);
        let file = std::env::temp_dir().join(format!("hil-study-out-file-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(prepare_out(&file).unwrap_err().0, 2);
        let _ = std::fs::remove_file(&file);
    }
}
