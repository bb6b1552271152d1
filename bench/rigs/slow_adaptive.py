"""Blind rig: slow adaptive two-finger gripper polled at 10 Hz, on a 7-DoF arm with a tared wrist F/T sensor.

Physical model, stepped at 1 kHz, then published as the drivers publish it:
- Arm: a Panda-like 7-DoF chain (modified DH). The teleoperator's moves are rest-to-rest minimum-jerk joint moves
  between IK waypoints, plus a wrist excursion (joints 5-7) during the carry and a small hand wobble while moving.
  Effort = gravity torques of point-mass links + the tool load (m(g - a) of gripper and part, contact forces)
  through the chain; external forces (bumps) also deflect the compliant joints.
- Gripper: one motor through a linkage. Free motion is position-controlled, velocity and acceleration limited (full
  close 1.5-2.5 s, full open 1.0-1.5 s), hard stop at 0.78-0.80 rad. The set-point is the trigger fraction of the
  travel, written by the 10 Hz serial bus driver. On a part the first finger touches and shoves it until the
  second arrives at the proximal stop (0.25-0.65 rad); then the distal wrap creeps 0.02-0.06 rad over 0.3-0.6 s.
  Opening, the fingers leave the part once below the touch angle less the pad relaxation. After a slip the
  unblocked fingers close on to the stop over ~0.5 s.
- Part load on the fingers: ramps in at lift-off (pad compliance), out at set-down (the tray takes it in 30-80 ms)
  and in a slip (20-50 ms).
- Wrist F/T: tared at start-up in the home pose with the gripper on; reads the tool-side load m(g - a) of gripper
  and carried part (z pointing back into the arm, so a hanging weight reads -z), lever torques, bump impulses
  (half-sine, 10-40 N, 50-150 ms), averaged over each 10 ms output period, 0.3 N noise, slow bias drift.
Truth events come from this state, never from the published signals.
"""
import numpy as np

FAMILY = 'slow_adaptive'
SCENARIOS = ('success', 'half_trigger', 'miss', 'slip', 'bump', 'recovery')
DT = 1e-3
NMAX = 40000                                   # 1 kHz log capacity (40 s)
G = np.array([0.0, 0.0, -9.81])
M_GRIP, K_JOINT = 0.9, 2500.0                  # gripper mass (kg), joint stiffness of the compliant arm (N m/rad)
R_GRIP, R_TIP = np.array([0, 0, -.07]), np.array([0, 0, -.20])   # levers in the sensor frame (tool along -z)
# modified DH rows (a_{i-1}, d_i, alpha_{i-1}); the last row is the flange; the TCP is 0.2 m beyond it
DH = np.array([[0, .333, 0], [0, 0, -np.pi/2], [0, .316, np.pi/2], [.0825, 0, np.pi/2],
               [-.0825, .384, -np.pi/2], [0, 0, np.pi/2], [.088, 0, np.pi/2], [0, .107, 0]])
TCP = 0.20
LINK_MASS = np.array([3.5, 3.5, 3.0, 3.0, 2.5, 2.0, 0.8])
HOME = np.array([0, -np.pi/4, 0, -3*np.pi/4, 0, np.pi/2, np.pi/4])
JOINTS = [f'joint_{i}' for i in range(1, 8)]


# ----------------------------------------------------------------------------------------------- kinematics
def fk(q):
    """q (n,7) -> frame origins (n,8,3), joint z axes (n,8,3), TCP (n,3), flange rotation (n,3,3)."""
    n = len(q)
    T, org, zax = np.tile(np.eye(4), (n, 1, 1)), [], []
    th = np.concatenate([q, np.zeros((n, 1))], 1)
    for i, (a, d, al) in enumerate(DH):
        ca, sa, ct, st, z, o = np.cos(al), np.sin(al), np.cos(th[:, i]), np.sin(th[:, i]), np.zeros(n), np.ones(n)
        T = T @ np.stack([np.stack(row, -1) for row in ([ct, -st, z, a*o], [st*ca, ct*ca, -sa*o, -sa*d*o],
                                                         [st*sa, ct*sa, ca*o, ca*d*o], [z, z, z, o])], -2)
        org.append(T[:, :3, 3])
        zax.append(T[:, :3, 2])
    R = T[:, :3, :3]
    return np.stack(org, 1), np.stack(zax, 1), T[:, :3, 3] + TCP*R[:, :, 2], R


