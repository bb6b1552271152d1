"""A camera's light response fitted from takes that had a lux meter (`robodata calibrate lux`), and written into
the profile's camera entry (`lux_calibration:`), so takes without a meter get their light estimated, marked so,
with the fit's error; a camera without one leaves their light "not measured".

A sample is one take: the lux its meter read (the median while it ran, as episode.yaml's `capture.measured`
records it with its source, a sensor_msgs/Illuminance) against the median brightness of the camera's frames in
the take's bag and, when the camera publishes them (std_msgs Float64/Float32 topics in the bag), the median
exposure and gain. With exposure and gain the model is lux = a * (brightness / (exposure * gain)) ** b and holds
under auto-exposure; without them it is lux = a * brightness ** b, which holds only while exposure and gain stay
where they were when the samples were taken (auto-exposure off): a camera that adapts to the light shows a dim
room and a bright one at the same brightness.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ros_robodata import untrusted
from ros_robodata.bag.image import decode_image
from ros_robodata.bag.reader import BagReader
from ros_robodata.capture.take_conditions import LuxCalibration, LuxSample, fit_lux_calibration
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.targets import select_rows
from ros_robodata.errors import ProfileError
from ros_robodata.files import write_atomic
from ros_robodata.profile import CameraSpec, load_profile
from ros_robodata.profile.schema import LuxCalibrationSpec

__all__ = ['BRIGHTNESS_LIMIT', 'FRAMES_PER_TAKE', 'LuxTake', 'calibrated_camera', 'calibration_entry',
           'camera_calibration', 'error_text', 'fit_camera', 'lux_takes', 'profile_camera_calibration',
           'write_calibration']

FRAMES_PER_TAKE = 20  # frames read from each take (evenly spread): the median brightness of 20 is steady enough
BRIGHTNESS_LIMIT = ('brightness alone: valid only at the exposure and gain the samples were taken at (auto-exposure '
                    'off); give --exposure-topic and --gain-topic to fit across exposures')
METER_TYPE = 'sensor_msgs/Illuminance'


@dataclass(frozen=True)
class LuxTake:
    """One take's sample: its episode, the meter's lux, the frames' median brightness, exposure and gain (1 when
    the model is brightness alone)."""

    episode_id: str
    sample: LuxSample


def _meter_lux(capture: dict[str, Any]) -> float | None:
    """The lux a meter read for the take (episode.yaml's capture.measured), None when the take had none."""
    for entry in (capture.get('measured') or {}).values():
        if not isinstance(entry, dict) or entry.get('unit') != 'lux' or entry.get('estimated'):
            continue
        value = entry.get('value')
        if METER_TYPE in str(entry.get('source', '')) and isinstance(value, (int, float)) and value > 0:
            return float(value)
    return None


def _brightness(reader: BagReader, topic: str, frames: int) -> float | None:
    count = reader.topics[topic].count
    step = max(1, count // frames)
    values: list[float] = []
    for i, message in enumerate(reader.messages([topic])):
        if i % step == 0 and len(values) < frames:
            bgr = decode_image(reader.decode(message), 'bgr')
            grey = bgr if bgr.ndim == 2 else cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
            values.append(float(np.mean(grey)))
    return statistics.median(values) if values else None


def _median_data(reader: BagReader, topic: str) -> float | None:
    values = [float(reader.decode(m).data) for m in reader.messages([topic])]
    return statistics.median(values) if values else None


def lux_takes(dataset: Dataset, camera: CameraSpec, exposure_topic: str | None = None, gain_topic: str | None = None,
              frames: int = FRAMES_PER_TAKE) -> tuple[list[LuxTake], list[str]]:
    """The dataset's takes that had a lux meter, each as a sample for `fit_camera`, and why others were left out.

    Args:
        dataset: the dataset.
        camera: the profile's camera entry (its topic is read from each take's bag).
        exposure_topic: the camera's exposure (std_msgs Float64/Float32), or None for brightness alone.
        gain_topic: the camera's linear gain, likewise.
        frames: the frames read from each take.

    Raises:
        DatasetError: the catalog cannot be read.
        BagError: a take's bag cannot be read or a frame decoded.
    """
    takes: list[LuxTake] = []
    notes: list[str] = []
    without_meter = 0
    for row in select_rows(dataset):
        lux = _meter_lux(dataset.episode(row.id).capture)
        if lux is None:
            without_meter += 1
            continue
        with BagReader(dataset.bag_dir(row.id)) as reader:
            if camera.topic not in reader.topics:
                notes.append(f'{row.id}: no {camera.topic} in its bag')
                continue
            exposure = gain = 1.0
            if exposure_topic and gain_topic:
                missing = [t for t in (exposure_topic, gain_topic) if t not in reader.topics]
                if missing:
                    notes.append(f'{row.id}: no {", ".join(missing)} in its bag')
                    continue
                exposure_value, gain_value = _median_data(reader, exposure_topic), _median_data(reader, gain_topic)
                if not exposure_value or not gain_value or exposure_value <= 0 or gain_value <= 0:
                    notes.append(f'{row.id}: exposure or gain not positive')
                    continue
                exposure, gain = exposure_value, gain_value
            brightness = _brightness(reader, camera.topic, frames)
        if brightness is None:
            notes.append(f'{row.id}: no frames of {camera.topic}')
            continue
        takes.append(LuxTake(row.id, LuxSample(lux, brightness, exposure, gain)))
    if without_meter:
        notes.append(f'{without_meter} episode(s) without a lux meter reading ({METER_TYPE} in capture.measured)')
    return takes, notes


def fit_camera(takes: list[LuxTake], exposure_gain: bool) -> LuxCalibration:
    """The camera's fit from its takes.

    Args:
        takes: from `lux_takes`.
        exposure_gain: whether the samples carry the camera's exposure and gain (else brightness alone).

    Raises:
        RobodataError: too few usable takes, or too narrow a range of light (`fit_lux_calibration`).
    """
    fit = fit_lux_calibration([t.sample for t in takes])
    return fit if exposure_gain else dataclasses.replace(fit, model='brightness')


def calibration_entry(fit: LuxCalibration, exposure_topic: str | None, gain_topic: str | None,
                      dataset: str, now: datetime | None = None) -> dict[str, Any]:
    """The profile's `lux_calibration:` mapping for a fit (checked as the profile checks it).

    Args:
        fit: the fit.
        exposure_topic: the exposure topic it was fitted with, or None.
        gain_topic: the gain topic, or None.
        dataset: the dataset it was fitted from (named in `fitted`).
        now: the time of the fit; the current time unless given.
    """
    when = (now or datetime.now(timezone.utc)).strftime('%Y-%m-%dT%H:%M:%SZ')
    entry: dict[str, Any] = {'model': fit.model, 'a': float(f'{fit.a:.6g}'), 'b': float(f'{fit.b:.6g}'),
                             'low': float(f'{fit.low:.6g}'), 'high': float(f'{fit.high:.6g}'),
                             'samples': fit.samples, 'rms_log10': float(f'{fit.rms_log10:.4g}')}
    if fit.model == 'exposure_gain':
        entry.update(exposure_topic=exposure_topic, gain_topic=gain_topic)
    entry['fitted'] = f'{when} from {dataset}'
    return entry


def camera_calibration(camera: CameraSpec) -> LuxCalibration | None:
    """The camera's calibration as take conditions use it, None when the profile has none.

    Args:
        camera: the profile's camera entry.
    """
    spec: LuxCalibrationSpec | None = camera.lux_calibration
    if spec is None:
        return None
    return LuxCalibration(spec.a, spec.b, spec.low, spec.high, spec.samples, spec.rms_log10, spec.model)


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return f'{value:.6g}' if isinstance(value, float) else str(value)


def write_calibration(profile_path: Path, camera: str, entry: dict[str, Any]) -> None:
    """Put `lux_calibration:` into the camera's entry of a profile file (replacing one it has), keeping the rest of
    the file as written (its comments too), and check the result as a profile before it replaces the file.

    Args:
        profile_path: the profile's YAML file.
        camera: the camera's name.
        entry: from `calibration_entry`.

    Raises:
        ProfileError: the file cannot be read, has no such camera written as a block (`- name: CAMERA`), or would
            not be a valid profile (the file is left as it was).
        FileWriteError: the file cannot be written.
    """
    lines = untrusted.read_text(profile_path, ProfileError).splitlines()
    start = next((i for i, line in enumerate(lines)
                  if re.fullmatch(rf'\s*-\s+name:\s*[\'"]?{re.escape(camera)}[\'"]?\s*(#.*)?', line)), None)
    if start is None:
        raise ProfileError(f'{profile_path}: no camera entry written as "- name: {camera}": add lux_calibration by '
                           'hand (docs/profile.md)')
    indent = lines[start].index('name')
    end = start + 1  # the entry runs while lines are blank, comments or indented deeper than its `-`
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) >= indent):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    body = lines[start + 1:end]
    old = next((i for i, line in enumerate(body) if line.strip().startswith('lux_calibration:')
                and len(line) - len(line.lstrip()) == indent), None)
    if old is not None:
        stop = old + 1
        while stop < len(body) and (not body[stop].strip() or len(body[stop]) - len(body[stop].lstrip()) > indent):
            stop += 1
        del body[old:stop]
    pad = ' ' * indent
    block = [f'{pad}lux_calibration:  # robodata calibrate lux'] + [
        f'{pad}  {key}: {_yaml_scalar(value)}' for key, value in entry.items() if value is not None]
    text = '\n'.join(lines[:start + 1] + body + block + lines[end:]) + '\n'
    trial = profile_path.with_name(f'.{profile_path.name}.calibrate.yaml')
    try:
        trial.write_text(text, encoding='utf-8')
        load_profile(trial)
    except ProfileError as err:
        raise ProfileError(str(err).replace(str(trial), str(profile_path))) from None
    finally:
        trial.unlink(missing_ok=True)
    write_atomic(profile_path, text)


