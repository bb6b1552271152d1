"""Rendered cameras and a ray-cast LiDAR over the MuJoCo scene."""

from __future__ import annotations

import os

import cv2
import mujoco
import numpy as np

_OFF = ('mjRND_SHADOW', 'mjRND_REFLECTION', 'mjRND_SKYBOX', 'mjRND_FOG', 'mjRND_HAZE')


_NOISE_FRAMES = 16
_NOISE_SEED = 0x5EED
_noise_banks: dict[tuple[int, int, float], list[tuple[np.ndarray, np.ndarray]]] = {}


def _noise_bank(height: int, width: int, sigma: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The camera noise frames of this size, drawn once a process: drawing them took ~55 ms of CPU, at each scene
    change, while the cell was publishing (it fell behind its stamps). Each frame takes a bank frame at a random
    shift drawn from the scene's own generator, so a seed still renders the same frames in any process."""
    key = (height, width, sigma)
    if key not in _noise_banks:
        rng = np.random.default_rng(_NOISE_SEED)
        bank = []
        for _ in range(_NOISE_FRAMES):
            n = np.rint(rng.normal(0.0, sigma, (height, width, 3)))
            bank.append((np.clip(n, 0, 255).astype(np.uint8), np.clip(-n, 0, 255).astype(np.uint8)))
        _noise_banks[key] = bank
    return _noise_banks[key]


class Cameras:
    """One offscreen renderer shared by the named cameras; shadows and reflections are off because under
    software GL (llvmpipe) they cost ~25 ms a frame, against <1 ms without.
    """

    def __init__(self, model: mujoco.MjModel, width: int, height: int, rng: np.random.Generator | None = None,
                 noise_sigma: float = 1.5) -> None:
        # A scene a few times the model's geoms, not the default 10000: allocating that took ~25 ms of each scene
        # change (a cell falling behind its stamps); this scene draws ~20.
        self._r = mujoco.Renderer(model, height, width, max_geom=max(500, 20 * model.ngeom))
        for flag in _OFF:
            self._r.scene.flags[getattr(mujoco.mjtRndFlag, flag)] = False
        # One frame drawn now, where it costs nothing (before the cell's clock starts, or on the thread preparing
        # the next scene): the first frame of a renderer took ~35 ms more than the others, and a cell drawing it
        # while publishing fell behind its stamps.
        self._r.update_scene(mujoco.MjData(model))
        self._r.render()
        # Sensor noise, as every real camera has: a renderer draws a still scene bit-identically, which the quality
        # checks rightly call a frozen camera. A bank of noise frames keeps it cheap (~0.1 ms a frame).
        self._rng = rng
        self._noise = _noise_bank(height, width, noise_sigma) if rng is not None and noise_sigma > 0 else []

    def render(self, data: mujoco.MjData, camera: str) -> np.ndarray:
        self._r.update_scene(data, camera=camera)
        frame = self._r.render().copy()
        if self._noise and self._rng is not None:
            # A bank frame shifted by a random offset: two frames never carry the same noise (a repeat of the bank
            # alone, 1 in 16, made runs that the frozen-camera check rightly flags every few minutes).
            up, down = self._noise[int(self._rng.integers(len(self._noise)))]
            shift = (int(self._rng.integers(frame.shape[0])), int(self._rng.integers(frame.shape[1])))
            frame = cv2.subtract(cv2.add(frame, np.roll(up, shift, (0, 1))), np.roll(down, shift, (0, 1)))
        return frame

    def release_thread(self) -> None:
        """Let go of the renderer's GL context in this thread, so another thread can render with it (it makes the
        context current at every frame). EGL binds a context to the thread that made it current until it is
        released; other GL platforms are left as they are (prepare_in_background says they cannot be)."""
        if os.environ.get('MUJOCO_GL') == 'egl':
            # Optional dependency: mujoco.egl needs libEGL (it sets PyOpenGL to EGL); only with MUJOCO_GL=egl.
            from mujoco import egl

            egl.EGL.eglMakeCurrent(egl.EGL_DISPLAY, egl.EGL.EGL_NO_SURFACE, egl.EGL.EGL_NO_SURFACE,
                                   egl.EGL.EGL_NO_CONTEXT)

    def close(self) -> None:
        self._r.close()


def prepare_in_background() -> bool:
    """Whether a renderer made on one thread can render on another here (EGL, once released)."""
    return os.environ.get('MUJOCO_GL') == 'egl'


class Lidar:
    """A fixed scanner at a site: an azimuth x elevation fan of rays aimed at the table, hits as x, y, z, intensity.

    Intensity falls with range and depends on the surface colour, so objects stand out from the table.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        data: mujoco.MjData,
        rng: np.random.Generator,
        site: str = 'lidar',
        aim: tuple[float, float, float] = (0.5, 0.0, 0.4),
        n_azimuth: int = 80,
        n_elevation: int = 40,
    ) -> None:
        self._m = model
        self._rng = rng
        self._origin = data.site(site).xpos.copy()
        fwd = np.asarray(aim) - self._origin
        fwd /= np.linalg.norm(fwd)
        left = np.cross([0.0, 0.0, 1.0], fwd)
        left /= np.linalg.norm(left)
        up = np.cross(fwd, left)
        grid_az, grid_el = np.meshgrid(np.linspace(-0.55, 0.55, n_azimuth), np.linspace(-0.35, 0.3, n_elevation))
        az, el = grid_az.ravel(), grid_el.ravel()
        local = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=1)
        self._dirs = local @ np.stack([fwd, left, up])
        self._geomid = np.zeros(len(self._dirs), dtype=np.int32)
        self._dist = np.zeros(len(self._dirs), dtype=np.float64)
        self._flat = np.ascontiguousarray(self._dirs.ravel())
        self._reflect = model.geom_rgba[:, :3].mean(axis=1)

    def scan(self, data: mujoco.MjData) -> np.ndarray:
        mujoco.mj_multiRay(
            self._m, data, self._origin, self._flat, None, 1, -1, self._geomid, self._dist, len(self._dirs), 5.0
        )
        hit = self._geomid >= 0
        dist = self._dist[hit] + self._rng.normal(0.0, 0.002, size=int(hit.sum()))
        xyz = self._origin + self._dirs[hit] * dist[:, None]
        intensity = 255.0 * self._reflect[self._geomid[hit]] / (1.0 + dist**2)
        return np.column_stack([xyz, intensity]).astype(np.float32)
