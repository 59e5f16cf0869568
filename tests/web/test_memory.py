"""An app worker's memory stays flat: few malloc arenas, free pages given back, and the trace
cache bounded in the memory traces really take once decoded."""

from __future__ import annotations

import gc
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from app import explainers
from app.settings import Settings
from app.store.db import init_db, make_engine
from app.web import memory
from app.web.runs import RunService, decode_trace_sized, encode_trace
from tests.probes import probe_output

GLIBC = memory._LIBC is not None

# Allocates ~200 MB in blocks glibc serves from its heap (over pymalloc's 512 B, under the
# mmap threshold), frees all but the last (which pins the top of the heap, so free() cannot
# shrink it), and prints RSS before and after trimming.
TRIM_PROBE = textwrap.dedent(
    """
    import re
    from pathlib import Path
    from app.web import memory

    def rss():
        status = Path("/proc/self/status").read_text()
        return int(re.search(r"VmRSS:\\s+(\\d+)", status).group(1)) // 1024

    blocks = [bytes(2000) for _ in range(100_000)]
    last = blocks[-1]
    del blocks
    before = rss()
    memory.trim()
    print(before, rss())
    """
)


@pytest.mark.skipif(not GLIBC, reason="malloc_trim and mallopt are glibc's")
def test_trim_gives_freed_heap_back_to_the_system() -> None:
    out = probe_output(TRIM_PROBE)
    before, after = map(int, out.split())
    assert before > 150, f"the probe should hold its freed heap before trimming ({before} MB)"
    assert after < before - 150, f"trim gave back too little: {before} → {after} MB"


@pytest.mark.skipif(not GLIBC, reason="malloc_trim and mallopt are glibc's")
def test_arena_limit_is_taken_and_zero_leaves_glibc_alone() -> None:
    assert memory.limit_arenas(0) is False
    assert memory.limit_arenas(Settings().malloc_arenas) is True


def test_trimmer_thread_starts_and_stops() -> None:
    trimmer = memory.Trimmer(0.01)
    trimmer.start()
    assert (trimmer._thread is not None) == GLIBC
    trimmer.stop()
    assert trimmer._thread is None
    off = memory.Trimmer(0)
    off.start()
    assert off._thread is None


def decoded_bytes(data: bytes) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        trace, _ = decode_trace_sized(data)
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        del trace


@pytest.mark.parametrize("plugin", explainers.builtin(), ids=lambda p: p.name)
def test_decoded_size_estimate_is_not_below_the_real_one(plugin: explainers.Plugin) -> None:
    """The trace cache counts each trace at its estimated decoded size: for every explainer's
    first preset that estimate is at least what tracemalloc measures, and not wildly more."""
    preset = plugin.sim.presets[0]
    trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)), lambda done, total: None)
    data = encode_trace(trace)
    del trace
    real = decoded_bytes(data)
    _, estimate = decode_trace_sized(data)
    assert real <= estimate <= 3 * real, (plugin.name, real, estimate)


def test_trace_cache_holds_no_more_than_its_bound(tmp_path: Path) -> None:
    """Traces read back from the store fill the in-memory cache up to its bound (counted at
    their decoded size), then push the oldest out; one larger than an eighth is not kept."""
    engine = make_engine(f"sqlite:///{tmp_path / 'cache.db'}")
    init_db(engine)
    settings = Settings(database_url=str(engine.url), trace_cache_mb=2)
    service = RunService(settings, engine)
    tcp = next(p for p in explainers.builtin() if p.name == "tcp")
    sizes = {}
    for preset in tcp.sim.presets:
        params = tcp.sim.parse(dict(preset.params))
        key = service.key(tcp.sim, params)
        data = encode_trace(tcp.sim.run(params, lambda d, t: None))
        service._keep(key, tcp.sim, data)
        sizes[key] = decode_trace_sized(data)[1]
    for key in sizes:
        assert service.cached(key) is not None
    cache = service._cache
    kept = [key for key, size in sizes.items() if size <= cache.max_bytes // 8]
    assert sum(sizes[k] for k in kept) > cache.max_bytes, "the presets should overfill 2 MB"
    assert cache.used == sum(size for _, size in cache._items.values()) <= cache.max_bytes
    assert kept[-1] in cache._items and kept[0] not in cache._items
    assert all(key in kept for key in cache._items)


def test_every_preset_fits_in_the_default_trace_cache() -> None:
    """The default bound keeps every explainer's presets decoded at once (what a lecture uses),
    each well under the eighth of the cache one trace may take."""
    bound = Settings().trace_cache_mb * 1024 * 1024
    total = 0
    for plugin in explainers.builtin():
        for preset in plugin.sim.presets:
            trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)), lambda d, t: None)
            _, size = decode_trace_sized(encode_trace(trace))
            assert size <= bound // 8, (plugin.name, preset.slug, size)
            total += size
    assert total <= bound, f"presets take {total / 2**20:.0f} MB decoded, the cache holds less"
