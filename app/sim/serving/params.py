"""Parameters of a scheduler run: the vLLM scheduler config, a workload of requests and a
latency model.

``parse(raw)`` turns the JSON body of ``POST /api/v1/explainers/scheduler/run`` into frozen
:class:`SchedulerParams` (or raises :class:`~app.sim.core.ParamError` naming every bad field);
``dump(params)`` gives the raw form back, so ``parse(dump(p)) == p``.

Config keys use vLLM's names. Anything omitted takes vLLM 0.33's scheduler defaults
(``SchedulerConfig`` / ``CacheConfig``), except ``max_model_len`` (2048 here; vLLM takes it from
the model), ``num_gpu_blocks`` (vLLM measures it; 1024 here) and ``eos_token_id`` (the model's
tokenizer decides; 2 here). ``batching`` is ours: ``"continuous"`` (vLLM) or ``"static"`` (one
batch at a time, for comparison).

A request gives its prompt as a length (``prompt_tokens``: content unique to that request, so it
never shares a prefix) or as ``prompt_token_ids`` (prefix caching hashes the ids, so requests
with a common start share cached blocks). What the "model" emits at each decode is
``output_token_ids`` (then a filler token: the smallest id that is neither EOS nor one of the
request's stop ids), with ``eos_position`` (1-based) forcing EOS at that output token.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, Literal

from app.sim.core import msg
from app.sim.core.errors import ParamError
from app.sim.core.validate import Checker, describe

MAX_REQUESTS = 50_000
MAX_TOKENS_PER_REQUEST = 1_000_000
MAX_GPU_BLOCKS = 1_000_000
MAX_BUDGET = 1_000_000
MAX_MODEL_LEN = 1_000_000
MAX_TOKEN_ID = 2**31 - 1
MAX_ARRIVAL_STEP = 10_000_000
MAX_ARRIVAL_TIME_S = 1e7
MAX_PRIORITY = 2**31
MAX_BLOCK_SIZE = 1024
MAX_KV_BYTES_PER_TOKEN = 2**30
# The latency model's numbers: (lowest, highest); the lowest is excluded for LATENCY_POSITIVE
LATENCY_RANGES: dict[str, tuple[float, float]] = {
    "model_params_billion": (0, 1e5),
    "bytes_per_param": (0, 64),
    "gpu_tflops": (0, 1e7),
    "gpu_bandwidth_gbps": (0, 1e7),
    "mfu": (0, 1),
    "step_overhead_ms": (0, 1e6),
    "base_ms": (0, 1e6),
    "prefill_token_ms": (0, 1e6),
    "decode_token_ms": (0, 1e6),
}
LATENCY_POSITIVE = frozenset(
    ("model_params_billion", "bytes_per_param", "gpu_tflops", "gpu_bandwidth_gbps", "mfu")
)

Policy = Literal["fcfs", "priority"]
Batching = Literal["continuous", "static"]
LatencyMode = Literal["roofline", "linear"]

_CONFIG_KEYS = (
    "max_num_batched_tokens",
    "max_num_seqs",
    "block_size",
    "num_gpu_blocks",
    "enable_chunked_prefill",
    "long_prefill_token_threshold",
    "enable_prefix_caching",
    "policy",
    "watermark",
    "max_model_len",
    "scheduler_reserve_full_isl",
    "eos_token_id",
    "batching",
)
_REQUEST_KEYS = (
    "id",
    "prompt_tokens",
    "prompt_token_ids",
    "max_tokens",
    "arrival_step",
    "arrival_time",
    "priority",
    "output_token_ids",
    "stop_token_ids",
    "ignore_eos",
    "eos_position",
)
_LATENCY_KEYS = (
    "mode",
    "model_params_billion",
    "bytes_per_param",
    "gpu_tflops",
    "gpu_bandwidth_gbps",
    "mfu",
    "kv_bytes_per_token",
    "step_overhead_ms",
    "base_ms",
    "prefill_token_ms",
    "decode_token_ms",
)
_TOP_KEYS = ("config", "requests", "latency")


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    """vLLM's scheduler and cache settings (names as in ``vllm/config/scheduler.py``)."""

    max_num_batched_tokens: int = 2048  # SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS
    max_num_seqs: int = 128  # SchedulerConfig.DEFAULT_MAX_NUM_SEQS
    block_size: int = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
    num_gpu_blocks: int = 1024  # measured by vLLM; includes the null block 0
    enable_chunked_prefill: bool = True
    long_prefill_token_threshold: int = 0
    enable_prefix_caching: bool = True
    policy: Policy = "fcfs"
    watermark: float = 0.0
    max_model_len: int = 2048
    scheduler_reserve_full_isl: bool = True
    eos_token_id: int = 2
    batching: Batching = "continuous"


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestSpec:
    """One request of the workload."""

    id: str
    prompt_tokens: int
    prompt_token_ids: tuple[int, ...] | None = None
    max_tokens: int = 16  # SamplingParams default
    arrival_step: int | None = None
    arrival_time: float | None = None
    priority: int = 0
    output_token_ids: tuple[int, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    eos_position: int | None = None

    @property
    def step(self) -> int | None:
        """The step before whose schedule() the request is added (None: by arrival_time)."""
        if self.arrival_step is not None:
            return self.arrival_step
        return None if self.arrival_time is not None else 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyParams:
    """How a step becomes time.

    ``roofline`` (default): a step takes ``step_overhead_ms`` plus the larger of its compute
    time (2 FLOPs per parameter per scheduled token at ``mfu`` of ``gpu_tflops``) and its memory
    time (all weights plus the KV cache of every scheduled request's context, read once at
    ``gpu_bandwidth_gbps``). Defaults: an 8B-parameter model in bf16 (Llama-3-8B shapes:
    128 KiB of KV per token) on one H100 SXM. ``linear``: ``base_ms`` per step plus
    ``prefill_token_ms`` per prefill token and ``decode_token_ms`` per decode token.
    """

    mode: LatencyMode = "roofline"
    model_params_billion: float = 8.0
    bytes_per_param: float = 2.0
    gpu_tflops: float = 989.0
    gpu_bandwidth_gbps: float = 3350.0
    mfu: float = 0.5
    kv_bytes_per_token: int = 131072
    step_overhead_ms: float = 1.0
    base_ms: float = 5.0
    prefill_token_ms: float = 0.02
    decode_token_ms: float = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerParams:
    config: SchedulerConfig
    requests: tuple[RequestSpec, ...]
    latency: LatencyParams = LatencyParams()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its requests as one column of values per field (a run's params go to
        its simulation process): a dataclass's own pickling calls ``fields()`` in Python for
        every request both ways (4,096 requests: 13 ms to pickle, 17 ms to read back; this
        about 2 and 4)."""
        columns = [list(map(get, self.requests)) for get in _REQUEST_GETTERS]
        return _params_from_columns, (self.config, self.latency, len(self.requests), columns)


_REQUEST_FIELDS = tuple(f.name for f in fields(RequestSpec))
_REQUEST_GETTERS = tuple(attrgetter(name) for name in _REQUEST_FIELDS)
# each field's slot, set on a new instance as a frozen dataclass's own __init__ does
_REQUEST_SETTERS = tuple(getattr(RequestSpec, name).__set__ for name in _REQUEST_FIELDS)


def _params_from_columns(
    config: SchedulerConfig, latency: LatencyParams, n: int, columns: list[list[Any]]
) -> SchedulerParams:
    """:meth:`SchedulerParams.__reduce__`'s inverse: ``n`` requests, each field's slot set
    from its column."""
    requests = [object.__new__(RequestSpec) for _ in range(n)]
    if any(len(column) != n for column in columns):
        raise ValueError("pickled scheduler requests: a column of the wrong length")
    for put, column in zip(_REQUEST_SETTERS, columns, strict=True):
        deque(map(put, requests, column), maxlen=0)  # (map in C; nothing kept)
    return SchedulerParams(config=config, requests=tuple(requests), latency=latency)


# --- validation -------------------------------------------------------------------------------


Loc = tuple[str | int, ...]


class _Checker(Checker):
    """validate's Checker, where a value out of its range stands in as its default (so no
    later check reasons from it), plus the scheduler's own kinds of field."""

    def integer(
        self,
        raw: Mapping[str, Any],
        key: str,
        loc: Loc,
        default: int,
        *,
        ge: int | None = None,
        le: int | None = None,
    ) -> int:
        if key not in raw:
            return default
        v = raw[key]
        if type(v) is int and (ge is None or v >= ge) and (le is None or v <= le):
            return v  # the common case, as validate's would return it (a run checks 12k)
        before = len(self.issues)
        v = super().integer(raw, key, loc, default=default, ge=ge, le=le)
        return v if len(self.issues) == before else default

    def number_or_default(
        self,
        raw: Mapping[str, Any],
        key: str,
        loc: Loc,
        default: float,
        *,
        ge: float | None = None,
        gt: float | None = None,
        lt: float | None = None,
        le: float | None = None,
    ) -> float:
        """validate's ``number``, but a null is refused (``required`` for a key given as null)
        and a value out of its range stands in as ``default``."""
        before = len(self.issues)
        given_null = key in raw and raw[key] is None
        v = self.number(
            raw, key, loc, default=default, required=given_null, gt=gt, ge=ge, le=le, lt=lt
        )
        return default if v is None or len(self.issues) != before else v

    def boolean(self, raw: Mapping[str, Any], key: str, loc: Loc, default: bool) -> bool:
        if key not in raw:
            return default
        v = raw[key]
        if not isinstance(v, bool):
            self.add(
                (*loc, key),
                msg("{key} must be true or false; you gave {what}", key=key, what=describe(v)),
            )
            return default
        return v

    def int_list(
        self, raw: Mapping[str, Any], key: str, loc: Loc, *, max_len: int
    ) -> tuple[int, ...] | None:
        if key not in raw:
            return None
        v = raw[key]
        if not isinstance(v, (list, tuple)):
            self.add(
                (*loc, key),
                msg(
                    "{key} must be a list of token ids; you gave {what}", key=key, what=describe(v)
                ),
            )
            return None
        if len(v) > max_len:
            self.add(
                (*loc, key),
                msg(
                    "{key} has {n} entries; the limit is {limit}", key=key, n=len(v), limit=max_len
                ),
            )
            return None
        out: list[int] = []
        for j, t in enumerate(v):
            if isinstance(t, float) and t.is_integer():
                t = int(t)
            if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t <= MAX_TOKEN_ID:
                self.add(
                    (*loc, key, j),
                    msg("token ids are whole numbers ≥ 0; you gave {what}", what=describe(t)),
                )
                return None
            out.append(t)
        return tuple(out)


