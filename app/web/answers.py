"""A run's API answer, handed from its simulation process to the app worker through memory.

A large run's answer is tens of megabytes of JSON (``bench/api_speed.py``: 85 MB for 4,096
requests). Built in the simulation process right after the run (``RunService.submit(answer=…)``),
it reaches the worker without the result pipe: handed back through it, the answer was pickled,
written through a 64 KB pipe, read back a piece at a time and unpickled again, which cost the two
processes more CPU than writing the JSON had.

Instead each run slot has a memory file (``memfd_create``; an unlinked temporary file where
there is none) that the app worker creates before it forks its simulation processes, so they
inherit it. The process running the slot's run writes the answer's pieces into it
(:func:`put`, ``pwritev``: no joining them first) and hands back only its size. A slot has one
run at a time, so nothing else writes its file meanwhile. The files die with the worker, so
nothing is left behind in ``/dev/shm`` or ``/tmp`` by a worker that was killed.

The worker takes the answer (:meth:`AnswerFiles.take`) before the slot is free again. A small
one is read (a copy). A large one is not: reading 85 MB into the worker cost it 0.065 s of CPU
of its 0.09 s for the answer (the rest is the socket's own copy), so the worker maps the
answer's pages (``mmap``) and sends them from there (:class:`app.web.fastjson.FastJSONResponse`
writes the view to the socket as it is). The next run of the slot may start while they are
still being sent, so an answer never overwrites pages in use: :func:`put` writes at the end of
the file's data (page-aligned), or from its start when it holds none; the worker gives each
answer's pages back to the system (``fallocate(PUNCH_HOLE)``) once the last view of them is
gone (the socket wrote them), and an answer nobody took at once (``clear``). Where the file
cannot have holes punched (not Linux), large answers are read like small ones.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
import tempfile
import threading
import weakref
from collections.abc import Sequence

from app.web.libc import LIBC, has

IOV_BATCH = 512  # pieces per pwritev call (the kernel takes at most IOV_MAX, 1024)
MAP_AT = 1 << 20  # bytes from which an answer is sent from its mapped pages, not read
PAGE = mmap.ALLOCATIONGRANULARITY  # a mapping starts at a multiple of it
FALLOC_FL_KEEP_SIZE = 0x01  # linux/falloc.h
FALLOC_FL_PUNCH_HOLE = 0x02


def _memory_file(name: str) -> tuple[int, bool]:
    """A file for a slot, and whether it is a memfd (else an unlinked temporary file)."""
    try:
        return os.memfd_create(name, os.MFD_CLOEXEC), True
    except (AttributeError, OSError):  # not Linux, or no memfd: an unlinked temporary file
        fd, path = tempfile.mkstemp(prefix=f"{name}-")
        os.unlink(path)
        return fd, False


def _punch(fd: int, start: int, length: int) -> bool:
    """Give the pages of ``start``..``start + length`` of ``fd`` back (the file keeps its size;
    the range reads as zeros); whether it could."""
    if LIBC is None or length <= 0:
        return length <= 0
    mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
    return int(LIBC.fallocate(fd, mode, ctypes.c_int64(start), ctypes.c_int64(length))) == 0


def _can_punch(fd: int) -> bool:
    return has("fallocate") and hasattr(os, "SEEK_DATA") and _punch(fd, 0, PAGE)


class AnswerFiles:
    """One memory file per run slot, inherited by every simulation process forked after it."""

    def __init__(self, slots: int) -> None:
        made = [_memory_file(f"stepscope-answer-{i}") for i in range(slots)]
        self._fds = [fd for fd, _ in made]
        # large answers sent from their pages (memfds whose pages can be given back)
        self.mapped = bool(made) and all(memfd and _can_punch(fd) for fd, memfd in made)
        self._live: list[set[tuple[int, int]]] = [set() for _ in made]  # mapped, being sent
        self._lock = threading.RLock()  # (a view's last reference may go inside it: a GC pass)
        self._closed = False

    def fd(self, slot: int) -> int:
        """The file of ``slot`` (a descriptor the simulation processes share)."""
        return self._fds[slot]

    def take(self, slot: int, size: int) -> bytes | memoryview:
        """The ``size`` bytes a run just wrote into ``slot``'s file (the last of its data): read,
        or a view of their pages (:data:`MAP_AT` bytes or more) that are given back once the
        view and every view of it are gone. The slot's file holds nothing else of this run
        afterwards."""
        fd = self._fds[slot]
        end = os.fstat(fd).st_size
        start = end - size
        if start < 0:
            self.clear(slot)
            raise OSError(f"answer file of slot {slot}: {end} of {size} bytes")
        if self.mapped and size >= MAP_AT and start % PAGE == 0:
            with contextlib.suppress(OSError, ValueError):  # no mapping: read, as a small one
                return self._map(slot, fd, start, size)
        try:
            return self._read(slot, fd, start, size)
        finally:
            self.clear(slot)

    def _read(self, slot: int, fd: int, start: int, size: int) -> bytes:
        parts: list[bytes] = []
        done = 0
        while done < size:
            got = os.pread(fd, size - done, start + done)
            if not got:
                raise OSError(f"answer file of slot {slot}: {done} of {size} bytes")
            parts.append(got)
            done += len(got)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _map(self, slot: int, fd: int, start: int, size: int) -> memoryview:
        pages = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ, offset=start)
        region = (start, start + size)
        with self._lock:
            self._live[slot].add(region)
        done = weakref.finalize(pages, self._sent, slot, region)
        done.atexit = False
        return memoryview(pages)

    def _sent(self, slot: int, region: tuple[int, int]) -> None:
        """The last view of an answer's pages is gone: give them back."""
        with self._lock:
            self._live[slot].discard(region)
            if not self._closed:  # to the page's end: the next answer starts on the next page
                _punch(self._fds[slot], region[0], _page_up(region[1]) - region[0])

    def clear(self, slot: int) -> None:
        """Empty ``slot``'s file of all but the answers still being sent (its memory goes back
        to the system): after a run, whether its answer was taken or not."""
        with self._lock:
            if self._closed:
                return
            fd, live = self._fds[slot], self._live[slot]
            with contextlib.suppress(OSError):
                if not live:
                    os.ftruncate(fd, 0)
                    return
                start = _page_up(max([end for _, end in live]))
                _punch(fd, start, os.fstat(fd).st_size - start)

    def in_use(self, slot: int) -> int:
        """Bytes of ``slot``'s answers being sent from their pages (monitoring, tests)."""
        with self._lock:
            return sum(end - start for start, end in self._live[slot])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            fds, self._fds = self._fds, []
        for fd in fds:  # pages still mapped stay readable: a mapping holds its file
            with contextlib.suppress(OSError):
                os.close(fd)


