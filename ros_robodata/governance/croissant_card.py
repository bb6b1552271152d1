"""croissant.json: a release described in Croissant 1.1 (MLCommons' JSON-LD metadata for ML datasets), with its
Responsible-AI fields filled from what the dataset knows.

Written beside a release's manifest, so a catalog, a data portal or a reviewer reads the release in a standard form:
each file with its sha256, the episodes as a record set read from manifest.json, and how the data was collected, by
whom, with what consent and which cameras see people. Written by hand from the spec (the context is the one the
Croissant 1.1 spec gives); mlcroissant validates it in the tests but is not needed to write it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ['CONTEXT', 'croissant_for_release']

CONFORMS_TO = 'http://mlcommons.org/croissant/1.1'
CONTEXT: dict[str, Any] = {
    '@language': 'en', '@vocab': 'https://schema.org/', 'arrayShape': 'cr:arrayShape', 'citeAs': 'cr:citeAs',
    'column': 'cr:column', 'conformsTo': 'dct:conformsTo', 'containedIn': 'cr:containedIn',
    'cr': 'http://mlcommons.org/croissant/', 'rai': 'http://mlcommons.org/croissant/RAI/',
    'data': {'@id': 'cr:data', '@type': '@json'}, 'dataType': {'@id': 'cr:dataType', '@type': '@vocab'},
    'dct': 'http://purl.org/dc/terms/', 'description': {'@container': '@language'},
    'equivalentProperty': 'cr:equivalentProperty', 'examples': {'@id': 'cr:examples', '@type': '@json'},
    'extract': 'cr:extract', 'field': 'cr:field', 'fileProperty': 'cr:fileProperty', 'fileObject': 'cr:fileObject',
    'fileSet': 'cr:fileSet', 'format': 'cr:format', 'includes': 'cr:includes', 'isArray': 'cr:isArray',
    'isLiveDataset': 'cr:isLiveDataset', 'jsonPath': 'cr:jsonPath', 'key': 'cr:key', 'md5': 'cr:md5',
    'name': {'@container': '@language'}, 'parentField': 'cr:parentField', 'path': 'cr:path',
    'recordSet': 'cr:recordSet', 'references': 'cr:references', 'regex': 'cr:regex', 'repeated': 'cr:repeated',
    'replace': 'cr:replace', 'samplingRate': 'cr:samplingRate', 'sc': 'https://schema.org/',
    'separator': 'cr:separator', 'source': 'cr:source', 'subField': 'cr:subField', 'transform': 'cr:transform',
}
_FORMATS = {'.mcap': 'application/x-mcap', '.db3': 'application/vnd.sqlite3', '.yaml': 'application/yaml',
            '.json': 'application/json', '.jsonl': 'application/jsonl'}
_MODES = {'teleop': 'teleoperation', 'kinesthetic': 'kinesthetic teaching', 'autonomous': 'autonomous robot logs',
          'human': 'human demonstrations without a robot', 'unknown': 'not stated (imported)'}


def _en(text: str) -> dict[str, str]:
    return {'en': text}


def croissant_for_release(manifest: dict[str, Any], manifest_sha256: str, *, modes: dict[str, str],
                          pii_cameras: list[str], consent: dict[str, str], license_url: str = '') -> dict[str, Any]:
    """The Croissant 1.1 document of a release.

    Args:
        manifest: the release's manifest (as written).
        manifest_sha256: the manifest's sha256 (what a model names).
        modes: each episode's collection mode (teleop, kinesthetic...).
        pii_cameras: the robot profile's cameras marked `pii: true`.
        consent: participant pseudonym -> consent scope, for the participants in the release.
        license_url: the dataset's license, if dataset.yaml names one.
    """
    name = f'{manifest["dataset"]}-{manifest["name"]}'
    episodes = manifest['episodes']
    files = []
    for episode_id, entry in sorted(episodes.items()):
        for rel, f in sorted(entry['files'].items()):
            path = f'episodes/{episode_id}/{rel}'
            suffix = '.' + rel.rsplit('.', 1)[-1] if '.' in rel else ''
            files.append({'@type': 'cr:FileObject', '@id': path, 'name': _en(path), 'contentUrl': path,
                          'contentSize': f'{f["bytes"]} B', 'encodingFormat': _FORMATS.get(suffix,
                                                                                           'application/octet-stream'),
                          'sha256': f['sha256']})
    manifest_file = {'@type': 'cr:FileObject', '@id': 'manifest.json', 'name': _en('manifest.json'),
                     'contentUrl': f'releases/{manifest["name"]}/manifest.json', 'encodingFormat': 'application/json',
                     'sha256': manifest_sha256,
                     'description': _en('the release manifest: every episode with its files\' sha256')}

    def field(column: str, kind: str, what: str) -> dict[str, Any]:
        return {'@type': 'cr:Field', '@id': f'episodes/{column}', 'name': _en(column), 'description': _en(what),
                'dataType': kind, 'source': {'fileObject': {'@id': 'manifest.json'},
                                             'extract': {'jsonPath': f'$.episodes.*.{column}'}}}

    counted = Counter(modes.get(e, 'unknown') for e in episodes)
    operators = sorted({str(e.get('operator') or '') for e in episodes.values()} - {''})
    collection = ('Robot demonstrations recorded as ROS 2 bags (rosbag2) with ros_robodata, one bag per episode: '
                  + ', '.join(f'{n} by {_MODES.get(m, m)}' for m, n in sorted(counted.items()))
                  + (f'; operators: {", ".join(operators)}' if operators else '') + '.')
    cameras = (f'Cameras {", ".join(pii_cameras)} may show people (marked pii in the robot profile)' if pii_cameras
               else 'No camera is marked as showing people (pii) in the robot profile')
    people = (f'{len(consent)} participant(s), by pseudonymous id, with consent to: '
              + ' | '.join(f'{p}: {c}' for p, c in sorted(consent.items())) if consent else 'no participant named')
    pii = f'{cameras}; {people}.'
    return {
        '@context': CONTEXT, '@type': 'sc:Dataset', 'conformsTo': CONFORMS_TO,
        'name': _en(name),
        'description': _en(f'Release {manifest["name"]} of dataset {manifest["dataset"]}: {len(episodes)} approved '
                           f'episode(s), frozen {manifest["created"]} by {manifest["who"]}'
                           + (f' ({manifest["why"]})' if manifest.get('why') else '')
                           + f'. Manifest sha256 {manifest_sha256}; file paths are relative to the dataset folder.'),
        'url': f'releases/{manifest["name"]}/croissant.json',
        'version': '1.0.0', 'datePublished': str(manifest['created'])[:10],
        'citeAs': f'{name} (manifest sha256 {manifest_sha256})',
        **({'license': license_url} if license_url else {}),
        'rai:dataCollection': collection,
        'rai:dataCollectionType': sorted({_MODES.get(m, m) for m in counted}),
        'rai:dataAnnotationProtocol': ('Outcome labels (success / failure / recovery) by the operator at the rig; '
                                       'reviewers\' verdicts where given; approval against the written policy '
                                       + ((manifest.get('policy') or {}).get('name') or '(any approval)') + '.'),
        'rai:personalSensitiveInformation': pii,
        'rai:dataUseCases': 'Training and evaluating robot manipulation policies (imitation learning).',
        'rai:dataReleaseMaintenancePlan': ('A release is immutable; withdrawn consent retires the episodes and marks '
                                           'this release as affected (`robodata release verify`).'),
        'distribution': [manifest_file, *files],
        'recordSet': [{'@type': 'cr:RecordSet', '@id': 'episodes', 'name': _en('episodes'),
                       'description': _en('one record per episode of the release'),
                       'field': [field('task', 'sc:Text', 'what the robot was doing'),
                                 field('outcome', 'sc:Text', 'the operator\'s outcome label'),
                                 field('operator', 'sc:Text', 'who drove the robot'),
                                 field('score', 'sc:Float', 'the quality score, 0..1')]}],
    }
