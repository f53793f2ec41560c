#!/usr/bin/env python3
"""Lines of per-kind code against shared code in `hil run` and the plant (`sim-host`).

Usage: scripts/kind-lines.py [REPO_ROOT]   (default: the repository this script is in)

Counts code lines: lines that are neither blank nor comments (`//`, `///`, `//!`), up to an
inline `#[cfg(test)] mod … {` (the unit tests sit at the end of each file). Each
file of `hil/src/run`, `hil/src/replay`, `hil/src/anim.rs`, `hil/src/model.rs` and `sim-host/src`
is put in one class by its main content, at file granularity (a file that is mostly one kind's
with a few shared helpers counts as that kind's):

- a scenario kind's own code (its scenario, controllers' wiring, recorder, report, plots, plant);
- family: code shared by some kinds but not all (the humanoid plant and its roles, the robot
  plant of any URDF, the planar GIF renderer);
- shared: code every kind runs through (sessions, drivers, clock, exchange, output folder,
  report header, plant process, frames' host).

`hil study`, `hil jitter` and `hil paper` are other commands and not counted.
"""

import os
import re
import sys

# Path prefix (relative to the root) -> class. The first match wins; anything not listed is shared.
CLASSES = [
    # ball_blocking: the arm on its hinge (scenario file, controllers, recorder, report, plot,
    # firmware in the loop, and its plant). Before the kinds had a module each, the arm's files
    # sat in hil/src/run/ beside the shared ones.
    ("hil/src/run/arm/", "ball_blocking"),
    ("sim-host/src/plant.rs", "ball_blocking"),
    ("sim-host/src/scene.rs", "ball_blocking"),
    # The joint-space kinds on a URDF robot: on_the_beat, kenwright_reach, pose_tour.
    ("hil/src/run/chain/", "chain kinds"),
    ("hil/src/replay/chain.rs", "chain kinds"),
    ("hil/src/model.rs", "chain kinds"),
    ("sim-host/src/chain.rs", "chain kinds"),
    # simbicon_walk: the planar walker.
    ("hil/src/run/biped/", "simbicon_walk"),
    ("hil/src/run/walk/", "simbicon_walk"),
    ("hil/src/replay/biped.rs", "simbicon_walk"),
    ("sim-host/src/biped.rs", "simbicon_walk"),
    ("sim-host/src/walk.rs", "simbicon_walk"),
    # dynamo_push and the balance scenarios on the 15-body humanoid.
    ("hil/src/run/dynamo/", "dynamo_push"),
    # The humanoid's replay page, for its push and walk kinds.
    ("hil/src/replay/humanoid.rs", "family"),
    # robot_push: a real legged robot from its URDF.
    ("hil/src/run/legged.rs", "robot_push"),
    ("hil/src/replay/legged.rs", "robot_push"),
    # walk3d: the humanoid walking in 3D.
    ("hil/src/run/walk3d", "walk3d"),
    ("hil/src/run/stance_stabiliser.rs", "walk3d"),
    # Shared by some kinds.
    ("sim-host/src/humanoid.rs", "family"),
    ("hil/src/run/roles.rs", "family"),
    # The feet and the capture point of a pushed robot, for the two push kinds (dynamo_push, robot_push).
    ("hil/src/run/standing.rs", "family"),
    ("sim-host/src/robot.rs", "family"),
    ("hil/src/anim.rs", "family"),
    ("hil/src/replay/hull.rs", "family"),
    ("hil/src/replay/mesh.rs", "family"),
]

# The layout before the arm had its module: its files, mostly the arm's with shared helpers, in
# hil/src/run/ (report.rs, half the arm's report and half shared, is counted as shared).
LEGACY_ARM = [
    ("hil/src/run/controller.rs", "ball_blocking"),
    ("hil/src/run/recorder.rs", "ball_blocking"),
    ("hil/src/run/plot.rs", "ball_blocking"),
    ("hil/src/run/firmware.rs", "ball_blocking"),
    ("hil/src/run/scenario.rs", "ball_blocking"),
]

ROOTS = ["hil/src/run", "hil/src/replay", "hil/src/anim.rs", "hil/src/model.rs", "sim-host/src"]


def code_lines(path):
    n = 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.startswith("#[cfg(test)]") and nxt.startswith("mod ") and nxt.endswith("{"):
            break  # the unit tests, at the end of the file
        s = line.strip()
        if s and not s.startswith("//"):
            n += 1
    return n


def files(root):
    for r in ROOTS:
        p = os.path.join(root, r)
        if os.path.isfile(p):
            yield r
        elif os.path.isdir(p):
            for d, _, names in os.walk(p):
                for name in sorted(names):
                    if name.endswith(".rs"):
                        yield os.path.relpath(os.path.join(d, name), root)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    classes = CLASSES
    if not os.path.isdir(os.path.join(root, "hil/src/run/arm")):
        classes = LEGACY_ARM + CLASSES
    totals = {}
    for rel in sorted(files(root)):
        cls = next((c for prefix, c in classes if rel.startswith(prefix)), "shared")
        totals[cls] = totals.get(cls, 0) + code_lines(os.path.join(root, rel))
    kinds = sorted(k for k in totals if k not in ("shared", "family"))
    per_kind = sum(totals[k] for k in kinds)
    print("| class | code lines |")
    print("|---|---|")
    for k in kinds:
        print(f"| {k} | {totals[k]} |")
    print(f"| **all kinds' own code** | **{per_kind}** |")
    print(f"| family (some kinds) | {totals.get('family', 0)} |")
    print(f"| shared (every kind) | {totals.get('shared', 0)} |")


if __name__ == "__main__":
    main()
