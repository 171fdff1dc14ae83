"""gcspy from inside a Python program: scans, markers, and whether gcspy is on.

The program runs under gcspy (``gcspy run -- python ...``, or with
LD_PRELOAD=libgcspy.so); this package only talks to the shim that is already
loaded, through ctypes and the public C API (include/gcspy.h), so it is pure
Python and needs no build. Without the shim every call is a harmless no-op:
``active()`` is False, ``scan()`` returns None, ``mark()`` does nothing.

The scan's verdict comes back synchronously: the bytes and blocks lost in
each of memcheck's classes, and the part of each that no earlier scan asked
for through the API had found lost (what became unreachable since then).
"""

import ctypes
import re
from typing import NamedTuple, Optional

__all__ = ["active", "mark", "scan", "Leaks", "LeakCount", "parse_size", "format_size"]
__version__ = "0.1.0"

CLASSES = ("definite", "indirect", "possible")


class _Count(ctypes.Structure):
    _fields_ = [("blocks", ctypes.c_ulonglong), ("bytes", ctypes.c_ulonglong)]


class _Leaks(ctypes.Structure):
    # struct gcspy_leaks, in its order (include/gcspy.h)
    _fields_ = [(c, _Count) for c in CLASSES] + [("new_" + c, _Count) for c in CLASSES]


class LeakCount(NamedTuple):
    blocks: int
    bytes: int


class Leaks(NamedTuple):
    """One scan's verdict. ``new`` holds, per class, what no earlier API scan
    had found lost; ``total`` everything lost at this scan."""

    total: dict
    new: dict

    def new_bytes(self, classes=("definite", "indirect")) -> int:
        return sum(self.new[c].bytes for c in classes)

    def new_blocks(self, classes=("definite", "indirect")) -> int:
        return sum(self.new[c].blocks for c in classes)


def _find_api():
    """The shim's entry points when it is loaded in this process, else None.
    Looked up in the process's global scope (dlsym(RTLD_DEFAULT)), where
    LD_PRELOAD put libgcspy.so; never loaded from here: loading the shim
    late would track nothing that came before."""
    try:
        proc = ctypes.CDLL(None)
        fns = (proc.gcspy_mark, proc.gcspy_scan_leaks)
    except (OSError, AttributeError):
        return None
    mark_fn, scan_fn = fns
    mark_fn.argtypes = [ctypes.c_char_p]
    mark_fn.restype = None
    scan_fn.argtypes = [ctypes.POINTER(_Leaks)]
    scan_fn.restype = ctypes.c_int
    return mark_fn, scan_fn


# ctypes.CDLL releases the GIL around each call: the shim's scan stops every
# thread (and in PyTorch-aware mode takes the GIL itself), so it must never be
# called with the GIL held.
_API = _find_api()


def active() -> bool:
    """True when gcspy's shim is loaded in this process."""
    return _API is not None


def mark(label: str) -> None:
    """Records a marker with this label on the trace's time axis."""
    if _API is None:
        return
    if isinstance(label, str):
        label = label.encode("utf-8", "replace")
    _API[0](bytes(label))


def scan() -> Optional[Leaks]:
    """Runs a leak scan now (recorded in the trace like any other) and returns
    its verdict, or None when gcspy is not loaded or no scan ran (tracing is
    off, another scan was running, or the scan was skipped: gcspy says why on
    stderr)."""
    if _API is None:
        return None
    out = _Leaks()
    if _API[1](ctypes.byref(out)) != 0:
        return None
    total = {c: LeakCount(getattr(out, c).blocks, getattr(out, c).bytes) for c in CLASSES}
    new = {c: LeakCount(getattr(out, "new_" + c).blocks, getattr(out, "new_" + c).bytes)
           for c in CLASSES}
    return Leaks(total, new)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNIT = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text) -> int:
    """Bytes from "1 MB", "512K", "2.5 MiB", "0" or an int. K, M, G and T are
    powers of 1024 with or without a trailing B or iB, as pytest-memray's
    limits and gcspy's command line read them. ValueError when it is not a
    size."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    m = _SIZE.match(str(text))
    if not m or (m.group(3).lower() == "i" or (m.group(3).lower() == "ib" and not m.group(2))):
        raise ValueError("%r is not a size (a number of bytes, optionally with KB, MB, GB or TB)"
                         % (text,))
    return int(float(m.group(1)) * 1024 ** _UNIT[m.group(2).lower()])


def format_size(n: int) -> str:
    """Bytes for a message, exact, and from 1 KiB on also in KiB..TiB."""
    if n < 1024:
        return "%d B" % n
    v = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        v /= 1024.0
        if v < 1024 or unit == "TiB":
            return "%.1f %s (%d B)" % (v, unit, n)
