#!/usr/bin/env bash
# The ball-blocking scenario with the weights over several seeds (the weights land elsewhere and
# at other times on each): blocked balls and max arrival error per controller, lockstep.
# usage: scripts/seed-sweep.sh [SCENARIO.toml] [SEEDS...]   (default: scenarios/ball_blocking.toml 1..10)
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-scenarios/ball_blocking.toml}
shift || true
seeds=${*:-1 2 3 4 5 6 7 8 9 10}
cargo build --release -q -p hil -p sim-host
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-5s %-26s %-26s %-26s\n' seed analytic fixed_gain static_timing
for seed in $seeds; do
  sed "s/^seed = .*/seed = $seed/" "$scenario" > "$tmp/s.toml"
  ./target/release/hil run "$tmp/s.toml" --out "$tmp/out" --quiet >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
  python3 - "$seed" "$tmp/out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
cells = [f"{c['blocked']}/{c['targets']} max {c['max_arrival_error_rad']:.2e} rad" for c in r['controllers']]
print(f"{sys.argv[1]:<5} " + " ".join(f"{c:<26}" for c in cells))
PY
done
