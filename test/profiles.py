"""The robot profiles the tests use, by path: a plain module (no rclpy), for core tests and ROS tests alike."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'config'
PROFILE = CONFIG / 'sim_cell.yaml'  # the simulated cell, the profile the demo records with
