#!/usr/bin/env bash
# control-core's 28-DoF arrival tick beside Pinocchio's dynamics on the same chain: runs, in
# alternation for ROUNDS rounds (default 5), the 28-DoF rows of the criterion bench
# control-core/benches/articulated.rs (the chain `long_chain`, a fixed-base `Tree<28>`) and
# robot-model/tools/pinocchio_bench.sh chain28 (the same chain from a generated URDF, Pinocchio 4.1
# compiled with g++ -O3), and prints one table of median ns per call:
#   - ours: the arrival tick with inverse-dynamics coupling (`tick_inverse_dynamics`), its parts
#     (`kinematics_into`, `composite`, `gravity`, `inverse_dynamics`, `arrival_solves`) and the
#     mass matrix (`mass_matrix_into`), each part on kinematics kept in one buffer;
#   - Pinocchio: rnea, crba (each with its own forward pass) and forwardKinematics;
#   - the like-for-like ratios: kinematics_into + inverse_dynamics against rnea, kinematics_into
#     + mass_matrix_into against crba (medians of the per-round ratios, with the smallest and
#     largest).
# The two sides never run at the same time; alternating them lets a change of the machine's load
# fall on both. PINOCCHIO_MARCH=x86-64 compiles Pinocchio for the target cargo builds for.
#
# Usage: PINOCCHIO_MARCH=x86-64 ROUNDS=5 robot-model/tools/chain_side_by_side.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=robot-model/tools/side_by_side_setup.sh
. robot-model/tools/side_by_side_setup.sh

ours=(tick_inverse_dynamics kinematics_into composite gravity inverse_dynamics arrival_solves mass_matrix_into)
filter="^articulated/($(IFS='|'; echo "${ours[*]}"))/28dof\$"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS: cargo bench -p control-core --bench articulated" >&2
  cargo bench -p control-core --bench articulated -- --warm-up-time 1 \
    --measurement-time "$MEASUREMENT_TIME" "$filter" >&2
  for name in "${ours[@]}"; do
    "$PYTHON" -c 'import json, sys; print(sys.argv[2], json.load(open(sys.argv[1]))["median"]["point_estimate"])' \
      "$target_dir/criterion/articulated/$name/28dof/new/estimates.json" "$name"
  done > "$tmp/ours.$round.txt"
  echo "== round $round of $ROUNDS: robot-model/tools/pinocchio_bench.sh chain28" >&2
  robot-model/tools/pinocchio_bench.sh chain28 | tee "$tmp/pinocchio.$round.txt" >&2
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
    with open(os.path.join(tmp, f"ours.{r}.txt")) as f:
        ours.append({w[0]: float(w[1]) for w in (line.split() for line in f)})
    with open(os.path.join(tmp, f"pinocchio.{r}.txt")) as f:
        pin.append({w[2]: float(w[4]) for w in (line.split() for line in f) if w[:1] == ["pinocchio"]})

med = lambda rows, key: statistics.median(row[key] for row in rows)


def ratio(parts, algo):
    rs = sorted(sum(o[p] for p in parts) / q[algo] for o, q in zip(ours, pin))
    return f"{statistics.median(rs):.2f} [{rs[0]:.2f}, {rs[-1]:.2f}]"


print()
print(f"28-DoF chain, median ns per call over {rounds} alternating rounds (ours: criterion median;")
print("Pinocchio: median of batch means); ratios: median of the per-round ratios [smallest, largest]")
print()
print("| ours | ns | Pinocchio | ns | ours / Pinocchio |")
print("|---|---:|---|---:|---:|")
rows = (
    (("kinematics_into", "inverse_dynamics"), "kinematics + inverse dynamics", "rnea"),
    (("kinematics_into", "mass_matrix_into"), "kinematics + mass matrix", "crba"),
    (("kinematics_into",), "kinematics", "kinematics"),
)
for parts, label, algo in rows:
    ns = statistics.median(sum(o[p] for p in parts) for o in ours)
    print(f"| {label} | {ns:.0f} | {algo} | {med(pin, algo):.0f} | {ratio(parts, algo)} |")
print()
print("the arrival tick and its parts (ours):")
for name in ("tick_inverse_dynamics", "kinematics_into", "composite", "gravity", "inverse_dynamics", "arrival_solves"):
    print(f"  {name}: {med(ours, name):.0f} ns")
print(f"  tick_inverse_dynamics / Pinocchio's rnea: {ratio(('tick_inverse_dynamics',), 'rnea')}")
PY
