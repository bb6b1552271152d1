"""Blind physical model of the `servo_counts` rig (see servo_counts.md); numpy and the standard library only.

A 6-DoF arm with a servo-electric two-finger gripper (position register 0 = open .. 255 = closed, motor current
in mA) picks machined parts from a fixture and sets them down on a conveyor plate, teleoperated with a
spacemouse and a gripper slider. The world is stepped at 1 kHz:

* operator: a script (a generator, one step per ms) that moves the tool along minimum-jerk Cartesian segments and
  the slider along minimum-jerk ramps, reacting to what it sees (fingers stopped, part fallen, plate reached);
* slider publisher (/gripper/request): 20 Hz while its value moves or differs from the last one sent, 2 Hz else;
* gripper: applies the last received request at its driver's 50 Hz cycle and moves at the speed register towards
  it; an off-centre part is touched by one finger, pushed, then blocked by the second; with no part the pads meet
  at 225-230 counts; once blocked it squeezes 1-3 counts into the compliance. Motor current = per-unit idle
  offset + temperature drift + (moving | gripping current) + noise;
* part: in the fixture, held, on the plate or fallen; the support's share of the weight ramps when the arm lifts
  it out of the fixture and when the plate takes it (20-50 ms); a slip pulls it out of the fingers in 10-40 ms;
* wrist F/T (tool0, untared): per-episode offsets + (gripper + held share of the part) * (g - a) + impacts + noise;
* arm joints: a toy analytic IK of a UR-like arm, currents from gravity, inertia, friction and impacts.

Truth events are emitted by the physics step from this state; the streams are then sampled as the drivers publish.
Simplifications: the tool stays pointing down with a fixed orientation (tool0 x = world x, y = -y, z = -z); the
arm follows its commanded path exactly; the part's fall after a slip is not modelled beyond leaving the fingers.
"""
from types import SimpleNamespace

import numpy as np

FAMILY = 'servo_counts'
SCENARIOS = ('success', 'regrip', 'miss', 'slip', 'bump', 'recovery')
KHZ = 1000                                     # internal steps per second
G = 9.81
ARM = ('shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint', 'wrist_2_joint',
       'wrist_3_joint')
HOME = np.array([0.40, 0.00, 0.45])            # tool0 position, m (tool pointing down)
SLOTS = (np.array([0.52, -0.25, 0.22]), np.array([0.52, -0.33, 0.22]))   # tool0 at grasp height, two slots
PLATE = np.array([0.30, 0.38, 0.25])           # tool0 when the held part rests on the plate
M_GRIPPER, A_MAX, F_INERTIA = 1.0, 2.0, 4.0    # kg; peak tool acceleration (m/s^2) and its m*a (N)
TAU_SQ, TAU_I, KP = 25.0, 5.0, 40.0            # squeeze and current time constants (ms); servo braking gain (1/s)
L1, L2 = 0.425, 0.392                          # upper arm and forearm, m


def minjerk(s):
    s = min(max(s, 0.0), 1.0)
    return s ** 3 * (10 - 15 * s + 6 * s * s)


