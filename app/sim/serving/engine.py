"""The vLLM 0.33 V1 scheduler and KV-cache block pool, step by step.

One *step* is one ``schedule()`` (``Scheduler.schedule``, vllm/v1/core/sched/scheduler.py)
followed by one ``update_from_output()`` in which every request whose prefill is complete
samples one token. Requests that arrive at step ``k`` are ``add_request``-ed before the
``k``-th ``schedule()``. The rules are those of ``/work/shared/reference/vllm-scheduler.md``:

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

The block pool is ``BlockPool`` (vllm/v1/core/block_pool.py): block 0 is the null block; the
free queue is a doubly linked list (``FreeKVCacheBlockQueue``) kept here as two int arrays; a
freed request's blocks go back tail-first, unhashed ones to the *front* (LIFO reuse) and hashed
ones to the *back* (LRU eviction); a cached block is evicted when it is popped for reuse.
Block hashes are chained over full blocks of prompt *and* generated tokens
(``hash_block_tokens``): a chain is interned as a small int, so identical prefixes get the same
key and different ones never collide. A prompt given only as a length has content unique to its
request; its keys are ``(request index, block index)``.

The hot path is written for speed (plain ints and lists, ``__slots__``, local bindings): the
bench replays 4096 requests of 512 + 128 tokens in well under a second.
"""

from __future__ import annotations

import heapq
import operator
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from app.sim.serving.params import LatencyParams, RequestSpec, SchedulerParams

WAITING, RUNNING, PREEMPTED, FINISHED = 0, 1, 2, 3
STATUS_NAMES = ("waiting", "running", "preempted", "finished")

# Why the waiting loop stopped admitting (one per step).
STOP_EMPTY, STOP_BUDGET, STOP_MAX_SEQS, STOP_HOL, STOP_KV_FULL, STOP_KV, STOP_PREEMPTED = range(7)
STOP_STATIC_BATCH = 7  # static batching: a batch is running, nobody joins it


def token_at(spec: RequestSpec, j: int, eos: int, filler: int) -> int:
    """The token id the model emits as output number ``j`` (0-based) of ``spec``."""
    if spec.eos_position is not None and j + 1 == spec.eos_position:
        return eos
    if j < len(spec.output_token_ids):
        return spec.output_token_ids[j]
    return filler


def filler_token(spec: RequestSpec, eos: int) -> int:
    """The default emitted token: the smallest id that is neither EOS nor a stop id."""
    banned = {eos, *spec.stop_token_ids}
    t = 0
    while t in banned:
        t += 1
    return t


def check_stop(
    token: int, num_tokens: int, num_output: int, spec: RequestSpec, eos: int, max_model_len: int
) -> str | None:
    """``check_stop`` (vllm/v1/core/sched/utils.py) after one appended token: EOS, then a stop
    token id, then the length cap (``num_tokens >= max_model_len`` or
    ``num_output_tokens >= max_tokens``). Returns the finish reason or None."""
    if token == eos and not spec.ignore_eos:
        return "stop"
    if token in spec.stop_token_ids:
        return "stop"
    if num_tokens >= max_model_len or num_output >= spec.max_tokens:
        return "length"
    return None


def finish_point(spec: RequestSpec, eos: int, max_model_len: int) -> tuple[int, str]:
    """The output count at which ``check_stop`` first stops ``spec``, and why.

    Outputs are deterministic, so this is known up front: only explicit ``output_token_ids``
    and ``eos_position`` can be stop tokens (the filler never is), so the scan is short."""
    len_at = min(spec.max_tokens, max_model_len - spec.prompt_tokens)
    filler = filler_token(spec, eos)
    candidates = list(range(1, min(len(spec.output_token_ids), len_at) + 1))
    if spec.eos_position is not None and spec.eos_position <= len_at:
        candidates.append(spec.eos_position)
    for j in sorted(set(candidates)):
        tok = token_at(spec, j - 1, eos, filler)
        reason = check_stop(tok, spec.prompt_tokens + j, j, spec, eos, max_model_len)
        if reason is not None:
            return j, reason
    return len_at, "length"


