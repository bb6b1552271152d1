"""Blind model of the current-sensing gripper bench (written only from current_sensing_bench.md).

A 6-DoF arm (125 Hz /arm/joint_states) carries an electric parallel gripper whose driver reports the jaw width in
mm and the motor current in A as `effort` (50 Hz /gripper/joint_states). The operator's button presses publish
the target width on /gripper/command, one Float32 per press. No wrist sensor.

The physics (arm path, jaws, part, motor current) runs on a 1 ms grid in episode seconds; the drivers then sample it
with their own clocks, jitter, noise, quantisation and lost messages. Truth comes from the physical state only.
"""
import zlib

import numpy as np

SCENARIOS = ('success', 'bin_drop', 'regrip', 'miss', 'slip', 'recovery', 'two_parts')
FAMILY = 'current_sensing_bench'
ARM_JOINTS = ['shoulder_pan', 'shoulder_lift', 'elbow', 'wrist_1', 'wrist_2', 'wrist_3']
DT = 1e-3            # physics step, s
OPEN_MAX = 110.0     # datasheet stroke, mm
V_MAX = 150.0        # datasheet top jaw speed, mm/s
I_MAX = 3.0          # datasheet maximum motor current, A
ACCEL = 3000.0       # jaw acceleration, mm/s^2 (reaches job speed in ~10-50 ms)


def _mj(tau):
    """Minimum-jerk progress s(tau), tau in [0, 1]: the smooth path of a teleoperated move."""
    tau = np.clip(tau, 0.0, 1.0)
    return tau ** 3 * (10 - 15 * tau + 6 * tau ** 2)


_MJ_TAU = np.linspace(0, 1, 20001)


def _mj_inv(s, _tau=_MJ_TAU):
    """Fraction of a minimum-jerk move's duration at which progress s is reached."""
    return float(np.interp(s, _mj(_tau), _tau))


def _arm_path(way, t):
    """Tool pose (pan rad, reach m, height m over the bench) at times t, from waypoints (t, pan, r, z)."""
    W = np.asarray(way, float)
    t = np.atleast_1d(np.asarray(t, float))
    i = np.clip(np.searchsorted(W[:, 0], t, side='right') - 1, 0, len(W) - 2)
    tau = (t - W[i, 0]) / np.maximum(W[i + 1, 0] - W[i, 0], 1e-9)
    return W[i, 1:] + (W[i + 1, 1:] - W[i, 1:]) * _mj(tau)[:, None]


class Script:
    """The operator's plan: arm waypoints and button presses, plus the arm-side truth (lift_off, placed)."""

    def __init__(self, rng, J, pose):
        self.rng, self.J, self.t = rng, J, 0.0
        self.tempo = rng.uniform(0.8, 1.3)           # this operator's pace (scales human move/wait times)
        self.way, self.presses, self.truth, self.loads = [(0.0, *pose)], [], [], []
        self.w, self.open_done = J['open_w'], 0.0    # the operator's idea of the jaws' width, when opening ends

    def hold(self, dur):                             # arm holds still for dur seconds (not scaled)
        self.t += dur
        self.way.append((self.t, *self.way[-1][1:]))

    def move(self, dur, pan=None, r=None, z=None):   # a smooth move (or a pause) of human duration
        dur *= self.tempo
        self.t += dur
        self.way.append((self.t, *[o if v is None else v for o, v in zip(self.way[-1][1:], (pan, r, z))]))
        return dur

    wait = move                                      # a pause is a move to the same pose

    def press(self, target, t=None, **info):
        t = self.t if t is None else t
        if t > self.t:
            self.hold(t - self.t)
        self.presses.append((t, float(target), info))
        return t


