"""vLLM 0.33's V1 scheduler, step by step (``Scheduler``, vllm/v1/core/sched/scheduler.py).

One *step* is one ``schedule()`` followed by one ``update_from_output()`` in which every request
whose prefill is complete samples one token. Requests that arrive at step ``k`` are
``add_request``-ed before the ``k``-th ``schedule()``. The rules are those of
``/work/shared/reference/vllm-scheduler.md``:

* RUNNING first, in list (admission) order, each getting
  ``min(num_tokens - num_computed_tokens, long_prefill_token_threshold (only when more than
  one request), budget left, max_model_len - num_computed_tokens - 1)`` tokens;
* a running request that cannot get its blocks preempts a victim (FCFS: the last of
  ``running``; priority: the worst ``(priority, arrival_time)``, whose tokens are given back if
  it was already scheduled) until it fits or preempts itself;
* WAITING only if nothing was preempted this step, head first, stopping at the first request
  that cannot be admitted (``max_num_seqs``, head-of-line prompt over budget without chunked
  prefill, or KV: the whole current sequence must fit, plus the watermark when something runs);
* ``num_computed_tokens`` advances when scheduled; a request samples when it has caught up.

:meth:`Scheduler.schedule` reads beside vLLM's ``schedule()``: one helper per phase, in the same
order, under the same comments. The block pool and prefix cache are
:class:`~app.sim.serving.blockpool.BlockPool`; a request's state is
:class:`~app.sim.serving.request.Req`.

The hot path is written for speed (plain ints and lists, ``__slots__``, local bindings): the
bench replays 4096 requests of 512 + 128 tokens in well under a second.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, TypeAlias

from app.sim.serving.blockpool import BlockPool
from app.sim.serving.params import SchedulerParams
from app.sim.serving.request import FINISHED, PREEMPTED, RUNNING, WAITING, Req, token_at

# Why the waiting loop stopped admitting (one per step).
STOP_EMPTY: Final = 0
STOP_BUDGET: Final = 1
STOP_MAX_SEQS: Final = 2
STOP_HOL: Final = 3
STOP_KV_FULL: Final = 4
STOP_KV: Final = 5
STOP_PREEMPTED: Final = 6
STOP_STATIC_BATCH: Final = 7  # static batching: a batch is running, nobody joins it

# (why, the request at the head of the queue, two figures the narration quotes)
Stop: TypeAlias = tuple[int, Req | None, int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class PreemptEvent:
    victim: Req
    for_req: Req  # the running request that could not get its blocks
    given_back: int  # tokens the victim had been scheduled this step (priority policy)
    need_blocks: int
    free_blocks: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    req: Req
    hit_tokens: int
    tokens: int
    resumed: bool
    new_blocks: int


class Scheduler(BlockPool):
    """vLLM's ``Scheduler`` + ``KVCacheManager`` + ``BlockPool`` for one KV-cache group of full
    attention, synchronous, no spec decode, no connector."""

    def __init__(self, params: SchedulerParams) -> None:
        cfg = params.config
        super().__init__(cfg.num_gpu_blocks, cfg.block_size)
        self.params = params
        self.cfg = cfg
        self.budget_max = cfg.max_num_batched_tokens
        self.max_seqs = cfg.max_num_seqs
        self.mml = cfg.max_model_len
        self.thr_cfg = cfg.long_prefill_token_threshold
        self.chunked = cfg.enable_chunked_prefill
        self.static = cfg.batching == "static"
        self.caching = cfg.enable_prefix_caching and not self.static
        self.priority = cfg.policy == "priority"
        self.reserve_full = cfg.scheduler_reserve_full_isl
        # KVCacheManager.__init__: watermark_blocks = int(watermark * num_blocks)
        self.wm_blocks = int(cfg.watermark * cfg.num_gpu_blocks)
        eos = cfg.eos_token_id
        self.reqs = [Req(i, s, eos, cfg.max_model_len) for i, s in enumerate(params.requests)]

        # --- queues ------------------------------------------------------------------------
        self.running: list[Req] = []
        self.fcfs: deque[Req] = deque()
        self.heap: list[tuple[int, float, str, int, Req]] = []
        self.num_finished = 0

        # --- per-step results (read by the explainer) ---------------------------------------
        self.step_k = 0
        self.clock = 0.0  # start of the current step (s)
        self.t_end = 0.0  # end of the last executed step (s)
        self.sched: dict[Req, int] = {}
        # the requests of ``sched`` that the decode fast path scheduled (each samples one token
        # in update_from_output), in order, and the others (also in order)
        self.decoding: list[Req] = []
        self.others: list[Req] = []
        self.plain = all(r.tokens is None for r in self.reqs)  # no token ids kept
        self.preempt_events: list[PreemptEvent] = []
        self.admissions: list[Admission] = []
        self.finished_now: list[Req] = []
        self.wait_stop: Stop = (STOP_EMPTY, None, 0, 0)
        self.prefill_tokens = 0
        self.decode_tokens = 0
        self.padding_tokens = 0
        self.ctx_tokens = 0
        self.budget_left = 0
        self.batch_size = 0
        self.total_hit_tokens = 0
        self.total_query_tokens = 0
        self.total_preemptions = 0
        self.tokens_processed = 0

    # --- queue helpers ---------------------------------------------------------------------

    def num_waiting(self) -> int:
        return len(self.heap) if self.priority else len(self.fcfs)

    def waiting_list(self, limit: int | None = None) -> list[Req]:
        """The waiting queue in the order it will be served (at most ``limit`` requests)."""
        if not self.priority:
            if limit is None:
                return list(self.fcfs)
            return [r for _, r in zip(range(limit), self.fcfs, strict=False)]
        items = heapq.nsmallest(limit, self.heap) if limit is not None else sorted(self.heap)
        return [e[4] for e in items]

    def add_request(self, r: Req, t_arrival: float, arrival_time: float) -> None:
        """``Scheduler.add_request``: FCFS appends, priority pushes on the heap."""
        r.status = WAITING
        r.t_arrival = t_arrival
        r.step_arrival = self.step_k
        r.pkey = (r.spec.priority, arrival_time)
        if self.priority:
            heapq.heappush(self.heap, (r.spec.priority, arrival_time, r.rid, r.idx, r))
        else:
            self.fcfs.append(r)

    def _requeue_preempted(self, r: Req) -> None:
        """``waiting.prepend_request``: FCFS to the front, priority back in its heap place."""
        if self.priority:
            heapq.heappush(self.heap, (r.pkey[0], r.pkey[1], r.rid, r.idx, r))
        else:
            self.fcfs.appendleft(r)

    def _preempt(self, victim: Req) -> None:
        """``_preempt_request``: free its blocks (hashes survive), back to waiting with
        ``num_computed_tokens = 0``."""
        self._free_blocks(victim.blocks)
        victim.blocks = []
        victim.cap = 0
        victim.num_cached = 0
        victim.status = PREEMPTED
        victim.computed = 0
        victim.preemptions += 1
        self.total_preemptions += 1
        self._requeue_preempted(victim)

    # --- schedule() ------------------------------------------------------------------------

    # --- schedule() ------------------------------------------------------------------------

    def schedule(self) -> None:
        """``Scheduler.schedule`` (L699), phase by phase, plus ``_update_after_schedule``
        (L1845): computed tokens advance as soon as a request is scheduled."""
        self.sched = {}
        self.decoding = []
        self.others = []
        self.preempt_events = []
        self.admissions = []
        if self.static:
            self._schedule_static()
            return
        # token_budget = self.max_num_scheduled_tokens; the long-prefill threshold applies only
        # when more than one request is in the system (L759).
        thr = self.thr_cfg if len(self.running) + self.num_waiting() > 1 else 0

        # First, schedule the RUNNING requests. (L793)
        budget, prefill, decode, ctx = self._schedule_running(self.budget_max, thr)

        # Next, schedule the WAITING requests. (L1049) Only if nothing was preempted.
        if self.preempt_events:
            stop: Stop = (STOP_PREEMPTED, None, 0, 0)
        else:
            budget, admitted, admitted_ctx, stop = self._schedule_waiting(budget, thr)
            prefill += admitted
            ctx += admitted_ctx

        # Check if the scheduling constraints are satisfied: what the step spent, for the
        # explainer (vLLM asserts the budget and max_num_seqs here).
        self._end_step(stop, budget, prefill, decode, ctx, 0)

    def _schedule_running(self, budget: int, thr: int) -> tuple[int, int, int, int]:
        """The RUNNING loop, in list order: returns the budget left and the prefill, decode and
        context tokens scheduled. Iterating over a copy visits the requests in the order vLLM's
        index walk does; a request preempted earlier in this loop is skipped."""
        running = self.running
        sched = self.sched
        decode_one = self.decoding.append  # counted as decodes at the end
        mml = self.mml
        bs = self.bs
        caching = self.caching
        prefill = 0
        decode = 0
        ctx = 0
        for r in tuple(running):
            if budget <= 0:
                break
            if r.status != RUNNING:
                continue
            comp = r.computed
            n = r.num_tokens - comp
            if n == 1 and comp < r.cap and comp >= r.prompt_len:
                # Fast path: a decode whose next position is inside a block it holds (the cap
                # checks cannot bite: budget > 0, threshold >= 1, comp + 1 < max_model_len).
                # A running request has cached exactly its computed // block_size blocks, so
                # a block becomes full (and is cached) only when comp + 1 is a multiple.
                comp += 1
                if caching and comp % bs == 0:
                    self._cache_blocks(r, comp // bs)
                sched[r] = 1
                decode_one(r)
                budget -= 1
                r.computed = comp
                ctx += comp
                continue
            if n == 1 and comp == r.cap and comp >= r.prompt_len and self.nfree and comp + 1 < mml:
                # A decode whose next position opens a block (the general path below with
                # n = 1, need = comp + 1, one new block, which is free): that block taken.
                r.blocks.append(self._pop1(r.idx))
                r.cap = comp + bs
                comp += 1
                if caching and comp // bs > r.num_cached:  # block_size 1: comp fills it
                    self._cache_blocks(r, comp // bs)
                sched[r] = 1
                decode_one(r)
                budget -= 1
                r.computed = comp
                ctx += comp
                continue
            if 0 < thr < n:
                n = thr
            if n > budget:
                n = budget
            lim = mml - comp - 1
            if n > lim:
                n = lim
            if n <= 0:
                continue
            need = comp + n
            if need > mml:
                need = mml
            # kv_cache_manager.allocate_slots
            nb = (need + bs - 1) // bs - len(r.blocks)
            if nb > 0:
                if nb > self.nfree:
                    alive, back_prefill, back_decode, back_ctx = self._preempt_for(r, nb)
                    budget += back_prefill + back_decode
                    prefill -= back_prefill
                    decode -= back_decode
                    ctx -= back_ctx
                    if not alive:
                        if self.priority:
                            continue  # r removed itself; later (higher-priority) ones may fit
                        break
                r.blocks.extend(self._popleft(nb, r.idx))
                r.cap = len(r.blocks) * bs
            if caching:
                nt = r.num_tokens
                nf = (need if need < nt else nt) // bs
                if nf > r.num_cached:
                    self._cache_blocks(r, nf)
            # Schedule the request.
            sched[r] = n
            self.others.append(r)
            budget -= n
            r.computed = comp + n
            if n == 1 and comp >= r.prompt_len:
                decode += 1
            else:
                prefill += n
            ctx += comp + n
        return budget, prefill, decode + len(self.decoding), ctx

    def _preempt_for(self, r: Req, nb: int) -> tuple[bool, int, int, int]:
        """The request cannot be scheduled: preempt the lowest-priority request (FCFS: the last
        of ``running``; priority: the worst ``(priority, arrival_time)``) until ``nb`` blocks
        are free or ``r`` preempted itself. Returns whether ``r`` is still running, and the
        prefill, decode and context tokens of victims already scheduled this step (given back
        to the budget under the priority policy)."""
        running = self.running
        sched = self.sched
        back_prefill = 0
        back_decode = 0
        back_ctx = 0
        while nb > self.nfree:
            free_before = self.nfree
            given = 0
            if self.priority:
                victim = max(running, key=_pkey)
                del running[running.index(victim)]
                if victim in sched:
                    given = sched.pop(victim)
                    if given == 1 and victim.computed - given >= victim.prompt_len:
                        back_decode += 1
                    else:
                        back_prefill += given
                    back_ctx += victim.computed
            else:
                victim = running.pop()
            self._preempt(victim)
            self.preempt_events.append(
                PreemptEvent(
                    victim=victim,
                    for_req=r,
                    given_back=given,
                    need_blocks=nb,
                    free_blocks=free_before,
                )
            )
            if victim is r:
                return False, back_prefill, back_decode, back_ctx
        return True, back_prefill, back_decode, back_ctx

    def _schedule_waiting(self, budget: int, thr: int) -> tuple[int, int, int, Stop]:
        """The WAITING loop, head first: returns the budget left, the tokens scheduled for the
        requests admitted, their context tokens, and why admission stopped. Admission never
        preempts: the first request that cannot be admitted stops it."""
        running = self.running
        priority = self.priority
        queue = self.heap if priority else self.fcfs
        bs = self.bs
        prefill = 0
        ctx = 0
        while True:
            if budget <= 0:
                return budget, prefill, ctx, (STOP_BUDGET, None, 0, 0)
            if not queue:
                return budget, prefill, ctx, (STOP_EMPTY, None, 0, 0)
            r = self.heap[0][4] if priority else self.fcfs[0]
            # Check that adding the request still respects the max_num_seqs limit.
            if len(running) >= self.max_seqs:
                return budget, prefill, ctx, (STOP_MAX_SEQS, r, len(running), self.max_seqs)
            # Get already-cached tokens.
            hits = self.lookup(r) if self.caching else []
            hit_tok = len(hits) * bs
            n = r.num_tokens - hit_tok
            if 0 < thr < n:
                n = thr
            # If chunked_prefill is disabled, we can stop the scheduling here.
            if not self.chunked and n > budget:
                return budget, prefill, ctx, (STOP_HOL, r, n, budget)
            if n > budget:
                n = budget
            new_blocks, stop = self._admission_blocks(r, hits, n)
            if stop is not None:
                return budget, prefill, ctx, stop
            self._admit(r, hits, n, new_blocks)
            budget -= n
            prefill += n
            ctx += hit_tok + n

    def _admission_blocks(self, r: Req, hits: list[int], n: int) -> tuple[int, Stop | None]:
        """``allocate_slots``' checks for a waiting request (§4.3): the whole current sequence
        must fit (``scheduler_reserve_full_isl``), a prefix hit on a free block costs a free
        block, and the watermark applies when something runs. Returns the new blocks the
        chunk needs, or why the request cannot be admitted."""
        bs = self.bs
        mml = self.mml
        nh = len(hits)
        nt = r.num_tokens
        wm = self.wm_blocks if self.running else 0
        ref = self.ref
        evictable = 0
        for b in hits:
            if ref[b] == 0:
                evictable += 1
        if self.reserve_full:
            full = nt if nt < mml else mml
            need_full = max((full + bs - 1) // bs - nh, 0) + evictable
            if need_full + wm > self.nfree:
                return 0, (STOP_KV_FULL, r, need_full + wm, self.nfree)
        need = nh * bs + n
        if need > mml:
            need = mml
        new_blocks = max((need + bs - 1) // bs - nh, 0)
        if new_blocks + evictable + wm > self.nfree:
            return 0, (STOP_KV, r, new_blocks + evictable + wm, self.nfree)
        return new_blocks, None

    def _admit(self, r: Req, hits: list[int], n: int, new_blocks: int) -> None:
        """Admit the head of the waiting queue: touch its hit blocks, take ``new_blocks`` from
        the free queue, cache the newly full ones, move it to ``running`` with ``n`` tokens."""
        bs = self.bs
        nh = len(hits)
        hit_tok = nh * bs
        nt = r.num_tokens
        self._touch(hits, r.idx)
        r.blocks = hits
        r.num_cached = nh
        if new_blocks:
            hits.extend(self._popleft(new_blocks, r.idx))
        r.cap = len(hits) * bs
        if self.caching:
            need = min(hit_tok + n, self.mml)
            nf = (need if need < nt else nt) // bs
            if nf > nh:
                self._cache_blocks(r, nf)
            self.total_hit_tokens += hit_tok
            self.total_query_tokens += nt
        if self.priority:
            heapq.heappop(self.heap)
        else:
            self.fcfs.popleft()
        resumed = r.status == PREEMPTED
        self.running.append(r)
        r.status = RUNNING
        r.computed = hit_tok + n
        r.hit_tokens += hit_tok
        if r.t_first_sched < 0:
            r.t_first_sched = self.clock
        self.sched[r] = n
        self.others.append(r)
        self.admissions.append(
            Admission(req=r, hit_tokens=hit_tok, tokens=n, resumed=resumed, new_blocks=new_blocks)
        )

    def _end_step(
        self, stop: Stop, budget: int, prefill: int, decode: int, ctx: int, padding: int
    ) -> None:
        self.wait_stop = stop
        self.prefill_tokens = prefill
        self.decode_tokens = decode
        self.padding_tokens = padding
        self.ctx_tokens = ctx
        self.budget_left = budget

    # --- static batching (not vLLM) --------------------------------------------------------

    def _schedule_static(self) -> None:
        """Static batching (not vLLM; for comparison): a batch of up to ``max_num_seqs``
        requests is formed only when the previous batch has completely finished; each reserves
        blocks for its whole prompt + ``max_tokens`` up front; the batch then runs (prefill
        within the token budget, then decodes) and nobody joins until all are done. Finished
        members still occupy their batch row (padding) while others decode.

        Once formed, a batch is scheduled by the RUNNING loop: its blocks are all reserved
        (no allocation, no preemption) and prefix caching is off."""
        stop: Stop = (STOP_STATIC_BATCH, None, 0, 0)
        if not self.running:
            stop = self._form_static_batch()
        budget, prefill, decode, ctx = self._schedule_running(self.budget_max, 0)
        padding = (self.batch_size - len(self.running)) if decode else 0
        self._end_step(stop, budget, prefill, decode, ctx, padding)

    def _form_static_batch(self) -> Stop:
        """Take up to ``max_num_seqs`` waiting requests, each with blocks for its whole
        prompt + ``max_tokens``, stopping at the first that does not fit."""
        running = self.running
        bs = self.bs
        self.batch_size = 0
        stop: Stop = (STOP_EMPTY, None, 0, 0)
        while self.num_waiting():
            r = self.heap[0][4] if self.priority else self.fcfs[0]
            if len(running) >= self.max_seqs:
                stop = (STOP_MAX_SEQS, r, len(running), self.max_seqs)
                break
            total = min(r.num_tokens + r.spec.max_tokens, self.mml)
            need = (total + bs - 1) // bs
            if need > self.nfree:
                stop = (STOP_KV_FULL, r, need, self.nfree)
                break
            if self.priority:
                heapq.heappop(self.heap)
            else:
                self.fcfs.popleft()
            r.blocks = self._popleft(need, r.idx)
            r.cap = need * bs
            r.status = RUNNING
            running.append(r)
            if r.t_first_sched < 0:
                r.t_first_sched = self.clock
            self.admissions.append(
                Admission(req=r, hit_tokens=0, tokens=0, resumed=False, new_blocks=need)
            )
        self.batch_size = len(running)
        return stop

    # --- update_from_output() --------------------------------------------------------------

    def update_from_output(self, t_end: float) -> None:
        """``Scheduler.update_from_output``: every scheduled request that has caught up with
        its tokens samples one; ``check_stop`` (precomputed: see :func:`finish_point`) may
        finish it, which frees its blocks at once.

        The decode fast path's requests (``decoding``) have caught up and sampled before, so
        they take a shorter loop when no token ids are kept and nothing was preempted; the
        finished keep ``sched``'s order either way."""
        self.t_end = t_end
        sched = self.sched
        if self.plain and not self.preempt_events:
            finished = self._sample_decodes(t_end)
            if self.others:
                more = self._sample(self.others, t_end)
                if more and finished:
                    done = set(finished).union(more)
                    finished = [r for r in sched if r in done]
                else:
                    finished = finished or more
        else:
            finished = self._sample(sched, t_end)
        self.tokens_processed += sum(sched.values())
        if finished:
            for r in finished:
                r.status = FINISHED
                r.t_finish = t_end
                r.step_finish = self.step_k
                self._free_blocks(r.blocks)
                r.blocks = []
                r.cap = 0
            self.running = [r for r in self.running if r.status == RUNNING]
            self.num_finished += len(finished)
        self.finished_now = finished

    def _sample_decodes(self, t_end: float) -> list[Req]:
        """The fast path's decodes sample their next token (none is a first token); returns
        those that finish, in order."""
        finished: list[Req] = []
        for r in self.decoding:
            j = r.num_output + 1
            r.num_output = j
            r.num_tokens += 1
            itl = t_end - r.t_last_token
            if itl > r.max_itl:
                r.max_itl = itl
            r.t_last_token = t_end
            if j == r.finish_out:
                finished.append(r)
        return finished

    def _sample(self, reqs: Iterable[Req], t_end: float) -> list[Req]:
        """Each of ``reqs`` that has caught up with its tokens samples one; returns those that
        finish, in order."""
        finished: list[Req] = []
        eos = self.cfg.eos_token_id
        for r in reqs:
            c = r.computed
            if c == r.num_tokens:
                j = r.num_output + 1
                r.num_output = j
                r.num_tokens = c + 1
                if r.tokens is not None:
                    r.tokens.append(token_at(r.spec, j - 1, eos, r.filler))
                if j == 1:
                    r.t_first_token = t_end
                elif t_end - r.t_last_token > r.max_itl:
                    r.max_itl = t_end - r.t_last_token
                r.t_last_token = t_end
                if j == r.finish_out:
                    finished.append(r)
        return finished


def _pkey(r: Req) -> tuple[int, float]:
    return r.pkey
