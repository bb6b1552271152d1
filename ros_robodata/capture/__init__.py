"""Capture to a protocol: the protocol files (config/protocols/*.yaml), what a take records (capture.json), how far
a dataset is through a protocol (`robodata coverage`), a take's conditions measured from its frames, and the
session at the rig (the shot list, the live check, consent, the take saved with its episode), a camera's lux
calibration (lux_calibration.py, `robodata calibrate lux`) and a gesture take's repetitions (repetitions.py,
gesture_take.py)."""

from __future__ import annotations

from ros_robodata.capture.consent_check import check_participant
from ros_robodata.capture.coverage import CellCount, Coverage, GroupCount, coverage
from ros_robodata.capture.protocol import Camera, Cell, Factor, ParticipantTargets, Protocol, Repetition, load_protocol
from ros_robodata.capture.shot_list import ShotList, Take
from ros_robodata.capture.take_check import TakeCheck
from ros_robodata.capture.take_conditions import Intrinsics, Measured, measure_frame
from ros_robodata.capture.take_record import CAPTURE_FILE, Measurement, TakeRecord, measurement, read_take, write_take
from ros_robodata.capture.take_save import save_take

__all__ = ['CAPTURE_FILE', 'Camera', 'Cell', 'CellCount', 'Coverage', 'Factor', 'GroupCount', 'Intrinsics', 'Measured',
           'Measurement', 'ParticipantTargets', 'Protocol', 'Repetition', 'ShotList', 'Take', 'TakeCheck', 'TakeRecord',
           'check_participant', 'coverage', 'load_protocol', 'measure_frame', 'measurement', 'read_take', 'save_take',
           'write_take']
