"""Run a folder of packetdrill scripts (the kernel's selftests, fetched at run time into a
folder outside the repository: they are GPL test code and are never committed) against the
TCP model, and print for each one: pass, or the first line that differs (its number, its
text and why), or the first construct the model does not support; then the counts.

    .venv/bin/python -m bench.packetdrill_selftests /tmp/pdrill-kpkt [--only NAME ...]

A script whose first failing line is unsupported (a ``%{ python }%`` block, a shell command
other than sysctl/defaults.sh, a syscall or option the model lacks) is counted apart from one
where the model answered differently. The last line counts the scripts in scope for a 6.4
model (``bench/packetdrill_scope.py``, as docs/packetdrill-scope.md lists them) that pass,
"N of M in scope pass"; a script that pins behaviour changed after v6.4 is marked with the
commit that changed it. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from app.sim.tcp.packetdrill.lexer import ScriptSyntaxError
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import RunLimitError, run
from bench.packetdrill_scope import AFTER_6_4, IN_SCOPE


def judge(text: str) -> tuple[str, str]:
    """(kind, detail): kind is pass | differs | unsupported | syntax | limit."""
    try:
        result = run(parse(text))
    except ScriptSyntaxError as exc:
        return "syntax", f"line {exc.line}, column {exc.col}: {exc.why.render()}"
    except RunLimitError as exc:
        return "limit", exc.why.render()
    v = result.verdict
    if v.passed:
        return "pass", ""
    lines = text.split("\n")
    first = next((r for r in result.lines if r.line == v.line), None)
    code = lines[v.line - 1].strip() if v.line and v.line <= len(lines) else ""
    kind = "unsupported" if first is not None and first.status == "unsupported" else "differs"
    return kind, f"line {v.line} `{code[:70]}`: {v.reason.render()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--only", nargs="*", default=None, help="script names to run (default all)")
    args = ap.parse_args()
    files = sorted(args.folder.glob("*.pkt"))
    if args.only:
        files = [f for f in files if f.name in set(args.only) or f.stem in set(args.only)]
    kinds: Counter[str] = Counter()
    in_scope: list[tuple[str, str]] = []
    for f in files:
        kind, detail = judge(f.read_text(encoding="utf-8", errors="replace"))
        kinds[kind] += 1
        if f.name in IN_SCOPE:
            in_scope.append((f.name, kind))
        elif f.name in AFTER_6_4:
            detail = f"{detail} [out of scope: later than 6.4, {AFTER_6_4[f.name][0][:12]}]"
        print(f"{f.name:58s} {kind:11s} {detail}")
    print(f"scripts: {len(files)}; " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())))
    passed = sum(1 for _, kind in in_scope if kind == "pass")
    failed = [name for name, kind in in_scope if kind != "pass"]
    missing = len(IN_SCOPE) - len(in_scope)
    print(
        f"{passed} of {len(in_scope)} in scope pass"
        + (f"; failing: {', '.join(failed)}" if failed else "")
        + (f" ({missing} in-scope scripts not in the folder)" if missing else "")
    )


if __name__ == "__main__":
    main()
