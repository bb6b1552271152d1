"""conveyor_2f_counts: a conveyor picking cell with a two-finger adaptive gripper in raw Modbus counts and an
untared wrist F/T sensor.

Built blind from ``conveyor_2f_counts.md`` and the interface in ``README.md``: numpy and the standard library
only, no import from ``ros_robodata``.

Physics in one place (all on a 0.5 ms grid, then sampled by the drivers):

* the arm is a UR5e-sized 6-DoF arm (standard DH), teleoperated in Cartesian space: minimum-jerk moves plus belt
  tracking (0.1 m/s along world +y) and a little hand tremor; joint angles come from a damped-least-squares IK of
  the flange pose, so the published joints, the wrist orientation and the tool acceleration all agree;
* the fingers close and open at 150 mm/s with 30 ms ramps, 40-80 ms after a command change; closing is blocked
  by the object (the first finger pushes the object across the belt until the second arrives) or, on nothing,
  by the fingertip pads meeting at 230-245 counts; the pads then compress 1-2 mm over ~50 ms; a soft parcel
  gives 10-20 mm over 0.3-0.6 s;
* the motor current follows the finger state (free running, squeezing, holding decay, idle) on a drifting
  offset, with noise, and is published as an integer register in mA;
* the object's weight reaches the wrist through the pads' shear compliance: it appears as the arm rises off
  the belt (lift_off when the belt carries nothing), disappears as the tote floor takes it (placed when the
  floor carries it all), as the fingers open on a hanging object (drop), or as a bottle slides out (slip);
* the wrist sensor reads a constant bias, the gripper's 1.0 kg rotated into tool0, the held load, inertial and
  structural (ringing) forces while the arm accelerates, and noise.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

FAMILY = 'conveyor_2f_counts'
SCENARIOS = ('success_drop', 'success_place', 'miss', 'slip', 'squash', 'recovery')

# ---------------------------------------------------------------------------------------------------------
# constants (datasheet and cell layout)
# ---------------------------------------------------------------------------------------------------------
DT = 0.0005                      # physics grid, s
T_ALLOC = 15.6                   # grid length allocated, s
G = 9.81
G_VEC = np.array([0.0, 0.0, -G])

OPEN_MM = 85.0                   # 0 counts
SPEED = 150.0                    # mm/s
ACC_T = 0.030                    # s of acceleration at each end of a stroke
ACC = SPEED / ACC_T              # mm/s^2
TAU_COMP = 0.050 / 3.0           # pad compression time constant (~95 % in 50 ms)

BELT_V = 0.10                    # m/s along world +y
BELT_X = 0.45                    # belt centre line (base frame), m
BELT_Z = 0.0                     # belt surface, m
BELT_HALF = 0.15                 # half width of the belt, m
TOTE_X, TOTE_Y = 0.10, -0.40     # tote centre (beside the belt, upstream), m
TOTE_HALF = (0.15, 0.12)         # tote inner half extents, m
TOTE_FLOOR = -0.12               # tote floor height, m
TCP_LEN = 0.16                   # flange to fingertip centre, m
PAD_W = 0.022                    # pad width along the fingers' face, m
M_GRIPPER = 1.0                  # kg
R_GRIPPER = np.array([0.002, -0.003, 0.065])   # gripper centre of mass in tool0, m
TRACK_RAMP = 0.35                # s to match / leave the belt speed

GRIP_TOPIC = '/gripper/joint_states'
CMD_TOPIC = '/gripper/command'
ARM_TOPIC = '/arm/joint_states'
FT_TOPIC = '/ft/wrench'
ARM_JOINTS = ['shoulder_pan', 'shoulder_lift', 'elbow', 'wrist_1', 'wrist_2', 'wrist_3']

# UR5e standard DH
_DH_D = (0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996)
_DH_A = (0.0, -0.425, -0.3922, 0.0, 0.0, 0.0)
_DH_AL = (math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0)
_DH_CA = tuple(math.cos(a) for a in _DH_AL)
_DH_SA = tuple(math.sin(a) for a in _DH_AL)
_Q_SEED = np.array([math.pi, -1.7, 1.9, -1.77, -1.5708, 0.0])

_AX = {'x': 0, 'y': 1, 'z': 2, 'yaw': 3, 'roll': 4, 'pitch': 5}


# ---------------------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------------------
def _minjerk(tau):
    tau = np.clip(tau, 0.0, 1.0)
    return tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau ** 2)


_TAU_TAB = np.linspace(0.0, 1.0, 20001)
_S_TAB = _minjerk(_TAU_TAB)


def _minjerk_inv(s):
    return float(np.interp(s, _S_TAB, _TAU_TAB))


def _smooth(x):
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _counts(w_mm):
    return (OPEN_MM - w_mm) / OPEN_MM * 255.0


def _width(counts):
    return OPEN_MM * (1.0 - counts / 255.0)


def _rot(yaw, roll, pitch):
    """Tool orientation(s): Rz(yaw) Ry(pitch) Rx(roll) Rx(pi) (tool z pointing down at zero tilt)."""
    yaw, roll, pitch = np.broadcast_arrays(np.asarray(yaw, float), np.asarray(roll, float),
                                           np.asarray(pitch, float))
    cy, sy = np.cos(yaw), np.sin(yaw)
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    # Rz Ry Rx
    r00 = cy * cp
    r01 = cy * sp * sr - sy * cr
    r02 = cy * sp * cr + sy * sr
    r10 = sy * cp
    r11 = sy * sp * sr + cy * cr
    r12 = sy * sp * cr - cy * sr
    r20 = -sp
    r21 = cp * sr
    r22 = cp * cr
    # times Rx(pi) = diag(1, -1, -1)
    R = np.stack([np.stack([r00, -r01, -r02], -1),
                  np.stack([r10, -r11, -r12], -1),
                  np.stack([r20, -r21, -r22], -1)], -2)
    return R


# ---------------------------------------------------------------------------------------------------------
# arm kinematics (UR5e-like) and IK
# ---------------------------------------------------------------------------------------------------------
def _fk_frames(q):
    T = np.eye(4)
    frames = [T]
    for i in range(6):
        ct, st = math.cos(q[i]), math.sin(q[i])
        ca, sa = _DH_CA[i], _DH_SA[i]
        a, d = _DH_A[i], _DH_D[i]
        A = np.array([[ct, -st * ca, st * sa, a * ct],
                      [st, ct * ca, -ct * sa, a * st],
                      [0.0, sa, ca, d],
                      [0.0, 0.0, 0.0, 1.0]])
        T = T @ A
        frames.append(T)
    return frames


def _ik(q, p_des, R_des, iters):
    q = q.copy()
    err = 1.0
    for _ in range(iters):
        fr = _fk_frames(q)
        T = fr[-1]
        p = T[:3, 3]
        R = T[:3, :3]
        ep = p_des - p
        eo = 0.5 * np.cross(R.T, R_des.T).sum(axis=0)
        e = np.concatenate([ep, eo])
        err = float(np.linalg.norm(e))
        if err < 1e-10:
            break
        Zs = np.array([f[:3, 2] for f in fr[:6]])
        Os = np.array([f[:3, 3] for f in fr[:6]])
        J = np.empty((6, 6))
        J[:3, :] = np.cross(Zs, p[None, :] - Os).T
        J[3:, :] = Zs.T
        lam2 = 1e-6
        q += J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(6), e)
    return q, err


# ---------------------------------------------------------------------------------------------------------
# the operator's Cartesian plan
# ---------------------------------------------------------------------------------------------------------
class _Arm:
    """TCP pose (x, y, z, yaw, roll, pitch) on the grid: a sum of minimum-jerk moves plus belt tracking."""

    def __init__(self, n, start):
        self.t = np.arange(n) * DT
        self.P = np.repeat(np.asarray(start, float)[:, None], n, axis=1)
        self.tracks = []

    def _track_y(self):
        v = np.zeros_like(self.t)
        for on, off in self.tracks:
            r = _smooth((self.t - on) / TRACK_RAMP)
            if off is not None:
                r = r * (1.0 - _smooth((self.t - off) / TRACK_RAMP))
            v += r
        return np.cumsum(v * BELT_V) * DT

    def track_on(self, t):
        self.tracks.append([t, None])

    def track_off(self, t):
        if self.tracks and self.tracks[-1][1] is None:
            self.tracks[-1][1] = t

    def idx(self, t):
        return int(min(max(round(t / DT), 0), len(self.t) - 1))

    def pose(self, t):
        i = self.idx(t)
        p = self.P[:, i].copy()
        p[1] += self._track_y()[i]
        return p

    def move(self, t0, dur, **tgt):
        pe = self.pose(t0 + dur)
        s = _minjerk((self.t - t0) / dur)
        for k, val in tgt.items():
            j = _AX[k]
            self.P[j] += (val - pe[j]) * s

    def final(self):
        P = self.P.copy()
        P[1] += self._track_y()
        return P


def _dur(dist, a_peak):
    """Duration of a minimum-jerk move of length dist with peak acceleration a_peak."""
    return math.sqrt(5.7735 * max(dist, 1e-4) / a_peak)


def _make_object(rng, kind):
    U = lambda a, b: float(rng.uniform(a, b))
    o = {'kind': kind}
    if kind == 'bottle':                       # heavy smooth bottle, gripped at its neck
        o['W'] = U(22.0, 34.0)
        o['m'] = U(0.9, 1.5)
        o['L'] = U(0.065, 0.09)                # body diameter (along the belt)
        o['h'] = U(0.20, 0.28)
        o['hg'] = o['h'] - U(0.03, 0.06)
        o['mu'] = U(0.15, 0.25)
    elif kind == 'soft':                       # soft parcel that gives under the fingers
        o['W'] = U(45.0, 70.0)
        o['m'] = U(0.2, 0.8)
        o['L'] = U(0.10, 0.25)
        o['h'] = U(0.05, 0.14)
        o['hg'] = o['h'] * U(0.4, 0.6)
        o['mu'] = U(0.5, 0.8)
        o['squash'] = (U(10.0, 20.0), U(0.3, 0.6), U(1.0, 4.0))   # depth mm, duration s, rebound mm
    else:                                      # parcel
        o['W'] = U(20.0, 70.0)
        o['m'] = U(0.2, 1.5)
        o['L'] = U(0.06, 0.22)
        o['h'] = U(0.04, 0.14)
        o['hg'] = o['h'] * U(0.4, 0.6)
        o['mu'] = U(0.4, 0.8)
    o.setdefault('squash', None)
    o['k_s'] = U(2500.0, 6000.0)               # vertical shear stiffness of the pad contact, N/m
    o['delta'] = o['m'] * G / o['k_s']         # rise / sink over which the weight changes hands, m
    o['mu_belt'] = U(0.2, 0.4)                 # object on belt friction (pushed by the first finger)
    return o


def _plan(seed_seq, scenario, lead, hw):
    """The operator's timeline. Returns a dict; deterministic for (seed_seq, scenario, lead)."""
    rng = np.random.default_rng(seed_seq)
    U = lambda a, b: float(rng.uniform(a, b))
    n = int(T_ALLOC / DT) + 1
    home = [BELT_X - U(0.03, 0.10), U(-0.20, -0.05), BELT_Z + U(0.20, 0.28), 0.0, 0.0, 0.0]
    start = [home[0] + U(-0.03, 0.03), home[1] + U(-0.05, 0.05), home[2] + U(-0.02, 0.02),
             U(-0.12, 0.12), U(-0.03, 0.03), U(-0.03, 0.03)]
    arm = _Arm(n, start)
    presses = []               # (t, value, latency)
    info = {'slips': []}

    if scenario == 'recovery':
        first = 'miss' if rng.random() < 0.5 else 'slip'
        pace = 0.7          # two picks in one episode: the operator does not linger
    else:
        first = None
        pace = 1.0
    info['first'] = first
    if scenario == 'slip' or first == 'slip':
        kind = 'bottle'
    elif scenario == 'squash':
        kind = 'soft'
    else:
        kind = 'parcel'
    obj = _make_object(rng, kind)
    obj['x'] = BELT_X + U(-0.05, 0.05)
    if scenario == 'success_drop':
        release = 'drop'
    elif scenario == 'success_place':
        release = 'place'
    else:
        release = 'drop' if rng.random() < 0.5 else 'place'
    info['release'] = release

    def press(t, val):
        lat = U(0.040, 0.080)
        presses.append((t, val, lat))
        return lat

    def close_press(t):
        lat = press(t, 1.0)
        if rng.random() < 0.3:                 # double press: the second changes nothing
            press(t + U(0.15, 0.7), 1.0)
        return lat

    def obj_y(t):
        return obj['y_ref'] + BELT_V * (t - obj['t_ref'])

    def approach(t0, track):
        """Come over the object and go down to grasp height. Returns (t at grasp height, t over it)."""
        p0 = arm.pose(t0)
        zg = BELT_Z + obj['hg']
        hover = U(0.06, 0.11)
        e0 = U(-0.004, 0.004)
        yaw = U(-0.06, 0.06)
        # first guess of the duration from the distance
        D = max(0.9, _dur(0.4, U(0.7, 1.1)))
        if 'y_ref' not in obj:
            # the parcel's along-belt position when the approach ends (picked for reach)
            obj['y_ref'] = U(-0.15, 0.05) if scenario in ('miss', 'recovery') else U(-0.10, 0.12)
            obj['t_ref'] = t0 + D
            obj['init'] = (obj['x'], obj['y_ref'], obj['t_ref'])
        for _ in range(3):
            dist = math.dist(p0[:3], (obj['x'], obj_y(t0 + D), zg + hover))
            D = max(0.9, _dur(dist, 0.9))
        t1 = t0 + D
        if track:
            arm.track_on(t0 + U(0.15, 0.4) * D)
            y_t = obj_y(t1) + U(-0.005, 0.005)
        else:
            # the operator aims where the parcel is now and does not follow the belt: by the time the
            # fingers close it has been carried on through the open fingers
            y_t = obj_y(t1) - U(0.0, 0.6) * obj['L'] / 2
        arm.move(t0, D, x=obj['x'] - e0 * math.cos(yaw), y=y_t - e0 * math.sin(yaw), z=zg + hover,
                 yaw=yaw, roll=U(-0.03, 0.03), pitch=U(-0.03, 0.03))
        Dd = max(0.45, _dur(hover, U(0.6, 1.0)))
        arm.move(t1, Dd, z=zg)
        return t1 + Dd, t1

    def grasp_time(t_pc, lat, W):
        return t_pc + lat + ACC_T / 2 + (OPEN_MM - W) / SPEED

    def lift(t_sec):
        zg = BELT_Z + obj['hg']
        t_lift = t_sec + pace * (U(0.3, 0.9) if obj['squash'] else U(0.25, 0.7))
        dz = U(0.10, 0.20)
        Dl = max(0.6, _dur(dz, U(0.8, 1.4)))
        arm.move(t_lift, Dl, z=zg + dz)
        arm.track_off(t_lift + U(0.05, 0.2))
        return t_lift, Dl

    def transport(t_tr, z_end, level):
        """Swing over to the tote around the base (two blended moves through a waypoint on the way)."""
        p = arm.pose(t_tr)
        xt, yt = TOTE_X + U(-0.04, 0.04), TOTE_Y + U(-0.03, 0.03)
        a0, a1 = math.atan2(p[1], p[0]), math.atan2(yt, xt)
        r0, r1 = math.hypot(p[0], p[1]), math.hypot(xt, yt)
        am, rm = 0.5 * (a0 + a1), max(0.5 * (r0 + r1), 0.45)
        xm, ym = rm * math.cos(am), rm * math.sin(am)
        zm = max(p[2], z_end) + U(0.0, 0.04)
        dist = math.dist(p[:3], (xm, ym, zm)) + math.dist((xm, ym, zm), (xt, yt, z_end))
        Dt = max(1.3, _dur(dist, U(0.6, 1.0)))
        D1 = 0.58 * Dt
        arm.move(t_tr, D1, x=xm, y=ym, z=zm)
        arm.move(t_tr + Dt - D1, D1, x=xt, y=yt, z=z_end)
        arm.move(t_tr, Dt, yaw=U(-0.9, 0.9))
        arm.move(t_tr, Dt / 2, roll=U(-0.3, 0.3), pitch=U(-0.3, 0.3))
        arm.move(t_tr + Dt / 2, Dt / 2, roll=U(-level, level), pitch=U(-level, level))
        return Dt

    def go_home(t0):
        p = arm.pose(t0)
        dz = U(0.06, 0.12)
        Dr = max(0.5, _dur(dz, 1.0))
        arm.move(t0, Dr, z=p[2] + dz)
        t1 = t0 + Dr * U(0.7, 1.0)
        p1 = arm.pose(t1 + 1.0)
        Dh = max(1.0, _dur(math.dist(p1[:3], home[:3]), U(0.7, 1.0)))
        arm.move(t1, Dh, x=home[0], y=home[1], z=home[2], yaw=0.0, roll=0.0, pitch=0.0)
        return t1 + Dh

    def pick_and_release(t0, slip=None):
        """A pick with tracking; slip None (released on purpose), 'fail' (during transport) or
        'recover' (during the lift, back onto the belt). Returns (t after the last truth event,
        t the arm's moves end, t of the open press)."""
        t_at, _ = approach(t0, track=True)
        t_pc = t_at + pace * U(0.15, 0.5)
        lat = close_press(t_pc)
        t_sec = grasp_time(t_pc, lat, obj['W'])
        t_lift, Dl = lift(t_sec)
        if slip == 'recover':
            t_slip = t_lift + Dl * U(0.45, 0.85)
            d_sl = U(0.020, 0.040)
            t_leave = t_slip + d_sl
            p = arm.pose(t_leave)
            vy = (arm.pose(t_leave + 0.01)[1] - p[1]) / 0.01
            hb = p[2] - obj['hg'] - BELT_Z
            t_fall = math.sqrt(2.0 * max(hb, 1e-3) / G)
            land = ('belt', p[0], p[1] + vy * t_fall, t_leave + t_fall)
            info['slips'].append((t_slip, d_sl, land))
            t_open = t_leave + U(0.5, 2.0)
            press(t_open, 0.0)
            obj['y_ref'], obj['t_ref'], obj['x'] = land[2], land[3], land[1]
            return t_open + 0.2, t_open + 0.2, t_open
        if slip == 'fail':
            d_drop = U(0.05, 0.15)
            t_tr = t_lift + Dl * U(0.65, 1.0)
            Dt = transport(t_tr, TOTE_FLOOR + d_drop + obj['hg'], 0.08)
            for _ in range(20):          # it slides out on the way, not over the tote
                t_slip = t_tr + Dt * U(0.2, 0.5)
                ps = arm.pose(t_slip)
                if not (abs(ps[0] - TOTE_X) < TOTE_HALF[0] + 0.05 and abs(ps[1] - TOTE_Y) < TOTE_HALF[1] + 0.05):
                    break
            d_sl = U(0.020, 0.040)
            info['slips'].append((t_slip, d_sl, ('floor',)))
            t_open = t_slip + d_sl + U(0.5, 2.0)
            press(t_open, 0.0)
            t_home = max(t_tr + Dt, t_open) + U(0.3, 0.8)
            t_end = go_home(t_home)
            return t_open + 0.7, t_end, t_open
        t_tr = t_lift + Dl * U(0.65, 1.0)
        if release == 'drop':
            d_drop = U(0.05, 0.15)
            Dt = transport(t_tr, TOTE_FLOOR + d_drop + obj['hg'], 0.08)
            t_open = t_tr + Dt + pace * U(0.25, 0.8)
            lat = press(t_open, 0.0)
        else:
            h_a = U(0.01, 0.03)
            z_a = TOTE_FLOOR + obj['hg'] + h_a
            Dt = transport(t_tr, z_a, 0.04)
            eps = U(0.03, 0.12)
            d_tr = U(0.040, 0.100)
            z_end = TOTE_FLOOR + obj['hg'] - obj['delta'] * (1.0 + eps)
            total = z_a - z_end
            s_touch = h_a / total
            s_full = (h_a + obj['delta']) / total
            D2 = d_tr / max(_minjerk_inv(s_full) - _minjerk_inv(s_touch), 1e-3)
            D2 = min(max(D2, 0.2), 1.5)
            t_fd = t_tr + Dt + U(0.05, 0.3)
            arm.move(t_fd, D2, z=z_end)
            t_placed = t_fd + D2 * _minjerk_inv(s_full)
            t_open = t_placed + U(0.2, 1.0)
            lat = press(t_open, 0.0)
        t_back = t_open + lat + U(0.25, 0.6)
        t_end = go_home(t_back)
        return t_open + 0.2, t_end, t_open

    def miss_attempt(t0, give_up):
        t_at, t1 = approach(t0, track=False)
        W = obj['W']
        zg = BELT_Z + obj['hg']
        # the fingers must not find the parcel: it has to be carried clear of the pads by then
        ell0 = obj_y(t1) - arm.pose(t1)[1]
        need = obj['L'] / 2 + PAD_W / 2 + 0.010
        t_contact_min = t1 + (need - ell0) / BELT_V
        t_pc = max(t_at + pace * U(0.15, 0.5), t_contact_min - 0.040 - ACC_T / 2 - (OPEN_MM - W) / SPEED)
        lat = close_press(t_pc)
        w_pad = _width(hw['c_stop'] - hw['pad_counts'])
        t_missed = t_pc + lat + ACC_T / 2 + (OPEN_MM - w_pad) / SPEED
        t_open = t_missed + pace * U(0.3, 0.9)
        lat = press(t_open, 0.0)
        if give_up:
            t_end = go_home(t_open + U(0.1, 0.4))
            return t_missed, t_end, t_open
        # rise a little, then go after the parcel again
        Dr = U(0.4, 0.6)
        arm.move(t_open + U(0.05, 0.2), Dr, z=zg + U(0.06, 0.10))
        return t_missed, t_open + Dr + 0.25, t_open

    t = lead + pace * U(0.3, 1.0)
    if scenario in ('success_drop', 'success_place', 'squash'):
        t_last, t_end, _ = pick_and_release(t)
    elif scenario == 'miss':
        t_last, t_end, _ = miss_attempt(t, give_up=True)
    elif scenario == 'slip':
        t_last, t_end, _ = pick_and_release(t, slip='fail')
    else:
        if first == 'miss':
            _, t_next, _ = miss_attempt(t, give_up=False)
        else:
            _, t_next, t_open = pick_and_release(t, slip='recover')
            t_next = t_open + U(0.2, 0.5)
        t_last, t_end, _ = pick_and_release(t_next)
    presses.sort(key=lambda p: p[0])
    return {'arm': arm, 'presses': presses, 'obj': obj, 'info': info, 't_last': t_last, 't_end': t_end}


