"""The memory this process may use, and how to say a size: used to refuse, before allocating, what
cannot fit.

Two questions, two functions:

- :func:`machine_memory` -- how much memory the process may use **in total**: the physical memory,
  capped by the memory limit of the control group (container) the process runs in.
- :func:`available_memory` -- how much it may still allocate **now**: the memory the kernel reports
  as available (``MemAvailable``; psutil's ``virtual_memory().available`` when psutil is installed),
  capped by what the control group leaves: its limit less its working set (usage less the
  inactive file cache, which the kernel reclaims before it kills anything).

Control groups v2 (``memory.max``, ``memory.current``, ``memory.stat``) and v1
(``memory.limit_in_bytes``, ``memory.usage_in_bytes``, ``memory.stat``) are both read, for the
process's own group (``/proc/self/cgroup``) and its ancestors; the tightest limit wins. Inside a
container limited to 2 GiB on a 256 GiB host, the guard therefore sees 2 GiB, not 256.

:func:`memory_budget` is the share of the available memory that one allocation may take (of the
total when the available memory cannot be read, of 8 GiB when nothing can).
"""
from __future__ import annotations

import os

FALLBACK_MEMORY = 8 << 30   # assumed when the platform does not say
UNLIMITED = 1 << 60         # cgroup v1 writes "no limit" as a huge number (9223372036854771712)

PROC_CGROUP = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_MEMINFO = "/proc/meminfo"


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        pass
    try:
        import psutil
        return int(psutil.virtual_memory().total)
    except Exception:
        return None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _read_int(path: str) -> int | None:
    text = _read(path)
    if text is None or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if 0 <= value < UNLIMITED else None


def _stat(path: str, *keys: str) -> int:
    """The first of ``keys`` found in a ``memory.stat`` file (0 when none is)."""
    text = _read(path) or ""
    fields = dict(line.split(None, 1) for line in text.splitlines() if " " in line)
    for key in keys:
        try:
            return int(fields[key])
        except (KeyError, ValueError):
            continue
    return 0


def _own_groups(proc_cgroup: str) -> tuple[str | None, str | None]:
    """The process's v2 group path and v1 memory group path (``/`` when at the root; None if absent)."""
    v2 = v1 = None
    for line in (_read(proc_cgroup) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path or "/"
        elif "memory" in controllers.split(","):
            v1 = path or "/"
    return v2, v1


def _ancestors(mount: str, group: str | None) -> list[str]:
    """The folders of ``group`` and of its ancestors under ``mount`` (only those that exist), the
    mount itself last (in a container the own group is often the mount's root)."""
    out = []
    if group:
        rel = group.strip("/")
        while rel:
            folder = os.path.join(mount, rel)
            if os.path.isdir(folder):
                out.append(folder)
            rel = os.path.dirname(rel)
    out.append(mount)
    return out


def cgroup_memory(proc_cgroup: str = PROC_CGROUP, root: str = CGROUP_ROOT) -> tuple[int | None, int | None]:
    """``(limit, free)`` in bytes from the control groups of this process: the tightest memory limit
    over the process's groups and their ancestors (v2 and v1), and the least that any limited group
    leaves (its limit less its working set: usage less inactive file cache). ``(None, None)`` when
    no group limits memory (or the files cannot be read, e.g. on macOS and Windows)."""
    v2, v1 = _own_groups(proc_cgroup)
    limit = free = None

    def take(lim: int | None, used: int | None) -> None:
        nonlocal limit, free
        if lim is None:
            return
        limit = lim if limit is None else min(limit, lim)
        if used is not None:
            left = max(lim - used, 0)
            free = left if free is None else min(free, left)

    if v2 is not None:  # unified hierarchy: /sys/fs/cgroup itself, or /sys/fs/cgroup/unified (hybrid)
        for mount in (root, os.path.join(root, "unified")):
            if not os.path.isfile(os.path.join(mount, "cgroup.controllers")):
                continue
            for folder in _ancestors(mount, v2):
                lim = _read_int(os.path.join(folder, "memory.max"))
                used = _read_int(os.path.join(folder, "memory.current"))
                if lim is not None and used is not None:
                    used = max(used - _stat(os.path.join(folder, "memory.stat"), "inactive_file"), 0)
                take(lim, used)
    if v1 is not None:
        mount = os.path.join(root, "memory")
        for folder in _ancestors(mount, v1):
            lim = _read_int(os.path.join(folder, "memory.limit_in_bytes"))
            used = _read_int(os.path.join(folder, "memory.usage_in_bytes"))
            if lim is not None and used is not None:
                used = max(used - _stat(os.path.join(folder, "memory.stat"), "total_inactive_file",
                                        "inactive_file"), 0)
            take(lim, used)
    return limit, free


def _system_available(meminfo: str = PROC_MEMINFO) -> int | None:
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception:
        pass
    for line in (_read(meminfo) or "").splitlines():
        if line.startswith("MemAvailable:"):
            try:
                return int(line.split()[1]) * 1024
            except (IndexError, ValueError):
                return None
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_AVPHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def machine_memory() -> int | None:
    """The memory this process may use in total, in bytes: physical memory capped by the control
    group's limit (None when the platform says neither)."""
    physical = _physical_memory()
    limit, _ = cgroup_memory()
    known = [v for v in (physical, limit) if v is not None]
    return min(known) if known else None


def available_memory() -> int | None:
    """The memory this process may still allocate, in bytes: the system's available memory capped by
    what the control group leaves (None when neither can be read)."""
    system = _system_available()
    _, free = cgroup_memory()
    known = [v for v in (system, free) if v is not None]
    return min(known) if known else None


def memory_budget(fraction: float = 0.5) -> int:
    """A share of the memory available now (of the total when that cannot be read; of 8 GiB when
    nothing can)."""
    return int((available_memory() or machine_memory() or FALLBACK_MEMORY) * fraction)


def format_bytes(n: float) -> str:
    """A byte count in binary units: '512 bytes', '1.5 GiB', ..."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024:
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"
