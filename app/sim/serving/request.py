"""A request as the scheduler sees it, and when it stops (vllm/v1/request.py, vllm/v1/core/sched/utils.py).

Outputs are deterministic (``output_token_ids``, ``eos_position``, else a filler id that is
neither EOS nor a stop id), so the output count at which ``check_stop`` first stops a request
is known when it is created (:func:`finish_point`).
"""

from __future__ import annotations

from typing import Final

from app.sim.serving.params import RequestSpec

# RequestStatus, reduced to what the scheduler tells apart (``is_finished(s) = s > PREEMPTED``).
WAITING: Final = 0
RUNNING: Final = 1
PREEMPTED: Final = 2
FINISHED: Final = 3


def token_at(spec: RequestSpec, j: int, eos: int, filler: int) -> int:
    """The token id the model emits as output number ``j`` (0-based) of ``spec``."""
    if spec.eos_position is not None and j + 1 == spec.eos_position:
        return eos
    if j < len(spec.output_token_ids):
        return spec.output_token_ids[j]
    return filler


def filler_token(spec: RequestSpec, eos: int) -> int:
    """The default emitted token: the smallest id that is neither EOS nor a stop id."""
    banned = {eos, *spec.stop_token_ids}
    t = 0
    while t in banned:
        t += 1
    return t


def check_stop(
    token: int, num_tokens: int, num_output: int, spec: RequestSpec, eos: int, max_model_len: int
) -> str | None:
    """``check_stop`` (vllm/v1/core/sched/utils.py) after one appended token: EOS, then a stop
    token id, then the length cap (``num_tokens >= max_model_len`` or
    ``num_output_tokens >= max_tokens``). Returns the finish reason or None."""
    if token == eos and not spec.ignore_eos:
        return "stop"
    if token in spec.stop_token_ids:
        return "stop"
    if num_tokens >= max_model_len or num_output >= spec.max_tokens:
        return "length"
    return None


def finish_point(spec: RequestSpec, eos: int, max_model_len: int) -> tuple[int, str]:
    """The output count at which ``check_stop`` first stops ``spec``, and why.

    Outputs are deterministic, so this is known up front: only explicit ``output_token_ids``
    and ``eos_position`` can be stop tokens (the filler never is), so the scan is short."""
    len_at = min(spec.max_tokens, max_model_len - spec.prompt_tokens)
    filler = filler_token(spec, eos)
    candidates = list(range(1, min(len(spec.output_token_ids), len_at) + 1))
    if spec.eos_position is not None and spec.eos_position <= len_at:
        candidates.append(spec.eos_position)
    for j in sorted(set(candidates)):
        tok = token_at(spec, j - 1, eos, filler)
        reason = check_stop(tok, spec.prompt_tokens + j, j, spec, eos, max_model_len)
        if reason is not None:
            return j, reason
    return len_at, "length"


class Req:
    """A request's live state (vLLM's ``Request`` fields that the scheduler reads)."""

    __slots__ = (
        "idx",
        "rid",
        "spec",
        "prompt_len",
        "num_tokens",
        "computed",
        "num_output",
        "blocks",
        "cap",
        "num_cached",
        "status",
        "pkey",
        "tokens",
        "hashes",
        "finish_out",
        "finish_reason",
        "filler",
        "preemptions",
        "t_arrival",
        "t_first_sched",
        "t_first_token",
        "t_last_token",
        "t_finish",
        "max_itl",
        "step_arrival",
        "step_finish",
        "hit_tokens",
    )

    def __init__(self, idx: int, spec: RequestSpec, eos: int, max_model_len: int) -> None:
        self.idx = idx
        self.rid = spec.id
        self.spec = spec
        self.prompt_len = spec.prompt_tokens
        self.num_tokens = spec.prompt_tokens
        self.computed = 0
        self.num_output = 0
        self.blocks: list[int] = []
        self.cap = 0  # len(blocks) * block_size: token slots held
        self.num_cached = 0
        self.status = WAITING
        self.pkey: tuple[int, float] = (spec.priority, 0.0)
        self.tokens: list[int] | None = (
            list(spec.prompt_token_ids) if spec.prompt_token_ids is not None else None
        )
        self.hashes: list[int] = []
        self.finish_out, self.finish_reason = finish_point(spec, eos, max_model_len)
        self.filler = filler_token(spec, eos)
        self.preemptions = 0
        self.t_arrival = 0.0
        self.t_first_sched = -1.0
        self.t_first_token = -1.0
        self.t_last_token = -1.0
        self.t_finish = -1.0
        self.max_itl = 0.0
        self.step_arrival = -1
        self.step_finish = -1
        self.hit_tokens = 0  # prefix-cache hit tokens over all admissions
