"""The recorder under a full rig load (three VGA cameras, a LiDAR, 500 Hz joints and wrench) into a dataset disk that
fills mid-episode, on a real small file system (a tmpfs this script mounts: run as root).

What a team at the rig checks, in order:
- the keys screen / /diagnostics warned (`robodata recorder disk`) before the disk filled, and how long before;
- the episode the full disk cut short is `incomplete` on disk once space returns, without a manual repair;
- the next episode records `complete`;
- `robodata repair` on a disk without room for the rewrite says how much it needs and changes no file; with room
  it makes the bag whole.

Usage:  .venv/bin/python bench/disk_fill.py [--disk-mib 600] [--seconds 40]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from bench.record_throughput import PROFILE, ServiceClient, env_for  # noqa: E402
from ros_robodata.dataset import Dataset  # noqa: E402
from ros_robodata.record.keys_screen import DISK_STATUS  # noqa: E402
from ros_robodata.srv import StartEpisode  # noqa: E402

BALLAST_MIB = 120  # freed after the disk filled: the room an operator makes by deleting something


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob('*')) if p.is_file()}


def _fill(disk: Path, name: str, leave_bytes: int) -> Path:
    path = disk / name
    with path.open('wb') as f:
        f.write(bytes(max(0, shutil.disk_usage(disk).free - leave_bytes)))
    return path


class DiskWatch:
    """Every `robodata recorder disk` status and storage error the recorder published, with its time."""

    def __init__(self, client: ServiceClient) -> None:
        self.seen: list[tuple[float, int, str]] = []
        self.lock = threading.Lock()
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
        client.node.create_subscription(DiagnosticArray, '/diagnostics', self._on, qos)

    def _on(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            level = status.level[0] if isinstance(status.level, bytes) else int(status.level)
            if status.name == DISK_STATUS or 'storage error' in status.message:
                with self.lock:
                    self.seen.append((time.monotonic(), level, status.message))


def spin_while(client: ServiceClient, proc: subprocess.Popen) -> None:
    while proc.poll() is None:
        client.executor.spin_once(timeout_sec=0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--disk-mib', type=int, default=600, help='size of the dataset disk (default 600 MiB)')
    parser.add_argument('--seconds', type=float, default=40.0, help='seconds of rig load in the first episode')
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix='robodata_disk_fill_'))
    disk = work / 'disk'
    disk.mkdir()
    mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={args.disk_mib}m', 'tmpfs', str(disk)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        print(f'== disk_fill: not run: cannot mount a small file system here ({mounted.stderr.strip()}); '
              'run as root ==')
        shutil.rmtree(work, ignore_errors=True)
        return 0
    results: list[tuple[str, bool, str]] = []
    try:
        results = run(work, disk, args)
    finally:
        subprocess.run(['umount', '-l', str(disk)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    print(f'== disk_fill: recorder under rig load into a {args.disk_mib} MiB disk that fills ==')
    for name, met, figure in results:
        print(f'  {name}: {figure}: {"met" if met else "NOT met"}')
    print(f'  {sum(m for _, m, _ in results)} of {len(results)} targets met')
    return 0


def run(work: Path, disk: Path, args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    dataset_root = disk / 'ds'
    ballast = disk / 'ballast'
    ballast.write_bytes(bytes(BALLAST_MIB << 20))
    domain = random.randint(1, 200)
    log_path = work / 'recorder.log'
    log = log_path.open('w')
    recorder = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'record', '--profile', str(PROFILE),
                                 '--dataset', str(dataset_root), '--task', 'bench'],
                                env=env_for(domain, receiver=True, recorder=True), stdout=log,
                                stderr=subprocess.STDOUT)
    client = ServiceClient(domain)
    watch = DiskWatch(client)
    results: list[tuple[str, bool, str]] = []
    try:
        client.call(Trigger, '/recorder/stop_episode', Trigger.Request())
        first = client.call(StartEpisode, '/recorder/start_episode', StartEpisode.Request()).episode_id
        t0 = time.monotonic()
        load = subprocess.Popen([sys.executable, str(HERE / 'rig_load.py'), '--seconds', str(args.seconds)],
                                env=env_for(domain), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        spin_while(client, load)
        client.executor.spin_once(timeout_sec=1.0)
        with watch.lock:
            seen = list(watch.seen)
        error_at = next((t for t, _, text in seen if 'storage error' in text), None)
        warned_at = next((t for t, level, text in seen if level >= 1 and 'nearly full' in text), None)
        if error_at is None:
            results.append(('the disk filled during the episode', False, 'no storage error reported'))
            return results
        results.append(('the disk filled during the episode', True, f'storage error {error_at - t0:.1f} s in'))
        ahead = None if warned_at is None else error_at - warned_at
        results.append(('warned before the disk filled', ahead is not None and ahead > 0,
                        'never warned' if ahead is None else f'{ahead:.1f} s before (disk_warn_s 120 at the '
                        'rig rate: the whole disk held less than that, so from the first measured rate)'))
        ballast.unlink()  # the operator frees space
        deadline = time.monotonic() + 15
        status = None
        while time.monotonic() < deadline:
            status = Dataset.open(dataset_root).episode(first).status
            if status != 'recording':
                break
            client.executor.spin_once(timeout_sec=0.5)
        results.append(('the cut-short episode is incomplete once space returns', status == 'incomplete',
                        f'{first}: {status}'))
        second = client.call(StartEpisode, '/recorder/start_episode', StartEpisode.Request()).episode_id
        short = subprocess.Popen([sys.executable, str(HERE / 'rig_load.py'), '--seconds', '4', '--cameras', '1',
                                  '--lidar-hz', '2'], env=env_for(domain), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        spin_while(client, short)
        client.call(Trigger, '/recorder/stop_episode', Trigger.Request())
        deadline = time.monotonic() + 15  # the reply comes as the writer closes the bag; episode.yaml follows
        while (status2 := Dataset.open(dataset_root).episode(second).status) == 'recording' \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        results.append(('the next episode records complete', status2 == 'complete', f'{second}: {status2}'))
    finally:
        client.close()
        recorder.send_signal(2)
        recorder.wait(120)
        log.close()
    # repair with no room for the rewrite, then with room
    filler = _fill(disk, 'filler', leave_bytes=1 << 20)
    before = _hashes(dataset_root)
    done = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'repair', str(dataset_root)],
                          capture_output=True, text=True, timeout=300)
    said = (done.stdout + done.stderr).strip().splitlines()
    needs = [line for line in said if 'needs about' in line]
    unchanged = _hashes(dataset_root) == before and not list(disk.rglob('*.repairing'))
    results.append(('repair without room says what it needs and changes nothing',
                    done.returncode in (1, 3) and len(needs) == 1 and 'nothing was changed' in needs[0] and unchanged,
                    f'exit {done.returncode}, files unchanged {unchanged}: '
                    + (needs[0].split(': ', 1)[-1] if needs else f'(not said: {said[-1:]})')))
    filler.unlink()
    # The rewrite needs room for a second copy of the bag: as a user would, copy the dataset to a disk with room.
    roomy = work / 'ds_copy'
    shutil.copytree(dataset_root, roomy)
    done = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'repair', str(roomy)],
                          capture_output=True, text=True, timeout=600)
    episode = Dataset.open(roomy).episode(first)
    verified = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'verify', str(roomy)],
                              capture_output=True, text=True, timeout=600)
    results.append(('repair on a disk with room makes the bag whole', done.returncode == 0
                    and verified.returncode == 0, f'repair exit {done.returncode}, verify exit {verified.returncode}, '
                    f'{first}: {episode.status}'))
    return results


if __name__ == '__main__':
    sys.exit(main())
