"""Blind model of the gantry pick-and-place station with an electric parallel gripper (gantry_parallel.md).

Physics is stepped at 1 kHz (contact crossings are interpolated inside a step):
- gantry: three prismatic axes, straight-line moves with trapezoidal speed profiles (top speed 0.5 m/s,
  accelerations 1-3 m/s^2), driven by an operator script (a generator) that reacts to what it sees;
- gripper: acts on /gripper/command messages after transport and control latency; the fingers accelerate to
  the set speed, stop on the part's surface (an off-centre part is pushed until the second finger arrives),
  compress the pads by 0.5-1 mm while the grip force builds to the set force over 50-150 ms, or run to the
  end stop and press on it; on "open" the pads decompress and the fingers leave the part;
- part: rests on the table; held by friction (capacity 2*mu*F); at lift the pads shear until they carry the
  whole weight (lift_off); at set-down the table takes the weight over 20-50 ms (placed); it slips out when
  the friction demand m*|g+a| (horizontal accelerations amplified by a lever factor for the tipping moment)
  exceeds the capacity, sliding out over 10-30 ms, then falls to the table;
- wrist F/T sensor (ft_link, z down the tool): gripper weight and m*a, the held share of the part's weight
  and m*a, bump impulses (half sines), torques from lever arms; published with bias, drift and noise.
Streams are then sampled as the drivers publish them; truth events come only from the physical state.
"""
from collections import deque
from types import SimpleNamespace
import numpy as np

FAMILY = 'gantry_parallel'
SCENARIOS = ('success', 'miss', 'slip', 'bump', 'recovery', 'partial_open')
DT, G, W_OPEN, V_TOP = 1e-3, 9.81, 0.085, 0.5
A_FINGER = 3.0                          # finger acceleration, m/s^2
MU_TABLE = 0.3                          # part sliding on the table while the first finger pushes it
K_SERVO = 1.5e5                         # gantry servo stiffness against a bump, N/m
TO_FT = np.array([1.0, -1.0, -1.0])     # world axes -> ft_link axes (z pointing down along the tool)
R_PART, R_BUMP = np.array([0.0, 0.0, 0.14]), np.array([0.0, 0.0, 0.16])   # lever arms below the sensor, m


def smooth(x):
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


class Move:
    """Straight-line gantry move with a trapezoidal (or triangular) speed profile."""

    def __init__(self, t0, p0, p1, vmax, acc):
        self.t0, self.p0, self.a = t0, np.array(p0, float), acc
        d = np.asarray(p1, float) - self.p0
        self.L = max(float(np.linalg.norm(d)), 1e-12)
        self.u, self.v = d / self.L, min(vmax, np.sqrt(self.L * acc))
        self.ta, self.tc = self.v / acc, self.L / self.v - self.v / acc      # accelerating, cruising
        self.T = 2 * self.ta + self.tc

    def at(self, t):
        tr, a, v = t - self.t0, self.a, self.v
        if tr < self.ta:
            s, sd, sdd = 0.5 * a * tr * tr, a * tr, a
        elif tr < self.ta + self.tc:
            s, sd, sdd = 0.5 * a * self.ta ** 2 + v * (tr - self.ta), v, 0.0
        elif tr < self.T:
            td = self.T - tr
            s, sd, sdd = self.L - 0.5 * a * td * td, a * td, -a
        else:
            s, sd, sdd = self.L, 0.0, 0.0
        return self.p0 + self.u * s, self.u * sd, self.u * sdd


def grip_demand(m, lever, acc):
    """Friction force the pads must supply to hold a part of mass m under gantry acceleration acc (world)."""
    return m * np.hypot(G + acc[2], lever * np.hypot(acc[0], acc[1]))


