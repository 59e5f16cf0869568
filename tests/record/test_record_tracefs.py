"""Instance setup and cleanup against a fake tracefs (a directory tree in tmp_path): the
events enabled and filtered while recording, everything disabled and the instance removed
afterwards, also when recording fails; errors as one line with exit code 2."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.record import cli, demo, recorder, tracefs
from app.record.filters import FlowFilter
from app.record.recorder import Interrupted, Progress, Stopper, record
from app.record.tracefs import Instance, RecordError, Tracefs, leftover_instances

ROOT = Path(__file__).resolve().parents[2]


def fmt(fields: list[str]) -> str:
    body = "".join(f"\tfield:{f};\toffset:0;\tsize:{4 if 'addr' in f else 2};\tsigned:0;\n"
                   for f in fields)
    return "name: x\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n" + body


STATE_FMT = fmt(["__u16 sport", "__u16 dport", "__u8 saddr[4]", "__u8 daddr[4]"])


def line(cpu: int, ts: float, name: str, body: str) -> str:
    return f"          python-77      [{cpu:03d}] ..s1. {ts:.6f}: {name}: {body}\n"


def state(ts: float, sport: int, dport: int, old: str, new: str) -> str:
    return line(0, ts, "inet_sock_set_state",
                f"family=AF_INET protocol=IPPROTO_TCP sport={sport} dport={dport} "
                f"saddr=127.0.0.1 daddr=127.0.0.1 oldstate=TCP_{old} newstate=TCP_{new}")


PIPE = (
    state(100.0, 5000, 0, "CLOSE", "LISTEN")
    + state(100.0015, 41000, 5000, "CLOSE", "SYN_SENT")
    + state(100.002, 41000, 6000, "CLOSE", "SYN_SENT")  # another flow: the kernel filter's job
    + line(1, 100.003, "tcp_retransmit_skb", "skbaddr=01 skaddr=02 family=AF_INET sport=41000 "
           "dport=5000 saddr=127.0.0.1 daddr=127.0.0.1 state=TCP_SYN_SENT")
)


class FakeRoot:
    """What a real tracefs shows in a new instance, written by the fake instance's create."""

    def __init__(self, root: Path, events: dict[str, str], pipe: str) -> None:
        self.root, self.events, self.pipe = root, events, pipe
        self.overrun = 0
        self.at_removal: dict[str, str] = {}
        (root / "instances").mkdir(parents=True)

    def tracefs(self) -> Tracefs:
        fake = self

        class FakeInstance(Instance):
            def create(self, buffer_kb: int = 8192) -> None:
                super().create(buffer_kb)
                for ev, text in fake.events.items():
                    d = self.event_dir(ev)
                    d.mkdir(parents=True)
                    for name, value in (("enable", "0"), ("filter", "none"), ("format", text)):
                        (d / name).write_text(value)
                (self.path / "options").mkdir()
                (self.path / "options/stacktrace").write_text("0")
                (self.path / "trace_pipe").write_text(fake.pipe)
                for cpu, overrun in ((0, 0), (1, fake.overrun)):
                    d = self.path / f"per_cpu/cpu{cpu}"
                    d.mkdir(parents=True)
                    (d / "stats").write_text(f"entries: 0\noverrun: {overrun}\n"
                                             "commit overrun: 0\ndropped events: 0\n")

        def remove(path: Path) -> None:
            for f in path.glob("events/*/*/enable"):
                fake.at_removal[f"{f.parent.parent.name}:{f.parent.name}"] = f.read_text()
            fake.at_removal["stacktrace"] = (path / "options/stacktrace").read_text()
            shutil.rmtree(path)

        class FakeTracefs(Tracefs):
            def instance(self, name: str) -> Instance:
                return FakeInstance(self.root, name, remove=remove)

        return FakeTracefs(self.root)


TCP_EVENTS = {
    "sock:inet_sock_set_state": STATE_FMT,
    "tcp:tcp_retransmit_skb": STATE_FMT,
    "tcp:tcp_send_reset": fmt(["__u8 saddr[28]", "__u8 daddr[28]"]),
    # tcp:tcp_receive_reset missing: an optional event
}


