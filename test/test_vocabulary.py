"""The shared words: durations and moments as users write them, in every command alike."""

from __future__ import annotations

import pytest

from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import OUTCOMES, STATUSES, check_choice, parse_duration, parse_time


def test_durations_need_a_unit_and_take_the_usual_ones() -> None:
    assert parse_duration('0.5s') == parse_duration('500ms') == 500_000_000
    assert parse_duration('2min') == 120 * 10**9 and parse_duration(' 1h ') == 3600 * 10**9
    assert parse_duration('0s', allow_zero=True) == 0
    with pytest.raises(RobodataError, match=r"^--every: '50' is not a duration; write it with a unit"):
        parse_duration('50', '--every')
    with pytest.raises(RobodataError, match='must be greater than 0'):
        parse_duration('0ms', '--window')
    with pytest.raises(RobodataError, match='is not a duration'):
        parse_duration('-1s')


def test_moments_as_seconds_from_an_origin_nanoseconds_or_iso_8601() -> None:
    origin = 1_750_000_000_000_000_000
    assert parse_time('12.5', origin, 'x') == origin + 12_500_000_000
    assert parse_time('1750000000123456789', 0, 'x') == 1_750_000_000_123_456_789
    assert parse_time('2026-03-02T10:15:00Z', 0, 'x') == 1_772_446_500 * 10**9
    assert parse_time('2026-03-02T10:15:00', 0, 'x') == parse_time('2026-03-02T11:15:00+01:00', 0, 'x')
    with pytest.raises(RobodataError, match=r"^ranges.csv:3: 'noon' is not a time"):
        parse_time('noon', origin, 'ranges.csv:3')
    with pytest.raises(RobodataError, match='seconds must be 0 or more'):
        parse_time('-4', origin, 'x')


def test_choices_name_what_was_expected() -> None:
    assert check_choice('outcome', 'success', OUTCOMES) == 'success'
    with pytest.raises(RobodataError, match=r"^status 'done' is not one of recording, complete,"):
        check_choice('status', 'done', STATUSES)
