"""Under the sk_buff's head buffers: a compact summary of the page frags and the frag_list
(a 17-frag GRO skb is one row, not six). Runs of alike frags are one counted chip; what this
step added or changed is a chip of its own, lit."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from app.sim.core import msg
from app.sim.skbuff.state import FragView, SkbSnapshot, SkbState
from app.web.explainers.path.geometry import SUMMARY_ROW, WIDTH, attr
from app.web.explainers.skb.layout import text_width
from app.web.explainers.skb.picture import X0 as SKB_X0

# A frame's skb state here is the sk_buff explainer's (SkbState) as the path's replay or the frame's
# own fields give it: partial (only what the picture draws), so it is read with .get() as a mapping.


def frag_list_members(state: Mapping[str, Any]) -> set[str]:
    return {str(m) for s in state.get("skbs", ()) for m in s.get("frag_list", ())}


def _frag_text(frag: FragView) -> str:
    refs = f" · refs {frag['refs']}" if frag.get("refs") else ""
    return f"{frag.get('page', 'page')} +{int(frag.get('offset', 0))} · {int(frag.get('size', 0))} B{refs}"


def _frag_key(frag: FragView) -> tuple[int, int, int]:
    return (int(frag.get("offset", 0)), int(frag.get("size", 0)), int(frag.get("refs", 0)))


Chip = tuple[str, str, bool, dict[str, str]]  # (id, text, lit, data attributes)


def _frag_chips(name: str, frags: list[FragView], before: list[FragView] | None) -> list[Chip]:
    """Runs of alike frags as one counted chip; frags this step added or changed form their
    own runs, lit. ``before`` is the same skb's frags when the walk last showed it (None: not
    shown before, nothing is lit)."""
    changed = [
        before is not None and (i >= len(before) or dict(before[i]) != dict(f))
        for i, f in enumerate(frags)
    ]
    chips: list[Chip] = []
    i = 0
    while i < len(frags):
        j = i + 1
        while (
            j < len(frags)
            and changed[j] == changed[i]
            and _frag_key(frags[j]) == _frag_key(frags[i])
        ):
            j += 1
        if j - i == 1:
            text = f"[{i}] {_frag_text(frags[i])}"
        else:
            refs = f" · refs {frags[i]['refs']}" if frags[i].get("refs") else ""
            text = (
                f"[{i}..{j - 1}] {j - i} × {int(frags[i].get('size', 0))} B"
                f" · +{int(frags[i].get('offset', 0))}{refs}"
                f" · {frags[i].get('page', 'page')}..{frags[j - 1].get('page', 'page')}"
            )
        chips.append((f"frag-{name}-{i}", text, changed[i], {"first": str(i), "count": str(j - i)}))
        i = j
    return chips


def _summary_rows(
    state: SkbState, old: Mapping[str, SkbSnapshot]
) -> list[tuple[str, str, list[Chip]]]:
    """(row id, caption, chips) for each frags array and frag_list of the frame's skbs; ``old``
    is each skb as the walk last showed it before this step (what changed since is lit). Clones
    share one skb_shared_info, so equal frags on one buffer are one row, its last chip naming
    the sharers."""
    skbs = list(state.get("skbs", ()))
    members = frag_list_members(state)
    by_name = {str(s.get("name")): s for s in skbs}
    rows: list[tuple[str, str, list[Chip]]] = []
    done: set[str] = set()
    for s in skbs:
        name = str(s.get("name"))
        if name in done or name in members:
            continue
        frags = list(s.get("frags", ()))
        if frags:
            sharing = [
                str(o.get("name"))
                for o in skbs
                if o.get("buffer") == s.get("buffer")
                and str(o.get("name")) not in members
                and list(o.get("frags", ())) == frags
            ]
            done.update(sharing)
            before = old.get(name)
            chips = _frag_chips(name, frags, list(before.get("frags", ())) if before else None)
            caption = f"{name} frags[{len(frags)}]"
            if len(sharing) > 1:
                caption = f"frags[{len(frags)}]"
                text = str(
                    msg(
                        "shared by {skbs}: one skb_shared_info",
                        skbs=" + ".join(sharing),
                    )
                )
                chips.append((f"fragshare-{name}", text, False, {"note": "1"}))
            rows.append((f"fragsum-{name}", caption, chips))
    for s in skbs:
        name = str(s.get("name"))
        flist = [str(m) for m in s.get("frag_list", ())]
        if not flist:
            continue
        before = old.get(name)
        had = {str(m) for m in before.get("frag_list", ())} if before else None
        chips = []
        for k, m in enumerate(flist):
            other = by_name.get(m)
            text = f"→ {m}"
            if other is not None:
                text += str(
                    msg(
                        " · own head buffer {buffer} · data at {data}",
                        buffer=other.get("buffer"),
                        data=other.get("data"),
                    )
                )
            lit = had is not None and m not in had
            chips.append((f"fraglist-{name}-{k}", text, lit, {"skb": m}))
        rows.append((f"fraglistsum-{name}", f"{name} frag_list", chips))
    return rows


def frags_summary(state: SkbState, old: Mapping[str, SkbSnapshot], y: float) -> tuple[str, float]:
    """The frags / frag_list rows at ``y`` (in the sk_buff picture's coordinates), and their
    height. Chips wrap onto a further row when the width runs out."""
    out: list[str] = []
    h = 0.0
    for row_id, caption, chips in _summary_rows(state, old):
        ry = y + h
        out.append(f'<g id="{attr(row_id)}" class="summary">')
        out.append(
            f'<text class="frags-caption" x="12" y="{ry + 16}">'
            f"{escape(_fit_text(caption, SKB_X0 - 20))}</text>"
        )
        x = float(SKB_X0)
        for cid, text, lit, data in chips:
            w = text_width(text, 13) + 12
            if x > SKB_X0 and x + w > WIDTH - 4:
                x, ry, h = float(SKB_X0), ry + SUMMARY_ROW, h + SUMMARY_ROW
            if data.get("note"):
                out.append(
                    f'<text id="{attr(cid)}" class="muted" x="{x:.1f}" y="{ry + 16}">'
                    f"{escape(text)}</text>"
                )
                x += w
                continue
            attrs = "".join(f' data-{k}="{attr(v)}"' for k, v in data.items())
            flag = ' data-lit="1"' if lit else ""
            out.append(
                f'<g id="{attr(cid)}" class="sum-chip{" lit" if lit else ""}"{attrs}{flag}>'
                f'<rect class="chip-bg" x="{x:.1f}" y="{ry + 2}" width="{w:.1f}" height="19" rx="4"/>'
                f'<text x="{x + 6:.1f}" y="{ry + 16}">{escape(text)}</text></g>'
            )
            x += w + 8
        out.append("</g>")
        h += SUMMARY_ROW
    return "".join(out), h


def _fit_text(text: str, width: float) -> str:
    if text_width(text, 13) <= width:
        return text
    while text and text_width(text + "…", 13) > width:
        text = text[:-1]
    return text + "…"