def test_record_enables_filters_then_cleans_up(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path, TCP_EVENTS, PIPE)
    inst = fake.tracefs().instance("stepscope-1")
    seen: dict[str, str] = {}

    def until() -> bool:
        for ev in TCP_EVENTS:
            d = inst.event_dir(ev)
            seen[ev] = (d / "enable").read_text() + "|" + (d / "filter").read_text()
        return True

    notes: list[str] = []
    try:
        got = record(inst, "tcp", FlowFilter(port=5000), until, Stopper(), notes)
    finally:
        inst.close()
    assert seen["sock:inet_sock_set_state"] == "1\n|(sport == 5000 || dport == 5000)\n"
    assert seen["tcp:tcp_send_reset"] == "1\n|none"  # no port field: filtered in userspace
    assert notes == ["tcp:tcp_receive_reset: not on this kernel; skipped"]
    # the fake pipe has no kernel filter behind it: the other flow's SYN_SENT comes through
    assert [(e["t_ms"], e["event"], e["fields"].get("newstate")) for e in got.events] == [
        (0.0, "sock:inet_sock_set_state", "TCP_LISTEN"),
        (1.5, "sock:inet_sock_set_state", "TCP_SYN_SENT"),
        (2.0, "sock:inet_sock_set_state", "TCP_SYN_SENT"),
        (3.0, "tcp:tcp_retransmit_skb", None),
    ]
    assert all("stack" not in e for e in got.events)
    assert fake.at_removal == {"sock:inet_sock_set_state": "0\n", "tcp:tcp_retransmit_skb": "0\n",
                               "tcp:tcp_send_reset": "0\n", "stacktrace": "0"}
    assert leftover_instances(tmp_path) == []


def test_lost_events_are_noted(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path, TCP_EVENTS, PIPE + "CPU:1 [LOST 4 EVENTS]\n")
    fake.overrun = 7
    inst = fake.tracefs().instance("stepscope-4")
    notes: list[str] = []
    try:
        got = record(inst, "tcp", FlowFilter(), lambda: True, Stopper(), notes)
    finally:
        inst.close()
    assert got.lost == 7 and "the trace buffer overflowed: 7 events lost" in notes


def _patch_cli(monkeypatch: pytest.MonkeyPatch, fake: FakeRoot) -> None:
    monkeypatch.setattr(cli, "open_tracefs", fake.tracefs)
    monkeypatch.setattr(cli, "kernel_ok", lambda: None)


