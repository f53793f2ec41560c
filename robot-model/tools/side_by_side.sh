#!/usr/bin/env bash
# control_core::tree::Tree (on robots loaded by robot-model) and Pinocchio, side by side: runs,
# in alternation for ROUNDS rounds (default 5), the criterion bench robot-model/benches/tree.rs
# (at the capacity N = nv, the tree a controller of that robot would build) and
# robot-model/tools/pinocchio_bench.sh (Pinocchio 4.1 compiled with g++ -O3), and prints one
# table of median ns per call: CRBA (our kinematics + mass_matrix_into, with the kinematics
# returned by value and kept in one buffer; Pinocchio's crba, default LOCAL convention, and its
# WORLD variant) and RNEA (our kinematics + inverse_dynamics, the same two ways; Pinocchio's
# rnea), for panda (fixed base, nv 9) and talos_full (floating base, nv 50), at the same states
# (those of the committed reference robot-model/tests/data/pinocchio/<robot>.json). A third row
# per robot times the forward kinematics alone (ours: `kinematics`; Pinocchio's
# forwardKinematics), which both algorithms include.
#
# The two sides run one after the other, never at the same time; alternating them round by
# round lets a change of the machine's load fall on both. Each side's figure is the median over
# the rounds of its per-round median, and a ratio is the median of the per-round ratios, with
# the smallest and largest. Pinocchio keeps its `Data` between calls, so the like-for-like ratio
# is the "kept" one. The bench's N = 64 rows (the capacity tests/pinocchio.rs uses) are not run
# here: `cargo bench -p robot-model --bench tree` runs them.
#
# The Rust bench is compiled with whatever RUSTFLAGS is set (printed; without -C
# target-cpu=native it is built for the default x86-64 target while Pinocchio gets
# -march=native; PINOCCHIO_MARCH=x86-64 compiles Pinocchio for that generic target too).
#
# Usage: robot-model/tools/side_by_side.sh
#        ROUNDS=9 MEASUREMENT_TIME=2 BATCHES=100 CALLS=1000 robot-model/tools/side_by_side.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=robot-model/tools/side_by_side_setup.sh
. robot-model/tools/side_by_side_setup.sh

filter='^(panda/[a-z_]+_n9|talos_full/[a-z_]+_n50)$'
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS: cargo bench -p robot-model --bench tree" >&2
  cargo bench -p robot-model --bench tree -- --warm-up-time 1 \
    --measurement-time "$MEASUREMENT_TIME" "$filter" >&2
  "$PYTHON" - "$target_dir/criterion" > "$tmp/ours.$round.txt" <<'PY'
import json
import os
import sys

for robot, nv in (("panda", 9), ("talos_full", 50)):
    for name in ("crba", "crba_kept", "rnea", "rnea_kept", "kinematics"):
        path = os.path.join(sys.argv[1], robot, f"{name}_n{nv}", "new", "estimates.json")
        with open(path) as f:
            print(robot, name, json.load(f)["median"]["point_estimate"])
PY
  echo "== round $round of $ROUNDS: robot-model/tools/pinocchio_bench.sh" >&2
  robot-model/tools/pinocchio_bench.sh panda talos_full | tee "$tmp/pinocchio.$round.txt" >&2
  if grep -q '^SKIP' "$tmp/pinocchio.$round.txt"; then
    echo "Pinocchio is not installed: no side-by-side table."
    exit 0
  fi
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$PYTHON" - "$tmp" "$ROUNDS" <<'PY'
import os
import statistics
import sys

tmp, rounds = sys.argv[1], int(sys.argv[2])
ours, pin = [], []
for r in range(1, rounds + 1):
    o = {}
    with open(os.path.join(tmp, f"ours.{r}.txt")) as f:
        for line in f:
            robot, name, ns = line.split()
            o[(robot, name)] = float(ns)
    ours.append(o)
    p = {}
    with open(os.path.join(tmp, f"pinocchio.{r}.txt")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 5 and w[0] == "pinocchio":
                p[(w[1], w[2])] = float(w[4])
    pin.append(p)


def ratio(name, algo, robot):
    rs = [o[(robot, name)] / p[(robot, algo)] for o, p in zip(ours, pin)]
    return f"{statistics.median(rs):.2f} [{min(rs):.2f}, {max(rs):.2f}]"


print()
print(f"median ns per call over {rounds} alternating rounds (ours: criterion median; Pinocchio:")
print("median of batch means); ratios: median of the per-round ratios [smallest, largest]")
print()
print("| robot | algorithm | ours | ours, kinematics kept | Pinocchio | Pinocchio (crba WORLD) | ours / Pinocchio | kept / Pinocchio |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for robot, nv in (("panda", 9), ("talos_full", 50)):
    for algo, label in (
        ("crba", "crba (kinematics + mass matrix)"),
        ("rnea", "rnea (kinematics + inverse dynamics)"),
        ("kinematics", "forward kinematics alone"),
    ):
        a = statistics.median(o[(robot, algo)] for o in ours)
        p = statistics.median(q[(robot, algo)] for q in pin)
        kept = kept_ratio = world = ""
        if algo != "kinematics":
            kept = f"{statistics.median(o[(robot, algo + '_kept')] for o in ours):.0f}"
            kept_ratio = ratio(algo + "_kept", algo, robot)
        if algo == "crba":
            world = f"{statistics.median(q[(robot, 'crba_world')] for q in pin):.0f}"
        print(
            f"| {robot} (nv {nv}) | {label} | {a:.0f} | {kept} | {p:.0f} | {world} "
            f"| {ratio(algo, algo, robot)} | {kept_ratio} |"
        )
PY