def draw(rng, scenario):
    """Every physical quantity the description gives a range for, drawn over its whole range."""
    u = rng.uniform
    kind = str(rng.choice(['miss', 'slip'])) if scenario == 'recovery' else scenario
    P = SimpleNamespace(
        kind=kind, recover=scenario == 'recovery',
        speed=3.0 * u(40, 150),                  # speed register, mm/s -> counts/s (1 count = 1/3 mm of opening)
        stop=u(60, 200), squeeze=u(1, 3), pads=u(225, 230),
        i_idle=u(80, 150), i_drift=u(-30, 30), i_tau=u(3, 20), i_noise=u(10, 20), i_move=u(200, 300),
        i_grip=u(300, 800),
        mass=u(1.5, 2.5) if kind == 'slip' else u(0.3, 2.5),     # slips happen to heavy oily parts
        lift_h=u(0.06, 0.15), lift_ms=int(u(30, 80)), plate_ms=int(u(20, 50)), release_wait=u(0.02, 0.3),
        regrip_hold=u(0.2, 0.5), slip_ms=int(u(10, 40)), slip_open=u(0.5, 1.5),
        bump_F=u(20, 80), bump_ms=int(u(20, 100)),
        f_off=u(2, 8, 3) * rng.choice([-1, 1], 3), t_off=u(0.05, 0.5, 3) * rng.choice([-1, 1], 3),
        f_noise=u(0.8, 1.2), yaw0=u(-0.3, 0.3), read_ms=u(2, 6))
    partial = int(round(u(80, 120)))             # operators let go at 0 or partly open at 80-120 ...
    P.open_to = partial if rng.random() < 0.5 and partial < P.stop - 10 else 0   # ... when that clears the part
    return P