def _write_at(fd: int) -> int:
    """Where :func:`put` writes: after the file's data, at a page boundary (the worker may still
    be sending an earlier answer from there); at its start, emptied first, when it holds none."""
    try:
        os.lseek(fd, 0, os.SEEK_DATA)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # not "no data": a file system without SEEK_DATA
            raise
        os.ftruncate(fd, 0)  # the file's size may be over ranges given back
        return 0
    return _page_up(os.fstat(fd).st_size)


def _page_up(offset: int) -> int:
    return -(-offset // PAGE) * PAGE


def put(fd: int, pieces: Sequence[bytes | bytearray | memoryview]) -> int:
    """In a simulation process: ``pieces`` written one after another into the memory file
    ``fd``, ending it (:meth:`AnswerFiles.take` finds them there); answers the bytes written."""
    try:
        offset = _write_at(fd)
    except (OSError, AttributeError):  # no SEEK_DATA: nothing is left in the file (no mapping)
        os.ftruncate(fd, 0)
        offset = 0
    start = offset
    for first in range(0, len(pieces), IOV_BATCH):
        batch = [memoryview(p) for p in pieces[first : first + IOV_BATCH] if p]
        want = sum(len(p) for p in batch)
        wrote = os.pwritev(fd, batch, offset) if batch else 0
        offset += wrote
        if wrote < want:  # a short write (a signal, memory): the rest piece by piece
            offset = _put_rest(fd, batch, wrote, offset)
    return offset - start


def _put_rest(fd: int, batch: list[memoryview], skip: int, offset: int) -> int:
    for piece in batch:
        if skip >= len(piece):
            skip -= len(piece)
            continue
        view, skip = piece[skip:], 0
        while view:
            n = os.pwrite(fd, view, offset)
            if n <= 0:
                raise OSError("could not write the answer file")
            offset += n
            view = view[n:]
    return offset
