"""Presets, registry entry, the public api_frames shape and the lesson files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.sim.core import Preset
from app.sim.skbuff import SkbExplainer, api_frames, parse, run
from app.sim.skbuff.scenarios import PRESETS

CONTENT = Path(__file__).resolve().parents[3] / "content"
SLUGS = [
    "tcp-transmit",
    "rx-frame",
    "clone-retransmit",
    "gro-linearize",
    "rx-headers",
    "gso-transmit",
    "drop-vs-consume",
    "gro-forward",
    "zerocopy-send",
    "ip-defrag",
    "page-pool-rx",
    "panic",
]


def test_registered_explainer() -> None:
    """The "skb" explainer is registered with its title, version and default preset."""
    e = SkbExplainer()
    assert e is not None and str(e.title) == "sk_buff geometry" and e.sim_version == "skb-5"
    assert [p.slug for p in e.presets] == SLUGS and e.default_preset == "tcp-transmit"


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.slug)
def test_preset_runs(preset: Preset) -> None:
    """Every preset runs in 6-18 frames; only "panic" ends early."""
    t = run(parse(preset.params))
    assert 6 <= len(t.frames) <= 18 or preset.slug == "panic"
    assert (t.ended_early is not None) == (preset.slug == "panic")
    json.dumps([dict(f.state) for f in t.frames])  # JSON-able
    assert all(f.source is not None for f in t.frames)


def test_tcp_transmit_final_headroom() -> None:
    """tcp-transmit: TCP 32 + IP 20 + eth 14 pushed on the fclone leave headroom 254."""
    t = run(parse(SkbExplainer().preset("tcp-transmit").params))  # type: ignore[union-attr]
    clone_frames = [f for f in t.frames if f.op == "skb_headroom"]
    assert "254" in clone_frames[0].narration
    c = next(s for s in clone_frames[0].state["skbs"] if s["name"] == "clone1")
    assert (c["headroom"], c["fclone"], c["len"]) == (254, "clone", 1514)
    assert [r["label"] for r in c["regions"]] == ["eth", "IP", "TCP"]


def test_rx_frame_pulls_to_payload() -> None:
    """rx-frame follows igb_build_skb: a half-page (2048) buffer gives end 1728 / truesize 2304,
    IGB_SKB_PAD = SKB_WITH_OVERHEAD(2048) - 1536 = 192 of headroom, then 14/20/32 pulls."""
    t = run(parse(SkbExplainer().preset("rx-frame").params))  # type: ignore[union-attr]
    first = t.frames[0].state["skbs"][0]
    assert (t.frames[0].op, first["end"], first["truesize"]) == ("napi_build_skb", 1728, 2304)
    put = next(f for f in t.frames if f.op == "skb_put").state["skbs"][0]
    assert (put["data"], put["len"], put["tailroom"]) == (192, 1514, 1728 - 192 - 1514)
    pulls = [f for f in t.frames if f.op == "skb_pull"]
    assert [f.state["skbs"][0]["data"] for f in pulls] == [192 + 14, 192 + 34, 192 + 66]
    assert "eth_type_trans" in pulls[0].narration
    assert all(f.op != "napi_alloc_skb" for f in t.frames)


def test_gso_transmit_segments_share_the_page() -> None:
    """gso-transmit: tcp_set_skb_tso_segs puts 3 x 1448 in cb[]; __tcp_transmit_skb copies it
    into the shared skb_shinfo (both skbs see it) and clears cb[]; skb_segment makes three
    1514-byte skbs whose frags reference the one payload page."""
    t = run(parse(SkbExplainer().preset("gso-transmit").params))  # type: ignore[union-attr]
    tso = next(f for f in t.frames if f.op == "tcp_set_skb_tso_segs").state["skbs"][0]
    assert (tso["cb"]["fields"]["tcp_gso_segs"], tso["gso_size"]) == (3, 0)
    fill = next(f for f in t.frames if f.op == "__tcp_transmit_skb").state
    by = {s["name"]: s for s in fill["skbs"]}
    assert [(by[n]["gso_size"], by[n]["gso_segs"]) for n in ("skb", "clone1")] == [(1448, 3)] * 2
    assert by["clone1"]["cb"]["layer"] is None and by["skb"]["cb"]["layer"] == "TCP_SKB_CB"
    assert by["clone1"]["ip_summed"] == "CHECKSUM_PARTIAL" and by["clone1"]["csum_offset"] == 16
    seg = next(f for f in t.frames if f.op == "skb_segment").state
    segs = [s for s in seg["skbs"] if s["name"].startswith("clone1_s")]
    assert [(s["len"], s["data_len"]) for s in segs] == [(1514, 1448)] * 3
    page = segs[0]["frags"][0]["page"]
    assert {s["frags"][0]["page"] for s in segs} == {page}
    assert seg["pages"][page]["refs"] == 1 + 3
    assert (
        t.frames[-1].op == "consume_skb" and t.frames[-1].state["skbs"][1]["status"] == "consumed"
    )


def test_drop_vs_consume_frees_the_chain_on_the_last_reference() -> None:
    """drop-vs-consume: kfree_skb_reason on the head records NETFILTER_DROP but, with a clone
    holding dataref, frees neither buf1 nor the frag_list skb; the clone's consume_skb does."""
    t = run(parse(SkbExplainer().preset("drop-vs-consume").params))  # type: ignore[union-attr]
    drop = next(f for f in t.frames if f.op == "kfree_skb")
    by = {s["name"]: s for s in drop.state["skbs"]}
    assert (by["skb"]["status"], by["skb"]["drop_reason"]) == ("dropped", "NETFILTER_DROP")
    assert by["seg2"]["status"] == "in_frag_list" and not drop.state["buffers"]["buf1"]["freed"]
    assert by["clone1"]["frag_list"] == ["seg2"] and by["clone1"]["dataref"] == 1
    last = t.frames[-1]
    by = {s["name"]: s for s in last.state["skbs"]}
    assert last.op == "consume_skb" and by["seg2"]["status"] == "consumed"
    assert last.state["buffers"]["buf1"]["freed"] and last.state["buffers"]["buf2"]["freed"]


