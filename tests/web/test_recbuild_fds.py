"""The recording builder's simulation process holds none of the app process's files: it comes
from the fork server, not from a copy of the app. A copy held a pipe the app had open to a
child (the test session's browser driver), so that child never saw its input end and the test
worker hung at its end, waiting for it to exit."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.settings import Settings
from app.web.recbuild import RecordingBuilder


def _holders(inode: str) -> set[int]:
    """The processes with a descriptor open on ``inode`` (e.g. ``pipe:[123]``)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) == inode:
                    found.add(int(entry.name))
                    break
            except OSError:
                continue
    return found


def _pid(recording: dict[str, Any], overrides: dict[str, Any]) -> Any:
    return os.getpid()


def test_the_builders_process_holds_no_pipe_of_the_app(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    inode = os.readlink(f"/proc/self/fd/{write_end}")
    builder = RecordingBuilder(Settings(database_url=f"sqlite:///{tmp_path / 'b.db'}"))
    try:
        builder.start()
        child = builder.build(_pid, {}, {})  # type: ignore[arg-type]
        assert isinstance(child, int) and child != os.getpid()
        assert Path(f"/proc/{child}").exists()  # the builder's process lives on
        assert _holders(inode) == {os.getpid()}
    finally:
        builder.close()
        os.close(read_end)
        os.close(write_end)

