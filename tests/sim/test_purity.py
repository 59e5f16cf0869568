"""app/sim stays stdlib-only: no web, database, plotting or validation frameworks."""

from __future__ import annotations

import ast
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "app" / "sim"
FORBIDDEN = (
    "fastapi",
    "starlette",
    "jinja2",
    "sqlmodel",
    "sqlalchemy",
    "plotly",
    "pydantic",
    "app.web",
    "app.store",
)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", ""))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.append(str(node.args[0].value))
    return names


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_sim_imports_only_stdlib_and_itself() -> None:
    """Nothing under app/sim imports web, DB, plotting or pydantic packages, app.web, app.store."""
    files = sorted(SIM.rglob("*.py"))
    assert files
    bad = [(str(p.relative_to(SIM)), n) for p in files for n in _imports(p) if _forbidden(n)]
    assert bad == []


def test_purity_checker_catches_violations(tmp_path: Path) -> None:
    """The AST check sees plain, from- and dotted imports (so the test above can fail)."""
    f = tmp_path / "x.py"
    f.write_text("import pydantic\nfrom app.web.deps import x\nimport os\nfrom fastapi import A\n")
    assert [n for n in _imports(f) if _forbidden(n)] == ["pydantic", "app.web.deps", "fastapi"]