def test_cleanup_after_an_exception(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRoot(tmp_path, {"tcp:tcp_probe": fmt(["__u16 sport", "__u16 dport"])}, "")
    _patch_cli(monkeypatch, fake)

    def boom(self: Any, force: bool = False) -> None:
        raise RuntimeError("ss failed")

    monkeypatch.setattr(cli.FlowWatch, "poll", boom)
    with pytest.raises(RuntimeError, match="ss failed"):
        cli.main(["record", "cwnd", "--port", "5201", "--out", str(tmp_path / "o.json")])
    assert fake.at_removal["tcp:tcp_probe"] == "0\n"
    assert leftover_instances(tmp_path) == [] and not (tmp_path / "o.json").exists()


def test_path_turns_stacks_on_and_off(tmp_path: Path) -> None:
    events = {e: fmt(["__u16 x"]) for e, _ in recorder.EVENTS["path"]}
    pipe = (line(0, 5.0, "net_dev_queue", "dev=a skbaddr=01 len=74")
            + "          python-77      [000] ..s1. 5.000010: <stack trace>\n"
            + " => __dev_queue_xmit+0x1/0x2\n => ip_finish_output2+0x1/0x2\n")
    fake = FakeRoot(tmp_path, events, pipe)
    inst = fake.tracefs().instance("stepscope-2")
    stack_on: list[str] = []
    try:
        got = record(inst, "path", FlowFilter(), lambda: not stack_on.append(
            (inst.path / "options/stacktrace").read_text()), Stopper(), [])
    finally:
        inst.close()
    assert stack_on == ["1\n"] and fake.at_removal["stacktrace"] == "0\n"
    assert got.events[0]["stack"] == ["__dev_queue_xmit", "ip_finish_output2"]


def test_missing_essential_event_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeRoot(tmp_path, {"tcp:tcp_retransmit_skb": STATE_FMT}, "")
    _patch_cli(monkeypatch, fake)
    assert cli.main(["record", "tcp", "--seconds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sock:inet_sock_set_state" in err
    assert leftover_instances(tmp_path) == []


def test_not_root_and_no_tracefs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "kernel_ok", lambda: None)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(recorder, "_has_cap_sys_admin", lambda: False)
    assert cli.main(["record", "cwnd"]) == 2
    assert "needs root" in capsys.readouterr().err
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(tracefs, "CANDIDATES", (tmp_path / "nothing",))
    monkeypatch.setattr(tracefs, "_kernel_has_tracefs", lambda: False)
    assert cli.main(["record", "cwnd"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no tracefs" in err
    with pytest.raises(RecordError, match="no tracefs"):
        Tracefs.open((tmp_path / "nothing",))


def test_an_existing_instance_is_not_taken_over(tmp_path: Path) -> None:
    (tmp_path / "instances" / "stepscope-3").mkdir(parents=True)
    with pytest.raises(RecordError, match="already exists"):
        Instance(tmp_path, "stepscope-3").create()
    Instance(tmp_path, "stepscope-3").close()  # never created: leaves it alone
    assert leftover_instances(tmp_path) == ["stepscope-3"]


def test_signals_raise_during_setup_and_stop_while_recording() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    st = Stopper()
    with st.installed():
        with pytest.raises(Interrupted):
            os.kill(os.getpid(), signal.SIGTERM)
        assert st.stop and st.signum == signal.SIGTERM
        st2 = Stopper(raising=False)
        with st2.installed():
            os.kill(os.getpid(), signal.SIGINT)
            assert st2.stop and st2.signum == signal.SIGINT
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_progress_line() -> None:
    buf = io.StringIO()
    p = Progress(buf, every_s=0.0)
    p.show(12, 1.25)
    p.show(40, 2.5)
    p.done()
    assert buf.getvalue() == "\rstepscope: 12 events, 1.2 s \rstepscope: 40 events, 2.5 s \n"
    Progress(None).show(1, 1.0)  # not a tty: nothing


def test_help_documents_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["record", "--help"], ["record", "demo", "--help"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 0
        out = capsys.readouterr().out
        assert "docs/recording-format.md" in out and "t_ms" in out and "/recordings" in out


def test_entry_point_is_declared_and_resolves_to_main() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, attr = scripts["stepscope"].partition(":")
    import importlib

    target: Callable[..., Any] = getattr(importlib.import_module(module), attr)
    assert target is cli.main
    res = subprocess.run([sys.executable, "-m", "app.record", "record", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "stepscope record" in res.stdout


def test_demo_tcp_presets_exist_and_others_are_refused() -> None:
    from app.sim.tcp.presets import PRESETS

    slugs = {p.slug for p in PRESETS}
    assert set(demo.DEMO_PRESETS) <= slugs
    assert [c["call"] for c in demo.preset_script("handshake")][:3] == [
        "listen", "accept", "connect"]
    other = sorted(slugs - set(demo.DEMO_PRESETS))[0]
    with pytest.raises(RecordError) as e:
        demo.preset_script(other)
    assert all(p in str(e.value) for p in demo.DEMO_PRESETS)


def test_bad_flags_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["record", "cwnd", "--port", "70000"], ["record", "path", "--dev", 'a"b'],
                 ["record", "demo", "cwnd", "--rate-mbit", "0"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 2
    assert cli.main(["record", "demo", "path", "--", "ls"]) == 2
    assert "no -- CMD" in capsys.readouterr().err
