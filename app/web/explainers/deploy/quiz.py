"""The deployment explainer's question at a step: what does the next step compute?

Before the KV page size (at the budget step): how many bytes one block of one layer takes on
this GPU. Before ``num_gpu_blocks`` (at the bytes-per-block step): how many blocks vLLM makes of
the KV budget. Before the maximum concurrency: how many requests of ``max_model_len`` fit at
once. Before a step where vLLM refuses the deployment: does it start, and if not, why.

The wrong answers are the usual slips, computed from the same model: forgetting that tensor
parallelism splits the KV heads (every GPU caching all of them), counting K alone (or, for MLA,
a V beside the latent, or sharding the latent by TP), forgetting the block's tokens or its
layers, taking the whole GPU instead of ``gpu_memory_utilization`` of it, and taking the null
block off a second time. Choices differ and are sorted; a step with fewer than two distinct
wrong answers asks nothing."""

from __future__ import annotations

from collections.abc import Iterable

from app.sim.core import Frame, Message, msg
from app.sim.deploy import DeployTrace
from app.sim.deploy.narrate import DeployState, num
from app.sim.deploy.plan import Plan, plan
from app.web.quiz import Question

MAX_WRONG = 3


def question(trace: DeployTrace, step: int) -> Question | None:
    """About frame ``step + 1``; None when the next step is neither the page size, the block
    count nor a refusal (or at the last step)."""
    if not 0 <= step < len(trace.frames) - 1:
        return None
    nxt = trace.frames[step + 1]
    pl = plan(trace.params)
    if nxt.result == "refused":
        return _starts(nxt, pl)
    if nxt.op == "page":
        return _numeric(nxt, pl.layout.page_bytes, _page_slips(pl), _page_prompt(pl))
    if nxt.op == "blocks":
        prompt = msg(
            "The KV budget is {kv} bytes and one block takes {bpb} bytes on this GPU. How many "
            "blocks (num_gpu_blocks) does vLLM make of it?",
            kv=num(pl.limiting.kv_budget),
            bpb=num(pl.limiting.bytes_per_block),
        )
        return _numeric(nxt, pl.num_gpu_blocks, _block_slips(pl), prompt)
    if nxt.op == "concurrency":
        return _concurrency(nxt, pl)
    return None


def _page_prompt(pl: Plan) -> Message:
    p = pl.params
    return msg(
        "With tensor parallel {tp}, block_size {bs} and kv_cache_dtype {dtype}: how many bytes "
        "does one block of one layer (page_size_bytes) take on this GPU?",
        tp=p.tensor_parallel_size,
        bs=p.block_size,
        dtype=p.kv_cache_dtype,
    )


def _page_slips(pl: Plan) -> list[int]:
    """Page sizes a learner gets by a slip, most telling first."""
    p, m, lay = pl.params, pl.params.model, pl.layout
    page, bs = lay.page_bytes, p.block_size
    if lay.mla:
        return [
            page * 2,  # a V beside the latent, as if it were K and V
            page // p.tensor_parallel_size,  # the latent split by TP like heads
            bs * m.kv_lora_rank * lay.dtype_bytes,  # the RoPE part forgotten
            page // bs,  # one token, not a block
        ]
    all_heads = m.num_kv_heads * bs * (lay.head_size + lay.head_size_v) * lay.dtype_bytes
    return [
        all_heads,  # every GPU caching all the KV heads: TP forgotten
        page // 2,  # K without V
        page // bs,  # one token, not a block
        page * 2,  # fp8 counted as 2 bytes, or bf16 as fp32
    ]


