"""Every vLLM 0.33.0 function the scheduler explainer cites: one table, checked by a test.

Paths are relative to the vLLM repository root; ``line`` is the line of the ``def`` (or
``class``) in the v0.33.0 release (read from the PyPI wheel ``vllm-0.33.0``, commit
``g4ba787ec9``).
"""

from __future__ import annotations

from app.sim.core.sources import VLLM_0_33, SourceRef

_SCHED = "vllm/v1/core/sched/scheduler.py"
_KVM = "vllm/v1/core/kv_cache_manager.py"
_POOL = "vllm/v1/core/block_pool.py"
_UTILS = "vllm/v1/core/kv_cache_utils.py"
_SINGLE = "vllm/v1/core/single_type_kv_cache_manager.py"
_QUEUE = "vllm/v1/core/sched/request_queue.py"


_ref = VLLM_0_33.ref


SCHEDULE = _ref("Scheduler.schedule", _SCHED, 699)
PREEMPT = _ref("Scheduler._preempt_request", _SCHED, 1799)
UPDATE_AFTER_SCHEDULE = _ref("Scheduler._update_after_schedule", _SCHED, 1845)
UPDATE_FROM_OUTPUT = _ref("Scheduler.update_from_output", _SCHED, 2259)
ADD_REQUEST = _ref("Scheduler.add_request", _SCHED, 2931)
FREE_REQUEST = _ref("Scheduler._free_request", _SCHED, 3031)
GET_COMPUTED_BLOCKS = _ref("KVCacheManager.get_computed_blocks", _KVM, 266)
ALLOCATE_SLOTS = _ref("KVCacheManager.allocate_slots", _KVM, 380)
KV_FREE = _ref("KVCacheManager.free", _KVM, 629)
BLOCK_POOL_INIT = _ref("BlockPool.__init__", _POOL, 159)
CACHE_FULL_BLOCKS = _ref("BlockPool.cache_full_blocks", _POOL, 230)
GET_NEW_BLOCKS = _ref("BlockPool.get_new_blocks", _POOL, 706)
EVICT_CACHED_BLOCK = _ref("BlockPool._maybe_evict_cached_block", _POOL, 769)
TOUCH = _ref("BlockPool.touch", _POOL, 792)
FREE_BLOCKS = _ref("BlockPool.free_blocks", _POOL, 816)
GET_USAGE = _ref("BlockPool.get_usage", _POOL, 921)
FREE_QUEUE = _ref("FreeKVCacheBlockQueue", _UTILS, 258)
HASH_BLOCK_TOKENS = _ref("hash_block_tokens", _UTILS, 707)
GET_NUM_BLOCKS_TO_ALLOCATE = _ref(
    "SingleTypeKVCacheManager.get_num_blocks_to_allocate", _SINGLE, 176
)
FIND_LONGEST_CACHE_HIT = _ref("FullAttentionManager.find_longest_cache_hit", _SINGLE, 743)
CHECK_STOP = _ref("check_stop", "vllm/v1/core/sched/utils.py", 98)
FCFS_PREPEND = _ref("FCFSRequestQueue.prepend_request", _QUEUE, 92)
PRIORITY_ADD = _ref("PriorityRequestQueue.add_request", _QUEUE, 143)
REQUEST_LT = _ref("Request.__lt__", "vllm/v1/request.py", 357)

ALL: tuple[SourceRef, ...] = (
    SCHEDULE,
    PREEMPT,
    UPDATE_AFTER_SCHEDULE,
    UPDATE_FROM_OUTPUT,
    ADD_REQUEST,
    FREE_REQUEST,
    GET_COMPUTED_BLOCKS,
    ALLOCATE_SLOTS,
    KV_FREE,
    BLOCK_POOL_INIT,
    CACHE_FULL_BLOCKS,
    GET_NEW_BLOCKS,
    EVICT_CACHED_BLOCK,
    TOUCH,
    FREE_BLOCKS,
    GET_USAGE,
    FREE_QUEUE,
    HASH_BLOCK_TOKENS,
    GET_NUM_BLOCKS_TO_ALLOCATE,
    FIND_LONGEST_CACHE_HIT,
    CHECK_STOP,
    FCFS_PREPEND,
    PRIORITY_ADD,
    REQUEST_LT,
)
