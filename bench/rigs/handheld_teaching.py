"""Handheld teaching gripper: a blind physical model of the tool and of the person using it (1 kHz).

* Hand: the trigger position u (in finger-width units). A squeeze accelerates to 0.05-0.3 m/s and slows as the
  pads resist, until the grip is firm. Some people squeeze in two steps with a pause, or rest half-squeezed.
  Tremor: 8-12 Hz plus a slow drift. Regrip: a brief loosening. Release: the return spring snaps the trigger
  open (critically damped, at the open stop in 0.2-0.5 s), unless the hand catches it half-way.
* Fingers: a stiff second-order follower of the trigger (the linkage's inertia). Hard stops at touching
  (~5 mm with the pads) and at fully open (0.080-0.088 m).
* Object: 0.02-0.07 m wide, possibly off-centre (one finger touches first). Once it is held, a share r of the
  hand's further travel compresses the pads (1-4 mm). In a slip it slides out, and the squeezing hand closes
  the fingers to touching. Loosened in mid-air, it leans on one finger and sags.
* Tool path: minimum-jerk reach, descent, lift, carry, set-down with a slight press, retreat. The object lifts
  off once the tool has risen past the pads' shear give, and touches down on the goal surface.
Truth events come from this state. What gets published is the marker tracker's width (0.7 mm noise, ~1 %
outliers, no message while a marker is hidden) and the visual odometry's x, y, z, both on the camera's 30 Hz
frames. Simplification: the hand's tremor shakes the published tool pose but not the contact logic.
"""
import math
from types import SimpleNamespace

import numpy as np

FAMILY = 'handheld_teaching'
SCENARIOS = ('success', 'staged', 'miss', 'drop', 'regrip', 'recovery')
DT = 0.001                                # physics step, s
JS = 'sensor_msgs/msg/JointState'
OM_L, ZETA_L = 2 * math.pi * 40.0, 0.7   # finger linkage: natural frequency (rad/s) and damping ratio
PRELOAD = 0.004                           # return spring's rest position beyond the open stop, m
GOAL_R = 0.12                             # radius of the goal surface, m
_ALPHA = [math.sqrt(p) % 1.0 for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)]


def _mj(s):   # minimum-jerk progress, 0..1 -> 0..1
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)


def _params(seed, sidx, rng):
    """The person, tool and scene. Ranges the description gives are spread over seeds (Kronecker sequence)."""
    alphas = iter(_ALPHA)

    def spread(lo, hi):
        return lo + (hi - lo) * ((next(alphas) * (seed + 1 + 7.31 * sidx) + 0.05 * rng.random()) % 1.0)
    U = rng.uniform
    P = SimpleNamespace(
        v=spread(0.05, 0.3), pause=spread(0.2, 0.8), w_obj=spread(0.02, 0.07), c=spread(0.001, 0.004),
        t_open=spread(0.2, 0.5), w_open=spread(0.080, 0.088), t_rest=spread(0.1, 0.3),
        t_drop_rel=spread(0.5, 1.5), loosen=spread(0.003, 0.008), t_loosen=spread(0.2, 0.5),
        p_hidden=spread(0.05, 0.15),
        w_touch=U(0.0045, 0.0055), r=U(0.3, 0.6), trem=U(0.25e-3, 0.4e-3), trem_tool=U(0.3e-3, 0.6e-3),
        release_half=rng.random() < 0.25, half_f=U(0.35, 0.65), delta=U(0.0005, 0.002),
        press=U(0.001, 0.004), clear=U(0.04, 0.18), z0=U(0.12, 0.3), pre_h=U(0.03, 0.08),
        grip_z=U(0.02, 0.08), miss_off=U(0.025, 0.05), sag_rate=U(0.0, 0.01),
        vo_scale=U(-0.03, 0.03), vo_drift=U(0.5e-3, 2e-3), latency=U(0.015, 0.03))
    P.e = U(0.0, min(0.003, (P.w_open - P.w_obj) / 2 - 0.001))          # off-centre grasp, m
    half = rng.random() < 0.3                                           # resting half-squeezed out of habit
    P.u_rest = P.w_touch + U(0.45, 0.75) * (P.w_open - P.w_touch) if half else P.w_open
    a1, a2 = U(0, 2 * math.pi, 2)
    d1, d2 = U(0.1, 0.35), U(0.25, 0.5)
    P.obj_xy = (d1 * math.cos(a1), d1 * math.sin(a1))
    P.goal_xy = (P.obj_xy[0] + d2 * math.cos(a2), P.obj_xy[1] + d2 * math.sin(a2))
    P.h_goal = U(-0.01, 0.01) if rng.random() < 0.6 else U(0.02, 0.15)  # same counter, or a shelf
    return P


