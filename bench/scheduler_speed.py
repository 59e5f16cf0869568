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
    APP_NATIVE=0 .venv/bin/python bench/scheduler_speed.py   # the pure-Python modules

The first line says which ran: the mypyc-compiled modules (scripts/build_native.py) or pure Python.
"""

from __future__ import annotations

import argparse
import gc
import os
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
    """Drive vLLM's own Scheduler (sync) on the workload; None when vLLM is not importable.
    Returns (seconds, steps that scheduled something)."""
    try:
        import json
        import tempfile

        import torch
        from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
        from vllm.sampling_params import SamplingParams
        from vllm.utils.hashing import sha256
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
        from vllm.v1.outputs import ModelRunnerOutput
        from vllm.v1.request import Request
        from vllm.v1.structured_output import StructuredOutputManager
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        print(f"         vLLM not importable ({type(e).__name__}); no comparison")
        return None
    model_dir = tempfile.mkdtemp()
    config = {
        "architectures": ["OPTForCausalLM"],
        "model_type": "opt",
        "vocab_size": 50272,
        "hidden_size": 64,
        "num_hidden_layers": 1,
        "ffn_dim": 128,
        "num_attention_heads": 2,
        "max_position_embeddings": 4096,
        "word_embed_proj_dim": 64,
    }
    Path(model_dir, "config.json").write_text(json.dumps(config))
    mc = ModelConfig(model=model_dir, dtype="float16", skip_tokenizer_init=True, max_model_len=2048)
    sc = SchedulerConfig(
        max_num_seqs=128,
        max_num_batched_tokens=8192,
        max_model_len=2048,
        is_encoder_decoder=False,
        enable_chunked_prefill=True,
    )
    cc = CacheConfig(block_size=16, cache_dtype="auto", enable_prefix_caching=True)
    vc = VllmConfig(
        scheduler_config=sc,
        model_config=mc,
        cache_config=cc,
        device_config=DeviceConfig(device="cpu"),
    )
    spec = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=1, dtype=torch.float32)
    kv = KVCacheConfig(
        num_blocks=4096, kv_cache_tensors=[], kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)]
    )
    cc.num_gpu_blocks = 4096
    s = Scheduler(
        vllm_config=vc,
        kv_cache_config=kv,
        log_stats=False,
        structured_output_manager=StructuredOutputManager(vc),
        block_size=16,
    )
    init_none_hash(sha256)
    hasher = get_request_block_hasher(16, sha256)
    sp = SamplingParams(ignore_eos=True, max_tokens=128)
    reqs = [
        Request(
            request_id=f"r{i}",
            prompt_token_ids=[60000 + i] * 512,
            sampling_params=sp,
            pooling_params=None,
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
        sampled = [
            [7] if s.requests[rid].num_computed_tokens >= s.requests[rid].num_tokens else []
            for rid in ids
        ]
        mro = ModelRunnerOutput(
            req_ids=ids,
            req_id_to_index={rid: i for i, rid in enumerate(ids)},
            sampled_token_ids=sampled,
        )
        s.update_from_output(out, mro)
        steps += 1 if ids else 0
    return time.perf_counter() - t0, steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[256, 4096, 10_000])
    ap.add_argument("--vllm", action="store_true", help="also try vLLM's own Scheduler")
    args = ap.parse_args()
    ex = SchedulerExplainer()
    import app.sim.serving.engine as engine
    from app.sim.native import compiled

    code = "native (mypyc)" if compiled(engine) else "pure Python"
    print(
        f"python {sys.version.split()[0]}; {code}; {args.runs} runs each; times in seconds; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
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
                print(
                    f"         vLLM 0.33 Scheduler here: {vs:.3f} s, {vsteps} steps with work "
                    f"(ours {steps}) -> ours is {vs / best:.1f}x faster with frames, "
                    f"{vs / min(swalls):.1f}x without"
                )


if __name__ == "__main__":
    main()
