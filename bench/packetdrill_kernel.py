"""Run every packetdrill script of a folder against this machine's kernel AND the TCP model and
print, per script, both verdicts, the lines where the kernel and the model differ (and how), the
runner's own lateness, and the options of the kernel's SYN/SYN-ACK. Needs root and /dev/net/tun.

    .venv/bin/python -m bench.packetdrill_kernel content/packetdrill [--syn-options] [--repeat N]

``--syn-options`` first rewrites each script's inbound SYN/SYN-ACK options to
``<mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 7>`` (and its outbound SYN-ACK/ACK checks stay
as written), to show which options the kernel answers with. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.realkernel import KernelResult, run_kernel, unavailable
from app.sim.tcp.packetdrill.runner import LineResult, Result, RunLimitError, run

SYN_OPTIONS = "<mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 7>"
_INBOUND_SYN = re.compile(r"^(\s*\S+\s+<\s+S\.?\s.*?)(<[^>]*>)?\s*$")


def with_syn_options(text: str) -> str:
    """The script with its inbound SYN (or SYN-ACK) carrying :data:`SYN_OPTIONS`."""
    out = []
    for line in text.splitlines():
        m = _INBOUND_SYN.match(line)
        out.append(f"{m.group(1).rstrip()} {SYN_OPTIONS}" if m else line)
    return "\n".join(out) + "\n"


def _brief(r: LineResult) -> str:
    if r.status == "match":
        return "match"
    why = "; ".join(x.render() for x in r.reasons)
    return f"{r.status}: {why}"


def differences(model: Result, kernel: KernelResult) -> list[str]:
    """Lines whose status or reason differs between the model and the kernel."""
    by_line = {r.line: r for r in kernel.lines}
    out = []
    for m in model.lines:
        k = by_line.get(m.line)
        if k is None or m.status == "comment":
            continue
        if _brief(m) != _brief(k):
            out.append(f"  line {m.line}: model {_brief(m)} | kernel {_brief(k)}")
    return out


def syn_options(kernel: KernelResult) -> str:
    for p in kernel.packets:
        if "S" in p["flags"]:
            return f"{p['flags']} <{','.join(p['options'])}> win {p['win']}"
    return "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--syn-options", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    why = unavailable()
    if why is not None:
        raise SystemExit(f"cannot run on the kernel: {why.render()}")
    for path in sorted(args.folder.glob("*.pkt")):
        text = path.read_text()
        if args.syn_options:
            text = with_syn_options(text)
        script = parse(text)
        model = run(script)
        for i in range(args.repeat):
            t0 = time.perf_counter()
            try:
                kernel = run_kernel(script)
            except RunLimitError as exc:
                print(f"{path.name}: over the limit: {exc}")
                continue
            dt = time.perf_counter() - t0
            mv = "pass" if model.verdict.passed else f"FAIL line {model.verdict.line}"
            kv = "pass" if kernel.verdict.passed else f"FAIL line {kernel.verdict.line}"
            print(
                f"{path.name} #{i + 1}: model {mv}; kernel {kv} ({kernel.release}); "
                f"{dt:.2f} s, runner late {kernel.slip_ms} ms; kernel's SYN: {syn_options(kernel)}"
            )
            for d in differences(model, kernel):
                print(d)


if __name__ == "__main__":
    main()