def _tremor(rng, n, ch):
    """Unit-variance hand tremor: a physiological 8-12 Hz band plus a slow drift, `ch` channels."""
    f = np.fft.rfftfreq(n, DT)
    shape = np.exp(-0.5 * ((f - rng.uniform(8, 12)) / 1.5) ** 2) + 0.5 / (1 + f ** 2)
    x = np.fft.irfft(shape * (rng.normal(size=(ch, f.size)) + 1j * rng.normal(size=(ch, f.size))), n)
    return x / x.std(axis=1, keepdims=True)


# ---- the hand's and the arm's motions: generators yielding one value per 1 ms step -------------------------
def hold(x):
    while True:
        yield x


def hand_path(sim, moves):
    """Volitional trigger moves: a list of (target u, duration) done with minimum jerk, then held."""
    u = sim.u
    for u1, T in moves:
        u0, n = u, max(1, round(T / DT))
        for i in range(1, n + 1):
            u = u0 + (u1 - u0) * _mj(i / n)
            yield u
    yield from hold(u)


def hand_squeeze(sim, v, c_target, t_acc=0.04):
    """Squeeze at up to v until the pads press c_target (the hand slows as they resist) or the trigger bottoms."""
    u, s, bottom = min(sim.u, sim.P.w_open), 0.0, sim.P.w_touch - 0.002
    while u > bottom and sim.compression(u) < c_target:
        s = min(s + v * DT / t_acc, v * (1.0 - sim.compression(u) / c_target) + 0.002)
        u -= s * DT
        yield u
    yield from hold(u)


def hand_spring(sim, u_inf, om, stop):
    """The hand lets go: the return spring drives the trigger towards u_inf (critically damped), up to the stop."""
    u0, t = sim.u, 0.0
    while True:
        t += DT
        yield min(u_inf + (u0 - u_inf) * (1 + om * t) * math.exp(-om * t), stop)


def tool_path(sim, p1, T):
    p0, n = list(sim.pose), max(1, round(T / DT))
    for i in range(1, n + 1):
        s = _mj(i / n)
        yield [a + (b - a) * s for a, b in zip(p0, p1)]
    yield from hold(list(p1))


def tool_brake(sim, T):
    """The arm stops from its current velocity with constant deceleration."""
    p0, v, p = list(sim.pose), list(sim.vel), list(sim.pose)
    for i in range(1, round(T / DT) + 1):
        tau = i * DT
        p = [a + b * (tau - tau * tau / (2 * T)) for a, b in zip(p0, v)]
        yield p
    yield from hold(p)


