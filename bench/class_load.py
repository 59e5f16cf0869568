"""Load test of a live class on loopback: many students follow one lecturer.

    .venv/bin/python bench/class_load.py                  # starts its own server (2 workers)
    .venv/bin/python bench/class_load.py --students 50 --steps 10 --url http://127.0.0.1:8000

Without ``--url`` it starts the app as ``scripts/serve`` does (``bench/load.py``'s server:
migrate, uvicorn with ``--workers``, a temporary SQLite database), without warming every
preset (the class's walkthrough runs when the class starts).
Then:

1. the lecturer starts a class on a walkthrough (``--scenario``); ``--students`` (300) students
   join it (``POST /api/v1/classes/join``) and open its event stream, each on its own
   connection (so they spread over the workers, as phones over replicas would);
2. the lecturer moves one step every ``--interval`` seconds (1) ``--steps`` times (60): for each
   student and step, delivery = when the student read the ``step`` event − when the lecturer
   sent the POST;
3. the lecturer asks the question of a step; every student answers it (choice = student number
   modulo the number of choices) and the lecturer's ``GET …/questions/{id}`` must count
   exactly what was sent;
4. meanwhile ``--others`` (5) visitors who are not in the class open the walkthrough's page and
   fetch its frames in a loop (the lecture-hall targets: page p99 ≤ 300 ms).

Prints delivery p50/p95/p99/max, how many (student, step) deliveries were missing, the answer
counts against those sent, and the other visitors' page latency. Loopback only; bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import Server  # noqa: E402  (bench/load.py: the same server as the hall test)

MAX_STUDENTS = 2000


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * len(xs) + 0.5) - 1))]


class Student:
    """One phone: its event stream read on a raw connection (the client stays cheap)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.token = ""
        self.steps: dict[int, float] = {}  # step → when its event was read (first time)
        self.questions: list[str] = []
        self.connected = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def listen(self, host: str, port: int, path: str) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
            "Accept-Encoding: identity\r\n\r\n".encode()
        )
        await writer.drain()
        event, data = "", ""
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                text = line.decode().rstrip("\r\n")
                if text.startswith("event:"):
                    event = text[6:].strip()
                elif text.startswith("data:"):
                    data = text[5:].strip()
                elif text == "" and data:
                    self._got(event, json.loads(data))
                    event, data = "", ""
        finally:
            writer.close()

    def _got(self, event: str, data: dict[str, Any]) -> None:
        now = time.time()
        if event == "step":
            self.steps.setdefault(int(data["step"]), now)
            self.connected.set()
        elif event == "question":
            self.questions.append(str(data["question_id"]))


async def run(args: argparse.Namespace, base: str) -> None:
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    # idle connections are dropped before uvicorn's keep-alive timeout (5 s) closes them
    limits = httpx.Limits(max_connections=64, keepalive_expiry=2.0)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as http:
        r = await http.post("/api/v1/classes", json={"scenario": args.scenario})
        r.raise_for_status()
        cls = r.json()
        auth = {"Authorization": f"Bearer {cls['lecturer_token']}"}
        api = f"/api/v1/classes/{cls['id']}"
        count = (await http.get(api)).json()["count"]
        steps = min(args.steps, count - 1)
        students = [Student(i) for i in range(args.students)]

        async def join(s: Student) -> None:
            j = await http.post("/api/v1/classes/join", json={"code": cls["code"]})
            s.token = j.json()["student_token"]

        t0 = time.time()
        await asyncio.gather(*(join(s) for s in students))
        for s in students:
            s.task = asyncio.create_task(s.listen(host, port, f"{api}/events"))
        await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in students)), 60)
        print(f"{len(students)} students joined and connected in {time.time() - t0:.1f} s")

        load0, cpu0 = os.getloadavg()[0], time.process_time()
        stop = asyncio.Event()
        others: list[float] = []
        visitors = [
            asyncio.create_task(visit(base, cls["join_url"], others, stop))
            for _ in range(args.others)
        ]

        sent: dict[int, float] = {}
        start = time.monotonic()
        for k in range(1, steps + 1):
            await asyncio.sleep(max(0.0, start + k * args.interval - time.monotonic()))
            sent[k] = time.time()
            m = await http.post(f"{api}/step", json={"step": k}, headers=auth)
            assert m.status_code == 204, m.text
        await asyncio.sleep(2.0)  # the last step's stragglers
        stop.set()
        await asyncio.gather(*visitors)

        print(
            f"machine load average {load0:.1f} → {os.getloadavg()[0]:.1f} (2 CPUs, shared); "
            f"this load client used {time.process_time() - cpu0:.1f} s of CPU while stepping"
        )
        delays = [(s.steps[k] - sent[k]) * 1000 for s in students for k in sent if k in s.steps]
        missing = sum(1 for s in students for k in sent if k not in s.steps)
        print(
            f"steps: {len(sent)} at {args.interval:g} s; deliveries {len(delays)} of "
            f"{len(sent) * len(students)} (missing {missing})"
        )
        print(
            f"delivery ms: p50 {pct(delays, 50):.0f}  p95 {pct(delays, 95):.0f}  "
            f"p99 {pct(delays, 99):.0f}  max {max(delays, default=float('nan')):.0f}  (target p99 ≤ 500)"
        )

        # a question, answered by everyone at once
        asked = await http.post(f"{api}/questions", json={"step": args.question_step}, headers=auth)
        if asked.status_code != 201:
            print(f"question at step {args.question_step}: {asked.status_code} {asked.text}")
        else:
            q = asked.json()
            n_choices = len(q["choices"])
            expected = [0] * n_choices
            statuses: dict[int, int] = {}

            async def answer(s: Student) -> None:
                choice = s.n % n_choices
                a = await http.post(
                    f"{api}/answers",
                    json={"question_id": q["question_id"], "choice": choice},
                    headers={"Authorization": f"Bearer {s.token}"},
                )
                statuses[a.status_code] = statuses.get(a.status_code, 0) + 1
                if a.status_code == 204:
                    expected[choice] += 1

            t1 = time.time()
            await asyncio.gather(*(answer(s) for s in students))
            took = time.time() - t1
            again = await http.post(
                f"{api}/answers",
                json={"question_id": q["question_id"], "choice": 0},
                headers={"Authorization": f"Bearer {students[0].token}"},
            )
            res = (await http.get(f"{api}/questions/{q['question_id']}", headers=auth)).json()
            heard = sum(1 for s in students if q["question_id"] in s.questions)
            print(
                f"question: {heard} of {len(students)} students received it; answers "
                f"{statuses} in {took:.1f} s; counted {res['counts']} vs sent {expected}: "
                f"{'exact' if res['counts'] == expected else 'MISMATCH'}; a second answer: "
                f"{again.status_code}"
            )
        print(
            f"other visitors ({args.others}): {len(others)} page/frames requests, p50 "
            f"{pct(others, 50):.0f} ms  p99 {pct(others, 99):.0f} ms  (hall target p99 ≤ 300)"
        )
        for s in students:
            if s.task is not None:
                s.task.cancel()
        await asyncio.gather(*(s.task for s in students if s.task), return_exceptions=True)