class Rig:
    """The physical world: operator's slider, gripper, part, arm; logs its state at 1 kHz."""

    def __init__(self, rng, P, tempo, n_max):
        self.rng, self.P, self.tempo, self.k, self.truth = rng, P, tempo, 0, []
        self.slider, self.ramp, self.sent, self.last_pub = 0.0, None, 0.0, -int(rng.integers(0, 500))
        self.fast_gap, self.slow_gap, self.requests, self.inbox = 50, 500, [], []
        self.cycle0 = int(rng.integers(0, 20))     # phase of the gripper driver's 50 Hz cycle, ms
        self.x, self.vel, self.target, self.mode, self.rest_ms = 0.0, 0.0, 0.0, 'rest', 10 ** 6
        self.i_mot, self.touch, self.secured, self.stroke_touched = 0.0, False, False, False
        self.part, self.between, self.push, self.support = None, False, 0.0, 1.0
        self.sup_ramp, self.slip, self.bump, self.failed_once = None, None, None, False
        self.p = HOME + rng.uniform(-0.03, 0.03, 3)
        self.v_arm, self.seg = np.zeros(3), None
        self.log = {'x': np.zeros(n_max), 'i': np.zeros(n_max), 'p': np.zeros((n_max, 3)),
                    'load': np.zeros(n_max), 'bump': np.zeros((n_max, 3))}

    def d(self, lo, hi):                           # an operator's duration, at this episode's tempo
        return self.rng.uniform(lo, hi) * self.tempo

    def emit(self, kind):
        self.truth.append((self.k, kind))

    # ---- what the operator starts ----
    def start_move(self, p1, dur):
        p0, k0 = self.p.copy(), self.k
        a_max = min(A_MAX, F_INERTIA / (M_GRIPPER + (self.P.mass if self.secured else 0.0)))
        n = max(1, int(round(max(dur, np.sqrt(5.77 * np.linalg.norm(p1 - p0) / a_max)) * KHZ)))
        self.seg = lambda k: (p0 + (p1 - p0) * minjerk((k - k0 + 1) / n), k - k0 + 1 >= n)
        return n

    def start_ramp(self, value, dur):
        self.ramp = (self.k, max(1, int(dur * KHZ)), self.slider, float(value))

    def start_support(self, to, n):
        self.sup_ramp = (self.k, n, self.support, to)
        if to > 0.5:
            self.emit('placed')                    # touch-down on the plate: the plate starts taking the weight
            self.part = 'plate'

    def hit(self):
        """The empty gripper hits the fixture: a half-sine impact; the arm is stopped within the impact."""
        k0, v0, p0, tau = self.k, self.v_arm.copy(), self.p.copy(), self.P.bump_ms / 3.0
        d = np.array([*self.rng.uniform(-0.5, 0.5, 2), 1.0])
        self.bump = (k0, self.P.bump_ms, self.P.bump_F * d / np.linalg.norm(d))
        self.seg = lambda k: (p0 + v0 * tau / KHZ * (1 - np.exp(-(k - k0 + 1) / tau)), k - k0 > 6 * tau)
        self.emit('bump')

    # ---- physics, one ms ----
    def step(self):
        self.step_slider()
        self.step_gripper()
        self.step_part()
        if self.seg is not None:
            p, done = self.seg(self.k)
            self.v_arm, self.p = (p - self.p) * KHZ, p
            self.seg = None if done else self.seg
        else:
            self.v_arm = np.zeros(3)
        L, k = self.log, self.k
        L['x'][k], L['i'][k], L['p'][k] = self.x, self.i_mot, self.p
        held = self.part in ('fixture', 'held', 'plate')
        slip_left = 1.0 if self.slip is None else max(0.0, 1 - (k - self.slip) / self.P.slip_ms)
        L['load'][k] = (1 - self.support) * slip_left if held else 0.0
        if self.bump and 0 <= k - self.bump[0] <= self.bump[1]:
            L['bump'][k] = self.bump[2] * np.sin(np.pi * (k - self.bump[0]) / self.bump[1])
        self.k += 1

    def step_slider(self):
        if self.ramp:
            k0, n, a, b = self.ramp
            s = (self.k - k0 + 1) / n
            self.slider = a + (b - a) * minjerk(s)
            self.ramp = None if s >= 1 else self.ramp
        value, gap = float(round(self.slider)), self.k - self.last_pub
        if ((self.ramp or value != self.sent) and gap >= self.fast_gap) or gap >= self.slow_gap:
            rx = self.k + self.rng.uniform(0.3, 2.0)                      # ms, when it is received
            self.requests.append((rx / KHZ, value))
            apply = self.cycle0 + 20 * int(np.ceil((rx - self.cycle0) / 20))   # the driver's next cycle
            self.inbox.append((apply, value))
            self.sent, self.last_pub = value, self.k
            self.fast_gap = 50 + int(round(self.rng.normal(0, 1)))
            self.slow_gap = 500 + int(round(self.rng.normal(0, 3)))
        while self.inbox and self.inbox[0][0] <= self.k:
            self.target = self.inbox.pop(0)[1]

    def step_gripper(self):
        P, x0, prev = self.P, self.x, self.mode
        blk = P.stop if self.between else P.pads           # where closing is blocked (part, or pads meeting)
        first = blk - self.push if self.between else blk   # the first finger touches an off-centre part here
        goal = min(self.target, blk)
        if self.target > blk and self.x >= blk - 0.02:     # blocked: squeeze into the compliance
            mode, self.vel = 'press', 0.0
            self.x += (blk + P.squeeze - self.x) / TAU_SQ
        elif self.x < goal - 0.01 or self.x > self.target + 0.01:
            mode = 'close' if self.x < goal else 'open'
            aim = goal if mode == 'close' else self.target
            brake = np.inf if (mode == 'close' and goal == blk) else KP * abs(aim - self.x) + 2.0
            v0 = self.vel if mode == prev else 0.0
            self.vel = min(v0 + P.speed / 15.0, P.speed, brake)      # reaches speed in ~15 ms
            dx = self.vel / KHZ
            self.x = min(self.x + dx, aim) if mode == 'close' else max(self.x - dx, aim)
        else:
            mode, self.vel = 'rest', 0.0
        if mode == 'close' and ((prev == 'rest' and self.rest_ms >= 100) or prev == 'open'):
            self.emit('closing')
            self.stroke_touched = False
        touch = self.between and self.x >= first
        if touch and not self.touch:
            self.emit('contact_begin')
            self.stroke_touched = True
        if self.between and x0 < blk <= self.x and not self.secured:
            self.emit('secured')                           # the second finger arrives; the part is centred
            self.secured, self.push = True, 0.0
        if mode == 'press' and prev == 'close' and not self.between and not self.stroke_touched:
            self.emit('missed')
            self.failed_once = True
        if self.touch and not touch:                       # the fingers leave the part
            self.emit('released' if self.support > 0.99 else 'dropped')
            self.emit('contact_end')
            self.secured = False
        self.touch, self.mode = touch, mode
        self.rest_ms = self.rest_ms + 1 if mode == 'rest' else 0
        moving = max(P.i_move - P.i_idle, 30.0) + (40.0 if touch and mode == 'close' else 0.0)
        level = {'press': P.i_grip * np.clip((self.x - blk) / P.squeeze, 0, 1), 'close': moving,
                 'open': moving, 'rest': 0.0}[mode]
        self.i_mot += (level - self.i_mot) / TAU_I

    def step_part(self):
        if self.sup_ramp:
            k0, n, a, b = self.sup_ramp
            s = min((self.k - k0) / n, 1.0)
            self.support = a + (b - a) * s * s * (3 - 2 * s)
            if s >= 1:
                self.sup_ramp = None
                if b < 0.5:
                    self.emit('lift_off')                  # the fixture no longer carries any of the weight
                    self.part = 'held'
        if self.slip is not None and self.part == 'held' and self.k - self.slip >= self.P.slip_ms:
            self.emit('dropped')                           # the part leaves the fingers
            self.emit('contact_end')
            self.part, self.between, self.touch, self.secured = 'free', False, False, False
            self.failed_once = True