# ---- the physical state -----------------------------------------------------------------------------------
class Sim:
    """Trigger, fingers, tool and object, stepped at 1 kHz; records truth events as (step, kind)."""

    def __init__(self, P, rng):
        self.P, self.rng, self.k = P, rng, 0
        self.trem = _tremor(rng, 1 << 17, 4)   # trigger, x, y, z
        self.u = self.w = P.u_rest
        self.wv, self.pose, self.vel = 0.0, [0.0, 0.0, P.z0], [0.0] * 3
        self.hand, self.tool = hold(self.u), hold(self.pose)
        self.obj = {'xy': P.obj_xy, 'h': 0.0, 'state': 'rest'}          # rest | held
        self.aligned = self.airborne = self.touched = self.stroke = self.contact = self.letting_go = False
        self.w_eff, self.slip, self.sag, self.b_off = P.w_obj, None, 0.0, 0.0
        self.events, self.w_log, self.p_log = [], [], []

    def event(self, kind):
        self.events.append((self.k, kind))

    def surface(self, xy):   # height of the support under xy: the goal surface, or the starting one
        return self.P.h_goal if math.dist(xy, self.P.goal_xy) < GOAL_R else 0.0

    def between(self):       # the object is between the fingers
        return self.aligned and self.obj['state'] in ('rest', 'held')

    def compression(self, u):   # pad compression the trigger position u produces on the object (quasi-static)
        return self.P.r * (self.w_eff - u) if self.between() and u < self.w_eff else 0.0

    def begin_stroke(self):
        self.stroke, self.contact, self.letting_go = True, False, False
        self.event('closing')

    def step(self):
        P, k = self.P, self.k % self.trem.shape[1]
        u, p = next(self.hand), next(self.tool)
        self.vel = [(a - b) / DT for a, b in zip(p, self.pose)]
        self.u, self.pose = u, p
        self._slide()
        if u < P.w_open:   # the hand is on the trigger: its tremor moves it (fading at the open stop)
            u += P.trem * min(1.0, (P.w_open - u) / 0.003) * self.trem[0, k]
        comp = self.compression(u)   # the object resists: the pads take a share r of the further travel
        wt = min(max(self.w_eff - comp if comp > 0 else u, P.w_touch), P.w_open)
        self.wv += (OM_L ** 2 * (wt - self.w) - 2 * ZETA_L * OM_L * self.wv) * DT
        self.w += self.wv * DT
        if not P.w_touch < self.w < P.w_open:   # hard stops: fully open, pads touching
            self.w, self.wv = min(max(self.w, P.w_touch), P.w_open), 0.0
        self._contacts()
        self._support()
        self.w_log.append(self.w)
        self.p_log.append([c + P.trem_tool * self.trem[i + 1, k] for i, c in enumerate(p)])
        self.k += 1

    def _contacts(self):
        P, o, w = self.P, self.obj, self.w
        if self.between():
            if o['state'] == 'rest' and self.stroke and not self.touched and w <= P.w_obj + 2 * P.e:
                self.touched = self.contact = True
                self.event('contact_begin')
            if o['state'] == 'rest' and self.touched and w <= P.w_obj:
                o['state'], self.stroke, self.sag = 'held', False, 0.0
                self.b_off = self.pose[2] - o['h']
                self.event('secured')
            elif o['state'] == 'held' and w > self.w_eff:
                if self.letting_go and not self.airborne:
                    self._let_go('released')
                elif self.airborne:   # loosened in mid-air: leans on one finger and sags
                    self.sag += P.sag_rate * DT
        if self.stroke and not self.contact and w <= P.w_touch + 1e-6:
            self.stroke = False
            self.event('missed')

    def _let_go(self, kind):
        o, rng, xy = self.obj, self.rng, self.pose[:2]
        self.events += [(self.k, kind), (self.k, 'contact_end')]
        if kind == 'dropped':   # falls and rolls a little; no longer between the fingers
            a, d = rng.uniform(0, 2 * math.pi), rng.uniform(0, 0.03)
            xy, self.aligned = [xy[0] + d * math.cos(a), xy[1] + d * math.sin(a)], False
        o.update(state='rest', xy=tuple(xy), h=self.surface(xy), how=kind)
        self.touched, self.airborne, self.w_eff = False, False, self.P.w_obj

    def _slide(self):
        """A slip in progress: the object slides along the pads (narrowing if tapered), then leaves them."""
        if self.slip and self.k - self.slip[0] >= self.slip[1]:
            self.slip = None
            self._let_go('dropped')
        elif self.slip:
            self.w_eff = self.P.w_obj - self.slip[2] * (self.k - self.slip[0]) / self.slip[1]

    def _support(self):
        """A held object hangs below the tool (after the pads' shear give); it leaves or meets its support."""
        bottom = self.pose[2] - self.b_off - self.P.delta - self.sag
        h = self.surface(self.pose[:2])
        if self.obj['state'] == 'held' and self.airborne != (bottom > h + (0.0 if self.airborne else 5e-4)):
            self.airborne = not self.airborne
            self.event('lift_off' if self.airborne else 'placed')


# ---- the person -------------------------------------------------------------------------------------------
def wait(T):
    for _ in range(max(0, round(T / DT))):
        yield


def move(sim, p1, T):
    sim.tool = tool_path(sim, p1, T)
    yield from wait(T)


