#!/usr/bin/env python3
"""Reference dynamics from Pinocchio for robot-model's comparison test (tests/pinocchio.rs).

What it generates
-----------------
One JSON file per robot, ``<out-dir>/<robot>.json`` (committed as
``robot-model/tests/data/pinocchio/<robot>.json``), for six descriptions of example-robot-data:

    panda           panda_description/urdf/panda.urdf        fixed base
    ur5             ur_description/urdf/ur5_robot.urdf       fixed base
    talos_left_arm  talos_data/robots/talos_left_arm.urdf    fixed base
    so100           so_arm_description/urdf/so100.urdf       fixed base
    solo12          solo_description/robots/solo12.urdf      floating base (free flyer)
    talos_full      talos_data/robots/talos_full_v2.urdf     floating base (free flyer)

Each model is built with ``pin.buildModelFromUrdf(path)`` (fixed base) or
``pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())`` (floating base). Pinocchio 4.1's
``mimic`` argument defaults to False, which loads ``<mimic>`` joints as independent joints; it is
passed explicitly (``mimic=False``) so that a change of default cannot change the reference.

At a few seeded random states (4; 3 for talos_full, to keep its file under 400 KB) it records:

- the joints in Pinocchio's order (name, type, idx_q, idx_v); a free flyer, when there is one
  ("floating_base": true), is not listed: it holds q[0:7] and v[0:6],
- q: each joint's position by name, uniform in [max(lower, -pi), min(upper, pi)] (so within the
  URDF limits, and in [-pi, pi] for an unbounded joint),
- the base pose: a translation uniform in [-1, 1]^3 and a uniformly random unit quaternion
  (stored x, y, z, w, plus Pinocchio's rotation matrix of it, row-major); the identity for a
  fixed base,
- v and a uniform in [-2, 2] (Pinocchio's layout: for a floating base v[0:3] is the base's linear
  velocity and v[3:6] its angular velocity, both in the base frame; joint velocities follow at
  each joint's idx_v),
- "mass_matrix": ``pin.crba`` with the lower triangle filled from the upper one (symmetric),
- "gravity_torque": ``pin.computeGeneralizedGravity``, gravity (0, 0, -9.81),
- "rnea": ``pin.rnea(q, v, a)`` with that gravity,
- "total_mass" and "com": ``pin.computeTotalMass``, ``pin.centerOfMass`` (world frame),
- "com_jacobian": ``pin.jacobianCenterOfMass`` (3 x nv, world frame),
- "subtree": for each joint's child body (named after the URDF link that carries the joint's
  body frame), the mass and world-frame centre of mass of the subtree it roots:
  ``pin.centerOfMass(model, data, q, True)`` (compute_subtree_coms=True: data.mass[i],
  data.com[i]). Pinocchio leaves data.com[i] (i > 0) in joint i's own frame (= the child body's
  frame): it is stored as "com_local", and moved into the world by data.oMi[i] as "com". For a
  floating base the base link's entry is the whole robot,
- "subtree_fixed_base": for a fixed base, the whole moving tree as Pinocchio's universe sees it
  (data.mass[0], data.com[0]: the fixed base's own inertia is not counted); null when floating,
- "frames": for a few named frames (URDF links: end effectors, tool links, feet), the world
  placement ``data.oMf`` (translation, rotation row-major) and the frame Jacobian
  ``pin.computeFrameJacobian(..., pin.LOCAL_WORLD_ALIGNED)`` (6 x nv, linear rows first).

All floats are written with Python's repr (the shortest string that reads back to the same
double), so the test reads exactly the numbers Pinocchio computed. The URDF path is stored
relative to example-robot-data's robots directory; the test finds that directory through
scripts/example-robot-data.sh. No third-party file is copied.

Command (from the repository root)
----------------------------------
    python3 robot-model/tools/pinocchio_reference.py \
        [--robots-dir "$(scripts/example-robot-data.sh)"] [--out-dir robot-model/tests/data/pinocchio]

Without --robots-dir it asks scripts/example-robot-data.sh. scripts/check-pinocchio-reference.sh
re-runs it into a temporary directory and compares with the committed files.

Versions used for the committed files
-------------------------------------
Pinocchio 4.1.0 (pip package ``pin`` 4.1.0, cmeel build), numpy 2.4.6, example-robot-data 6.0.0,
Python 3.11.7, x86_64 Linux. (Each file also records the versions it was made with.) The random
draws use numpy's ``default_rng`` (PCG64) seeded per robot; should another numpy draw them
differently, scripts/check-pinocchio-reference.sh reports it as a difference in q, v, a.
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
from importlib import metadata

import numpy as np
import pinocchio as pin

GRAVITY = (0.0, 0.0, -9.81)

# name, URDF path relative to the robots dir, floating base, samples, frames to record.
ROBOTS = [
    (
        "panda",
        "panda_description/urdf/panda.urdf",
        False,
        4,
        ["panda_link8", "panda_hand", "panda_hand_tcp", "panda_leftfinger"],
    ),
    ("ur5", "ur_description/urdf/ur5_robot.urdf", False, 4, ["ee_link", "tool0"]),
    (
        "talos_left_arm",
        "talos_data/robots/talos_left_arm.urdf",
        False,
        4,
        ["wrist_left_ft_tool_link", "gripper_left_base_link", "gripper_left_fingertip_1_link"],
    ),
    ("so100", "so_arm_description/urdf/so100.urdf", False, 4, ["gripper", "jaw"]),
    ("solo12", "solo_description/robots/solo12.urdf", True, 4, ["FL_FOOT", "HR_FOOT"]),
    (
        "talos_full",
        "talos_data/robots/talos_full_v2.urdf",
        True,
        3,
        ["left_sole_link", "right_sole_link", "gripper_left_base_link", "rgbd_optical_frame"],
    ),
    # Multi-axis joints as chained revolute joints with links that have no <inertial> between
    # them (massless frames).
    ("human", "human_description/robots/human.urdf", True, 3, ["left_hand", "right_foot"]),
]


def version_of(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def robots_dir_from_script():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.join(root, "scripts", "example-robot-data.sh")
    out = subprocess.run([script], check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1]


def floats(x):
    """A numpy array (any shape) or scalar as nested lists of Python floats."""
    return np.asarray(x, dtype=float).tolist()


def body_link_of_joint(model, joint_id):
    """The URDF link whose body frame is joint `joint_id`'s body frame (the joint's child link)."""
    for f in model.frames:
        if (
            f.type == pin.FrameType.BODY
            and f.parentJoint == joint_id
            and model.frames[f.parentFrame].type == pin.FrameType.JOINT
            and model.frames[f.parentFrame].parentJoint == joint_id
        ):
            return f.name
    raise RuntimeError(f"no body frame for joint {model.names[joint_id]}")


def sample(model, data, rng, floating, frame_names):
    """One random state and every recorded quantity at it."""
    q = pin.neutral(model)
    base = None
    start = 1
    if floating:
        t = rng.uniform(-1.0, 1.0, 3)
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)  # x, y, z, w
        q[0:3] = t
        q[3:7] = quat
        start = 2
    q_by_name = {}
    for j in range(start, model.njoints):
        jm = model.joints[j]
        if jm.nq != 1 or jm.nv != 1:
            raise RuntimeError(f"joint {model.names[j]}: nq = {jm.nq}, nv = {jm.nv}: not supported")
        lo = max(model.lowerPositionLimit[jm.idx_q], -math.pi)
        hi = min(model.upperPositionLimit[jm.idx_q], math.pi)
        value = rng.uniform(lo, hi)
        q[jm.idx_q] = value
        q_by_name[model.names[j]] = float(value)
    v = rng.uniform(-2.0, 2.0, model.nv)
    a = rng.uniform(-2.0, 2.0, model.nv)

    if floating:
        m = pin.XYZQUATToSE3(q[0:7])
        base = {
            "translation": floats(q[0:3]),
            "quaternion_xyzw": floats(q[3:7]),
            "rotation": floats(m.rotation),
        }
    else:
        base = {
            "translation": [0.0, 0.0, 0.0],
            "quaternion_xyzw": [0.0, 0.0, 0.0, 1.0],
            "rotation": floats(np.eye(3)),
        }

    mass_matrix = pin.crba(model, data, q)
    mass_matrix = np.triu(mass_matrix) + np.triu(mass_matrix, 1).T
    gravity_torque = pin.computeGeneralizedGravity(model, data, q).copy()
    rnea = pin.rnea(model, data, q, v, a).copy()
    total_mass = pin.computeTotalMass(model)
    com_jacobian = pin.jacobianCenterOfMass(model, data, q, True).copy()
    com = pin.centerOfMass(model, data, q, True).copy()

    # data.com[j] (j > 0) is in joint j's frame (= the body frame); data.com[0] in the world.
    subtree = {}
    for j in range(1, model.njoints):
        subtree[body_link_of_joint(model, j)] = {
            "mass": float(data.mass[j]),
            "com_local": floats(data.com[j]),
            "com": floats(data.oMi[j].act(data.com[j])),
        }

    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    frames = {}
    for name in frame_names:
        fid = model.getFrameId(name, pin.FrameType.BODY)
        if fid >= len(model.frames):
            raise RuntimeError(f"{model.name}: no body frame {name}")
        placement = data.oMf[fid]
        jac = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        frames[name] = {
            "placement": {
                "translation": floats(placement.translation),
                "rotation": floats(placement.rotation),
            },
            "jacobian_local_world_aligned": floats(jac),
        }

    return {
        "q": q_by_name,
        "base": base,
        "v": floats(v),
        "a": floats(a),
        "mass_matrix": floats(mass_matrix),
        "gravity_torque": floats(gravity_torque),
        "rnea": floats(rnea),
        "total_mass": float(total_mass),
        "com": floats(com),
        "com_jacobian": floats(com_jacobian),
        "subtree": subtree,
        "subtree_fixed_base": (
            None if floating else {"mass": float(data.mass[0]), "com": floats(data.com[0])}
        ),
        "frames": frames,
    }


def generate(name, rel_path, floating, samples, frame_names, robots_dir, seed):
    path = os.path.join(robots_dir, rel_path)
    if floating:
        model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer(), mimic=False)
    else:
        model = pin.buildModelFromUrdf(path, mimic=False)
    model.gravity = pin.Motion(np.array(GRAVITY), np.zeros(3))
    data = model.createData()

    joints = []
    for j in range(2 if floating else 1, model.njoints):
        jm = model.joints[j]
        joints.append(
            {
                "name": model.names[j],
                "type": jm.shortname(),
                "idx_q": jm.idx_q,
                "idx_v": jm.idx_v,
            }
        )

    rng = np.random.default_rng(seed)
    return {
        "generator": "robot-model/tools/pinocchio_reference.py",
        "versions": {
            "pinocchio": pin.__version__,
            "numpy": np.__version__,
            "example-robot-data": version_of("example-robot-data"),
            "python": platform.python_version(),
        },
        "robot": name,
        "urdf": rel_path,
        "floating_base": floating,
        "mimic": "independent (pin.buildModelFromUrdf(..., mimic=False))",
        "seed": seed,
        "gravity": list(GRAVITY),
        "nq": model.nq,
        "nv": model.nv,
        "joints": joints,
        "samples": [sample(model, data, rng, floating, frame_names) for _ in range(samples)],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots-dir", help="example-robot-data's robots directory")
    parser.add_argument(
        "--out-dir",
        default=os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "pinocchio"
        ),
    )
    parser.add_argument("--only", nargs="*", help="robots to generate (default: all)")
    args = parser.parse_args()
    robots_dir = args.robots_dir or robots_dir_from_script()
    os.makedirs(args.out_dir, exist_ok=True)
    for seed, (name, rel_path, floating, samples, frame_names) in enumerate(ROBOTS, start=20260):
        if args.only and name not in args.only:
            continue
        doc = generate(name, rel_path, floating, samples, frame_names, robots_dir, seed)
        out = os.path.join(args.out_dir, f"{name}.json")
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"{out}: {os.path.getsize(out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