def test_gro_forward_checksum_states() -> None:
    """gro-forward: igb marks each frame CHECKSUM_UNNECESSARY; tcp4_gro_complete turns the
    merged skb into a CHECKSUM_PARTIAL GSO packet (2 x 1448) that skb_segment cuts back into
    two 1514-byte frames, each still CHECKSUM_PARTIAL at the TCP check field."""
    t = run(parse(SkbExplainer().preset("gro-forward").params))  # type: ignore[union-attr]
    rx = [f.state for f in t.frames if f.op == "igb_rx_checksum"]
    assert [s["skbs"][-1]["ip_summed"] for s in rx] == ["CHECKSUM_UNNECESSARY"] * 2
    done = next(f for f in t.frames if f.op == "tcp4_gro_complete").state["skbs"][0]
    assert (done["ip_summed"], done["gso_size"], done["gso_segs"]) == ("CHECKSUM_PARTIAL", 1448, 2)
    assert done["csum_start"] - done["transport_header"] == 0 and done["csum_offset"] == 16
    seg = next(f for f in t.frames if f.op == "skb_segment").state["skbs"]
    out = [s for s in seg if s["name"].startswith("skb_s")]
    assert [(s["len"], s["ip_summed"]) for s in out] == [(1514, "CHECKSUM_PARTIAL")] * 2


def test_panic_preset() -> None:
    """panic: the last frame is skb_over_panic and marked panic."""
    t = run(parse(SkbExplainer().preset("panic").params))  # type: ignore[union-attr]
    assert t.ended_early == "skb_over_panic" and t.frames[-1].mark == "panic"


