#!/usr/bin/env bash
# Runs `scenarios/pose_tour.toml` with the `arrival` controller on every URDF of
# example-robot-data (found by scripts/example-robot-data.sh), unmodified, one after the other,
# and prints one line per file: the moving joints, the keyframes reached within 1e-2 rad, the
# worst arrival error, the joint-ticks limited by the URDF's efforts and the keyframes listed as
# unreachable (a joint's gravity holding torque beyond its effort); or, for a file the loader
# refuses, its reason (exit 2, naming the element). Each run writes into OUT/<file>/ (default
# OUT=out/pose-tour-all). Needs a release build of hil (`cargo build --release -p hil`).
#
# Usage: scripts/pose-tour-all.sh [OUT]        (from anywhere in the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-out/pose-tour-all}
HIL=target/release/hil
[ -x "$HIL" ] || { echo "no $HIL: run 'cargo build --release -p hil' first" >&2; exit 1; }
R=$(sh scripts/example-robot-data.sh)
mkdir -p "$OUT"
find "$R" -name '*.urdf' | sort | while read -r urdf; do
  name=$(echo "${urdf#"$R"/}" | tr '/' '_')
  if "$HIL" run scenarios/pose_tour.toml --urdf "$urdf" --only arrival --out "$OUT/$name" \
      > "$OUT/$name.log" 2>&1; then
    python3 - "$OUT/$name/report.json" "${urdf#"$R"/}" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["controllers"][0]
print(f"{sys.argv[2]}: {len(r['joints'])} joints, {c['keyframes_within_1e_2_rad']}/{c['targets']} "
      f"keyframes within 1e-2 rad (worst {c['max_arrival_error_rad']:.2e} rad), "
      f"{c['torque_limited_joint_ticks']} torque-limited joint-ticks, "
      f"{len(r.get('unreachable_keyframes') or [])} unreachable keyframes"
      + ("" if r["complete"] else f", INCOMPLETE: {r['incomplete_reason']}"))
EOF
  else
    echo "${urdf#"$R"/}: refused (exit $?): $(tail -n 1 "$OUT/$name.log" | sed "s|$R/||g")"
  fi
done
