"""The HRI taxonomy (config/taxonomies/hri.yaml, issue 36 part 6) and taxonomy attributes: the context a label
carries (a smile with eye contact is not a smile looking away), exported to Label Studio and CVAT."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from ros_robodata.capture.protocol import load_protocol
from ros_robodata.errors import TaxonomyError
from ros_robodata.labeling.cvat_tasks import cvat_labels
from ros_robodata.labeling.label_studio_labels import labels_from_tasks
from ros_robodata.labeling.label_studio_tasks import label_studio_image_config, label_studio_timeline_config
from ros_robodata.labeling.taxonomy import load_taxonomy, parse_taxonomy
from ros_robodata.review.label_studio.tasks import review_config

CONFIG = Path(__file__).parents[1] / 'config'
HRI = CONFIG / 'taxonomies' / 'hri.yaml'
EXPRESSIONS = ['neutral', 'smile', 'anger', 'content', 'disgust', 'fear', 'sadness', 'surprise']


def _under(taxonomy_path: Path, group: str) -> list[str]:
    taxonomy = load_taxonomy(taxonomy_path)
    return [c.name for c in taxonomy.with_kind('temporal') if c.parent == group]


def test_the_hri_taxonomy_labels_what_the_protocols_ask_for() -> None:
    assert _under(HRI, 'hri/expression') == EXPRESSIONS
    assert list(load_protocol('hri_expressions').factor('expression').levels) == EXPRESSIONS
    assert _under(HRI, 'hri/orientation') == ['front', 'up', 'down', 'left', 'right']
    assert _under(HRI, 'hri/gaze') == ['eye_contact', 'looking_away']
    assert _under(HRI, 'hri/gesture') == list(load_protocol('hri_gestures').factor('gesture').levels)
    assert _under(HRI, 'hri/posture') == ['standing', 'sitting', 'leaning_forward', 'leaning_back']
    taxonomy = load_taxonomy(HRI)
    smile = taxonomy.attributes_of('hri/expression/smile')
    assert [(a.name, a.values, a.default) for a in smile] == [
        ('gaze', ('eye_contact', 'looking_away'), 'eye_contact'),
        ('orientation', ('front', 'up', 'down', 'left', 'right'), 'front')]
    assert [a.name for a in taxonomy.attributes_of('hri/gesture/wave')] == ['hand', 'gaze']


def _choices(config: str) -> dict[str, ET.Element]:
    return {c.attrib['name']: c for c in ET.fromstring(config).iter('Choices')}


def test_label_studio_configs_carry_the_attributes_per_region() -> None:
    taxonomy = load_taxonomy(HRI)
    for config in (label_studio_timeline_config(taxonomy), review_config(taxonomy)):
        choices = _choices(config)
        gaze = choices['attribute_gaze']
        assert gaze.attrib['perRegion'] == 'true' and gaze.attrib['toName'] == 'video'
        assert (gaze.attrib['visibleWhen'], gaze.attrib['whenTagName']) == ('region-selected', 'video')
        shown_for = gaze.attrib['whenLabelValue'].split(',')
        assert 'hri/expression/smile' in shown_for and 'hri/gesture/wave' in shown_for
        assert 'hri/posture/sitting' not in shown_for
        assert [(c.attrib['value'], c.attrib.get('selected')) for c in gaze] == [('eye_contact', 'true'),
                                                                                 ('looking_away', None)]
        assert [c.attrib['value'] for c in choices['attribute_hand']] == ['right', 'left', 'both']
        assert choices['attribute_facing'].attrib['whenLabelValue'].split(',') == [
            'hri/posture/standing', 'hri/posture/sitting', 'hri/posture/leaning_forward', 'hri/posture/leaning_back']
    # The image config: expressions are also whole-frame tags, not regions: no per-region attribute there.
    assert not [n for n in _choices(label_studio_image_config(taxonomy)) if n.startswith('attribute_')]


def test_cvat_labels_carry_the_attributes_as_mutable_selects() -> None:
    labels = {label['name']: label for label in cvat_labels(load_taxonomy(HRI))}
    assert labels['hri/expression/smile']['attributes'] == [
        {'name': 'gaze', 'mutable': True, 'input_type': 'select', 'default_value': 'eye_contact',
         'values': ['eye_contact', 'looking_away']},
        {'name': 'orientation', 'mutable': True, 'input_type': 'select', 'default_value': 'front',
         'values': ['front', 'up', 'down', 'left', 'right']}]
    assert [a['name'] for a in labels['hri/posture/standing']['attributes']] == ['facing']
    assert 'hri/expression' not in labels  # a group heading is no label


def test_a_taxonomy_without_attributes_exports_as_before() -> None:
    taxonomy = load_taxonomy(CONFIG / 'taxonomy.yaml')
    assert all(label['attributes'] == [] for label in cvat_labels(taxonomy))
    for config in (label_studio_timeline_config(taxonomy), label_studio_image_config(taxonomy)):
        assert not [n for n in _choices(config) if n.startswith('attribute_')]
        assert 'perRegion' not in config


@pytest.mark.parametrize(('attributes', 'message'), [
    ([{'name': 'gaze', 'values': []}], "attributes[0] 'gaze': values must list at least one value"),
    ([{'name': 'gaze', 'values': ['a', 'b'], 'default': 'c'}], "attributes[0] 'gaze': default 'c' is not one of "
                                                                 'its values'),
    ([{'name': 'gaze', 'values': ['a'], 'colour': 'red'}], "attributes[0] 'gaze': unknown key 'colour' (expected "
                                                           'name, values, default, description)'),
    ([{'name': 'gaze', 'values': ['a', 'a']}], "attributes[0] 'gaze': a value is repeated"),
    ([{'name': 'gaze', 'values': ['a']}, {'name': 'gaze', 'values': ['b']}], "attributes[1] 'gaze': listed twice"),
    ({'name': 'gaze'}, 'attributes must be a list of {name, values}'),
])
def test_a_bad_attribute_is_one_line(attributes: object, message: str) -> None:
    doc = {'version': 1, 'name': 't', 'classes': [{'name': 'hri/smile', 'kinds': ['temporal'],
                                                    'attributes': attributes}]}
    with pytest.raises(TaxonomyError) as err:
        parse_taxonomy(yaml.safe_load(yaml.safe_dump(doc)), source='t.yaml')
    assert str(err.value) == f"t.yaml: classes[0] 'hri/smile': {message}"


def test_reading_label_studio_back_skips_the_attribute_choices() -> None:
    tasks = [{'id': 7, 'data': {'episode_id': 'ep1', 'fps': 10},
              'annotations': [{'id': 1, 'completed_by': 3, 'result': [
                  {'id': 'r1', 'type': 'timelinelabels', 'from_name': 'timeline', 'to_name': 'video',
                   'value': {'timelinelabels': ['hri/expression/smile'], 'ranges': [{'start': 1, 'end': 11}]}},
                  {'id': 'r1', 'type': 'choices', 'from_name': 'attribute_gaze', 'to_name': 'video',
                   'value': {'choices': ['looking_away']}}]}]}]
    labels = labels_from_tasks(tasks, project='hri', where='export.json')['ep1']
    assert [(label.kind, label.value, label.start_s, label.end_s) for label in labels] == [
        ('segment', 'hri/expression/smile', 0.0, 1.0)]
