"""What measuring a take's conditions costs (ros_robodata/capture/take_conditions.py): `measure_frame` on one
frame, at 1080p and 720p, against the frame period of a 30 Hz camera.

Frames: the real portrait test/data/faces/grace_hopper.jpg scaled so the face is at --distance metres from a
camera with a --hfov-degree view (the 1080p and 720p cameras see the same field), on a grey frame; also a frame with
no face (the cost when the participant is out of view). OpenCV runs on --threads threads (default 1: the target is
a share of one core).

Target: under 20% of one core at 30 Hz 1080p. A frame costs more than that, so conditions are measured on every
k-th frame: printed are the cost per frame (best of --repeats), the share of a core if every frame were measured,
the k needed for the target, and how often that measures (conditions change over seconds, not frames).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from ros_robodata.capture.take_conditions import INTEROCULAR_M, FaceDetector, Intrinsics, measure_frame

PHOTO = Path(__file__).resolve().parent.parent / 'test' / 'data' / 'faces' / 'grace_hopper.jpg'
TARGET_SHARE = 0.20
RATE_HZ = 30.0
SIZES = {'1080p': (1920, 1080), '720p': (1280, 720)}


def best_of(repeats: int, run: Callable[[], object]) -> float:
    best = float('inf')
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def frame_with_face(photo: np.ndarray, eyes_px: float, camera: Intrinsics, detector: FaceDetector) -> np.ndarray:
    """The photo scaled so its eyes are `eyes_px` apart, centred on a grey frame of the camera's size."""
    face = detector(photo)[0]
    scale = eyes_px / face.eye_distance_px
    image = cv2.resize(photo, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    frame = np.full((camera.height, camera.width, 3), 128, np.uint8)
    h, w = image.shape[:2]
    ox, oy = (camera.width - w) // 2, (camera.height - h) // 2
    x0, y0, x1, y1 = max(0, ox), max(0, oy), min(camera.width, ox + w), min(camera.height, oy + h)
    frame[y0:y1, x0:x1] = image[y0 - oy:y1 - oy, x0 - ox:x1 - ox]
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=5, help='timings are the best of this many (default 5)')
    parser.add_argument('--distance', type=float, default=3.0, help='the participant\'s distance, m (default 3)')
    parser.add_argument('--hfov', type=float, default=69.4, help='the cameras\' horizontal view, degrees (default '
                                                                 '69.4)')
    parser.add_argument('--threads', type=int, default=1, help='OpenCV threads (default 1)')
    args = parser.parse_args()
    cv2.setNumThreads(args.threads)
    photo = cv2.imread(str(PHOTO), cv2.IMREAD_COLOR)
    if photo is None:
        raise SystemExit(f'cannot read {PHOTO}')
    detector = FaceDetector()
    period = 1 / RATE_HZ
    print(f'measure_frame, best of {args.repeats}, {args.threads} OpenCV thread(s), face at {args.distance} m, '
          f'{args.hfov} degree view; frame period at {RATE_HZ:.0f} Hz {period * 1e3:.1f} ms, target '
          f'{TARGET_SHARE:.0%} of a core')
    for name, (width, height) in SIZES.items():
        camera = Intrinsics.from_hfov(width, height, args.hfov)
        eyes = camera.fx * INTEROCULAR_M / args.distance
        frames = {'face': frame_with_face(photo, eyes, camera, detector),
                  'no face': np.full((height, width, 3), 128, np.uint8)}
        for what, frame in frames.items():
            measured = measure_frame(frame, camera, detector=detector)
            cost = best_of(args.repeats, lambda: measure_frame(frame, camera, detector=detector))  # noqa: B023
            share = cost / period
            k = max(1, math.ceil(share / TARGET_SHARE))
            distance = f'{measured.distance_m:.2f} m' if measured.distance_m is not None else '; '.join(measured.notes)
            print(f'{name:6} {what:8} {cost * 1e3:7.1f} ms/frame  {share:6.0%} of a core at every frame  '
                  f'k={k:3d} (every {k / RATE_HZ:.2f} s, {cost / (k * period):.0%} of a core)  [{distance}]')


if __name__ == '__main__':
    main()
