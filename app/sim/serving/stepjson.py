"""``steps[]`` of the scheduler's API answer written straight to JSON bytes.

:func:`app.sim.serving.explainer.steps_json` builds the documented steps as Python objects; a
4,096-request run has 4,761 steps whose ``waiting`` lists hold 9.4 million ids in all (75 of its
86 MB of JSON), and building those lists took longer than the simulation. This writes the same
JSON without them: each id is encoded once. An FCFS waiting queue is the preempted requests
put back at its front, then the arrivals not admitted yet, in arrival order (:class:`_Waiting`):
every arrival's item is written once into one bytes object, and a step's ``waiting`` is the
front's few items and a memoryview of a slice of that object (the same view again when the step
changed nothing), so the 75 MB are copied only where the answer is written (the answer file).
Priority scheduling inserts anywhere in the queue: its ``waiting`` is joined again on the steps
that change it.

``running`` and most of ``scheduled`` are kept as the bytes of their items (:class:`_Running`,
:class:`_Queue`): requests join the running list at its end and mostly leave it from its head
(the oldest finish first), and a step whose running requests each decode one token schedules
them in that order, so its ``scheduled`` map is the running list's ``"id":1`` items as they
stand, then the requests admitted (and a last one still in its prefill) written one by one. A
step that preempts (FCFS takes the last running requests) schedules the rest in the same way,
so the list is compared once they are out. The running ids are an array of the series' own
type: a step's scheduled requests and tokens compare to it in one call each. Any other step
is written item by item. A step is two pieces: its JSON up to ``waiting``'s arrivals (the last
step's end in front), and the view of those (none when it is empty: ``bench/api_speed.py``'s
4,096 requests take 9,400 pieces, not 19,000, to write). The floats of every step are written
by one ``repr`` of each column.
The output parses to exactly :func:`steps_json`'s value
(``tests/sim/serving/test_stepjson.py`` checks it on every preset and on workloads that
exercise each queue move).
"""

from __future__ import annotations

import bisect
import itertools
import math
from array import array
from collections import deque
from collections.abc import Sequence
from json.encoder import encode_basestring

from app.sim.serving.params import SchedulerParams
from app.sim.serving.run import SchedulerSeries

COMPACT_AT = 1 << 20  # the queue's bytes drop what was popped once that is over a MB
HEADROOM = 4096  # bytes made free before the queue's head when a preempted id goes there