# ---------------------------------------------------------------------------------------------------------
# gripper, object and contact physics
# ---------------------------------------------------------------------------------------------------------
def _simulate(tg, P, plan, hw):
    n = len(tg)
    X, Y, Z, YAW = P[0], P[1], P[2], P[3]
    obj = plan['obj']
    info = plan['info']
    # command changes as the gripper sees them (bus latency per change)
    changes = []
    state = 0.0
    for tp, val, lat in plan['presses']:
        if val != state:
            changes.append((tp + lat, val))
            state = val
    slips = list(info['slips'])

    W0 = obj['W']
    m = obj['m']
    delta = obj['delta']
    w_pad = _width(hw['c_stop'] - hw['pad_counts'])        # pads meet here
    pad_comp = w_pad - _width(hw['c_stop'])               # the pads squeeze each other to c_stop
    comp = hw['comp_mm']

    w_arr = np.empty(n)
    i_arr = np.empty(n)
    f_load = np.zeros(n)          # fraction of the object's weight carried by the fingers
    f_push = np.zeros(n)          # lateral reaction along tool x while the first finger pushes, N
    truth = []

    cmd = 0.0
    ci = 0
    w = OPEN_MM
    v = 0.0
    cur = hw['I_idle']
    mode = 'belt'                 # belt | grip | fall | rest
    ox, oy_ref, ot_ref = obj['init']      # where the object rides on the belt at the start
    land_pending = None
    pushing = False
    e_sign = 0.0
    touched = False
    pad_block = False
    t_pad = None
    t_sec = None
    t_motion_end = None
    lifted = False
    placed = False
    z_grasp = None
    open_w0 = None
    W_rel = None
    outcome_place = None          # where the object came to rest: 'tote' | 'floor' | 'belt'
    squash = obj['squash']

    def obj_w(t):
        if squash is None or t_sec is None:
            return W0
        return W0 - squash[0] * float(_smooth((t - t_sec) / squash[1]))

    def over_tote(x, y):
        return abs(x - TOTE_X) < TOTE_HALF[0] and abs(y - TOTE_Y) < TOTE_HALF[1]

    for i in range(n):
        t = tg[i]
        # ---- command changes reach the gripper
        while ci < len(changes) and changes[ci][0] <= t:
            cmd = changes[ci][1]
            ci += 1
            if cmd == 1.0:
                if abs(v) < 1e-9:
                    truth.append((t, 'closing'))
                touched = (mode == 'grip')
                pushing = False
            else:
                open_w0 = w
                if mode == 'grip':
                    if squash is not None:
                        W_rel = obj_w(t) + squash[2]
                    else:
                        W_rel = W0
                pad_block = False
        # ---- object lands after a fall
        if mode == 'fall' and land_pending is not None and t >= land_pending[0]:
            _, where, lx, ly = land_pending
            if where == 'belt':
                mode = 'belt'
                ox, oy_ref, ot_ref = lx, ly, land_pending[0]
            else:
                mode = 'rest'
            outcome_place = where
            land_pending = None

        # ---- finger motion
        if cmd == 1.0:
            if mode == 'grip':
                # blocked on the object: pads compress, a soft parcel gives
                if slips and t >= slips[0][0] + slips[0][1]:
                    # the bottle has slid out of the pads: it leaves the fingers now
                    _t_slip, _d_sl, land = slips.pop(0)
                    truth.append((t, 'dropped'))
                    truth.append((t, 'contact_end'))
                    if land[0] == 'belt':
                        land_pending = (land[3], 'belt', land[1], land[2])
                    else:
                        hb = Z[i] - obj['hg'] - (BELT_Z - 0.75)   # the cell floor
                        where = 'tote' if over_tote(X[i], Y[i]) else (
                            'belt' if abs(X[i] - BELT_X) < BELT_HALF else 'floor')
                        land_pending = (t + math.sqrt(2.0 * max(hb, 1e-3) / G), where, X[i], Y[i])
                    mode = 'fall'
                    v = 0.0
                else:
                    w = obj_w(t) - comp * (1.0 - math.exp(-(t - t_sec) / TAU_COMP))
                    v = 0.0
            if mode != 'grip':
                if pad_block:
                    w = w_pad - pad_comp * (1.0 - math.exp(-(t - t_pad) / TAU_COMP))
                    v = 0.0
                else:
                    if v > 0.0:
                        v = 0.0
                    v = max(v - ACC * DT, -SPEED)
                    w_new = w + v * DT
                    if mode == 'belt' and not pushing and not touched:
                        dx, dy = ox - X[i], (oy_ref + BELT_V * (t - ot_ref)) - Y[i]
                        cyw, syw = math.cos(YAW[i]), math.sin(YAW[i])
                        e = dx * cyw + dy * syw
                        ell = -dx * syw + dy * cyw
                        in_zone = (abs(ell) < obj['L'] / 2 + PAD_W / 2
                                   and BELT_Z - 0.01 < Z[i] < BELT_Z + obj['h'] + 0.005)
                        if in_zone and w_new <= W0 + 2000.0 * abs(e):
                            truth.append((t, 'contact_begin'))
                            pushing = True
                            touched = True
                            e_sign = 1.0 if e >= 0 else -1.0
                    if pushing and w_new <= W0:
                        w_new = W0
                        v = 0.0
                        pushing = False
                        mode = 'grip'
                        t_sec = t
                        t_motion_end = t + (squash[1] if squash is not None else 0.05)
                        z_grasp = Z[i]
                        lifted = False
                        placed = False
                        truth.append((t, 'secured'))
                    if mode != 'grip' and w_new <= w_pad:
                        w_new = w_pad
                        v = 0.0
                        pad_block = True
                        t_pad = t
                        t_motion_end = t + 0.05
                        if not touched:
                            truth.append((t, 'missed'))
                    w = w_new
        else:
            if v < 0.0:
                v = 0.0
            dist = OPEN_MM - w
            if dist <= 1e-9:
                w = OPEN_MM
                v = 0.0
            else:
                v = min(v + ACC * DT, SPEED, math.sqrt(2.0 * ACC * dist))
                w = min(w + max(v, 1e-3) * DT, OPEN_MM)
                if w >= OPEN_MM - 1e-9:
                    w = OPEN_MM
                    v = 0.0
            if mode == 'grip' and w >= W_rel:
                truth.append((t, 'released'))
                truth.append((t, 'contact_end'))
                if placed:
                    mode = 'rest'
                    outcome_place = 'tote' if over_tote(X[i], Y[i]) else 'floor'
                else:
                    mode = 'fall'
                    hb = Z[i] - obj['hg'] - TOTE_FLOOR
                    where = 'tote' if over_tote(X[i], Y[i]) else 'floor'
                    land_pending = (t + math.sqrt(2.0 * max(hb, 1e-3) / G), where, X[i], Y[i])

        # ---- load carried by the fingers
        if mode == 'grip':
            if not lifted:
                fs = (Z[i] - z_grasp) / delta
                if fs >= 1.0:
                    lifted = True
                    truth.append((t, 'lift_off'))
                f = min(max(fs, 0.0), 1.0)
            else:
                if over_tote(X[i], Y[i]):
                    fs = 1.0 - (TOTE_FLOOR + obj['hg'] - Z[i]) / delta
                    if fs <= 0.0 and not placed:
                        placed = True
                        truth.append((t, 'placed'))
                    f = min(max(fs, -0.3), 1.0)
                else:
                    f = 1.0
            if cmd == 0.0 and W_rel is not None and open_w0 is not None:
                span = max(W_rel - open_w0, 1e-6)
                nfrac = min(max((W_rel - w) / span, 0.0), 1.0)
                cap = 2.0 * obj['mu'] * hw['F_grip'] * nfrac / (m * G)
                f = min(max(f, -cap), cap)
            if slips and t >= slips[0][0]:
                f *= 1.0 - float(_smooth((t - slips[0][0]) / slips[0][1]))
            f_load[i] = f
        elif pushing:
            f_push[i] = e_sign * obj['mu_belt'] * m * G

        # ---- motor current (above the offset)
        if cmd == 1.0 and (mode == 'grip' or pad_block):
            if t < t_motion_end:
                tgt = hw['I_sq']
            else:
                tgt = hw['I_hold'] + (hw['I_sq'] - hw['I_hold']) * math.exp(-(t - t_motion_end) / hw['tau_hold'])
            tau = 0.006
        elif abs(v) > 1e-9:
            tgt = hw['I_free_c'] if v < 0 else hw['I_free_o']
            if abs(v) < SPEED - 1e-6:
                tgt += hw['I_acc']
            if pushing:
                tgt += hw['k_push'] * obj['mu_belt'] * m * G
            tau = 0.004
        else:
            tgt = hw['I_idle']
            tau = 0.010
        cur += (tgt - cur) * min(1.0, DT / tau)
        w_arr[i] = w
        i_arr[i] = cur

    if mode == 'grip':
        outcome_place = 'fingers'
    elif mode == 'fall' and land_pending is not None:
        outcome_place = land_pending[1]
    elif mode == 'belt':
        outcome_place = 'belt'
    truth.sort(key=lambda e: e[0])
    return w_arr, i_arr, f_load, f_push, truth, outcome_place