# ---- the operator (generators: one yield per ms) ----
def wait_steps(n):
    for _ in range(int(n)):
        yield


def wait(s):
    yield from wait_steps(round(s * KHZ))


def until(cond):
    while not cond():
        yield


def move(rig, p1, dur):
    rig.start_move(p1, dur)
    yield from until(lambda: rig.seg is None)


def slide(rig, value, dur):
    rig.start_ramp(value, dur)
    yield from until(lambda: rig.ramp is None)


def let_go(rig, value):
    yield from slide(rig, value, rig.d(0.15, 0.4))
    yield from until(lambda: rig.target == value and rig.mode == 'rest')


def collide(rig, slot, above):
    """Descend misaligned, catch the fixture's edge with an open finger, back off, re-align."""
    off = rig.rng.normal(0, 1, 2)
    off = np.array([*(off / np.linalg.norm(off) * rig.rng.uniform(0.01, 0.02)), 0.0])
    n = rig.start_move(slot + off, rig.d(0.6, 1.0))
    yield from wait_steps(n * rig.rng.uniform(0.4, 0.8))
    rig.hit()
    yield from until(lambda: rig.seg is None)
    yield from wait(rig.d(0.3, 0.8))
    yield from move(rig, rig.p + [0, 0, 0.03], rig.d(0.4, 0.7))
    yield from move(rig, above, rig.d(0.4, 0.8))