def _new_part(rng, J, slippery=False):
    maxw = min(95.0, J['open_w'] - 8.0)             # the part must pass between the opened jaws
    if slippery:                                     # a round part or a small wet bottle
        bottle = rng.random() < 0.5
        w = min(rng.uniform(30, 45) if bottle else rng.uniform(10, 35), maxw)
    else:
        bottle = maxw > 45 and rng.random() < 0.4
        w = rng.uniform(40, maxw) if bottle else rng.uniform(5, min(60.0, maxw))
    return dict(w=w, bottle=bottle, off=rng.uniform(0.05, 0.5),          # off-centre: one jaw touches first
                comp=rng.uniform(0.3, 0.8) if bottle else rng.uniform(0.15, 0.4),  # pad/part squeeze at grip
                creep=rng.uniform(0.1, 0.4) if bottle else 0.0,          # plastic creep over ~0.3 s
                stick=rng.uniform(0.1, 0.5),         # extra opening before the last pad lets go
                m=rng.uniform(0.1, 1.2) if bottle else rng.uniform(0.05, 1.5),
                zg=rng.uniform(0.03, 0.08) if bottle else rng.uniform(0.01, 0.04),  # grasp height over base
                pan=rng.uniform(-0.6, 0.6), r=rng.uniform(0.35, 0.6), quiet=False, slip_at=None, drop_t=None)


def _approach(S, part, side=0.0):
    rng = S.rng
    S.move(rng.uniform(1.0, 2.2), pan=part['pan'] + side, r=part['r'], z=part['zg'] + rng.uniform(0.08, 0.15))
    S.move(rng.uniform(0.6, 1.1), z=part['zg'])
    S.wait(rng.uniform(0.2, 0.7))


def _close(S, part):
    """Press close and hold (as the operator watches) until the jaws have stopped."""
    J = S.J
    if S.t < S.open_done:
        S.hold(S.open_done - S.t)
    stop = part['w'] - part['comp'] if part else J['closed_end']
    squeeze = 3.5 * (2 * part['off'] + part['comp']) / J['v'] if part else 0.0
    S.press(0.0, part=part)
    S.hold(J['lat'] + 0.03 + (S.w - stop) / J['v'] + squeeze + 0.05)
    S.w = stop


def _open(S, t=None, quiet=False):
    J = S.J
    t = S.press(J['open_w'], t=t, quiet=quiet)
    S.open_done = t + J['lat'] + 0.05 + abs(J['open_w'] - S.w) / J['v']
    S.w = J['open_w']


def _pick(S, part, dest='tray', regrip=False, slip=False):
    """One pick: approach, grip, (re-grip), lift, carry, then set down / drop into a bin / lose it (slip)."""
    rng, J = S.rng, S.J
    _approach(S, part)
    gp = dict(part)
    _close(S, gp)
    if regrip:                                       # open by 5-15 mm and close again to centre it: same grasp
        S.wait(rng.uniform(0.3, 0.8))
        d = rng.uniform(5, 15)
        S.press(J['open_w'], quiet=True)
        S.hold(d / J['v'])                           # both presses see the same latency: the jaws open ~d mm
        S.w += d
        gp = dict(part, off=rng.uniform(0.05, 0.15), quiet=True)
        _close(S, gp)                                # (quiet: only this re-close's touch is silent)
    S.wait(rng.uniform(0.3, 0.9))
    zg = part['zg']
    z_rel = rng.uniform(-0.12, 0.0) + zg + rng.uniform(0.05, 0.15)   # bin floor below bench; 5-15 cm over it
    zcar = max(zg + rng.uniform(0.12, 0.25), z_rel + 0.05)
    c = rng.uniform(0.0005, 0.002)                   # pads/arm give this much before the part leaves the bench
    t0, dur = S.t, S.move(rng.uniform(0.6, 1.1), z=zcar)
    S.truth.append((t0 + dur * _mj_inv(c / (zcar - zg)), 'lift_off'))
    S.loads.append((S.truth[-1][0], part['m']))
    t0, dur = S.t, S.move(rng.uniform(1.0, 2.2), pan=part['pan'] + rng.choice([-1, 1]) * rng.uniform(0.5, 1.2),
                          r=rng.uniform(0.35, 0.6))
    if slip:                                         # the part slides out during the carry
        gp['slip_at'] = t0 + rng.uniform(0.2, 0.8) * dur
        gp['drop_t'] = gp['slip_at'] + rng.uniform(0.05, 0.15)
        S.w = J['closed_end']
        _open(S, t=gp['drop_t'] + rng.uniform(0.5, 2.0))
        S.wait(rng.uniform(0.3, 0.8))
        pan, r, _ = _arm_path(S.way, gp['drop_t'])[0]
        return dict(part, pan=pan, r=r, off=rng.uniform(0.05, 0.5))   # where it landed on the bench
    if dest == 'tray':
        zc = rng.uniform(0.0, 0.02) + zg             # tray surface over the bench + the part's grasp height
        push = rng.uniform(0.001, 0.003)             # the operator presses down a little (pad compliance)
        z0, t0, dur = S.way[-1][3], S.t, S.move(rng.uniform(0.7, 1.2), z=zc - push)
        t_pl = t0 + dur * _mj_inv((z0 - zc) / (z0 - zc + push))
        S.truth.append((t_pl, 'placed'))
        _open(S, t=t_pl + rng.uniform(0.1, 0.8))
    else:                                            # over the bin, released in the air on purpose
        S.move(rng.uniform(0.4, 0.8), z=z_rel)
        S.wait(rng.uniform(0.2, 0.8))
        _open(S)
    S.wait(rng.uniform(0.3, 0.8))
    S.move(rng.uniform(0.5, 0.9), z=S.way[-1][3] + rng.uniform(0.08, 0.15))
    return None


