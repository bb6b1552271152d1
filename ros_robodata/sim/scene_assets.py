"""A seed's scene made apart from the cell that runs it, so that a rig can make the next one on a thread.

The camera renderer alone takes 50-130 ms to make; made at the hand-over between episodes it held the
publishing thread and every stream of the next pre-roll went out late.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import mujoco
import numpy as np

from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.scene import SceneParams, build_mjcf, sample_scene
from ros_robodata.sim.sensors import Cameras

__all__ = ['CAMERAS', 'SceneAssets', 'prepare_scene']

CAMERAS = {S.CAMERA_WRIST: 'wrist', S.CAMERA_SCENE: 'scene'}


@dataclass
class SceneAssets:
    """What a seed's scene costs to set up: its layout, physics model and camera renderer (the renderer alone takes
    50-130 ms), made apart from the cell so that a rig can make the next one while the current one runs."""

    seed: int
    scene: SceneParams
    model: mujoco.MjModel
    cameras: Cameras | None

    def close(self) -> None:
        if self.cameras is not None:
            self.cameras.close()
            self.cameras = None


def prepare_scene(seed: int, *, streams: Iterable[str] | None = None, image_size: tuple[int, int] = (320, 240),
                  timestep: float = 0.001, cameras_for_another_thread: bool = False) -> SceneAssets:
    """The seed's scene as SimCell(seed) would make it (same random draws); with `cameras_for_another_thread` the
    renderer is let go of by this thread, for a cell run on another."""
    rngs = np.random.default_rng(seed).spawn(6)
    scene = sample_scene(rngs[0])
    model = mujoco.MjModel.from_xml_string(build_mjcf(scene, timestep))
    wanted = list(S.DEFAULT_RATES_HZ) if streams is None else list(streams)
    cameras = None
    if any(s in CAMERAS for s in wanted):
        cameras = Cameras(model, *image_size, rng=rngs[5])
        if cameras_for_another_thread:
            cameras.release_thread()
    return SceneAssets(seed, scene, model, cameras)
