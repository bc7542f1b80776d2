"""The machine's memory and how to say a size: used to refuse, before allocating, what cannot fit."""
from __future__ import annotations

import os

FALLBACK_MEMORY = 8 << 30   # assumed when the platform does not say


def machine_memory() -> int | None:
    """Physical memory in bytes (None when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def memory_budget(fraction: float = 0.5) -> int:
    """A share of the machine's physical memory (of 8 GiB when it cannot be read)."""
    return int((machine_memory() or FALLBACK_MEMORY) * fraction)


def format_bytes(n: float) -> str:
    """A byte count in binary units: '512 bytes', '1.5 GiB', ..."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024:
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"