def _miss(S, part):
    """Close beside the part: the jaws run to their stop; open again and back off."""
    rng = S.rng
    _approach(S, part, side=rng.choice([-1, 1]) * rng.uniform(0.05, 0.12))
    _close(S, None)
    S.wait(rng.uniform(0.3, 1.5))
    _open(S)
    S.wait(rng.uniform(0.3, 0.7))
    S.move(rng.uniform(0.5, 0.9), z=part['zg'] + rng.uniform(0.06, 0.12))


def _gripper(J, presses, n):
    """Jaw width (mm), velocity (mm/s), motor current above standby (A) on the 1 ms grid, and gripper truth."""
    W, V, C, truth, k = np.empty(n), np.empty(n), np.empty(n), [], 0
    cmds = sorted((t + rx + J['lat'], tgt, info) for (t, tgt, info), rx in zip(presses, J['rx']))
    w, target, sp, dirn, vcur = J['open_w'], J['open_w'], 0.0, 0, J['v']
    mode, part, leave, leave_quiet, slipped = 'idle', None, [], False, False
    t_ms, t_clamp, t_stall, I, held_I, w_rest = -1.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        t = i * DT
        while k < len(cmds) and cmds[k][0] <= t:     # a command takes effect (after the controller's latency)
            _, tgt, info = cmds[k]
            k += 1
            nd = 0 if abs(tgt - w) < 0.05 else (1 if tgt > w else -1)
            if nd == 0:
                continue
            from_rest = mode in ('idle', 'held', 'stall')
            if from_rest or nd != dirn:
                t_ms, sp = t, 0.0                    # motion start (or reversal): inrush current spike
            if nd < 0:
                part, slipped = info.get('part'), False
                if from_rest and not (part and part['quiet']):
                    truth.append((t, 'closing'))
            elif mode in ('held', 'contact') and part is not None:
                # the squeezed pads/part spring back first; then the fingers leave it (the last pad a bit later)
                rel = w + 0.7 * (part['w'] - w)
                leave, leave_quiet = [(rel, 'released'), (rel + part['stick'], 'contact_end')], info.get('quiet')
            target, dirn, vcur, mode = tgt, nd, J['v'], 'move'
        w_old = w
        if mode == 'move':
            stop = max(target, J['closed_end']) if dirn < 0 else min(target, OPEN_MAX)
            dist = abs(target - w)
            sp = min(sp + ACCEL * DT, vcur, np.sqrt(2 * ACCEL * dist))
            w += dirn * min(sp * DT, abs(stop - w))
            level = J['I_run']
            if dirn < 0 and part is not None and w <= part['w'] + 2 * part['off']:
                w = part['w'] + 2 * part['off']      # first jaw touches the part
                mode, w_rest = 'contact', part['w'] - part['comp']
                if not part['quiet']:
                    truth.append((t, 'contact_begin'))
            elif abs(stop - w) < 1e-9:
                if dirn < 0:                         # closed onto its own end stop
                    mode, t_stall = 'stall', t
                    if part is None and not slipped:
                        truth.append((t, 'missed'))
                else:
                    mode = 'idle'
                sp, dirn = 0.0, 0
            while leave and w >= leave[0][0]:        # the fingers leave the part
                if not leave_quiet:
                    truth.append((t, leave[0][1]))
                leave.pop(0)
                part = part if leave else None
        elif mode == 'contact':
            # pushing the part centred, then squeezing pads/part: the jaws slow over the last ~1 mm
            w_touch = part['w'] + 2 * part['off']
            frac = (w - w_rest) / (w_touch - w_rest)
            wn = max(w - max(J['v'] * frac, 0.1 * J['v']) * DT, w_rest)
            if w > part['w'] >= wn and not part['quiet']:
                truth.append((t, 'secured'))          # the second jaw arrives: both on it, grip building
            w = wn
            level = J['I_run'] + (J['I_grip'] - J['I_run']) * (1 - frac)
            if w <= w_rest + 1e-9:
                mode, t_clamp, sp, dirn = 'held', t, 0.0, 0
        elif mode == 'held':
            # soft parts creep shut by 0.1-0.4 mm over ~0.3 s; the controller drops to holding current after ~0.5 s
            w = w_rest - part['creep'] * (1 - np.exp(-(t - t_clamp) / 0.1))
            hold = t - t_clamp >= J['hold_delay']
            level = J['I_grip'] * (J['hold_frac'] if hold else 1.0)
            held_I = level
            if part['slip_at'] is not None and t >= part['slip_at']:
                mode = 'slipping'
        elif mode == 'slipping':
            # the part rolls out between the jaws; once it is out, nothing blocks them
            w -= J['slide'] * DT
            level = held_I
            if t >= part['drop_t']:
                truth += [(t, 'dropped'), (t, 'contact_end')]
                part, slipped, mode, target, dirn, vcur, sp = None, True, 'move', 0.0, -1, V_MAX, J['slide']
        else:                                        # at rest; at the end stop it pushes ~0.3 s, then idles
            level = J['I_grip'] if mode == 'stall' and t - t_stall < J['stall_s'] else 0.0
        tau = 0.06 if mode == 'held' else 0.008      # winding time constant; slower ramp into holding mode
        I += (level - I) * min(1.0, DT / tau)
        x = (t - t_ms) / 0.011
        spike = J['spike'] * x * np.exp(1 - x) if 0 <= x < 10 else 0.0   # ~60 ms inrush at motion start
        W[i], V[i], C[i] = w, (w - w_old) / DT, max(I, spike)
    return W, V, C, truth


