"""Web half of the sk_buff explainer: the to-scale picture and an op-list editor."""

from __future__ import annotations

from app.sim.core import msg
from app.sim.skbuff.ops import INT_FIELDS, MAX_OPS, SPECS, STR_FIELDS
from app.sim.skbuff.state import SkbState
from app.web.editor import EditorSpec, FieldSpec, Rows, whole
from app.web.explainers.skb.picture import picture
from app.web.explainers.skb.quiz import question
from app.web.plugin import Thumbnail, WebView

_TEXT = ("skb", "from", *STR_FIELDS, "via")

EDITOR = EditorSpec(
    rows=(
        Rows(
            key="ops",
            legend=msg("Kernel calls, in order"),
            item=msg("op"),
            fields=(
                FieldSpec(key="op", label=msg("op"), kind="choice", choices=tuple(sorted(SPECS))),
                *(whole(k, msg(k)) for k in INT_FIELDS),
                *(FieldSpec(key=k, label=msg(k), kind="text") for k in _TEXT),
            ),
            kind_field="op",
            fields_by_kind={
                name: ("skb", *spec.required, *spec.optional, "via") for name, spec in SPECS.items()
            },
            new_row={"op": "skb_put", "len": 100},
            max_rows=MAX_OPS,
        ),
    )
)

VIEW: WebView[SkbState, None] = WebView(
    picture=picture,
    editor=EDITOR,
    # eth_type_trans has pulled the Ethernet header; ip_local_deliver_finish pulls the IP one
    thumbnail=Thumbnail(preset="rx-frame", step=4),
    question=question,  # where data points after the next push / pull / reserve / put
)