def draw_params(rng, scenario):
    u = rng.uniform
    P = SimpleNamespace(scenario=scenario, retry=scenario == 'recovery')
    P.first = scenario if scenario in ('miss', 'slip') else (
        str(rng.choice(['miss', 'slip'])) if P.retry else 'pick')
    P.m_p = u(1.2, 2.0) if P.first == 'slip' else u(0.1, 2.0)          # heavy parts slip
    P.w_p, P.h_p, P.depth = u(0.020, 0.070), u(0.03, 0.12), u(0.02, 0.06)
    P.m_g, P.v_set, P.lat_ctrl = u(1.08, 1.12), u(0.020, 0.150), u(0.004, 0.012)
    P.delta, P.t_build, P.w_stop = u(5e-4, 1e-3), u(0.05, 0.15), u(0.0, 0.001)
    P.k_shear, P.t_td, P.t_slip = u(2e4, 6e4), u(0.02, 0.05), u(0.01, 0.03)
    P.lever, P.a_lift, P.a_carry, P.a_move = u(1.5, 4.0), u(1, 3), u(1, 3), u(1, 3)
    if P.first == 'slip':     # low set force: the part survives the lift and slips while the carry accelerates
        P.F_set, P.lever, P.a_carry = u(20, 30), u(2.5, 4.0), u(2.2, 3.0)
        hi = grip_demand(P.m_p, P.lever, [P.a_carry, 0, 0])
        P.a_lift = u(1.0, max(1.0, min(3.0, hi / P.m_p - G - 0.2)))
        lo = grip_demand(P.m_p, P.lever, [0, 0, P.a_lift])
        P.mu = (lo + u(0.15, 0.85) * (hi - lo)) / (2 * P.F_set)
    else:
        P.mu = u(0.5, 0.9)
    worst = max(grip_demand(P.m_p, P.lever, [0, 0, 3.0]), grip_demand(P.m_p, P.lever, [3.0, 0, 0]))
    if P.first != 'slip':
        P.F_set = u(max(20.0, 1.3 * worst / (2 * P.mu)), 60.0)
    P.F_retry = max(P.F_set, min(60.0, 1.3 * worst / (2 * P.mu)))     # operator raises the force after a slip
    P.w_open = u(max(0.045, P.w_p + 0.012), W_OPEN) if scenario == 'partial_open' else W_OPEN
    P.part = np.array([u(0.25, 0.55), u(0.15, 0.45)])
    a1, a2 = u(0, 2 * np.pi, 2)
    P.start = P.part + u(0.15, 0.35) * np.array([np.cos(a1), np.sin(a1)])
    P.goal = P.part + u(0.2, 0.5) * np.array([np.cos(a2), np.sin(a2)])
    P.z_travel, P.z_grasp, P.v_slow = u(0.10, 0.30), u(0.004, min(0.02, P.h_p / 2)), u(0.03, 0.08)
    P.pre, P.t_dur, P.open_delay, P.notice = u(0.2, 0.8), u(8.0, 15.0), u(0.02, 0.2), u(0.5, 1.5)
    P.bump_F, P.bump_T, P.bump_at = u(15, 60), u(0.03, 0.12), u(0.25, 0.75)
    return P


