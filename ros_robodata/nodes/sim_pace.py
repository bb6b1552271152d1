"""Whether the simulated cell keeps real time, said where an operator and a test can see it."""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node


class PaceWatch:
    """Whether the cell keeps real time. On a busy computer the cell falls behind and then sends what fell due with
    the stamps it should have had: receivers rightly see those messages late. The cell says so itself (log and
    /diagnostics), so a late message is known to be the source's and not the network's or the receiver's."""

    NAME = 'robodata sim: pace'
    BEHIND_S = 0.05  # publishing this late behind the stamps is falling behind (a step is a few ms)

    def __init__(self, node: Node) -> None:
        self.node = node
        self._diagnostics = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.since: float | None = None  # monotonic time the current stretch began
        self.worst = 0.0
        self._said = 0.0
        self._ok_since: float | None = None

    def update(self, behind_s: float, now: float) -> None:
        """How far behind its stamps the cell published this step, at monotonic time `now`."""
        if behind_s > self.BEHIND_S:
            self._ok_since = None
            if self.since is None:
                self.since, self.worst, self._said = now, behind_s, 0.0
                self.node.get_logger().warning(f'falling behind real time ({behind_s * 1e3:.0f} ms): this computer '
                                               'is too busy for the cell; its messages go out late')
            self.worst = max(self.worst, behind_s)
            if now - self._said >= 0.5:
                self._said = now
                self._publish(DiagnosticStatus.WARN, f'{self.worst * 1e3:.0f} ms behind real time: this computer '
                              'is too busy for the cell; its messages go out late')
        elif self.since is not None:
            self._ok_since = self._ok_since or now
            if now - self._ok_since >= 0.2:
                self.node.get_logger().warning(f'back to real time after {now - self.since:.1f} s behind (up to '
                                               f'{self.worst * 1e3:.0f} ms): receivers rightly saw its messages '
                                               'late then')
                self._publish(DiagnosticStatus.OK, 'keeping real time')
                self.since = None

    def _publish(self, level: bytes, message: str) -> None:
        status = DiagnosticStatus(level=level, name=self.NAME, message=message, hardware_id='sim_cell')
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.node.get_clock().now().to_msg()
        self._diagnostics.publish(array)
