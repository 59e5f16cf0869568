"""The scenario editor: vLLM's config names as a group, the latency model as a group, the
workload as rows of requests. Every parameter ``parse`` takes has a field: booleans are
checkboxes (a box left at vLLM's default sends nothing), token-id lists are runs of ids
(``1000-1099, 7``), so every preset opens as a form; JSON stays an advanced option."""

from __future__ import annotations

from app.sim.core import Message, msg
from app.sim.serving.params import (
    LATENCY_RANGES,
    MAX_ARRIVAL_STEP,
    MAX_ARRIVAL_TIME_S,
    MAX_BLOCK_SIZE,
    MAX_BUDGET,
    MAX_GPU_BLOCKS,
    MAX_KV_BYTES_PER_TOKEN,
    MAX_MODEL_LEN,
    MAX_PRIORITY,
    MAX_REQUESTS,
    MAX_TOKEN_ID,
    MAX_TOKENS_PER_REQUEST,
    SchedulerConfig,
)
from app.web.editor import EditorSpec, FieldSpec, Group, Rows, number, whole

MAX_FORM_ROWS = 200
_D = SchedulerConfig()
_TOKENS = msg("tokens")

CONFIG = Group(
    key="config",
    legend=msg("Scheduler config (vLLM names)"),
    fields=(
        whole(
            "max_num_batched_tokens",
            msg("max_num_batched_tokens"),
            1,
            MAX_BUDGET,
            unit=msg("tokens per step"),
        ),
        whole("max_num_seqs", msg("max_num_seqs"), 1, MAX_REQUESTS, unit=msg("running requests")),
        whole("block_size", msg("block_size"), 1, MAX_BLOCK_SIZE, unit=_TOKENS),
        whole(
            "num_gpu_blocks",
            msg("num_gpu_blocks"),
            2,
            MAX_GPU_BLOCKS,
            unit=msg("blocks, incl. the null block"),
        ),
        whole(
            "long_prefill_token_threshold",
            msg("long_prefill_token_threshold"),
            0,
            MAX_MODEL_LEN,
            unit=msg("tokens, 0 = off"),
        ),
        FieldSpec(
            key="policy",
            label=msg("policy"),
            kind="choice",
            choices=("fcfs", "priority"),
            labels={"priority": msg("priority")},
        ),
        number("watermark", msg("watermark"), 0, 0.999, unit=msg("fraction 0–1")),
        whole("max_model_len", msg("max_model_len"), 2, MAX_MODEL_LEN, unit=_TOKENS),
        whole("eos_token_id", msg("eos_token_id"), 0, MAX_TOKEN_ID),
        FieldSpec(
            key="batching",
            label=msg("batching"),
            kind="choice",
            choices=("continuous", "static"),
        ),
        FieldSpec(
            key="enable_chunked_prefill",
            label=msg("enable_chunked_prefill"),
            kind="bool",
            default=_D.enable_chunked_prefill,
        ),
        FieldSpec(
            key="enable_prefix_caching",
            label=msg("enable_prefix_caching"),
            kind="bool",
            default=_D.enable_prefix_caching,
        ),
        FieldSpec(
            key="scheduler_reserve_full_isl",
            label=msg("scheduler_reserve_full_isl"),
            kind="bool",
            default=_D.scheduler_reserve_full_isl,
        ),
    ),
)

_MS = msg("ms")


def _latency(key: str, label: Message, unit: Message | None = None) -> FieldSpec:
    """A latency-model number's input, its range the one ``parse`` checks."""
    lo, hi = LATENCY_RANGES[key]
    return number(key, label, lo, hi, unit=unit)


LATENCY = Group(
    key="latency",
    legend=msg("Latency model (leave empty for an 8B model on one H100)"),
    fields=(
        FieldSpec(
            key="mode",
            label=msg("mode"),
            kind="choice",
            choices=("roofline", "linear"),
        ),
        _latency("model_params_billion", msg("model_params_billion"), msg("billion")),
        _latency("bytes_per_param", msg("bytes_per_param")),
        _latency("gpu_tflops", msg("gpu_tflops"), msg("TFLOP/s")),
        _latency("gpu_bandwidth_gbps", msg("gpu_bandwidth_gbps"), msg("GB/s")),
        _latency("mfu", msg("mfu"), msg("fraction 0–1")),
        whole(
            "kv_bytes_per_token",
            msg("kv_bytes_per_token"),
            0,
            MAX_KV_BYTES_PER_TOKEN,
            unit=msg("bytes"),
        ),
        _latency("step_overhead_ms", msg("step_overhead_ms"), _MS),
        _latency("base_ms", msg("base_ms"), _MS),
        _latency("prefill_token_ms", msg("prefill_token_ms"), _MS),
        _latency("decode_token_ms", msg("decode_token_ms"), _MS),
    ),
)

REQUESTS = Rows(
    key="requests",
    legend=msg("Requests"),
    item=msg("request"),
    fields=(
        FieldSpec(key="id", label=msg("id"), kind="text"),
        whole("prompt_tokens", msg("prompt_tokens"), 1, MAX_MODEL_LEN),
        FieldSpec(
            key="prompt_token_ids",
            label=msg("prompt_token_ids"),
            kind="ids",
            unit=msg("instead of prompt_tokens; shared ids share cached blocks"),
        ),
        whole("max_tokens", msg("max_tokens"), 1, MAX_TOKENS_PER_REQUEST),
        whole("arrival_step", msg("arrival_step"), 0, MAX_ARRIVAL_STEP, unit=msg("optional")),
        number("arrival_time", msg("arrival_time"), 0, MAX_ARRIVAL_TIME_S, unit=msg("s, optional")),
        whole(
            "priority", msg("priority"), -MAX_PRIORITY, MAX_PRIORITY, unit=msg("lower runs first")
        ),
        FieldSpec(key="output_token_ids", label=msg("output_token_ids"), kind="ids"),
        FieldSpec(key="stop_token_ids", label=msg("stop_token_ids"), kind="ids"),
        whole("eos_position", msg("eos_position"), 1, MAX_TOKENS_PER_REQUEST, unit=msg("optional")),
        FieldSpec(key="ignore_eos", label=msg("ignore_eos"), kind="bool"),
    ),
    new_row={"id": "new", "prompt_tokens": 64, "max_tokens": 16},
    max_rows=MAX_FORM_ROWS,
    reorder=True,
)

EDITOR = EditorSpec(groups=(CONFIG, LATENCY), rows=(REQUESTS,))
