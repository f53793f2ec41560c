#!/usr/bin/env python3
"""Reference numbers for control_core::tree's unit tests, from Pinocchio (4.1).

Builds, programmatically, the Pinocchio model of the test tree of `tree.rs`
(`tests::reference_joints`): six joints of every kind the module has (revolute about a
coordinate axis, about a negative coordinate axis and about an arbitrary axis; prismatic along a
coordinate axis and an arbitrary axis), three branches, non-trivial origins and inertias, once on
a fixed base welded at a non-identity pose and once on a floating base (free-flyer).

The joints are in depth-first order: Pinocchio's crba assumes every subtree's velocities are
contiguous (a model built by addJoint in another parents-first order, e.g. breadth-first, gets a
wrong mass matrix from it without a warning; its URDF parser always walks depth-first).
control_core::tree accepts any parents-first order. Prints, as Rust
array literals, what the tests compare with: crba, rnea, computeGeneralizedGravity, the
LOCAL_WORLD_ALIGNED Jacobian and the pose of a frame, centerOfMass, jacobianCenterOfMass and the
subtree masses, centres (world) and inertias (oYcrb of crba in the WORLD convention).

    python3 control-core/tools/tree_reference.py

The conventions it pins down:
- a fixed base is Pinocchio's universe: its inertia is appended to joint 0 and left out of
  centerOfMass, and the root joints' placements are base_pose * origin;
- a floating base is a JointModelFreeFlyer at the identity with the base body appended to it;
  q = (translation, quaternion x y z w), v = (linear velocity of the base origin, angular
  velocity), both in the base frame; rnea's first 6 entries are the spatial force on the base in
  the base frame;
- data.com[i] after centerOfMass(computeSubtreeComs=True) is in joint i's frame: the world
  centre is data.oMi[i].act(data.com[i]).
"""

import numpy as np
import pinocchio as pin

BASE = dict(mass=4.0, com=[0.05, -0.02, 0.1], inertia=[0.3, 0.01, -0.02, 0.4, 0.03, 0.5])

# (parent body, kind, xyz, rpy, axis, mass, com, inertia ixx ixy ixz iyy iyz izz)
JOINTS = [
    (0, "R", [0.1, 0.0, 0.2], [0.1, -0.2, 0.3], [0, 0, 1], 2.0, [0.2, 0.01, -0.03],
     [0.02, 0.001, 0.002, 0.03, -0.001, 0.025]),
    (1, "R", [0.4, 0.0, 0.0], [0.0, 0.5, 0.0], [0.3, -0.5, 0.8], 1.5, [0.15, 0.0, 0.02],
     [0.01, 0.0, 0.001, 0.015, 0.0, 0.012]),
    (2, "P", [0.3, 0.05, 0.0], [0.2, 0.0, -0.1], [1, 0, 0], 0.5, [0.0, 0.02, 0.05],
     [0.002, 0.0, 0.0, 0.003, 0.0005, 0.001]),
    (2, "R", [0.1, -0.1, 0.0], [0.0, 0.0, 1.0], [1, 0, 0], 0.3, [0.02, 0.0, 0.01],
     [0.0005, 0.0, 0.0, 0.0006, 0.0, 0.0007]),
    (0, "R", [-0.1, 0.2, 0.0], [-0.3, 0.0, 0.2], [0, -1, 0], 1.2, [0.0, 0.1, 0.0],
     [0.008, 0.0, 0.0, 0.004, 0.0, 0.008]),
    (5, "P", [0.0, 0.3, 0.1], [0.0, 0.0, 0.0], [0.2, 0.3, -0.9], 0.8, [0.05, 0.0, 0.0],
     [0.001, 0.0002, 0.0, 0.002, 0.0, 0.0015]),
]
Q = [0.3, -0.7, 0.12, 1.1, -0.05, 0.4]
V = [0.5, -0.3, 0.2, 0.8, -0.6, 0.4]
A = [-0.2, 0.7, 0.1, -0.4, 0.3, 0.9]
BASE_V = [0.3, -0.1, 0.2, 0.4, -0.5, 0.6]
BASE_A = [-0.6, 0.2, 0.5, -0.3, 0.1, 0.7]
GRAVITY = [0.5, -0.3, -9.81]
FIXED_POSE = ([0.5, -0.3, 0.8], [0.2, 0.1, -0.4])  # xyz, rpy
FLOATING_POSE = ([0.1, 0.2, 1.0], [0.3, -0.2, 0.5])
FRAME_BODY = 3
FRAME = ([0.05, 0.02, -0.01], [0.1, 0.2, 0.3])
COMPOSITE_BODY = 2


