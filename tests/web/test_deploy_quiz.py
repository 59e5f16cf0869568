"""The deployment explainer's questions (issue 27 for issue 26's explainer): the right choice is
the figure the answer step shows, the wrong ones are slips computed from the same deployment
(TP not splitting the KV heads, the whole GPU instead of gpu_memory_utilization, K alone), and
a deployment vLLM refuses asks whether it starts."""

from __future__ import annotations

from typing import Any

from app.sim.deploy.explainer import DeployExplainer
from app.sim.deploy.narrate import num
from app.sim.deploy.plan import plan
from app.web import i18n
from app.web.explainers.deploy import VIEW
from app.web.explainers.deploy.quiz import question


def _trace(**params: Any) -> Any:
    ex = DeployExplainer()
    return ex.run(ex.parse(params))


def _preset(slug: str) -> Any:
    ex = DeployExplainer()
    preset = ex.preset(slug)
    assert preset is not None
    return ex.run(ex.parse(dict(preset.params)))


def _ops(trace: Any) -> list[str]:
    return [f.op for f in trace.frames]


def _field(frame: Any, name: str) -> Any:
    return next(f.value for f in frame.fields if f.name == name)


def test_the_view_asks_the_deploy_questions() -> None:
    assert VIEW.question is question


def test_num_gpu_blocks_with_tp_and_whole_gpu_slips() -> None:
    trace = _preset("70b-tp4")
    at = _ops(trace).index("blocks") - 1
    q = question(trace, at)
    assert q is not None and q.answer_step == at + 1
    choices = [i18n.render(c) for c in q.choices]
    assert len(set(choices)) == len(choices) == 4
    shown = _field(trace.frames[q.answer_step], "num_gpu_blocks")
    assert choices[q.correct] == num(shown)
    pl = plan(trace.params)
    s, m = pl.limiting, pl.params.model
    # 8 KV heads over TP 4: forgetting the split makes a block 4× bigger
    all_heads = s.kv_budget // (s.bytes_per_block * m.num_kv_heads // pl.layout.kv_heads_rank)
    whole = (
        pl.params.gpu.memory_bytes - s.weights_bytes - s.activation_bytes - s.reserve_bytes
    ) // s.bytes_per_block
    assert num(all_heads) in choices and num(whole) in choices
    assert all_heads < shown < whole
    assert "num_gpu_blocks" in i18n.render(q.prompt)
    assert q.explanation == trace.frames[q.answer_step].narration
    assert question(trace, at) == q  # deterministic


def test_page_size_slips_and_zh() -> None:
    trace = _preset("70b-tp4")
    at = _ops(trace).index("page") - 1
    q = question(trace, at)
    assert q is not None
    choices = [i18n.render(c) for c in q.choices]
    page = _field(trace.frames[q.answer_step], "page_size_bytes")
    assert choices[q.correct] == num(page)
    assert num(page * 4) in choices  # all 8 KV heads instead of 2 per GPU
    assert num(page // 2) in choices  # K without V
    assert "page_size_bytes" in i18n.render(q.prompt, "zh-CN")
    assert i18n.render(q.prompt, "zh-CN") != i18n.render(q.prompt, "en")


def test_mla_page_slips_are_about_the_latent() -> None:
    trace = _preset("mla")
    q = question(trace, _ops(trace).index("page") - 1)
    assert q is not None
    choices = [i18n.render(c) for c in q.choices]
    page = _field(trace.frames[q.answer_step], "page_size_bytes")
    assert choices[q.correct] == num(page)
    assert num(page * 2) in choices and num(page // 8) in choices  # a V; split by TP 8


def test_a_refused_deployment_asks_whether_it_starts() -> None:
    trace = _preset("does-not-fit")
    last = trace.frames[-1]
    assert last.result == "refused"
    q = question(trace, last.index - 1)
    assert q is not None and q.answer_step == last.index
    right = i18n.render(q.choices[q.correct])
    code = plan(trace.params).failure
    assert right.startswith("It does not start")
    assert ("KV cache" in right) == (code == "no_kv_memory")
    assert ("max_model_len" in right) == (code == "max_model_len")
    assert any(i18n.render(c).startswith("It starts") for c in q.choices)
    # weights that cannot fit: the same question, another right answer
    heavy = _trace(model="llama-3.1-70b", gpu="h100-80gb")
    hq = question(heavy, len(heavy.frames) - 2)
    assert hq is not None and "weights" in i18n.render(hq.choices[hq.correct])


def test_steps_without_a_question() -> None:
    trace = _preset("8b-one-h100")
    asked = [i for i in range(len(trace.frames)) if question(trace, i) is not None]
    ops = _ops(trace)
    assert [ops[i + 1] for i in asked] == ["page", "blocks", "concurrency"]
    assert question(trace, len(trace.frames) - 1) is None
    assert question(trace, -1) is None


def test_max_concurrency_with_tp_and_max_num_seqs_slips() -> None:
    trace = _preset("70b-tp4")
    q = question(trace, _ops(trace).index("concurrency") - 1)
    assert q is not None
    choices = [i18n.render(c) for c in q.choices]
    conc = _field(trace.frames[q.answer_step], "max_concurrency")
    assert choices[q.correct] == f"{conc:.2f}"
    pl = plan(trace.params)
    assert f"{pl.max_concurrency * 4:.2f}" in choices  # each of the 4 GPUs thought separate
    assert f"{pl.params.max_num_seqs:.2f}" in choices  # the setting, not the memory
    assert len(set(choices)) == len(choices) == 4
    assert "max_model_len" in i18n.render(q.prompt, "zh-CN")
