"""The KV-cache block pool and the prefix cache (vllm/v1/core/block_pool.py,
vllm/v1/core/kv_cache_utils.py, and ``KVCacheManager.get_computed_blocks`` of
vllm/v1/core/kv_cache_manager.py), for one KV-cache group of full attention.

Block 0 is the null block. The free queue (``FreeKVCacheBlockQueue``, a doubly linked list) is
kept as two int arrays, ``nxt`` and ``prv``, with two sentinels; a freed request's blocks go back
tail-first, unhashed ones to the *front* (LIFO reuse) and hashed ones to the *back* (LRU
eviction); a cached block is evicted when it is popped for reuse. Block hashes are chained over
full blocks of prompt *and* generated tokens (``hash_block_tokens``): a chain is interned as a
small int, so identical prefixes get the same key and different ones never collide. A prompt
given only as a length has content unique to its request; its keys are ``(request index, block
index)``.

:class:`~app.sim.serving.engine.Scheduler` inherits this class rather than holding one, so its
hot loop reads the pool's arrays as its own attributes (one lookup fewer per request and step).
"""

from __future__ import annotations

from app.sim.serving.request import Req


class BlockPool:
    """``BlockPool`` with its ``FreeKVCacheBlockQueue`` and the prefix-cache hash map."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        n = num_blocks
        self.bs = block_size
        self.nblocks = n
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
        # The blocks in use or still hashed: every other block is free and unhashed. Kept as
        # blocks change so a snapshot costs what is in use, not the pool's size.
        self.live: set[int] = set()
        self._popleft(1, -1)  # the null block (BlockPool.__init__); never freed, ref not kept
        self.ref[0] = 0
        self.live.discard(0)

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
        self.live.update(out)
        self.prv[b] = self.HEAD
        self.nfree -= k
        return out

    def _pop1(self, owner_idx: int) -> int:
        """:meth:`_popleft` of one block (a decode crossing into a new block: most calls)."""
        nxt = self.nxt
        b = nxt[self.HEAD]
        self.owner[b] = owner_idx
        key = self.bhash[b]
        if key is not None:
            if self.dups or self.h2b.get(key) != b:
                self._evict(b)
            else:
                del self.h2b[key]
                self.bhash[b] = None
                self.hashed[b] = 0
        self.ref[b] = 1
        after = nxt[b]
        nxt[self.HEAD] = after
        self.live.add(b)
        self.prv[after] = self.HEAD
        self.nfree -= 1
        return b

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
        if first:
            self.live.difference_update(first)
            self._insert_after(self.HEAD, first)
        if last:
            self._insert_after(self.prv[self.TAIL], last)
        self.nfree += len(first) + len(last)

    def _insert_after(self, p: int, blocks: list[int]) -> None:
        """Link ``blocks``, in order, into the free queue right after node ``p``."""
        nxt = self.nxt
        prv = self.prv
        q = nxt[p]
        for b in blocks:
            prv[b] = p
            nxt[p] = b
            p = b
        nxt[p] = q
        prv[q] = p

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