class Req:
    """A request's live state (vLLM's ``Request`` fields that the scheduler reads)."""

    __slots__ = (
        "idx",
        "rid",
        "spec",
        "prompt_len",
        "num_tokens",
        "computed",
        "num_output",
        "blocks",
        "cap",
        "num_cached",
        "status",
        "pkey",
        "tokens",
        "hashes",
        "finish_out",
        "finish_reason",
        "filler",
        "preemptions",
        "t_arrival",
        "t_first_sched",
        "t_first_token",
        "t_last_token",
        "t_finish",
        "max_itl",
        "step_arrival",
        "step_finish",
        "hit_tokens",
    )

    def __init__(self, idx: int, spec: RequestSpec, eos: int, max_model_len: int) -> None:
        self.idx = idx
        self.rid = spec.id
        self.spec = spec
        self.prompt_len = spec.prompt_tokens
        self.num_tokens = spec.prompt_tokens
        self.computed = 0
        self.num_output = 0
        self.blocks: list[int] = []
        self.cap = 0  # len(blocks) * block_size: token slots held
        self.num_cached = 0
        self.status = WAITING
        self.pkey: tuple[int, float] = (spec.priority, 0.0)
        self.tokens: list[int] | None = (
            list(spec.prompt_token_ids) if spec.prompt_token_ids is not None else None
        )
        self.hashes: list[int] = []
        self.finish_out, self.finish_reason = finish_point(spec, eos, max_model_len)
        self.filler = filler_token(spec, eos)
        self.preemptions = 0
        self.t_arrival = 0.0
        self.t_first_sched = -1.0
        self.t_first_token = -1.0
        self.t_last_token = -1.0
        self.t_finish = -1.0
        self.max_itl = 0.0
        self.step_arrival = -1
        self.step_finish = -1
        self.hit_tokens = 0  # prefix-cache hit tokens over all admissions


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


