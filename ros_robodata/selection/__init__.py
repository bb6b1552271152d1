"""Which episodes are worth a human's time: the review queue (`robodata select`)."""

from ros_robodata.selection.queue import (
    DEFAULT_BUDGET,
    QUEUE_FILE,
    REVIEW_DIR,
    SelectRun,
    parse_budget,
    read_queue,
    select_for_review,
)
from ros_robodata.selection.rank import Pick
from ros_robodata.selection.reviewed import reviewed_verdict
from ros_robodata.selection.signals import MIN_SCORE, WEIGHTS
from ros_robodata.selection.uncertainty import load_uncertainty

__all__ = ['DEFAULT_BUDGET', 'MIN_SCORE', 'QUEUE_FILE', 'REVIEW_DIR', 'WEIGHTS', 'Pick', 'SelectRun',
           'load_uncertainty', 'parse_budget', 'read_queue', 'reviewed_verdict', 'select_for_review']