def release(sim, half):
    """Let go of the trigger: the spring opens the fingers fully in t_open, or the hand catches it half-way."""
    P, x = sim.P, 1.0
    q = PRELOAD / (P.w_open + PRELOAD - sim.u)
    lo, hi = 0.0, 60.0
    for _ in range(60):   # solve (1 + x) exp(-x) = q: the spring reaches the open stop at t_open
        x = 0.5 * (lo + hi)
        lo, hi = (x, hi) if (1 + x) * math.exp(-x) > q else (lo, x)
    u_inf = sim.w + P.half_f * (P.w_open - sim.w) if half else P.w_open + PRELOAD
    sim.letting_go = True
    sim.hand = hand_spring(sim, u_inf, x / P.t_open, P.w_open)
    yield from wait(P.t_open + 0.15)


def grasp(sim, rng, aligned, staged):
    """Reach the object (or beside it) and squeeze; returns whether it is held. A miss is let go of again."""
    P, o = sim.P, sim.obj
    x, y = o['xy']
    if not aligned:   # squeezes beside the object
        a = rng.uniform(0, 2 * math.pi)
        x, y = x + P.miss_off * math.cos(a), y + P.miss_off * math.sin(a)
    zg = o['h'] + P.grip_z
    if sim.u < P.w_obj + 2 * P.e + 0.006:   # held too narrow to pass over the object: open up while reaching
        sim.hand = hand_path(sim, [(P.w_open, 0.3)])
    yield from move(sim, [x, y, zg + P.pre_h], rng.uniform(0.7, 1.5))
    yield from move(sim, [x, y, zg], rng.uniform(0.3, 0.6))
    sim.aligned = aligned
    yield from wait(rng.uniform(0.1, 0.4))
    sim.begin_stroke()
    if staged:   # the first step of a two-step squeeze stops short of the object
        u_mid = P.w_obj + 2 * P.e + rng.uniform(0.3, 0.7) * (sim.u - P.w_obj - 2 * P.e)
        T = 1.875 * (sim.u - u_mid) / P.v   # minimum jerk with peak speed v
        sim.hand = hand_path(sim, [(u_mid, T)])
        yield from wait(T + P.pause)
    sim.hand = hand_squeeze(sim, min(max(P.v * rng.uniform(0.8, 1.2), 0.05), 0.3) if staged else P.v, P.c)
    while sim.stroke:   # until the fingers are on the object or closed on air
        yield
    if o['state'] == 'held':
        yield from wait(rng.uniform(0.15, 0.5))
        return True
    yield from wait(rng.uniform(0.2, 0.8))
    yield from release(sim, False)
    sim.aligned = False
    yield from move(sim, [x, y, zg + P.pre_h], rng.uniform(0.4, 0.8))
    return False


def carry(sim, rng, drop=False, regrip=False):
    """Lift, carry to the goal and set down, then let go; or drop it on the way (slip)."""
    P, o = sim.P, sim.obj
    zc = max(o['h'], P.h_goal) + sim.b_off + P.delta + P.clear
    yield from move(sim, sim.pose[:2] + [zc], rng.uniform(0.4, 0.8))
    T = rng.uniform(0.6, 2.0)
    sim.tool = tool_path(sim, [P.goal_xy[0], P.goal_xy[1], zc], T)
    t1 = rng.uniform(0.2, 0.7) * T
    yield from wait(t1)
    if drop:   # the grip gives: it slides out, the hand closes the rest of the way, then lets go
        sim.slip = (sim.k, int(rng.integers(20, 81)), rng.uniform(0, 0.0015))
        while o['state'] == 'held':
            yield
        sim.tool = tool_brake(sim, rng.uniform(0.15, 0.3))
        sim.hand = hand_path(sim, [(P.w_touch - 0.002, P.t_rest)])
        yield from wait(P.t_drop_rel)
        yield from release(sim, P.release_half)
        return
    if regrip:   # open the width by `loosen`, then squeeze again, all within t_loosen
        c2, d, Tl = min(max(P.c * rng.uniform(0.8, 1.2), 0.001), 0.004), P.loosen, P.t_loosen
        u_l = P.w_obj - (P.c - d) / P.r if d <= P.c else P.w_obj + d - P.c
        sim.hand = hand_path(sim, [(u_l, 0.3 * Tl), (u_l, 0.4 * Tl), (P.w_obj - c2 / P.r, 0.3 * Tl)])
        yield from wait(Tl)
    yield from wait(max(0.0, T - t1 - (P.t_loosen if regrip else 0.0)))
    z_touch = P.h_goal + sim.b_off + P.delta + sim.sag
    yield from move(sim, [P.goal_xy[0], P.goal_xy[1], z_touch - P.press], rng.uniform(0.4, 0.9))
    yield from wait(rng.uniform(0.2, 0.7))
    yield from release(sim, P.release_half)


