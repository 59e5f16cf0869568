"""The cyclic garbage collector in an app worker: fewer and shorter full collections.

A full collection walks every container object the process has, with the GIL held: whichever
thread sets it off, the worker's event loop waits (``bench/soak.py``'s loop watch logged full
collections of 0.3-5 s on a loaded machine, the cheap requests' tail). An app worker has few
objects that are ever garbage in a cycle and many that live as long as it does: modules,
templates, the preset traces it decoded, the pages' replays. So:

* :func:`configure`: the youngest generation is collected after ``threshold0`` more
  allocations than deallocations (Python's default: 700). A request's objects are mostly gone
  by then; at 700, every collection in the middle of a request moved its live objects on,
  towards the old generation, whose growth by a quarter is what starts a full collection.
* :func:`freeze`: when the worker has started, and again once its warm-up is over (its
  presets stored and pages kept), one full collection, then everything left is moved out of
  the collector's sight (``gc.freeze``): later full collections walk only what came after.
  Simulation processes forked after it share those pages with the worker for good (a
  collection writes to every object it walks, which copied them).

Set by ``APP_GC_THRESHOLD`` (0: Python's defaults, no freeze). Freezing is for a server's
workers (``APP_WARM_PRESETS``, which ``scripts/serve`` turns on): a process that builds many
apps, as the tests do, would keep every one of them.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger("stepscope")


def configure(threshold0: int) -> bool:
    """Collect the youngest generation every ``threshold0`` net allocations (0: leave Python's
    defaults). Answers whether anything changed."""
    if threshold0 <= 0:
        return False
    _, t1, t2 = gc.get_threshold()
    gc.set_threshold(threshold0, t1, t2)
    return True


def freeze() -> float:
    """Collect, then keep every object now alive out of later collections; answers the
    seconds it took."""
    t0 = time.monotonic()
    gc.collect()
    gc.freeze()
    took = time.monotonic() - t0
    log.info("gc: %d objects frozen (%.2f s)", gc.get_freeze_count(), took)
    return took