def _block_slips(pl: Plan) -> list[int]:
    p, m, lay, s = pl.params, pl.params.model, pl.layout, pl.limiting
    right = pl.num_gpu_blocks
    out: list[int] = []
    if not lay.mla and lay.kv_heads_rank < m.num_kv_heads:
        all_heads = s.bytes_per_block * m.num_kv_heads // lay.kv_heads_rank
        out.append(s.kv_budget // all_heads)  # every GPU caching all the KV heads
    if p.kv_cache_memory_bytes is None and p.gpu_memory_utilization < 1:
        whole = p.gpu.memory_bytes - s.weights_bytes - s.activation_bytes - s.reserve_bytes
        out.append(whole // s.bytes_per_block)  # the whole GPU, not gpu_memory_utilization
    if lay.page_bytes:
        out.append(s.kv_budget // lay.page_bytes)  # one layer's page, not all the layers'
    out.append(right - 1)  # the null block taken off again
    out.append(right * 2)  # K and V counted as one
    return out


def _numeric(
    nxt: Frame[DeployState], right: int, slips: Iterable[int], prompt: Message
) -> Question | None:
    wrong: list[int] = []
    for v in slips:
        if v > 0 and v != right and v not in wrong:
            wrong.append(v)
    if len(wrong) < 2:
        return None
    values = sorted([right, *wrong[:MAX_WRONG]])
    return Question(
        prompt=prompt,
        choices=tuple(Message("{value}", {"value": num(v)}) for v in values),
        correct=values.index(right),
        answer_step=nxt.index,
        explanation=nxt.narration,
    )


def _concurrency(nxt: Frame[DeployState], pl: Plan) -> Question | None:
    """How many requests of max_model_len fit at once, as vLLM logs it (two decimals). Slips:
    the blocks taken for tokens (block_size forgotten), the max_num_seqs setting taken for the
    memory's answer, each tensor-parallel GPU thought to hold requests of its own."""
    p, right = pl.params, pl.max_concurrency
    slips = [right / p.block_size, float(p.max_num_seqs), right * 2]
    if p.tensor_parallel_size > 1:
        slips.insert(0, right * p.tensor_parallel_size)
    fmt = "{:.2f}".format
    wrong: list[str] = []
    for v in slips:
        if v > 0 and fmt(v) != fmt(right) and fmt(v) not in wrong:
            wrong.append(fmt(v))
    values = sorted([right, *[float(w) for w in wrong[:MAX_WRONG]]])
    texts = [fmt(v) for v in values]
    return Question(
        prompt=msg(
            "{blocks} blocks of {bs} tokens: how many requests of max_model_len ({mml} tokens) "
            "fit at once (vLLM's maximum concurrency)?",
            blocks=num(pl.num_gpu_blocks),
            bs=p.block_size,
            mml=num(p.max_model_len),
        ),
        choices=tuple(Message("{value}", {"value": t}) for t in texts),
        correct=texts.index(fmt(right)),
        answer_step=nxt.index,
        explanation=nxt.narration,
    )


REASONS: dict[str, Message] = {
    "": msg("It starts: the model fits"),
    "weights": msg("It does not start: the weights do not fit on one GPU"),
    "no_kv_memory": msg("It does not start: nothing is left for the KV cache"),
    "max_model_len": msg("It does not start: one request of max_model_len does not fit"),
    "pinned_oom": msg("It does not start: the pinned KV budget does not fit beside the rest"),
    "tp_heads": msg("It does not start: tensor parallel does not divide the heads"),
}
MEMORY = ("", "weights", "no_kv_memory", "max_model_len")  # the choices a memory failure offers


def _starts(nxt: Frame[DeployState], pl: Plan) -> Question:
    right = "tp_heads" if pl.failure == "tp_kv_heads" else pl.failure
    keys = list(MEMORY) if right in MEMORY else ["", "weights", "no_kv_memory", right]
    return Question(
        prompt=msg(
            "{model} on {n} × {gpu}: does vLLM start with this deployment?",
            model=pl.params.model.name,
            n=pl.params.num_gpus,
            gpu=pl.params.gpu.name,
        ),
        choices=tuple(REASONS[k] for k in keys),
        correct=keys.index(right),
        answer_step=nxt.index,
        explanation=nxt.narration,
    )
