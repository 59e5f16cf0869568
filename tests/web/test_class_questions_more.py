"""Questions from the packet-path and vLLM scheduler traces (issue 27, "What happens next?"):
the right choice is what the answer step's frame shows, the choices are distinct, and a step
with nothing to ask has no question."""

from __future__ import annotations

from typing import Any

from app.sim.core import Trace
from app.sim.path.explainer import PathExplainer
from app.sim.serving.explainer import SchedulerExplainer
from app.web import i18n
from app.web.explainers.path import VIEW as PATH_VIEW
from app.web.explainers.path.quiz import question as path_question
from app.web.explainers.scheduler import VIEW as SCHED_VIEW
from app.web.explainers.scheduler.quiz import question as sched_question
from app.web.quiz import Question


def _run(explainer: Any, slug: str) -> Trace[Any, Any]:
    preset = explainer.preset(slug)
    assert preset is not None
    trace: Trace[Any, Any] = explainer.run(explainer.parse(preset.params))
    return trace


def _choices(q: Question) -> list[str]:
    return [i18n.render(c) for c in q.choices]


def test_views_register_the_questions() -> None:
    assert PATH_VIEW.question is path_question
    assert SCHED_VIEW.question is sched_question


def test_path_asks_for_the_next_function_of_the_walk() -> None:
    trace = _run(PathExplainer(), "send-segment")
    functions = [f.state["function"] for f in trace.frames]
    step = functions.index("ip_output")
    q = path_question(trace, step)
    assert q is not None
    choices = _choices(q)
    assert 3 <= len(choices) <= 4 and len(set(choices)) == len(choices)
    assert choices[q.correct] == trace.frames[q.answer_step].state["function"]
    assert q.answer_step == step + 1 and choices[q.correct] == functions[step + 1]
    assert "ip_output" in i18n.render(q.prompt)
    assert "函数" in i18n.render(q.prompt, "zh-CN")  # rendered per reader, translated
    assert set(choices) <= set(functions) and "ip_output" not in choices
    assert path_question(trace, step) == q  # deterministic
    # __tcp_transmit_skb spans two frames: the answer is the function after it, not itself
    twice = functions.index("__tcp_transmit_skb")
    again = path_question(trace, twice)
    assert again is not None and _choices(again)[again.correct] == "__ip_queue_xmit"
    assert path_question(trace, len(functions) - 1) is None  # the walk ends: nothing next


def test_scheduler_asks_which_request_is_admitted_or_preempted() -> None:
    trace = _run(SchedulerExplainer(), "preemption-fcfs")
    frames = trace.frames
    step = next(i for i in range(len(frames) - 1) if frames[i + 1].state["preempted"])
    q = sched_question(trace, step)
    assert q is not None and q.answer_step == step + 1
    choices = _choices(q)
    assert len(set(choices)) == len(choices) >= 2
    preempted = frames[step + 1].state["preempted"]
    assert [c for c in choices if c in preempted] == [choices[q.correct]]
    batching = _run(SchedulerExplainer(), "continuous-batching")
    later = next(i for i in range(1, len(batching.frames)) if batching.frames[i].state["admitted"])
    q = sched_question(batching, later - 1)
    assert q is not None
    admitted = batching.frames[later].state["admitted"]
    choices = _choices(q)
    assert [c for c in choices if c in admitted] == [choices[q.correct]]
    assert "admit" in i18n.render(q.prompt) and "接纳" in i18n.render(q.prompt, "zh-CN")


def test_scheduler_asks_how_many_blocks_are_free() -> None:
    trace = _run(SchedulerExplainer(), "continuous-batching")
    frames = trace.frames
    step = next(
        i
        for i in range(len(frames) - 1)
        if not frames[i + 1].state["admitted"]
        and not frames[i + 1].state["preempted"]
        and frames[i + 1].state["kv"]["free"] != frames[i].state["kv"]["free"]
    )
    q = sched_question(trace, step)
    assert q is not None
    choices = _choices(q)
    before, after = frames[step].state["kv"]["free"], frames[step + 1].state["kv"]["free"]
    assert choices[q.correct] == str(after) and len(set(choices)) == len(choices) >= 3
    assert str(before) in choices  # "nothing changes" is offered, and wrong
    assert str(before) in i18n.render(q.prompt) and "空闲" in i18n.render(q.prompt, "zh-CN")
    # a decode step that allocates and frees nothing and admits nobody has no question
    quiet = next(
        i
        for i in range(len(frames) - 1)
        if not frames[i + 1].state["admitted"]
        and not frames[i + 1].state["preempted"]
        and frames[i + 1].state["kv"]["free"] == frames[i].state["kv"]["free"]
    )
    assert sched_question(trace, quiet) is None
    assert sched_question(trace, len(frames) - 1) is None
