"""The per-step picture: one GPU's memory as a stacked bar filled step by step (weights, the
activation peak, the runtime reserve, the KV cache, up to ``gpu_memory_utilization``), one KV
block drawn as its layers' K and V pages, the block arithmetic line by line, and the verdict.

960 units wide, scaled to the stage. Element ids are stable between frames (``dep-seg-*``,
``dep-line-*``) so the morphing swap glides the bar as it fills. The root carries the figures
as data attributes for tests and scripts."""

from __future__ import annotations

from html import escape

from app.sim.core import Frame, Message, msg
from app.sim.deploy import DeployTrace
from app.sim.deploy.narrate import STEPS, DeployState
from app.sim.deploy.tables import GiB
from app.web.explainers.deploy.link import scheduler_link

W = 960
PAD = 12
BAR_Y = 56
BAR_H = 44
INNER = W - 2 * PAD


def attr(value: object) -> str:
    return escape(str(value), quote=True)


def text(
    x: float, y: float, body: object, cls: str = "", anchor: str = "start", id: str = ""
) -> str:
    c = f' class="{cls}"' if cls else ""
    a = f' text-anchor="{anchor}"' if anchor != "start" else ""
    i = f' id="{id}"' if id else ""
    return f'<text x="{x:.1f}" y="{y:.1f}"{c}{a}{i}>{attr(body)}</text>'


def gib(n: float) -> str:
    return f"{n / GiB:.2f} GiB"


def shown(state: DeployState, step: str) -> bool:
    return state["shown"] >= STEPS.index(step)


# (key, label, css class, text class, step that reveals it)
SEGMENTS: tuple[tuple[str, Message, str, str], ...] = (
    ("weights", msg("weights"), "dep-weights", "on-dark"),
    ("activation", msg("activations (estimate)"), "dep-activation", "on-light"),
    ("reserve", msg("reserve (estimate)"), "dep-reserve", "on-light"),
    ("kv_budget", msg("KV cache"), "dep-kv", "on-light"),
)
REVEAL = {
    "weights": "weights",
    "activation": "activation",
    "reserve": "reserve",
    "kv_budget": "budget",
}


def bar(state: DeployState) -> list[str]:
    total = state["total"]
    scale = INNER / max(total, 1)
    out = [
        f'<rect class="dep-frame" x="{PAD}" y="{BAR_Y}" width="{INNER}" height="{BAR_H}" rx="4"/>'
    ]
    x = float(PAD)
    labels: list[str] = []
    for key, label, cls, tcls in SEGMENTS:
        value = int(state[key])  # type: ignore[literal-required]
        on = shown(state, REVEAL[key]) and value > 0
        width = min(value * scale, PAD + INNER - x) if on else 0.0
        over = on and x + value * scale > PAD + INNER + 0.5
        fill = "dep-over" if over else cls
        out.append(
            f'<rect id="dep-seg-{key}" class="dep-seg {fill}" x="{x:.1f}" y="{BAR_Y}" '
            f'width="{max(width, 0.0):.1f}" height="{BAR_H}"/>'
        )
        if on and width > 70:
            out.append(text(x + 6, BAR_Y + 19, str(label), tcls))
            out.append(text(x + 6, BAR_Y + 36, gib(value), tcls))
        elif on:
            labels.append(f"{label} {gib(value)}")
        x += max(width, 0.0)
    limit_x = PAD + state["requested"] * scale
    util = state["requested"] / max(total, 1)
    out.append(
        f'<line class="dep-limit" x1="{limit_x:.1f}" y1="{BAR_Y - 8}" x2="{limit_x:.1f}" '
        f'y2="{BAR_Y + BAR_H + 8}"/>'
    )
    note = str(
        msg("gpu_memory_utilization {util:.2f}: {gib}", util=util, gib=gib(state["requested"]))
    )
    out.append(text(min(limit_x, W - PAD), BAR_Y - 12, note, "dep-muted", anchor="end"))
    out.append(text(PAD, BAR_Y - 12, str(msg("one GPU: {gib}", gib=gib(total))), "dep-muted"))
    if labels:
        out.append(text(PAD, BAR_Y + BAR_H + 20, " · ".join(labels), "dep-muted"))
    return out


def block_cells(state: DeployState, y: float) -> tuple[list[str], float]:
    """One KV block: a row per layer it spans (at most 12 drawn), K and V pages side by side."""
    if not shown(state, "page"):
        return [], y
    rows = min(state["layers_per_block"], 12) if shown(state, "block") else 1
    cell_w = 130 if state["mla"] else 64
    out = [
        text(PAD, y, str(msg("one KV block ({bs} tokens)", bs=state["block_size"])), "dep-muted")
    ]
    for r in range(rows):
        yy = y + 8 + r * 9
        if state["mla"]:
            out.append(
                f'<rect id="dep-cell-{r}" class="dep-cell" x="{PAD}" y="{yy:.1f}" '
                f'width="{cell_w}" height="8"/>'
            )
        else:
            out.append(
                f'<rect id="dep-cell-{r}" class="dep-cell" x="{PAD}" y="{yy:.1f}" '
                f'width="{cell_w}" height="8"/>'
                f'<rect id="dep-cellv-{r}" class="dep-cell v" x="{PAD + cell_w}" y="{yy:.1f}" '
                f'width="{cell_w}" height="8"/>'
            )
    legend = msg("latent (MLA)") if state["mla"] else msg("K | V")
    bottom = y + 8 + rows * 9
    out.append(text(PAD, bottom + 14, str(legend), "dep-muted"))
    if shown(state, "block") and state["layers_per_block"] > rows:
        out.append(
            text(
                PAD,
                bottom + 30,
                str(msg("… {n} layers in all", n=state["layers_per_block"])),
                "dep-muted",
            )
        )
        bottom += 16
    return out, bottom + 14