# ---------------------------------------------------------------------------------------------------------
# episode
# ---------------------------------------------------------------------------------------------------------
def _hardware(rng):
    U = lambda a, b: float(rng.uniform(a, b))
    hw = {
        'I_off': U(150.0, 300.0),                        # offset, mA
        'drift_rate': U(10.0, 50.0) * (1 if rng.random() < 0.5 else -1) / 60.0,   # mA/s
        'drift_amp': U(3.0, 12.0),
        'drift_per': U(20.0, 60.0),
        'drift_ph': U(0.0, 2 * math.pi),
        'I_noise': U(22.0, 28.0),
        'I_idle': U(0.0, 15.0),
        'I_free_c': U(200.0, 400.0),
        'I_free_o': U(200.0, 400.0),
        'I_acc': U(50.0, 150.0),
        'I_sq': U(600.0, 900.0),
        'I_hold': U(350.0, 500.0),
        'tau_hold': U(0.06, 0.09),
        'k_push': U(4.0, 10.0),                          # mA per N pushing a parcel across the belt
        'comp_mm': U(1.0, 2.0),
        'c_stop': int(rng.integers(230, 246)),           # closed on nothing, final register value
        'pad_counts': int(rng.integers(2, 5)),           # pads compress this much against each other
        'F_grip': U(40.0, 70.0),                         # N, mid-range force setting
        'ft_bias_f': rng.uniform(-5.0, 5.0, 3),
        'ft_bias_t': rng.uniform(-0.3, 0.3, 3),
        'ft_noise_f': U(0.35, 0.45),
        'ft_noise_t': U(0.012, 0.02),
        'ring_hz': U(8.0, 14.0),
        'ring_zeta': U(0.08, 0.2),
        'ring_gain': U(0.15, 0.4),
        'ft_r_obj_lat': rng.uniform(-0.004, 0.004, 2),
    }
    return hw