def _parse_config(c: _Checker, raw: Any) -> SchedulerConfig:
    loc: Loc = ("config",)
    d = SchedulerConfig()
    if raw is None:
        return d
    if not isinstance(raw, Mapping):
        c.add(loc, msg("config must be an object; you gave {what}", what=describe(raw)))
        return d
    c.unknown(raw, _CONFIG_KEYS, loc)
    before = len(c.issues)
    cfg = SchedulerConfig(
        max_num_batched_tokens=c.integer(
            raw, "max_num_batched_tokens", loc, d.max_num_batched_tokens, ge=1, le=MAX_BUDGET
        ),
        max_num_seqs=c.integer(raw, "max_num_seqs", loc, d.max_num_seqs, ge=1, le=MAX_REQUESTS),
        block_size=c.integer(raw, "block_size", loc, d.block_size, ge=1, le=MAX_BLOCK_SIZE),
        num_gpu_blocks=c.integer(
            raw, "num_gpu_blocks", loc, d.num_gpu_blocks, ge=2, le=MAX_GPU_BLOCKS
        ),
        enable_chunked_prefill=c.boolean(
            raw, "enable_chunked_prefill", loc, d.enable_chunked_prefill
        ),
        long_prefill_token_threshold=c.integer(
            raw,
            "long_prefill_token_threshold",
            loc,
            d.long_prefill_token_threshold,
            ge=0,
            le=MAX_MODEL_LEN,
        ),
        enable_prefix_caching=c.boolean(raw, "enable_prefix_caching", loc, d.enable_prefix_caching),
        policy="priority"
        if c.choice(raw, "policy", loc, ("fcfs", "priority"), d.policy) == "priority"
        else "fcfs",
        watermark=c.number_or_default(raw, "watermark", loc, d.watermark, ge=0.0, lt=1.0),
        max_model_len=c.integer(raw, "max_model_len", loc, d.max_model_len, ge=2, le=MAX_MODEL_LEN),
        scheduler_reserve_full_isl=c.boolean(
            raw, "scheduler_reserve_full_isl", loc, d.scheduler_reserve_full_isl
        ),
        eos_token_id=c.integer(raw, "eos_token_id", loc, d.eos_token_id, ge=0, le=MAX_TOKEN_ID),
        batching="static"
        if c.choice(raw, "batching", loc, ("continuous", "static"), d.batching) == "static"
        else "continuous",
    )
    if len(c.issues) == before:
        _check_config(c, cfg)
    return cfg