class Rig:
    """Physical state of gantry, gripper, part and wrist sensor, stepped at DT."""

    def __init__(self, P, rng):
        self.P, self.rng, self.t = P, rng, 0.0
        self.pos, self.vel, self.acc = np.array([*P.start, P.z_travel]), np.zeros(3), np.zeros(3)
        self.move, self.bump, self.defl = None, None, np.zeros(3)
        self.w, self.v, self.F, self.F_set, self.mode = P.w_open, 0.0, 0.0, P.F_set, 'free'
        self.t_mode = self.t_cmd = self.grasp_z = self.t_place = self.t_slip0 = self.t_land = 0.0
        self.rel = self.t_notice = None
        self.stroke = self.touched = self.between = self.set_down = False
        self.button = self.target = P.w_open
        self.part, self.poff, self.pstate, self.hold = P.part.copy(), np.zeros(2), 'table', 0.0
        self.misses = self.drops = 0
        self.r_g = np.array([*rng.uniform(-0.005, 0.005, 2), 0.05])        # gripper's centre of mass
        self.truth, self.cmd, self.log, self.pending = [], [], [], deque()
        self.ticks = deque(rng.uniform(0, 0.02) + 0.02 * np.arange(1500) + rng.normal(0, 3e-4, 1500))
        self.record()

    # ---- operator primitives (generators: one yield per physics step)
    def wait(self, s):
        for _ in range(int(round(max(s, 0.0) / DT))):
            yield

    def wait_until(self, cond, limit=20.0):
        t_end = self.t + limit
        while not cond() and self.t < t_end:
            yield

    def start_move(self, xyz, vmax=V_TOP, acc=None):
        self.move = Move(self.t, self.pos, xyz, vmax, acc or self.P.a_move)
        return self.move

    def go(self, xyz, vmax=V_TOP, acc=None):
        m = self.start_move(xyz, vmax, acc)
        yield from self.wait_until(lambda: self.t >= m.t0 + m.T)

    def event(self, t, *kinds):
        self.truth.extend((t, k) for k in kinds)

    # ---- physics
    def step(self):
        P, t1 = self.P, self.t + DT
        while self.ticks and self.ticks[0] <= t1:            # teleop publishes the button state at 50 Hz
            tk = self.ticks.popleft()
            self.cmd.append((tk, self.button))
            self.pending.append((tk + self.rng.uniform(1e-3, 3e-3) + P.lat_ctrl, self.button))
        while self.pending and self.pending[0][0] <= t1:
            self.t_cmd, self.target = self.pending.popleft()
        if self.move is not None:
            self.pos, self.vel, self.acc = self.move.at(t1)
        self.defl = self.bump_force(t1) / K_SERVO
        self.step_gripper(t1)
        self.step_part(t1)
        if self.t_notice is not None and t1 >= self.t_notice:   # operator notices the drop and opens
            self.button, self.t_notice = P.w_open, None
        self.t = t1
        self.record()

    def bump_force(self, t):
        if self.bump is None or not 0.0 <= t - self.bump[0] < self.bump[1]:
            return np.zeros(3)
        return self.bump[2] * np.sin(np.pi * (t - self.bump[0]) / self.bump[1])

    def cross(self, w0, wc):
        """Time within the last step at which the width passed wc."""
        return self.t + DT * min(max((w0 - wc) / (w0 - self.w), 0.0), 1.0) if w0 != self.w else self.t + DT

    def part_between(self):
        d = self.part - self.pos[:2]
        return (self.pstate == 'table' and abs(d[1]) < self.P.depth / 2 and self.pos[2] < self.P.h_p - 0.003
                and abs(d[0]) + self.P.w_p / 2 < self.w / 2)

    def step_gripper(self, t1):
        P, w0 = self.P, self.w
        if self.mode in ('free', 'push'):
            self.F = MU_TABLE * P.m_p * G if self.mode == 'push' else 0.0
            if self.target < self.w - 1e-7:
                if not self.stroke:
                    self.stroke, self.touched, self.between = True, False, self.part_between()
                    self.event(max(self.t, self.t_cmd), 'closing')   # motion starts on arrival
                self.v = max(min(self.v, 0.0) - A_FINGER * DT, -P.v_set)
                self.w += self.v * DT
                self.closing_contacts(w0)
            elif self.target > self.w + 1e-7 and self.mode == 'free':
                self.stroke = False
                vmax = min(P.v_set, np.sqrt(2 * A_FINGER * (self.target - self.w)))
                self.v = min(max(self.v, 0.0) + A_FINGER * DT, vmax)
                self.w = self.target if self.target - self.w < 2e-5 else min(self.w + self.v * DT, self.target)
                self.v = 0.0 if self.w == self.target else self.v
            else:
                self.v = 0.0
        elif self.mode == 'squeeze':
            if self.target < self.w:                              # hold: force builds, pads compress
                self.F = self.F_set * smooth((t1 - self.t_mode) / P.t_build)
                self.w = P.w_p - P.delta * self.F / self.F_set
                self.v = (self.w - w0) / DT
            else:                                                 # open: pads decompress, fingers leave
                self.rel = self.rel or (self.F, self.w)
                self.v = min(max(self.v, 0.0) + A_FINGER * DT, P.v_set)
                self.w += self.v * DT
                self.F = self.rel[0] * max(0.0, (P.w_p - self.w) / max(P.w_p - self.rel[1], 1e-9))
                if self.w >= P.w_p:
                    tc = self.cross(w0, P.w_p)
                    self.event(tc, 'released', 'contact_end')
                    self.mode, self.rel, self.stroke, self.F = 'free', None, False, 0.0
                    self.pstate, self.hold, self.set_down = 'table', 0.0, True
        elif self.mode == 'stop':
            if self.target <= P.w_stop:                           # press on the end stop
                self.F = self.F_set * smooth((t1 - self.t_mode) / 0.03)
            else:                                                 # back off the end stop over 10 ms
                self.rel = self.rel or (self.F, t1)
                self.F = self.rel[0] * max(0.0, 1.0 - (t1 - self.rel[1]) / 0.01)
                if self.F == 0.0:
                    self.mode, self.rel, self.stroke = 'free', None, False

    def closing_contacts(self, w0):
        P = self.P
        if not self.touched and self.between:
            self.dx = self.part[0] - self.pos[0]
            w_first = P.w_p + 2 * abs(self.dx)
            if self.w <= w_first:
                self.touched, self.mode = True, 'push'
                self.event(self.cross(w0, w_first), 'contact_begin')
        if self.mode == 'push' and self.w <= P.w_p:               # second finger arrives
            tc = self.cross(w0, P.w_p)
            self.event(tc, 'secured')
            self.w, self.v, self.mode, self.t_mode = P.w_p, 0.0, 'squeeze', tc
            self.part[0] = self.pos[0]                            # pushed to the centre
            self.poff, self.pstate, self.grasp_z, self.set_down = self.part - self.pos[:2], 'held', self.pos[2], False
        elif self.mode == 'free' and self.w <= P.w_stop:
            tc = self.cross(w0, P.w_stop)
            self.w, self.v, self.mode, self.t_mode = P.w_stop, 0.0, 'stop', tc
            if not self.touched:
                self.misses += 1
                self.event(tc, 'missed')

    def step_part(self, t1):
        P, sag = self.P, self.P.m_p * G / self.P.k_shear
        if self.pstate in ('held', 'air', 'slip'):
            self.part = self.pos[:2] + self.poff
        if self.pstate == 'held':                                 # pads shear until they carry the weight
            self.hold = min(max((self.pos[2] - self.grasp_z) / sag, 0.0), 1.0)
            if self.hold >= 1.0:
                self.pstate = 'air'
                self.event(t1, 'lift_off')
        elif self.pstate == 'air':
            bottom = self.pos[2] - self.grasp_z - sag
            if bottom <= 0.0:
                self.t_place = max(self.t, t1 + bottom / max(-self.vel[2], 1e-6))   # moment of touch-down
                self.pstate = 'placing'
                self.event(self.t_place, 'placed')
            elif grip_demand(P.m_p, P.lever, self.acc) > 2 * P.mu * self.F:
                self.pstate, self.t_slip0 = 'slip', t1
        elif self.pstate == 'placing':                            # the table takes the weight
            self.hold = 1.0 - smooth((t1 - self.t_place) / P.t_td)
        elif self.pstate == 'slip':
            frac = (t1 - self.t_slip0) / P.t_slip
            self.hold = 1.0 - smooth(frac)
            if frac >= 1.0:
                self.event(t1, 'dropped', 'contact_end')
                self.drops, self.t_notice = self.drops + 1, t1 + P.notice
                t_fall = np.sqrt(2 * max(self.pos[2] - self.grasp_z - sag, 0.0) / G)
                self.part = self.part + self.vel[:2] * t_fall + self.rng.uniform(-0.02, 0.02, 2)
                self.pstate, self.t_land, self.hold = 'fall', t1 + t_fall, 0.0
                self.mode, self.v, self.F = 'free', 0.0, 0.0      # nothing between the fingers any more
        elif self.pstate == 'fall' and t1 >= self.t_land:
            self.pstate = 'table'

    def record(self):
        gvec, fb = np.array([0.0, 0.0, -G]), TO_FT * self.bump_force(self.t)
        fg = TO_FT * self.P.m_g * (gvec - self.acc)
        fp = TO_FT * self.P.m_p * self.hold * (gvec - self.acc)
        r_p = R_PART + np.array([0.0, -self.poff[1], 0.0])
        torque = np.cross(self.r_g, fg) + np.cross(r_p, fp) + np.cross(R_BUMP, fb)
        self.log.append((self.t, *(self.pos + self.defl), *self.vel, self.w, self.v, self.F, *(fg + fp + fb), *torque))


