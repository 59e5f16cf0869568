"""The Linux v6.4 tree every cited kernel line is checked in, when it is on this machine.

The snapshot julianw1010/WASP-linux-6.4.0: its first commit is Linux 6.4.0 before any stable
patch (Makefile 6.4.0; ``tcp_ack`` at net/ipv4/tcp_input.c:3760, where 6.4.4 has 3766); the
research commits after it touch only mm and arch code, so files are read at that first commit.
Tests that need the tree call :func:`require_v6_4` and skip cleanly where it is absent.
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import pytest

V6_4_TREE = Path("/work/.mirror/julianw1010+WASP-linux-6.4.0/repo")
V6_4_COMMIT = "6e5f9d87eda5123991c10244d3ba3731b5218a94"


@cache
def v6_4_lines(path: str) -> list[str] | None:
    """The lines of ``path`` in v6.4 (None when the tree or the file cannot be read)."""
    if not V6_4_TREE.exists():
        return None
    try:
        out = subprocess.run(
            ["git", "--git-dir", str(V6_4_TREE), "show", f"{V6_4_COMMIT}:{path}"],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.decode("utf-8", "replace").splitlines()


def require_v6_4() -> None:
    """Skip unless the v6.4 tree is here; fail if it is not v6.4 before the stable patches."""
    make = v6_4_lines("Makefile")
    if make is None:
        pytest.skip("the Linux v6.4 tree is not on this machine")
    assert make[1:5] == ["VERSION = 6", "PATCHLEVEL = 4", "SUBLEVEL = 0", "EXTRAVERSION ="]
    tcp_input = v6_4_lines("net/ipv4/tcp_input.c")
    assert tcp_input is not None
    assert tcp_input[3760 - 1].startswith("static int tcp_ack(")  # 3766 from 6.4.4 on


def v6_4_file(path: str) -> list[str]:
    """The lines of ``path`` in v6.4 (after :func:`require_v6_4`); a missing file fails."""
    lines = v6_4_lines(path)
    assert lines is not None, f"{path} is not in the v6.4 tree"
    return lines
