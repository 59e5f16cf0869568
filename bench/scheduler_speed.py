"""Speed of the vLLM scheduler simulator (issue 14). Prints figures; asserts nothing.

Workload (the issue's reference): N requests of 512-token prompts and 128 output tokens,
max_num_batched_tokens 8192, block size 16, 4096 GPU blocks, prefix caching on, everything else
vLLM 0.33's defaults. Targets on this 2-core machine: 4096 requests ≤ 0.5 s and 10,000 requests
≤ 1.5 s, frames for stepping included (``SchedulerExplainer.run``). vLLM 0.33's own Scheduler
takes 388 steps at ~1,250 steps/s for 256 requests and 5.4 s for 4096 (the issue's figures).

If ``import vllm`` works, vLLM's Scheduler is driven on the same workload (sync, fake model
output of one token per finished prefill / decode) and the ratio is printed; vLLM is never a
dependency.

    .venv/bin/python bench/scheduler_speed.py            # 256, 4096, 10000 requests, 5 runs
    .venv/bin/python bench/scheduler_speed.py --runs 3 --sizes 4096
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.sim.serving import SchedulerExplainer  # noqa: E402
from app.sim.serving.run import simulate  # noqa: E402

TARGETS = {4096: 0.5, 10_000: 1.5}
VLLM_REFERENCE_S = {256: 388 / 1250, 4096: 5.4}


def workload(n: int) -> dict[str, Any]:
    return {
        "config": {
            "max_num_batched_tokens": 8192,
            "block_size": 16,
            "num_gpu_blocks": 4096,
            "enable_prefix_caching": True,
            "max_model_len": 2048,
        },
        "requests": [{"id": f"r{i}", "prompt_tokens": 512, "max_tokens": 128} for i in range(n)],
    }


def timed(fn: Any, runs: int) -> tuple[list[float], list[float], Any]:
    walls: list[float] = []
    cpus: list[float] = []
    out = None
    for _ in range(runs):
        gc.collect()
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return walls, cpus, out


def vllm_scheduler_seconds(n: int) -> tuple[float, int] | None:  # pragma: no cover - optional
    """Drive vLLM's own Scheduler (sync) on the workload; None when vLLM is not importable."""
    try:
        import vllm  # noqa: F401
        from vllm.config import (
            CacheConfig,
            ModelConfig,
            SchedulerConfig,
            VllmConfig,
        )
        from vllm.sampling_params import SamplingParams
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.kv_cache_interface import (
            FullAttentionSpec,
            KVCacheConfig,
            KVCacheGroupSpec,
        )
        from vllm.v1.outputs import ModelRunnerOutput
        from vllm.v1.request import Request
        from vllm.v1.structured_output import StructuredOutputManager
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        print(f"  vLLM not importable ({type(e).__name__}); no comparison")
        return None
    import torch

    model = ModelConfig(model="facebook/opt-125m", max_model_len=2048, dtype="float16", seed=0)
    sched_cfg = SchedulerConfig(
        max_num_seqs=128,
        max_num_batched_tokens=8192,
        max_model_len=2048,
        is_encoder_decoder=False,
        enable_chunked_prefill=True,
    )
    cache = CacheConfig(block_size=16, gpu_memory_utilization=0.9, cache_dtype="auto")
    cache.enable_prefix_caching = True
    cache.num_gpu_blocks = 4096
    cfg = VllmConfig(scheduler_config=sched_cfg, model_config=model, cache_config=cache)
    kv = KVCacheConfig(
        num_blocks=4096,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(["layer"], FullAttentionSpec(16, 1, 1, torch.float32, False))
        ],
    )
    s = Scheduler(
        vllm_config=cfg,
        kv_cache_config=kv,
        log_stats=False,
        structured_output_manager=StructuredOutputManager(cfg),
        block_size=16,
    )
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.utils.hashing import sha256

    init_none_hash(sha256)
    hasher = get_request_block_hasher(16, sha256)
    params = SamplingParams(ignore_eos=True, max_tokens=128)
    reqs = [
        Request(
            request_id=f"r{i}",
            prompt_token_ids=[i % 30000 + 1] * 512,
            sampling_params=params,
            pooling_params=None,
            eos_token_id=None,
            arrival_time=float(i),
            block_hasher=hasher,
        )
        for i in range(n)
    ]
    t0 = time.perf_counter()
    for r in reqs:
        s.add_request(r)
    steps = 0
    while s.has_requests():
        out = s.schedule()
        ids = list(out.num_scheduled_tokens)
        sampled = []
        for rid in ids:
            r = s.requests[rid]
            sampled.append([7] if r.num_computed_tokens >= r.num_tokens else [])
        mro = ModelRunnerOutput(
            req_ids=ids,
            req_id_to_index={rid: i for i, rid in enumerate(ids)},
            sampled_token_ids=sampled,
            logprobs=None,
            prompt_logprobs_dict={},
            pooler_output=[],
        )
        s.update_from_output(out, mro)
        steps += 1
    return time.perf_counter() - t0, steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[256, 4096, 10_000])
    ap.add_argument("--vllm", action="store_true", help="also try vLLM's own Scheduler")
    args = ap.parse_args()
    ex = SchedulerExplainer()
    print(f"python {sys.version.split()[0]}; {args.runs} runs each; times in seconds")
    for n in args.sizes:
        params = ex.parse(workload(n))
        walls, cpus, trace = timed(lambda p=params: ex.run(p), args.runs)
        swalls, scpus, _ = timed(lambda p=params: simulate(p), args.runs)
        steps = len(trace.series["step"])
        best = min(walls)
        target = TARGETS.get(n)
        verdict = "" if target is None else (" OK" if best <= target else " OVER")
        print(
            f"{n:>6} requests: {steps} steps, {len(trace.frames)} frames | run() with frames: "
            f"min {best:.3f} median {statistics.median(walls):.3f} (cpu min {min(cpus):.3f})"
            f" | simulation only: min {min(swalls):.3f} (cpu {min(scpus):.3f})"
            f" | {steps / best:,.0f} steps/s"
            + (f" | target {target} s:{verdict}" if target else "")
        )
        ref = VLLM_REFERENCE_S.get(n)
        if ref:
            print(f"         vLLM 0.33 reference (issue): {ref:.2f} s -> {ref / best:.1f}x faster")
        if args.vllm:
            got = vllm_scheduler_seconds(n)
            if got:
                vs, vsteps = got
                print(f"         vLLM Scheduler here: {vs:.3f} s, {vsteps} steps -> {vs / best:.1f}x")


if __name__ == "__main__":
    main()