# ---- the operator
def approach(r, xy, bump=False):
    P = r.P
    if r.pos[2] < P.z_travel - 1e-3:
        yield from r.go([*r.pos[:2], P.z_travel])
    m = r.start_move([*xy, P.z_travel])
    if bump:                                          # the tool knocks a fixture while empty
        d = -m.u + np.array([0.0, 0.0, r.rng.uniform(-0.3, 0.3)])
        r.bump = (m.t0 + P.bump_at * m.T, P.bump_T, P.bump_F * d / np.linalg.norm(d))
        r.event(r.bump[0], 'bump')
    yield from r.wait_until(lambda: r.t >= m.t0 + m.T)
    yield from r.go([*xy, P.z_grasp + 0.03])
    yield from r.go([*xy, P.z_grasp], P.v_slow)


def grasp(r):
    yield from r.wait(r.rng.uniform(0.15, 0.5))
    r.button = 0.0
    yield from r.wait_until(lambda: r.mode in ('squeeze', 'stop') and r.F >= 0.95 * r.F_set)
    yield from r.wait(r.rng.uniform(0.2, 0.5))


def carry(r, goal):
    """Lift, carry, set down, open; False if the part slipped out on the way."""
    P, drops = r.P, r.drops
    for xyz, acc in (([*r.pos[:2], P.z_travel], P.a_lift), ([*goal, P.z_travel], P.a_carry),
                     ([*goal, r.grasp_z + 0.03], P.a_move)):
        yield from r.go(xyz, V_TOP, acc)
        if r.drops > drops or r.pstate == 'slip':
            return False
    r.start_move([*goal, r.grasp_z], P.v_slow)
    yield from r.wait_until(lambda: r.pstate == 'placing')
    yield from r.wait(r.t_place + P.open_delay - r.t)
    r.button = P.w_open
    return True


