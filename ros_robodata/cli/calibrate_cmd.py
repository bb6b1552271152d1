"""`robodata calibrate lux`: a camera's light response fitted from takes that had a lux meter, written into the
profile's camera entry, so takes without a meter get their light estimated (marked so) instead of none."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ros_robodata.capture.lux_calibration import (
    BRIGHTNESS_LIMIT,
    FRAMES_PER_TAKE,
    calibration_entry,
    error_text,
    fit_camera,
    lux_takes,
    write_calibration,
)
from ros_robodata.cli.command_common import EXIT_OK, add_json, add_target, dataset_at, print_json, stderr, stdout
from ros_robodata.errors import ProfileError, RobodataError
from ros_robodata.profile import load_profile


def add_parser(sub: Any) -> None:
    p = sub.add_parser('calibrate', help="fit a camera's light response from takes with a lux meter",
                       description='Calibrations the capture tools use where a take has no measuring instrument: lux.')
    kinds = p.add_subparsers(dest='kind', metavar='KIND', required=True)
    lux = kinds.add_parser(
        'lux', help="fit a camera's lux calibration and write it into the profile's camera entry",
        description='Fit lux = a * x ** b per camera, x the median brightness of a take\'s frames divided by the '
                    'camera\'s exposure x gain (with --exposure-topic and --gain-topic) or the brightness alone, '
                    'from the takes of DATASET whose light a lux meter measured (episode.yaml capture.measured, a '
                    'sensor_msgs/Illuminance source); at least 3 takes over at least a factor of 2 of light. '
                    'Writes `lux_calibration:` into the camera\'s entry of the profile file (the rest of the file '
                    'kept as written); `robodata session` then estimates the light of takes without a meter from '
                    'it, marked as estimated with the fit\'s error. Brightness alone holds only at a fixed '
                    'exposure and gain (auto-exposure off).')
    add_target(lux, 'a dataset of takes captured to a protocol with a lux meter', 'DATASET')
    lux.add_argument('--camera', required=True, metavar='NAME', help="the profile's camera (topics.cameras[].name)")
    lux.add_argument('--profile', metavar='FILE',
                     help="the profile file to write into (default: the file the dataset's profile was read from)")
    lux.add_argument('--exposure-topic', metavar='TOPIC',
                     help="the camera's exposure in the bags (std_msgs Float64/Float32; with --gain-topic)")
    lux.add_argument('--gain-topic', metavar='TOPIC', help="the camera's linear gain (not dB) in the bags, likewise")
    lux.add_argument('--frames', type=int, default=FRAMES_PER_TAKE, metavar='N',
                     help=f'frames read from each take, evenly spread (default: {FRAMES_PER_TAKE})')
    lux.add_argument('--dry-run', action='store_true', help='fit and show it; write nothing')
    add_json(lux)
    lux.set_defaults(func=run_lux)


def run_lux(args: argparse.Namespace) -> int:
    if bool(args.exposure_topic) != bool(args.gain_topic):
        raise RobodataError('--exposure-topic and --gain-topic go together (or neither: brightness alone)')
    if args.frames < 1:
        raise RobodataError('--frames must be at least 1')
    dataset = dataset_at(args.target)
    if args.profile:
        path = Path(args.profile)
        profile = load_profile(path)
    else:
        source = str((dataset.info.get('robot_profile') or {}).get('source') or '')
        path = Path(source)
        if not source or not path.is_file():
            raise ProfileError(f'{dataset.root}: its profile was read from {source or "no file"}, which is not here: '
                               'pass --profile')
        profile = load_profile(path)
    camera = next((c for c in profile.topics.cameras if c.name == args.camera), None)
    if camera is None:
        names = ', '.join(c.name for c in profile.topics.cameras) or 'none'
        raise ProfileError(f'{path}: no camera {args.camera!r} (it has: {names})')
    takes, notes = lux_takes(dataset, camera, args.exposure_topic, args.gain_topic, args.frames)
    for note in notes:
        stderr.print(f'robodata calibrate lux: note: {note}', markup=False)
    if not takes:
        raise RobodataError(f'{dataset.root}: no take with a lux meter reading and frames of {camera.topic}: '
                            'record takes with a sensor_msgs/Illuminance meter first')
    fit = fit_camera(takes, bool(args.exposure_topic))
    entry = calibration_entry(fit, args.exposure_topic, args.gain_topic, dataset.name)
    if not args.dry_run:
        write_calibration(path, camera.name, entry)
    if args.json:
        print_json({'camera': camera.name, 'profile': str(path), 'written': not args.dry_run,
                    'lux_calibration': entry, 'error_pct': round(fit.error_pct, 1),
                    'takes': [{'episode': t.episode_id, 'lux': t.sample.lux,
                               'brightness': round(t.sample.brightness, 2), 'exposure': t.sample.exposure,
                               'gain': t.sample.gain} for t in takes]})
        return EXIT_OK
    x = 'brightness / (exposure x gain)' if fit.model == 'exposure_gain' else 'brightness'
    stdout.print(f'{camera.name}: lux = {fit.a:.4g} * ({x}) ^ {fit.b:.3f} from {fit.samples} takes, error '
                 f'{error_text(fit)}', markup=False)
    if fit.model == 'brightness':
        stdout.print(f'limit: {BRIGHTNESS_LIMIT}', markup=False)
    stdout.print(f'{"would write" if args.dry_run else "wrote"} lux_calibration into {path} (camera {camera.name})',
                 markup=False)
    return EXIT_OK
