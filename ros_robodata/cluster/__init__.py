"""Where the per-episode work of a batch command runs: in this process, in local worker processes, or as tasks on a
Ray cluster. The commands hand over picklable jobs and a module-level function; results come back in order and
are applied by the one process that writes (the driver), so the files are those of a local run."""

from ros_robodata.cluster.job_map import map_jobs
from ros_robodata.cluster.job_types import ClusterStats, Executor, JobFailure
from ros_robodata.cluster.result_cache import ResultCache, content_key, files_fingerprint

__all__ = ['ClusterStats', 'Executor', 'JobFailure', 'ResultCache', 'content_key', 'files_fingerprint', 'map_jobs']
