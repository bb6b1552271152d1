"""The labeling tools' file formats, one module per tool and direction: task files written for Label Studio,
CVAT and COCO (`*_tasks`), their annotations read back (`*_labels`), and the labeling taxonomy both sides share.

It sits below `export/` and `review/` (they write and read these files) and above `dataset/` (a label is a
`dataset.label.Label`).
"""
