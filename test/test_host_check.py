"""The recorder's startup check of the rig computer's settings, on the values a stock Linux and a tuned one have."""

from __future__ import annotations

from pathlib import Path

from ros_robodata.record.dds_peers import ShmParticipant, shm_participants
from ros_robodata.record.host_check import check_host, frame_loss_advice, read_sysctl

STOCK = {'net.core.rmem_max': 212992, 'net.core.wmem_max': 212992, 'net.ipv4.ipfrag_high_thresh': 4194304,
         'net.ipv4.ipfrag_time': 30}
TUNED = {'net.core.rmem_max': 2147483647, 'net.core.wmem_max': 2147483647,
         'net.ipv4.ipfrag_high_thresh': 134217728, 'net.ipv4.ipfrag_time': 3}
PROFILE_SET = {'FASTRTPS_DEFAULT_PROFILES_FILE': '/rig/fastdds_rig.xml'}


def test_a_stock_linux_gets_the_exact_commands_for_camera_load():
    findings = check_host(True, sysctl=STOCK.get, shm_free=lambda: 64 * 2**20, environ={})
    text = '\n'.join(str(f) for f in findings)
    assert 'sudo sysctl -w net.core.rmem_max=4194304' in text
    assert 'sudo sysctl -w net.core.wmem_max=4194304' in text
    assert 'sudo sysctl -w net.ipv4.ipfrag_high_thresh=134217728' in text
    assert 'sudo sysctl -w net.ipv4.ipfrag_time=3' in text
    assert '--shm-size' in text  # docker's default 64 MiB /dev/shm
    profile = next(f for f in findings if f.setting == 'Fast DDS profile')
    assert 'FASTRTPS_DEFAULT_PROFILES_FILE=' in profile.command
    xml = Path(profile.command.rsplit('=', 1)[1])
    assert xml.name == 'fastdds_rig.xml' and xml.is_file()  # the path printed is one a user can use


def test_a_tuned_rig_and_a_rig_without_cameras_hear_nothing():
    assert check_host(True, sysctl=TUNED.get, shm_free=lambda: 2**30, environ=PROFILE_SET) == []
    assert check_host(False, sysctl=STOCK.get, shm_free=lambda: 0, environ={}) == []


def test_settings_that_cannot_be_read_are_not_guessed():
    assert check_host(True, sysctl=lambda name: None, shm_free=lambda: None, environ=PROFILE_SET) == []
    assert check_host(True, sysctl=TUNED.get, shm_free=lambda: 2**30,
                      environ={'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}) == []
    assert read_sysctl('net.core.no_such_setting') is None


def fake_computer(tmp_path: Path, segments: dict[int | None, int]) -> tuple[Path, Path]:
    """/dev/shm and /proc as Fast DDS leaves them: per participant a segment file of its size and an `_el` file the
    live owner flocks (None: a segment left by a dead process)."""
    shm, proc = tmp_path / 'shm', tmp_path / 'proc'
    shm.mkdir()
    proc.mkdir()
    locks = []
    for n, (pid, size) in enumerate(segments.items()):
        (shm / f'fastrtps_{n:016x}').write_bytes(bytes(size))
        lock = shm / f'fastrtps_{n:016x}_el'
        lock.touch()
        if pid is not None:
            locks.append(f'{n + 1}: FLOCK  ADVISORY  WRITE {pid} 00:1b:{lock.stat().st_ino} 0 EOF')
            (proc / str(pid)).mkdir()
            (proc / str(pid) / 'cmdline').write_bytes(f'camera_driver\0--id\0{pid}\0'.encode())
    (shm / 'fastrtps_port7411').write_bytes(bytes(100))
    (proc / 'locks').write_text('\n'.join(locks) + '\n')
    return shm, proc


def test_frame_loss_names_the_dds_profile_only_where_a_participant_lacks_it(tmp_path):
    vga = 640 * 480 * 3
    default, rig = 549408, 70255136  # the segment files of Fast DDS's default and of config/dds/fastdds_rig.xml
    shm, proc = fake_computer(tmp_path, {101: default, 202: rig, None: default, 303: rig})
    participants = shm_participants(shm, proc)
    assert [(p.pid, p.segment_bytes) for p in participants] == [(101, default), (202, rig), (303, rig)]
    told = frame_loss_advice('/camera/wrist/image_raw', vga, participants, frozenset({303}))
    assert told is not None and 'FASTRTPS_DEFAULT_PROFILES_FILE=' in told and 'pid 101 (camera_driver --id 101)' in told
    assert 'pid 202' not in told

    # The advice followed (every driver on the profile): the loss has another cause, and the profile is not named.
    followed = [p for p in participants if p.pid != 101]
    told = frame_loss_advice('/camera/wrist/image_raw', vga, followed, frozenset({303}))
    assert told is not None and 'FASTRTPS_DEFAULT_PROFILES_FILE' not in told and 'not known' in told
    # This recorder's own default segment is not a driver's.
    told = frame_loss_advice('/camera/wrist/image_raw', vga, [*followed, ShmParticipant(404, default, 'x')],
                             frozenset({303, 404}))
    assert 'FASTRTPS_DEFAULT_PROFILES_FILE' not in told
    # Cannot see: said plainly.
    assert 'not known' in frame_loss_advice('/camera/wrist/image_raw', vga, None)
    assert frame_loss_advice('/joint_states', 300, participants) is None
    assert shm_participants(tmp_path / 'no_shm', proc) is None


def test_the_participants_of_this_computer_are_read_from_running_fast_dds_processes(tmp_path):
    """Real Fast DDS: a process on its defaults and one on the rig profile, told apart by their segments."""
    import os
    import subprocess
    import sys
    import time

    from ros_robodata.paths import config_path

    script = ('import rclpy, time\nrclpy.init()\nnode = rclpy.create_node("driver")\nprint("up", flush=True)\n'
              'time.sleep(30)\n')
    env = {**os.environ, 'ROS_DOMAIN_ID': '201'}
    env.pop('FASTRTPS_DEFAULT_PROFILES_FILE', None)
    env.pop('FASTDDS_DEFAULT_PROFILES_FILE', None)
    tuned_env = {**env, 'FASTRTPS_DEFAULT_PROFILES_FILE': str(config_path('dds/fastdds_rig.xml'))}
    procs = [subprocess.Popen([sys.executable, '-c', script], env=e, stdout=subprocess.PIPE, text=True)
             for e in (env, tuned_env)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == 'up'
        deadline = time.monotonic() + 10
        while True:
            found = {p.pid: p for p in shm_participants() or []}
            if all(proc.pid in found for proc in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    stock, tuned = found[procs[0].pid], found[procs[1].pid]
    assert stock.segment_bytes < 1 << 20 <= 64 << 20 <= tuned.segment_bytes
    assert '-c' in stock.command
    vga = 640 * 480 * 3
    assert 'FASTRTPS_DEFAULT_PROFILES_FILE' in frame_loss_advice('/cam', vga, [stock, tuned])
    assert 'FASTRTPS_DEFAULT_PROFILES_FILE' not in frame_loss_advice('/cam', vga, [tuned])