def attempt(rig, i, present, slip=False, bump=False, regrip=False):
    """One pick from fixture slot i; returns True when the part ends on the plate."""
    P, slot = rig.P, SLOTS[i]
    above = slot + [0, 0, rig.rng.uniform(0.08, 0.15)]
    yield from move(rig, above, rig.d(0.9, 1.6))
    if bump:
        yield from collide(rig, slot, above)
    yield from move(rig, slot, rig.d(0.6, 1.0))
    if present:                                    # the part now stands between the open fingers
        rig.part, rig.between, rig.support, rig.slip = 'fixture', True, 1.0, None
        rig.push = rig.rng.uniform(0, 9)           # 0-1.5 mm off-centre: 0-9 counts between the two touches
    yield from wait(rig.d(0.2, 0.6))
    yield from slide(rig, 255, rig.d(0.15, 0.5))
    yield from until(lambda: rig.mode == 'press')
    if not present:                                # closed on nothing: open and back off
        yield from wait(rig.d(0.4, 1.2))
        yield from let_go(rig, 0)
        yield from move(rig, above, rig.d(0.6, 1.0))
        return False
    yield from wait(rig.d(0.3, 0.8))
    if regrip:                # "open slightly" to settle the part, still in its fixture. A request of 200 is
        # still beyond a part that stops the fingers at 60-200 counts: the servo keeps squeezing, nothing moves.
        yield from slide(rig, 200, rig.d(0.1, 0.25))
        yield from wait(P.regrip_hold)
        yield from slide(rig, 255, rig.d(0.1, 0.25))
        yield from wait(rig.d(0.3, 0.6))
    rig.start_support(0.0, P.lift_ms)              # lift out of the fixture
    yield from move(rig, slot + [0, 0, P.lift_h], rig.d(0.7, 1.2))
    n = rig.start_move(PLATE + [0, 0, P.lift_h], rig.d(1.2, 2.2))
    if slip:                                       # heavy oily part slides out during the carry
        yield from wait_steps(n * rig.rng.uniform(0.2, 0.7))
        rig.slip = rig.k
        yield from until(lambda: rig.part == 'free')
        yield from wait(P.slip_open)
        yield from slide(rig, 0, rig.d(0.15, 0.4))
        yield from until(lambda: rig.seg is None)
        return False
    yield from until(lambda: rig.seg is None)
    n = rig.start_move(PLATE, rig.d(0.7, 1.2))     # lower; the plate takes the weight as the arm stops
    yield from wait_steps(n - P.plate_ms)
    rig.start_support(1.0, P.plate_ms)
    yield from until(lambda: rig.seg is None and rig.sup_ramp is None)
    yield from wait(P.release_wait)
    yield from let_go(rig, P.open_to)
    yield from wait(rig.d(0.2, 0.5))
    rig.between = False
    yield from move(rig, PLATE + [0, 0, 0.1], rig.d(0.6, 1.0))
    return True


def operator(rig):
    P = rig.P
    yield from wait(rig.d(0.3, 1.0))
    ok = yield from attempt(rig, 0, present=P.kind != 'miss', slip=P.kind == 'slip', bump=P.kind == 'bump',
                            regrip=P.kind == 'regrip')
    if not ok and P.recover:
        ok = yield from attempt(rig, 1, present=True)
    if not ok:
        yield from move(rig, HOME, rig.d(1.0, 1.6))


# ---- sampling the streams ----
def joint_angles(p, yaw0):
    """Toy analytic IK of a UR-like arm holding the tool vertical (elbow up)."""
    x, y, z = p.T
    pan = np.arctan2(y, x)
    r, h = np.hypot(x, y) - 0.11, z + 0.18 - 0.09
    elbow = np.arccos(np.clip((r * r + h * h - L1 ** 2 - L2 ** 2) / (2 * L1 * L2), -1, 1))
    lift = -(np.arctan2(h, r) + np.arctan2(L2 * np.sin(elbow), L1 + L2 * np.cos(elbow)))
    return np.stack([pan, lift, elbow, -np.pi / 2 - lift - elbow, np.full_like(x, -np.pi / 2), pan + yaw0], 1)


def stamps(rng, T, rate, jitter_s):
    t = np.arange(rng.uniform(0, 1 / rate), T - 0.003, 1 / rate)
    return np.sort(np.clip(t + rng.normal(0, jitter_s, t.size), 0, T - 0.003))


def stamped(rng, t, t0):
    """Header stamps (ns on the epoch clock) and the recorder's receive times (1-3 ms of transport later)."""
    return {'t_ns': t0 + (t * 1e9).astype(np.int64),
            'received_ns': t0 + ((t + rng.uniform(1e-3, 3e-3, t.size)) * 1e9).astype(np.int64)}


