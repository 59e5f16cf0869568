"""Helpers for the scheduler tests: run a workload and read its steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.sim.serving import SchedulerExplainer
from app.sim.serving.engine import Scheduler
from app.sim.serving.explainer import steps_json
from app.sim.serving.params import SchedulerParams, parse
from app.sim.serving.request import Req
from app.sim.serving.run import SchedulerSeries, simulate

EX = SchedulerExplainer()


def params(config: dict[str, Any], requests: list[dict[str, Any]]) -> SchedulerParams:
    return parse({"config": config, "requests": requests})


def run_steps(config: dict[str, Any], requests: list[dict[str, Any]]) -> list[Any]:
    """``steps[]`` of the public JSON for a workload."""
    p = params(config, requests)
    res = simulate(p)
    return list(steps_json(p, res.series))


def series(config: dict[str, Any], requests: list[dict[str, Any]]) -> SchedulerSeries:
    return simulate(params(config, requests)).series


def watch(
    config: dict[str, Any],
    requests: list[dict[str, Any]],
    check: Callable[[Scheduler, list[Req], int], None],
) -> SchedulerSeries:
    """Run with ``check(scheduler, arrived, step_index)`` called after every step."""

    def snap(s: Scheduler, arrived: list[Req], idx: int) -> int:
        check(s, arrived, idx)
        return idx

    return simulate(params(config, requests), snapshot=snap, max_frames=10**9).series


def req(rid: str, prompt: int, max_tokens: int = 4, **kw: Any) -> dict[str, Any]:
    return {"id": rid, "prompt_tokens": prompt, "max_tokens": max_tokens, **kw}


def result(se: SchedulerSeries, rid: str) -> Any:
    return next(r for r in se["requests"] if r["id"] == rid)


def pressure(policy: str, n: int, *, prefix: bool) -> dict[str, Any]:
    """Few KV blocks for many long requests arriving over time: preemptions all along."""
    return {
        "config": {
            "num_gpu_blocks": 40,
            "max_model_len": 256,
            "block_size": 16,
            "max_num_batched_tokens": 256,
            "max_num_seqs": 8,
            "policy": policy,
            "enable_prefix_caching": prefix,
        },
        "requests": [
            {
                "id": f"q{i}",
                "prompt_tokens": 40 + 7 * (i % 5),
                "max_tokens": 30 + 11 * (i % 4),
                "arrival_step": i // 3,
                "priority": i % 3 if policy == "priority" else 0,
            }
            for i in range(n)
        ],
    }
