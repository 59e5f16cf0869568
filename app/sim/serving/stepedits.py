"""``steps[]`` of the scheduler's API answer in its compact form (``"steps_encoding": "edits"``).

The documented steps (:func:`app.sim.serving.explainer.steps_json`) repeat each step's whole
``running`` and ``waiting`` lists and ``scheduled`` map: a 4,096-request run's 4,761 steps hold
9.4 million waiting ids (75 of its 86 MB of JSON), though a step changes those lists by a few
items. The compact form sends each list as an *edit* of the same list one step before, and the
scheduled tokens as runs; every other field of a step is as documented. Step ``k`` is::

    {"step", "t_start", "t_end",
     "scheduled_edit": EDIT, "scheduled_tokens": [[count, tokens], …],
     "preempted", "finished", "running_edit": EDIT, "waiting_edit": EDIT,
     "kv_blocks_used", "kv_usage", "prefix_hit_tokens"}

An EDIT is a JSON array whose items, in order, make the list: a string is an id, put there; a
pair ``[start, stop]`` of integers is the items ``start`` to ``stop - 1`` of the list one step
before (``[0, n]``: all ``n`` of them, unchanged). Before the first step every list is empty.
``scheduled_edit`` edits the ids of ``scheduled`` (the map's keys in its order);
``scheduled_tokens`` gives their tokens in the same order as runs: ``[[3, 1], [1, 512]]`` is
three ids with 1 token, then one with 512. :func:`decode_steps` turns the compact steps back
into the documented ones (``tests/sim/serving/test_stepedits.py``: equal on every preset and
on workloads that exercise each queue move; ``bench/api_speed.py --check``: on the bench's).

The queues are replayed as :func:`~app.sim.serving.explainer.steps_json` replays them (waiting:
arrivals at its end, FCFS puts a preempted request back at its front, priority scheduling in its
order, admissions from its front; running: admissions at its end, preempted and finished
requests out), and each one's edit is kept as those moves happen (:class:`_Edit`): the waiting
queue, thousands of ids, is never walked. ``scheduled`` is not a queue: a step's ids are
compared with the step before's as int arrays, equal on most steps (3,023 of the 4,761), else
diffed (:func:`_diff`: runs of the old list found through a map of positions and measured by
comparing slices). 4,096 requests: 1.5 MB, written in 0.038 s compiled (0.059 s pure; load 5).
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Sequence
from json.encoder import encode_basestring
from typing import Any

from app.sim.serving.params import SchedulerParams
from app.sim.serving.run import SchedulerSeries

ENCODING = "edits"  # the answer's ``steps_encoding`` for this form
COMPACT_FORM_DOC = """\
The answer has `"steps_encoding": "edits"`, and each step's `scheduled`, `running` \
and `waiting` are given as edits of the step before's: `scheduled_edit` (the ids of `scheduled`, \
in order), `scheduled_tokens` (their tokens as runs `[count, tokens]`), `running_edit`, \
`waiting_edit`. An edit is a list of items that, in order, make the list: a string is an id; \
`[start, stop]` is items `start`..`stop - 1` of the list one step before (before the first step \
every list is empty). Every other field is as documented. The steps of 4,096 requests: 1.5 MB \
instead of 85 MB. `?form=full` gives the steps as full lists (docs/api.md)."""


class _Edit:
    """The edit that turns a list (of ``length`` items, one step before) into the list as it is
    now, kept as the list changes by single insertions and deletions: ``segs`` in order, each
    ``(start, stop)``, a range of the old list (``start >= 0``), or ``(-1, i)``, request ``i``
    put there."""

    def __init__(self) -> None:
        self.segs: list[tuple[int, int]] = []
        self.length = 0

    def insert(self, pos: int, i: int) -> None:
        segs = self.segs
        self.length += 1
        if pos == self.length - 1:  # at the end: the usual case
            segs.append((-1, i))
            return
        at = 0
        for k in range(len(segs)):
            a, b = segs[k]
            n = b - a if a >= 0 else 1
            if pos == at:
                segs.insert(k, (-1, i))
                return
            if pos < at + n:  # inside a range: split it
                o = pos - at
                segs[k : k + 1] = [(a, a + o), (-1, i), (a + o, b)]
                return
            at += n
        segs.append((-1, i))  # pragma: no cover - pos == length - 1 is handled above

    def delete(self, pos: int) -> None:
        segs = self.segs
        self.length -= 1
        at = 0
        for k in range(len(segs)):
            a, b = segs[k]
            n = b - a if a >= 0 else 1
            if pos < at + n:
                if a < 0 or n == 1:
                    del segs[k]
                elif pos == at:
                    segs[k] = (a + 1, b)
                elif pos == at + n - 1:
                    segs[k] = (a, b - 1)
                else:
                    o = pos - at
                    segs[k : k + 1] = [(a, a + o), (a + o + 1, b)]
                return
            at += n
        raise IndexError(pos)  # pragma: no cover - the replay deletes what is there

    def json(self, enc: list[bytes]) -> bytes:
        """The edit as JSON; afterwards the list as it is now is the "one step before"."""
        segs = self.segs
        if not segs or (len(segs) == 1 and segs[0] == (0, self.length)):
            return _unchanged(self.length)
        items = [b"[%d,%d]" % (a, b) if a >= 0 else enc[b] for a, b in self.segs]
        self.segs = [(0, self.length)] if self.length else []
        return b"[" + b",".join(items) + b"]"


def _unchanged(n: int) -> bytes:
    """The EDIT of a list of ``n`` items that did not change."""
    return b"[[0,%d]]" % n if n else b"[]"


def _same_run(before: Sequence[int], p: int, now: Sequence[int], j: int) -> int:
    """How many items of ``now`` from ``j`` on equal those of ``before`` from ``p`` on (at
    least the first): slices compared whole, then halved (a few comparisons, not one a
    item)."""
    n = min(len(before) - p, len(now) - j)
    if now[j : j + n] == before[p : p + n]:
        return n
    lo, hi = 1, n  # now[j:j+lo] equals, now[j:j+hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if now[j : j + mid] == before[p : p + mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _diff(before: array[int], now: array[int], enc: list[bytes]) -> bytes:
    """The EDIT (as JSON) that makes ``now`` from ``before`` (arrays of distinct requests, of
    one type): each run of ``before`` found by its first id's position and measured by
    comparing slices (:func:`_same_run`), the rest as ids."""
    pos = dict(zip(before, range(len(before)), strict=True))
    items: list[bytes] = []
    j = 0
    m = len(now)
    while j < m:
        x = now[j]
        p = pos.get(x, -1)
        if p < 0:
            items.append(enc[x])
            j += 1
            continue
        n = _same_run(before, p, now, j)
        items.append(b"[%d,%d]" % (p, p + n))
        j += n
    return b"[" + b",".join(items) + b"]"


def _runs(tokens: Sequence[int]) -> bytes:
    """``[[count, value], …]`` of ``tokens``: runs found as :func:`_same_run` finds them."""
    items: list[bytes] = []
    j = 0
    m = len(tokens)
    while j < m:
        v = tokens[j]
        n = 1
        if j + 1 < m and tokens[j + 1] == v:  # a run: measured by comparing slices
            n = _same_run(tokens, j, tokens, j + 1) + 1
        items.append(b"[%d,%d]" % (n, v))
        j += n
    return b"[" + b",".join(items) + b"]"


def _floats(xs: Sequence[float]) -> list[bytes]:
    """Each of ``xs`` as ``json.dumps`` writes it, in one ``repr`` of the list."""
    if not xs:
        return []
    text = repr([float(x) for x in xs]).encode()
    if b"n" in text:  # inf or nan somewhere (a finite float's repr has no "n")
        return [repr(float(x)).encode() if math.isfinite(x) else b"null" for x in xs]
    return text[1:-1].split(b", ")


def _id_list(enc: list[bytes], idx: Sequence[int]) -> bytes:
    return b"[" + b",".join([enc[i] for i in idx]) + b"]"


def _id_map(keys: list[bytes], idx: Sequence[int], values: Sequence[int]) -> bytes:
    items = [keys[i] + b"%d" % v for i, v in zip(idx, values, strict=True)]
    return b"{" + b",".join(items) + b"}"


def _queue_by_priority(
    ordered: list[tuple[int, float, str, int]], waiting: _Edit, item: tuple[int, float, str, int]
) -> None:
    """A request arriving or preempted under the priority policy takes its place in the
    waiting queue by (priority, arrival, id), the order the step loop keeps it in."""
    k = bisect.bisect(ordered, item)
    ordered.insert(k, item)
    waiting.insert(k, item[3])


def edit_steps_bytes(params: SchedulerParams, se: SchedulerSeries) -> bytes:
    """The compact ``steps`` as JSON (a list of step objects, see the module's doc)."""
    ids = se["request_ids"]
    enc = [encode_basestring(str(i)).encode() for i in ids]
    keys = [e + b":" for e in enc]
    reqs = params.requests
    priority = params.config.policy == "priority"
    hits_shown = params.config.enable_prefix_caching
    arrive_off, arrive_req = se["arrive_off"], se["arrive_req"]
    sched_off, sched_req, sched_tokens = se["sched_off"], se["sched_req"], se["sched_tokens"]
    running: list[int] = []  # the running list (its edit kept as it changes, as waiting's)
    running_edit = _Edit()
    last_scheduled: array[int] = sched_req[0:0]
    last_tokens: array[int] = sched_tokens[0:0]
    last_runs = b"[]"
    waiting = _Edit()
    ordered: list[tuple[int, float, str, int]] = []  # priority: (priority, arrival, id, idx)
    arrival_key: dict[int, float] = {}
    preempt_off, preempt_req = se["preempt_off"], se["preempt_req"]
    admit_off, admit_req, admit_hit = se["admit_off"], se["admit_req"], se["admit_hit"]
    finish_off, finish_req = se["finish_off"], se["finish_req"]
    t_start, steps, kv_blocks = se["t_start"], se["step"], se["kv_blocks_used"]
    starts, ends, usages = _floats(t_start), _floats(se["t_end"]), _floats(se["kv_usage"])
    out: list[bytes] = []
    for s in range(len(steps)):
        for j in range(arrive_off[s], arrive_off[s + 1]):
            i = arrive_req[j]
            at = reqs[i].arrival_time
            arrival_key[i] = t_start[s] if at is None else at
            if priority:
                _queue_by_priority(ordered, waiting, (reqs[i].priority, arrival_key[i], ids[i], i))
            else:
                waiting.insert(waiting.length, i)
        pa, pb = preempt_off[s], preempt_off[s + 1]
        for j in range(pa, pb):
            i = preempt_req[j]
            k = running.index(i)
            del running[k]
            running_edit.delete(k)
            if priority:
                _queue_by_priority(ordered, waiting, (reqs[i].priority, arrival_key[i], ids[i], i))
            else:
                waiting.insert(0, i)
        aa, ab = admit_off[s], admit_off[s + 1]
        for j in range(aa, ab):
            i = admit_req[j]
            if priority:
                if ordered.pop(0)[3] != i:  # pragma: no cover - only the head is admitted
                    raise AssertionError("replay diverged from the scheduler")
            waiting.delete(0)
            running.append(i)
            running_edit.insert(running_edit.length, i)
        fa, fb = finish_off[s], finish_off[s + 1]
        for j in range(fa, fb):
            k = running.index(finish_req[j])
            del running[k]
            running_edit.delete(k)
        a, b = sched_off[s], sched_off[s + 1]
        scheduled, tokens = sched_req[a:b], sched_tokens[a:b]
        # most steps schedule the requests of the step before (4,096 requests: 3,023 of 4,761
        # steps change no list): said in one item
        if scheduled == last_scheduled:
            scheduled_edit = _unchanged(b - a)
        else:
            scheduled_edit = _diff(last_scheduled, scheduled, enc)
        if tokens != last_tokens:
            last_runs = _runs(tokens)
        last_scheduled, last_tokens = scheduled, tokens
        hits = (
            _id_map(keys, admit_req[aa:ab], admit_hit[aa:ab]) if hits_shown and aa != ab else b"{}"
        )
        out.append(
            b'{"step":%d,"t_start":%s,"t_end":%s,"scheduled_edit":%s,"scheduled_tokens":%s,'
            b'"preempted":%s,"finished":%s,"running_edit":%s,"waiting_edit":%s,'
            b'"kv_blocks_used":%d,"kv_usage":%s,"prefix_hit_tokens":%s}'
            % (
                steps[s],
                starts[s],
                ends[s],
                scheduled_edit,
                last_runs,
                _id_list(enc, preempt_req[pa:pb]) if pa != pb else b"[]",
                _id_list(enc, finish_req[fa:fb]) if fa != fb else b"[]",
                running_edit.json(enc),
                waiting.json(enc),
                kv_blocks[s],
                usages[s],
                hits,
            )
        )
    return b"[" + b",".join(out) + b"]"


# --- decoding (clients, tests and the bench: not the server's path) ----------------------------


def apply_edit(before: list[Any], edit: list[Any]) -> list[Any]:
    """The list an EDIT makes from ``before``: ids as they are, ``[start, stop]`` ranges of
    ``before`` copied."""
    out: list[Any] = []
    for item in edit:
        if isinstance(item, str):
            out.append(item)
        else:
            start, stop = item
            out.extend(before[start:stop])
    return out


def decode_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documented ``steps[]`` of the compact one (parsed JSON in, parsed JSON out)."""
    scheduled: list[Any] = []
    running: list[Any] = []
    waiting: list[Any] = []
    out: list[dict[str, Any]] = []
    for st in steps:
        scheduled = apply_edit(scheduled, st["scheduled_edit"])
        tokens = [v for count, v in st["scheduled_tokens"] for _ in range(count)]
        running = apply_edit(running, st["running_edit"])
        waiting = apply_edit(waiting, st["waiting_edit"])
        out.append(
            {
                "step": st["step"],
                "t_start": st["t_start"],
                "t_end": st["t_end"],
                "scheduled": dict(zip(scheduled, tokens, strict=True)),
                "preempted": st["preempted"],
                "finished": st["finished"],
                "running": running,
                "waiting": waiting,
                "kv_blocks_used": st["kv_blocks_used"],
                "kv_usage": st["kv_usage"],
                "prefix_hit_tokens": st["prefix_hit_tokens"],
            }
        )
    return out


def decode_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """The documented answer (``?form=full``) of a compact one (``"steps_encoding": "edits"``);
    any other answer as it is."""
    if answer.get("steps_encoding") != ENCODING:
        return answer
    out = {k: v for k, v in answer.items() if k != "steps_encoding"}
    out["steps"] = decode_steps(answer["steps"])
    return out
