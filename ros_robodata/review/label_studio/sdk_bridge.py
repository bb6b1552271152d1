"""The few Label Studio calls robodata makes, through label-studio-sdk, run by the Python that has the SDK.

label-studio-sdk pins numpy and OpenCV below ours, so it lives in a venv of its own (`.venv-labelstudio`, made by
tools/labelstudio_env.py) and this file runs there as a script: it imports only the standard library and the SDK,
reads one JSON request on stdin and writes one JSON answer on stdout. The token comes in the environment
(ROBODATA_LABEL_STUDIO_TOKEN), never on the command line, and is scrubbed from every message it prints.

Requests: {"op": "push", "url", "project", "label_config", "storage_path", "tasks": [{"key", "data",
"predictions": [{"model_version", "result", "score"}]}]} creates or updates the project and its tasks, matched by
data.robodata_key (so pushing again never duplicates); {"op": "pull", "url", "project"} returns every task with
its annotations, `completed_by` as the annotator's email.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOKEN_ENV = 'ROBODATA_LABEL_STUDIO_TOKEN'


class BridgeError(Exception):
    """One line for the user."""


def _client(url: str) -> Any:
    # Optional dependency: label-studio-sdk, only in .venv-labelstudio, where this file runs as a script.
    from label_studio_sdk import LabelStudio

    token = os.environ.get(TOKEN_ENV, '')
    if not token:
        raise BridgeError('no Label Studio token in the environment')
    return LabelStudio(base_url=url, api_key=token, timeout=120)


def _find_project(ls: Any, title: str) -> Any | None:
    for project in ls.projects.list(title=title):
        if project.title == title:
            return project
    return None


def _plain(value: Any) -> Any:
    """A JSON round trip, so values compare as the server stores them (floats, key order aside)."""
    return json.loads(json.dumps(value, sort_keys=True))


def push(request: dict[str, Any]) -> dict[str, Any]:
    ls = _client(request['url'])
    title = request['project']
    project = _find_project(ls, title)
    created_project = project is None
    if project is None:
        project = ls.projects.create(title=title, label_config=request['label_config'],
                                     description='Episodes for review, pushed by robodata review push')
    elif (project.label_config or '').strip() != request['label_config'].strip():
        ls.projects.update(id=project.id, label_config=request['label_config'])
    storage = request.get('storage_path')
    if storage:
        have = [s for s in ls.import_storage.local.list(project=project.id) if s.path == storage]
        if not have:
            ls.import_storage.local.create(project=project.id, path=storage, title='robodata review media',
                                           use_blob_urls=False)
    existing: dict[str, Any] = {}
    for task in ls.tasks.list(project=project.id, fields='all'):
        key = (task.data or {}).get('robodata_key')
        if key:
            existing.setdefault(key, task)
    created: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    new_tasks = []
    task_ids: dict[str, int] = {}
    for spec in request['tasks']:
        key = spec['key']
        data = dict(spec['data'], robodata_key=key)
        task = existing.get(key)
        if task is None:
            new_tasks.append((key, data, spec.get('predictions') or []))
            continue
        task_ids[key] = task.id
        changed = False
        if _plain(task.data) != _plain(data):
            ls.tasks.update(id=str(task.id), data=data)
            changed = True
        wanted = sorted((_plain(p['result']), p.get('model_version', '')) for p in spec.get('predictions') or ())
        have_predictions = list(ls.predictions.list(task=task.id))
        have = sorted((_plain(p.result), p.model_version or '') for p in have_predictions)
        if wanted != have:
            for p in have_predictions:
                ls.predictions.delete(id=p.id)
            for p in spec.get('predictions') or ():
                ls.predictions.create(task=task.id, result=p['result'], model_version=p.get('model_version', ''),
                                      score=p.get('score'))
            changed = True
        (updated if changed else unchanged).append(key)
    if new_tasks:
        answer = ls.projects.import_tasks(id=project.id, request=[d for _, d, _ in new_tasks], return_task_ids=True)
        for (key, _, predictions), task_id in zip(new_tasks, answer.task_ids or [], strict=True):
            task_ids[key] = task_id
            created.append(key)
            for p in predictions:
                ls.predictions.create(task=task_id, result=p['result'], model_version=p.get('model_version', ''),
                                      score=p.get('score'))
    return {'project_id': project.id, 'project_created': created_project, 'created': created, 'updated': updated,
            'unchanged': unchanged, 'task_ids': task_ids}


def pull(request: dict[str, Any]) -> dict[str, Any]:
    ls = _client(request['url'])
    project = _find_project(ls, request['project'])
    if project is None and request.get('optional'):
        return {'project_id': None, 'tasks': []}
    if project is None:
        raise BridgeError(f'no project {request["project"]!r} on {request["url"]} (push it first)')
    emails = {u.id: (u.email or u.username or str(u.id)) for u in ls.users.list()}
    tasks = []
    for task in ls.tasks.list(project=project.id, fields='all'):
        annotations = []
        for a in ls.annotations.list(id=task.id):
            annotations.append({'id': a.id, 'completed_by': {'email': emails.get(a.completed_by, str(a.completed_by))},
                                'created_at': a.created_at.isoformat() if a.created_at else '',
                                'updated_at': a.updated_at.isoformat() if a.updated_at else '',
                                'was_cancelled': bool(a.was_cancelled), 'result': a.result or []})
        tasks.append({'id': task.id, 'data': task.data, 'annotations': annotations})
    return {'project_id': project.id, 'tasks': tasks}


def _scrub(text: str) -> str:
    token = os.environ.get(TOKEN_ENV, '')
    return text.replace(token, '<token>') if token else text


def _explain(err: BaseException, url: str) -> str:
    status = getattr(err, 'status_code', None)
    if status in (401, 403):
        return f'{url}: Label Studio refused the token (HTTP {status}); check it (Account & Settings > Access Token)'
    if status is not None:
        body = ' '.join(str(getattr(err, 'body', '')).split())[:300]
        return f'{url}: Label Studio answered HTTP {status}: {body}'
    name = type(err).__name__
    if 'Connect' in name or 'Timeout' in name or isinstance(err, OSError):
        return f'{url}: cannot reach Label Studio ({name}: {" ".join(str(err).split())[:200]})'
    return f'{url}: {name}: {" ".join(str(err).split())[:300]}'


def main() -> int:
    try:
        request = json.loads(sys.stdin.read())
    except ValueError as err:
        print(json.dumps({'error': f'bridge: bad request ({err})'}))
        return 1
    url = str(request.get('url', ''))
    try:
        answer = {'push': push, 'pull': pull}[request['op']](request)
    except BridgeError as err:
        print(json.dumps({'error': _scrub(str(err))}))
        return 1
    except Exception as err:  # every SDK or transport failure becomes one line for the user
        print(json.dumps({'error': _scrub(_explain(err, url))}))
        return 1
    print(json.dumps(answer))
    return 0


if __name__ == '__main__':
    sys.exit(main())
