"""`robodata review push|pull|agreement|machine` and `robodata annotations import|list`: the review loop's labels."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from ros_robodata.cli.command_common import print_json, progress, stderr, stdout
from ros_robodata.cli.pii_options import add_pii_arguments
from ros_robodata.dataset.annotations import read_annotations
from ros_robodata.dataset.dataset import Dataset, is_dataset
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.labeling.labels_file import FORMATS
from ros_robodata.labeling.taxonomy import Taxonomy, load_taxonomy
from ros_robodata.paths import config_path
from ros_robodata.review.agreement import Agreement, Thresholds, agreement, write_disagreements
from ros_robodata.review.apply import current_labels, import_annotations
from ros_robodata.review.label_studio.client import read_token
from ros_robodata.review.label_studio.server_sync import pull, push, review_dir
from ros_robodata.review.machine import machine_report
from ros_robodata.vocabulary import parse_duration

TOKEN_HELP = ('file holding the API token (else $LABEL_STUDIO_API_KEY); the token is never taken on the command '
              'line and never written into the dataset')


def add_parsers(sub: Any) -> None:
    review = sub.add_parser('review', help='send episodes to Label Studio, bring the labels back, check them',
                            description='The review loop: push episodes to a Label Studio project, pull the '
                                        'annotations into episodes/<id>/annotations.json, measure agreement between '
                                        'annotators and between the machine and the reviewers.')
    rsub = review.add_subparsers(dest='review_command', metavar='SUBCOMMAND', required=True)

    p = rsub.add_parser('push', help='create or update a Label Studio project with one timeline task per episode',
                        description='Create or update the project NAME on the Label Studio server URL: per episode a '
                                    'timeline task (the reference camera as a video, the machine\'s subtasks and '
                                    'events and its success verdict as predictions, the episode verdict to choose). '
                                    'Pushing again updates the tasks, never duplicates them.')
    _server_arguments(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument('--queue', type=int, metavar='N', help='the first N episodes of the review queue '
                       '(review/queue.json); without a queue file, the first N episodes by id')
    which.add_argument('--episodes', nargs='+', metavar='ID', help='these episodes')
    p.add_argument('--media', help='folder for the videos Label Studio plays (default: DATASET/review/media)')
    p.add_argument('--document-root', help='the server\'s LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT, holding --media '
                   '(default: the media folder itself)')
    p.add_argument('--every', default='0.2s', help='one video frame every T of the reference camera (default 0.2s)')
    p.add_argument('--frames', metavar='T', help='also one image task every T of each pushed episode (boxes, '
                   'polygons, tags of the taxonomy) in the project "NAME frames"')
    p.add_argument('--taxonomy', help='class taxonomy YAML (default: config/taxonomy.yaml)')
    p.add_argument('--cameras', help='comma-separated profile camera names whose frames become media (default: all; '
                   'the first is the timeline\'s video)')
    add_pii_arguments(p, 'video frame and image')
    p.set_defaults(func=run_push)

    p = rsub.add_parser('pull', help='bring a Label Studio project\'s annotations into the dataset',
                        description='Fetch every annotation of the project and append it to each episode\'s '
                                    'annotations.json (a label already there is not added again; a changed one '
                                    'supersedes the old, which is kept); every change goes to audit.jsonl; then '
                                    'agreement between annotators is measured and review/disagreements.json written.')
    _server_arguments(p)
    _threshold_arguments(p)
    p.set_defaults(func=run_pull)

    p = rsub.add_parser('agreement', help='agreement between annotators, per task and per annotator',
                        description='Temporal IoU of segments, Cohen\'s and Fleiss\' kappa of verdicts and box '
                                    'classes, box IoU across annotators and box consistency along a track, from the '
                                    'labels in the dataset; tasks under a threshold go to review/disagreements.json.')
    p.add_argument('dataset', metavar='DATASET')
    _threshold_arguments(p)
    p.add_argument('--json', action='store_true', help='machine-readable output')
    p.set_defaults(func=run_agreement)

    p = rsub.add_parser('machine', help='how the segmenter and the success verdict agree with reviewed labels',
                        description='Per event kind, the machine\'s events confirmed by a reviewer\'s segment of the '
                                    'class named after the kind (precision) and the reviewed segments the machine '
                                    'found (recall); the subtask timeline\'s temporal IoU; the success verdict and '
                                    'the operator\'s outcome against the reviewed verdict.')
    p.add_argument('dataset', metavar='DATASET')
    p.add_argument('--tolerance', default='0.25s', help='how far outside a segment an event still counts (0.25s)')
    p.add_argument('--json', action='store_true', help='machine-readable output')
    p.set_defaults(func=run_machine)

    ann = sub.add_parser('annotations', help='import annotation files, list the labels of an episode',
                         description='Labels made outside robodata: Label Studio JSON export, CVAT for video 1.1 XML, '
                                     'CVAT for images 1.1 XML, COCO.')
    asub = ann.add_subparsers(dest='annotations_command', metavar='SUBCOMMAND', required=True)
    p = asub.add_parser('import', help='import one annotation file into a dataset',
                        description='Read FILE whole (a malformed file imports nothing), then append its labels to '
                                    'the episodes it names (annotations.json, audit.jsonl). Importing the same file '
                                    'again adds nothing.')
    p.add_argument('file', metavar='FILE')
    p.add_argument('--dataset', required=True, help='the dataset to import into')
    p.add_argument('--format', choices=FORMATS, help='the file\'s format (default: told from its content)')
    p.add_argument('--episode', help='the episode the file labels, when its names do not say')
    p.add_argument('--annotator', help='who made the labels, when the file does not say (CVAT owner, COCO)')
    p.add_argument('--taxonomy', help='class taxonomy YAML mapping COCO category ids to class paths '
                   '(default: config/taxonomy.yaml)')
    p.add_argument('--who', help='who imports (audit.jsonl; default: login name)')
    p.add_argument('--json', action='store_true', help='machine-readable output')
    p.set_defaults(func=run_import)

    p = asub.add_parser('list', help='the labels of an episode',
                        description='The current labels of an episode (superseded ones with --all).')
    p.add_argument('episode', metavar='EPISODE', help='the episode folder, DATASET/episodes/ID')
    p.add_argument('--all', action='store_true', help='also the labels a later one superseded')
    p.add_argument('--json', action='store_true', help='machine-readable output')
    p.set_defaults(func=run_list)


def _server_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument('dataset', metavar='DATASET')
    p.add_argument('--label-studio', required=True, metavar='URL', help='the Label Studio server, e.g. '
                   'http://127.0.0.1:8080')
    p.add_argument('--project', required=True, metavar='NAME', help='the project\'s title')
    p.add_argument('--token-file', metavar='FILE', help=TOKEN_HELP)
    p.add_argument('--json', action='store_true', help='machine-readable output')


def _threshold_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument('--temporal-iou', type=float, default=Thresholds.temporal_iou,
                   help=f'flag a class\'s segments under this temporal IoU (default {Thresholds.temporal_iou})')
    p.add_argument('--box-iou', type=float, default=Thresholds.box_iou,
                   help=f'flag boxes under this mean IoU across annotators (default {Thresholds.box_iou})')
    p.add_argument('--track-iou', type=float, default=Thresholds.track_iou,
                   help=f'flag a track whose consecutive boxes overlap less (default {Thresholds.track_iou})')


def _thresholds(args: argparse.Namespace) -> Thresholds:
    for name in ('temporal_iou', 'box_iou', 'track_iou'):
        value = getattr(args, name)
        if not 0.0 <= value <= 1.0:
            raise RobodataError(f'--{name.replace("_", "-")} must be within 0..1, got {value}')
    return Thresholds(args.temporal_iou, args.box_iou, args.track_iou)


def _dataset(path: str) -> Dataset:
    if not is_dataset(Path(path)):
        raise DatasetError(f'{path}: not a dataset (no dataset.yaml)')
    return Dataset.open(path)


def _taxonomy(path: str | None) -> Taxonomy:
    return load_taxonomy(path or config_path('taxonomy.yaml'))


def run_push(args: argparse.Namespace) -> int:
    dataset = _dataset(args.dataset)
    token = read_token(args.token_file)
    media = Path(args.media) if args.media else review_dir(dataset) / 'media'
    result = push(dataset, url=args.label_studio, project=args.project, token=token, taxonomy=_taxonomy(args.taxonomy),
                  media_dir=media, document_root=Path(args.document_root) if args.document_root else None,
                  episodes=args.episodes, queue=args.queue, every_ns=parse_duration(args.every, '--every'),
                  frames_every_ns=None if args.frames is None else parse_duration(args.frames, '--frames'),
                  progress=lambda it: progress(it, 'exporting the videos', quiet=args.json),
                  cameras=[c.strip() for c in (args.cameras or '').split(',') if c.strip()],
                  allow_pii=args.allow_pii, blur_faces=args.blur_faces)
    if args.json:
        print_json(result.to_json())
        return 0
    stdout.print(result.chosen_from, markup=False)
    stdout.print(f'project {args.project!r} (id {result.project_id}{", created" if result.project_created else ""}): '
                 f'{len(result.created)} task(s) created, {len(result.updated)} updated, '
                 f'{len(result.unchanged)} unchanged', markup=False)
    if result.frames:
        f = result.frames
        stdout.print(f'project {f["project"]!r} (id {f["project_id"]}): {f["created"]} frame task(s) created, '
                     f'{f["updated"]} updated, {f["unchanged"]} unchanged', markup=False)
    for episode, why in sorted(result.skipped.items()):
        stderr.print(f'{episode}: not pushed: {why}', markup=False)
    return 3 if result.skipped else 0


def run_pull(args: argparse.Namespace) -> int:
    dataset = _dataset(args.dataset)
    result = pull(dataset, url=args.label_studio, project=args.project, token=read_token(args.token_file),
                  thresholds=_thresholds(args))
    if args.json:
        print_json(result.to_json())
        return 0
    applied = result.applied
    stdout.print(f'{result.tasks} task(s) of project {args.project!r}: {applied.added} label(s) added '
                 f'({applied.superseded} superseding a changed one), {applied.unchanged} already there', markup=False)
    for task, why in sorted(result.skipped.items()):
        stderr.print(f'task {task}: skipped: {why}', markup=False)
    _show_flagged(result.agreement, result.disagreements)
    return 0


def run_agreement(args: argparse.Namespace) -> int:
    dataset = _dataset(args.dataset)
    result = agreement(current_labels(dataset), _thresholds(args))
    path = write_disagreements(dataset.root / 'review', result)
    if args.json:
        print_json({**result.to_json(), 'disagreements': str(path)})
        return 0
    table = Table(box=None, pad_edge=False)
    for column in ('episode', 'annotators', 'verdicts', 'temporal IoU', 'box IoU', 'track min IoU', 'flag'):
        table.add_column(column)
    for task in result.tasks.values():
        table.add_row(task.episode_id, ', '.join(task.annotators),
                      ', '.join(f'{a}: {v}' for a, v in sorted(task.verdicts.items())) or '-',
                      ', '.join(f'{k.rsplit("/", 1)[-1]} {v:.2f}' for k, v in task.temporal_iou.items()) or '-',
                      '-' if task.box_iou is None else f'{task.box_iou:.2f}',
                      f'{min(task.track_min_iou.values()):.2f}' if task.track_min_iou else '-',
                      'yes' if task.reasons else '')
    stdout.print(table)
    for pair, kappa in result.verdict_cohen.items():
        stdout.print(f'verdicts, Cohen\'s kappa {pair.replace("|", " vs ")}: {_num(kappa)}', markup=False)
    stdout.print(f'verdicts, Fleiss\' kappa: {_num(result.verdict_fleiss)}; box classes, Fleiss\' kappa: '
                 f'{_num(result.box_class_fleiss)}', markup=False)
    for annotator, entry in sorted(result.annotators.items()):
        stdout.print(f'{annotator}: {entry["tasks"]} task(s), verdict agreement with the others '
                     f'{_num(entry["verdict_agreement"])}, {entry["flagged_tasks"]} flagged', markup=False)
    _show_flagged(result, path)
    return 0


def _num(value: float | None) -> str:
    return '-' if value is None else f'{value:.2f}'


def _show_flagged(result: Agreement, path: Path) -> None:
    flagged = result.flagged
    if not flagged:
        stdout.print(f'annotators agree on every task ({path} lists none)', markup=False)
        return
    stdout.print(f'{len(flagged)} task(s) back to the review queue ({path}):', markup=False)
    for task in flagged:
        stdout.print(f'  {task.episode_id}: {"; ".join(task.reasons)}', markup=False)


def run_machine(args: argparse.Namespace) -> int:
    dataset = _dataset(args.dataset)
    tolerance = parse_duration(args.tolerance, '--tolerance', allow_zero=True) / 1e9
    report = machine_report(dataset, current_labels(dataset), tolerance_s=tolerance)
    if args.json:
        print_json(report.to_json())
        return 0
    if not report.episodes:
        stdout.print(f'{dataset.root}: no reviewed episode yet (pull or import labels first)', markup=False)
        return 0
    table = Table(box=None, pad_edge=False)
    for column in ('event kind', 'machine events', 'confirmed', 'precision', 'reviewed segments', 'found', 'recall'):
        table.add_column(column)
    for kind in report.kinds.values():
        table.add_row(kind.kind, str(kind.machine_events), str(kind.confirmed), _num(kind.precision),
                      str(kind.reviewed_segments), str(kind.found), _num(kind.recall))
    stdout.print(table)
    doc = report.to_json()
    for name, iou in doc['subtask_iou'].items():
        stdout.print(f'subtask {name}: temporal IoU with the reviewers {iou:.2f}', markup=False)
    if report.unchecked_kinds:
        stdout.print('not checked (no reviewer class named after them): '
                     + ', '.join(f'{k} ({n})' for k, n in sorted(report.unchecked_kinds.items())), markup=False)
    v, o = doc['success_verdict'], doc['operator_outcome']
    stdout.print(f'success verdict agrees with the reviewers on {v["agreeing"]} of {v["compared"]} episode(s); '
                 f'the operator\'s outcome on {o["agreeing"]} of {o["compared"]} ({report.episodes} reviewed)',
                 markup=False)
    return 0


def run_import(args: argparse.Namespace) -> int:
    dataset = _dataset(args.dataset)
    applied = import_annotations(dataset, args.file, fmt=args.format, episode=args.episode, annotator=args.annotator,
                                 taxonomy=_taxonomy(args.taxonomy), who=args.who)
    if args.json:
        print_json(applied.to_json())
        return 0
    stdout.print(f'{args.file} ({applied.format}): {applied.added} label(s) added to {len(applied.episodes)} '
                 f'episode(s) ({applied.superseded} superseding a changed one), {applied.unchanged} already there',
                 markup=False)
    return 0


def run_list(args: argparse.Namespace) -> int:
    folder = Path(args.episode)
    if not (folder / 'episode.yaml').is_file():
        raise DatasetError(f'{folder}: not an episode folder (no episode.yaml)')
    annotations = read_annotations(folder)
    shown = annotations.labels if args.all else annotations.current()
    if args.json:
        print_json({'episode': annotations.episode_id, 'reviewed_verdict': annotations.reviewed_verdict(),
                    'labels': [{'id': s.id, 'revision': s.revision, 'supersedes': s.supersedes or None,
                                **s.label.to_json()} for s in shown]})
        return 0
    table = Table(box=None, pad_edge=False)
    for column in ('id', 'kind', 'value', 'where', 'annotator', 'source', 'time'):
        table.add_column(column)
    for s in shown:
        label = s.label
        if label.kind == 'segment':
            where = f'{label.start_s:.2f}-{label.end_s:.2f} s'
        elif label.kind == 'verdict':
            where = 'episode'
        else:
            where = f'frame {label.frame}' + (f' track {label.track}' if label.track else '') \
                + (' occluded' if label.occluded else '')
        table.add_row(s.id.rsplit('/', 1)[-1], label.kind, label.value, where, label.annotator,
                      f'{label.source.tool} {label.source.project}'.strip(), label.time)
    stdout.print(table)
    verdict = annotations.reviewed_verdict()
    if verdict:
        stdout.print(f'reviewed verdict: {verdict}', markup=False)
    return 0
