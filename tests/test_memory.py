"""The memory guard reads what the process may use: physical memory capped by the control group's
limit, and the available memory capped by what the group leaves (cgroup v1 and v2, faked here)."""
from __future__ import annotations

import os

from solvopt.core import memory

GiB = 1 << 30


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def _v2(tmp_path, group="/", files=None, root_files=None, hybrid=False):
    """A fake unified hierarchy; ``files`` go to the process's group, ``root_files`` to the mount."""
    mount = tmp_path / "cg" / ("unified" if hybrid else "")
    _write(str(mount / "cgroup.controllers"), "cpu memory pids\n")
    for name, text in (root_files or {}).items():
        _write(str(mount / name), text)
    for name, text in (files or {}).items():
        _write(str(mount / group.strip("/") / name), text)
    proc = tmp_path / "cgroup"
    _write(str(proc), f"0::{group}\n")
    return str(proc), str(tmp_path / "cg")


def _v1(tmp_path, group="/", files=None, root_files=None, group_exists=True):
    mount = tmp_path / "cg" / "memory"
    for name, text in (root_files or {}).items():
        _write(str(mount / name), text)
    if group_exists:
        for name, text in (files or {}).items():
            _write(str(mount / group.strip("/") / name), text)
    proc = tmp_path / "cgroup"
    _write(str(proc), f"12:pids:/\n4:memory:{group}\n1:name=systemd:/\n0::/\n")
    return str(proc), str(tmp_path / "cg")


def test_v2_limit_and_working_set(tmp_path):
    proc, root = _v2(tmp_path, "/kubepods/pod1", files={
        "memory.max": str(2 * GiB), "memory.current": str(GiB + 300),
        "memory.stat": "anon 123\ninactive_file 300\nactive_file 5\n"})
    limit, free = memory.cgroup_memory(proc, root)
    assert limit == 2 * GiB and free == GiB  # usage less the inactive file cache


def test_v2_tightest_ancestor_wins(tmp_path):
    proc, root = _v2(tmp_path, "/a/b", files={"memory.max": "max", "memory.current": "100"})
    _write(os.path.join(root, "a", "memory.max"), str(3 * GiB))
    _write(os.path.join(root, "a", "memory.current"), str(GiB))
    limit, free = memory.cgroup_memory(proc, root)
    assert limit == 3 * GiB and free == 2 * GiB


def test_v2_unlimited_and_container_root(tmp_path):
    proc, root = _v2(tmp_path, "/", root_files={"memory.max": "max", "memory.current": "5"})
    assert memory.cgroup_memory(proc, root) == (None, None)
    proc, root = _v2(tmp_path / "c", "/", root_files={"memory.max": str(GiB), "memory.current": str(GiB // 4)})
    assert memory.cgroup_memory(proc, root) == (GiB, GiB - GiB // 4)


def test_v2_hybrid_mount(tmp_path):
    proc, root = _v2(tmp_path, "/svc", files={"memory.max": str(GiB), "memory.current": "0"}, hybrid=True)
    assert memory.cgroup_memory(proc, root) == (GiB, GiB)


def test_v1_limit_usage_and_unlimited(tmp_path):
    proc, root = _v1(tmp_path, "/docker/abc", files={
        "memory.limit_in_bytes": str(4 * GiB), "memory.usage_in_bytes": str(3 * GiB),
        "memory.stat": "cache 10\ninactive_file 7\ntotal_inactive_file " + str(GiB) + "\n"})
    assert memory.cgroup_memory(proc, root) == (4 * GiB, 2 * GiB)
    proc, root = _v1(tmp_path / "u", "/x", files={"memory.limit_in_bytes": "9223372036854771712",
                                                   "memory.usage_in_bytes": "100"})
    assert memory.cgroup_memory(proc, root) == (None, None)


def test_v1_group_path_of_the_host_falls_back_to_the_mount(tmp_path):
    """In a container /proc/self/cgroup names the host's path; the container sees its group at the mount."""
    proc, root = _v1(tmp_path, "/docker/abc", group_exists=False,
                     root_files={"memory.limit_in_bytes": str(GiB), "memory.usage_in_bytes": str(GiB // 2)})
    assert memory.cgroup_memory(proc, root) == (GiB, GiB // 2)


def test_no_cgroup_files(tmp_path):
    assert memory.cgroup_memory(str(tmp_path / "none"), str(tmp_path)) == (None, None)


def test_guard_takes_the_container_limit(monkeypatch):
    monkeypatch.setattr(memory, "_physical_memory", lambda: 256 * GiB)
    monkeypatch.setattr(memory, "_system_available", lambda meminfo=None: 200 * GiB)
    monkeypatch.setattr(memory, "cgroup_memory", lambda *a, **k: (2 * GiB, GiB))
    assert memory.machine_memory() == 2 * GiB
    assert memory.available_memory() == GiB
    assert memory.memory_budget(0.5) == GiB // 2


def test_guard_without_cgroup_and_fallbacks(monkeypatch):
    monkeypatch.setattr(memory, "cgroup_memory", lambda *a, **k: (None, None))
    monkeypatch.setattr(memory, "_physical_memory", lambda: 16 * GiB)
    monkeypatch.setattr(memory, "_system_available", lambda meminfo=None: 6 * GiB)
    assert (memory.machine_memory(), memory.available_memory(), memory.memory_budget()) == (16 * GiB, 6 * GiB, 3 * GiB)
    monkeypatch.setattr(memory, "_system_available", lambda meminfo=None: None)
    assert memory.memory_budget(0.25) == 4 * GiB  # total when the available memory is unknown
    monkeypatch.setattr(memory, "_physical_memory", lambda: None)
    assert memory.memory_budget(1.0) == memory.FALLBACK_MEMORY


def test_meminfo_is_read_without_psutil(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "psutil", None)
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24683664 kB\nMemFree:  1 kB\nMemAvailable:   22512672 kB\n")
    assert memory._system_available(str(info)) == 22512672 * 1024


def test_this_machine_reads_sensibly():
    total, now = memory.machine_memory(), memory.available_memory()
    if total is not None and now is not None:
        assert 0 < now <= total * 1.01
    assert memory.memory_budget() > 0