def lines(state: DeployState) -> list[tuple[str, str]]:
    """(step, formula) of the block arithmetic, one per step that has one."""
    s = state
    if s["mla"]:
        page = f"page_size_bytes = {s['block_size']} × {s['head_size']} × {s['dtype_bytes']} = {s['page_bytes']:,} B"
    else:
        page = (
            f"page_size_bytes = {s['kv_heads']} × {s['block_size']} × ({s['head_size']} + "
            f"{s['head_size_v']}) × {s['dtype_bytes']} = {s['page_bytes']:,} B"
        )
    return [
        ("budget", f"kv_cache_bytes = {s['kv_budget']:,} B"),
        ("page", page),
        (
            "block",
            f"bytes_per_block = {s['layers_per_block']} × {s['page_bytes']:,} = {s['bytes_per_block']:,} B",
        ),
        (
            "blocks",
            f"num_gpu_blocks = {max(s['kv_budget'], 0):,} // {s['bytes_per_block']:,} = {s['num_gpu_blocks']:,}",
        ),
        (
            "concurrency",
            str(
                msg(
                    "max concurrency = {blocks} ÷ {per} = {conc}× (at max_model_len {mml})",
                    blocks=f"{s['num_gpu_blocks']:,}",
                    per=f"{s['blocks_per_request']:,}",
                    conc=f"{s['max_concurrency']:.2f}",
                    mml=f"{s['max_model_len']:,}",
                )
            ),
        ),
        (
            "decode",
            str(
                msg(
                    "decode step ≈ {one} ms (1 request), {full} ms ({b} requests)",
                    one=f"{s['decode_ms']:.1f}",
                    full=f"{s['decode_full_ms']:.1f}",
                    b=s["batch"],
                )
            ),
        ),
        ("prefill", str(msg("prefill step ≈ {t} ms", t=f"{s['prefill_ms']:.1f}"))),
    ]


FAILURES: dict[str, Message] = {
    "tp_heads": msg("vLLM refuses: tensor parallel does not divide the attention heads"),
    "tp_kv_heads": msg("vLLM refuses: tensor parallel and the KV heads do not split evenly"),
    "weights": msg("does not fit: the weights exceed the GPU's memory"),
    "pinned_oom": msg("does not fit: the pinned KV budget exceeds the GPU's memory"),
    "no_kv_memory": msg("vLLM refuses: no memory left for the KV cache"),
    "max_model_len": msg("vLLM refuses: one max_model_len request does not fit in the KV cache"),
}


def picture(trace: DeployTrace, frame: Frame[DeployState]) -> str:
    s = frame.state
    title = f"{s['model']} · {s['gpu']} · TP {s['tp']} × PP {s['pp']}"
    if s["pp"] > 1:
        title += " · " + str(msg("stage {stage} drawn", stage=s["stage"]))
    parts = [text(PAD, 20, title, "dep-title")]
    parts += bar(s)
    y0 = BAR_Y + BAR_H + 44
    cells, _ = block_cells(s, y0)
    parts += cells
    lx = PAD + 290
    y = y0
    for i, (step, body) in enumerate(lines(s)):
        if not shown(s, step):
            continue
        now = step == s["step"]
        parts.append(text(lx, y, body, "dep-line now" if now else "dep-line", id=f"dep-line-{i}"))
        if now:
            parts.append(
                f'<circle class="dep-now-mark" cx="{lx - 10}" cy="{y - 4:.1f}" r="4" data-focus="1"/>'
            )
        y += 20
    y = y0 + 180  # the same height at every step: the picture does not jump
    if frame.result == "refused":
        parts.append(
            text(PAD, y, "✗ " + str(FAILURES.get(s["failure"], msg("vLLM refuses"))), "dep-refused")
        )
    elif s["step"] == "verdict":
        parts.append(text(PAD, y, "✓ " + str(msg("fits")), "dep-fits"))
        href = scheduler_link(trace)
        if href:
            label = str(msg("Run the scheduler with this deployment"))
            parts.append(
                f'<a href="{attr(href)}" id="dep-run-scheduler">'
                + text(PAD + 80, y, label + " →", "dep-line now")
                + "</a>"
            )
    h = int(y + 14)
    aria = attr(msg("Step {step}: one GPU's memory and the KV block arithmetic", step=frame.index))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="dep-picture" class="dep-svg" '
        f'viewBox="0 0 {W} {h}" role="img" aria-label="{aria}" data-step="{attr(s["step"])}" '
        f'data-blocks="{s["num_gpu_blocks"]}" data-bytes-per-block="{s["bytes_per_block"]}" '
        f'data-fits="{int(s["fits"])}">' + "".join(parts) + "</svg>"
    )
