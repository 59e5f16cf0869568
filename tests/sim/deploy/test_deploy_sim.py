"""The deployment explainer's arithmetic against an independent reading of vLLM 0.33's code.

The reference below re-implements, from the cited functions and not from app/sim/deploy, how
vLLM turns layers into KV-cache specs (``Attention.get_kv_cache_spec``,
``MLAAttention.get_kv_cache_spec``), page sizes (``AttentionSpec.page_size_bytes``), groups
(``_get_kv_cache_groups_uniform_page_size``), bytes per block (``_get_kv_cache_bytes_per_block``),
``num_gpu_blocks = available_memory // bytes_per_block`` and the maximum concurrency
(``get_max_concurrency_for_kv_cache_config``). With the KV budget pinned
(``kv_cache_memory_bytes``) the budget is exact, so the blocks must match exactly.
"""

from __future__ import annotations

import re
import tarfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from app.sim.core import ParamError
from app.sim.deploy import DeployExplainer
from app.sim.deploy import sources as src
from app.sim.deploy.params import dump, parse
from app.sim.deploy.plan import plan, pp_partitions
from app.sim.deploy.tables import MODEL_BY_ID, GiB

EX = DeployExplainer()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# --- the reference, read off vLLM 0.33.0 ------------------------------------------------------