class _Queue:
    """A FIFO of JSON items as bytes, each led by a comma: ``,"r5","r6"``."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.start = 0
        self._json: bytes | bytearray | None = b"[]"

    def append(self, item: bytes) -> None:
        self.buf += item
        self._json = None

    def appendleft(self, item: bytes) -> None:
        n = len(item)
        if self.start < n:  # no room before the head: make some (a preemption seldom comes alone)
            room = max(n, HEADROOM)
            self.buf[0:0] = bytes(room)
            self.start += room
        self.start -= n
        self.buf[self.start : self.start + n] = item
        self._json = None

    def pop(self, item: bytes) -> None:
        """Take ``item`` off the end (it is the last)."""
        del self.buf[len(self.buf) - len(item) :]
        self._json = None

    def popleft(self, item: bytes) -> None:
        self.start += len(item)
        if self.start > COMPACT_AT and self.start * 2 > len(self.buf):
            del self.buf[: self.start]
            self.start = 0
        self._json = None

    def items(self, drop: int = 0) -> bytes | bytearray:
        """The items without their leading comma and the last ``drop`` bytes: ``"r5","r6"``."""
        return self.buf[self.start + 1 : len(self.buf) - drop]

    def json(self) -> bytes | bytearray:
        if self._json is None:
            if self.start >= len(self.buf):
                self._json = b"[]"
            else:
                body = self.buf[self.start :]
                body[0:1] = b"["
                body += b"]"
                self._json = body
        return self._json


class _Waiting:
    """The FCFS waiting queue's JSON items, written without copying its ids per step.

    Fresh arrivals join at the back and leave from the front; a preempted request goes back to
    the very front. So the queue is always the preempted requests still waiting (``front``,
    few) followed by a run of the arrivals never admitted yet, in arrival order: a slice of one
    bytes object holding every arrival's item (``,"r5"``), built once. A step's ``waiting`` is
    then ``front``'s items and a memoryview of that slice, whatever the queue's length."""

    def __init__(self, led: list[bytes], arrivals: Sequence[int]) -> None:
        self.led = led
        self.arrivals = arrivals
        self.all = memoryview(b"".join([led[i] for i in arrivals]))
        self.offs = [0, *itertools.accumulate([len(led[i]) for i in arrivals])]
        self.a = 0  # arrivals admitted (or past the head)
        self.b = 0  # arrivals in so far
        self.front: deque[int] = deque()
        self._front: bytes | None = b""
        self._run: memoryview | None = None

    def arrive(self, i: int) -> None:
        if self.arrivals[self.b] != i:  # pragma: no cover - arrivals replay in their order
            raise AssertionError("replay diverged from the scheduler")
        self.b += 1
        self._run = None

    def appendleft(self, i: int) -> None:
        self.front.appendleft(i)
        self._front = self._run = None  # the run's first comma depends on the front

    def popleft(self, i: int) -> None:
        """Admit the head, ``i``."""
        if self.front:
            head = self.front.popleft()
            self._front = self._run = None
        else:
            head = self.arrivals[self.a] if self.a < self.b else -1
            self.a += 1
            self._run = None
        if head != i:  # pragma: no cover - the scheduler only admits the queue head
            raise AssertionError("replay diverged from the scheduler")

    def items(self) -> tuple[bytes, memoryview]:
        """The queue's items without the brackets: the front's (joined, as bytes) and the
        arrivals' (a view), the first item's leading comma dropped."""
        if self._front is None:
            self._front = b"".join([self.led[i] for i in self.front])
        if self._run is None:
            start = self.offs[self.a]
            if not self._front and self.a < self.b:
                start += 1  # the first item overall: no comma before it
            self._run = self.all[start : self.offs[self.b]]
        front = self._front
        return (front[1:] if front else front), self._run


class _Running:
    """The running list (request indices) with its JSON items kept as bytes: the ids
    (``,"r5"``: ``running``) and the ids with a 1 (``,"r5":1``: ``scheduled`` of a decode)."""

    def __init__(self, led: list[bytes], led_ones: list[bytes], typecode: str = "i") -> None:
        # an array of the series' type: a step's scheduled requests compare to it in one call
        self.ids: array[int] = array(typecode)
        self.unit: array[int] = array(typecode)  # ones, at least as many as ids
        self.led = led
        self.led_ones = led_ones
        self.names = _Queue()
        self.ones = _Queue()

    def append(self, i: int) -> None:
        self.ids.append(i)
        self.names.append(self.led[i])
        self.ones.append(self.led_ones[i])

    def remove(self, gone: Sequence[int]) -> None:
        """Take ``gone`` out: popped from the head when they are its first requests (the
        oldest finish first), from the end when they are its last (FCFS preempts the last),
        else every item written again."""
        k = len(gone)
        ids = self.ids
        if k and set(ids[:k]) == set(gone):
            for i in ids[:k]:
                self.names.popleft(self.led[i])
                self.ones.popleft(self.led_ones[i])
            del ids[:k]
            return
        if k and set(ids[-k:]) == set(gone):
            for i in reversed(ids[-k:]):
                self.names.pop(self.led[i])
                self.ones.pop(self.led_ones[i])
            del ids[-k:]
            return
        out = set(gone)
        self.ids = array(ids.typecode, [i for i in ids if i not in out])
        self.names, self.ones = _Queue(), _Queue()
        for i in self.ids:
            self.names.append(self.led[i])
            self.ones.append(self.led_ones[i])

    def scheduled(
        self, req: Sequence[int], tokens: Sequence[int], keys: list[bytes], ones: list[bytes]
    ) -> bytes | None:
        """The ``scheduled`` map of a step that scheduled ``req`` with ``tokens`` (no
        preemption), if it begins with every running request decoding one token (all but the
        last, whose prefill may go on): their items as kept, the rest one by one; else None."""
        m = len(self.ids)
        if not m or len(req) < m or req[:m] != self.ids:  # (a list is never equal to an array)
            return None
        if len(self.unit) < m:
            self.unit = array(self.ids.typecode, [1]) * (2 * m)
        unit = self.unit
        if tokens[:m] == unit[:m]:
            k = m
        elif tokens[: m - 1] == unit[: m - 1]:
            k = m - 1
        else:
            return None
        last = len(self.led_ones[self.ids[-1]]) if k < m else 0
        head = self.ones.items(last) if k else b""
        rest = [
            ones[i] if v == 1 else keys[i] + b"%d" % v
            for i, v in zip(req[k:], tokens[k:], strict=True)
        ]
        if not rest:
            return b"{" + head + b"}"
        return b"{" + head + (b"," if k else b"") + b",".join(rest) + b"}"


def _float(x: float) -> bytes:
    """A float as ``json.dumps`` writes it (``repr``); not a number or infinite: ``null``."""
    return repr(float(x)).encode() if math.isfinite(x) else b"null"


def _floats(xs: Sequence[float]) -> list[bytes]:
    """:func:`_float` of each of ``xs``, written in one ``repr`` of the list (a large run has
    three floats a step: one call each took a fifth of the steps' time)."""
    if not xs:
        return []
    text = repr([float(x) for x in xs]).encode()
    if b"n" in text:  # inf or nan somewhere (a finite float's repr has no "n")
        return [_float(x) for x in xs]
    return text[1:-1].split(b", ")


def _id_list(enc: list[bytes], idx: Sequence[int]) -> bytes:
    if not idx:
        return b"[]"
    return b"[" + b",".join([enc[i] for i in idx]) + b"]"


def _id_map(
    keys: list[bytes], ones: list[bytes], idx: Sequence[int], values: Sequence[int]
) -> bytes:
    """``{"id": n, …}``; ``keys[i]`` is the id's JSON with its colon, ``ones[i]`` with ``1``
    (a decode step's tokens: most entries)."""
    if not idx:
        return b"{}"
    items = [ones[i] if v == 1 else keys[i] + b"%d" % v for i, v in zip(idx, values, strict=True)]
    return b"{" + b",".join(items) + b"}"


def steps_bytes(params: SchedulerParams, se: SchedulerSeries) -> bytes:
    """``steps[]`` as JSON bytes: what ``json.dumps(steps_json(params, se))`` parses back to."""
    return b"".join(steps_pieces(params, se))


def steps_pieces(
    params: SchedulerParams, se: SchedulerSeries
) -> list[bytes | bytearray | memoryview]:
    """:func:`steps_bytes` as the pieces that joined are those bytes (an answer written to a
    file or a socket piece by piece need not join its tens of megabytes first)."""
    ids = se["request_ids"]
    enc = [encode_basestring(str(i)).encode() for i in ids]
    led = [b"," + e for e in enc]  # as items of a queue
    keys = [e + b":" for e in enc]
    ones = [k + b"1" for k in keys]
    reqs = params.requests
    priority = params.config.policy == "priority"
    hits_shown = params.config.enable_prefix_caching
    running = _Running(led, [b"," + o for o in ones], se["sched_req"].typecode)
    queue = _Waiting(led, se["arrive_req"])
    ordered: list[tuple[int, float, str, int]] = []  # priority: (priority, arrival, id, idx)
    ordered_json: bytes | None = b""  # priority: the waiting items, joined
    arrival_key: dict[int, float] = {}
    out: list[bytes | bytearray | memoryview] = []
    tail = b"["  # what goes before the next step's head: the last step's end and a comma
    arrive_off, arrive_req = se["arrive_off"], se["arrive_req"]
    sched_off, sched_req_all, sched_tokens_all = (
        se["sched_off"],
        se["sched_req"],
        se["sched_tokens"],
    )
    preempt_off, preempt_req = se["preempt_off"], se["preempt_req"]
    admit_off, admit_req, admit_hit = se["admit_off"], se["admit_req"], se["admit_hit"]
    finish_off, finish_req = se["finish_off"], se["finish_req"]
    t_start, steps, kv_blocks = se["t_start"], se["step"], se["kv_blocks_used"]
    starts, ends, usages = _floats(t_start), _floats(se["t_end"]), _floats(se["kv_usage"])
    for s in range(len(steps)):
        for j in range(arrive_off[s], arrive_off[s + 1]):
            i = arrive_req[j]
            at = reqs[i].arrival_time
            arrival_key[i] = t_start[s] if at is None else at
            if priority:
                bisect.insort(ordered, (reqs[i].priority, arrival_key[i], ids[i], i))
                ordered_json = None
            else:
                queue.arrive(i)
        a, b = sched_off[s], sched_off[s + 1]
        pa, pb = preempt_off[s], preempt_off[s + 1]
        sched_req, sched_tokens = sched_req_all[a:b], sched_tokens_all[a:b]
        preempted = preempt_req[pa:pb] if pa != pb else ()
        if preempted:  # (FCFS preempts the last: the others are scheduled in their order)
            running.remove(preempted)
        scheduled = running.scheduled(sched_req, sched_tokens, keys, ones)
        if scheduled is None:
            scheduled = _id_map(keys, ones, sched_req, sched_tokens)
        for i in preempted:
            if priority:
                bisect.insort(ordered, (reqs[i].priority, arrival_key[i], ids[i], i))
                ordered_json = None
            else:
                queue.appendleft(i)
        aa, ab = admit_off[s], admit_off[s + 1]
        for j in range(aa, ab):
            i = admit_req[j]
            if priority:
                if ordered.pop(0)[3] != i:  # pragma: no cover - only the head is admitted
                    raise AssertionError("replay diverged from the scheduler")
                ordered_json = None
            else:
                queue.popleft(i)
            running.append(i)
        fa, fb = finish_off[s], finish_off[s + 1]
        finished = finish_req[fa:fb] if fa != fb else ()
        if finished:
            running.remove(finished)
        front: bytes
        run: bytes | memoryview
        if priority:
            if ordered_json is None:
                ordered_json = b",".join([enc[e[3]] for e in ordered])
            front, run = ordered_json, b""
        else:
            front, run = queue.items()
        hits = (
            _id_map(keys, ones, admit_req[aa:ab], admit_hit[aa:ab])
            if hits_shown and aa != ab
            else b"{}"
        )
        head = (
            b'%s{"step":%d,"t_start":%s,"t_end":%s,"scheduled":%s,"preempted":%s,"finished":%s,'
            b'"running":%s,"waiting":[%s'
            % (
                tail,
                steps[s],
                starts[s],
                ends[s],
                scheduled,
                _id_list(enc, preempted) if preempted else b"[]",
                _id_list(enc, finished) if finished else b"[]",
                running.names.json(),
                front,
            )
        )
        tail = b'],"kv_blocks_used":%d,"kv_usage":%s,"prefix_hit_tokens":%s},' % (
            kv_blocks[s],
            usages[s],
            hits,
        )
        out += (head, run) if run else (head,)
    out.append(tail[:-1] + b"]" if len(tail) > 1 else b"[]")
    return out
