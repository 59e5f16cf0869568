"""Compile the simulations' hot modules with mypyc into ``.native/`` (outside the source tree).

    .venv/bin/python scripts/build_native.py          # build what is stale, skip the rest
    .venv/bin/python scripts/build_native.py --force  # rebuild every group

Each *group* below is one mypyc compilation unit (one shared library plus a small extension per
module) and is built into ``.native/<group>/``: the package directories mirror ``app/``'s
(``.native/<group>/app/sim/congestion/flow.cpython-311-x86_64-linux-gnu.so``) and the group's
shared library sits at the top (``.native/<group>/<group>__mypyc…so``). ``.native/manifest.json``
records, per group, the sha256 of every source it was compiled from; the loader
(:mod:`app.sim.native`) uses a group only while every hash still matches the file on disk, so an
edited ``.py`` is never shadowed by a stale ``.so``. A group whose manifest already matches is
skipped (nothing is compiled), which makes this script cheap to call from
``scripts/_bootstrap.sh`` on every start.

Without a C compiler, Python headers or mypyc (it comes with mypy, a dependency), it prints one warning
and exits 0: the pure-Python modules are used, with identical results, only slower.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / ".native"
MANIFEST = NATIVE / "manifest.json"
# mypyc's opt level, also gcc's -O: 1 runs as fast as 2 here (BBR x1, CUBIC x1, the 4096-request
# scheduler bench) and compiles in two thirds of the CPU time; 0 runs slower than pure Python.
OPT_LEVEL = os.environ.get("NATIVE_OPT_LEVEL", "1")
# gcc runs on every CPU, one extension each (build_ext --parallel): the groups' libraries and the
# modules' small extensions. A group's library is one C file (mypyc's multi_file splits it per
# module so that gcc could compile it in parallel, but took as much CPU and ran slower).
JOBS = os.cpu_count() or 1

# The hot modules, per group. A native base class must be compiled in its subclasses' group
# (RttEstimator with Flow), so app.sim.core's two hot modules join the congestion group.
GROUPS: dict[str, list[str]] = {
    "congestion": [
        "app/sim/core/events.py",
        "app/sim/core/tcp.py",
        "app/sim/congestion/ack.py",
        "app/sim/congestion/algorithms.py",
        "app/sim/congestion/bbr.py",
        "app/sim/congestion/bbr_lt.py",
        "app/sim/congestion/cubic.py",
        "app/sim/congestion/ecn.py",
        "app/sim/congestion/engine.py",
        "app/sim/congestion/flow.py",
        "app/sim/congestion/handshake.py",
        "app/sim/congestion/link.py",
        "app/sim/congestion/loss.py",
        "app/sim/congestion/minmax.py",
        "app/sim/congestion/receiver.py",
        "app/sim/congestion/recovery.py",
        "app/sim/congestion/red.py",
        "app/sim/congestion/reno.py",
        "app/sim/congestion/rwnd.py",
        "app/sim/congestion/sender.py",
    ],
    "serving": [
        "app/sim/serving/blockpool.py",
        "app/sim/serving/engine.py",
        "app/sim/serving/latency.py",
        "app/sim/serving/request.py",
        "app/sim/serving/run.py",
        "app/sim/serving/stepjson.py",
        "app/sim/serving/stepedits.py",
    ],
}


def lib_name(group: str) -> str:
    """The mypyc group's name: its shared library is ``<name>__mypyc``."""
    return f"stepscope_{group}"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def abi() -> str:
    """What a built extension is bound to: the interpreter and the platform."""
    return f"{sys.implementation.cache_tag}{sysconfig.get_config_var('EXT_SUFFIX')}"


def wanted(group: str) -> dict[str, object]:
    """The manifest entry ``group`` must have to be up to date."""
    return {
        "abi": abi(),
        "opt_level": OPT_LEVEL,
        "lib": lib_name(group),
        "sources": {p: sha256(ROOT / p) for p in GROUPS[group]},
    }


def read_manifest() -> dict[str, dict[str, object]]:
    try:
        data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    groups = data.get("groups") if isinstance(data, dict) else None
    return groups if isinstance(groups, dict) else {}


def write_manifest(groups: dict[str, dict[str, object]]) -> None:
    NATIVE.mkdir(exist_ok=True)
    tmp = MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps({"groups": groups}, indent=1, sort_keys=True) + "\n", "utf-8")
    tmp.replace(MANIFEST)


def compile_groups(groups: list[str]) -> None:
    """mypyc then gcc (one extension per module and per group library, two at a time) into a
    scratch directory, then each group moved into ``.native/<group>/``."""
    import warnings

    from mypyc.build import mypycify
    from setuptools import setup

    warnings.filterwarnings("ignore", module="setuptools")  # its notes on pyproject.toml

    work = NATIVE / ".build"  # kept: gcc skips extensions whose generated C did not change
    work.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="out-", dir=NATIVE))
    try:
        t0 = time.perf_counter()
        exts = mypycify(
            [p for g in groups for p in GROUPS[g]],
            separate=[(list(GROUPS[g]), lib_name(g)) for g in groups],
            opt_level=OPT_LEVEL,
            target_dir=str(work / "c"),
        )
        t1 = time.perf_counter()
        setup(
            name="stepscope-native",
            ext_modules=exts,
            script_args=[
                "--quiet",
                "build_ext",
                "--build-lib",
                str(out),
                "--build-temp",
                str(work / "obj"),
                "--parallel",
                str(JOBS),
            ],
        )
        print(
            f"native: mypyc (type check, C) {t1 - t0:.1f} s, "
            f"gcc {time.perf_counter() - t1:.1f} s"
        )
        for g in groups:
            dest = NATIVE / g
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for lib in out.glob(f"{lib_name(g)}__mypyc*"):
                lib.rename(dest / lib.name)
            for p in GROUPS[g]:
                rel = Path(p).with_suffix("")
                for so in (out / rel.parent).glob(f"{rel.name}.*"):
                    (dest / rel.parent).mkdir(parents=True, exist_ok=True)
                    so.rename(dest / rel.parent / so.name)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild even if the manifest matches")
    args = ap.parse_args()
    os.chdir(ROOT)  # mypyc names modules after the paths it is given
    have = read_manifest()
    stale = [g for g in GROUPS if args.force or have.get(g) != wanted(g) or not (NATIVE / g).is_dir()]
    if not stale:
        print(f"native: up to date ({', '.join(GROUPS)}) in {NATIVE.relative_to(ROOT)}/")
        return 0
    started = time.perf_counter()
    entries = {g: wanted(g) for g in stale}  # the sources as they are when compiling starts
    try:
        import mypyc  # noqa: F401  (installed with mypy; absent from a hand-made environment)

        compile_groups(stale)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure leaves pure Python in use
        if isinstance(e, SystemExit):  # mypyc or the compiler printed why above
            reason = [f"exit status {e.code}: see the errors above"]
        else:
            reason = str(e).strip().splitlines()[-1:] or [type(e).__name__]
        print(
            f"warning: native build of {', '.join(stale)} failed ({reason[0]}); "
            "the pure-Python modules will be used (same results, slower)",
            file=sys.stderr,
        )
        for g in stale:
            have.pop(g, None)
        write_manifest(have)
        return 0
    have.update(entries)
    write_manifest(have)
    modules = sum(len(GROUPS[g]) for g in stale)
    print(
        f"native: built {', '.join(stale)} ({modules} modules, mypyc opt {OPT_LEVEL}) into "
        f"{NATIVE.relative_to(ROOT)}/ in {time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