def _check_config(c: _Checker, cfg: SchedulerConfig) -> None:
    """The consistency checks vLLM itself makes (SchedulerConfig.verify_max_model_len and the
    KV-cache capacity check at start-up)."""
    loc: Loc = ("config",)
    if not cfg.enable_chunked_prefill and cfg.max_num_batched_tokens < cfg.max_model_len:
        c.add(
            (*loc, "max_num_batched_tokens"),
            msg(
                "without chunked prefill max_num_batched_tokens ({budget}) must be ≥ "
                "max_model_len ({mml})",
                budget=cfg.max_num_batched_tokens,
                mml=cfg.max_model_len,
            ),
        )
    if cfg.max_num_batched_tokens < cfg.max_num_seqs:
        c.add(
            (*loc, "max_num_batched_tokens"),
            msg(
                "max_num_batched_tokens ({budget}) must be ≥ max_num_seqs ({seqs})",
                budget=cfg.max_num_batched_tokens,
                seqs=cfg.max_num_seqs,
            ),
        )
    if cfg.long_prefill_token_threshold > cfg.max_model_len:
        c.add(
            (*loc, "long_prefill_token_threshold"),
            msg(
                "long_prefill_token_threshold ({threshold}) cannot be greater than max_model_len "
                "({mml})",
                threshold=cfg.long_prefill_token_threshold,
                mml=cfg.max_model_len,
            ),
        )
    usable = (cfg.num_gpu_blocks - 1) * cfg.block_size
    if usable < cfg.max_model_len:
        c.add(
            (*loc, "num_gpu_blocks"),
            msg(
                "{blocks} usable blocks of {bs} tokens hold {usable} tokens, less than one "
                "max_model_len ({mml}) sequence",
                blocks=cfg.num_gpu_blocks - 1,
                bs=cfg.block_size,
                usable=usable,
                mml=cfg.max_model_len,
            ),
        )


