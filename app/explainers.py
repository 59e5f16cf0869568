"""The one list of explainers: each is its simulation (``app/sim/<pkg>``) and its web view
(``app/web/explainers/<name>``). Adding an explainer is one line here; see
docs/adding-an-explainer.md."""

from __future__ import annotations

from app.sim.congestion import CwndExplainer
from app.sim.deploy import DeployExplainer
from app.sim.path.explainer import PathExplainer
from app.sim.serving import SchedulerExplainer
from app.sim.skbuff import SkbExplainer
from app.sim.tcp import TcpExplainer
from app.web.explainers import cwnd, deploy, path, scheduler, skb, tcp
from app.web.plugin import Plugin


def builtin() -> tuple[Plugin, ...]:
    """Every explainer, in the suggested course order (``Plugin.course_order``): the packet,
    its paths through the kernel, TCP, congestion control, then LLM serving's scheduler and
    the deployment that sizes its KV cache."""
    plugins = (
        Plugin(sim=SkbExplainer(), web=skb.VIEW, course_order=10, first_walkthrough="tcp-transmit"),
        Plugin(sim=CwndExplainer(), web=cwnd.VIEW, course_order=40, first_walkthrough="slow-start"),
        Plugin(sim=TcpExplainer(), web=tcp.VIEW, course_order=30, first_walkthrough="handshake"),
        Plugin(
            sim=PathExplainer(), web=path.VIEW, course_order=20, first_walkthrough="send-segment"
        ),
        Plugin(
            sim=SchedulerExplainer(),
            web=scheduler.VIEW,
            course_order=50,
            first_walkthrough="continuous-batching",
        ),
        Plugin(
            sim=DeployExplainer(), web=deploy.VIEW, course_order=60, first_walkthrough="8b-one-h100"
        ),
    )
    return tuple(sorted(plugins, key=lambda p: p.course_order))
