"""A take captured to a protocol, judged with the episode's other checks: each factor's within-spec verdict (from
episode.yaml's `capture:`, which the session wrote from what it measured) goes into quality.json, and a factor
measured out of spec is a warning finding, so `robodata select`, the report and the export's curation see it like
any other fault of the episode."""

from __future__ import annotations

from typing import Any

from ros_robodata.quality.findings import WARN, Finding

__all__ = ['take_findings', 'take_verdicts']

CHECK = 'capture.out_of_spec'


def take_verdicts(capture: dict[str, Any]) -> dict[str, str]:
    """Per factor (and the camera, the repetitions), its verdict: within, outside or not measured."""
    measured = capture.get('measured')
    if not isinstance(measured, dict):
        return {}
    return {str(name): str(m.get('verdict') or 'not measured') for name, m in measured.items() if isinstance(m, dict)}


def take_findings(capture: dict[str, Any]) -> list[Finding]:
    """One warning per factor measured outside what the take intended (its bin or level, or the camera's minimum)."""
    measured = capture.get('measured')
    said_intended = capture.get('intended')
    intended: dict[str, Any] = said_intended if isinstance(said_intended, dict) else {}
    if not isinstance(measured, dict):
        return []
    out = []
    for name, m in measured.items():
        if not isinstance(m, dict) or m.get('verdict') != 'outside':
            continue
        value, unit = m.get('value'), m.get('unit') or ''
        said = f'{value} {unit}'.strip() if value is not None else 'a value'
        wanted = intended.get(name, m.get('required', 'its spec'))
        why = f' ({m["why"]})' if m.get('why') else ''
        take = f'take {capture.get("take", "?")} of protocol {capture.get("protocol", "?")}'
        out.append(Finding(CHECK, WARN, '', f'{take}: {name} measured {said}, outside the intended {wanted}{why}'))
    return out
