#!/usr/bin/env python3
"""Build the compact real-robot demonstration files in bench/real_demos/.

Each output .npz holds:
  names       array of joint-name strings (column order of every q_<i>)
  gripper     the names in `names` that are the gripper or hand (their own units), '' if none
  units       0-d string: units of the q columns
  rate_hz     0-d float: nominal sample rate kept in the file
  source      0-d string: repo@commit:path the data came from
  t_<i>       float64 (n,) seconds from the start of episode i
  q_<i>       float64 (n, len(names)) measured joint positions, units as recorded
plus a few dataset-specific extras documented in README.md (e.g. episode_group,
gripper_cmd_<i>).

Usage (SRC is either the bare git mirror, read at the pinned commit with
`git show`, or a plain directory holding the repository's files):

  .venv/bin/python bench/real_demos/make_npz.py ur5e_kinesthetic_task1 \
      /work/.mirror/PabloDArandaR+encode-task-impedance-from-demonstration/repo
  PYTHONPATH=/path/with/h5py .venv/bin/python bench/real_demos/make_npz.py \
      fr3_stack_cubes /work/.mirror/janfrischi+franka_trajectory_recorder/repo
  .venv/bin/python bench/real_demos/make_npz.py lingzu_open50 \
      /work/.mirror/yipiandanxinxiangyangkai+open_50/repo

fr3_stack_cubes needs h5py (not in the project venv); install it anywhere with
`pip install --target /tmp/h5lib h5py` and put that on PYTHONPATH (delete the
numpy copy pip drops there so the venv's numpy is used).
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class Source:
    """Read files from a bare git dir (at a commit) or from a plain directory."""

    def __init__(self, path: str, commit: str):
        self.path = path
        self.commit = commit
        self.is_git = os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(
            os.path.join(path, "objects"))

    def read(self, rel: str) -> bytes:
        if self.is_git:
            return subprocess.run(
                ["git", "--git-dir", self.path, "show", f"{self.commit}:{rel}"],
                check=True, capture_output=True).stdout
        with open(os.path.join(self.path, rel), "rb") as fh:
            return fh.read()

    def list(self, rel_dir: str) -> list[str]:
        if self.is_git:
            out = subprocess.run(
                ["git", "--git-dir", self.path, "ls-tree", "--name-only",
                 f"{self.commit}:{rel_dir}"],
                check=True, capture_output=True, text=True).stdout
            return [ln for ln in out.splitlines() if ln]
        return sorted(os.listdir(os.path.join(self.path, rel_dir)))


def save(out_path: str, meta: dict, eps: list[tuple[np.ndarray, np.ndarray]], extra=None):
    arrs = {k: np.asarray(v) for k, v in meta.items()}
    for i, (t, q) in enumerate(eps):
        arrs[f"t_{i}"] = np.asarray(t, dtype=np.float64)
        arrs[f"q_{i}"] = np.asarray(q, dtype=np.float64)
    arrs["n_episodes"] = np.asarray(len(eps))
    if extra:
        arrs.update(extra)
    np.savez_compressed(out_path, **arrs)
    print(f"wrote {out_path}: {len(eps)} episodes, {os.path.getsize(out_path)} bytes")


# --------------------------------------------------------------------------
# 1. UR5e kinesthetic demonstrations (SDU course project), task_1, 17 demos
# --------------------------------------------------------------------------
UR_COMMIT = "3ff129858a216c2eba7716a01ae471c1cdb0f78f"
UR_DIR = "resources/training_data/task_1"


def make_ur5e(src_path: str, out: str):
    src = Source(src_path, UR_COMMIT)
    files = [f for f in src.list(UR_DIR) if f.endswith(".npy")]
    files.sort(key=lambda f: int(f[:-4]))
    eps, ids = [], []
    for f in files:
        a = np.load(io.BytesIO(src.read(f"{UR_DIR}/{f}")))
        # 37 columns: tcp pose(6) tcp speed(6) tcp force(6) actual_q(6) actual_qd(6)
        # ft wrench(6) unix time(1). actual_q = RTDE getActualQ, radians.
        t = a[:, 36] - a[0, 36]
        q = a[:, 18:24]
        eps.append((t, q))
        ids.append(f[:-4])
    names = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
             "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
    meta = dict(names=np.array(names), gripper=np.array(""), units=np.array("rad"),
                rate_hz=np.array(100.0),
                source=np.array(f"PabloDArandaR/encode-task-impedance-from-demonstration@{UR_COMMIT}:{UR_DIR}"))
    save(os.path.join(out, "ur5e_kinesthetic_task1.npz"), meta, eps,
         {"episode_file": np.array(ids)})


# --------------------------------------------------------------------------
# 2. Franka FR3 teleop/free-drive "stack cubes" demos, 15 + 12 demos
# --------------------------------------------------------------------------
FR3_COMMIT = "f151224220a51ab65718266f0741cf8b7f4b9b6a"
FR3_FILES = ["trajectories/dataset_04_06.hdf5", "trajectories/dataset_new.hdf5"]


def make_fr3(src_path: str, out: str):
    try:
        import h5py
    except ImportError:
        sys.exit("fr3_stack_cubes needs h5py on PYTHONPATH (see module docstring)")
    src = Source(src_path, FR3_COMMIT)
    eps, groups, gcmd, cubes = [], [], {}, []
    for rel in FR3_FILES:
        f = h5py.File(io.BytesIO(src.read(rel)), "r")
        data = f["data"]
        for k in sorted(data.keys(), key=lambda s: int(s.split("_")[1])):
            d = data[k]
            q = d["obs/joint_pos"][:].astype(np.float64)  # /joint_states, rad
            t = np.arange(len(q)) * 0.05  # recorder samples on a 20 Hz ROS timer
            i = len(eps)
            eps.append((t, q))
            gcmd[f"gripper_cmd_{i}"] = d["obs/actions"][:, 7].astype(np.float64)
            cpos = d["obs/cube_positions"][0].astype(np.float64)
            cubes.append(cpos)
            groups.append(f"{os.path.basename(rel)}/{k}")
    names = [f"fr3_joint{j}" for j in range(1, 8)]
    meta = dict(names=np.array(names), gripper=np.array(""), units=np.array("rad"),
                rate_hz=np.array(20.0),
                source=np.array(f"janfrischi/franka_trajectory_recorder@{FR3_COMMIT}:" + ",".join(FR3_FILES)))
    extra = dict(gcmd)
    extra["episode_group"] = np.array(groups)
    extra["cube_positions"] = np.array(cubes)  # (n_eps, 9) configured xyz of cubes 1-3
    # layout_id: episodes with identical configured cube positions share an id (0 = first seen)
    seen: dict = {}
    extra["layout_id"] = np.array(
        [seen.setdefault(tuple(np.round(c, 3)), len(seen)) for c in cubes])
    save(os.path.join(out, "fr3_stack_cubes.npz"), meta, eps, extra)


# --------------------------------------------------------------------------
# 3. "lingzu" dual-arm + dexterous-hand teleoperation, LeRobot v3, 50 eps
# --------------------------------------------------------------------------
LZ_COMMIT = "6fbd8285973055ac1934f6bf73059dc1bbcbdd36"


def make_lingzu(src_path: str, out: str):
    import json

    import pyarrow.parquet as pq
    src = Source(src_path, LZ_COMMIT)
    info = json.loads(src.read("meta/info.json"))
    all_names = info["features"]["state"]["names"]
    keep = [i for i, n in enumerate(all_names)
            if n.startswith("right.") or n.startswith("right_hand.")]
    files = [f for f in src.list("data/chunk-000") if f.endswith(".parquet")]
    eps, ep_idx = [], []
    for f in sorted(files):
        tab = pq.read_table(io.BytesIO(src.read(f"data/chunk-000/{f}")))
        epi = np.asarray(tab.column("episode_index").to_pylist())
        s = np.asarray(tab.column("state").to_pylist(), dtype=np.float64)
        ts = np.asarray(tab.column("timestamp").to_pylist(), dtype=np.float64)
        for e in np.unique(epi):
            m = epi == e
            eps.append((ts[m] - ts[m][0], s[m][:, keep]))
            ep_idx.append(int(e))
    order = np.argsort(ep_idx)
    eps = [eps[i] for i in order]
    names = [all_names[i] for i in keep]
    meta = dict(names=np.array(names), gripper=np.array([n for n in names if n.startswith("right_hand.")]),
                units=np.array("deg (arm joints, as recorded); right_hand.*: raw 0-255 hand units"),
                rate_hz=np.array(float(info["fps"])),
                source=np.array(f"yipiandanxinxiangyangkai/open_50@{LZ_COMMIT}:data/chunk-000"))
    save(os.path.join(out, "lingzu_open50.npz"), meta, eps,
         {"episode_index": np.array(sorted(ep_idx))})


MAKERS = {"ur5e_kinesthetic_task1": make_ur5e, "fr3_stack_cubes": make_fr3,
          "lingzu_open50": make_lingzu}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", choices=sorted(MAKERS))
    ap.add_argument("src", help="bare git mirror dir or plain copy of the repo")
    ap.add_argument("--out", default=HERE)
    a = ap.parse_args()
    MAKERS[a.dataset](a.src, a.out)


if __name__ == "__main__":
    main()
