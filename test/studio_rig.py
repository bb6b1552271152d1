"""A capture studio's sensors as a process of its own, the way a rig runs its drivers: a camera seeing a face (its
frames and CameraInfo), a lux meter and a rangefinder, on config/dds/fastdds_rig.xml as docs/recording.md asks of
every driver. On Fast DDS's defaults a VGA frame does not fit the shared-memory segment, and on a busy computer the
frames and the small messages published beside them are lost (a 2 s take on a loaded 2-core computer got none of
18 frames, or no CameraInfo and no range): a best-effort subscriber never sees them, a reliable one seconds late.

The test says what to publish, a line on stdin each: `lux 50`, `range 1.5`, `frame` (the frame and its
CameraInfo). The rig prints `subscribed` once each of its topics has a subscriber, and ends at the end of stdin.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata.paths import config_path
from ros_robodata.record.host_check import PROFILE_ENV, RIG_PROFILE
from test.profiles import ROOT
from test.ros_rig import ros_env, stop_process

__all__ = ['StudioRig']

TOPICS = ('/illuminance', '/range', '/camera/image_raw', '/camera/camera_info')
SUBSCRIBED_S = 60.0  # the longest the rig waits for the session to subscribe


class StudioRig:
    """The studio's process (`python -m test.studio_rig`), publishing `frame` (HxWx3 BGR) with intrinsics `k`.

    Args:
        domain: the test's ROS domain.
        frame: the camera's frame.
        k: its CameraInfo K (9 numbers).
        folder: where the frame is handed over (the test's tmp_path).
    """

    def __init__(self, domain: int, frame: np.ndarray, k: list[float], folder: Path) -> None:
        path = folder / 'studio_frame.npy'
        np.save(path, frame)
        env = {**ros_env(domain), PROFILE_ENV[0]: str(config_path(RIG_PROFILE))}
        self.proc = subprocess.Popen([sys.executable, '-m', 'test.studio_rig', str(path), *map(str, k)], env=env,
                                     cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.output = ''
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output += line

    def wait_subscribed(self, session: subprocess.Popen, log: Path, spin: Any, timeout: float = 30.0) -> None:
        """Spin until the session subscribed to every topic of the rig; the session must not have exited."""
        deadline = time.monotonic() + timeout
        while 'subscribed' not in self.output:
            assert session.poll() is None, log.read_text()
            assert self.proc.poll() is None, f'the studio rig ended: {self.output}'
            assert time.monotonic() < deadline, f'the shot list never subscribed to {TOPICS}: {log.read_text()}'
            spin(0.1)

    def publish(self, *what: str) -> None:
        """Publish each of `what` ('lux 50', 'range 1.5', 'frame') once, in order."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(''.join(f'{line}\n' for line in what))
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()  # end of input ends the rig
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            stop_process(self.proc)


def main(argv: list[str]) -> int:
    import rclpy
    from sensor_msgs.msg import CameraInfo, Illuminance, Image, Range

    frame = np.load(argv[0])
    height, width = frame.shape[:2]
    image = Image(height=height, width=width, encoding='bgr8', step=width * 3, data=frame.tobytes())
    info = CameraInfo(height=height, width=width, k=[float(v) for v in argv[1:10]])
    rclpy.init()
    node = rclpy.create_node('studio_rig')
    lux = node.create_publisher(Illuminance, TOPICS[0], 10)
    distance = node.create_publisher(Range, TOPICS[1], 10)
    camera = node.create_publisher(Image, TOPICS[2], 10)
    camera_info = node.create_publisher(CameraInfo, TOPICS[3], 10)
    deadline = time.monotonic() + SUBSCRIBED_S
    while not all(p.get_subscription_count() >= 1 for p in (lux, distance, camera, camera_info)):
        if time.monotonic() > deadline:  # the test gave up: no process left behind
            print(f'no subscriber to every one of {TOPICS} within {SUBSCRIBED_S:g} s', flush=True)
            return 1
        time.sleep(0.05)
    print('subscribed', flush=True)
    for line in sys.stdin:
        word, _, value = line.strip().partition(' ')
        if word == 'lux':
            lux.publish(Illuminance(illuminance=float(value)))
        elif word == 'range':
            distance.publish(Range(range=float(value)))
        elif word == 'frame':
            camera_info.publish(info)
            camera.publish(image)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
