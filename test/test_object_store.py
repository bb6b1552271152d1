"""Datasets in object storage: `robodata score s3://bucket/dataset` (and segment), locally and on a Ray cluster,
against an S3-compatible server on loopback (moto's, from PyPI: no real object store installs here). What a user
checks: the sidecars put back are a local run's, byte for byte; the bags in the bucket are untouched and never
staged on the driver; a rerun on the cluster submits nothing; no credential reaches a message."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
import s3fs
from moto.server import ThreadedMotoServer

from test.ray_nodes import RayNodes, free_port

SECRET = 'robodata-secret-' + secrets.token_hex(8)


@pytest.fixture(scope='module')
def store() -> Iterator[dict[str, str]]:
    """The environment a process needs to reach the S3-compatible server (credentials included)."""
    port = free_port()
    server = ThreadedMotoServer(ip_address='127.0.0.1', port=port, verbose=False)
    server.start()
    env = {'AWS_ACCESS_KEY_ID': 'robodata-test-key', 'AWS_SECRET_ACCESS_KEY': SECRET,
           'AWS_ENDPOINT_URL': f'http://127.0.0.1:{port}', 'AWS_DEFAULT_REGION': 'us-east-1'}
    try:
        yield env
    finally:
        server.stop()


def _fs(env: dict[str, str]) -> s3fs.S3FileSystem:
    return s3fs.S3FileSystem(key=env['AWS_ACCESS_KEY_ID'], secret=env['AWS_SECRET_ACCESS_KEY'],
                             client_kwargs={'endpoint_url': env['AWS_ENDPOINT_URL']}, use_listings_cache=False)


@pytest.fixture
def demo_in_bucket(demo_run, store, tmp_path):
    """(s3 URL, a local copy of the same unscored dataset): the demo's dataset uploaded to a fresh bucket."""
    run, out = demo_run
    assert run.returncode == 0, run.stderr
    local = tmp_path / 'local'
    shutil.copytree(out / 'dataset', local, symlinks=True)
    for sidecar in list(local.rglob('quality.json')) + list(local.glob('quality_summary.json')):
        sidecar.unlink()
    fs = _fs(store)
    bucket = f'fleet-{secrets.token_hex(4)}'
    fs.mkdir(bucket)
    for path in sorted(p for p in local.rglob('*') if p.is_file()):
        fs.put_file(str(path), f'{bucket}/dataset/{path.relative_to(local).as_posix()}')
    return f's3://{bucket}/dataset', local


def _robodata(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', *args], capture_output=True, text=True,
                          env=env, timeout=600)


def _in_bucket(env: dict[str, str], url: str, suffix: str) -> dict[str, bytes]:
    fs = _fs(env)
    root = url.removeprefix('s3://')
    return {path[len(root) + 1:]: fs.cat_file(path) for path in sorted(fs.find(root)) if path.endswith(suffix)}


def test_score_a_dataset_in_the_bucket_puts_back_what_a_local_run_writes(demo_in_bucket, store, tmp_path):
    url, local = demo_in_bucket
    env = {**os.environ, **store, 'XDG_CACHE_HOME': str(tmp_path / 'cache')}
    bags_before = _in_bucket(store, url, '.mcap')
    assert bags_before
    assert _robodata('score', str(local), env=env).returncode == 0

    run = _robodata('score', url, env=env)
    assert run.returncode == 0, run.stderr
    written = {str(p.relative_to(local)): p.read_bytes() for p in local.rglob('*.json')}
    assert _in_bucket(store, url, '.json') == written
    assert _in_bucket(store, url, '.mcap') == bags_before
    assert 'file(s) written back to ' + url in run.stderr
    assert not list((tmp_path / 'cache').rglob('*.mcap'))  # the driver never holds a bag
    assert SECRET not in run.stdout + run.stderr


def test_on_a_cluster_each_task_fetches_its_episode_and_a_rerun_submits_nothing(demo_in_bucket, store, tmp_path):
    url, local = demo_in_bucket
    assert _robodata('segment', str(local), env={**os.environ}).returncode == 0
    assert _robodata('score', str(local), env={**os.environ}).returncode == 0
    nodes = RayNodes(nodes=2, cpus=1, extra_env=store)  # every node reaches the store with its own environment
    try:
        env = nodes.env
        first = _robodata('segment', url, '--ray', nodes.address, '--json', env=env)
        assert first.returncode == 0, first.stderr
        scored = _robodata('score', url, '--ray', nodes.address, '--json', env=env)
        assert scored.returncode == 0, scored.stderr
        episodes = len(list(local.glob('episodes/*/episode.yaml')))
        assert json.loads(scored.stdout)['cluster']['run'] == episodes
        written = {str(p.relative_to(local)): p.read_bytes() for p in local.rglob('*.json')}
        assert _in_bucket(store, url, '.json') == written

        again = _robodata('score', url, '--ray', nodes.address, '--json', env=env)
        assert again.returncode == 0, again.stderr
        cluster = json.loads(again.stdout)['cluster']
        assert (cluster['run'], cluster['cached']) == (0, episodes)
        assert 'robodata score: 0 file(s) written back' in again.stderr
        for run in (first, scored, again):
            assert SECRET not in run.stdout + run.stderr
    finally:
        nodes.stop()


def test_a_url_that_holds_no_dataset_is_one_line(store, tmp_path):
    env = {**os.environ, **store, 'XDG_CACHE_HOME': str(tmp_path / 'cache')}
    fs = _fs(store)
    fs.mkdir('empty-bucket')
    fs.pipe_file('empty-bucket/notes/readme.txt', b'not a dataset')
    run = _robodata('score', 's3://empty-bucket/notes', env=env)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        'robodata score: error: s3://empty-bucket/notes: not a ros_robodata dataset (no dataset.yaml there)']
