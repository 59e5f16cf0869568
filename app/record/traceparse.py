"""Parse tracefs ``trace_pipe`` text: event lines and the stack traces that follow them.

An event line (default options, possibly with the tgid column)::

    <task>-<pid> [(<tgid>)] [<cpu>] <flags> <seconds>.<micro>: <event>: <fields>

Fields print as ``name=value`` separated by spaces; a few formats use ``name: value``
(``skb:kfree_skb``'s ``reason: NOT_SPECIFIED``). A stack trace (``options/stacktrace`` or a
``stacktrace`` trigger) is an entry named ``<stack trace>`` followed by lines
`` => func+0x1c/0x90``, innermost first; it belongs to the event just before it on that CPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEAD = re.compile(
    r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:(?P<flags>[^\s\d][^\s]{2,5})\s+)?(?P<ts>\d+\.\d+):\s+"
    r"(?:(?P<stack><stack trace>)|(?P<name>[^:\s]+):\s?(?P<body>.*))$"
)
_FIELD = re.compile(r"([A-Za-z_][\w.]*)(?:=|: )(\S*)")
_FRAME = re.compile(r"^\s*=>\s+(?P<func>[^\s+]+)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?(?:\s.*)?$")
# compiler clones print as foo.constprop.0, foo.isra.3, foo.part.1, foo.cold: the function foo
_CLONE = re.compile(r"\.(?:constprop|isra|part|cold|llvm)\b.*$")
MAX_FRAMES = 64
# The tracing machinery's own frames at the top of every stack: not the kernel path.
TRACING_FRAMES = ("trace_event_raw_event_", "perf_trace_", "__traceiter_", "__bpf_trace_")
MAX_FIELDS = 64


@dataclass
class TraceEvent:
    """One event: ``ts`` in seconds of the instance's trace clock, ``name`` without system."""

    ts: float
    cpu: int
    pid: int
    task: str
    name: str
    fields: dict[str, str]
    stack: list[str] | None = None


@dataclass
class StackLine:
    """`` => func+off/size``: one frame of the stack trace being read."""

    func: str


@dataclass
class StackStart:
    """The ``<stack trace>`` entry header: the frames after it belong to ``cpu``'s last event."""

    cpu: int


def parse_fields(body: str) -> dict[str, str]:
    """``a=1 b=x reason: R`` -> {"a": "1", "b": "x", "reason": "R"} (at most MAX_FIELDS)."""
    out: dict[str, str] = {}
    for m in _FIELD.finditer(body):
        if len(out) >= MAX_FIELDS:
            break
        out.setdefault(m[1], m[2])
    return out


def parse_line(line: str) -> TraceEvent | StackLine | StackStart | None:
    """One line of trace_pipe, or None for what is neither an event nor a stack frame
    (comments, ``CPU:1 [LOST 12 EVENTS]``, blank lines)."""
    if not line.strip() or line.startswith("#"):
        return None
    fm = _FRAME.match(line)
    if fm is not None:
        return StackLine(_CLONE.sub("", fm["func"]))
    m = _HEAD.match(line.rstrip("\n"))
    if m is None:
        return None
    if m["stack"]:
        return StackStart(int(m["cpu"]))
    return TraceEvent(
        ts=float(m["ts"]),
        cpu=int(m["cpu"]),
        pid=int(m["pid"]),
        task=m["task"].strip(),
        name=m["name"],
        fields=parse_fields(m["body"]),
    )


@dataclass
class TraceReader:
    """Feeds lines in order and yields complete events: an event is held back until the next
    event line (or :meth:`flush`) so that the stack trace printed after it can be attached."""

    pending: TraceEvent | None = None
    _stack_cpu: int | None = None
    lost: int = 0

    def feed(self, line: str) -> list[TraceEvent]:
        if "[LOST" in line and "EVENTS]" in line:
            m = re.search(r"\[LOST (\d+) EVENTS\]", line)
            self.lost += int(m[1]) if m else 0
            return []
        item = parse_line(line)
        if item is None:
            return []
        if isinstance(item, StackStart):
            self._stack_cpu = item.cpu
            if self.pending is not None and self.pending.cpu == item.cpu:
                self.pending.stack = []
            return []
        if isinstance(item, StackLine):
            p = self.pending
            if item.func.startswith(TRACING_FRAMES):
                return []
            if p is not None and p.stack is not None and len(p.stack) < MAX_FRAMES:
                p.stack.append(item.func)
            return []
        done = self.flush()
        self.pending = item
        self._stack_cpu = None
        return done

    def flush(self) -> list[TraceEvent]:
        out = [self.pending] if self.pending is not None else []
        self.pending = None
        return out
