"""The packet-path picture's stylesheet (inlined in its root ``<svg>``, so exports keep it)."""

from __future__ import annotations

STYLE = """
.path-svg { font-family: var(--font); }
.path-svg text { fill: var(--fg); font-size: 13px; }
.path-svg .mono, .path-svg .mono text { font-family: var(--mono); }
.path-svg .muted { fill: var(--muted); }
.path-svg .small { font-size: 12.5px; }
.path-svg .lane-bg { fill: var(--panel); stroke: var(--line); stroke-width: 1; }
.path-svg .lane.lit .lane-bg { fill: var(--orange); fill-opacity: 0.28; stroke: var(--orange); stroke-width: 2; }
.path-svg .lane-head .head-under { fill: var(--bg); }
.path-svg .lane-head.lit .lane-bg { fill: var(--orange); fill-opacity: 0.28; stroke: var(--orange); stroke-width: 2; }
.path-svg .lane-head.lit .lane-name { font-weight: 700; }
.path-svg .trail { fill: none; stroke: var(--muted); stroke-width: 2; stroke-opacity: 0.55; stroke-linejoin: round; }
.path-svg .trail-dot { fill: var(--muted); fill-opacity: 0.55; }
.path-svg .cur-dot { fill: var(--orange); stroke: var(--fg); stroke-width: 1.5; transition: transform var(--glide) ease; }
.path-svg .cur-box { fill: var(--bg); stroke: var(--orange); stroke-width: 2; }
.path-svg .cur-text { font-family: var(--mono); font-weight: 700; }
.path-svg .hook .hook-mark { fill: var(--bg); stroke: var(--purple); stroke-width: 2; }
.path-svg .hook.passed .hook-mark { fill: var(--purple); }
.path-svg .hook.lit .hook-mark { fill: var(--vermillion); stroke: var(--fg); }
.path-svg .hook .hook-line { stroke: var(--purple); stroke-dasharray: 3 3; stroke-width: 1; }
.path-svg .hook.future text { fill: var(--muted); }
.path-svg .hook.lit text { font-weight: 700; }
.path-svg .hook.lit .hook-tag { fill: var(--vermillion); fill-opacity: 0.2; stroke: var(--vermillion); }
.path-svg .hook .hook-tag { fill: none; stroke: none; }
.path-svg .ctx rect { stroke: var(--fg); stroke-width: 1; }
.path-svg .ctx-process rect { fill: #0072B2; }
.path-svg .ctx-process text { fill: #ffffff; }
.path-svg .ctx-softirq rect { fill: #009E73; }
.path-svg .ctx-softirq text { fill: #000000; }
.path-svg .ctx-hardirq rect { fill: #E69F00; }
.path-svg .ctx-hardirq text { fill: #000000; }
.path-svg .ctx text { font-weight: 700; }
.path-svg .stack-line text { font-family: var(--mono); font-size: 12.5px; }
.path-svg .stack-line.top rect { fill: var(--orange); fill-opacity: 0.28; stroke: var(--orange); }
.path-svg .stack-line.top text { font-weight: 700; }
.path-svg .stack-line rect { fill: none; }
.path-svg .panel { fill: var(--panel); stroke: var(--line); }
.path-svg .napi-on text.v { font-weight: 700; }
.path-svg .held rect { fill: var(--green); fill-opacity: 0.25; stroke: var(--green); }
.path-svg .held.lit rect { stroke: #F0E442; stroke-width: 3; }
.path-svg .held.lit text { font-weight: 700; }
.path-svg .changed-val { fill: var(--fg); font-weight: 700; }
.path-svg a text { fill: var(--link); text-decoration: underline; }
.path-svg a:focus text, .path-svg a:hover text { font-weight: 700; }
.path-svg .hdr line, .path-svg .hdr polyline { stroke-width: 2; fill: none; }
.path-svg .hdr-mac line, .path-svg .hdr-mac polyline { stroke: var(--blue); }
.path-svg .hdr-network line, .path-svg .hdr-network polyline { stroke: var(--vermillion); }
.path-svg .hdr-transport line, .path-svg .hdr-transport polyline { stroke: var(--purple); }
.path-svg .sum-chip rect.chip-bg { fill: var(--panel); stroke: var(--line); }
.path-svg .sum-chip.lit rect.chip-bg { stroke: #F0E442; stroke-width: 3; }
.path-svg .sum-chip.lit text { font-weight: 700; }
.path-svg .hdr text { font-family: var(--mono); font-size: 12.5px; paint-order: stroke; stroke: var(--bg); stroke-width: 3px; }
.path-svg .drop text { fill: var(--vermillion); font-weight: 700; }
.stage svg.path-svg svg.skb-svg { min-width: 0; }
@media (max-width: 700px) {
  .stage svg.path-svg { min-width: 1000px; }
  .stage:has(> svg.path-svg) { max-height: 60vh; overflow: auto; }
}
@media (prefers-reduced-motion: reduce) { .path-svg .cur-dot { transition: none; } }
"""