class Scheduler:
    """vLLM's ``Scheduler`` + ``KVCacheManager`` + ``BlockPool`` for one KV-cache group of full
    attention, synchronous, no spec decode, no connector."""

    def __init__(self, params: SchedulerParams) -> None:
        cfg = params.config
        self.params = params
        self.cfg = cfg
        self.bs = cfg.block_size
        self.nblocks = cfg.num_gpu_blocks
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

        # --- BlockPool ---------------------------------------------------------------------
        n = cfg.num_gpu_blocks
        self.HEAD = n
        self.TAIL = n + 1
        self.nxt = [i + 1 for i in range(n)] + [0, -1]
        self.prv = [i - 1 for i in range(n)] + [-1, n - 1]
        self.prv[0] = n
        self.nxt[n - 1] = n + 1
        self.nxt[n] = 0
        self.ref = [0] * n
        self.bhash: list[object | None] = [None] * n
        self.hashed = [0] * n  # 1 when the block is in the prefix cache (for snapshots)
        self.h2b: dict[object, int] = {}
        self.dups: dict[object, list[int]] = {}
        self.intern: dict[tuple[int, tuple[int, ...]], int] = {}
        self.nfree = n
        # Per block: the request that allocated it (or revived it as a prefix hit); -1 when free.
        self.owner = [-1] * n
        self._popleft(1, -1)  # the null block (BlockPool.__init__); never freed, ref not kept
        self.ref[0] = 0

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
        self.preempt_events: list[PreemptEvent] = []
        self.admissions: list[Admission] = []
        self.finished_now: list[Req] = []
        self.wait_stop: tuple[int, Req | None, int, int] = (STOP_EMPTY, None, 0, 0)
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

    # --- block pool ------------------------------------------------------------------------

    def _popleft(self, k: int, owner_idx: int) -> list[int]:
        """``FreeKVCacheBlockQueue.popleft_n`` + ``get_new_blocks``: take ``k`` blocks from the
        head, evicting any that still carry a hash, each with ref_cnt 1."""
        nxt = self.nxt
        out: list[int] = []
        b = nxt[self.HEAD]
        ref = self.ref
        bhash = self.bhash
        h2b = self.h2b
        dups = self.dups
        hashed = self.hashed
        owner = self.owner
        for _ in range(k):
            out.append(b)
            owner[b] = owner_idx
            key = bhash[b]
            if key is not None:
                if dups or h2b.get(key) != b:
                    self._evict(b)
                else:
                    del h2b[key]
                    bhash[b] = None
                    hashed[b] = 0
            ref[b] = 1
            b = nxt[b]
        nxt[self.HEAD] = b
        self.prv[b] = self.HEAD
        self.nfree -= k
        return out

    def _evict(self, b: int) -> None:
        """``_maybe_evict_cached_block``: drop block ``b``'s hash from the prefix cache."""
        key = self.bhash[b]
        h2b = self.h2b
        if h2b.get(key) == b:
            extra = self.dups.get(key)
            if extra:
                h2b[key] = extra.pop(0)
                if not extra:
                    del self.dups[key]
            else:
                del h2b[key]
        else:
            extra = self.dups[key]
            extra.remove(b)
            if not extra:
                del self.dups[key]
        self.bhash[b] = None
        self.hashed[b] = 0

    def _touch(self, blocks: list[int], owner_idx: int) -> None:
        """``BlockPool.touch``: a prefix hit takes its blocks out of the free queue."""
        ref = self.ref
        nxt = self.nxt
        prv = self.prv
        for b in blocks:
            if ref[b] == 0:
                self.owner[b] = owner_idx
                p = prv[b]
                q = nxt[b]
                nxt[p] = q
                prv[q] = p
                self.nfree -= 1
            ref[b] += 1

    def _free_blocks(self, blocks: list[int]) -> None:
        """``KVCacheManager.free`` → ``BlockPool.free_blocks(reversed(blocks))``: ref_cnt - 1;
        those reaching 0 go back to the queue, unhashed to the front (LIFO), hashed to the back
        (LRU), tail block first."""
        ref = self.ref
        bhash = self.bhash
        owner = self.owner
        first: list[int] = []
        last: list[int] = []
        for b in reversed(blocks):
            c = ref[b] - 1
            ref[b] = c
            if c == 0:
                owner[b] = -1
                if bhash[b] is None:
                    first.append(b)
                else:
                    last.append(b)
        nxt = self.nxt
        prv = self.prv
        if first:
            head = self.HEAD
            old = nxt[head]
            p = head
            for b in first:
                prv[b] = p
                nxt[p] = b
                p = b
            nxt[p] = old
            prv[old] = p
        if last:
            tail = self.TAIL
            p = prv[tail]
            for b in last:
                prv[b] = p
                nxt[p] = b
                p = b
            nxt[p] = tail
            prv[tail] = p
        self.nfree += len(first) + len(last)

    def free_queue(self, limit: int) -> list[int]:
        """The first ``limit`` block ids of the free queue, next to be reused first."""
        out: list[int] = []
        nxt = self.nxt
        b = nxt[self.HEAD]
        tail = self.TAIL
        while b != tail and len(out) < limit:
            out.append(b)
            b = nxt[b]
        return out

    def block_hash(self, r: Req, i: int) -> object:
        """The chained hash of block ``i`` of ``r`` (``hash_block_tokens``), as an interned
        int; length-only prompts are unique to their request: ``(index, block)``."""
        tokens = r.tokens
        if tokens is None:
            return (r.idx, i)
        hashes = r.hashes
        bs = self.bs
        intern = self.intern
        while len(hashes) <= i:
            j = len(hashes)
            key = (hashes[j - 1] if j else -1, tuple(tokens[j * bs : (j + 1) * bs]))
            h = intern.get(key)
            if h is None:
                h = len(intern)
                intern[key] = h
            hashes.append(h)
        return hashes[i]

    def _cache_blocks(self, r: Req, num_full: int) -> None:
        """``BlockPool.cache_full_blocks``: newly full blocks enter the prefix cache at
        allocation time, so a request admitted later in the same step can hit them."""
        h2b = self.h2b
        bhash = self.bhash
        hashed = self.hashed
        blocks = r.blocks
        unique = r.tokens is None
        idx = r.idx
        for i in range(r.num_cached, num_full):
            b = blocks[i]
            key = (idx, i) if unique else self.block_hash(r, i)
            if bhash[b] == key:
                continue
            bhash[b] = key
            hashed[b] = 1
            if key in h2b:
                self.dups.setdefault(key, []).append(b)
            else:
                h2b[key] = b
        r.num_cached = num_full

    def lookup(self, r: Req) -> list[int]:
        """``get_computed_blocks`` → ``find_longest_cache_hit``: the cached blocks of ``r``'s
        prefix, whole blocks only, at most ``num_tokens - 1`` tokens (the last token is always
        recomputed, so a fully cached block-aligned prompt recomputes its last block)."""
        hits: list[int] = []
        h2b = self.h2b
        for i in range((r.num_tokens - 1) // self.bs):
            b = h2b.get(self.block_hash(r, i))
            if b is None:
                break
            hits.append(b)
        return hits

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

    def schedule(self) -> None:
        """``Scheduler.schedule`` (plus ``_update_after_schedule``: computed tokens advance as
        soon as a request is scheduled)."""
        if self.static:
            self._schedule_static()
            return
        running = self.running
        sched: dict[Req, int] = {}
        self.sched = sched
        self.preempt_events = []
        self.admissions = []
        budget = self.budget_max
        mml = self.mml
        bs = self.bs
        caching = self.caching
        nwait = self.num_waiting()
        thr = self.thr_cfg if len(running) + nwait > 1 else 0
        prefill = 0
        decode = 0
        ctx = 0
        priority = self.priority

        # 1a. RUNNING, in list order. Iterating over a copy visits the requests in the order
        # vLLM's index walk does; a request preempted earlier in this loop is skipped.
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
                budget -= 1
                r.computed = comp
                decode += 1
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
            nb = (need + bs - 1) // bs - len(r.blocks)
            if nb > 0:
                scheduled_self = True
                while nb > self.nfree:
                    free_before = self.nfree
                    given = 0
                    if priority:
                        victim = max(running, key=_pkey)
                        del running[running.index(victim)]
                        if victim in sched:
                            given = sched.pop(victim)
                            budget += given
                            vcomp = victim.computed - given
                            if given == 1 and vcomp >= victim.prompt_len:
                                decode -= 1
                            else:
                                prefill -= given
                            ctx -= victim.computed
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
                        scheduled_self = False
                        break
                if not scheduled_self:
                    if priority:
                        continue  # r removed itself; later (higher-priority) ones may fit
                    break
                r.blocks.extend(self._popleft(nb, r.idx))
                r.cap = len(r.blocks) * bs
            if caching:
                nt = r.num_tokens
                nf = (need if need < nt else nt) // bs
                if nf > r.num_cached:
                    self._cache_blocks(r, nf)
            sched[r] = n
            budget -= n
            r.computed = comp + n
            if n == 1 and comp >= r.prompt_len:
                decode += 1
            else:
                prefill += n
            ctx += comp + n

        # 1b. WAITING, only if nothing was preempted.
        stop: tuple[int, Req | None, int, int] = (STOP_EMPTY, None, 0, 0)
        if self.preempt_events:
            stop = (STOP_PREEMPTED, None, 0, 0)
        else:
            fcfs = self.fcfs
            heap = self.heap
            ref = self.ref
            while True:
                if budget <= 0:
                    stop = (STOP_BUDGET, None, 0, 0)
                    break
                if not (heap if priority else fcfs):
                    break
                r = heap[0][4] if priority else fcfs[0]
                if len(running) >= self.max_seqs:
                    stop = (STOP_MAX_SEQS, r, len(running), self.max_seqs)
                    break
                hits = self.lookup(r) if caching else []
                nh = len(hits)
                hit_tok = nh * bs
                nt = r.num_tokens
                n = nt - hit_tok
                if 0 < thr < n:
                    n = thr
                if not self.chunked and n > budget:
                    stop = (STOP_HOL, r, n, budget)
                    break
                if n > budget:
                    n = budget
                wm = self.wm_blocks if running else 0
                evictable = 0
                for b in hits:
                    if ref[b] == 0:
                        evictable += 1
                if self.reserve_full:
                    full = nt if nt < mml else mml
                    need_full = max((full + bs - 1) // bs - nh, 0) + evictable
                    if need_full + wm > self.nfree:
                        stop = (STOP_KV_FULL, r, need_full + wm, self.nfree)
                        break
                need = hit_tok + n
                if need > mml:
                    need = mml
                new_blocks = max((need + bs - 1) // bs - nh, 0)
                if new_blocks + evictable + wm > self.nfree:
                    stop = (STOP_KV, r, new_blocks + evictable + wm, self.nfree)
                    break
                self._touch(hits, r.idx)
                r.blocks = hits
                r.num_cached = nh
                if new_blocks:
                    hits.extend(self._popleft(new_blocks, r.idx))
                r.cap = len(hits) * bs
                if caching:
                    nf = (need if need < nt else nt) // bs
                    if nf > nh:
                        self._cache_blocks(r, nf)
                    self.total_hit_tokens += hit_tok
                    self.total_query_tokens += nt
                if priority:
                    heapq.heappop(heap)
                else:
                    fcfs.popleft()
                resumed = r.status == PREEMPTED
                running.append(r)
                r.status = RUNNING
                r.computed = hit_tok + n
                r.hit_tokens += hit_tok
                if r.t_first_sched < 0:
                    r.t_first_sched = self.clock
                sched[r] = n
                budget -= n
                prefill += n
                ctx += hit_tok + n
                self.admissions.append(
                    Admission(
                        req=r, hit_tokens=hit_tok, tokens=n, resumed=resumed, new_blocks=new_blocks
                    )
                )
        self.wait_stop = stop
        self.prefill_tokens = prefill
        self.decode_tokens = decode
        self.padding_tokens = 0
        self.ctx_tokens = ctx
        self.budget_left = budget

    def _schedule_static(self) -> None:
        """Static batching (not vLLM; for comparison): a batch of up to ``max_num_seqs``
        requests is formed only when the previous batch has completely finished; each reserves
        blocks for its whole prompt + ``max_tokens`` up front; the batch then runs (prefill
        within the token budget, then decodes) and nobody joins until all are done. Finished
        members still occupy their batch row (padding) while others decode."""
        running = self.running
        sched: dict[Req, int] = {}
        self.sched = sched
        self.preempt_events = []
        self.admissions = []
        bs = self.bs
        mml = self.mml
        stop: tuple[int, Req | None, int, int] = (STOP_STATIC_BATCH, None, 0, 0)
        if not running:
            self.batch_size = 0
            stop = (STOP_EMPTY, None, 0, 0)
            while self.num_waiting():
                r = self.heap[0][4] if self.priority else self.fcfs[0]
                if len(running) >= self.max_seqs:
                    stop = (STOP_MAX_SEQS, r, len(running), self.max_seqs)
                    break
                total = min(r.num_tokens + r.spec.max_tokens, mml)
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
        budget = self.budget_max
        prefill = 0
        decode = 0
        ctx = 0
        for r in running:
            if budget <= 0:
                break
            comp = r.computed
            n = min(r.num_tokens - comp, budget, mml - comp - 1)
            if n <= 0:
                continue
            sched[r] = n
            budget -= n
            r.computed = comp + n
            if n == 1 and comp >= r.prompt_len:
                decode += 1
            else:
                prefill += n
            ctx += comp + n
        self.wait_stop = stop
        self.prefill_tokens = prefill
        self.decode_tokens = decode
        self.padding_tokens = (self.batch_size - len(running)) if decode else 0
        self.ctx_tokens = ctx
        self.budget_left = budget

    # --- update_from_output() --------------------------------------------------------------

    def update_from_output(self, t_end: float) -> None:
        """``Scheduler.update_from_output``: every scheduled request that has caught up with
        its tokens samples one; ``check_stop`` (precomputed: see :func:`finish_point`) may
        finish it, which frees its blocks at once."""
        self.t_end = t_end
        finished: list[Req] = []
        sched = self.sched
        eos = self.cfg.eos_token_id
        for r, c in zip(sched, map(_computed, sched), strict=True):
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


def _pkey(r: Req) -> tuple[int, float]:
    return r.pkey


_computed = operator.attrgetter("computed")


def step_seconds(lat: LatencyParams) -> Callable[[int, int, int], float]:
    """The latency model: seconds for a step with ``prefill`` and ``decode`` tokens scheduled
    and ``ctx`` tokens of KV cache read by attention."""
    if lat.mode == "linear":
        base = lat.base_ms / 1e3
        pf = lat.prefill_token_ms / 1e3
        dc = lat.decode_token_ms / 1e3

        def linear(prefill: int, decode: int, ctx: int) -> float:
            return base + pf * prefill + dc * decode

        return linear
    params = lat.model_params_billion * 1e9
    flops = lat.gpu_tflops * 1e12 * lat.mfu
    bw = lat.gpu_bandwidth_gbps * 1e9
    per_token = 2.0 * params / flops
    weights = params * lat.bytes_per_param / bw
    per_ctx = lat.kv_bytes_per_token / bw
    over = lat.step_overhead_ms / 1e3

    def roofline(prefill: int, decode: int, ctx: int) -> float:
        compute = per_token * (prefill + decode)
        memory = weights + per_ctx * ctx
        return over + (compute if compute > memory else memory)

    return roofline
