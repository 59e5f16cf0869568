"""Web half of the deployment explainer: one GPU's memory filled step by step with the KV block
arithmetic (:mod:`.picture`), questions about the next step (:mod:`.quiz`), a link that hands the result to the scheduler's editor
(:mod:`.link`), and an editor form for the deployment."""

from __future__ import annotations

from html import escape

from app.sim.core import msg
from app.sim.deploy import DeployTrace
from app.sim.deploy.narrate import DeployState
from app.sim.deploy.params import DTYPES, KV_DTYPES
from app.sim.deploy.tables import GPUS, MODELS
from app.web.editor import EditorSpec, FieldSpec, Group
from app.web.explainers.deploy.link import scheduler_link
from app.web.explainers.deploy.picture import picture
from app.web.explainers.deploy.quiz import question
from app.web.plugin import Thumbnail, WebView


def static(trace: DeployTrace) -> str:
    """Above the stage, for a deployment that fits: the hand-off to the scheduler."""
    href = scheduler_link(trace)
    if not href:
        return ""
    label = escape(str(msg("Run the scheduler with this deployment")))
    return (
        f'<p class="dep-link"><a class="button" id="dep-scheduler-link" '
        f'href="{escape(href, quote=True)}">{label}</a></p>'
    )


EDITOR = EditorSpec(
    groups=(
        Group(
            key=None,
            legend=msg("Model and GPUs"),
            fields=(
                FieldSpec(
                    key="model",
                    label=msg("model"),
                    kind="choice",
                    choices=tuple(m.id for m in MODELS),
                ),
                FieldSpec(
                    key="gpu", label=msg("GPU"), kind="choice", choices=tuple(g.id for g in GPUS)
                ),
                FieldSpec(
                    key="tensor_parallel_size",
                    label=msg("tensor_parallel_size"),
                    kind="int",
                    min=1,
                    max=64,
                ),
                FieldSpec(
                    key="pipeline_parallel_size",
                    label=msg("pipeline_parallel_size"),
                    kind="int",
                    min=1,
                    max=64,
                ),
                FieldSpec(key="dtype", label=msg("weights (dtype)"), kind="choice", choices=DTYPES),
                FieldSpec(
                    key="kv_cache_dtype",
                    label=msg("kv_cache_dtype"),
                    kind="choice",
                    choices=KV_DTYPES,
                ),
            ),
        ),
        Group(
            key=None,
            legend=msg("vLLM settings"),
            fields=(
                FieldSpec(
                    key="gpu_memory_utilization",
                    label=msg("gpu_memory_utilization"),
                    kind="number",
                    min=0.01,
                    max=1,
                ),
                FieldSpec(key="max_model_len", label=msg("max_model_len"), kind="int", min=1),
                FieldSpec(key="max_num_seqs", label=msg("max_num_seqs"), kind="int", min=1),
                FieldSpec(
                    key="max_num_batched_tokens",
                    label=msg("max_num_batched_tokens"),
                    kind="int",
                    min=1,
                ),
                FieldSpec(key="block_size", label=msg("block_size"), kind="int", min=1, max=1024),
                FieldSpec(
                    key="kv_cache_memory_bytes",
                    label=msg("kv_cache_memory_bytes"),
                    kind="int",
                    min=1,
                    unit=msg("bytes"),
                ),
            ),
        ),
    )
)

VIEW: WebView[DeployState, None] = WebView(
    picture=picture,
    static=static,
    styles=("/static/explainers/deploy/deploy.css",),
    editor=EDITOR,
    # the memory bar full and num_gpu_blocks computed: the explainer's point at a glance
    thumbnail=Thumbnail(preset="8b-one-h100", step=7),
    question=question,  # the page size, num_gpu_blocks, or whether vLLM starts at all
)