def inertia(mass, com, i):
    ixx, ixy, ixz, iyy, iyz, izz = i
    return pin.Inertia(mass, np.array(com), np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))


def se3(xyz, rpy):
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz, dtype=float))


def joint_model(kind, axis):
    axis = np.array(axis, dtype=float)
    axis /= np.linalg.norm(axis)
    aligned = {(1, 0, 0): "X", (0, 1, 0): "Y", (0, 0, 1): "Z"}.get(tuple(axis))
    if kind == "R":
        return getattr(pin, "JointModelR" + aligned)() if aligned else pin.JointModelRevoluteUnaligned(axis)
    return getattr(pin, "JointModelP" + aligned)() if aligned else pin.JointModelPrismaticUnaligned(axis)


def build(floating):
    model = pin.Model()
    if floating:
        root = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
        model.appendBodyToJoint(root, inertia(BASE["mass"], BASE["com"], BASE["inertia"]), pin.SE3.Identity())
        welded = pin.SE3.Identity()
    else:
        root = 0
        model.appendBodyToJoint(0, inertia(BASE["mass"], BASE["com"], BASE["inertia"]), pin.SE3.Identity())
        welded = se3(*FIXED_POSE)
    body_joint = [root]  # Pinocchio joint of each body
    for k, (parent, kind, xyz, rpy, axis, mass, com, i) in enumerate(JOINTS):
        placement = se3(xyz, rpy)
        if parent == 0:
            placement = welded * placement
        j = model.addJoint(body_joint[parent], joint_model(kind, axis), placement, f"j{k}")
        model.appendBodyToJoint(j, inertia(mass, com, i), pin.SE3.Identity())
        body_joint.append(j)
    frame = model.addFrame(pin.Frame("tool", body_joint[FRAME_BODY], se3(*FRAME), pin.FrameType.OP_FRAME))
    return model, body_joint, frame


def rust(name, values):
    values = np.atleast_1d(np.asarray(values, dtype=float)).flatten()
    body = ", ".join(repr(float(v)) for v in values)
    print(f"const {name}: [f64; {values.size}] = [{body}];")


def report(floating):
    model, body_joint, frame = build(floating)
    data = model.createData()
    tag = "FLOATING" if floating else "FIXED"
    if floating:
        xyz, rpy = FLOATING_POSE
        quat = pin.Quaternion(pin.rpy.rpyToMatrix(*rpy))
        q = np.concatenate([xyz, quat.coeffs(), Q])  # coeffs: x y z w
        v = np.array(BASE_V + V)
        a = np.array(BASE_A + A)
    else:
        q, v, a = np.array(Q), np.array(V), np.array(A)
    model.gravity.linear = np.array(GRAVITY)
    mass_matrix = pin.crba(model, data, q, pin.Convention.WORLD)
    mass_matrix = np.triu(mass_matrix) + np.triu(mass_matrix, 1).T
    body = body_joint[COMPOSITE_BODY]
    composite_inertia = data.oYcrb[body].inertia.copy()
    composite_mass = data.oYcrb[body].mass
    tau = pin.rnea(model, data, q, v, a)
    g = pin.computeGeneralizedGravity(model, data, q)
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    jac = pin.computeFrameJacobian(model, data, q, frame, pin.LOCAL_WORLD_ALIGNED)
    pose = data.oMf[frame]
    com = pin.centerOfMass(model, data, q, True)
    subtree_com = data.oMi[body].act(data.com[body])
    subtree_mass = data.mass[body]
    total = data.mass[0]
    jcom = pin.jacobianCenterOfMass(model, data, q)
    print(f"// {tag}: nv = {model.nv}")
    rust(f"{tag}_MASS_MATRIX", mass_matrix)  # row-major
    rust(f"{tag}_RNEA", tau)
    rust(f"{tag}_GRAVITY", g)
    rust(f"{tag}_FRAME_JACOBIAN", jac)  # row-major 6 x nv
    rust(f"{tag}_FRAME_POSE", np.concatenate([pose.translation, pose.rotation.flatten()]))
    rust(f"{tag}_COM", np.concatenate([[total], com]))
    rust(f"{tag}_COM_JACOBIAN", jcom)  # row-major 3 x nv
    rust(f"{tag}_COMPOSITE", np.concatenate([[subtree_mass, composite_mass], subtree_com, composite_inertia.flatten()]))


if __name__ == "__main__":
    print(f"// pinocchio {pin.__version__}")
    report(False)
    report(True)