def error_text(fit: LuxCalibration) -> str:
    """'+-12% (fit of 9 takes)': how a take's estimated lux is marked."""
    alone = ', brightness alone' if fit.model == 'brightness' else ''
    return f'+-{fit.error_pct:.0f}% (fit of {fit.samples} takes{alone})'



def profile_camera_calibration(argument: str) -> LuxCalibration | None:
    """The calibration named as PROFILE:CAMERA (a profile file and its camera's name), as the session's
    `lux_calibration` parameter gives it; None for ''.

    Args:
        argument: 'config/capture_studio.yaml:front', or ''.

    Raises:
        ProfileError: no ':CAMERA', the profile is not valid, it has no such camera, or the camera no lux_calibration.
    """
    if not argument:
        return None
    path, _, name = argument.rpartition(':')
    if not path or not name:
        raise ProfileError(f'lux_calibration {argument!r}: expected PROFILE:CAMERA (config/capture_studio.yaml:front)')
    profile = load_profile(path)
    camera = next((c for c in profile.topics.cameras if c.name == name), None)
    if camera is None:
        raise ProfileError(f'{path}: no camera {name!r} (it has: {", ".join(c.name for c in profile.topics.cameras)})')
    fit = camera_calibration(camera)
    if fit is None:
        raise ProfileError(f'{path}: camera {name!r} has no lux_calibration: run robodata calibrate lux')
    return fit


def calibrated_camera(profile_path: str, topic: str) -> str:
    """'PROFILE:CAMERA' for the profile's camera on `topic` when it has a lux_calibration (what the shot list's
    `lux_calibration` parameter takes), '' when it has none or no camera is on that topic.

    Args:
        profile_path: the robot profile file.
        topic: the camera topic the session measures faces on.

    Raises:
        ProfileError: the profile is not valid.
    """
    if not topic:
        return ''
    camera = next((c for c in load_profile(profile_path).topics.cameras if c.topic == topic), None)
    return f'{profile_path}:{camera.name}' if camera is not None and camera.lux_calibration is not None else ''