def person(sim, rng, scenario):
    yield from wait(rng.uniform(0.4, 1.2))
    if scenario == 'miss':
        for _ in range(1 + int(rng.random() < 0.3)):   # sometimes tries once more, then gives up
            yield from grasp(sim, rng, False, False)
    elif scenario == 'recovery' and rng.random() < 0.5:   # a miss, then a successful pick
        yield from grasp(sim, rng, False, False)
        if (yield from grasp(sim, rng, True, False)):
            yield from carry(sim, rng)
    else:   # success, staged, regrip, drop; or recovery: a drop, then a successful pick
        if (yield from grasp(sim, rng, True, scenario == 'staged')):
            yield from carry(sim, rng, drop=scenario in ('drop', 'recovery'), regrip=scenario == 'regrip')
        if scenario == 'recovery' and (yield from grasp(sim, rng, True, False)):
            yield from carry(sim, rng)
    sim.aligned = False   # retreat, then stop recording
    x, y, z = sim.pose
    yield from move(sim, [x + rng.uniform(-0.05, 0.05), y + rng.uniform(-0.05, 0.05), z + rng.uniform(0.05, 0.15)],
                    rng.uniform(0.5, 1.0))
    yield from wait(rng.uniform(0.3, 0.8))


# ---- what the camera pipelines publish ----------------------------------------------------------------------
def _hidden(rng, t, sim, p):
    """Frames where a marker is hidden: runs of 1-10 frames, 3x as likely while the hand works the object."""
    busy, start = np.zeros(t.size, bool), 0.0
    for k, kind in sim.events:   # from the squeeze's start until the grip has settled; around a release
        start = k * DT - 0.1 if kind == 'closing' else start
        if kind in ('secured', 'missed', 'released', 'dropped'):
            busy |= (t >= (start if kind in ('secured', 'missed') else k * DT - 0.3)) & (t <= k * DT + 0.4)
    weight = np.where(busy, 3.0, 1.0)
    hid, target = np.zeros(t.size, bool), round(p * t.size)
    while hid.sum() < target:   # place runs (kept apart) until the episode's share of frames is hidden
        i, n = int(rng.choice(t.size, p=weight / weight.sum())), int(rng.integers(1, 11))
        if not hid[max(i - 1, 0):i + n + 1].any():
            hid[i:i + n] = True
    return hid


def _streams(rng, sim, P, t0):
    period = (1 / 30.0) * (1 + rng.uniform(-3e-4, 3e-4))
    t = rng.uniform(0, period) + period * np.arange(int(sim.k * DT / period) - 1)   # exposure times, s
    idx = np.minimum((t / DT).astype(int), sim.k - 1)
    stamp = t0 + np.round((t + np.clip(rng.normal(0, 0.003, t.size), -0.01, 0.01)) * 1e9).astype(np.int64)
    recv = stamp + np.round((P.latency + rng.uniform(0, 0.004, t.size)) * 1e9).astype(np.int64)
    w = np.asarray(sim.w_log)[idx] + rng.normal(0, 0.0007, t.size)
    out = rng.random(t.size) < 0.01   # a mis-detected marker
    w[out] += rng.choice([-1.0, 1.0], out.sum()) * rng.uniform(0.005, 0.02, out.sum())
    seen = ~_hidden(rng, t, sim, P.p_hidden)
    pose = np.asarray(sim.p_log)[idx] * (1 + P.vo_scale)
    pose += np.cumsum(rng.normal(0, P.vo_drift * math.sqrt(period), pose.shape), axis=0)
    pose += rng.normal(0, 0.002, pose.shape)
    return {
        '/tool/gripper': {'type': JS, 'names': ['width'], 't_ns': stamp[seen], 'position': w[seen, None],
                          'velocity': None, 'effort': None, 'received_ns': recv[seen]},
        '/tool/pose_joints': {'type': JS, 'names': ['x', 'y', 'z'], 't_ns': stamp, 'position': pose,
                              'velocity': None, 'effort': None, 'received_ns': recv},
    }