def retreat(r):
    P = r.P
    yield from r.wait_until(lambda: r.w >= min(P.w_open, P.w_p + 0.008))
    yield from r.wait(r.rng.uniform(0.1, 0.4))
    yield from r.go([*r.pos[:2], P.z_travel])
    a = r.rng.uniform(0, 2 * np.pi)
    yield from r.go([*(r.pos[:2] + r.rng.uniform(0.05, 0.15) * np.array([np.cos(a), np.sin(a)])), P.z_travel])


def operator(r):
    P, rng = r.P, r.rng
    err = lambda: rng.uniform(-0.003, 0.003, 2)                 # the operator's placing error (x: closing axis)
    yield from r.wait(P.pre)
    if P.first == 'miss':                                       # close beside the part
        side = P.part + np.array([0.0, rng.choice([-1, 1]) * (P.depth / 2 + rng.uniform(0.015, 0.04))])
        yield from approach(r, side)
        yield from grasp(r)
        r.button = P.w_open
        if not P.retry:
            yield from r.wait_until(lambda: r.w >= P.w_open - 1e-6)
            yield from r.wait(rng.uniform(0.1, 0.4))
            yield from r.go([*r.pos[:2], P.z_travel])
            return
        yield from r.wait_until(lambda: r.w >= P.w_p + 0.012)
        yield from r.wait(rng.uniform(0.1, 0.3))
        yield from r.go([*(P.part + err()), P.z_grasp], 0.1)      # slide over the part, fingers straddling it
    else:
        yield from approach(r, P.part + err(), bump=P.scenario == 'bump')
    yield from grasp(r)
    if not (yield from carry(r, P.goal)):
        yield from r.wait_until(lambda: r.pstate == 'table' and r.mode == 'free' and r.button != 0.0
                                and r.w >= min(P.w_open, P.w_p + 0.012))
        if not P.retry:
            yield from r.wait(rng.uniform(0.3, 0.8))
            return
        r.F_set = P.F_retry
        yield from approach(r, r.part + err())
        yield from grasp(r)
        yield from carry(r, P.goal)
    yield from retreat(r)