def ik(p, R, q):
    """Damped least squares from the seed q to TCP position p and flange rotation R."""
    for _ in range(200):
        _, _, P, Rq = fk(np.vstack([q, q + 1e-6*np.eye(7)]))
        e = np.r_[p - P[0], .5*np.cross(Rq[0], R, axis=0).sum(1)]
        if e @ e < 1e-14:
            return q
        J = np.vstack([(P[1:] - P[0]).T, .5*np.cross(Rq[0][None], Rq[1:], axis=1).sum(2).T]) / 1e-6
        q = q + J.T @ np.linalg.solve(J @ J.T + 1e-4*np.eye(6), e)
    raise RuntimeError('IK did not converge')


def tool_R(yaw, tilt):
    """Tool pointing down, turned by yaw about the vertical and tilted by tilt."""
    cz, sz, ct, st = np.cos(yaw), np.sin(yaw), np.cos(tilt), np.sin(tilt)
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    Ry = np.array([[ct, 0, st], [0, 1, 0], [-st, 0, ct]])
    return Rz @ Ry @ np.diag([1.0, -1.0, -1.0])


def minjerk(x):
    x = np.clip(x, 0, 1)
    return x**3*(10 - 15*x + 6*x*x)


def effort(org, zax, P, F, links=True):
    """Joint torques holding the link weights (point masses at the frame origins) and a force F at the TCP."""
    tau = np.zeros((len(P), 7))
    for i in range(7):
        mom = np.cross(P - org[:, i], F)
        if links:
            mom = mom + np.cross(org[:, i + 1:] - org[:, i:i + 1], LINK_MASS[i:, None]*G).sum(1)
        tau[:, i] = -np.einsum('nj,nj->n', zax[:, i], mom)
    return tau


class Arm:
    """The operator's arm motion: a list of timed joint moves (later ones take over)."""
    def __init__(s, rng):
        s.segs, s.q_end, s.t_end = [], HOME.copy(), 0.0
        s.wob = (rng.uniform(5e-4, 1.5e-3, (4, 7)), rng.uniform(.7, 2.5, (4, 7)), rng.uniform(0, 2*np.pi, (4, 7)))

    def move(s, t0, T, pose=None, q=None, wrist=None):
        t0 = max(t0, s.t_end)
        qb = ik(*pose, s.q_end) if q is None else q
        s.segs.append((t0, T, s.q_end, qb, np.zeros(7) if wrist is None else wrist))
        s.q_end, s.t_end = qb, t0 + T
        return s.t_end

    def sample(s, t):
        q, env = np.tile(HOME, (len(t), 1)), np.zeros(len(t))
        for t0, T, qa, qb, w in s.segs:
            m = t >= t0
            x = minjerk((t[m] - t0)/T)
            q[m] = qa + x[:, None]*(qb - qa) + np.sin(np.pi*x)[:, None]*w
            env[m] = np.sin(np.pi*np.clip((t[m] - t0)/T, 0, 1))**2
        A, f, ph = s.wob
        return q + env[:, None]*(A[None]*np.sin(2*np.pi*f[None]*t[:, None, None] + ph[None])).sum(1)

    def tcp(s, t):
        return fk(s.sample(np.atleast_1d(np.asarray(t, float))))[2]

    def end_pose(s):
        _, _, P, R = fk(s.q_end[None])
        return P[0], R[0]

    def crossing(s, t0, t1, z, rising):
        tt = np.arange(t0, t1 + DT, DT)
        h = s.tcp(tt)[:, 2]
        return float(tt[np.nonzero(h >= z if rising else h <= z)[0][0]])


# ------------------------------------------------------------------------------------------ trigger, gripper
class Trigger:
    """Handheld analogue trigger: operator ramps, thumb tremor when held part-way, 8-bit reading."""
    def __init__(s, rng):
        s.keys = [(0.0, 0.0)]
        s.trem = (rng.uniform(.003, .008), rng.uniform(.5, 3, 3), rng.uniform(0, 2*np.pi, 3))

    def set(s, t, v, ramp):
        s.keys += [(t, s.keys[-1][1]), (t + ramp, v)]

    def value(s, t):
        ts, vs = zip(*s.keys)
        v = np.interp(t, ts, vs)
        a, f, ph = s.trem
        if .05 < v < .95:
            v += a*np.sin(2*np.pi*f*t + ph).mean()
        return float(np.clip(np.round(v*255)/255, 0, 1))


