"""Parameter validation: every bad input is a ParamError whose loc names the field."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sim.core.errors import ParamError
from app.sim.serving import SchedulerExplainer
from app.sim.serving.params import (
    MAX_REQUESTS,
    RequestSpec,
    SchedulerConfig,
    SchedulerParams,
    dump,
    parse,
)

EX = SchedulerExplainer()


def locs(raw: Any) -> list[tuple[str | int, ...]]:
    with pytest.raises(ParamError) as e:
        EX.parse(raw)
    return [i.loc for i in e.value.issues]


def body(*reqs: dict[str, Any], **config: Any) -> dict[str, Any]:
    return {"config": config, "requests": list(reqs)}


def test_defaults_are_vllm_033_scheduler_defaults() -> None:
    """SchedulerConfig / CacheConfig defaults of vLLM 0.33 (max_model_len 2048 is ours)."""
    c = parse(body({"id": "a", "prompt_tokens": 5})).config
    assert c == SchedulerConfig()
    assert (c.max_num_batched_tokens, c.max_num_seqs, c.block_size) == (2048, 128, 16)
    assert c.enable_chunked_prefill and c.enable_prefix_caching
    assert (c.long_prefill_token_threshold, c.watermark, c.policy) == (0, 0.0, "fcfs")
    assert c.scheduler_reserve_full_isl and c.max_model_len == 2048
    assert parse(body({"id": "a", "prompt_tokens": 5})).requests[0].max_tokens == 16


def test_duplicate_ids_name_the_second_request() -> None:
    """Duplicate request ids → 422 at requests.<i>.id."""
    raw = body(
        {"id": "A", "prompt_tokens": 5},
        {"id": "B", "prompt_tokens": 5},
        {"id": "A", "prompt_tokens": 5},
    )
    assert locs(raw) == [("requests", 2, "id")]


@pytest.mark.parametrize(
    ("field", "value"),
    [("prompt_tokens", 0), ("prompt_tokens", -3), ("max_tokens", 0), ("max_tokens", -1)],
)
def test_non_positive_lengths(field: str, value: int) -> None:
    """Non-positive prompt or output lengths → 422 naming the field."""
    r = {"id": "A", "prompt_tokens": 5, field: value}
    assert locs(body(r)) == [("requests", 0, field)]


def test_empty_prompt_token_ids() -> None:
    """An empty prompt_token_ids list is refused (vLLM: the prompt cannot be empty)."""
    assert locs(body({"id": "A", "prompt_token_ids": []})) == [("requests", 0, "prompt_token_ids")]


def test_prompt_longer_than_max_model_len() -> None:
    """A prompt that leaves no room for one output token within max_model_len → 422."""
    assert locs(body({"id": "A", "prompt_tokens": 2048})) == [("requests", 0, "prompt_tokens")]
    assert locs(body({"id": "A", "prompt_token_ids": [1] * 64}, max_model_len=64)) == [
        ("requests", 0, "prompt_token_ids")
    ]
    parse(body({"id": "A", "prompt_tokens": 2047}))


def test_too_many_requests() -> None:
    """More than 50,000 requests → 422 at requests."""
    reqs = [{"id": str(i), "prompt_tokens": 1, "max_tokens": 1} for i in range(MAX_REQUESTS + 1)]
    assert locs({"requests": reqs}) == [("requests",)]


def test_every_issue_is_reported_at_once() -> None:
    """parse collects all problems, each at its own loc."""
    raw = {
        "config": {"block_size": 0, "policy": "lifo", "bogus": 1},
        "requests": [{"id": "A", "prompt_tokens": "x"}, {"id": "", "prompt_tokens": 3}],
        "extra": True,
    }
    assert set(locs(raw)) == {
        ("extra",),
        ("config", "bogus"),
        ("config", "block_size"),
        ("config", "policy"),
        ("requests", 0, "prompt_tokens"),
        ("requests", 1, "id"),
    }


def test_vllm_config_consistency_checks() -> None:
    """SchedulerConfig.verify_max_model_len and the KV capacity check at start-up."""
    assert locs(
        body(
            {"id": "A", "prompt_tokens": 5},
            enable_chunked_prefill=False,
            max_num_batched_tokens=1024,
        )
    ) == [("config", "max_num_batched_tokens")]
    assert locs(body({"id": "A", "prompt_tokens": 5}, max_num_batched_tokens=64)) == [
        ("config", "max_num_batched_tokens")
    ]
    assert locs(body({"id": "A", "prompt_tokens": 5}, num_gpu_blocks=100)) == [
        ("config", "num_gpu_blocks")
    ]
    assert locs(body({"id": "A", "prompt_tokens": 5}, long_prefill_token_threshold=4096)) == [
        ("config", "long_prefill_token_threshold")
    ]


def test_max_work_is_enforced() -> None:
    """parse refuses params whose cost (tokens to process) exceeds limits.max_work."""
    reqs = [{"id": str(i), "prompt_tokens": 1000, "max_tokens": 1000} for i in range(12_000)]
    assert (
        EX.cost(
            parse({"requests": reqs, "config": {"max_model_len": 4096, "num_gpu_blocks": 4096}})
        )
        > EX.limits.max_work
    )
    assert locs({"requests": reqs, "config": {"max_model_len": 4096, "num_gpu_blocks": 4096}}) == [
        ("requests",)
    ]


def test_cost_counts_prompt_plus_produced_outputs() -> None:
    """cost = Σ prompt + the output tokens check_stop lets each request produce."""
    p = parse(
        body(
            {"id": "A", "prompt_tokens": 10, "max_tokens": 7},
            {"id": "B", "prompt_tokens": 3, "max_tokens": 9, "eos_position": 2},
        )
    )
    assert EX.cost(p) == 10 + 7 + 3 + 2


@st.composite
def raw_params(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 5))
    reqs: list[dict[str, Any]] = []
    for i in range(n):
        r: dict[str, Any] = {"id": f"q{i}", "max_tokens": draw(st.integers(1, 50))}
        if draw(st.booleans()):
            r["prompt_token_ids"] = draw(st.lists(st.integers(0, 100), min_size=1, max_size=20))
        else:
            r["prompt_tokens"] = draw(st.integers(1, 500))
        for key, strat in (
            ("arrival_step", st.integers(0, 9)),
            ("arrival_time", st.floats(0, 100, allow_nan=False)),
            ("priority", st.integers(-3, 3)),
            ("output_token_ids", st.lists(st.integers(0, 9), max_size=4)),
            ("stop_token_ids", st.lists(st.integers(0, 9), max_size=2)),
            ("ignore_eos", st.booleans()),
            ("eos_position", st.integers(1, 9)),
        ):
            if draw(st.booleans()):
                r[key] = draw(strat)
        reqs.append(r)
    config = {
        "policy": draw(st.sampled_from(["fcfs", "priority"])),
        "watermark": draw(st.sampled_from([0.0, 0.25])),
        "batching": draw(st.sampled_from(["continuous", "static"])),
    }
    latency = {"mode": draw(st.sampled_from(["roofline", "linear"])), "mfu": 0.4}
    return {"config": config, "requests": reqs, "latency": latency}


@settings(max_examples=60, deadline=None)
@given(raw_params())
def test_parse_dump_round_trip(raw: dict[str, Any]) -> None:
    """parse(dump(p)) == p, and the explainer's dump is the same form."""
    p = EX.parse(raw)
    assert EX.parse(EX.dump(p)) == p
    assert dump(p) == EX.dump(p)


@settings(max_examples=60, deadline=None)
@given(raw_params())
def test_pickle_round_trip(raw: dict[str, Any]) -> None:
    """Params pickled (as a run's are for its simulation process: requests as columns) read
    back equal, field for field, frozen and hashable as parsed."""
    p = EX.parse(raw)
    back = pickle.loads(pickle.dumps(p, pickle.HIGHEST_PROTOCOL))
    assert back == p and hash(back) == hash(p)
    for got, want in zip(back.requests, p.requests, strict=True):
        assert type(got) is RequestSpec
        assert [getattr(got, f.name) for f in fields(RequestSpec)] == [
            getattr(want, f.name) for f in fields(RequestSpec)
        ]
    with pytest.raises(FrozenInstanceError):
        back.requests[0].max_tokens = 1  # type: ignore[misc]


def test_pickle_of_no_requests_and_a_damaged_column() -> None:
    p = SchedulerParams(config=SchedulerConfig(), requests=())
    assert pickle.loads(pickle.dumps(p)) == p
    rebuild, (config, latency, n, columns) = parse(
        body({"id": "a", "prompt_tokens": 5})
    ).__reduce__()
    columns[3] = []
    with pytest.raises(ValueError, match="wrong length"):
        rebuild(config, latency, n, columns)
