"""The recorder's startup check of the rig computer's settings, on the values a stock Linux and a tuned one have."""

from __future__ import annotations

from pathlib import Path

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


def test_frame_loss_is_explained_only_for_frames_too_large_for_the_default_segment():
    vga = frame_loss_advice('/camera/wrist/image_raw', 640 * 480 * 3)
    assert vga is not None and '/camera/wrist/image_raw' in vga and 'FASTRTPS_DEFAULT_PROFILES_FILE=' in vga
    assert frame_loss_advice('/joint_states', 300) is None