def layer_specs(
    cfg: dict[str, Any], tp: int, layers: range, kv_dtype: str, bs: int
) -> dict[str, tuple]:
    """{layer name: (kind, num_kv_heads, head_size, head_size_v, dtype_size, block_size)}."""
    dsize = 1 if kv_dtype == "fp8" else 2
    out: dict[str, tuple] = {}
    for i in layers:
        name = f"model.layers.{i}.attn"
        if cfg.get("kv_lora_rank"):
            # MLAAttention: num_kv_heads=1, head_size = kv_lora_rank + qk_rope_head_dim, no V
            out[name] = ("mla", 1, cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"], 0, dsize, bs)
            continue
        kv = max(1, cfg["num_kv_heads"] // tp)  # LlamaAttention.__init__
        window = cfg.get("sliding_window", 0)
        sliding = window and cfg["layer_types"][i] == "sliding_attention"
        out[name] = (
            "sliding" if sliding else "full",
            kv,
            cfg["head_dim"],
            cfg["head_dim"],
            dsize,
            bs,
        )
    return out


def page_size(spec: tuple) -> int:
    _, heads, k, v, dsize, bs = spec
    return heads * bs * (k + v) * dsize  # num_heads * num_states * state_content_size_bytes


def groups_of(specs: dict[str, tuple]) -> list[list[str]]:
    same: dict[tuple, list[str]] = defaultdict(list)
    for name, spec in specs.items():
        same[spec].append(name)
    buckets = list(same.values())
    if len(buckets) == 1:
        return buckets
    min_n = min(len(b) for b in buckets)
    max_n = max(len(b) for b in buckets)
    size = max_n if max_n < min_n * 1.5 else min_n
    out = []
    for layers in buckets:
        n = cdiv(len(layers), size)
        out.extend(layers[i::n] for i in range(n))
    return out


def reference(
    cfg: dict[str, Any],
    *,
    tp: int,
    pp: int,
    bs: int,
    kv_dtype: str,
    budget: int,
    mml: int,
    in_flight: int,
) -> tuple[int, int, float]:
    """(bytes_per_block, num_gpu_blocks, max_concurrency) as vLLM 0.33 would compute them."""
    n = cfg["num_layers"]
    everything = layer_specs(cfg, tp, range(n), kv_dtype, bs)
    global_groups = groups_of(everything)
    per = n // pp
    parts = [per] * pp
    for i in range(2, n % pp + 2):
        parts[-i] += 1
    start, blocks, bpbs = 0, [], []
    for count in parts:
        here = {f"model.layers.{i}.attn" for i in range(start, start + count)}
        start += count
        bpb = max(sum(page_size(everything[x]) for x in g if x in here) for g in global_groups)
        bpbs.append(bpb)
        blocks.append(budget // bpb)
    num_blocks = min(blocks)
    per_request = 0
    for g in global_groups:
        spec = everything[g[0]]
        if spec[0] == "sliding":
            tokens = min(cfg["sliding_window"] - 1 + in_flight, mml)
            per_request += cdiv(tokens, bs) + 1
        else:
            per_request += cdiv(mml, bs)
    return bpbs[blocks.index(num_blocks)], num_blocks, num_blocks / per_request


def config_of(model_id: str) -> dict[str, Any]:
    """The config.json facts the reference needs, with gpt-oss's and Gemma 3's layer_types
    spelled out as in their configs."""
    m = MODEL_BY_ID[model_id]
    cfg: dict[str, Any] = {
        "num_layers": m.num_layers,
        "num_kv_heads": m.num_kv_heads,
        "head_dim": m.head_dim,
        "kv_lora_rank": m.kv_lora_rank,
        "qk_rope_head_dim": m.qk_rope_head_dim,
        "sliding_window": m.sliding_window,
    }
    if model_id.startswith("gpt-oss"):
        cfg["layer_types"] = ["sliding_attention", "full_attention"] * (m.num_layers // 2)
    if model_id.startswith("gemma-3"):
        cfg["layer_types"] = [
            "full_attention" if i % 6 == 5 else "sliding_attention" for i in range(m.num_layers)
        ]
    return cfg


CASES = [
    ("llama-3.1-8b", 1, 1, 16, "auto"),
    ("llama-3.1-8b", 2, 1, 32, "fp8"),
    ("llama-3.1-70b", 4, 1, 16, "auto"),
    ("llama-3.1-70b", 16, 1, 16, "auto"),  # 8 KV heads, TP 16: each head copied to 2 GPUs
    ("qwen3-30b-a3b", 8, 1, 16, "auto"),  # 4 KV heads over 8 GPUs
    ("mixtral-8x7b", 2, 2, 16, "auto"),
    ("deepseek-v3", 8, 1, 64, "auto"),
    ("deepseek-v3", 8, 2, 16, "fp8"),
    ("gpt-oss-20b", 1, 1, 16, "auto"),
    ("gpt-oss-120b", 4, 3, 16, "fp8"),
    ("gemma-3-27b", 2, 1, 16, "auto"),
    ("gemma-3-27b", 1, 4, 32, "auto"),
]


@pytest.mark.parametrize(("model", "tp", "pp", "bs", "kv_dtype"), CASES)
def test_blocks_equal_an_independent_reading_of_vllm(
    model: str, tp: int, pp: int, bs: int, kv_dtype: str
) -> None:
    budget = 37 * GiB + 12345
    mml = 32768
    p = parse(
        {
            "model": model,
            "gpu": "b200",
            "tensor_parallel_size": tp,
            "pipeline_parallel_size": pp,
            "block_size": bs,
            "kv_cache_dtype": kv_dtype,
            "kv_cache_memory_bytes": budget,
            "max_model_len": mml,
        }
    )
    pl = plan(p)
    in_flight = (pp + 1) * p.max_num_batched_tokens
    bpb, blocks, conc = reference(
        config_of(model),
        tp=tp,
        pp=pp,
        bs=bs,
        kv_dtype=kv_dtype,
        budget=budget,
        mml=mml,
        in_flight=in_flight,
    )
    assert pl.limiting.bytes_per_block == bpb
    assert pl.num_gpu_blocks == blocks
    assert pl.max_concurrency == pytest.approx(conc)


def test_fp8_kv_cache_halves_the_page_and_doubles_the_blocks() -> None:
    raw = {"model": "qwen3-32b", "kv_cache_memory_bytes": 20 * GiB, "max_model_len": 8192}
    bf16 = plan(parse(raw))
    fp8 = plan(parse({**raw, "kv_cache_dtype": "fp8"}))
    assert fp8.layout.page_bytes * 2 == bf16.layout.page_bytes
    assert fp8.num_gpu_blocks == 2 * bf16.num_gpu_blocks


def test_mla_latent_is_the_same_on_every_rank() -> None:
    one = plan(parse({"model": "deepseek-v3", "gpu": "mi300x", "tensor_parallel_size": 8}))
    assert one.layout.page_bytes == 16 * (512 + 64) * 2
    gqa = plan(parse({"model": "llama-3.1-70b", "tensor_parallel_size": 8}))
    assert gqa.layout.page_bytes == 1 * 16 * 256 * 2


def test_pipeline_stages_split_layers_like_get_pp_indices() -> None:
    assert pp_partitions(61, 4) == [15, 15, 16, 15]
    assert pp_partitions(62, 4) == [15, 16, 16, 15]
    assert pp_partitions(80, 4) == [20, 20, 20, 20]
    assert sum(pp_partitions(37, 5)) == 37


def test_weights_split_by_tensor_parallel() -> None:
    one = plan(parse({"model": "llama-3.1-70b", "gpu": "b200"}))
    four = plan(parse({"model": "llama-3.1-70b", "gpu": "b200", "tensor_parallel_size": 4}))
    assert one.limiting.weights_bytes == pytest.approx(4 * four.limiting.weights_bytes, rel=1e-6)
    assert one.limiting.weights_bytes == pytest.approx(70.6e9 * 2, rel=1e-6)


# --- refusals are results ---------------------------------------------------------------------


def run(raw: dict[str, Any]) -> dict[str, Any]:
    return EX.public_json(EX.run(EX.parse(raw)))


def test_tp_not_dividing_heads_is_a_refusal_at_the_first_step() -> None:
    trace = EX.run(EX.parse({"model": "qwen3-32b", "tensor_parallel_size": 3}))
    assert len(trace.frames) == 1 and trace.frames[0].result == "refused"
    body = EX.public_json(trace)
    assert body["fits"] is False and body["reason_code"] == "tp_heads"
    assert "64 attention heads" in body["reason"] and body["scheduler"] is None


def test_tp_and_kv_heads_that_do_not_split_evenly() -> None:
    custom = {
        "num_layers": 4,
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_kv_heads": 4,
        "head_dim": 64,
        "vocab_size": 1000,
        "num_params": 50_000_000,
    }
    body = run({"model": custom, "tensor_parallel_size": 6})
    assert body["reason_code"] == "tp_kv_heads"
    assert run({"model": custom, "tensor_parallel_size": 2})["fits"] is True


def test_weights_larger_than_the_gpu() -> None:
    body = run({"model": "llama-3.1-70b"})
    assert body["fits"] is False and body["reason_code"] == "weights"
    assert body["per_gpu"]["weights_bytes"] > body["per_gpu"]["memory_bytes"]


def test_max_model_len_too_long_names_the_estimate_vllm_would() -> None:
    p = parse({"model": "llama-3.1-70b", "tensor_parallel_size": 2})
    pl = plan(p)
    assert pl.failure == "max_model_len"
    est, bpb, room = pl.estimated_max_len, pl.limiting.bytes_per_block, 0
    room = pl.limiting.kv_budget - bpb
    assert bpb * cdiv(est, 16) <= room < bpb * cdiv(est + 16, 16)
    assert f"{est:,}" in run(dump(p))["reason"]
    fixed = plan(parse({**dump(p), "max_model_len": est}))
    assert fixed.fits


def test_no_memory_left_for_the_cache() -> None:
    body = run({"model": "qwen3-32b", "gpu_memory_utilization": 0.8})
    assert body["reason_code"] == "no_kv_memory"


def test_pinned_budget_beyond_the_gpu() -> None:
    body = run({"model": "llama-3.1-8b", "kv_cache_memory_bytes": 70 * GiB})
    assert body["reason_code"] == "pinned_oom"
    ok = run({"model": "llama-3.1-8b", "kv_cache_memory_bytes": 10 * GiB, "max_model_len": 8192})
    assert ok["fits"] and ok["kv"]["num_gpu_blocks"] == 10 * GiB // ok["kv"]["bytes_per_block"]


# --- params -----------------------------------------------------------------------------------


def test_defaults_are_vllms() -> None:
    p = parse({"model": "qwen3-8b"})
    assert (p.gpu_memory_utilization, p.block_size, p.max_model_len) == (0.92, 16, 40960)
    assert (p.max_num_seqs, p.max_num_batched_tokens) == (1024, 8192)  # H100
    a100 = parse({"gpu": "a100-80gb"})
    assert (a100.max_num_seqs, a100.max_num_batched_tokens) == (256, 2048)
    b200 = parse({"gpu": "b200"})
    assert (b200.max_num_seqs, b200.max_num_batched_tokens) == (1024, 16384)


def issues(raw: Any) -> set[tuple[str | int, ...]]:
    with pytest.raises(ParamError) as e:
        parse(raw)
    return {tuple(i.loc) for i in e.value.issues}


def test_bad_input_names_every_field() -> None:
    assert issues({"model": "nope", "tensor_parallel_size": 0, "dtype": "fp4"}) == {
        ("model",),
        ("tensor_parallel_size",),
        ("dtype",),
    }
    assert ("model", "num_layers") in issues({"model": {"hidden_size": 8}})
    assert issues({"model": "qwen3-8b", "max_model_len": 50000}) == {("max_model_len",)}
    assert issues({"gpu": {"memory_bytes": "lots"}}) >= {("gpu", "memory_bytes"), ("gpu", "flops")}
    assert issues({"max_num_seqs": 512, "max_num_batched_tokens": 256}) == {
        ("max_num_batched_tokens",)
    }
    assert issues({"model": "llama-3.1-8b", "pipeline_parallel_size": 40}) == {
        ("pipeline_parallel_size",)
    }
    assert issues([1]) == {()}


def test_params_round_trip() -> None:
    raws = [pr.params for pr in EX.presets] + [
        {
            "model": {
                "name": "tiny",
                "num_layers": 6,
                "hidden_size": 512,
                "num_attention_heads": 8,
                "num_kv_heads": 2,
                "head_dim": 64,
                "vocab_size": 32000,
                "num_params": 60_000_000,
                "sliding_window": 256,
                "full_attention_every": 3,
            },
            "gpu": {"memory_bytes": 24 * GiB, "hbm_bytes_per_s": 1e12, "flops": 1.5e14},
            "kv_cache_memory_bytes": GiB,
        }
    ]
    for raw in raws:
        p = parse(raw)
        assert parse(dump(p)) == p


# --- citations ----------------------------------------------------------------------------------

SDIST = sorted(Path("/tmp").glob("*/vllm-0.33.0.tar.gz"))


@pytest.mark.skipif(not SDIST, reason="vLLM 0.33.0 sdist not downloaded under /tmp")
def test_cited_lines_are_the_definitions_in_vllm_033() -> None:
    # One pass through the compressed archive, reading each cited file once: looking members
    # up by name (tar.extractfile) decompressed it from the start again for every citation.
    wanted = {f"vllm-0.33.0/{ref.path}" for ref in src.ALL}
    files: dict[str, list[str]] = {}
    with tarfile.open(SDIST[0], "r|gz") as tar:
        for info in tar:
            if info.name in wanted:
                member = tar.extractfile(info)
                assert member is not None, info.name
                files[info.name] = member.read().decode().splitlines()
    for ref in src.ALL:
        lines = files.get(f"vllm-0.33.0/{ref.path}")
        assert lines is not None, ref
        name = ref.function.split(".")[-1]
        assert re.match(rf"\s*(def|class) {re.escape(name)}\b", lines[ref.line - 1]), ref


def test_every_citation_is_in_the_table_and_on_github() -> None:
    keys = [(r.function, r.path) for r in src.ALL]
    assert len(keys) == len(set(keys))
    assert all(
        r.url.startswith("https://github.com/vllm-project/vllm/blob/v0.33.0/") for r in src.ALL
    )
    cited = {f.source for pr in EX.presets for f in EX.run(EX.parse(pr.params)).frames if f.source}
    assert cited <= set(src.ALL)
