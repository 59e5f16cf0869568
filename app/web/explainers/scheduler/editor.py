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
from app.web.editor import EditorSpec, FieldSpec, Group, Rows

MAX_FORM_ROWS = 200
_D = SchedulerConfig()
_TOKENS = msg("tokens")

CONFIG = Group(
    key="config",
    legend=msg("Scheduler config (vLLM names)"),
    fields=(
        FieldSpec(
            key="max_num_batched_tokens",
            label=msg("max_num_batched_tokens"),
            kind="int",
            unit=msg("tokens per step"),
            min=1,
            max=MAX_BUDGET,
        ),
        FieldSpec(
            key="max_num_seqs",
            label=msg("max_num_seqs"),
            kind="int",
            unit=msg("running requests"),
            min=1,
            max=MAX_REQUESTS,
        ),
        FieldSpec(
            key="block_size",
            label=msg("block_size"),
            kind="int",
            unit=_TOKENS,
            min=1,
            max=MAX_BLOCK_SIZE,
        ),
        FieldSpec(
            key="num_gpu_blocks",
            label=msg("num_gpu_blocks"),
            kind="int",
            unit=msg("blocks, incl. the null block"),
            min=2,
            max=MAX_GPU_BLOCKS,
        ),
        FieldSpec(
            key="long_prefill_token_threshold",
            label=msg("long_prefill_token_threshold"),
            kind="int",
            unit=msg("tokens, 0 = off"),
            min=0,
            max=MAX_MODEL_LEN,
        ),
        FieldSpec(
            key="policy",
            label=msg("policy"),
            kind="choice",
            choices=("fcfs", "priority"),
            labels={"priority": msg("priority")},
        ),
        FieldSpec(
            key="watermark", label=msg("watermark"), unit=msg("fraction 0–1"), min=0, max=0.999
        ),
        FieldSpec(
            key="max_model_len",
            label=msg("max_model_len"),
            kind="int",
            unit=_TOKENS,
            min=2,
            max=MAX_MODEL_LEN,
        ),
        FieldSpec(
            key="eos_token_id", label=msg("eos_token_id"), kind="int", min=0, max=MAX_TOKEN_ID
        ),
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
    return FieldSpec(key=key, label=label, unit=unit, min=lo, max=hi)


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
        FieldSpec(
            key="kv_bytes_per_token",
            label=msg("kv_bytes_per_token"),
            kind="int",
            unit=msg("bytes"),
            min=0,
            max=MAX_KV_BYTES_PER_TOKEN,
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
        FieldSpec(
            key="prompt_tokens", label=msg("prompt_tokens"), kind="int", min=1, max=MAX_MODEL_LEN
        ),
        FieldSpec(
            key="prompt_token_ids",
            label=msg("prompt_token_ids"),
            kind="ids",
            unit=msg("instead of prompt_tokens; shared ids share cached blocks"),
        ),
        FieldSpec(
            key="max_tokens",
            label=msg("max_tokens"),
            kind="int",
            min=1,
            max=MAX_TOKENS_PER_REQUEST,
        ),
        FieldSpec(
            key="arrival_step",
            label=msg("arrival_step"),
            kind="int",
            unit=msg("optional"),
            min=0,
            max=MAX_ARRIVAL_STEP,
        ),
        FieldSpec(
            key="arrival_time",
            label=msg("arrival_time"),
            unit=msg("s, optional"),
            min=0,
            max=MAX_ARRIVAL_TIME_S,
        ),
        FieldSpec(
            key="priority",
            label=msg("priority"),
            kind="int",
            unit=msg("lower runs first"),
            min=-MAX_PRIORITY,
            max=MAX_PRIORITY,
        ),
        FieldSpec(key="output_token_ids", label=msg("output_token_ids"), kind="ids"),
        FieldSpec(key="stop_token_ids", label=msg("stop_token_ids"), kind="ids"),
        FieldSpec(
            key="eos_position",
            label=msg("eos_position"),
            kind="int",
            unit=msg("optional"),
            min=1,
            max=MAX_TOKENS_PER_REQUEST,
        ),
        FieldSpec(key="ignore_eos", label=msg("ignore_eos"), kind="bool"),
    ),
    new_row={"id": "new", "prompt_tokens": 64, "max_tokens": 16},
    max_rows=MAX_FORM_ROWS,
    reorder=True,
)

EDITOR = EditorSpec(groups=(CONFIG, LATENCY), rows=(REQUESTS,))
