#!/usr/bin/env python3
"""A minimal plant for hil, in standard-library Python 3: the arm of an arm scene as one hinge
under gravity, spoken to over the wire protocol of docs/PROTOCOL.md.

    HIL_SIM_HOST=examples/python_plant/plant.py \\
        hil run scenarios/ball_blocking_no_weights.toml --only analytic

hil starts it as `plant.py --quiet --scene FILE --fd N --mode lockstep [--cpu K]`.

The model is control_core::model::ArmModel's: inertia about the hinge I = M (L^2/3 + a^2/12),
gravity torque -M g (L/2) cos(theta), plus the torque of the newest accepted torque frame, held
for the step, integrated with semi-implicit Euler at the scene's dt_s. The scene's balls and
weights are IGNORED: nothing collides with the arm, so no contact or plane-crossing events are
ever reported (hil will count every ball as not blocked). Lockstep mode only: `--mode realtime`
is refused with exit code 2.

Exit codes (as the real plant's): 0 after the final state; 2 on a bad command line or scene;
1 on a transport or protocol error, and (unlike the real plant, which exits 0 then too) when hil
closes its end before the final state.
"""

import argparse
import json
import math
import os
import socket
import struct
import sys
import time
import zlib

MAGIC = b"HILF"
VERSION = 5
KIND_STATE, KIND_TORQUE = 1, 2
STATE_LEN, TORQUE_LEN = 3076, 420
MAX_FRAME_LEN = STATE_LEN
MAX_JOINTS = 48
FINAL = 0x1  # state flag
SAFE_STATE = 0x1  # torque flag (the only one defined; this plant applies it like any other)
U32 = 0xFFFFFFFF

HEADER = struct.Struct("<4sBBH")  # magic, version, kind, length
STATE_HEAD = struct.Struct("<4sBBHQQdQBBHIII")  # bytes 0..56 of a state frame
TORQUE_HEAD = struct.Struct("<4sBBHQQIB3s")  # bytes 0..32 of a torque frame
TORQUES = struct.Struct("<%dd" % MAX_JOINTS)  # bytes 32..416
JOINT = struct.Struct("<dd")
CRC = struct.Struct("<I")


def fail(code, message):
    print("plant.py: " + message, file=sys.stderr)
    sys.exit(code)


# ------------------------------------------------------------------------------ frames


def encode_state(sequence, step, time_s, cost_ns, flags, applied, rejected, over_limit, joints):
    """A state frame with `joints` [(position rad, velocity rad/s)], no events, contacts or
    bodies."""
    head = STATE_HEAD.pack(MAGIC, VERSION, KIND_STATE, STATE_LEN, sequence, step, time_s,
                           cost_ns, len(joints), 0, flags, applied & U32,
                           min(rejected, U32), min(over_limit, U32))
    body = head + b"".join(JOINT.pack(p, v) for p, v in joints)
    body += bytes(STATE_LEN - CRC.size - len(body))  # unused slots and reserved bytes: zero
    return body + CRC.pack(zlib.crc32(body))


