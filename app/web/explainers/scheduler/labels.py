"""The words the scheduler's pictures print, rendered when a picture is drawn (so in the reader's
language: ``str(message)`` follows the request's language), never at import.

Each table maps a state name (an identifier the simulation records) to its catalog message.
"""

from __future__ import annotations

from app.sim.core import Message, msg
from app.web.explainers.scheduler import derive as dv

# What a request's tokens were this step (Spend.kinds).
KIND = {
    "prefill": msg("prefill chunk"),
    "decode": msg("decode"),
    "recompute": msg("recompute"),
}
# Where a request stands (ReqView.phase).
PHASE = {
    "waiting": msg("waiting"),
    "preempted": msg("preempted"),
    "prefill": msg("prefill chunk"),
    "decode": msg("decode"),
    "finished": msg("finished"),
}
QUEUE = {
    "running": msg("running"),
    "waiting": msg("waiting"),
    "finished": msg("finished"),
}
# Why the head of the waiting queue was not admitted (StepState.waiting_stop).
STOP = {
    "head_of_line": msg("blocked (head of line)"),
    "kv_full_sequence": msg("waits: KV blocks"),
    "kv_chunk": msg("waits: KV blocks"),
    "max_num_seqs": msg("waits: max_num_seqs"),
    "budget": msg("waits: budget spent"),
    "static_batch_running": msg("waits: batch running"),
    "preempted_this_step": msg("waits: preemption"),
}
# The timeline's phase of a request at a step (derive's codes).
TIMELINE = {
    dv.WAITING: msg("waiting"),
    dv.STALLED: msg("running, no tokens"),
    dv.DECODE: msg("decode"),
    dv.PREFILL: msg("prefill chunk"),
    dv.RECOMPUTE: msg("recompute"),
    dv.PREEMPTED_WAIT: msg("preempted, waiting"),
    dv.PREEMPTED: msg("preempted"),
}


def word(table: dict[str, Message], key: str) -> str:
    """``table[key]`` in the reader's language (an unknown key as it is)."""
    found = table.get(key)
    return str(found) if found is not None else key
