#!/usr/bin/env bash
# Pinocchio's side of the side-by-side benchmark (robot-model/tools/side_by_side.sh runs it next
# to the Rust bench robot-model/benches/tree.rs): compiles robot-model/tools/pinocchio_bench.cpp
# with g++ -O3 -march=native against the pip-installed Pinocchio (`pip install pin`, a cmeel
# wheel: its headers, and those of Boost, live in site-packages/cmeel.prefix) and prints the
# median ns of one crba, one rnea and one forwardKinematics call for panda and talos_full
# (floating base), each over BATCHES batches of CALLS calls (the median of the batch means;
# defaults 200 and 1000). PINOCCHIO_MARCH=x86-64 compiles for the generic x86-64 target instead
# of -march=native (the target cargo builds for without RUSTFLAGS).
#
# Inputs it prepares in a temporary directory from Python: each model built by Pinocchio's URDF
# parser exactly as robot-model/tools/pinocchio_reference.py builds it (fixed base for panda, a
# free flyer for talos_full, mimic joints independent), saved with Model.saveToText; and the
# states (q, v, a) of the committed reference robot-model/tests/data/pinocchio/<robot>.json, the
# states the Rust bench uses, with the reference's rnea at each: the program checks the model it
# read back against it (1e-12 relative) before timing anything. Pinocchio is compiled header-only
# here (its explicit template instantiations in libpinocchio_default.so, built for a generic
# x86-64, are not used), so all of it is compiled for this CPU; cargo bench compiles for the
# default target CPU unless RUSTFLAGS says otherwise (side_by_side.sh prints RUSTFLAGS). The
# binary is cached (${XDG_CACHE_HOME:-~/.cache}/hil/pinocchio-bench-<hash of source, flags,
# compiler, Pinocchio>): compiling takes about 2 minutes and 3.5 GB of memory.
#
# Eigen: the Pinocchio wheel does not ship Eigen's headers (they are a build-time dependency); the
# script uses cmeel.prefix/include/eigen3 or /usr/include/eigen3 if present, and otherwise installs
# the pip package cmeel-eigen (pinned below) with --no-deps into a cache directory
# (${XDG_CACHE_HOME:-~/.cache}/hil/cmeel-eigen-<version>), never into site-packages.
#
# Needs: python3 with `import pinocchio` (pin 4.1.0 was used), g++ (C++17), and
# scripts/example-robot-data.sh for the URDFs. Exits 0 with a SKIP line when Pinocchio cannot be
# imported and HIL_REQUIRE_PINOCCHIO is not set.
#
# `chain28` is also accepted as a robot: control-core's 28-DoF benchmark chain
# (control-core/benches/articulated.rs `long_chain`), built here from a generated URDF at seeded
# states; robot-model/tools/chain_side_by_side.sh times it against control-core.
#
# Usage: robot-model/tools/pinocchio_bench.sh [robot ...]     (default: panda talos_full)
#        BATCHES=200 CALLS=1000 PINOCCHIO_MARCH=native robot-model/tools/pinocchio_bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
CXX=${CXX:-g++}
BATCHES=${BATCHES:-200}
CALLS=${CALLS:-1000}
EIGEN_VERSION=3.4.1
# -march: native by default; PINOCCHIO_MARCH=x86-64 builds for the generic target cargo uses.
MARCH=${PINOCCHIO_MARCH:-native}
robots=("$@")
[ ${#robots[@]} -gt 0 ] || robots=(panda talos_full)

if ! "$PYTHON" -c "import pinocchio" 2>/dev/null; then
  if [ -n "${HIL_REQUIRE_PINOCCHIO:-}" ]; then
    echo "FAIL: HIL_REQUIRE_PINOCCHIO is set but '$PYTHON -c \"import pinocchio\"' fails"
    exit 1
  fi
  echo "SKIP: Pinocchio's Python bindings are not installed (pip install pin==4.1.0)"
  exit 0
fi

# The cmeel prefix that holds Pinocchio's headers: the directory named cmeel.prefix above the
# Python package.
prefix=$("$PYTHON" - <<'EOF'
import os
import pinocchio

d = os.path.dirname(os.path.abspath(pinocchio.__file__))
while os.path.basename(d) != "cmeel.prefix":
    parent = os.path.dirname(d)
    if parent == d:
        raise SystemExit("pinocchio is not inside a cmeel.prefix (not the pip wheel?)")
    d = parent
print(d)
EOF
)
[ -f "$prefix/include/pinocchio/config.hpp" ] || { echo "FAIL: no Pinocchio headers in $prefix/include"; exit 1; }
[ -d "$prefix/include/boost" ] || { echo "FAIL: no Boost headers in $prefix/include (cmeel-boost)"; exit 1; }

eigen=""
for d in "$prefix/include/eigen3" /usr/include/eigen3; do
  if [ -f "$d/Eigen/Core" ]; then eigen=$d; break; fi
done
if [ -z "$eigen" ]; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/hil/cmeel-eigen-$EIGEN_VERSION"
  if [ ! -f "$cache/cmeel.prefix/include/eigen3/Eigen/Core" ]; then
    echo "installing cmeel-eigen==$EIGEN_VERSION (headers only, --no-deps) into $cache" >&2
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --target "$cache" \
      "cmeel-eigen==$EIGEN_VERSION" >&2
  fi
  eigen="$cache/cmeel.prefix/include/eigen3"
fi

robots_dir=$(scripts/example-robot-data.sh | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Models and states.
"$PYTHON" - "$robots_dir" "$tmp" "${robots[@]}" <<'EOF'
import json
import os
import sys

import numpy as np
import pinocchio as pin

robots_dir, out = sys.argv[1], sys.argv[2]


def chain28_urdf():
    """control-core's benches/articulated.rs `long_chain()` as a URDF: 28 box links, joint i at
    x = the previous link's length with rpy (0.1 (i mod 3), 0, 0.05 i), axes cycling z, y, x,
    (0, 1, 1); link i 0.3 - 0.007 i m long, 4 - 0.1 i kg, its centre of mass halfway along x,
    the inertia of a box 0.08 m across (the bench's `link`). Revolute joints with wide limits
    (a URDF `continuous` joint is a unit-circle pair in Pinocchio: nq 2)."""
    axes = [(0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 1.0)]
    parts = ['<robot name="chain28">', '<link name="link0"/>']
    for i in range(28):
        f = float(i)
        length = 0.3 - 0.007 * f
        previous = 0.0 if i == 0 else 0.3 - 0.007 * (f - 1.0)
        mass = 4.0 - 0.1 * f
        a, k = 0.08, mass / 12.0
        ixx, iyy = k * 2.0 * a * a, k * (length * length + a * a)
        ax = axes[i % 4]
        parts.append(
            f'<link name="link{i + 1}"><inertial><origin xyz="{length / 2.0!r} 0 0" rpy="0 0 0"/>'
            f'<mass value="{mass!r}"/><inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" '
            f'iyz="0" izz="{iyy!r}"/></inertial></link>'
        )
        parts.append(
            f'<joint name="j{i}" type="revolute"><parent link="link{i}"/><child link="link{i + 1}"/>'
            f'<origin xyz="{previous!r} 0 0" rpy="{0.1 * (f % 3.0)!r} 0 {0.05 * f!r}"/>'
            f'<axis xyz="{ax[0]!r} {ax[1]!r} {ax[2]!r}"/>'
            f'<limit lower="-3.2" upper="3.2" effort="1000" velocity="100"/></joint>'
        )
    parts.append("</robot>")
    return "".join(parts)


for robot in sys.argv[3:]:
    if robot == "chain28":
        # Not a reference robot: built here, at seeded states (q in ±1.5 rad, v and a in ±2),
        # with Pinocchio's own rnea as the value the model read back must reproduce.
        model = pin.buildModelFromXML(chain28_urdf())
        model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
        data = model.createData()
        rng = np.random.default_rng(28)
        model.saveToText(os.path.join(out, "chain28.model.txt"))
        with open(os.path.join(out, "chain28.states.txt"), "w") as f:
            f.write(f"{model.nq} {model.nv} 64\n")
            for _ in range(64):
                q = rng.uniform(-1.5, 1.5, model.nq)
                v, a = rng.uniform(-2.0, 2.0, model.nv), rng.uniform(-2.0, 2.0, model.nv)
                tau = pin.rnea(model, data, q, v, a)
                for row in (q, v, a, tau):
                    f.write(" ".join(repr(float(x)) for x in row) + "\n")
        continue
    with open(f"robot-model/tests/data/pinocchio/{robot}.json") as f:
        ref = json.load(f)
    path = os.path.join(robots_dir, ref["urdf"])
    if ref["floating_base"]:
        model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer(), mimic=False)
    else:
        model = pin.buildModelFromUrdf(path, mimic=False)
    model.gravity = pin.Motion(np.array(ref["gravity"]), np.zeros(3))
    model.saveToText(os.path.join(out, f"{robot}.model.txt"))
    with open(os.path.join(out, f"{robot}.states.txt"), "w") as f:
        f.write(f"{model.nq} {model.nv} {len(ref['samples'])}\n")
        for s in ref["samples"]:
            q = pin.neutral(model)
            if ref["floating_base"]:
                q[0:3] = s["base"]["translation"]
                q[3:7] = s["base"]["quaternion_xyzw"]
            for j in ref["joints"]:
                q[j["idx_q"]] = s["q"][j["name"]]
            for row in (q, s["v"], s["a"], s["rnea"]):
                f.write(" ".join(repr(float(x)) for x in row) + "\n")
EOF

cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/hil"
defs=(-DNDEBUG -DBOOST_MPL_LIMIT_LIST_SIZE=30 -DBOOST_MPL_LIMIT_VECTOR_SIZE=30
  -DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS -DBOOST_FUSION_INVOKE_MAX_ARITY=12)
flags=(-std=c++17 -O3 -march="$MARCH" "${defs[@]}" -w -isystem "$prefix/include" -isystem "$eigen")
key=$( { cat robot-model/tools/pinocchio_bench.cpp; echo "${flags[*]}"; "$CXX" --version | head -n 1
  echo "$prefix"; cat "$prefix/include/pinocchio/config.hpp"; } | sha256sum | cut -c 1-16)
bin="$cache_dir/pinocchio-bench-$key"
if [ ! -x "$bin" ]; then
  echo "compiling pinocchio_bench.cpp: $CXX -O3 -march=$MARCH (Eigen from $eigen)" >&2
  mkdir -p "$cache_dir"
  "$CXX" "${flags[@]}" robot-model/tools/pinocchio_bench.cpp -o "$tmp/pinocchio_bench" \
    -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lboost_serialization
  mv "$tmp/pinocchio_bench" "$bin"
fi

for robot in "${robots[@]}"; do
  "$bin" "$robot" "$tmp/$robot.model.txt" "$tmp/$robot.states.txt" "$BATCHES" "$CALLS"
done
