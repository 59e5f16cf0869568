"""Shared vocabulary of every simulation: the explainer contract, traces, frames, source
references, messages and input errors."""

from app.sim.native import use_native

use_native(__name__, __path__)  # the compiled hot modules, when built and current

from app.sim.core.errors import ParamError, ParamIssue  # noqa: E402
from app.sim.core.explainer import (  # noqa: E402
    Cancelled,
    EncodedJSON,
    Explainer,
    Limits,
    Preset,
    Progress,
    ResultKind,
)
from app.sim.core.i18n import Message, msg  # noqa: E402
from app.sim.core.sources import LINUX_6_4, VLLM_0_33, SourceProject, SourceRef  # noqa: E402
from app.sim.core.trace import Field, Frame, Trace  # noqa: E402

__all__ = [
    "LINUX_6_4",
    "VLLM_0_33",
    "Cancelled",
    "EncodedJSON",
    "Explainer",
    "Field",
    "Frame",
    "Limits",
    "Message",
    "ParamError",
    "ParamIssue",
    "Preset",
    "Progress",
    "ResultKind",
    "SourceProject",
    "SourceRef",
    "Trace",
    "msg",
]