class Gripper:
    """Underactuated finger joint stepped at 1 kHz; its set-point arrives over the 10 Hz serial bus."""
    K = 15.0                                   # position loop gain (1/s)

    def __init__(s, rig):
        s.rig, u = rig, rig.u
        s.qmax = u(.78, .80)
        s.vc, s.vo = s.qmax/u(1.5, 2.5), s.qmax/u(1.0, 1.5)
        s.acc = max(s.vc, s.vo)/.05             # motor reaches speed in ~50 ms
        s.ticks = u(0, .1) + .1*np.arange(NMAX//100) + rig.rng.normal(0, .002, NMAX//100)
        s.d_write, s.k = u(.015, .035), 0
        s.q = s.v = s.target = 0.0
        s.i, s.Q, s.V = 0, np.zeros(NMAX), np.zeros(NMAX)
        s.part, s.mode, s.touched, s.t_rest = None, 'free', False, -1.0

    def run(s, t_max, cond=lambda g: False):
        while s.i*DT < t_max:
            s.step()
            if cond(s):
                break
        return s.i*DT

    def step(s):
        t, r, p = s.i*DT, s.rig, s.part
        while s.ticks[s.k] + s.d_write <= t:    # bus cycle: the trigger's value becomes the set-point
            s.target = r.trig.value(s.ticks[s.k])*(s.qmax + .03)
            s.k += 1
        q0, v0 = s.q, s.v
        if s.mode == 'wrap':
            if s.target < s.q - .005:          # trigger released: the motor backs off
                s.mode, s.v = 'free', 0.0
            elif p['slip_at'] is not None and t >= p['slip_at']:
                r.ev(t, 'dropped'), r.ev(t, 'contact_end')
                s.part, s.mode, s.snap = None, 'snap', (t, s.q, r.u(.4, .6))
            else:                              # distal phalanges wrap: creep, then stay
                x = min(1.0, (t - p['t_w'])/p['T_wrap'])
                s.q = min(p['q_touch'] + p['creep']*(1 - (1 - x)**2), max(s.target, p['q_touch']))
                s.v = (s.q - q0)/DT
        if s.mode == 'snap':                   # no longer blocked: close on to the stop
            t0, qs, T = s.snap
            x = min(1.0, (t - t0)/T)
            s.q = qs + (s.qmax - qs)*x*x*(3 - 2*x)
            s.v = (s.q - q0)/DT
            if x >= 1:
                s.mode, s.v = 'free', 0.0
        elif s.mode == 'free':
            s.free_step(t, r, p, v0)
        if s.mode != 'free':
            s.t_rest = t
        s.Q[s.i], s.V[s.i] = s.q, s.v
        s.i += 1

    def free_step(s, t, r, p, v0):
        vdes = np.clip(s.K*(s.target - s.q), -s.vo, s.vc)
        if abs(s.target - s.q) < 1e-3 and abs(s.v) < .02:
            vdes = s.v = 0.0                   # servo dead band: at rest
        s.v += np.clip(vdes - s.v, -s.acc*DT, s.acc*DT)
        q = s.q + s.v*DT
        if q >= s.qmax:
            q, s.v = s.qmax, 0.0
            if v0 > 0 and not s.touched:
                r.ev(t, 'missed')
        if q <= 0:
            q, s.v = 0.0, 0.0
        if s.v > 0 and v0 == 0 and t - s.t_rest >= .3:   # a stroke starts from rest (not a stop-and-go)
            r.ev(t, 'closing')
            s.touched = False
        if s.v != 0:
            s.t_rest = t
        if p and not p['held'] and s.v > 0:
            if s.q < p['q_first'] <= q:
                r.ev(t, 'contact_begin')
                s.touched, p['t_cb'] = True, t
            if q >= p['q_touch']:              # second finger arrives: proximal stop
                q = p['q_touch']
                r.ev(t, 'secured')
                r.push(p['t_cb'], t)
                p['held'], p['t_w'], s.mode = True, t, 'wrap'
        elif p and p['held'] and q < p['q_touch'] - p['pad']:
            r.ev(t, 'released'), r.ev(t, 'contact_end')
            s.part = None
        s.q = q


# ------------------------------------------------------------------------------------------ rig and operator
class Rig:
    def __init__(s, seed, scenario, tempo):
        s.rng = np.random.default_rng([seed, SCENARIOS.index(scenario)])
        s.tempo, s.truth, s.load, s.forces = tempo, [], [(0.0, 0.0)], []
        s.m_part = s.u(.2, 1.2)
        side = s.u(.03, .06) if scenario in ('slip', 'recovery') else s.rng.normal(0, .008)  # held near its tip
        s.r_part = np.array([side, s.rng.normal(0, .008), -s.u(.17, .21)])
        s.arm, s.trig = Arm(s.rng), Trigger(s.rng)
        s.grip = Gripper(s)
        R0 = fk(HOME[None])[3][0]
        s.yaw0 = np.arctan2(R0[1, 0], R0[0, 0])

    def u(s, lo, hi):
        return float(s.rng.uniform(lo, hi))

    def d(s, lo, hi):                          # operator-paced durations scale with the operator's tempo
        return s.tempo*s.u(lo, hi)

    def ev(s, t, kind):
        s.truth.append((t, kind))

    def pose(s, xy, z, yaw):
        return np.r_[xy, z], tool_R(yaw, s.u(-.1, .1))

    def push(s, t0, t1):                       # first finger shoves the resting part until the second arrives
        R = s.arm.end_pose()[1]
        s.forces.append((t0, t1, .3*s.m_part*9.81*s.rng.choice([-1, 1])*R[:, 0], 'push'))

    def new_part(s, frac):
        creep = s.u(.02, .06)
        q_touch = s.u(.25, min(.65, frac*(s.grip.qmax + .03) - creep - .03))
        return dict(q_touch=q_touch, q_first=q_touch - s.u(.005, .03), creep=creep, T_wrap=s.u(.3, .6),
                    pad=s.u(.003, .01), held=False, slip_at=None, t_w=None, t_cb=None)


def approach(r, t, xy, z, yaw, bump=False):
    t0, T = max(t, r.arm.t_end), r.d(1.6, 2.4)
    t = r.arm.move(t0, T, pose=r.pose(xy, z + r.u(.10, .14), yaw))
    if bump:                                   # the empty gripper knocks a tray edge on the way
        tb = t0 + r.u(.3, .7)*T
        v = (r.arm.tcp(tb + .01) - r.arm.tcp(tb - .01))[0]
        dirn = -v/np.linalg.norm(v) + r.rng.normal(0, .3, 3)
        dirn[2] = abs(dirn[2])
        r.forces.append((tb, tb + r.u(.05, .15), r.u(10, 40)*dirn/np.linalg.norm(dirn), 'bump'))
        r.ev(tb, 'bump')
    return r.arm.move(t, r.d(.9, 1.3), pose=r.pose(xy, z, yaw))


def close(r, t, frac, part):
    t = max(t, r.arm.t_end) + r.d(.2, .6)
    r.trig.set(t, frac, r.u(.08, .25))
    g = r.grip
    g.part = part
    if part is None:
        return g.run(t + 6, lambda g: g.q >= g.qmax)
    return g.run(t + 6, lambda g: g.mode == 'wrap' and g.i*DT >= g.part['t_w'] + g.part['T_wrap'])


def lift(r, t, z):
    t0 = max(t + r.d(.2, .6), r.arm.t_end)
    p, R = r.arm.end_pose()
    t1 = r.arm.move(t0, r.d(.8, 1.2), pose=(p + [0, 0, r.u(.10, .15)], R))
    ta = r.arm.crossing(t0, t1, z + 3e-4, True)
    tlo = r.arm.crossing(t0, t1, z + r.u(.0015, .004), True)   # pads stretched: the part leaves the table
    r.load += [(ta, 0.0), (tlo, 1.0)]
    r.ev(tlo, 'lift_off')
    return t1


def carry(r, t, tray, slip=False):
    xy, z_touch, yaw = tray
    t0, T = max(t, r.arm.t_end), r.d(1.8, 2.8)
    w = np.zeros(7)
    w[4:] = r.u(-.15, .15), r.rng.choice([-1, 1])*r.u(.15, .45), r.rng.choice([-1, 1])*r.u(.3, .8)
    t1 = r.arm.move(t0, T, pose=r.pose(xy, z_touch + r.u(.08, .12), yaw), wrist=w)
    if slip:
        ts = t0 + r.u(.25, .6)*T
        tdrop = ts + r.u(.02, .05)
        r.load += [(ts, 1.0), (tdrop, 0.0)]
        r.grip.part['slip_at'] = tdrop
        return t1, tdrop
    t2 = r.arm.move(t1, r.d(.9, 1.3), pose=r.pose(xy, z_touch - r.u(.001, .003), yaw))
    ttd = r.arm.crossing(t1, t2, z_touch, False)
    tw = ttd + r.u(.03, .08)                   # the tray takes the weight
    r.load += [(ttd, 1.0), (tw, 0.0)]
    r.ev(ttd, 'placed')
    return tw, None


def let_go(r, t, open_to):
    r.trig.set(t, 0.0, r.u(.05, .15))
    return r.grip.run(t + 6, lambda g: g.part is None and g.q <= open_to)


def retreat(r, t):
    t = max(t + r.d(.2, .5), r.arm.t_end)
    p, R = r.arm.end_pose()
    t = r.arm.move(t, r.d(.7, 1.1), pose=(p + [0, 0, r.u(.08, .12)], R))
    if t + 2.3*r.tempo < 19.0:
        t = r.arm.move(t, r.d(1.5, 2.2), q=HOME)
    return t


def script(r, scenario):
    """The operator's episode; returns when the operator is done."""
    first = str(r.rng.choice(['miss', 'slip'])) if scenario == 'recovery' else scenario
    frac = r.u(.6, .8) if scenario == 'half_trigger' else 1.0
    pick = (np.array([r.u(.42, .58), r.u(.12, .28)]), r.u(.10, .16), r.yaw0 + r.u(-.6, .6))
    tray = (np.array([r.u(.38, .55), r.u(-.30, -.14)]), r.u(.10, .17), r.yaw0 + r.u(-.8, .8))
    t = r.u(.3, 1.0)
    if first == 'miss':                        # lined up beside the part
        ang = r.u(0, 2*np.pi)
        t = approach(r, t, pick[0] + r.u(.025, .04)*np.array([np.cos(ang), np.sin(ang)]), *pick[1:])
        t = let_go(r, close(r, t, frac, None) + r.d(.3, 1.0), .2)
        if scenario == 'miss':
            return retreat(r, t)
        t = r.arm.move(t + r.d(.1, .3), r.d(.6, 1.0), pose=r.pose(pick[0], pick[1] + .04, pick[2]))
        t = r.arm.move(t, r.d(.6, .9), pose=r.pose(*pick))
    else:
        t = approach(r, t, *pick, bump=scenario == 'bump')
    t = lift(r, close(r, t, frac, r.new_part(frac)), pick[1])
    t, tdrop = carry(r, t, tray, slip=first == 'slip')
    if tdrop is not None:                      # the trigger stays pulled until the operator reacts
        xy_drop = r.arm.tcp(tdrop)[0][:2]
        t = let_go(r, tdrop + r.u(.5, 2.0), .2)
        if scenario == 'slip':
            return retreat(r, t)
        pick = (xy_drop + r.rng.normal(0, .01, 2), r.u(.10, .16), r.yaw0 + r.u(-.6, .6))
        t = lift(r, close(r, approach(r, t, *pick), frac, r.new_part(frac)), pick[1])
        t, _ = carry(r, t, tray)
    return retreat(r, let_go(r, t + r.u(.05, .5), 1.0))


# ------------------------------------------------------------------------------------------------ publishing
def wrench_1k(r, t, P, R):
    """Tared wrist wrench at 1 kHz in the sensor frame, and the world force the tool puts on the flange."""
    a = np.gradient(np.gradient(P, DT, axis=0), DT, axis=0)
    Rs = R @ np.diag([1.0, -1.0, -1.0])        # sensor z points back into the arm
    frac = np.interp(t, *np.array(r.load).T)
    Fext = np.zeros_like(P)
    for t0, t1, F, kind in r.forces:
        m = (t >= t0) & (t < t1)
        shape = np.sin(np.pi*(t[m] - t0)/(t1 - t0)) if kind == 'bump' else np.ones(m.sum())
        Fext[m] += shape[:, None]*F
    F = Tq = 0.0
    for Fw, lever in ((M_GRIP*(G - a), R_GRIP), (r.m_part*frac[:, None]*(G - a), r.r_part), (Fext, R_TIP)):
        Fs = np.einsum('nji,nj->ni', Rs, Fw)
        F, Tq = F + Fs, Tq + np.cross(lever, Fs)
    Ftool = (M_GRIP + r.m_part*frac)[:, None]*(G - a) + Fext
    return F - F[0], Tq - Tq[0], Ftool, Fext    # tared at start-up, at rest in the home pose


def outcome_of(kinds):
    """success: the part's last fate is a set-down let go; recovery: after a miss or a drop."""
    fate = [k for k in kinds if k in ('lift_off', 'placed', 'released', 'dropped')]
    if fate[-2:] != ['placed', 'released']:
        return 'failure'
    return 'recovery' if {'missed', 'dropped'} & set(kinds) else 'success'


def publish(r, T, seed, scenario):
    """Sample the 1 kHz state as the drivers publish it, on an epoch clock."""
    rng, n = r.rng, int(round(T/DT))
    t = np.arange(n)*DT
    q = r.arm.sample(t)
    org, zax, P, R = fk(q)
    F, Tq, Ftool, Fext = wrench_1k(r, t, P, R)
    tau = effort(org, zax, P, Ftool)
    q = q - effort(org, zax, P, Fext, links=False)/K_JOINT          # compliant joints give under contact
    qd = np.gradient(q, DT, axis=0)
    base = np.int64(1_700_000_000_000_000_000) + np.int64(rng.integers(0, 10**16))
    ns = lambda x: base + np.round(np.asarray(x)*1e9).astype(np.int64)
    noise = lambda sd, shape: rng.normal(0, sd, shape)

    def stamped(typ, ts, lag):                 # header stamp; received 1-3 ms later
        st = ns(ts + lag)
        return {'type': typ, 't_ns': st, 'received_ns': st + rng.integers(1_000_000, 3_000_001, len(st))}

    def clock(period, start):                  # a 100 Hz driver's sample times, i (1 kHz index)
        ts = r.u(start, start + period) + period*np.arange(int(T/period) + 1)
        ts = ts[ts < T - .05]
        return ts, np.round(ts/DT).astype(int)

    ts, i = clock(.01, 0.0)
    arm = stamped('sensor_msgs/msg/JointState', ts, noise(2e-4, len(ts)))
    arm.update(names=list(JOINTS), position=q[i] + noise(2e-5, (len(i), 7)),
               velocity=qd[i] + noise(1e-3, (len(i), 7)), effort=tau[i] + noise(.05, (len(i), 7)))
    ts, i = clock(.01, .01)
    keep = rng.random(len(ts)) > .002          # rare lost messages
    ts, i = ts[keep], i[keep]
    cF, cT = np.cumsum(F, 0), np.cumsum(Tq, 0)  # each output averages the sensor's last 10 ms
    ft = stamped('geometry_msgs/msg/WrenchStamped', ts, noise(2e-4, len(ts)))
    ft.update(frame_id='wrist_ft', torque=(cT[i] - cT[i - 10])/10 + noise(.01, (len(i), 3)),
              force=(cF[i] - cF[i - 10])/10 + np.cumsum(noise(.003, (len(i), 3)), 0) + noise(.3, (len(i), 3)))
    g = r.grip
    ticks = g.ticks[(g.ticks > .03) & (g.ticks < T - .08)]
    cmd = {'type': 'std_msgs/msg/Float64', 't_ns': ns(ticks + rng.uniform(.001, .004, len(ticks))),
           'data': np.array([r.trig.value(tk) for tk in ticks])}
    ticks = ticks[rng.random(len(ticks)) > .015]                # serial poll time-outs
    tm = ticks + rng.uniform(.02, .03) + noise(.003, len(ticks))  # when the gripper answers the poll
    i = np.round(tm/DT).astype(int)
    cV = np.concatenate([[0.0], np.cumsum(g.V[:n])])
    grip = stamped('sensor_msgs/msg/JointState', tm, rng.uniform(.008, .015, len(tm)))
    grip.update(names=['finger_joint'], position=(g.Q[i] + noise(.002, len(i)))[:, None], effort=None,
                velocity=np.degrees((cV[i] - cV[i - 20])/20 + noise(.005, len(i)))[:, None])  # the deg/s quirk
    truth = sorted(((ns(tt).item(), k) for tt, k in r.truth), key=lambda e: e[0])
    return {'family': FAMILY, 'seed': seed, 'scenario': scenario, 'outcome': outcome_of([k for _, k in truth]),
            'streams': {'/arm/joint_states': arm, '/wrist/wrench': ft, '/gripper/command': cmd,
                        '/gripper/joint_states': grip}, 'truth': truth}, int(base)


def _episode(seed, scenario):
    tempo = np.random.default_rng([seed, SCENARIOS.index(scenario), 1]).uniform(.75, 1.3)   # operator's pace
    while True:                                # hurried when the episode would run past ~20 s
        r = Rig(seed, scenario, tempo)
        t_end = script(r, scenario)
        if t_end <= 19.2 or tempo < .6:
            break
        tempo *= .85
    T = max(t_end + .3, min(20.0, max(10.0, t_end + r.u(.5, 3.0))))
    r.grip.run(T)
    return publish(r, T, seed, scenario)


def episode(seed, scenario):
    return _episode(seed, scenario)[0]


# -------------------------------------------------------------------------------------------------- self-check
def _check(ep):
    assert ep['family'] == FAMILY and ep['scenario'] in SCENARIOS and isinstance(ep['seed'], int)
    assert ep['outcome'] in ('success', 'failure', 'recovery')
    for name, s in ep['streams'].items():
        t = s['t_ns']
        assert t.dtype == np.int64 and np.all(np.diff(t) > 0) and 1.6e18 < t[0] < 1.8e18, name
        assert 'received_ns' not in s or np.all(s['received_ns'] > t), name
        if s['type'].endswith('JointState'):
            assert s['position'].shape == (len(t), len(s['names'])), name
            assert s['velocity'] is None or s['velocity'].shape == s['position'].shape, name
            assert s['effort'] is None or s['effort'].shape == s['position'].shape, name
        elif s['type'].endswith('WrenchStamped'):
            assert s['force'].shape == s['torque'].shape == (len(t), 3) and isinstance(s['frame_id'], str)
        else:
            assert s['data'].shape == t.shape
    tt = [t for t, _ in ep['truth']]
    assert tt == sorted(tt) and all(isinstance(t, int) for t in tt)
    gs = ep['streams']['/gripper/joint_states']
    assert -.01 < gs['position'].min() and gs['position'].max() < .81
    assert 10 < np.abs(gs['velocity']).max() < 150, 'velocity column should be deg/s'
    kinds = [k for _, k in ep['truth']]
    for j, k in enumerate(kinds):               # placed before released, and every set-down is let go
        if k == 'released':
            assert [x for x in kinds[:j] if x in ('placed', 'lift_off')][-1] == 'placed'
        if k == 'placed':
            assert 'released' in kinds[j:]
    assert 'dropped' not in kinds or ep['scenario'] in ('slip', 'recovery')
    expect = {'miss': 'failure', 'slip': 'failure', 'recovery': 'recovery'}.get(ep['scenario'], 'success')
    assert ep['outcome'] == expect, (ep['scenario'], ep['outcome'])


if __name__ == '__main__':
    for sc in SCENARIOS:
        for seed in range(3):
            ep, t0 = _episode(seed, sc)
            _check(ep)
            dur = max(s['t_ns'][-1] for s in ep['streams'].values()) - t0
            counts = ' '.join(f'{k}={len(s["t_ns"])}' for k, s in ep['streams'].items())
            print(f'{sc:12s} seed {seed}  {dur/1e9:5.1f} s  {ep["outcome"]:8s}  {counts}')
            print('    ' + ', '.join(f'{(t - t0)/1e9:.3f} {k}' for t, k in ep['truth']))
    print('self-check OK')
