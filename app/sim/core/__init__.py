"""Shared vocabulary of every simulation: traces, frames, source references, input errors."""

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.trace import Field, Frame, SourceRef, Trace

__all__ = ["Field", "Frame", "ParamError", "ParamIssue", "SourceRef", "Trace"]
