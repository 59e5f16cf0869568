"""Time and memory of parsing the largest uploads the app takes (5 MB): a capture of minimal
segments, a `cwnd` recording of small tcp_probe events, and a deeply nested JSON refused before
parsing. Prints figures; asserts nothing. Each case runs in a fresh interpreter so its peak RSS
is its own (the baseline is the same interpreter with the modules imported).

    .venv/bin/python bench/recordings_parse.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASE = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from app.recordings.parse import MAX_BYTES, parse
from app.sim.core import ParamError
from tests.recordings.pcaps import A, B, K, P, pcap, segment
kind = sys.argv[1]
if kind == "capture":
    segs, i = [], 0
    while True:
        segs.append(segment(i * 0.001, A if i % 2 else B, B if i % 2 else A, P | K, i, i, data=b""))
        i += 1
        if i % 1000 == 0 and len(pcap(segs, "raw")) > MAX_BYTES - 60_000:
            break
    body, what = pcap(segs, "raw"), "capture"
elif kind == "cwnd":
    ev = {"t_ms": 0, "event": "tcp:tcp_probe", "fields": {"snd_cwnd": "10", "ssthresh": "7", "srtt": "4000"}}
    n = (MAX_BYTES - 200) // (len(json.dumps(ev)) + 2)
    body = json.dumps({"format": "stepscope-recording", "schema": 1, "kind": "cwnd", "events": [ev] * min(n, 200000)}).encode()
    what = "recording"
else:
    body, what = b"[" * (MAX_BYTES // 2) + b"]" * (MAX_BYTES // 2), "recording"
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
try:
    out = parse(body, what)
    n = len(out.get("segments") or out.get("flows", [{}])[0].get("series", []))
    result = f"ok ({n} items)"
except ParamError as exc:
    result = "refused: " + exc.issues[0].msg[:60]
print(json.dumps({"case": kind, "bytes": len(body), "wall_s": round(time.perf_counter() - t0, 2),
                  "cpu_s": round(time.process_time() - c0, 2),
                  "peak_mb_over_base": round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024, 1),
                  "result": result}))
"""


def main() -> None:
    for kind in ("capture", "cwnd", "deep"):
        out = subprocess.run(
            [sys.executable, "-c", CASE, kind, str(ROOT)],
            capture_output=True,
            text=True,
            check=False,
        )
        print(out.stdout.strip() or out.stderr.strip()[-500:])
        sys.stdout.flush()


if __name__ == "__main__":
    main()
