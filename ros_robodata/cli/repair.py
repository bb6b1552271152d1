"""`robodata repair`: make a crashed episode's bag whole and its records match what is on disk."""

from __future__ import annotations

import argparse
from typing import Any

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.repair import repair_bag
from ros_robodata.cli.common import print_json, progress, resolve, stdout
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.audit import append_audit


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'repair', help='recover a bag after a crash: rewrite a missing metadata.yaml, salvage a truncated MCAP',
        description='Repair a bag, an episode (its bag, then its episode.yaml and catalog row, status '
                    '"incomplete" if it was still "recording") or every episode of a dataset that needs it. '
                    'Damaged originals are kept in bag/damaged/.')
    p.add_argument('path', help='an episode folder, a bag directory, or a dataset')
    p.add_argument('--json', action='store_true', help='print machine-readable JSON')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = resolve(args.path)
    results: list[dict[str, Any]] = []
    if target.kind == 'bag':
        report = repair_bag(target.path)
        results.append({'bag': str(target.path), 'actions': report.actions, 'messages': report.message_count})
    else:
        assert target.dataset is not None
        ids = [target.episode_id] if target.kind == 'episode' else target.dataset.episode_ids()
        for episode_id in progress(ids, 'repairing', quiet=args.json):
            assert episode_id is not None
            results.append(repair_episode(target.dataset, episode_id))
    if args.json:
        print_json(results)
    else:
        for r in results:
            name = r.get('episode') or r['bag']
            stdout.print(f'{name}: ' + ('; '.join(r['actions']) if r['actions'] else 'whole, nothing to do'))
    return 0


def repair_episode(dataset: Dataset, episode_id: str) -> dict[str, Any]:
    """Repair one episode; a whole episode whose records agree with its bag is left untouched."""
    episode = dataset.episode(episode_id)
    bag = dataset.bag_dir(episode_id)
    actions: list[str] = []
    if not dataset.bag_files(episode_id):
        return {'episode': episode_id, 'actions': ['no bag to repair'], 'messages': 0}
    with BagReader(bag) as reader:
        needs_bag_repair = not reader.complete
    if needs_bag_repair:
        actions.extend(repair_bag(bag).actions)
    if needs_bag_repair or episode.status == 'recording' or not episode.bag_sha256:
        with BagReader(bag) as reader:
            episode.topics = {
                name: {**episode.topics.get(name, {}), 'type': info.msgtype, 'count': info.count}
                for name, info in reader.topics.items()
            }
            if reader.start_ns is not None:
                episode.start_ns = episode.start_ns or reader.start_ns
                episode.stop_ns = reader.end_ns
            messages = reader.message_count
        if episode.status == 'recording' or (needs_bag_repair and episode.status in ('complete', 'approved')):
            why = 'the recorder did not close it' if episode.status == 'recording' else 'its bag was damaged'
            actions.append(f'status {episode.status} -> incomplete ({why})')
            episode.status = 'incomplete'
        dataset.save_episode(episode)
        dataset.record_checksums(episode_id)
        actions.append('episode.yaml, catalog and checksums updated from the bag')
        append_audit(dataset.audit_path, 'repair', episode_id, actions=actions)
    else:
        with BagReader(bag) as reader:
            messages = reader.message_count
    return {'episode': episode_id, 'actions': actions, 'messages': messages}