class Refused(Exception):
    """A torque frame refused; `reason` is the counter it goes to (RejectCounts' names)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def decode_torque(buf):
    """(sequence, step, flags, torques) of a valid torque frame, or Refused. Checks in the
    order control_core::frames does, so that each refusal lands in the same counter."""
    if len(buf) < HEADER.size:
        raise Refused("bad_length")
    magic, version, kind, length = HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise Refused("bad_magic")
    if version != VERSION:
        raise Refused("wrong_version")
    if kind != KIND_TORQUE:
        raise Refused("wrong_kind")
    if length != TORQUE_LEN or len(buf) != TORQUE_LEN:
        raise Refused("bad_length")
    (carried,) = CRC.unpack_from(buf, TORQUE_LEN - CRC.size)
    if zlib.crc32(buf[:TORQUE_LEN - CRC.size]) != carried:
        raise Refused("checksum")
    _, _, _, _, sequence, step, flags, count, reserved = TORQUE_HEAD.unpack_from(buf)
    if reserved != b"\0\0\0" or count > MAX_JOINTS or flags & ~SAFE_STATE:
        raise Refused("bad_content")
    torques = TORQUES.unpack_from(buf, TORQUE_HEAD.size)[:count]
    if not all(math.isfinite(t) for t in torques):
        raise Refused("non_finite")
    if any(buf[TORQUE_HEAD.size + 8 * count:TORQUE_LEN - CRC.size]):
        raise Refused("bad_content")  # an unused torque slot that is not zero
    return sequence, step, flags, torques


class Link:
    """The plant's end of the socket: receives torque frames (counting every refusal by
    reason, and refusing stale and repeated sequence numbers), sends state frames."""

    def __init__(self, sock):
        self.sock = sock
        self.newest = None
        self.rejected = {}

    def refuse(self, reason):
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def recv_torques(self):
        """The next accepted torque frame, or None when hil closed its end."""
        while True:
            try:
                data, _, msg_flags, _ = self.sock.recvmsg(MAX_FRAME_LEN)
            except ConnectionResetError:
                return None
            if msg_flags & socket.MSG_TRUNC:
                self.refuse("oversize")  # longer than any frame
                continue
            if not data:
                return None  # end-of-file: hil closed (or died)
            try:
                frame = decode_torque(data)
            except Refused as r:
                self.refuse(r.reason)
                continue
            if self.newest is not None and frame[0] <= self.newest:
                self.refuse("stale" if frame[0] < self.newest else "repeated")
                continue
            self.newest = frame[0]
            return frame

    def send(self, frame):
        """False when hil closed its end."""
        try:
            self.sock.send(frame)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False


# ------------------------------------------------------------------------------ scene, model


def load_scene(path):
    try:
        with open(path, encoding="utf-8") as f:
            scene = json.load(f)
    except (OSError, ValueError) as e:
        fail(2, "scene %s: %s" % (path, e))

    def number(obj, name, where, low, high, default=None):
        v = obj.get(name, default) if isinstance(obj, dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= v <= high:
            fail(2, "scene %s: %s%s: %r is not a number in [%g, %g]"
                 % (path, where, name, v, low, high))
        return float(v)

    if not isinstance(scene, dict) or "kind" in scene:
        fail(2, "scene %s: kind: not an arm scene (this plant simulates the arm only)" % path)
    arm = scene.get("arm")
    out = {
        "dt_s": number(scene, "dt_s", "", 1e-6, 1.0, 0.005),
        "end_time_s": number(scene, "end_time_s", "", 0.0, 1e7),
    }
    for name, low, high, default in [
        ("length_m", 1e-3, 100.0, None), ("thickness_m", 1e-4, 10.0, None),
        ("mass_kg", 1e-4, 1e5, None), ("gravity_m_s2", 0.0, 1000.0, None),
        ("initial_angle_rad", -1e3, 1e3, 0.0), ("initial_velocity_rad_s", -1e3, 1e3, 0.0),
        ("torque_limit_nm", 1e-300, 1e6, None),
    ]:
        out[name] = number(arm, name, "arm.", low, high, default)
    return out


class Arm:
    """One hinge under gravity: control_core::model::ArmModel, semi-implicit Euler."""

    def __init__(self, s):
        self.dt = s["dt_s"]
        self.inertia = s["mass_kg"] * (s["length_m"] ** 2 / 3.0 + s["thickness_m"] ** 2 / 12.0)
        self.gravity = s["mass_kg"] * s["gravity_m_s2"] * 0.5 * s["length_m"]
        self.theta, self.omega = s["initial_angle_rad"], s["initial_velocity_rad_s"]

    def step(self, torque_nm):
        alpha = (torque_nm - self.gravity * math.cos(self.theta)) / self.inertia
        self.omega += alpha * self.dt
        self.theta += self.omega * self.dt


# ------------------------------------------------------------------------------ lockstep


def run_lockstep(link, scene, limit):
    """Returns (exit code, summary line)."""
    dt = scene["dt_s"]
    # end_time_s / dt_s rounded half away from zero, as the real plant and hil count it.
    total_steps = int(math.floor(scene["end_time_s"] / dt + 0.5))
    arm = Arm(scene)
    held, held_sequence = 0.0, 0  # torque of the last frame applied and its sequence (0: none)
    over_limit = late = 0
    step, cost_ns = 0, 0

    def send_state():
        flags = FINAL if step >= total_steps else 0
        refused = sum(link.rejected.values()) + over_limit
        frame = encode_state(step, step, step * dt, cost_ns, flags, held_sequence, refused,
                             over_limit, [(arm.theta, arm.omega)])
        return link.send(frame)

    def summary(how):
        return ("%s after %d steps; rejected torque frames %d (over the torque limit %d, by "
                "reason %s); late torque frames %d" % (how, step, sum(link.rejected.values())
                + over_limit, over_limit, link.rejected or "{}", late))

    if not send_state():
        return 1, summary("hil closed the connection before the first state")
    while step < total_steps:
        while True:  # wait for the torque frame of this step
            frame = link.recv_torques()
            if frame is None:
                return 1, summary("hil closed the connection before the final state")
            sequence, for_step, _flags, torques = frame
            if for_step > step:
                fail(1, "protocol error: torque frame for step %d while the plant waits for "
                        "step %d" % (for_step, step))
            within = all(abs(t) <= limit for t in torques)  # refused whole, never clamped
            if not within:
                over_limit += 1
            if for_step == step:
                if within:
                    held, held_sequence = (torques[0] if torques else 0.0), sequence
                break  # a refused frame still answers the step: it runs on the held torque
            if within:
                late += 1  # a valid frame for a step already taken: dropped
        t0 = time.perf_counter_ns()
        arm.step(held)
        step += 1
        cost_ns = time.perf_counter_ns() - t0
        if not send_state():
            return 1, summary("hil closed the connection before the final state")
    return 0, summary("end of scene")


def main():
    p = argparse.ArgumentParser(prog="plant.py", allow_abbrev=False,
                                description="A hil plant: the arm scene's hinge, no balls.")
    p.add_argument("--scene", required=True)
    p.add_argument("--fd", required=True, type=int)
    p.add_argument("--mode", required=True, choices=["lockstep", "realtime"])
    p.add_argument("--cpu", type=int)
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args()  # exits 2 on a bad command line
    if args.mode != "lockstep":
        fail(2, "--mode %s: this example plant runs in lockstep only" % args.mode)
    scene = load_scene(args.scene)
    if args.cpu is not None:
        try:
            os.sched_setaffinity(0, {args.cpu})
        except (OSError, ValueError) as e:
            fail(2, "cannot pin to CPU %d: %s" % (args.cpu, e))
    try:
        sock = socket.socket(fileno=args.fd)
        kind = sock.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
    except OSError as e:
        fail(2, "--fd %d: not a usable socket: %s" % (args.fd, e))
    if kind != socket.SOCK_SEQPACKET:
        fail(2, "--fd %d: a socket of type %d, not SOCK_SEQPACKET" % (args.fd, kind))
    code, line = run_lockstep(Link(sock), scene, scene["torque_limit_nm"])
    if code != 0 or not args.quiet:
        print("plant.py: " + line, file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
