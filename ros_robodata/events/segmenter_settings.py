"""What the detector knows about the rig (from the profile) and which signals it may use: a module of its own so
that the gripper and wrench tracks read it below the detector, which re-exports it."""

from __future__ import annotations

from dataclasses import dataclass

from ros_robodata.events.stroke import Stroke


@dataclass(frozen=True)
class SegmenterSettings:
    """What the detector knows about the rig (from the profile) and which signals it may use."""

    open_position: float | None = None
    closed_position: float | None = None
    max_effort: float | None = None
    use_gripper: bool = True
    use_wrench: bool = True
    gripper_velocity_threshold: float | None = None  # position units per second
    contact_force_threshold_n: float | None = None
    min_event_gap_s: float = 0.1
    command_open: float | None = None  # the gripper command's open and closed values (None: no command channel)
    command_closed: float | None = None
    gripper_prior: Stroke | None = None  # what earlier episodes found of the strokes (None: the profile's)
    command_prior: Stroke | None = None

    @property
    def has_gripper(self) -> bool:
        return self.use_gripper and self.open_position is not None and self.closed_position is not None

    @property
    def has_command(self) -> bool:
        return self.has_gripper and self.command_open is not None and self.command_closed is not None