def _seed_seq(seed, scenario, tag):
    return np.random.SeedSequence([int(seed) & 0xFFFFFFFFFFFF, zlib.crc32(scenario.encode()), tag])


def _stamps(rng, t_end, period, jitter_s, clip_s):
    phase = rng.uniform(0.0, period)
    nom = np.arange(phase, t_end, period)
    j = np.clip(rng.normal(0.0, jitter_s, nom.size), -clip_s, clip_s)
    return nom + j


def episode(seed: int, scenario: str) -> dict:
    if scenario not in SCENARIOS:
        raise ValueError(f'unknown scenario {scenario!r}; expected one of {SCENARIOS}')
    rng = np.random.default_rng(_seed_seq(seed, scenario, 0))
    hw = _hardware(rng)

    # plan: first pass to find the length, second with the lead-in that fills the chosen episode length
    plan = None
    for attempt in range(60):
        ss = _seed_seq(seed, scenario, 1000 + attempt)
        p1 = _plan(ss, scenario, 0.0, hw)
        need = p1['t_last'] + 0.8        # the arm's way home after the last release may run past the end
        if need <= 14.6:
            T = float(rng.uniform(max(8.0, need + 0.2), 15.0))
            lead = float(rng.uniform(0.0, 0.5)) * (T - need - 0.2)
            plan = _plan(ss, scenario, lead, hw)
            break
    if plan is None:
        raise RuntimeError('no feasible plan')  # pragma: no cover

    n = int(round(T / DT)) + 1
    arm = plan['arm']
    P = arm.final()[:, :n]
    tg = arm.t[:n]

    # hand tremor on the spacemouse (horizontal only; the operator holds height)
    for k in (0, 1):
        for _ in range(3):
            P[k] += rng.uniform(0.00008, 0.00025) * np.sin(2 * math.pi * rng.uniform(0.4, 3.0) * tg
                                                             + rng.uniform(0, 2 * math.pi))

    w_arr, i_arr, f_load, f_push, truth, rest = _simulate(tg, P, plan, hw)

    # ---- outcome from the physical end state
    kinds = [k for _, k in truth]
    if rest == 'tote':
        outcome = 'recovery' if ('missed' in kinds or 'dropped' in kinds) else 'success'
    else:
        outcome = 'failure'

    t0_ns = int(1_700_000_000_000_000_000 + int(rng.integers(0, 30_000_000_000_000_000)))

    def ns(t):
        return (t0_ns + np.round(np.asarray(t) * 1e9)).astype(np.int64)

    streams = {}

    # ---- gripper JointState, 50 Hz, jitter ~2 ms, ~0.5 % lost (sometimes two in a row)
    ts = _stamps(rng, T, 0.020, 0.002, 0.006)
    keep = np.ones(ts.size, bool)
    k = 0
    while k < ts.size:
        if rng.random() < 0.004:
            keep[k] = False
            if k + 1 < ts.size and rng.random() < 0.3:
                keep[k + 1] = False
                k += 1
        k += 1
    ts = ts[keep]
    gi = np.clip(np.round(ts / DT).astype(int), 0, n - 1)
    pos = np.clip(np.round(_counts(w_arr[gi])), 0, 255).astype(float)
    off = (hw['I_off'] + hw['drift_rate'] * ts
           + hw['drift_amp'] * np.sin(2 * math.pi * ts / hw['drift_per'] + hw['drift_ph']))
    eff = off + i_arr[gi] + rng.normal(0.0, hw['I_noise'], ts.size)
    eff = np.clip(np.round(eff), 0, 65535).astype(float)
    streams[GRIP_TOPIC] = {'type': 'sensor_msgs/msg/JointState', 'names': ['finger_width_counts'],
                           't_ns': ns(ts), 'position': pos[:, None], 'velocity': None,
                           'effort': eff[:, None]}

    # ---- command Float64: a 10 Hz timer with the button state, plus one message per press
    pt = np.array([p[0] for p in plan['presses']])
    pv = np.array([p[1] for p in plan['presses']])
    tt = _stamps(rng, T, 0.100, 0.0005, 0.002)
    tv = np.zeros(tt.size)
    for tp, val in zip(pt, pv):
        tv[tt >= tp] = val
    ct = np.concatenate([tt, pt[pt < T]])
    cv = np.concatenate([tv, pv[pt < T]])
    ct = ct + rng.uniform(0.0005, 0.002, ct.size)          # received
    o = np.argsort(ct, kind='stable')
    ct, cv = ct[o], cv[o]
    keepc = ct < T
    streams[CMD_TOPIC] = {'type': 'std_msgs/msg/Float64', 't_ns': ns(ct[keepc]), 'data': cv[keepc].astype(float)}

    # ---- arm JointState, 125 Hz, from IK of the flange pose
    ta = _stamps(rng, T, 0.008, 0.00015, 0.0005)
    pa = np.stack([np.interp(ta, tg, P[j]) for j in range(6)])
    Ra = _rot(pa[3], pa[4], pa[5])
    flange = pa[:3].T - TCP_LEN * Ra[:, :, 2]
    q = _Q_SEED.copy()
    q, _err = _ik(q, flange[0], Ra[0], 300)
    Q = np.empty((ta.size, 6))
    for k in range(ta.size):
        q, _err = _ik(q, flange[k], Ra[k], 4)
        Q[k] = q
    qd = np.gradient(Q, ta, axis=0)
    Qp = Q + rng.normal(0.0, 2e-5, Q.shape)
    streams[ARM_TOPIC] = {'type': 'sensor_msgs/msg/JointState', 'names': list(ARM_JOINTS), 't_ns': ns(ta),
                          'position': Qp, 'velocity': qd + rng.normal(0.0, 1e-3, qd.shape), 'effort': None}

    # ---- wrist F/T, 125 Hz, tool0, not tared
    vel = np.gradient(P[:3], DT, axis=1)
    acc = np.gradient(vel, DT, axis=1)
    # the arm and the sensor mount ring a little when the arm accelerates (2nd-order response to acc)
    wr = 2 * math.pi * hw['ring_hz']
    zeta = hw['ring_zeta']
    xr = np.zeros(3)
    vr = np.zeros(3)
    ring = np.empty_like(acc)
    accT = acc.T
    for k in range(n):
        a_k = accT[k]
        ar = wr * wr * (a_k - xr) - 2 * zeta * wr * vr
        vr = vr + ar * DT
        xr = xr + vr * DT
        ring[:, k] = xr - a_k
    a_eff = acc + hw['ring_gain'] * ring * 4.0
    tf = _stamps(rng, T, 0.008, 0.0002, 0.0006)
    fi = np.clip(np.round(tf / DT).astype(int), 0, n - 1)
    Rf = _rot(P[3, fi], P[4, fi], P[5, fi])              # (m,3,3) tool0 in base
    a_f = a_eff[:, fi].T                                  # (m,3)
    fl = f_load[fi]
    Fg_w = M_GRIPPER * (G_VEC[None, :] - a_f)
    Fo_w = np.where(fl[:, None] >= 0.0, fl[:, None] * plan['obj']['m'] * (G_VEC[None, :] - a_f),
                                fl[:, None] * plan['obj']['m'] * G_VEC[None, :])
    Fg = np.einsum('kji,kj->ki', Rf, Fg_w)                # R^T F
    Fo = np.einsum('kji,kj->ki', Rf, Fo_w)
    Fp = np.zeros_like(Fg)
    Fp[:, 0] = f_push[fi]
    r_o = np.array([hw['ft_r_obj_lat'][0], hw['ft_r_obj_lat'][1], TCP_LEN])
    r_p = np.array([0.0, 0.0, TCP_LEN])
    force = Fg + Fo + Fp + hw['ft_bias_f'][None, :] + rng.normal(0.0, hw['ft_noise_f'], Fg.shape)
    torque = (np.cross(R_GRIPPER[None, :], Fg) + np.cross(r_o[None, :], Fo) + np.cross(r_p[None, :], Fp)
              + hw['ft_bias_t'][None, :] + rng.normal(0.0, hw['ft_noise_t'], Fg.shape))
    streams[FT_TOPIC] = {'type': 'geometry_msgs/msg/WrenchStamped', 'frame_id': 'tool0', 't_ns': ns(tf),
                         'force': force, 'torque': torque}

    truth_ns = [(int(t0_ns + round(t * 1e9)), k) for t, k in truth]
    return {'family': FAMILY, 'seed': seed, 'scenario': scenario, 'outcome': outcome,
            'streams': streams, 'truth': truth_ns}