def arm_stream(rng, L, P, n, T, t0):
    p, load = L['p'][:n], M_GRIPPER + P.mass * L['load'][:n]
    q = joint_angles(p, P.yaw0)
    qd = np.gradient(q, axis=0) * KHZ
    qdd = np.gradient(qd, axis=0) * KHZ
    r = np.hypot(p[:, 0], p[:, 1])
    fz = L['bump'][:n, 2]
    torque = np.stack([2.0 * qdd[:, 0], -G * (6.0 * r + load * r) + fz * r + 4.0 * qdd[:, 1],
                       G * (2.0 * 0.5 * r + load * 0.5 * r) - fz * 0.5 * r + 1.5 * qdd[:, 2],
                       0.2 * qdd[:, 3] + 0.02 * fz, 0.1 * qdd[:, 4], 0.05 * qdd[:, 5]], 1)
    amps = torque / 13.0 + 0.15 * np.tanh(qd / 0.01)          # joint torque constant ~13 N*m/A, friction
    t = stamps(rng, T, 500, 5e-5)
    i, m = (t * KHZ).astype(int), t.size
    return {'type': 'sensor_msgs/msg/JointState', 'names': list(ARM), **stamped(rng, t, t0),
            'position': q[i] + rng.normal(0, 2e-5, (m, 6)), 'velocity': qd[i] + rng.normal(0, 2e-3, (m, 6)),
            'effort': amps[i] + rng.normal(0, 0.04, (m, 6))}


def wrench_stream(rng, L, P, n, T, t0):
    p, share = L['p'][:n], P.mass * L['load'][:n, None]
    a = np.gradient(np.gradient(p, axis=0), axis=0) * KHZ ** 2
    flip = np.array([1.0, -1.0, -1.0])                         # world -> tool0 (tool pointing down)
    f_g = M_GRIPPER * (np.array([0, 0, -G]) - a) * flip
    f_p = share * (np.array([0, 0, -G]) - a) * flip
    f_b = L['bump'][:n] * flip
    force = f_g + f_p + f_b
    torque = (np.cross([0.004, -0.002, 0.07], f_g) + np.cross([0, 0, 0.16], f_p)
              + np.cross([0.04, 0.0, 0.19], f_b))
    t = stamps(rng, T, 500, 5e-5)
    i, m = (t * KHZ).astype(int), t.size
    return {'type': 'geometry_msgs/msg/WrenchStamped', 'frame_id': 'tool0', **stamped(rng, t, t0),
            'force': force[i] + P.f_off + rng.normal(0, P.f_noise, (m, 3)),
            'torque': torque[i] + P.t_off + rng.normal(0, 0.03, (m, 3))}


def gripper_stream(rng, L, P, cycle0, T, t0):
    k = np.arange(cycle0, int((T - 0.01) * KHZ), 20)           # the driver's 50 Hz cycle: reads, then stamps
    t = (k + P.read_ms + rng.normal(0, 0.3, k.size)) / KHZ
    m = k.size
    counts = np.clip(np.round(L['x'][k]) + rng.choice([-1, 0, 1], m, p=[0.2, 0.6, 0.2]), 0, 255)
    drift = P.i_drift * (1 - np.exp(-k / KHZ / P.i_tau)) / (1 - np.exp(-T / P.i_tau))
    ma = np.round(np.clip(P.i_idle + drift + L['i'][k] + rng.normal(0, P.i_noise, m), 0, 2000))
    return {'type': 'sensor_msgs/msg/JointState', 'names': ['gripper_position'], **stamped(rng, t, t0),
            'position': counts[:, None].astype(float), 'velocity': None, 'effort': ma[:, None]}


def simulate(seed, idx, scenario, tempo, stretch=False):
    """Run the operator's plan at a tempo; None when it does not end 0.3 s before the episode's length
    (with stretch, the episode is lengthened to fit it instead)."""
    rng = np.random.default_rng([seed, idx])
    T = rng.uniform(8.0, 16.0)                     # the episode's length (drawn first: the same on every retry)
    P = draw(rng, scenario)
    rig = Rig(rng, P, tempo, 30 * KHZ)
    for _ in operator(rig):
        if rig.k >= (T - 0.3) * KHZ and not stretch:
            return None
        rig.step()
    T = max(T, rig.k / KHZ + 0.3)
    while rig.k < int(T * KHZ):
        rig.step()
    return rng, P, rig, T


