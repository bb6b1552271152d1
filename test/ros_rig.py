"""Real processes for ROS tests: the recorder node, a rig publishing at real rates, a service client.

Every test gets its own DDS domain (and localhost-only discovery) so tests never hear each other.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from test.profiles import PROFILE, ROOT

__all__ = ['PROFILE', 'ROOT', 'Client', 'client', 'new_domain', 'rig_published', 'ros_env', 'start_recorder',
           'start_rig', 'stop_process']



def ros_env(domain: int) -> dict[str, str]:
    return {**os.environ, 'ROS_DOMAIN_ID': str(domain), 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
            'PYTHONUNBUFFERED': '1'}


def new_domain() -> int:
    return random.randint(1, 200)


def start_recorder(domain: int, dataset: Path, *extra: str, log: Path | None = None) -> subprocess.Popen:
    args = [sys.executable, '-m', 'ros_robodata.nodes.recorder_node', '--ros-args', '-p', f'profile:={PROFILE}',
            '-p', f'dataset:={dataset}', '-p', 'task:=pick_cube', '-p', 'operator:=tester', *extra]
    out = open(log, 'w') if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    # its own process group: a test can kill the recorder with its writer process, as power loss would
    return subprocess.Popen(args, env=ros_env(domain), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def start_rig(domain: int, seconds: float, *extra: str) -> subprocess.Popen:
    args = [sys.executable, str(ROOT / 'bench' / 'rig_load.py'), '--seconds', str(seconds), '--warmup', '0.5',
            '--cameras', '1', '--width', '160', '--height', '120', '--lidar-points', '2000', *extra]
    return subprocess.Popen(args, env=ros_env(domain), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rig_published(rig: subprocess.Popen, timeout: float = 60) -> dict[str, int]:
    out, err = rig.communicate(timeout=timeout)
    assert rig.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])['published']


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 20) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class Client:
    """Calls the recorder's services and hears its episode events, from the test process."""

    def __init__(self, domain: int) -> None:
        os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('test_client', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.events: list[Any] = []
        from ros_robodata.msg import EpisodeEvent

        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(EpisodeEvent, '/robodata/episode_events', self.events.append, qos)
        self._clients: dict[str, Any] = {}

    def call(self, srv_type: Any, name: str, request: Any = None, timeout: float = 20.0) -> Any:
        client = self._clients.get(name) or self.node.create_client(srv_type, name)
        self._clients[name] = client
        deadline = time.monotonic() + timeout
        while not client.service_is_ready():
            assert time.monotonic() < deadline, f'service {name} never appeared'
            self.executor.spin_once(timeout_sec=0.1)
        future = client.call_async(request if request is not None else srv_type.Request())
        while not future.done():
            assert time.monotonic() < deadline, f'no reply from {name}'
            self.executor.spin_once(timeout_sec=0.1)
        return future.result()

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.05)

    def replay(self, bag: Path, publishers: dict[str, Any], *, every: int = 50, pause: float = 0.005) -> None:
        """Publish the bag's messages on `publishers`' topics (their bytes, in the bag's order) as fast as DDS
        takes them, spinning `pause` s every `every` messages: several times faster than real time."""
        from ros_robodata.bag.reader import BagReader

        with BagReader(bag) as reader:
            for i, message in enumerate(reader.messages(list(publishers))):
                publishers[message.topic].publish(bytes(message.data))
                if i % every == 0:
                    self.spin_for(pause)

    def wait_subscribed(self, publishers: Any, process: subprocess.Popen, log: Path, who: str, *,
                        subscribers: int = 1, timeout: float = 30.0) -> None:
        """Spin until every publisher has `subscribers` subscriptions: the process under test (`who`, its log
        quoted on failure) found them; it must not have exited meanwhile."""
        deadline = time.monotonic() + timeout
        while not all(p.get_subscription_count() >= subscribers for p in publishers):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f'{who} never subscribed: ' + log.read_text()
            self.spin_for(0.1)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@contextmanager
def client(domain: int) -> Iterator[Client]:
    c = Client(domain)
    try:
        yield c
    finally:
        c.close()

