"""A video (a phone or handheld capture) imported as an episode: its frames become the profile's camera, as JPEG
CompressedImages in a standard bag; the container's metadata is kept in episode.yaml."""

from __future__ import annotations

from pathlib import Path

from ros_robodata.bag.video import probe_video, video_to_bag
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.episode_stats import bag_checksums, fill_stats_from_bag
from ros_robodata.dataset.importers.import_common import Imported, ImportOptions, episode_id_for, source_record
from ros_robodata.dataset.sources import Recording, content_id
from ros_robodata.dataset.staging import commit_episode, imported_from, staging_folder
from ros_robodata.dataset.transfer import remove_source
from ros_robodata.errors import RobodataError
from ros_robodata.profile import COMPRESSED_IMAGE, Profile


def _video_camera(profile: Profile | None, wanted: str | None, where: Path) -> tuple[str, str]:
    """(topic, frame_id) the video's frames go to: the profile camera named by --camera, or its only
    CompressedImage camera; without a profile, /camera/image_raw/compressed."""
    if profile is None:
        if wanted:
            raise RobodataError(f'{where}: --camera needs a dataset made with a profile (or --profile)')
        return '/camera/image_raw/compressed', 'camera'
    cameras = profile.topics.cameras
    if wanted:
        match = [c for c in cameras if c.name == wanted]
        if not match:
            raise RobodataError(f'--camera: the profile has no camera {wanted!r} (it has: '
                                f'{", ".join(c.name for c in cameras) or "none"})')
        camera = match[0]
    else:
        compressed = [c for c in cameras if c.type == COMPRESSED_IMAGE]
        if len(compressed) != 1:
            names = ', '.join(c.name for c in compressed) or 'none'
            raise RobodataError(f'{where}: a video becomes one camera of the profile ({profile.source}), a '
                                f'{COMPRESSED_IMAGE} one; it has {len(compressed)} ({names}): name it with --camera')
        camera = compressed[0]
    if camera.type != COMPRESSED_IMAGE:
        raise RobodataError(f'{where}: camera {camera.name} ({camera.topic}) is {camera.type} in the profile; a video '
                            f'imports as {COMPRESSED_IMAGE} (JPEG frames)')
    return camera.topic, camera.name


def import_video(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
                  who: str | None) -> Imported:
    result = Imported(recording, dataset)
    if options.method == 'link':
        raise RobodataError(f'{recording.path}: a video is converted into a bag; --link cannot apply (use --copy, '
                            'the default, or --move)')
    if options.split is not None:
        raise RobodataError(f'{recording.path}: splitting applies to bags, not videos')
    topic, frame_id = _video_camera(profile, options.camera, recording.path)
    info = probe_video(recording.path)  # an unreadable video fails here, before anything is made
    cid = content_id(recording.files)
    if done := imported_from(dataset, cid):
        result.existing = sorted(done)
        return result
    episode_id = dataset.reserve_episode_id(options.episode_id or episode_id_for(recording.name))
    with staging_folder(dataset, episode_id) as staging:
        video = video_to_bag(recording.path, staging / 'bag', topic=topic, frame_id=frame_id,
                             start_ns=options.video_start_ns, jpeg_quality=options.jpeg_quality,
                             storage=profile.recording.storage if profile else 'mcap',
                             compression=profile.recording.compression if profile else 'zstd')
        result.notes += video.notes
        episode = Episode(id=episode_id, task=options.task, operator=options.operator,
                          mode=options.mode if options.mode != 'unknown' else 'human',
                          robot=profile.robot.name if profile else '', outcome=options.outcome,
                          status='incomplete' if video.skipped_frames else 'complete',
                          profile_sha256=profile.sha256 if profile else '', notes='\n'.join(video.notes),
                          source=source_record(recording, options, cid, video={**info.to_dict(), 'clock': video.clock,
                                                                         'frames_written': video.frames,
                                                                         'frames_skipped': video.skipped_frames}))
        fill_stats_from_bag(episode, staging / 'bag', profile)
        episode.bag_sha256 = bag_checksums(staging / 'bag', {}, linked=False)
        commit_episode(dataset, staging, episode, who)
    result.episodes.append(episode_id)
    if options.method == 'move':
        remove_source(recording)
    return result
