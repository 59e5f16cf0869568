"""The scheduler explainer's presets: small workloads, each showing one rule (lesson
``content/scheduler-<slug>.md``)."""

from __future__ import annotations

from typing import Any

from app.sim.core.explainer import Preset
from app.sim.core.i18n import msg


def _batching_workload(batching: str) -> dict[str, Any]:
    outputs = (8, 64, 16, 48, 8, 32, 56, 12)
    prompts = (96, 64, 128, 32, 80, 48, 112, 64)
    return {
        "config": {
            "max_num_batched_tokens": 512,
            "max_num_seqs": 4,
            "num_gpu_blocks": 128,
            "max_model_len": 512,
            "batching": batching,
        },
        "requests": [
            {"id": chr(ord("A") + i), "prompt_tokens": p, "max_tokens": o}
            for i, (p, o) in enumerate(zip(prompts, outputs, strict=True))
        ],
    }


def _chunked() -> dict[str, Any]:
    return {
        "config": {
            "max_num_batched_tokens": 512,
            "max_num_seqs": 8,
            "num_gpu_blocks": 256,
            "max_model_len": 2048,
        },
        "requests": [
            {"id": "A", "prompt_tokens": 40, "max_tokens": 40},
            {"id": "B", "prompt_tokens": 56, "max_tokens": 40},
            {"id": "C", "prompt_tokens": 24, "max_tokens": 40},
            {"id": "LONG", "prompt_tokens": 1800, "max_tokens": 8, "arrival_step": 2},
            {"id": "D", "prompt_tokens": 32, "max_tokens": 8, "arrival_step": 3},
        ],
    }


SYSTEM_PROMPT = list(range(1000, 2024))  # 1024 tokens = 64 blocks of 16


def _prefix() -> dict[str, Any]:
    def user(i: int, n: int) -> list[int]:
        return [3000 + 100 * i + j for j in range(n)]

    return {
        "config": {
            "max_num_batched_tokens": 2048,
            "max_num_seqs": 8,
            "num_gpu_blocks": 256,
        },
        "requests": [
            {"id": "A", "prompt_token_ids": SYSTEM_PROMPT + user(0, 20), "max_tokens": 6},
            {
                "id": "B",
                "prompt_token_ids": SYSTEM_PROMPT + user(1, 36),
                "max_tokens": 6,
                "arrival_step": 3,
            },
            {
                "id": "C",
                "prompt_token_ids": SYSTEM_PROMPT + user(2, 9),
                "max_tokens": 6,
                "arrival_step": 6,
            },
            {"id": "D", "prompt_token_ids": SYSTEM_PROMPT, "max_tokens": 6, "arrival_step": 9},
            {
                "id": "E",
                "prompt_token_ids": list(range(5000, 6044)),
                "max_tokens": 6,
                "arrival_step": 12,
            },
        ],
    }


def _pressure(policy: str) -> dict[str, Any]:
    prio = {"A": 2, "B": 0, "C": 1}
    return {
        "config": {
            "max_num_batched_tokens": 256,
            "max_num_seqs": 4,
            "num_gpu_blocks": 17,
            "max_model_len": 256,
            "policy": policy,
        },
        "requests": [
            {
                "id": rid,
                "prompt_tokens": 48,
                "max_tokens": 64,
                "priority": prio[rid] if policy == "priority" else 0,
                "arrival_step": i,
            }
            for i, rid in enumerate("ABC")
        ],
    }


def _priority() -> dict[str, Any]:
    reqs: list[dict[str, Any]] = [
        {"id": f"L{i}", "prompt_tokens": 64, "max_tokens": 12, "priority": 5, "arrival_time": i}
        for i in range(1, 5)
    ]
    reqs += [
        {
            "id": f"H{i}",
            "prompt_tokens": 64,
            "max_tokens": 12,
            "priority": 0,
            "arrival_step": 2,
            "arrival_time": 10 + i,
        }
        for i in range(1, 3)
    ]
    for r in reqs[:4]:
        r["arrival_step"] = 0
    return {
        "config": {
            "max_num_batched_tokens": 256,
            "max_num_seqs": 2,
            "num_gpu_blocks": 64,
            "max_model_len": 512,
            "policy": "priority",
        },
        "requests": reqs,
    }


def _hol() -> dict[str, Any]:
    return {
        "config": {
            "max_num_batched_tokens": 1024,
            "max_model_len": 1024,
            "max_num_seqs": 8,
            "num_gpu_blocks": 256,
            "enable_chunked_prefill": False,
        },
        "requests": [
            {"id": "A", "prompt_tokens": 700, "max_tokens": 24},
            {"id": "B", "prompt_tokens": 1000, "max_tokens": 8},
            {"id": "C", "prompt_tokens": 30, "max_tokens": 8},
            {"id": "D", "prompt_tokens": 30, "max_tokens": 8},
        ],
    }


PRESETS: tuple[Preset, ...] = (
    Preset(
        slug="continuous-batching",
        title=msg("Continuous batching: requests join as others finish"),
        params=_batching_workload("continuous"),
        lesson="scheduler-continuous-batching",
    ),
    Preset(
        slug="static-batching",
        title=msg("Static batching: the batch waits for its longest request"),
        params=_batching_workload("static"),
        lesson="scheduler-static-batching",
    ),
    Preset(
        slug="chunked-prefill",
        title=msg("Chunked prefill of a long prompt"),
        params=_chunked(),
        lesson="scheduler-chunked-prefill",
    ),
    Preset(
        slug="prefix-caching",
        title=msg("Prefix caching with a shared system prompt"),
        params=_prefix(),
        lesson="scheduler-prefix-caching",
    ),
    Preset(
        slug="preemption-fcfs",
        title=msg("Preemption under KV-cache pressure (FCFS)"),
        params=_pressure("fcfs"),
        lesson="scheduler-preemption-fcfs",
    ),
    Preset(
        slug="preemption-priority",
        title=msg("Preemption under KV-cache pressure (priority)"),
        params=_pressure("priority"),
        lesson="scheduler-preemption-priority",
    ),
    Preset(
        slug="priority",
        title=msg("Priority scheduling: who is admitted first"),
        params=_priority(),
        lesson="scheduler-priority",
    ),
    Preset(
        slug="head-of-line",
        title=msg("Head-of-line blocking without chunked prefill"),
        params=_hol(),
        lesson="scheduler-head-of-line",
    ),
)
