#!/usr/bin/env bash
# Regenerates robot-model's Pinocchio reference (robot-model/tests/data/pinocchio/<robot>.json,
# made by robot-model/tools/pinocchio_reference.py; see its header) into a temporary directory and
# compares it with the committed files: the same robots, keys, joint names and strings, and every
# number equal to 1e-15 relative to the largest magnitude of the quantity it belongs to (a vector
# or a matrix as a whole, a scalar on its own). Exits non-zero on any difference, on a missing or
# extra file, or on a generator that fails. The versions a file records (Pinocchio, numpy,
# example-robot-data, Python) are printed when they differ from the ones used now, but only the
# numbers decide.
#
# Needs Pinocchio's Python bindings (`pip install pin`; the committed files were made with 4.1.0)
# and example-robot-data (found through scripts/example-robot-data.sh). Without `import pinocchio`
# it skips with a message and exits 0, unless HIL_REQUIRE_PINOCCHIO is set (to anything non-empty),
# when it fails instead.
#
# Usage: scripts/check-pinocchio-reference.sh            (from anywhere in the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
REF_DIR=robot-model/tests/data/pinocchio
TOOL=robot-model/tools/pinocchio_reference.py

if ! "$PYTHON" -c "import pinocchio" 2>/dev/null; then
  if [ -n "${HIL_REQUIRE_PINOCCHIO:-}" ]; then
    echo "FAIL: HIL_REQUIRE_PINOCCHIO is set but '$PYTHON -c \"import pinocchio\"' fails (pip install pin==4.1.0)"
    exit 1
  fi
  echo "SKIP: Pinocchio's Python bindings are not installed ('$PYTHON -c \"import pinocchio\"' fails);"
  echo "      $REF_DIR was not checked. Install them with 'pip install pin==4.1.0', or set"
  echo "      HIL_REQUIRE_PINOCCHIO=1 to make this a failure."
  exit 0
fi

robots_dir=$(scripts/example-robot-data.sh | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

if ! "$PYTHON" "$TOOL" --robots-dir "$robots_dir" --out-dir "$tmp" 2> "$tmp/gen.err"; then
  echo "FAIL: $TOOL failed:"
  cat "$tmp/gen.err"
  exit 1
fi

status=0
"$PYTHON" - "$REF_DIR" "$tmp" <<'EOF' || status=$?
import json
import math
import os
import sys

ref_dir, new_dir = sys.argv[1], sys.argv[2]
TOL = 1e-15


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def numeric_leaves(x):
    """The numbers of a (nested) list of numbers, or None if it holds anything else."""
    if is_number(x):
        return [float(x)]
    if isinstance(x, list) and x:
        out = []
        for item in x:
            sub = numeric_leaves(item)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def compare(ref, new, path, errors):
    ref_nums, new_nums = numeric_leaves(ref), numeric_leaves(new)
    if ref_nums is not None or new_nums is not None:
        if ref_nums is None or new_nums is None or len(ref_nums) != len(new_nums):
            errors.append(f"{path}: shape differs")
            return
        if numeric_shape(ref) != numeric_shape(new):
            errors.append(f"{path}: shape differs")
            return
        scale = max(abs(v) for v in ref_nums)
        worst, at = 0.0, 0
        for i, (a, b) in enumerate(zip(ref_nums, new_nums)):
            if not (math.isfinite(a) and math.isfinite(b)):
                errors.append(f"{path}[{i}]: not finite ({a!r}, {b!r})")
                return
            err = abs(a - b) / scale if scale > 0 else abs(a - b)
            if err > worst:
                worst, at = err, i
        if worst > TOL:
            errors.append(
                f"{path}: flat index {at}: committed {ref_nums[at]!r}, regenerated "
                f"{new_nums[at]!r} (relative {worst:.2e} > {TOL:.0e})"
            )
        return
    if isinstance(ref, dict) and isinstance(new, dict):
        if list(ref) != list(new):
            errors.append(f"{path}: keys differ: {sorted(set(ref) ^ set(new))}")
            return
        for k in ref:
            if path == "" and k == "versions":
                continue
            compare(ref[k], new[k], f"{path}.{k}" if path else k, errors)
        return
    if isinstance(ref, list) and isinstance(new, list):
        if len(ref) != len(new):
            errors.append(f"{path}: length {len(ref)} != {len(new)}")
            return
        for i, (a, b) in enumerate(zip(ref, new)):
            compare(a, b, f"{path}[{i}]", errors)
        return
    if ref != new:
        errors.append(f"{path}: committed {ref!r}, regenerated {new!r}")


def numeric_shape(x):
    return [numeric_shape(i) for i in x] if isinstance(x, list) else 0


status = 0
ref_files = sorted(f for f in os.listdir(ref_dir) if f.endswith(".json"))
new_files = sorted(f for f in os.listdir(new_dir) if f.endswith(".json"))
for f in sorted(set(ref_files) ^ set(new_files)):
    where = "committed only" if f in ref_files else "regenerated only"
    print(f"FAIL {ref_dir}/{f}: {where}")
    status = 1
for f in sorted(set(ref_files) & set(new_files)):
    with open(os.path.join(ref_dir, f)) as fh:
        ref = json.load(fh)
    with open(os.path.join(new_dir, f)) as fh:
        new = json.load(fh)
    if ref.get("versions") != new.get("versions"):
        print(f"note {ref_dir}/{f}: made with {ref.get('versions')}, now {new.get('versions')}")
    errors = []
    compare(ref, new, "", errors)
    if errors:
        print(f"FAIL {ref_dir}/{f} differs from the regenerated file:")
        for e in errors[:20]:
            print(f"     {e}")
        if len(errors) > 20:
            print(f"     ... and {len(errors) - 20} more")
        status = 1
    else:
        print(f"ok   {ref_dir}/{f}")
sys.exit(status)
EOF
echo "Pinocchio reference checked in $(( $(date +%s) - start )) s"
exit $status
