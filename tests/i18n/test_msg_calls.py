"""Every msg() id reaches the catalog: Babel cannot see a msg() call written inside an f-string
(the whole f-string is one token to it), so such a call would stay English for every reader."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
FSTRING = re.compile(r"^[rbuRBU]*[fF]")


def test_no_msg_call_inside_an_f_string() -> None:
    """No app module calls msg() inside an f-string's replacement fields."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and FSTRING.match(tok.string) and "msg(" in tok.string:
                found.append(f"{path.relative_to(APP.parent)}:{tok.start[0]}")
    assert found == [], "hoist these msg() calls out of their f-strings:\n" + "\n".join(found)


def test_buffer_captions_are_translated(client) -> None:  # type: ignore[no-untyped-def]
    """The sk_buff picture names where a buffer came from in the reader's language (cache
    names such as kmalloc-2k are identifiers and stay)."""
    zh = client.get("/explainers/skb/presets/gro-linearize?step=0&lang=zh-CN").text
    en = client.get("/explainers/skb/presets/gro-linearize?step=0&lang=en").text
    assert "napi 1K frag" in en or "driver page frag" in en
    assert "napi 1K 片段" in zh or "驱动页片段" in zh


def _renders_a_message(node: ast.AST) -> bool:
    """``str(msg(...))``, ``msg(...).render()`` or ``msg(...).text``: a message made text."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        arg = node.args[0] if node.args else None
        return isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "msg"
    if isinstance(node, ast.Attribute) and node.attr in ("render", "text"):
        inner = node.value
        return isinstance(inner, ast.Call) and getattr(inner.func, "id", "") == "msg"
    return False


def _import_time(tree: ast.Module) -> list[ast.AST]:
    """What a module runs when imported: its top-level statements and class bodies, not the
    bodies of functions (or lambdas) they define."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def test_no_label_is_rendered_at_import() -> None:
    """Labels are rendered per request: no module turns a msg() into text when it is imported
    (a label rendered once speaks the language of nobody in particular: English)."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _import_time(tree):
            if _renders_a_message(node):
                found.append(f"{path.relative_to(APP.parent)}:{getattr(node, 'lineno', '?')}")
    assert found == [], "render these per request:\n" + "\n".join(found)
