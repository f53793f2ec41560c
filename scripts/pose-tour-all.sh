#!/usr/bin/env bash
# Runs `scenarios/pose_tour.toml` with the `arrival` controller on every URDF of
# example-robot-data (found by scripts/example-robot-data.sh), unmodified, one after the other,
# and prints one line per file: the moving joints, the keyframes reached within 1e-2 rad, the
# worst arrival error, the joint-ticks limited by the URDF's efforts and the keyframes at which
# some joint's gravity holding torque is beyond its effort (`unreachable_keyframes`, counted
# once per keyframe); for a file the loader or the plant refuses (exit 2), its reason; for a run
# that fails otherwise, its exit code and last line. Each run writes into OUT/<file>/ (default
# out/pose-tour-all in the checkout; a relative OUT is taken from the current folder). Needs a
# release build of hil (`cargo build --release -p hil`).
#
# Usage: scripts/pose-tour-all.sh [OUT]        (from anywhere)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:-$root/out/pose-tour-all}")
cd "$root" || exit 1

HIL=target/release/hil
[ -x "$HIL" ] || { echo "no $HIL: run 'cargo build --release -p hil' first" >&2; exit 1; }
R=$(sh scripts/example-robot-data.sh) || exit 1
mkdir -p "$OUT" || exit 1
find "$R" -name '*.urdf' -print0 | sort -z | while IFS= read -r -d '' urdf; do
  rel=${urdf#"$R"/}
  name=${rel//\//_}
  "$HIL" run scenarios/pose_tour.toml --urdf "$urdf" --only arrival --out "$OUT/$name" \
    > "$OUT/$name.log" 2>&1
  code=$?
  last=$(tail -n 1 "$OUT/$name.log")
  last=${last//"$R/"/}
  case $code in
    0)
      python3 - "$OUT/$name/report.json" "$rel" <<'EOF' || echo "$rel: ran, but its report.json could not be read"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["controllers"][0]
worst = c.get("max_arrival_error_rad")
worst = "n/a" if worst is None else f"{worst:.2e} rad"
unreachable = {u.get("keyframe") for u in (r.get("unreachable_keyframes") or [])}
print(f"{sys.argv[2]}: {len(r['joints'])} joints, {c['keyframes_within_1e_2_rad']}/{c['targets']} "
      f"keyframes within 1e-2 rad (worst {worst}), "
      f"{c['torque_limited_joint_ticks']} torque-limited joint-ticks, "
      f"{len(unreachable)} unreachable keyframes"
      + ("" if r["complete"] else f", INCOMPLETE: {r['incomplete_reason']}"))
EOF
      ;;
    2) echo "$rel: refused: $last" ;;
    *) echo "$rel: failed (exit $code): $last" ;;
  esac
done
