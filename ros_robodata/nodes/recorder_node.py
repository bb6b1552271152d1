"""Node `recorder`: one rosbag2 per episode from the robot profile's topics, driven by services.

Subscriptions are raw (CDR bytes as received, never deserialized) with QoS matched to each
publisher; all the logic lives in ros_robodata.record.recorder.EpisodeRecorder.

Services: ~/start_episode (ros_robodata/srv/StartEpisode), ~/stop_episode, ~/discard_episode
(std_srvs/srv/Trigger), ~/set_outcome (ros_robodata/srv/SetOutcome).
Topics: /robodata/episode_events (EpisodeEvent, one per transition), /diagnostics.
"""

from __future__ import annotations

import gc
import getpass
import os
import sys
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

from ros_robodata.dataset import Dataset
from ros_robodata.errors import RobodataError
from ros_robodata.msg import EpisodeEvent
from ros_robodata.nodes.node_runtime import TopicDiscovery, clock_of, declare, run_node
from ros_robodata.profile import load_profile
from ros_robodata.profile.schema import IMAGE
from ros_robodata.quality.timing import silence
from ros_robodata.record.dds_peers import shm_participants
from ros_robodata.record.host_check import check_host, frame_loss_advice
from ros_robodata.record.keys_screen import DISK_STATUS
from ros_robodata.record.priority import INTAKE_NICENESS, lower_this_thread
from ros_robodata.record.recorder import RecorderSettings, Transition
from ros_robodata.record.writer_process import RecorderProcess
from ros_robodata.srv import SetOutcome, StartEpisode

EVENTS_TOPIC = '/robodata/episode_events'
_EVENT_KINDS = {'start': EpisodeEvent.START, 'stop': EpisodeEvent.STOP, 'outcome': EpisodeEvent.OUTCOME,
                'discard': EpisodeEvent.DISCARD}


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ''


class RecorderNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('recorder', **kwargs)
        profile_path = declare(self, 'profile', '', 'Robot profile YAML: the topics to record and how (required)')
        dataset_path = declare(self, 'dataset', '', 'Dataset folder; created if absent (required)')
        task = declare(self, 'task', '', 'Default task name of new episodes, e.g. pick_place_cube', read_only=False)
        operator = declare(self, 'operator', _login(), 'Default operator of new episodes', read_only=False)
        mode = declare(self, 'mode', 'teleop', 'Default demonstration mode: teleop | kinesthetic', read_only=False)
        delete_discarded = declare(self, 'delete_discarded', False,
                                   'Delete a discarded episode from disk instead of keeping it marked discarded')
        min_episode = declare(self, 'min_episode_s', -1.0,
                              "Shortest episode a stop accepts (a quicker second press is a double press and is "
                              "refused); negative: the profile's recording.min_episode_s")
        self._discovery_period = declare(self, 'discovery_period_s', 0.5,
                                         'How often to look for publishers of topics not yet subscribed')
        diagnostics_period = declare(self, 'diagnostics_period_s', 1.0, 'Period of /diagnostics updates')
        if not profile_path or not dataset_path:
            raise RobodataError('parameters `profile` and `dataset` are required')
        self.profile = load_profile(profile_path)
        dataset = Dataset.open_or_create(dataset_path, profile=self.profile)
        overrides = {'min_episode_s': float(min_episode)} if min_episode >= 0 else {}
        settings = RecorderSettings.from_profile(self.profile, task=task, operator=operator, mode=mode,
                                                 delete_discarded=delete_discarded, **overrides)
        self._clock_ns = clock_of(self)
        self.recorder = RecorderProcess(dataset.root, settings, clock_ns=self._clock_ns,
                                        on_transition=self._publish_transition, on_warning=self._warn)
        latched_events = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                    durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._events = self.create_publisher(EpisodeEvent, EVENTS_TOPIC, latched_events)
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._recorded: dict[str, Any] = {}
        self._unrecordable: list[str] = []
        # Receive times as the intake sees them (not the writer's view, which lags by up to a status period):
        # what silence is judged on, with the rule the quality monitor applies too.
        self._last_receive: dict[str, int] = {}
        self._subscribed_at: dict[str, int] = {}
        self._resumed_at: dict[str, int] = {}  # when each topic came back after a silence
        self._discovery = TopicDiscovery(self, {spec.topic: spec for _, spec in self.profile.all_topics()},
                                         self._subscribe, self._discovery_period)
        self.create_service(StartEpisode, '~/start_episode', self._on_start)
        self.create_service(Trigger, '~/stop_episode', self._on_stop)
        self.create_service(Trigger, '~/discard_episode', self._on_discard)
        self.create_service(SetOutcome, '~/set_outcome', self._on_set_outcome)
        self._diagnostics_period_ns = round(diagnostics_period * 1e9)
        self.create_timer(diagnostics_period, self._publish_diagnostics)
        self.get_logger().info(
            f'recording {len(self._pending) + len(self._recorded)} topic(s) of {self.profile.robot.name} '
            f'into {dataset.root}; waiting for ~/start_episode')
        topics = self.profile.topics
        large = bool(topics.lidars) or any(camera.type == IMAGE for camera in topics.cameras)
        self._advised: set[str] = set()  # topics whose frame loss was explained once
        for finding in check_host(large):
            self.get_logger().warning(f'host setting: {finding}')

    # -- subscriptions ----------------------------------------------------------------------------

    @property
    def _pending(self) -> dict[str, Any]:
        return self._discovery.pending

    def _subscribe(self, topic: str, spec: Any, qos: QoSProfile, msgclass: Any) -> None:
        if msgclass is None:
            self._unrecordable.append(topic)
            self.get_logger().error(f'cannot record {topic}: message type {spec.type} is not installed in '
                                    'this ROS environment (rclpy needs the generated type)')
            return
        reliable = qos.reliability == ReliabilityPolicy.RELIABLE
        self.recorder.add_topic(topic, spec.type, latched=spec.latched, expected_rate_hz=spec.rate_hz,
                                reliable=reliable)
        # No message_lost event handler: under load the EventsExecutor (rclpy 7.1) kept servicing
        # it and starved the subscriptions for seconds. Loss is judged from header stamps instead.
        self._recorded[topic] = self.create_subscription(msgclass, topic, self._receiver(topic), qos, raw=True)
        self._subscribed_at[topic] = self._clock_ns()
        durable = qos.durability == DurabilityPolicy.TRANSIENT_LOCAL
        self.get_logger().info(f'subscribed {topic} ({spec.type}, {"reliable" if reliable else "best effort"}'
                               f'{", transient local" if durable else ""})')

    def _receiver(self, topic: str) -> Any:
        on_message, clock = self.recorder.on_message, self._clock_ns
        last, resumed = self._last_receive, self._resumed_at
        silent_ns = round(self.profile.quality.silent_after_s * 1e9)

        def receive(data: bytes) -> None:
            now = clock()
            if now - last.get(topic, now) > silent_ns:
                resumed[topic] = now
            last[topic] = now
            on_message(topic, data, now)

        return receive

    # -- services ---------------------------------------------------------------------------------

    # Service callbacks run on the thread that takes messages from DDS: they queue the command and
    # answer at once (the episode id, and the status it will have); the recorder announces the
    # transition on /robodata/episode_events when its writer has done it.

    def _on_start(self, request: StartEpisode.Request, response: StartEpisode.Response) -> StartEpisode.Response:
        try:
            response.episode_id = self.recorder.request_start(request.task, request.operator_name, request.mode)
        except RobodataError as err:
            response.success, response.message = False, str(err)
            return response
        response.success = True
        if self._pending:
            response.message = f'not yet publishing: {", ".join(sorted(self._pending))}'
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._trigger(response, self.recorder.request_stop, 'complete')

    def _on_discard(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._trigger(response, self.recorder.request_discard, 'discarded')

    def _trigger(self, response: Trigger.Response, action: Any, status: str) -> Trigger.Response:
        try:
            episode_id = action()
        except RobodataError as err:
            response.success, response.message = False, str(err)
            return response
        response.success, response.message = True, f'{episode_id} {status}'
        return response

    def _on_set_outcome(self, request: SetOutcome.Request, response: SetOutcome.Response) -> SetOutcome.Response:
        try:
            response.episode_id = self.recorder.request_outcome(request.outcome, request.notes)
        except RobodataError as err:
            response.success, response.message = False, str(err)
            return response
        response.success = True
        response.message = f'{response.episode_id} outcome {request.outcome}'
        return response

    # -- what the operator sees -------------------------------------------------------------------

    def _publish_transition(self, transition: Transition) -> None:
        episode = transition.episode
        msg = EpisodeEvent(event=_EVENT_KINDS[transition.kind], episode_id=episode.id, task=episode.task,
                           operator_name=episode.operator, mode=episode.mode, outcome=episode.outcome,
                           status=episode.status)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(transition.t_ns, 1_000_000_000)
        if episode.start_ns is not None:
            msg.data_start.sec, msg.data_start.nanosec = divmod(episode.start_ns, 1_000_000_000)
        if self.context.ok():  # on Ctrl-C the episode is closed after ROS has shut down
            self._events.publish(msg)
        text = f'episode {episode.id} {transition.kind}: status {episode.status}, outcome {episode.outcome}'
        self.get_logger().info(f'{text}{"; " + transition.message if transition.message else ""}')

    def _warn(self, message: str) -> None:
        """Called from the writer thread: log and publish the warning as it is (asking the writer for
        its status from its own thread would wait on itself)."""
        self.get_logger().warning(message)
        if self.context.ok():
            array = DiagnosticArray()
            array.header.stamp = self.get_clock().now().to_msg()
            array.status.append(DiagnosticStatus(level=DiagnosticStatus.ERROR, name='robodata recorder',
                                                 message=message, hardware_id=self.profile.robot.name))
            self._diagnostics.publish(array)

    def _publish_diagnostics(self) -> None:
        status = self.recorder.status()
        if status is None or not self.context.ok():
            return
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        now = self._clock_ns()
        head = DiagnosticStatus(name='robodata recorder', hardware_id=self.profile.robot.name)
        head.level, head.message = DiagnosticStatus.OK, 'idle'
        # The episode as the commands left it: the writer's snapshot lags a start or stop by a second or more on a
        # busy computer, and two 'idle' from it after a start made the keys screen take the episode for ended. Its
        # per-topic figures are the other episode's until it catches up: left out meanwhile. The duration on the
        # live clock once the snapshot has the episode's start, until then since the start was asked.
        running = self.recorder.running()
        episode_id = running[0] if running is not None else None
        caught_up = status['episode_id'] == episode_id
        if running is not None:
            marked_ns = status.get('marked_start_ns') if caught_up else None
            elapsed = (now - marked_ns) / 1e9 if marked_ns else running[1]
            head.message = f'recording {episode_id} ({elapsed:.0f} s)'
        if status['dropped_by_recorder']:
            head.level = DiagnosticStatus.WARN
            head.message += f'; {status["dropped_by_recorder"]} message(s) dropped (writer behind)'
        head.values = [KeyValue(key='node', value=self.get_fully_qualified_name()),
                       KeyValue(key='episode_id', value=str(status['episode_id'] or '')),
                       KeyValue(key='queued_bytes', value=str(status['queued_bytes'])),
                       KeyValue(key='pending_topics', value=','.join(sorted(self._pending))),
                       KeyValue(key='unrecordable_topics', value=','.join(self._unrecordable))]
        if self._unrecordable and head.level == DiagnosticStatus.OK:
            head.level = DiagnosticStatus.WARN
            head.message += f'; not recordable here: {", ".join(self._unrecordable)}'
        array.status.append(head)
        if status.get('disk'):
            disk = status['disk']
            array.status.append(DiagnosticStatus(
                name=DISK_STATUS, hardware_id=self.profile.robot.name,
                level=(DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)[disk['level']],
                message=disk['message'],
                values=[KeyValue(key=k, value='' if disk[k] is None else f'{disk[k]:.0f}')
                        for k in ('free_bytes', 'rate_bps', 'seconds_left')]))
        silent_after = self.profile.quality.silent_after_s
        for topic, t in sorted(status['topics'].items() if caught_up else ()):
            item = DiagnosticStatus(name=f'robodata recorder: {topic}', hardware_id=self.profile.robot.name)
            item.level, item.message = DiagnosticStatus.OK, f'{t["received"]} received'
            quiet = None
            if t['expected_rate_hz'] and not t['latched'] and topic in self._subscribed_at:  # a rate to keep
                quiet = silence(self._last_receive.get(topic), now, self._subscribed_at[topic], silent_after)
            if quiet is not None:
                item.level, item.message = DiagnosticStatus.ERROR, f'silent for {quiet:.1f} s'
            elif t['missing'] and now - self._resumed_at.get(topic, 0) <= 3 * self._diagnostics_period_ns:
                # The samples a silence took, counted when the topic is back: the same problem, already said.
                item.message += f', back after a silence ({t["missing"]} sample(s) missing)'
            elif t['missing']:
                item.level, item.message = DiagnosticStatus.WARN, f'{t["missing"]} sample(s) lost in the last period'
                advice = None if topic in self._advised else frame_loss_advice(
                    topic, t['bytes'] / max(t['count'], 1), shm_participants(), frozenset({os.getpid()}))
                if advice:
                    self._advised.add(topic)
                    self.get_logger().warning(advice)
                if t['gap_stamps_ns'] and status['stamp_origin_ns']:
                    before, after = (round((s - status['stamp_origin_ns']) / 1e9, 2) for s in t['gap_stamps_ns'])
                    item.message += f' (between {before} s and {after} s of the episode)'
            item.values = [KeyValue(key='count', value=str(t['count'])), KeyValue(key='lost', value=str(t['lost']))]
            array.status.append(item)
        self._diagnostics.publish(array)


def _shutdown(node: RecorderNode, reason: str) -> None:
    episode = node.recorder.close('interrupted')
    if episode is not None:
        print(f'recorder: episode {episode.id} closed as {episode.status} ({reason})', file=sys.stderr)


def main(args: list[str] | None = None) -> int:
    # The executor shares the GIL with the threads relaying the writer process's replies; keep their
    # turns short so a callback never waits long for it.
    sys.setswitchinterval(0.0005)
    return run_node(RecorderNode, args, on_shutdown=_shutdown, after_start=_started)


def _started(node: RecorderNode) -> None:
    _quiet_gc(node)
    # The middleware's threads exist now and keep their priority; this thread (the executor) goes below them.
    lower_this_thread(INTAKE_NICENESS)


def _quiet_gc(_node: RecorderNode) -> None:
    """The long-lived objects made at startup (typestores, ROS entities) need never be scanned again;
    full collections over them paused intake for up to seconds under load."""
    gc.collect()
    gc.freeze()


if __name__ == '__main__':
    sys.exit(main())