def simulate(P, rng):
    r = Rig(P, rng)
    for _ in operator(r):
        r.step()
    while r.mode != 'free' or r.w != r.target or r.v != 0.0 or r.t < r.move.t0 + r.move.T:
        r.step()
    for _ in range(int(round(max(0.3, P.t_dur - r.t) / DT))):
        r.step()
    return r


# ---- publishing
def publish(r, rng):
    L, dur = np.array(r.log), r.t
    t, P = L[:, 0], r.P
    t0 = 1_700_000_000 * 10 ** 9 + int(rng.integers(0, 3 * 10 ** 16))
    ns = lambda x: t0 + np.round(np.asarray(x) * 1e9).astype(np.int64)
    recv = lambda ts: ns(ts + rng.uniform(1e-3, 3e-3, ts.size))
    at = lambda ts, cols: np.stack([np.interp(ts, t, L[:, c]) for c in cols], axis=1)

    def clock(hz, jitter):
        ts = rng.uniform(0, 1 / hz) + np.arange(int(dur * hz) + 1) / hz
        ts = ts[ts <= dur]
        return np.sort(np.clip(ts + rng.normal(0, jitter, ts.size), 0.0, dur))

    tg, tw, tf = clock(100, 3e-4), clock(125, 4e-4), clock(500, 5e-5)
    width = np.clip(np.round(at(tw, [7]) / 1e-5) * 1e-5, 0.0, W_OPEN)
    drift = rng.uniform(-0.3, 0.3, 3) / 60.0                       # N/s
    force = (at(tf, [10, 11, 12]) + rng.uniform(-0.2, 0.2, 3) + np.outer(tf, drift)
             + rng.normal(0, rng.uniform(0.12, 0.18), (tf.size, 3)))
    torque = (at(tf, [13, 14, 15]) + rng.uniform(-0.02, 0.02, 3) + np.outer(tf, rng.uniform(-2e-3, 2e-3, 3) / 60)
              + rng.normal(0, 0.005, (tf.size, 3)))
    tc = np.array([c[0] for c in r.cmd if c[0] <= dur])
    return {
        '/gantry/joint_states': {
            'type': 'sensor_msgs/msg/JointState', 'names': ['x', 'y', 'z'], 't_ns': ns(tg), 'received_ns': recv(tg),
            'position': at(tg, [1, 2, 3]) + rng.normal(0, 2e-6, (tg.size, 3)),
            'velocity': at(tg, [4, 5, 6]) + rng.normal(0, 5e-4, (tg.size, 3)), 'effort': None},
        '/gripper/joint_states': {
            'type': 'sensor_msgs/msg/JointState', 'names': ['finger_width'], 't_ns': ns(tw), 'received_ns': recv(tw),
            'position': width, 'velocity': at(tw, [8]) + rng.normal(0, rng.uniform(0.0015, 0.0025), (tw.size, 1)),
            'effort': at(tw, [9]) + rng.normal(0, rng.uniform(0.4, 0.6), (tw.size, 1))},
        '/ft/wrench': {'type': 'geometry_msgs/msg/WrenchStamped', 'frame_id': 'ft_link', 't_ns': ns(tf),
                       'received_ns': recv(tf), 'force': force, 'torque': torque},
        '/gripper/command': {'type': 'std_msgs/msg/Float64', 't_ns': recv(tc),
                             'data': np.array([c[1] for c in r.cmd if c[0] <= dur], float)},
    }, t0


