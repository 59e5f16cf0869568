"""The deployment explainer over HTTP: the run API's documented shape, 422 naming the field,
refusals as results, and the hand-off that opens the scheduler's editor filled in."""

from __future__ import annotations

import base64
import html as htmllib
import json
import re

from fastapi.testclient import TestClient

from app.sim.deploy.handoff import SCHEDULER_MAX_BLOCKS, SCHEDULER_MAX_LEN
from app.sim.serving import params as sched_params

API = "/api/v1/explainers/deploy/run"


def test_run_answers_frames_kv_per_gpu_and_fits(client: TestClient) -> None:
    r = client.post(API, json={"model": "llama-3.1-8b", "gpu": "h100-80gb", "max_model_len": 8192})
    assert r.status_code == 200, r.text
    body = r.json()
    assert {"frames", "kv", "per_gpu", "fits", "reason", "scheduler", "sim_version"} <= set(body)
    assert set(body["kv"]) >= {"bytes_per_block", "num_gpu_blocks", "max_concurrency"}
    assert set(body["per_gpu"]) >= {
        "weights_bytes",
        "kv_cache_bytes",
        "activation_bytes",
        "reserved_bytes",
        "total_bytes",
    }
    kv, gpu = body["kv"], body["per_gpu"]
    assert body["fits"] is True and body["reason"] is None
    assert kv["num_gpu_blocks"] == gpu["kv_cache_bytes"] // kv["bytes_per_block"]
    assert kv["max_concurrency"] == round(kv["num_gpu_blocks"] / (8192 // 16), 4)
    assert gpu["total_bytes"] <= gpu["memory_bytes"]
    assert [f["op"] for f in body["frames"]][-1] == "verdict"
    assert body["frames"][5]["source"]["url"].startswith(
        "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/kv_cache_interface.py#L"
    )


def test_custom_architecture_and_gpu(client: TestClient) -> None:
    model = {
        "num_layers": 16,
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_kv_heads": 4,
        "head_dim": 128,
        "vocab_size": 50000,
        "num_params": 1_200_000_000,
    }
    gpu = {"memory_bytes": 24 * 2**30, "hbm_bytes_per_s": 1e12, "flops": 1.6e14}
    r = client.post(API, json={"model": model, "gpu": gpu, "max_model_len": 4096})
    assert r.status_code == 200, r.text
    assert r.json()["kv"]["bytes_per_block"] == 16 * (4 * 16 * 256 * 2)


def test_bad_input_is_422_naming_the_field(client: TestClient) -> None:
    for body, loc in (
        ({"model": "gpt-5"}, ["body", "model"]),
        ({"tensor_parallel_size": 0}, ["body", "tensor_parallel_size"]),
        ({"gpu_memory_utilization": 1.5}, ["body", "gpu_memory_utilization"]),
        ({"model": {"num_layers": 2}}, ["body", "model", "hidden_size"]),
        ({"gpu": {"memory_bytes": 1}}, ["body", "gpu", "memory_bytes"]),
        ({"kv_cache_dtype": "fp4"}, ["body", "kv_cache_dtype"]),
        ({"model": "qwen3-8b", "max_model_len": 131072}, ["body", "max_model_len"]),
    ):
        r = client.post(API, json=body)
        assert r.status_code == 422, (body, r.text)
        assert loc in [d["loc"] for d in r.json()["detail"]], r.text


def test_refusals_are_results_not_errors(client: TestClient) -> None:
    r = client.post(API, json={"model": "qwen3-32b", "tensor_parallel_size": 3})
    assert r.status_code == 200
    body = r.json()
    assert body["fits"] is False and body["reason_code"] == "tp_heads" and body["reason"]
    r = client.post(API, json={"model": "llama-3.1-70b", "gpu": "a100-40gb"})
    assert r.status_code == 200 and r.json()["reason_code"] == "weights"


def test_reason_in_chinese(client: TestClient) -> None:
    r = client.post(API + "?lang=zh-CN", json={"model": "qwen3-32b", "tensor_parallel_size": 3})
    assert r.status_code == 200
    assert "注意力头" in r.json()["reason"]


def test_the_scheduler_limits_the_hand_off_respects() -> None:
    assert SCHEDULER_MAX_BLOCKS == sched_params.MAX_GPU_BLOCKS
    assert SCHEDULER_MAX_LEN == sched_params.MAX_MODEL_LEN


def test_hand_off_opens_the_scheduler_editor_filled_in(client: TestClient) -> None:
    api = client.post(API, json={"model": "llama-3.1-8b", "max_model_len": 8192}).json()
    page = client.get("/explainers/deploy/presets/8b-one-h100")
    assert page.status_code == 200
    links = re.findall(r'href="(/explainers/scheduler/edit\?p=[^"]+)"', page.text)
    assert links, "no hand-off link on a deployment that fits"
    href = htmllib.unescape(links[0])
    token = href.split("p=", 1)[1]
    raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert raw == api["scheduler"]
    cfg = raw["config"]
    assert cfg["num_gpu_blocks"] == api["kv"]["num_gpu_blocks"]
    assert (cfg["block_size"], cfg["max_model_len"]) == (16, 8192)
    parsed = sched_params.parse(raw)  # the scheduler accepts it as it is
    assert parsed.latency.kv_bytes_per_token == 32 * 8 * 256 * 2 // 1
    editor = client.get(href)
    assert editor.status_code == 200
    assert f'value="{cfg["num_gpu_blocks"]}"' in editor.text


def test_no_hand_off_when_it_does_not_fit(client: TestClient) -> None:
    page = client.get("/explainers/deploy/presets/does-not-fit")
    assert page.status_code == 200
    assert "/explainers/scheduler/edit?p=" not in page.text
