"""Which of a LeRobot dataset's features are the joint readings and the commands, and what their dimensions are
called: public datasets name both in many ways (converted sets, other recorders' exports, nested `names`)."""

from __future__ import annotations

from typing import Any

__all__ = ['ACTION_NAMES', 'STATE_NAMES', 'feature_names', 'is_vector', 'vector_feature']

# What public datasets call the robot's joint readings and its commands when not LeRobot's own names (converted
# sets, other recorders' exports): tried in this order after observation.state and action.
STATE_NAMES = ('state', 'observation.qpos', 'qpos', 'observation.joint_positions', 'joint_positions',
               'observation.joint_state')
ACTION_NAMES = ('actions', 'action.joint_positions')


def feature_names(names: Any, size: int) -> list[str] | None:
    """Per-dimension names from a LeRobot feature's `names`, in the forms public datasets write: a flat list
    (`["x", "y"]`), a nested list (`[["x", "y"]]`), `{"motors": [...]}`, or a dict of parts or axes whose lists,
    joined in order, name every dimension (`{"left_arm": [...], "right_arm": [...]}`); one label for the whole
    vector (`["state"]`) names its values `state_0`, `state_1`, ... None when nothing fits `size`."""
    def strings(value: Any) -> list[str] | None:
        if isinstance(value, str):
            return [value]
        if not isinstance(value, (list, tuple, dict)):
            return None
        out: list[str] = []
        for item in value.values() if isinstance(value, dict) else value:
            part = strings(item)
            if part is None:
                return None
            out += part
        return out

    candidates = [names]
    if isinstance(names, dict):
        candidates += list(names.values())
    for candidate in candidates:
        found = strings(candidate)
        if found is not None and len(found) == 1 and size > 1 and found[0]:  # one label for the vector
            return [f'{found[0]}_{i}' for i in range(size)]
        if found is not None and len(found) == size and all(found):
            seen: dict[str, int] = {}
            unique = []
            for name in found:  # a name given twice ("gripper", "gripper") gets its index: JointState names differ
                seen[name] = seen.get(name, 0) + 1
                unique.append(name if seen[name] == 1 else f'{name}_{seen[name] - 1}')
            return unique
    return None


def is_vector(feature: Any) -> bool:
    """A per-frame numeric vector (not a video, an image or a scalar index)."""
    if not isinstance(feature, dict):
        return False
    shape = feature.get('shape')
    return (str(feature.get('dtype', '')).startswith(('float', 'int')) and isinstance(shape, list) and len(shape) == 1
            and isinstance(shape[0], int) and shape[0] > 1)


def vector_feature(features: dict[str, Any], names: tuple[str, ...]) -> str | None:
    """The first of `names` that info.json declares (a vector feature, or LeRobot's own name in any form)."""
    for i, name in enumerate(names):
        if name in features and (i == 0 or is_vector(features[name])):
            return name
    return None
