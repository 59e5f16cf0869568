"""A private tracefs instance: found or mounted, created, configured, removed.

``Tracefs.open()`` uses ``/sys/kernel/tracing`` (or ``/sys/kernel/debug/tracing``) when tracefs
is mounted there; otherwise it mounts tracefs on a fresh private directory and unmounts exactly
that one at the end (so a tracefs another program mounted or is using is never unmounted).
Everything the recorder turns on lives in ``instances/stepscope-<pid>`` and goes away with it:
:meth:`Instance.close` disables each event it enabled, clears filters and triggers and removes
the instance directory, and is safe to call twice or after a partial setup.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.record.filters import Field, parse_format
from app.sim.core.i18n import Message, msg

CANDIDATES = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
PREFIX = "stepscope-"


class RecordError(Exception):
    """A problem the user can fix, printed as one line (exit code 2) in the language of the
    invocation; ``str()`` of the exception is the English text (logs, tests)."""

    def __init__(self, message: Message) -> None:
        super().__init__(message.render())
        self.message = message


@dataclass
class Tracefs:
    root: Path
    mounted: Path | None = None  # the private mount point we made, if any

    @classmethod
    def open(cls, candidates: tuple[Path, ...] | None = None) -> Tracefs:
        for c in CANDIDATES if candidates is None else candidates:
            if (c / "instances").is_dir():
                return cls(c)
        if not _kernel_has_tracefs():
            raise RecordError(msg("this kernel has no tracefs (CONFIG_TRACING is off)"))
        mnt = Path(tempfile.mkdtemp(prefix=PREFIX + "tracefs-"))
        res = subprocess.run(
            ["mount", "-t", "tracefs", "nodev", str(mnt)], capture_output=True, text=True
        )
        if res.returncode != 0 or not (mnt / "instances").is_dir():
            with contextlib.suppress(OSError):
                os.rmdir(mnt)
            why = res.stderr.strip() or msg("it has no instances/ directory")
            raise RecordError(msg("cannot mount tracefs: {error}", error=why))
        return cls(mnt, mounted=mnt)

    def instance(self, name: str) -> Instance:
        return Instance(self.root, name)

    def release(self, inst: Instance) -> None:
        """Close ``inst``; if the tracefs it was made in has been unmounted meanwhile (another
        program mounted it and left), reach the instance through a private mount."""
        if inst.created and not (self.root / "instances").is_dir():
            try:
                other = Tracefs.open(())
            except RecordError:
                return
            inst.root = other.root
            inst.path = other.root / "instances" / inst.name
            try:
                inst.close()
            finally:
                other.close()
            return
        inst.close()

    def close(self) -> None:
        if self.mounted is not None:
            subprocess.run(["umount", str(self.mounted)], capture_output=True)
            with contextlib.suppress(OSError):
                os.rmdir(self.mounted)
            self.mounted = None


def _kernel_has_tracefs() -> bool:
    try:
        return "tracefs" in Path("/proc/filesystems").read_text()
    except OSError:
        return False


@dataclass
class Instance:
    """``<root>/instances/<name>``; events are ``system:name`` strings."""

    root: Path
    name: str
    path: Path = field(init=False)
    enabled: list[str] = field(default_factory=list)
    configured: list[str] = field(default_factory=list)
    stacktrace: bool = False
    created: bool = False
    remove: Callable[[Path], None] = os.rmdir  # a fake tracefs in the tests passes rmtree

    def __post_init__(self) -> None:
        self.path = self.root / "instances" / self.name

    def create(self, buffer_kb: int = 8192) -> None:
        try:
            self.path.mkdir()
        except FileExistsError as e:
            raise RecordError(
                msg("tracefs instance {path} already exists", path=str(self.path))
            ) from e
        except OSError as e:
            raise RecordError(
                msg("cannot create tracefs instance {path}: {error}", path=str(self.path),
                    error=str(e))
            ) from e
        self.created = True
        self._write("buffer_size_kb", str(buffer_kb))
        clocks = self._read("trace_clock")
        if "mono" in clocks.replace("[", " ").replace("]", " ").split():
            self._write("trace_clock", "mono")

    def event_dir(self, event: str) -> Path:
        system, _, name = event.partition(":")
        return self.path / "events" / system / name

    def has_event(self, event: str) -> bool:
        return (self.event_dir(event) / "enable").exists()

    def fields(self, event: str) -> dict[str, Field]:
        return parse_format((self.event_dir(event) / "format").read_text())

    def set_filter(self, event: str, expr: str) -> None:
        self.configured.append(event)
        try:
            (self.event_dir(event) / "filter").write_text(expr + "\n")
        except OSError as e:
            raise RecordError(
                msg("{event}: the kernel refused the filter {expr} ({error})", event=event,
                    expr=repr(expr), error=str(e))
            ) from e

    def set_stacktrace(self) -> None:
        """Every event of this instance is followed by its kernel stack."""
        self.stacktrace = True
        self._write("options/stacktrace", "1")

    def enable(self, event: str) -> None:
        self.enabled.append(event)
        (self.event_dir(event) / "enable").write_text("1\n")

    def pipe(self) -> Path:
        return self.path / "trace_pipe"

    def lost(self) -> int:
        """Events the ring buffer lost (``overrun`` + ``dropped events`` over the CPUs)."""
        total = 0
        for stats in self.path.glob("per_cpu/cpu*/stats"):
            try:
                lines = stats.read_text().splitlines()
            except OSError:
                continue
            for line in lines:
                key, _, value = line.partition(":")
                if key in ("overrun", "dropped events") and value.split():
                    total += int(value.split()[0])
        return total

    def disable_all(self) -> None:
        for ev in self.enabled:
            with contextlib.suppress(OSError):
                (self.event_dir(ev) / "enable").write_text("0\n")
        with contextlib.suppress(OSError):
            (self.path / "tracing_on").write_text("0\n")

    def close(self) -> None:
        """Disable, clear and remove; never raises (runs in finally blocks and handlers)."""
        if not self.created:
            return
        self.disable_all()
        for ev in self.configured:
            with contextlib.suppress(OSError):
                (self.event_dir(ev) / "filter").write_text("0\n")
        if self.stacktrace:
            with contextlib.suppress(OSError):
                (self.path / "options/stacktrace").write_text("0\n")
        with contextlib.suppress(OSError):
            self.remove(self.path)
        self.created = self.path.exists()

    def _write(self, rel: str, value: str) -> None:
        try:
            (self.path / rel).write_text(value + "\n")
        except OSError as e:
            raise RecordError(
                msg("cannot write {path}: {error}", path=str(self.path / rel), error=str(e))
            ) from e

    def _read(self, rel: str) -> str:
        try:
            return (self.path / rel).read_text()
        except OSError:
            return ""


def leftover_instances(root: Path) -> list[str]:
    """Names of ``stepscope-*`` instances under ``root`` (the tests check none remain)."""
    inst = root / "instances"
    if not inst.is_dir():
        return []
    return sorted(p.name for p in inst.iterdir() if p.name.startswith(PREFIX))
