"""The scenario editor: vLLM's config names as a group, the workload as rows.

Booleans (``enable_chunked_prefill``, ``enable_prefix_caching``, ``scheduler_reserve_full_isl``)
are left to the JSON editor: ``parse`` takes only JSON ``true``/``false`` and the form posts
text. So the form is offered only when it can carry the scenario whole: config keys it has
fields for (booleans only at their defaults), requests with only the row fields below, and no
latency block. Anything else (``prompt_token_ids``, ``output_token_ids``, a custom latency
model) opens the JSON editor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.sim.core import msg
from app.sim.serving.params import SchedulerConfig
from app.web.editor import EditorSpec, FieldSpec, Group, Rows

MAX_FORM_ROWS = 200
_BOOL_DEFAULTS = {
    "enable_chunked_prefill": SchedulerConfig().enable_chunked_prefill,
    "enable_prefix_caching": SchedulerConfig().enable_prefix_caching,
    "scheduler_reserve_full_isl": SchedulerConfig().scheduler_reserve_full_isl,
}

CONFIG = Group(
    key="config",
    legend=msg("Scheduler config (vLLM names)"),
    fields=(
        FieldSpec(
            key="max_num_batched_tokens",
            label=msg("max_num_batched_tokens"),
            kind="int",
            unit="tokens per step",
        ),
        FieldSpec(
            key="max_num_seqs", label=msg("max_num_seqs"), kind="int", unit="running requests"
        ),
        FieldSpec(key="block_size", label=msg("block_size"), kind="int", unit="tokens"),
        FieldSpec(
            key="num_gpu_blocks",
            label=msg("num_gpu_blocks"),
            kind="int",
            unit="blocks, incl. the null block",
        ),
        FieldSpec(
            key="long_prefill_token_threshold",
            label=msg("long_prefill_token_threshold"),
            kind="int",
            unit="tokens, 0 = off",
        ),
        FieldSpec(key="policy", label=msg("policy"), kind="choice", choices=("fcfs", "priority")),
        FieldSpec(key="watermark", label=msg("watermark"), unit="fraction 0–1"),
        FieldSpec(key="max_model_len", label=msg("max_model_len"), kind="int", unit="tokens"),
        FieldSpec(key="eos_token_id", label=msg("eos_token_id"), kind="int"),
        FieldSpec(
            key="batching", label=msg("batching"), kind="choice", choices=("continuous", "static")
        ),
    ),
)

REQUESTS = Rows(
    key="requests",
    legend=msg("Requests"),
    item=msg("request"),
    fields=(
        FieldSpec(key="id", label=msg("id"), kind="text"),
        FieldSpec(key="prompt_tokens", label=msg("prompt_tokens"), kind="int"),
        FieldSpec(key="max_tokens", label=msg("max_tokens"), kind="int"),
        FieldSpec(key="arrival_step", label=msg("arrival_step"), kind="int", unit="optional"),
        FieldSpec(key="arrival_time", label=msg("arrival_time"), unit="s, optional"),
        FieldSpec(key="priority", label=msg("priority"), kind="int", unit="lower runs first"),
    ),
    new_row={"id": "new", "prompt_tokens": 64, "max_tokens": 16},
    max_rows=MAX_FORM_ROWS,
    reorder=True,
)


def _scalar(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float, str)) and not isinstance(v, bool))


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerEditorSpec(EditorSpec):
    def fits(self, raw: Any) -> bool:
        """True only when the form can carry ``raw`` without losing anything."""
        if not isinstance(raw, Mapping) or not set(raw) <= {"config", "requests"}:
            return False
        config = raw.get("config", {})
        requests = raw.get("requests", [])
        if not isinstance(config, Mapping) or not isinstance(requests, list):
            return False
        fields = {f.key: f for f in CONFIG.fields if isinstance(f, FieldSpec)}
        for key, value in config.items():
            if key in _BOOL_DEFAULTS:
                if value is not _BOOL_DEFAULTS[key]:
                    return False
            elif key not in fields or not _scalar(value):
                return False
            elif fields[key].kind == "choice" and value not in fields[key].choices:
                return False
        if len(requests) > MAX_FORM_ROWS:
            return False
        row_keys = {f.key for f in REQUESTS.fields}
        for item in requests:
            if not isinstance(item, Mapping) or not set(item) <= row_keys:
                return False
            if not all(_scalar(v) for v in item.values()):
                return False
        return True


EDITOR = SchedulerEditorSpec(groups=(CONFIG,), rows=(REQUESTS,))
