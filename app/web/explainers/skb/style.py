"""The sk_buff picture's stylesheet, shipped inside the SVG and scoped to ``.skb-svg``.

Pointer colours are the Okabe–Ito hues darkened for the light themes and lightened for the dark
theme so that lines and labels keep 4.5:1 against the page and panel backgrounds (tested).
Fills that carry text are light enough for dark ink (``INK``) in every theme.
"""

from __future__ import annotations

# pointer → (light theme, dark theme)
POINTER_COLOURS: dict[str, tuple[str, str]] = {
    "head": ("#0068A3", "#56B4E9"),
    "data": ("#007556", "#2FC597"),
    "tail": ("#8A5F00", "#E69F00"),
    "end": ("#A8407A", "#DA93BB"),
    "off": ("#5B6470", "#A3ACB8"),  # header offsets (mac/network/transport), gone skbs
}
INK = "#111111"  # text on coloured fills
FILLS = {
    "header": "#56B4E9",  # Okabe–Ito sky: headers are blue
    "payload": "#009E73",  # Okabe–Ito green: payload
    "shinfo": "#CC79A7",
    "page": "#009E73",
    "changed": "#F0E442",
    "banner": "#A64600",  # vermillion, darkened for white text
}
FREE = ("#E3E5E8", "#3A3F46")  # unwritten bytes (light, dark)


def css() -> str:
    light = "".join(f"--skb-{k}: {v[0]};" for k, v in POINTER_COLOURS.items())
    dark = "".join(f"--skb-{k}: {v[1]};" for k, v in POINTER_COLOURS.items())
    ptr = "".join(
        f".skb-svg .ptr-{k} line, .skb-svg .ptr-{k} path, .skb-svg .ghost-{k} {{ stroke: var(--skb-{k}); }}"
        f".skb-svg .ptr-{k} path {{ fill: var(--skb-{k}); }}"
        f".skb-svg .ptr-{k} .ptr-label {{ fill: var(--skb-{k}); }}"
        for k in ("head", "data", "tail", "end")
    )
    return (
        f".skb-svg {{ {light} --skb-free: {FREE[0]}; }}"
        f'[data-theme="dark"] .skb-svg {{ {dark} --skb-free: {FREE[1]}; }}'
        ".skb-svg text { font-family: var(--mono); fill: var(--fg); }"
        ".skb-svg .halo { paint-order: stroke; stroke: var(--bg); stroke-width: 4px;"
        " stroke-linejoin: round; }"
        ".skb-svg .bold { font-weight: 700; }"
        f".skb-svg .ink {{ fill: {INK}; }}"
        ".skb-svg .glide { transition: transform var(--glide) ease; }"
        ".skb-svg .seg { transition: x var(--glide) ease, width var(--glide) ease,"
        " fill-opacity var(--glide); stroke: var(--fg); stroke-width: 0.8; }"
        ".skb-svg .seg.free { fill: var(--skb-free); }"
        f".skb-svg .seg.header {{ fill: {FILLS['header']}; }}"
        f".skb-svg .seg.payload {{ fill: {FILLS['payload']}; }}"
        f".skb-svg .seg.shinfo {{ fill: {FILLS['shinfo']}; }}"
        ".skb-svg .seg.out { fill-opacity: 0.3; }"
        ".skb-svg .hatch-line { stroke: var(--fg); stroke-width: 1.2; stroke-opacity: 0.45; }"
        ".skb-svg .seg.hatch { fill: url(#skb-hatch); stroke: none; pointer-events: none; }"
        f".skb-svg .seg.lit {{ stroke: {FILLS['changed']}; stroke-width: 3; }}"
        ".skb-svg .bar.freed .seg { fill-opacity: 0.25; }"
        ".skb-svg .skb-struct { fill: var(--panel); stroke: var(--line); }"
        ".skb-svg .lane.primary .skb-struct { stroke: var(--orange); stroke-width: 2.5; }"
        ".skb-svg .lane.gone .skb-struct { stroke-dasharray: 4 3; }"
        ".skb-svg .lane.gone text, .skb-svg .lane.gone .ptr .ptr-label { fill: var(--skb-off); }"
        ".skb-svg .lane.gone .ptr line { stroke-dasharray: 4 3; }"
        ".skb-svg .ptr line { stroke-width: calc(var(--stroke) * 1.3); }"
        ".skb-svg .ghost { stroke-width: 1.5; stroke-dasharray: 3 3; fill: none; }"
        ".skb-svg .move line { stroke: var(--fg); stroke-width: 1.5; }"
        ".skb-svg .move path { fill: var(--fg); }"
        f".skb-svg .chip {{ fill: {FILLS['changed']}; }}"
        f".skb-svg .ptr .chip + .ptr-label {{ fill: {INK}; }}"
        ".skb-svg .axis, .skb-svg .tick, .skb-svg .leader { stroke: var(--fg); stroke-width: 1; }"
        ".skb-svg .leader { stroke-dasharray: 2 2; }"
        ".skb-svg .zoom-band { fill: var(--fg); fill-opacity: 0.08; }"
        ".skb-svg .break { stroke: var(--fg); stroke-width: 1.5; fill: none; }"
        ".skb-svg .break-gap { stroke: var(--bg); stroke-width: 4; }"
        ".skb-svg .offmark { stroke: var(--skb-off); stroke-width: 1.5; stroke-dasharray: 5 2; }"
        ".skb-svg .off-label { fill: var(--skb-off); }"
        ".skb-svg .page { fill: none; stroke: var(--fg); stroke-dasharray: 3 2; }"
        f".skb-svg .panic-banner rect {{ fill: {FILLS['banner']}; }}"
        ".skb-svg .panic-banner text { fill: #ffffff; }"
        '[data-theme="projector"] .skb-svg .ptr line { stroke-width: 3; }'
        '[data-theme="projector"] .skb-svg .seg { stroke-width: 1.5; }'
        "@media (prefers-reduced-motion: reduce) {"
        " .skb-svg .glide, .skb-svg .seg { transition: none; } }"
        # On a phone the picture keeps a readable size and scrolls inside the stage; the player
        # keeps the element marked data-focus (the acting skb's data pointer) in view.
        "@media (max-width: 700px) { .stage svg.skb-svg { min-width: 960px; } }" + ptr
    )
