"""The live quality monitor on real DDS: a NaN joint and a collision show up while they happen, a topic that
stops is reported silent, and the summary reaches /diagnostics and /robodata/quality."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rclpy.qos import QoSProfile, ReliabilityPolicy

from ros_robodata.bag.reader import BagReader
from ros_robodata.profile import load_profile
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.to_bag import write_sim_episode
from test.ros_rig import PROFILE, client, new_domain, ros_env, stop_process


def test_monitor_reports_faults_live_and_silence_after(tmp_path: Path) -> None:
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    from visualization_msgs.msg import MarkerArray

    from ros_robodata.msg import QualityStatus

    profile = load_profile(PROFILE)
    bag = tmp_path / 'faulty'
    write_sim_episode(bag, profile, seed=0, max_duration_s=6.0,
                      faults=[Fault('joint_states', 'nan', 2.0, 2.2), Fault('wrench', 'spike', 4.6, 4.62)])
    domain = new_domain()
    log = tmp_path / 'monitor.log'
    monitor = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'monitor', '--profile', str(PROFILE),
                                '--no-images'], env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT)
    try:
        with client(domain) as c:
            statuses: list = []
            diagnostics: list = []
            panels: list = []
            c.node.create_subscription(MarkerArray, '/robodata/quality_markers', panels.append, 100)
            c.node.create_subscription(QualityStatus, '/robodata/quality', statuses.append, 100)
            c.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 100)
            qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
            kinds = {profile.topics.joint_states.topic: JointState, profile.topics.gripper.topic: JointState,
                     profile.topics.wrench.topic: WrenchStamped}
            publishers = {topic: c.node.create_publisher(kind, topic, qos) for topic, kind in kinds.items()}
            c.wait_subscribed(publishers.values(), monitor, log, 'the monitor')
            with BagReader(bag) as reader:  # replayed at twice real time, in the bag's order
                wall0, first = time.monotonic(), None
                for message in reader.messages(list(publishers)):
                    first = message.t_ns if first is None else first
                    ahead = (message.t_ns - first) / 2e9 - (time.monotonic() - wall0)
                    if ahead > 0.005:
                        c.spin_for(ahead)
                    publishers[message.topic].publish(bytes(message.data))
            # The spike came in the last second of the replay; the monitor says what it holds once a period (1 s).
            deadline = time.monotonic() + 2.5
            while time.monotonic() < deadline and not any(s.check == 'contact.force_limit' for s in statuses):
                c.spin_for(0.05)
            while_running = list(statuses)
            c.spin_for(2.5)  # nothing published now: the topics fall silent
    finally:
        assert stop_process(monitor) == 0, log.read_text()

    live = {(s.check, s.topic): s.level for s in while_running}
    assert live.get(('motion.nan', '/joint_states')) == QualityStatus.ERROR
    assert live.get(('contact.force_limit', '/wrist/wrench')) == QualityStatus.ERROR
    assert any(s.check == 'summary' and s.level == QualityStatus.ERROR for s in while_running)
    after = statuses[len(while_running):]
    assert any(s.check == 'timing.silent' and s.topic == '/wrist/wrench' and s.level == QualityStatus.ERROR
               for s in after)
    names = {status.name for array in diagnostics for status in array.status}
    assert 'robodata quality' in names and 'robodata quality: motion.nan /joint_states' in names
    # The RViz panel: in the rig's fixed frame, gone 3 periods after a dead monitor's last word, each problem once.
    panel = panels[-1].markers[0]
    assert panel.header.frame_id == profile.robot.base_frame and panel.lifetime.sec == 3
    lines = [p.markers[0].text.splitlines() for p in panels]
    assert any(len(text) > 1 for text in lines) and all(len(text) == len(set(text)) for text in lines)
