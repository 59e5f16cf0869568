"""Shared vocabulary of every simulation: the explainer contract, traces, frames, source
references, messages and input errors."""

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.explainer import (
    Cancelled,
    EncodedJSON,
    Explainer,
    Limits,
    Preset,
    Progress,
    ResultKind,
)
from app.sim.core.i18n import Message, msg
from app.sim.core.sources import LINUX_6_4, VLLM_0_33, SourceProject, SourceRef
from app.sim.core.trace import Field, Frame, Trace

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
