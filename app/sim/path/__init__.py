"""The packet-path explainer (issue #13): Linux 6.4 TX, RX, NAPI/GRO, loopback, veth,
forwarding, drops, a container's bridge/NAT path and VXLAN, one frame per function."""

from app.sim.path.explainer import EXPLAINER, PathExplainer
from app.sim.path.params import PathParams

__all__ = ["EXPLAINER", "PathExplainer", "PathParams"]