def test_api_frames_shape() -> None:
    """api_frames: index/op/result/skb/narration/source; "skbs" only with more than one skb."""
    t = run(parse(SkbExplainer().preset("tcp-transmit").params))  # type: ignore[union-attr]
    frames = api_frames(t)
    keys = {
        "head",
        "data",
        "tail",
        "end",
        "len",
        "data_len",
        "truesize",
        "headroom",
        "tailroom",
        "users",
        "dataref",
        "nr_frags",
    }
    assert set(frames[0]) == {"index", "op", "result", "skb", "narration", "source"}
    extra = {
        "mac_header",
        "network_header",
        "transport_header",
        "sk",
        "cb",
        "gso_size",
        "gso_segs",
        "gso_type",
        "ip_summed",
        "csum_start",
        "csum_offset",
        "drop_reason",
        "shinfo_flags",
        "uarg",
        "dst",
        "pp_recycle",
    }
    assert set(frames[0]["skb"]) == keys | extra
    assert all(isinstance(frames[0]["skb"][k], int) for k in keys)
    assert frames[0]["source"] == {
        "function": "tcp_stream_alloc_skb",
        "path": "net/ipv4/tcp.c",
        "line": 861,
    }
    assert set(frames[3]["skbs"]) == {"skb", "clone1"} and frames[3]["skb"]["dataref"] == 2
    json.dumps(frames)


def test_api_frames_carry_what_the_model_knows() -> None:
    """The JSON API gives header offsets, the owner, cb[], GSO and checksum fields and the drop
    reason as the machine keeps them (tcp_skb_entail's TCP_SKB_CB, tcp_set_skb_tso_segs,
    __tcp_transmit_skb's headers, kfree_skb_reason's reason)."""
    t = run(parse(SkbExplainer().preset("tcp-transmit").params))  # type: ignore[union-attr]
    frames = api_frames(t)
    for fr, state in zip(frames, t.frames, strict=True):
        snap = next(x for x in state.state["skbs"] if x["name"] == state.state["primary"])
        for k in ("mac_header", "network_header", "transport_header", "gso_size", "gso_segs"):
            assert fr["skb"][k] == snap[k]
        assert fr["skb"]["sk"] is snap["sk"] and fr["skb"]["ip_summed"] == snap["ip_summed"]
        assert fr["skb"]["cb"] == {"layer": snap["cb"]["layer"], "fields": snap["cb"]["fields"]}
        assert fr["skb"]["gso_type"] == snap["gso_type"]
    assert any(fr["skb"]["cb"]["layer"] for fr in frames)
    rx = api_frames(run(parse(SkbExplainer().preset("rx-headers").params)))  # type: ignore[union-attr]
    assert any(fr["skb"]["transport_header"] is not None for fr in rx)
    assert rx[-1]["skb"]["drop_reason"] is not None
    dropped = api_frames(
        run(
            parse(
                {
                    "ops": [
                        {"op": "alloc_skb", "size": 100},
                        {"op": "kfree_skb", "reason": "NO_SOCKET"},
                    ]
                }
            )
        )
    )
    assert dropped[-1]["skb"]["drop_reason"] == "NO_SOCKET"


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.slug)
def test_lesson_file(preset: Preset) -> None:
    """content/skb-<slug>.md has front matter naming this preset and 150-400 words of prose."""
    text = (CONTENT / f"{preset.lesson}.md").read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert m, "front matter between --- lines"
    meta = dict(line.split(": ", 1) for line in m.group(1).splitlines())
    assert meta["explainer"] == "skb" and meta["preset"] == preset.slug
    assert meta["title"] and meta["summary"]
    intro = re.split(r"^## Step ", m.group(2), flags=re.M)[0]
    assert 150 <= len(intro.split()) <= 400
    n = len(run(parse(preset.params)).frames)
    for step in re.findall(r"^## Step (\d+)", m.group(2), flags=re.M):
        assert int(step) < n