def _parse_request(c: _Checker, raw: Any, i: int, cfg: SchedulerConfig) -> RequestSpec | None:
    loc: Loc = ("requests", i)
    if not isinstance(raw, Mapping):
        c.add(loc, msg("each request must be an object; you gave {what}", what=describe(raw)))
        return None
    c.unknown(raw, _REQUEST_KEYS, loc)
    before = len(c.issues)
    rid = raw.get("id")
    if isinstance(rid, int) and not isinstance(rid, bool):
        rid = str(rid)
    if not isinstance(rid, str) or not rid or len(rid) > 64:
        c.add(
            (*loc, "id"),
            msg("id must be a text of 1 to 64 characters; you gave {what}", what=describe(rid)),
        )
        rid = ""
    ids = c.int_list(raw, "prompt_token_ids", loc, max_len=MAX_MODEL_LEN)
    n_prompt = 0
    if "prompt_tokens" in raw:
        n_prompt = c.integer(raw, "prompt_tokens", loc, 0, ge=1, le=MAX_MODEL_LEN)
        if n_prompt == 0 and len(c.issues) == before:
            c.add((*loc, "prompt_tokens"), msg("prompt_tokens must be ≥ 1"))
    if ids is not None:
        if not ids:
            c.add((*loc, "prompt_token_ids"), msg("prompt_token_ids must not be empty"))
        elif "prompt_tokens" in raw and n_prompt and n_prompt != len(ids):
            c.add(
                (*loc, "prompt_tokens"),
                msg(
                    "prompt_tokens ({n}) differs from the {count} prompt_token_ids",
                    n=n_prompt,
                    count=len(ids),
                ),
            )
        n_prompt = len(ids)
    elif "prompt_tokens" not in raw:
        c.add((*loc, "prompt_tokens"), msg("give prompt_tokens (a length) or prompt_token_ids"))
    if n_prompt >= cfg.max_model_len:
        field = "prompt_token_ids" if ids is not None else "prompt_tokens"
        c.add(
            (*loc, field),
            msg(
                "a prompt of {n} tokens leaves no room for output within max_model_len ({mml})",
                n=n_prompt,
                mml=cfg.max_model_len,
            ),
        )
    max_tokens = c.integer(raw, "max_tokens", loc, 16, ge=1, le=MAX_TOKENS_PER_REQUEST)
    arrival_step: int | None = None
    if raw.get("arrival_step") is not None:
        arrival_step = c.integer(raw, "arrival_step", loc, 0, ge=0, le=MAX_ARRIVAL_STEP)
    arrival_time: float | None = None
    if raw.get("arrival_time") is not None:
        arrival_time = c.number_or_default(
            raw, "arrival_time", loc, 0.0, ge=0.0, le=MAX_ARRIVAL_TIME_S
        )
    priority = c.integer(raw, "priority", loc, 0, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    outs = c.int_list(raw, "output_token_ids", loc, max_len=MAX_TOKENS_PER_REQUEST) or ()
    stops = c.int_list(raw, "stop_token_ids", loc, max_len=1024) or ()
    ignore_eos = c.boolean(raw, "ignore_eos", loc, False)
    eos_position: int | None = None
    if raw.get("eos_position") is not None:
        eos_position = c.integer(raw, "eos_position", loc, 1, ge=1, le=MAX_TOKENS_PER_REQUEST)
    if len(c.issues) != before:
        return None
    return RequestSpec(
        id=rid,
        prompt_tokens=n_prompt,
        prompt_token_ids=ids,
        max_tokens=max_tokens,
        arrival_step=arrival_step,
        arrival_time=arrival_time,
        priority=priority,
        output_token_ids=outs,
        stop_token_ids=stops,
        ignore_eos=ignore_eos,
        eos_position=eos_position,
    )


def _parse_latency(c: _Checker, raw: Any) -> LatencyParams:
    loc: Loc = ("latency",)
    d = LatencyParams()
    if raw is None:
        return d
    if not isinstance(raw, Mapping):
        c.add(loc, msg("latency must be an object; you gave {what}", what=describe(raw)))
        return d
    c.unknown(raw, _LATENCY_KEYS, loc)
    mode = c.choice(raw, "mode", loc, ("roofline", "linear"), d.mode)

    def real(key: str) -> float:
        lo, hi = LATENCY_RANGES[key]
        default: float = getattr(d, key)
        if key in LATENCY_POSITIVE:
            return c.number_or_default(raw, key, loc, default, gt=lo, le=hi)
        return c.number_or_default(raw, key, loc, default, ge=lo, le=hi)

    return LatencyParams(
        mode="linear" if mode == "linear" else "roofline",
        model_params_billion=real("model_params_billion"),
        bytes_per_param=real("bytes_per_param"),
        gpu_tflops=real("gpu_tflops"),
        gpu_bandwidth_gbps=real("gpu_bandwidth_gbps"),
        mfu=real("mfu"),
        kv_bytes_per_token=c.integer(
            raw, "kv_bytes_per_token", loc, d.kv_bytes_per_token, ge=0, le=MAX_KV_BYTES_PER_TOKEN
        ),
        step_overhead_ms=real("step_overhead_ms"),
        base_ms=real("base_ms"),
        prefill_token_ms=real("prefill_token_ms"),
        decode_token_ms=real("decode_token_ms"),
    )


def parse(raw: Any) -> SchedulerParams:
    """Validate JSON-shaped parameters; raise ParamError listing every problem found."""
    if isinstance(raw, SchedulerParams):
        return raw
    if not isinstance(raw, Mapping):
        raise ParamError.single(
            (), msg("parameters must be an object; you gave {what}", what=describe(raw))
        )
    c = _Checker()
    c.unknown(raw, _TOP_KEYS, ())
    cfg = _parse_config(c, raw.get("config"))
    latency = _parse_latency(c, raw.get("latency"))
    reqs_raw = raw.get("requests")
    requests: list[RequestSpec] = []
    if not isinstance(reqs_raw, (list, tuple)):
        c.add(
            ("requests",),
            msg("requests must be a list of requests; you gave {what}", what=describe(reqs_raw)),
        )
    elif not reqs_raw:
        c.add(("requests",), msg("requests must hold at least one request"))
    elif len(reqs_raw) > MAX_REQUESTS:
        c.add(
            ("requests",),
            msg(
                "{n} requests; the limit is {limit}",
                n=len(reqs_raw),
                limit=f"{MAX_REQUESTS:,}",
            ),
        )
    else:
        seen: dict[str, int] = {}
        for i, r in enumerate(reqs_raw):
            spec = _parse_request(c, r, i, cfg)
            if spec is None:
                continue
            if spec.id in seen:
                c.add(
                    ("requests", i, "id"),
                    msg(
                        "duplicate id {id} (also request {other})",
                        id=repr(spec.id[:20]),
                        other=seen[spec.id],
                    ),
                )
                continue
            seen[spec.id] = i
            requests.append(spec)
    if c.issues:
        raise ParamError(c.issues)
    return SchedulerParams(config=cfg, requests=tuple(requests), latency=latency)


def dump(p: SchedulerParams) -> dict[str, Any]:
    """The raw JSON-shaped form of ``p`` (every config and latency key, each request's own)."""
    cfg = {k: getattr(p.config, k) for k in _CONFIG_KEYS}
    lat = {k: getattr(p.latency, k) for k in _LATENCY_KEYS}
    reqs: list[dict[str, Any]] = []
    for r in p.requests:
        d: dict[str, Any] = {"id": r.id}
        if r.prompt_token_ids is not None:
            d["prompt_token_ids"] = list(r.prompt_token_ids)
        else:
            d["prompt_tokens"] = r.prompt_tokens
        d["max_tokens"] = r.max_tokens
        if r.arrival_step is not None:
            d["arrival_step"] = r.arrival_step
        if r.arrival_time is not None:
            d["arrival_time"] = r.arrival_time
        d["priority"] = r.priority
        if r.output_token_ids:
            d["output_token_ids"] = list(r.output_token_ids)
        if r.stop_token_ids:
            d["stop_token_ids"] = list(r.stop_token_ids)
        if r.ignore_eos:
            d["ignore_eos"] = True
        if r.eos_position is not None:
            d["eos_position"] = r.eos_position
        reqs.append(d)
    return {"config": cfg, "requests": reqs, "latency": lat}
