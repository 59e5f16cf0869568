"""The TCP connection-lifecycle explainer (simulation half)."""

from app.sim.tcp.explainer import TcpExplainer

__all__ = ["TcpExplainer"]
