"""Annotation files from labeling tools, read into `Label`s per episode: Label Studio JSON export, CVAT for video 1.1,
CVAT for images 1.1, COCO. Each reader checks the whole file before returning, so a malformed file is one
AnnotationError line and nothing of it is imported."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from ros_robodata import untrusted
from ros_robodata.dataset.label import Label
from ros_robodata.errors import AnnotationError, RobodataError
from ros_robodata.labeling.coco_labels import coco_labels
from ros_robodata.labeling.cvat_labels import image_labels, is_cvat, read_xml, video_labels
from ros_robodata.labeling.label_studio_labels import labels_from_tasks
from ros_robodata.labeling.taxonomy import Taxonomy

FORMATS = ('label_studio', 'cvat_video', 'cvat_images', 'coco')


def detect_format(path: Path) -> str:
    """The format of an annotation file from its content (not its name)."""
    try:
        head = untrusted.read_text(path, AnnotationError)[:4096].lstrip()
    except RobodataError as err:
        raise AnnotationError(str(err)) from None
    if head.startswith('<'):
        kind = is_cvat(read_xml(path))
        if kind is None:
            raise AnnotationError(f'{path}: XML, but not a CVAT 1.1 export (<annotations> expected)')
        return kind
    if head.startswith('['):
        return 'label_studio'
    if head.startswith('{'):
        return 'coco'
    raise AnnotationError(f'{path}: not an annotation file robodata reads ({", ".join(FORMATS)})')


def read_annotation_file(path: Path, known: Collection[str], *, fmt: str | None = None, episode: str | None = None,
                         annotator: str | None = None,
                         taxonomy: Taxonomy | None = None) -> tuple[str, dict[str, list[Label]]]:
    """(format, labels per episode id) of one annotation file; `known` are the dataset's episode ids."""
    path = Path(path)
    if not path.is_file():
        raise AnnotationError(f'{path}: no such file')
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise AnnotationError(f'{path}: unknown format {fmt!r} (expected {", ".join(FORMATS)})')
    if fmt == 'label_studio':
        try:
            tasks = untrusted.read_json(path, AnnotationError)
        except RobodataError as err:
            raise AnnotationError(str(err)) from None
        labels = labels_from_tasks(tasks, project=path.name, where=str(path))
        if annotator:
            labels = {e: [replace(label, annotator=annotator) for label in ls] for e, ls in labels.items()}
        if episode:
            labels = {episode: [label for ls in labels.values() for label in ls]}
    elif fmt == 'cvat_video':
        labels = video_labels(path, known, episode=episode, annotator=annotator)
    elif fmt == 'cvat_images':
        labels = image_labels(path, known, episode=episode, annotator=annotator)
    else:
        labels = coco_labels(path, known, episode=episode, annotator=annotator, taxonomy=taxonomy)
    unknown = sorted(set(labels) - set(known))
    if unknown:
        raise AnnotationError(f'{path}: labels episode {unknown[0]!r}, which is not in the dataset'
                              + (f' (and {len(unknown) - 1} more)' if len(unknown) > 1 else ''))
    return fmt, labels



__all__ = ['FORMATS', 'detect_format', 'read_annotation_file']
