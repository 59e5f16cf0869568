"""The one list of explainers: each is its simulation (``app/sim/<pkg>``) and its web view
(``app/web/explainers/<name>``). Adding an explainer is one line here; see
docs/adding-an-explainer.md."""

from __future__ import annotations

from app.sim.congestion import CwndExplainer
from app.sim.path.explainer import PathExplainer
from app.sim.serving import SchedulerExplainer
from app.sim.skbuff import SkbExplainer
from app.sim.tcp import TcpExplainer
from app.web.explainers import cwnd, path, scheduler, skb, tcp
from app.web.plugin import Plugin


def builtin() -> tuple[Plugin, ...]:
    return (
        Plugin(sim=SkbExplainer(), web=skb.VIEW),
        Plugin(sim=CwndExplainer(), web=cwnd.VIEW),
        Plugin(sim=TcpExplainer(), web=tcp.VIEW),
        Plugin(sim=PathExplainer(), web=path.VIEW),
        Plugin(sim=SchedulerExplainer(), web=scheduler.VIEW),
    )