def outcome(r):
    at_goal = r.set_down and r.pstate == 'table' and np.linalg.norm(r.part - r.P.goal) < 0.01 and r.mode == 'free'
    return 'failure' if not at_goal else 'recovery' if r.misses or r.drops else 'success'


def _run(seed, scenario):
    rng = np.random.default_rng([seed, SCENARIOS.index(scenario)])
    for _ in range(50):                                           # episodes last 8-15 s
        P = draw_params(rng, scenario)
        r = simulate(P, rng)
        if r.t <= 15.0:
            break
    streams, t0 = publish(r, rng)
    truth = sorted(r.truth, key=lambda e: e[0])
    ep = {'family': FAMILY, 'seed': seed, 'scenario': scenario, 'outcome': outcome(r), 'streams': streams,
          'truth': [(int(t0 + round(t * 1e9)), k) for t, k in truth]}
    return ep, r


def episode(seed: int, scenario: str) -> dict:
    return _run(seed, scenario)[0]


# ---- self-check
def _check(ep, r):
    s, times, kinds = ep['streams'], [t for t, _ in ep['truth']], [k for _, k in ep['truth']]
    for name, st in s.items():
        ts = st['t_ns']
        assert ts.dtype == np.int64 and np.all(np.diff(ts) > 0) and 1.69e18 < ts[0] < 1.8e18, name
        assert all(len(st[k]) == len(ts) for k in ('position', 'velocity', 'effort', 'force', 'torque', 'data')
                   if st.get(k) is not None), name
        assert 'names' not in st or st['position'].shape == (len(ts), len(st['names'])), name
    w = s['/gripper/joint_states']['position']
    assert 0.0 <= w.min() and w.max() <= W_OPEN and times == sorted(times)
    assert 'dropped' not in kinds or r.P.first == 'slip'
    assert all('placed' in kinds[:i] for i, k in enumerate(kinds) if k == 'released')
    want = {'success': 'success', 'bump': 'success', 'partial_open': 'success', 'recovery': 'recovery'}
    assert ep['outcome'] == want.get(ep['scenario'], 'failure'), ep['outcome']
    if 'placed' not in kinds:
        return ''
    f, tf = s['/ft/wrench']['force'][:, 2], (s['/ft/wrench']['t_ns'] - times[0]) / 1e9   # wrist load:
    tcl = (times[kinds.index('closing')] - times[0]) / 1e9                               # empty and still
    tpl = (times[len(kinds) - 1 - kinds[::-1].index('placed')] - times[0]) / 1e9         # vs. held, lowering
    empty, held = (np.median(f[(tf > a) & (tf < b)]) for a, b in ((tcl - 0.3, tcl - 0.05), (tpl - 0.3, tpl - 0.1)))
    assert abs(held - empty - r.P.m_p * G) < 0.35, (held - empty, r.P.m_p * G)
    return f'  wrist +{held - empty:.2f} N (part {r.P.m_p * G:.2f} N)'


if __name__ == '__main__':
    for sc in SCENARIOS:
        for seed in range(3):
            ep, r = _run(seed, sc)
            s, t0, P = ep['streams'], ep['streams']['/gantry/joint_states']['t_ns'][0], r.P
            counts = ' '.join(f'{k}={len(v["t_ns"])}' for k, v in s.items())
            print(f'{sc:12s} seed {seed}: {r.t:5.2f} s  {ep["outcome"]:8s} {counts}')
            print(f'  part w={P.w_p * 1e3:.1f} mm m={P.m_p:.2f} kg  v_close={P.v_set * 1e3:.0f} mm/s '
                  f'F={P.F_set:.1f} N open={P.w_open * 1e3:.1f} mm' + _check(ep, r))
            print('  ' + ', '.join(f'{k}@{(t - t0) / 1e9:.3f}' for t, k in ep['truth']))
    print('self-check passed')
