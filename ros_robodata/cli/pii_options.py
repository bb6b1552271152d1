"""--allow-pii and --blur-faces, the same on every command that copies camera frames out of a dataset (`export
frames`, `export lerobot`, `review push`)."""

from __future__ import annotations

import argparse


def add_pii_arguments(p: argparse.ArgumentParser, images: str = 'exported image') -> None:
    """The options that let cameras the profile marks `pii: true` out of the dataset.

    Args:
        p: the command's parser.
        images: what the command writes, for the help ('exported image', 'video frame').
    """
    group = p.add_argument_group('people in the data (cameras marked pii: true in the robot profile)')
    group.add_argument('--allow-pii', action='store_true',
                       help="export pii cameras as recorded; written to the dataset's audit.jsonl (who, which "
                            'cameras, where to)')
    group.add_argument('--blur-faces', action='store_true',
                       help=f'blur every face found in every {images} of every camera; lets pii cameras out too '
                            '(audited the same way)')
