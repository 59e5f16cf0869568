"""``stepscope`` speaks the invocation's language: --lang, else LC_ALL / LC_MESSAGES / LANG."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.record import cli, lang
from app.record.recorder import Progress
from app.sim.core.i18n import reader_gettext

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh-CN"),
        ({"LANG": "zh_TW.UTF-8"}, "zh-CN"),
        ({"LANG": "zh"}, "zh-CN"),
        ({"LANG": "C"}, "en"),
        ({"LANG": "fr_FR.UTF-8"}, "en"),
        ({}, "en"),
        ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "C"}, "zh-CN"),
        ({"LC_ALL": "", "LC_MESSAGES": "", "LANG": "zh_CN.GB2312"}, "zh-CN"),
        ({"LC_ALL": "zh_CN@pinyin", "LC_MESSAGES": "en_US.UTF-8"}, "zh-CN"),
    ],
)
def test_environment_picks_the_language(env: dict[str, str], want: str) -> None:
    assert lang.from_environment(env) == want


def test_lang_option_is_read_before_parsing() -> None:
    zh = {"LANG": "zh_CN.UTF-8"}
    assert lang.choose(["--lang", "en", "record"], zh) == "en"
    assert lang.choose(["record", "cwnd", "--lang=zh-CN"], {}) == "zh-CN"
    assert lang.choose(["--la", "zh-CN"], {}) == "zh-CN"  # argparse accepts the abbreviation
    assert lang.choose(["record", "--", "cmd", "--lang", "en"], zh) == "zh-CN"  # CMD's own
    assert lang.choose(["--lang", "fr"], zh) == "zh-CN"  # not ours: argparse refuses it


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], lang_env: str,
         argv: list[str]) -> tuple[int | str | None, str, str]:
    monkeypatch.setenv("LANG", lang_env)
    try:
        code: int | str | None = cli.main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_errors_in_chinese_and_english(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A RecordError and an argparse error keep their exit code (2) in either language."""
    code, _, err = _run(monkeypatch, capsys, "zh_CN.UTF-8", ["record", "demo", "path", "--", "ls"])
    assert code == 2 and err == "stepscope: 错误：record demo 自己产生流量：不能带 -- CMD\n"
    code, _, err = _run(monkeypatch, capsys, "C", ["record", "demo", "path", "--", "ls"])
    assert code == 2 and err == "stepscope: error: record demo runs its own traffic: no -- CMD\n"
    code, _, err = _run(monkeypatch, capsys, "zh_CN.UTF-8", ["record", "cwnd", "--port", "x"])
    assert code == 2 and err.startswith("用法：stepscope record cwnd [选项]")
    assert "stepscope record cwnd: 错误：参数 --port：端口应为 1 到 65535" in err
    code, _, err = _run(monkeypatch, capsys, "C", ["record", "cwnd", "--port", "x"])
    assert code == 2 and err.startswith("usage: stepscope record cwnd [options]")
    assert "stepscope record cwnd: error: argument --port: a port is 1 to 65535" in err
    code, _, err = _run(monkeypatch, capsys, "zh_CN.UTF-8", ["record"])
    assert code == 2 and "错误：缺少必需的参数：kind" in err


def test_help_in_both_languages(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, zh, _ = _run(monkeypatch, capsys, "zh_CN.UTF-8", ["record", "path", "--help"])
    assert code == 0 and zh.startswith("用法：stepscope record path")
    assert "显示本帮助并退出" in zh and "每个报文经过的函数" in zh and "\n选项：\n" in zh
    assert "notes 是英文" in zh and "docs/recording-format.md" in zh
    assert "show this help" not in zh and "Needs root" not in zh
    code, en, _ = _run(monkeypatch, capsys, "C", ["record", "path", "--help"])
    assert code == 0 and en.startswith("usage: stepscope record path")
    assert "show this help message and exit" in en and "the notes are English" in en
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in en)
    # --lang beats the environment, both ways
    code, forced, _ = _run(monkeypatch, capsys, "zh_CN.UTF-8", ["--lang", "en", "--help"])
    assert code == 0 and "show this help message and exit" in forced
    code, forced, _ = _run(monkeypatch, capsys, "C", ["--lang", "zh-CN", "--help"])
    assert code == 0 and "显示本帮助并退出" in forced


def test_progress_line_speaks_the_current_language() -> None:
    buf = io.StringIO()
    token = reader_gettext.set(lang.gettext_for("zh-CN"))
    try:
        Progress(buf).show(12, 1.25)
    finally:
        reader_gettext.reset(token)
    assert buf.getvalue() == "\rstepscope: 12 个事件，1.2 秒 "


def test_main_leaves_no_language_behind(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(monkeypatch, capsys, "zh_CN.UTF-8", ["--help"])
    assert reader_gettext.get() is None


def test_help_imports_no_web_framework() -> None:
    """Printing --help (in Chinese, catalogs included) imports neither FastAPI nor Starlette."""
    env = {**os.environ, "LANG": "zh_CN.UTF-8"}
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "app.record", "record", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=env,
    )
    assert res.returncode == 0 and "显示本帮助并退出" in res.stdout
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in res.stderr.splitlines() if "|" in ln}
    assert "app.record.cli" in imported
    assert not {m for m in imported if m.split(".")[0] in ("fastapi", "starlette")}
    assert not any(m.startswith("app.web") for m in imported)
