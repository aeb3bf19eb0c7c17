"""Opening a .blend for the command line, and naming why one cannot be opened.

A file saved by a newer Blender than the one running is often refused with "not a blend
file" (Blender 4.2 reading the header Blender 5.0 introduced) or "File format is not
supported": true for this Blender, but the user needs to hear which Blender wrote it. The
header says so, read here without Blender: plain, gzip or zstd (Blender's own compression;
the ``zstandard`` module comes with Blender and with the bpy wheel).

Headers (the version is major * 100 + minor):
- up to Blender 4.x: ``BLENDER`` + pointer size (``_`` 4, ``-`` 8 bytes) + endianness
  (``v`` little, ``V`` big) + 3 digits, e.g. ``BLENDER-v402``;
- from Blender 5.0: ``BLENDER`` + header size (``17``) + ``-`` + file format version
  (``01``) + ``v`` + 4 digits, e.g. ``BLENDER17-01v0502``.
"""
import gzip
import os
import re

import bpy

_GZIP = b"\x1f\x8b"
_ZSTD = b"\x28\xb5\x2f\xfd"
_HEADERS = (re.compile(rb"BLENDER[_-][vV](\d{3})"),
            re.compile(rb"BLENDER\d\d-\d\d[vV](\d{4})"))


class OpenError(Exception):
    """A .blend that cannot be opened; the message says why and what to do."""


def _head(path, size=32):
    """The first bytes of the file's data, decompressed; None if they cannot be read."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
            f.seek(0)
            if magic[:2] == _GZIP:
                return gzip.GzipFile(fileobj=f).read(size)
            if magic == _ZSTD:
                return _zstd_head(f, size)
            return f.read(size)
    except (OSError, EOFError, ValueError):
        return None


def _zstd_head(f, size):
    try:
        import zstandard
    except ImportError:   # not with this Python: the header stays unknown
        return None
    try:
        return zstandard.ZstdDecompressor().stream_reader(f).read(size)
    except zstandard.ZstdError:
        return None


def saved_version(path):
    """(major, minor) of the Blender that saved path, or None (not a .blend, or unreadable)."""
    head = _head(path)
    if not head:
        return None
    for pattern in _HEADERS:
        m = pattern.match(head)
        if m:
            return divmod(int(m.group(1)), 100)
    return None


def _newer(path, running=None):
    """((major, minor) saved, (major, minor) running) when a newer Blender saved path, else
    None."""
    running = tuple(bpy.app.version[:2]) if running is None else tuple(running)
    saved = saved_version(path)
    return (saved, running) if saved is not None and saved > running else None


def open_failure(path, message, running=None):
    """What to tell the user when Blender could not open path with this message: that a
    newer Blender saved it, when the header says so, else Blender's own message."""
    newer = _newer(path, running)
    if newer is None:
        return f"cannot open {path}: {message}"
    (a, b), (c, d) = newer
    return (f"cannot open {path}: it was saved by Blender {a}.{b}, newer than this Blender "
            f"{c}.{d}, which cannot read it; open or bake it with Blender {a}.{b} or later")


def open_blend(path):
    """Open path as the current file (bpy.ops.wm.open_mainfile); raises OpenError. Returns
    a note when a newer Blender saved it (this one opened it, but may have dropped what it
    does not know), else None."""
    if not os.path.isfile(path):
        raise OpenError(f"no such .blend file: {path}")
    newer = _newer(path)     # read before opening: the running file is replaced
    try:
        bpy.ops.wm.open_mainfile(filepath=path)
    except RuntimeError as exc:
        message = str(exc).strip().removeprefix("Error:").strip()
        raise OpenError(open_failure(path, message)) from None
    if newer is None:
        return None
    (a, b), (c, d) = newer
    return (f"{path} was saved by Blender {a}.{b}, newer than this Blender {c}.{d}, which "
            "opened it but may have left out what it does not know; bake it with Blender "
            f"{a}.{b} or later for the same result")