def _outcome(sim, P):
    o, kinds = sim.obj, {k for _, k in sim.events}
    if not (o['state'] == 'rest' and o.get('how') == 'released' and math.dist(o['xy'], P.goal_xy) < GOAL_R
            and o['h'] == P.h_goal):   # set down on the goal surface (not fallen there), free of the fingers
        return 'failure'
    return 'recovery' if kinds & {'missed', 'dropped'} else 'success'


def _run(seed, scenario):
    sidx = SCENARIOS.index(scenario)
    rng = np.random.default_rng([seed, sidx])
    P = _params(seed, sidx, rng)
    sim = Sim(P, rng)
    for _ in person(sim, rng, scenario):   # the person acts, then the physics takes a 1 ms step
        sim.step()
    t0 = np.int64(1_700_000_000_000_000_000 + int(rng.integers(0, 30_000_000_000_000_000)))
    ep = {'family': FAMILY, 'seed': int(seed), 'scenario': scenario, 'outcome': _outcome(sim, P),
          'streams': _streams(rng, sim, P, t0),
          'truth': [(int(t0) + k * 1_000_000, kind) for k, kind in sim.events]}
    return ep, sim, P


def episode(seed: int, scenario: str) -> dict:
    return _run(seed, scenario)[0]


# ---- self-check ---------------------------------------------------------------------------------------------
PICK = ['closing', 'contact_begin', 'secured', 'lift_off', 'placed', 'released', 'contact_end']
DROP = PICK[:4] + ['dropped', 'contact_end']


def _check(ep, sim):
    assert set(ep) == {'family', 'seed', 'scenario', 'outcome', 'streams', 'truth'} and ep['family'] == FAMILY
    for name, s in ep['streams'].items():
        t = s['t_ns']
        assert s['type'] == JS and isinstance(s['names'], list) and t.dtype == np.int64 and t.ndim == 1
        assert np.all(np.diff(t) > 0) and 1.6e18 < t[0] < 1.8e18 and np.all(s['received_ns'] > t), name
        assert s['position'].shape == (t.size, len(s['names'])) and np.isfinite(s['position']).all()
        assert s['velocity'] is None and s['effort'] is None
    times, kinds = [tn for tn, _ in ep['truth']], [kd for _, kd in ep['truth']]
    assert times == sorted(times) and all(isinstance(tn, int) for tn in times)
    sc = ep['scenario']   # the physics must have played out as the scenario says
    want = {'miss': ['closing', 'missed'] * max(1, len(kinds) // 2), 'drop': DROP,
            'recovery': (['closing', 'missed'] if 'missed' in kinds else DROP) + PICK}.get(sc, PICK)
    assert kinds == want, (sc, kinds)
    assert ep['outcome'] == {'miss': 'failure', 'drop': 'failure', 'recovery': 'recovery'}.get(sc, 'success')
    assert sim.P.w_touch - 1e-12 <= min(sim.w_log) and max(sim.w_log) <= sim.P.w_open + 1e-12


def main():
    for sc in SCENARIOS:
        for seed in range(3):
            ep, sim, P = _run(seed, sc)
            _check(ep, sim)
            g, p = ep['streams']['/tool/gripper'], ep['streams']['/tool/pose_joints']
            t_start, wl = int(min(g['t_ns'][0], p['t_ns'][0])), np.asarray(sim.w_log)
            print(f'{sc} {seed}: {(p["t_ns"][-1] - t_start) / 1e9:.2f} s, /tool/gripper {g["t_ns"].size}, '
                  f'/tool/pose_joints {p["t_ns"].size}, outcome {ep["outcome"]} | object {P.w_obj * 1e3:.1f} mm, '
                  f'pads {P.c * 1e3:.1f} mm, squeeze {P.v:.2f} m/s, open {P.w_open * 1e3:.1f} mm in {P.t_open:.2f} s, '
                  f'width {wl.min() * 1e3:.1f}..{wl.max() * 1e3:.1f} mm')
            print('    ' + ', '.join(f'{kd} {(tn - t_start) / 1e9:.3f}' for tn, kd in ep['truth']))
    a, b = episode(1, 'recovery'), episode(1, 'recovery')   # deterministic for (seed, scenario)
    assert a['truth'] == b['truth'] and all(np.array_equal(a['streams'][n]['position'], b['streams'][n]['position'])
                                            for n in a['streams'])
    print('self-check passed')


if __name__ == '__main__':
    main()
