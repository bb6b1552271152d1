"""A package's names loaded on first use (PEP 562): its front door lists what it offers without importing every
module behind it, so a command starts with only what it uses (OpenCV, rosbags' writer, the importers are seconds
of start-up that a read-only command never needs)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ['lazy_names']


def lazy_names(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """The module-level `__getattr__` of `package`: a name of `exports` is imported from its module when first asked
    for, and kept in the package (asked again, it is a plain attribute).

    Args:
        package: the package's `__name__`.
        exports: each public name and the module that defines it.

    Returns:
        The function to bind as the package's `__getattr__`.
    """

    def load(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f'module {package!r} has no attribute {name!r}')
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return load
