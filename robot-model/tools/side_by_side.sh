#!/usr/bin/env bash
# control_core::tree::Tree (on robots loaded by robot-model) and Pinocchio, side by side: runs
# the criterion bench robot-model/benches/tree.rs, then robot-model/tools/pinocchio_bench.sh
# (Pinocchio 4.1 compiled with g++ -O3 -march=native), and prints one table of median ns per
# call: CRBA (our kinematics + mass_matrix_into; Pinocchio's crba, default LOCAL convention, and
# its WORLD variant) and RNEA (our kinematics + inverse_dynamics; Pinocchio's rnea), for panda
# (fixed base, nv 9) and talos_full (floating base, nv 50), at the same states (those of the
# committed reference robot-model/tests/data/pinocchio/<robot>.json). Ours is shown at the
# capacity N = nv and at N = 64; the ratio is ours (N = nv) over Pinocchio's crba / rnea. A third
# row per robot times the forward kinematics alone (ours: `kinematics`; Pinocchio's
# forwardKinematics), which both algorithms include.
#
# The two sides are run one after the other on the same machine, not at the same time. The Rust
# bench is compiled with whatever RUSTFLAGS is set (printed; without -C target-cpu=native it is
# built for the default x86-64 target while Pinocchio gets -march=native; PINOCCHIO_MARCH=x86-64
# compiles Pinocchio for that generic target too).
#
# Usage: robot-model/tools/side_by_side.sh
#        MEASUREMENT_TIME=3 BATCHES=200 CALLS=1000 robot-model/tools/side_by_side.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
MEASUREMENT_TIME=${MEASUREMENT_TIME:-3}

echo "CPU: $(grep -m 1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores)"
echo "RUSTFLAGS: ${RUSTFLAGS:-(none)}; rustc: $(rustc --version)"
echo "Pinocchio: g++ -O3 -march=${PINOCCHIO_MARCH:-native}; $(g++ --version | head -n 1)"

target_dir=$(cargo metadata --format-version 1 --no-deps | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== cargo bench -p robot-model --bench tree" >&2
cargo bench -p robot-model --bench tree -- --warm-up-time 1 --measurement-time "$MEASUREMENT_TIME" >&2

echo "== robot-model/tools/pinocchio_bench.sh" >&2
robot-model/tools/pinocchio_bench.sh panda talos_full | tee "$tmp/pinocchio.txt" >&2
if grep -q '^SKIP' "$tmp/pinocchio.txt"; then
  echo "Pinocchio is not installed: no side-by-side table."
  exit 0
fi

"$PYTHON" - "$target_dir/criterion" "$tmp/pinocchio.txt" <<'EOF'
import json
import os
import sys

criterion, pin_file = sys.argv[1], sys.argv[2]
pin = {}
with open(pin_file) as f:
    for line in f:
        w = line.split()
        if len(w) >= 5 and w[0] == "pinocchio":
            pin[(w[1], w[2])] = float(w[4])


def ours(robot, name):
    path = os.path.join(criterion, robot, name, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


rows = [
    (robot, nv, algo, label)
    for robot, nv in (("panda", 9), ("talos_full", 50))
    for algo, label in (
        ("crba", "crba (kinematics + mass matrix)"),
        ("rnea", "rnea (kinematics + inverse dynamics)"),
        ("kinematics", "forward kinematics alone"),
    )
]
print()
print("median ns per call (ours: criterion median; Pinocchio: median of batch means)")
print()
print("| robot | algorithm | ours, N = nv | ours, N = 64 | Pinocchio | Pinocchio (crba WORLD) | ours / Pinocchio |")
print("|---|---|---:|---:|---:|---:|---:|")
for robot, nv, algo, label in rows:
    a = ours(robot, f"{algo}_n{nv}")
    b = ours(robot, f"{algo}_n64")
    p = pin[(robot, algo)]
    world = f"{pin[(robot, 'crba_world')]:.0f}" if algo == "crba" else ""
    print(f"| {robot} (nv {nv}) | {label} | {a:.0f} | {b:.0f} | {p:.0f} | {world} | {a / p:.2f} |")
EOF
