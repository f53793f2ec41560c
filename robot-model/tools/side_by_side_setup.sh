# Sourced by robot-model/tools/side_by_side.sh and chain_side_by_side.sh (from the repository
# root, with `set -euo pipefail`): their settings (PYTHON, MEASUREMENT_TIME, ROUNDS, BATCHES), a
# header naming the CPU, the compilers and the load, cargo's target directory ($target_dir) and
# a temporary directory ($tmp) removed on exit.
PYTHON=${PYTHON:-python3}
MEASUREMENT_TIME=${MEASUREMENT_TIME:-2}
ROUNDS=${ROUNDS:-5}
export BATCHES=${BATCHES:-100}

echo "CPU: $(grep -m 1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores)"
echo "RUSTFLAGS: ${RUSTFLAGS:-(none)}; rustc: $(rustc --version)"
echo "Pinocchio: g++ -O3 -march=${PINOCCHIO_MARCH:-native}; $(g++ --version | head -n 1)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

target_dir=$(cargo metadata --format-version 1 --no-deps | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