def _arm_joints(P, load):
    """Joint angles and gravity efforts for tool poses P (n, 3) = pan, reach, height, with payload load (kg)."""
    L1, L2, g = 0.425, 0.392, 9.81
    pan, r, z = P.T
    zw = z + 0.30 - 0.16                             # wrist centre (gripper+wrist 0.30 m) over the shoulder
    c2 = np.clip((r ** 2 + zw ** 2 - L1 ** 2 - L2 ** 2) / (2 * L1 * L2), -1, 1)
    q2 = np.arccos(c2)
    th1 = np.arctan2(zw, r) + np.arctan2(L2 * np.sin(q2), L1 + L2 * c2)   # upper arm elevation
    th12 = th1 - q2                                  # forearm elevation
    # UR-like signs: shoulder_lift negative raises the upper arm; wrist_1 keeps the tool pointing down
    q = np.stack([pan, -th1, q2, -np.pi / 2 + th1 - q2, np.full_like(pan, -np.pi / 2), pan + 0.3], axis=1)
    mt = 2.5 + load                                  # wrist + gripper + payload
    tau = np.zeros_like(q)
    tau[:, 1] = g * (8.4 * L1 / 2 * np.cos(th1) + 2.3 * (L1 * np.cos(th1) + L2 / 2 * np.cos(th12)) + mt * r)
    tau[:, 2] = g * (2.3 * L2 / 2 * np.cos(th12) + mt * (r - L1 * np.cos(th1)))
    tau[:, 3] = g * mt * 0.02
    return q, tau


