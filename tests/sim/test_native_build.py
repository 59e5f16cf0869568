"""The mypyc-compiled hot modules (scripts/build_native.py, app/sim/native.py): loaded when built
from the sources on disk, never when ``APP_NATIVE=0`` or a source changed, and giving every
preset's trace exactly as the pure modules do.

Needs the build (``.venv/bin/python scripts/build_native.py``, which scripts/_bootstrap.sh
runs); without it (no C compiler) these tests skip and the pure modules are what runs.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.sim.native import compiled
from tests.contract.trace_digest import DIGESTS

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_native", ROOT / "scripts/build_native.py")
assert _spec is not None and _spec.loader is not None
build_native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_native)

MODULES = {
    group: [p.removesuffix(".py").replace("/", ".") for p in paths]
    for group, paths in build_native.GROUPS.items()
}
COMPILED = [m for mods in MODULES.values() for m in mods]
# the explainers whose simulations run compiled code (app.sim.core's hot modules serve tcp too)
EXPLAINERS = ("cwnd", "scheduler", "tcp")


def _built() -> bool:
    have = build_native.read_manifest()
    return all(have.get(g) == build_native.wanted(g) for g in build_native.GROUPS)


pytestmark = pytest.mark.skipif(
    not _built(), reason="no current native build (scripts/build_native.py)"
)


def _child(code: str, native: bool, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("APP_NATIVE", "APP_NATIVE_DIR")}
    if not native:
        env["APP_NATIVE"] = "0"
    env["PYTHONPATH"] = str(cwd)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


WHICH = (
    "import importlib, json\n"
    f"mods = {COMPILED!r}\n"
    "print(json.dumps({m: importlib.import_module(m).__file__ for m in mods}))\n"
)


def test_the_compiled_modules_are_imported() -> None:
    """With the build current, every module of every group is its extension, in this process
    (the test run's) and in a fresh one; ``APP_NATIVE=0`` gives the ``.py`` files."""
    out = _child(WHICH, native=True)
    assert out.returncode == 0, out.stderr
    files = json.loads(out.stdout)
    native = ROOT / ".native"
    for group, mods in MODULES.items():
        for m in mods:
            assert Path(files[m]).is_relative_to(native / group), (m, files[m])
            assert not files[m].endswith(".py")
    assert "RuntimeWarning" not in out.stderr
    if os.environ.get("APP_NATIVE") != "0":
        assert all(compiled(importlib.import_module(m)) for m in COMPILED)

    pure = _child(WHICH, native=False)
    assert pure.returncode == 0, pure.stderr
    for m, f in json.loads(pure.stdout).items():
        assert f == str(ROOT / (m.replace(".", "/") + ".py")), (m, f)


DIGEST = (
    "import json\n"
    "from app.explainers import builtin\n"
    "from app.sim.native import compiled\n"
    "import app.sim.congestion.engine as e\n"
    "from tests.contract.trace_digest import digest\n"
    f"names = {EXPLAINERS!r}\n"
    "out = {'compiled': compiled(e)}\n"
    "for plugin in builtin():\n"
    "    sim = plugin.sim\n"
    "    if sim.name in names:\n"
    "        out[sim.name] = {p.slug: digest(sim.run(sim.parse(dict(p.params))))\n"
    "                         for p in sim.presets}\n"
    "print(json.dumps(out))\n"
)


@pytest.fixture(scope="module")
def native_traces() -> dict[str, dict[str, tuple[Any, str]]]:
    """Every preset's trace of the explainers that run compiled code, run in this process, and
    its digest: {explainer: {slug: (trace, digest)}}. Run once for the tests below that read
    them (each preset run and digested again per test cost seconds of CPU)."""
    from app.explainers import builtin
    from tests.contract.trace_digest import digest

    out: dict[str, dict[str, tuple[Any, str]]] = {}
    for plugin in builtin():
        sim = plugin.sim
        if sim.name in EXPLAINERS:
            traces = [(p.slug, sim.run(sim.parse(dict(p.params)))) for p in sim.presets]
            out[sim.name] = {slug: (trace, digest(trace)) for slug, trace in traces}
    return out


def _native_here() -> bool:
    """Whether every compiled module is its extension in this process (not under APP_NATIVE=0)."""
    return all(compiled(importlib.import_module(m)) for m in COMPILED)


def test_every_preset_digest_is_the_same_both_ways(
    native_traces: dict[str, dict[str, tuple[Any, str]]],
) -> None:
    """Every preset of the explainers that run compiled code gives the recorded trace digest
    with the compiled modules and with the pure ones (a fresh process). The compiled side is
    this process's own run when it has every compiled module loaded (as the test run has,
    unless APP_NATIVE=0), else a fresh process's."""
    pure_out = _child(DIGEST, native=False)
    assert pure_out.returncode == 0, pure_out.stderr
    pure = json.loads(pure_out.stdout)
    if _native_here():
        with_native: dict[str, Any] = {
            name: {slug: d for slug, (_, d) in rows.items()} for name, rows in native_traces.items()
        }
    else:
        out = _child(DIGEST, native=True)
        assert out.returncode == 0, out.stderr
        with_native = json.loads(out.stdout)
        assert with_native.pop("compiled") is True
    assert pure.pop("compiled") is False
    assert with_native == pure
    recorded = json.loads(DIGESTS.read_text(encoding="utf-8"))
    for name in EXPLAINERS:
        assert with_native[name], name
        for slug, d in with_native[name].items():
            assert recorded[name][slug] == d, (name, slug)


STEPS = (
    "import hashlib, json\n"
    "from app.sim.native import compiled\n"
    "from app.sim.serving import SchedulerExplainer, stepedits, stepjson\n"
    "from app.sim.serving.run import simulate\n"
    "ex = SchedulerExplainer()\n"
    "def pressure(policy):\n"
    "    cfg = {'num_gpu_blocks': 40, 'max_model_len': 256, 'max_num_batched_tokens': 256,\n"
    "           'max_num_seqs': 8, 'policy': policy}\n"
    "    reqs = [{'id': f'q\"{i}\u65b0', 'prompt_tokens': 40 + 7 * (i % 5),\n"
    "             'max_tokens': 30 + 11 * (i % 4), 'arrival_step': i // 3, 'priority': i % 3}\n"
    "            for i in range(60)]\n"
    "    return {'config': cfg, 'requests': reqs}\n"
    "raws = {p.slug: dict(p.params) for p in ex.presets}\n"
    "raws |= {'pressure-' + pol: pressure(pol) for pol in ('fcfs', 'priority')}\n"
    "out = {'compiled': compiled(stepjson) and compiled(stepedits)}\n"
    "for name, raw in raws.items():\n"
    "    p = ex.parse(raw)\n"
    "    se = simulate(p).series\n"
    "    body = stepjson.steps_bytes(p, se)\n"
    "    edits = stepedits.edit_steps_bytes(p, se)\n"
    "    out[name] = [len(body), hashlib.sha256(body).hexdigest(), hashlib.sha256(edits).hexdigest()]\n"
    "print(json.dumps(out))\n"
)


def test_scheduler_steps_json_is_the_same_bytes_both_ways() -> None:
    """The scheduler's ``steps[]`` JSON (app.sim.serving.stepjson, and its compact form,
    stepedits: both compiled in the serving group) is byte for byte the same with the compiled
    modules and the pure ones: every preset
    and preempting workloads under both policies, ids that need escaping."""
    results = []
    for native in (True, False):
        out = _child(STEPS, native)
        assert out.returncode == 0, out.stderr
        results.append(json.loads(out.stdout))
    with_native, pure = results
    assert with_native.pop("compiled") is True and pure.pop("compiled") is False
    assert len(with_native) > 2
    assert with_native == pure


def _copy_tree(dest: Path) -> None:
    shutil.copytree(
        ROOT / "app", dest / "app", ignore=shutil.ignore_patterns("__pycache__", "locale")
    )
    shutil.copytree(ROOT / ".native", dest / ".native", ignore=shutil.ignore_patterns(".build"))


def test_an_edited_source_falls_back_to_pure_python(tmp_path: Path) -> None:
    """On a copy of the tree: the copy's build is used as built; once a compiled module's
    source is edited, its whole group runs the pure modules, with one warning naming the file."""
    _copy_tree(tmp_path)
    probe = "import app.sim.congestion.flow as f, app.sim.core.events as e; print(f.__file__); print(e.__file__)"
    fresh = _child(probe, native=True, cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert all(".native" in line for line in fresh.stdout.split()), fresh.stdout
    flow = tmp_path / "app/sim/congestion/flow.py"
    flow.write_text(flow.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    edited = _child(probe, native=True, cwd=tmp_path)
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.split() == [
        str(tmp_path / "app/sim/congestion/flow.py"),
        str(tmp_path / "app/sim/core/events.py"),  # same group: pure as well
    ]
    assert edited.stderr.count("RuntimeWarning") == 1, edited.stderr
    assert "app/sim/congestion/flow.py changed" in edited.stderr


def test_stored_traces_name_no_compiled_class(
    native_traces: dict[str, dict[str, tuple[Any, str]]],
) -> None:
    """A stored trace (the pickle the store keeps, app.web.tracecache) of every preset decodes
    to the same trace and refers to no class of a compiled module, so a stored trace reads the
    same with or without the build; one stored before Narration moved out of the compiled
    flow module (``app.sim.congestion.flow.Narration``) still reads."""
    from app.sim.congestion.narration import Narration
    from app.sim.core import msg
    from app.web.tracecache import decode_trace, encode_trace
    from tests.contract.trace_digest import digest

    assert set(native_traces) == set(EXPLAINERS)
    for name, rows in native_traces.items():
        assert rows, name
        for slug, (trace, traced) in rows.items():
            raw = pickle.dumps(trace, protocol=pickle.HIGHEST_PROTOCOL)
            assert not any(m.encode() in raw for m in COMPILED), (name, slug)
            assert digest(decode_trace(encode_trace(trace))) == traced
    old = pickle.dumps(Narration(msg("ssthresh = {ssthresh}", ssthresh=7)), protocol=2)
    old = old.replace(b"app.sim.congestion.narration", b"app.sim.congestion.flow")
    assert b"app.sim.congestion.flow" in old
    back = pickle.loads(old)  # noqa: S301 - our own bytes
    assert isinstance(back, Narration) and back == "ssthresh = 7"


def _which_code_runs() -> tuple[bool, int]:
    """In a simulation process: whether the congestion engine is compiled, and a run's ACKs."""
    import app.sim.congestion.engine as engine
    from app.sim.congestion import parse
    from app.sim.congestion.run import simulate

    link = {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1}
    trace = simulate(parse({"link": link, "flows": [{"cc": "bbr"}], "duration_s": 1}))
    return compiled(engine), int(trace.summary["acks_simulated"])


@pytest.mark.skipif(os.environ.get("APP_NATIVE") == "0", reason="this process runs pure Python")
def test_simulation_processes_run_native_code() -> None:
    """The app's simulation processes (app.web.simproc, forked from a worker) run the compiled
    modules their parent loaded."""
    import app.sim.congestion  # noqa: F401 - loaded before the fork, as in an app worker
    from app.web.simproc import LanePool, Limits

    pool = LanePool(multiprocessing.get_context("fork"), 1, Limits(0, 0.0))
    try:
        native, acks = pool.submit(_which_code_runs).result(timeout=300)
    finally:
        pool.shutdown()
    assert native is True
    assert acks > 100