async def visit(base: str, join_url: str, out: list[float], stop: asyncio.Event) -> None:
    """A visitor outside the class: the walkthrough's page and a chunk of its frames, again
    and again (the class page names both: its walkthrough picker and its frame store)."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        page = (await http.get(urlsplit(join_url).path)).text
        walkthrough = _attr_after(page, "selected", '<option value="') or "/"
        frames = _attr_after(page, "", 'data-frames-url="').replace("&amp;", "&")
        urls = [walkthrough] + ([f"{frames}&start=20&count=20"] if frames else [])
        while not stop.is_set():
            for url in urls:
                t = time.perf_counter()
                r = await http.get(url)
                out.append((time.perf_counter() - t) * 1000)
                if r.status_code != 200:
                    print(f"visitor: {url} answered {r.status_code}")
            await asyncio.sleep(0.2)


def _attr_after(page: str, must: str, marker: str) -> str:
    """The attribute value after ``marker`` on the first line holding both it and ``must``."""
    for line in page.splitlines():
        if marker in line and must in line:
            return line.split(marker, 1)[1].split('"', 1)[0]
    return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a running server (loopback only); else one is started")
    ap.add_argument("--workers", type=int, default=2, help="as scripts/serve (2 CPUs)")
    ap.add_argument("--scenario", default="cwnd/reno-sawtooth")
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between steps")
    ap.add_argument("--question-step", type=int, default=16, help="the step asked about")
    ap.add_argument("--others", type=int, default=5, help="visitors outside the class")
    ap.add_argument("--database-url", help="e.g. a PostgreSQL URL (default: a temporary SQLite)")
    args = ap.parse_args()
    if not 1 <= args.students <= MAX_STUDENTS:
        ap.error(f"--students is 1 to {MAX_STUDENTS}")
    server = None
    if args.url:
        if urlsplit(args.url).hostname not in ("127.0.0.1", "localhost", "::1"):
            ap.error("--url must be a loopback address")
        base = args.url.rstrip("/")
    else:
        server = Server(args.workers)
        # one walkthrough is used: it is run on first use instead of warming every preset
        server.env["APP_WARM_PRESETS"] = "0"
        if args.database_url:
            server.env["APP_DATABASE_URL"] = args.database_url
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill stops the server too
        server.start()
        print(f"server: {args.workers} workers on {server.url}")
        base = server.url
    try:
        asyncio.run(asyncio.wait_for(run(args, base), 600))
    finally:
        if server is not None:
            print(f"server RSS {server.rss_mb():.0f} MB; {server.log_summary()}")
            server.stop()


if __name__ == "__main__":
    main()
