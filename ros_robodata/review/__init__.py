"""The review loop's second half: human labels into the dataset and what they say.

The label (`dataset.label`), the annotations store (`dataset.annotations`: episodes/<id>/annotations.json,
append-only in revisions, audit.jsonl) and the tools' file formats (`labeling`: Label Studio JSON, CVAT video and
images 1.1, COCO) sit lower down; here: `apply`
(labels into a dataset, all or nothing; the catalog's reviewed outcome), `agreement` (annotators against each
other; review/disagreements.json), `machine` (the segmenter and success verdict against reviewed labels),
`label_studio` (push episodes to a Label Studio project and pull the annotations, through label-studio-sdk).
"""

from ros_robodata.dataset.annotations import EpisodeAnnotations, read_annotations
from ros_robodata.dataset.label import KINDS, VERDICTS, Label, Source
from ros_robodata.review.agreement import Agreement, Thresholds, agreement, write_disagreements
from ros_robodata.review.apply import Applied, apply_labels, current_labels, import_annotations
from ros_robodata.review.machine import MachineReport, machine_report

__all__ = ['KINDS', 'VERDICTS', 'Agreement', 'Applied', 'EpisodeAnnotations', 'Label', 'MachineReport', 'Source',
           'Thresholds', 'agreement', 'apply_labels', 'current_labels', 'import_annotations', 'machine_report',
           'read_annotations', 'write_disagreements']