def episode(seed: int, scenario: str) -> dict:
    return build(seed, scenario)[0]


def build(seed, scenario):
    """The episode's dict and its start time (ns)."""
    idx, run = SCENARIOS.index(scenario), None
    tempo = 0.64 if scenario == 'recovery' else 1.0  # two attempts: a brisker operator from the start
    while run is None:                             # a brisker operator until the plan fits in the episode
        run = simulate(seed, idx, scenario, tempo, stretch=tempo < 0.4)
        tempo *= 0.8
    rng, P, rig, T = run
    t0 = 1_700_000_000 * 10 ** 9 + int(rng.integers(0, 30 * 86400)) * 10 ** 9 + int(rng.integers(0, 10 ** 9))
    n = int(T * KHZ)
    req_t = np.array([r[0] for r in rig.requests if r[0] < T])
    req_v = np.array([r[1] for r in rig.requests if r[0] < T], dtype=np.float32)
    streams = {'/joint_states': arm_stream(rng, rig.log, P, n, T, t0),
               '/gripper/joint_states': gripper_stream(rng, rig.log, P, rig.cycle0, T, t0),
               '/gripper/request': {'type': 'std_msgs/msg/Float32', 't_ns': t0 + (req_t * 1e9).astype(np.int64),
                                    'data': req_v},
               '/ft_sensor/wrench': wrench_stream(rng, rig.log, P, n, T, t0)}
    on_plate = rig.part == 'plate' and not rig.touch
    outcome = ('recovery' if rig.failed_once else 'success') if on_plate else 'failure'
    truth = [(t0 + k * 10 ** 6, kind) for k, kind in rig.truth if k < n]
    return {'family': FAMILY, 'seed': seed, 'scenario': scenario, 'outcome': outcome, 'streams': streams,
            'truth': sorted(truth, key=lambda e: e[0])}, t0


def check(ep):
    """The dict's structure: types, shapes, sorted times."""
    assert ep['family'] == FAMILY and ep['outcome'] in ('success', 'failure', 'recovery')
    for name, s in ep['streams'].items():
        t, n = s['t_ns'], len(s['t_ns'])
        assert t.dtype == np.int64 and t.ndim == 1 and np.all(np.diff(t) > 0) and 1.6e18 < t[0] < 1.8e18, name
        assert 'received_ns' not in s or (s['received_ns'].shape == t.shape and np.all(s['received_ns'] > t))
        shapes = {'sensor_msgs/msg/JointState': [('position', len(s.get('names', ()))),
                                                 ('velocity', len(s.get('names', ()))),
                                                 ('effort', len(s.get('names', ())))],
                  'geometry_msgs/msg/WrenchStamped': [('force', 3), ('torque', 3)]}.get(s['type'], [('data', 0)])
        for key, j in shapes:
            assert s[key] is None and key == 'velocity' or s[key].shape == ((n, j) if j else (n,)), (name, key)
    times = [e[0] for e in ep['truth']]
    assert times == sorted(times) and all(isinstance(k, str) and isinstance(t, int) for t, k in ep['truth'])


if __name__ == '__main__':
    for sc in SCENARIOS:
        for seed in range(3):
            ep, t0 = build(seed, sc)
            check(ep)
            again = episode(seed, sc)                                     # deterministic
            assert again['truth'] == ep['truth'] and np.array_equal(
                again['streams']['/ft_sensor/wrench']['force'], ep['streams']['/ft_sensor/wrench']['force'])
            st = ep['streams']
            dur = (max(s['t_ns'][-1] for s in st.values()) - t0) / 1e9
            counts = ' '.join(f'{k}={len(s["t_ns"])}' for k, s in st.items())
            ev = ', '.join(f'{(t - t0) / 1e9:.3f} {k}' for t, k in ep['truth'])
            print(f'{sc:9s} seed {seed}: {dur:5.2f} s  {ep["outcome"]:8s} {counts}\n    {ev}')