def _build(rng, seed, scenario):
    shift_h = rng.uniform(0, 4)                      # hours into the shift: the motor has warmed up
    J = dict(I0=rng.uniform(0.25, 0.60), I_run=rng.uniform(0.30, 0.50), spike=rng.uniform(0.7, 1.2),
             hold_frac=rng.uniform(0.6, 0.8), hold_delay=rng.uniform(0.45, 0.6), stall_s=rng.uniform(0.25, 0.35),
             closed_end=rng.uniform(0.0, 0.5), lat=rng.uniform(0.015, 0.04), slide=rng.uniform(5, 20),
             drift=0.15 * rng.uniform(0.6, 1.0) * (1 - np.exp(-shift_h / 0.8)))
    J['v'] = rng.uniform(40, 80) if rng.random() < 0.8 else rng.uniform(20, 150)
    force = rng.uniform(20, 140)                     # grip force set by the job, N
    J['I_grip'] = float(np.clip(0.8 + (force - 20) / 120 * 1.7 + rng.normal(0, 0.05), 0.8, 2.5))
    J['open_w'] = float(rng.integers(40, 71)) if rng.random() < (0.5 if scenario == 'two_parts' else 0.25) \
        else OPEN_MAX
    rec_slip = scenario == 'recovery' and rng.random() < 0.5     # recovery after a slip, else after a miss
    part = _new_part(rng, J, slippery=scenario == 'slip' or rec_slip)
    S = Script(rng, J, (part['pan'] + rng.uniform(-0.8, 0.8), rng.uniform(0.35, 0.6), rng.uniform(0.15, 0.3)))
    S.wait(rng.uniform(0.5, 1.5))
    outcome = {'miss': 'failure', 'slip': 'failure', 'recovery': 'recovery'}.get(scenario, 'success')
    if scenario in ('success', 'bin_drop', 'regrip'):
        _pick(S, part, 'bin' if scenario == 'bin_drop' else 'tray', regrip=scenario == 'regrip')
    elif scenario == 'miss':                         # one or two misses, then the operator gives up
        for _ in range(1 + (rng.random() < 0.4)):
            _miss(S, part)
    elif scenario == 'slip':
        _pick(S, part, slip=True)
    elif scenario == 'recovery':                     # a slip (the part lands on the bench) or a miss, then a pick
        part = _pick(S, part, slip=True) if rec_slip else _miss(S, part) or part
        _pick(S, part, 'tray' if rng.random() < 0.7 else 'bin')
    else:                                            # two_parts: a second part of the same kind
        _pick(S, part, 'tray')
        p2 = dict(part, w=part['w'] + rng.normal(0, 0.2), off=rng.uniform(0.05, 0.5), pan=rng.uniform(-0.6, 0.6),
                  r=rng.uniform(0.35, 0.6), m=part['m'] * rng.uniform(0.95, 1.05))
        _pick(S, p2, 'tray' if rng.random() < 0.75 else 'bin')
    S.hold(max(0.0, S.open_done + 0.2 - S.t))
    S.wait(rng.uniform(0.5, 1.5))
    if S.t < 8.0:
        S.hold(8.0 - S.t + rng.uniform(0, 1.5))
    if S.t > 25.0:
        return None
    T = S.t
    n = int(T / DT) + 1
    J['rx'] = rng.uniform(0.001, 0.004, len(S.presses))        # button -> driver transport delay
    W, _V, C, gtruth = _gripper(J, S.presses, n)
    truth = sorted(S.truth + gtruth, key=lambda e: e[0])
    t0_ns = 1_700_000_000_000_000_000 + int(rng.integers(0, 200 * 86400)) * 1_000_000_000 \
        + int(rng.integers(0, 1_000_000_000))

    def ns(t):
        return t0_ns + np.round(np.asarray(t) * 1e9).astype(np.int64)

    def lose(m, p):                                  # lost messages: rare singles plus an occasional burst
        keep, j = rng.random(m) > p, int(rng.integers(0, m - 6))
        keep[j:j + int(rng.integers(2, 6)) * (rng.random() < 0.3)] = False
        return keep

    # --- gripper driver, 50 Hz on its own (slightly off) clock -------------------------------------------------
    per = 0.02 * (1 + rng.uniform(-1e-4, 1e-4))
    ts = rng.uniform(0, per) + per * np.arange(int((T - 0.02) / per))
    ts_sample = ts + np.clip(rng.normal(0, 4e-4, len(ts)), -1.5e-3, 1.5e-3)   # when the ADC really sampled
    idx = np.clip(np.round(ts_sample / DT).astype(int), 10, n - 1)
    f_mains, ph = 50.0 + rng.uniform(-0.05, 0.05), rng.uniform(0, 2 * np.pi)
    ripple = rng.uniform(0.03, 0.05) * np.sin(2 * np.pi * f_mains * ts_sample + ph)   # aliases to a slow wander
    standby = J['I0'] + J['drift'] + 0.15 * np.exp(-shift_h / 0.8) / 0.8 / 3600 * ts
    cur = np.minimum(standby + C[idx], I_MAX) + ripple + rng.normal(0, 0.06, len(ts))
    pos = np.clip(np.round((W[idx] + rng.normal(0, 0.05, len(ts))) / 0.1) * 0.1, 0.0, OPEN_MAX)
    vel = (W[idx] - W[idx - 10]) / 0.01 + rng.normal(0, 0.5, len(ts))       # encoder difference over 10 ms
    stamp = ts + rng.uniform(2e-4, 1e-3, len(ts))                            # stamped after the read
    keep = lose(len(ts), 0.003)
    grip = {'type': 'sensor_msgs/msg/JointState', 'names': ['width'], 't_ns': ns(stamp[keep]),
            'position': np.round(pos[keep], 1)[:, None], 'velocity': np.round(vel[keep], 2)[:, None],
            'effort': np.round(np.maximum(cur[keep], 0.0), 3)[:, None]}

    # --- arm driver, 125 Hz ------------------------------------------------------------------------------------
    ta = rng.uniform(0, 0.008) + 0.008 * (1 + rng.uniform(-5e-5, 5e-5)) * np.arange(int((T - 0.01) / 0.008))
    ta = ta + np.clip(rng.normal(0, 2e-4, len(ta)), -6e-4, 6e-4)
    load = np.zeros(len(ta))                         # mass the arm carries: from lift-off until supported/let go
    ends = [e[0] for e in truth if e[1] in ('placed', 'dropped', 'released')]
    for tl, m in S.loads:
        load[(ta >= tl) & (ta < min([e for e in ends if e > tl], default=T))] = m
    tremor = sum(a * np.sin(2 * np.pi * f * ta[:, None] + p) for a, f, p in
                 zip(rng.uniform(2e-4, 1e-3, (3, 3)), rng.uniform(0.3, 2.0, (3, 3)), rng.uniform(0, 6.3, (3, 3))))
    tremor[:, 2] = 0.0                                # 3D-mouse jitter in the horizontal plane only
    qs = [_arm_joints(_arm_path(S.way, ta + d) + tremor, load)[0] for d in (-DT, 0.0, DT)]
    q, tau = _arm_joints(_arm_path(S.way, ta) + tremor, load)
    qd, qdd = (qs[2] - qs[0]) / (2 * DT), (qs[2] - 2 * qs[1] + qs[0]) / DT ** 2
    tau = tau + np.array([1.5, 3.0, 1.2, 0.1, 0.1, 0.05]) * qdd + 1.5 * np.tanh(qd / 0.01) * [1, 1, 1, .3, .3, .3]
    tau = tau + rng.normal(0, 1, tau.shape) * [2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
    keep = lose(len(ta), 0.001)
    arm = {'type': 'sensor_msgs/msg/JointState', 'names': list(ARM_JOINTS), 't_ns': ns(ta[keep]),
           'position': (q + rng.normal(0, 2e-5, q.shape))[keep], 'velocity': (qd + rng.normal(0, 2e-3, qd.shape))[keep],
           'effort': tau[keep]}

    # --- command: one Float32 per button press, stamped when received -----------------------------------------
    pr = sorted((t + rx, tgt) for (t, tgt, _), rx in zip(S.presses, J['rx']))
    cmd = {'type': 'std_msgs/msg/Float32', 't_ns': ns([p[0] for p in pr]),
           'data': np.array([p[1] for p in pr], dtype=np.float32)}
    return {'family': FAMILY, 'seed': seed, 'scenario': scenario, 'outcome': outcome,
            'streams': {'/arm/joint_states': arm, '/gripper/joint_states': grip, '/gripper/command': cmd},
            'truth': [(int(t0_ns + round(t * 1e9)), kind) for t, kind in truth]}


def episode(seed: int, scenario: str) -> dict:
    if scenario not in SCENARIOS:
        raise ValueError(f'unknown scenario {scenario!r}; expected one of {SCENARIOS}')
    for attempt in range(100):                       # redraw (deterministically) until the episode is 8-25 s
        rng = np.random.default_rng([int(seed), zlib.crc32(scenario.encode()), attempt])
        ep = _build(rng, seed, scenario)
        if ep is not None:
            return ep
    raise RuntimeError('no episode within 25 s')
