"""What `robodata info` says about a bag: topics, types, counts, rates, duration, size."""

from __future__ import annotations

from typing import Any

from ros_robodata.bag.reader import BagReader


def bag_summary(reader: BagReader) -> dict[str, Any]:
    """Plain data (JSON-ready). Rates are mean rates over the bag, as `mcap info` reports them."""
    duration_s = reader.duration_ns / 1e9
    topics = []
    for info in reader.topics.values():
        topics.append({
            'topic': info.name,
            'type': info.msgtype,
            'count': info.count,
            'rate_hz': round(info.count / duration_s, 3) if duration_s > 0 else None,
            'latched': info.latched,
        })
    return {
        'path': str(reader.path),
        'storage': reader.storage,
        'files': [f.name for f in reader.files],
        'size_bytes': reader.size_bytes,
        'message_count': reader.message_count,
        'start_ns': reader.start_ns,
        'end_ns': reader.end_ns,
        'duration_s': round(duration_s, 6),
        'ros_distro': (reader.metadata or {}).get('rosbag2_bagfile_information', {}).get('ros_distro'),
        'complete': reader.complete,
        'notes': list(reader.notes),
        'topics': topics,
    }
