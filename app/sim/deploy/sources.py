"""Every vLLM 0.33.0 line the deployment explainer cites: one table, checked by a test.

Paths are relative to the vLLM repository root; ``line`` is the line of the ``def`` (or
``class``) in the v0.33.0 release, read from the PyPI sdist ``vllm-0.33.0.tar.gz`` (commit
``g4ba787ec9``, the same release the scheduler explainer cites). ``tests/sim/deploy`` checks
each line holds that definition when the sdist is at hand.
"""

from __future__ import annotations

from app.sim.core.sources import VLLM_0_33, SourceRef

_IFACE = "vllm/v1/kv_cache_interface.py"
_PLAN = "vllm/v1/core/kv_cache_planning.py"
_UTILS = "vllm/v1/core/kv_cache_utils.py"


def _ref(function: str, path: str, line: int) -> SourceRef:
    return SourceRef(function=function, path=path, line=line, project=VLLM_0_33)


CACHE_CONFIG = _ref("CacheConfig", "vllm/config/cache.py", 182)
BATCH_DEFAULTS = _ref("EngineArgs.get_batch_defaults", "vllm/engine/arg_utils.py", 2940)
VERIFY_PARALLEL = _ref("ModelConfig.verify_with_parallel_config", "vllm/config/model.py", 1545)
LLAMA_ATTENTION = _ref("LlamaAttention", "vllm/model_executor/models/llama.py", 125)
PP_INDICES = _ref("get_pp_indices", "vllm/distributed/utils.py", 198)
DETERMINE_MEMORY = _ref("Worker.determine_available_memory", "vllm/v1/worker/gpu_worker.py", 641)
REQUEST_MEMORY = _ref("request_memory", "vllm/v1/worker/utils.py", 716)
ATTN_SPEC = _ref(
    "Attention.get_kv_cache_spec", "vllm/model_executor/layers/attention/attention.py", 611
)
MLA_SPEC = _ref(
    "MLAAttention.get_kv_cache_spec",
    "vllm/model_executor/layers/attention/mla_attention.py",
    1371,
)
PAGE_SIZE = _ref("AttentionSpec.page_size_bytes", _IFACE, 597)
FULL_MAX_MEMORY = _ref("FullAttentionSpec.max_memory_usage_bytes", _IFACE, 643)
SW_ADMISSION = _ref("SlidingWindowSpec.max_admission_blocks_per_request", _IFACE, 918)
IN_FLIGHT = _ref("VllmConfig.max_in_flight_tokens", "vllm/config/vllm.py", 601)
GROUPS_HYBRID = _ref("_get_kv_cache_groups_uniform_page_size", _PLAN, 416)
BYTES_PER_BLOCK = _ref("_get_kv_cache_bytes_per_block", _PLAN, 574)
CONFIG_FROM_GROUPS = _ref("get_kv_cache_config_from_groups", _PLAN, 642)
CONFIGS = _ref("get_kv_cache_configs", _PLAN, 1461)
CHECK_ENOUGH = _ref("_check_enough_kv_cache_memory", _PLAN, 50)
MAX_CONCURRENCY = _ref("get_max_concurrency_for_kv_cache_config", _UTILS, 1061)

ALL: tuple[SourceRef, ...] = (
    CACHE_CONFIG,
    BATCH_DEFAULTS,
    VERIFY_PARALLEL,
    LLAMA_ATTENTION,
    PP_INDICES,
    DETERMINE_MEMORY,
    REQUEST_MEMORY,
    ATTN_SPEC,
    MLA_SPEC,
    PAGE_SIZE,
    FULL_MAX_MEMORY,
    SW_ADMISSION,
    IN_FLIGHT,
    GROUPS_HYBRID,
    BYTES_PER_BLOCK,
    CONFIG_FROM_GROUPS,
    CONFIGS,
    CHECK_ENOUGH,
    MAX_CONCURRENCY,
)
