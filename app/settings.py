"""Runtime settings (environment prefix ``APP_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="APP_")

    root: Path = _repo_root()  # templates/, static/, content/ and node_modules/ live here
    database_url: str = ""  # default: sqlite:///<root>/data/stepscope.db
    trace_cache_mb: int = 64  # decoded traces per app process: presets pinned, others in a quarter
    page_cache_mb: int = 24  # rendered pages, frame chunks and exports kept per app process
    malloc_arenas: int = 2  # glibc malloc arenas per process (0: glibc's default, 8 per core)
    malloc_trim_s: float = 10.0  # free memory is given back to the system this often (0: never)
    # An app worker (under uvicorn's --workers) holding over this many MB of its own is replaced
    # by a fresh one, not before worker_recycle_after_s from its start (app.web.recycle; 0:
    # never); it first lets its jobs end, for at most worker_recycle_drain_s.
    worker_recycle_mb: float = 320.0
    worker_recycle_after_s: float = 120.0
    worker_recycle_drain_s: float = 120.0
    sim_workers: int = 1  # simulation processes per app process, for longer runs
    sim_nice: int = 15  # their CPU priority is lowered this much (pages and small runs first)
    sim_quick_workers: int = 1  # processes for small runs only (0: small runs share the above)
    sim_quick_nice: int = 5  # small runs' processes are lowered less: an app worker still first
    # A simulation process is replaced by a fresh one after a run that left it holding over this
    # many MB of its own (not shared with its app worker), or after this many runs (0: never).
    sim_recycle_mb: float = 128.0
    sim_recycle_runs: int = 500
    # Every finished run appends a JSON line here: predicted vs measured CPU and wall seconds,
    # the process's size (bench/soak.py reads it; None: not written).
    run_log: Path | None = None
    # Each app worker appends its memory figures (resident, private, caches) here every
    # memory_log_s seconds (app.web.memory.MemoryLog; bench/soak.py reads it; None: off).
    memory_log: Path | None = None
    memory_log_s: float = 10.0
    # ... and a tracemalloc snapshot beside it this often (0: off; tracing slows the worker).
    memory_snapshot_s: float = 0.0
    # Log each time an app worker's event loop is held longer than this (ms), with where it
    # was held (app.web.loopwatch; bench/soak.py turns it on). 0: off.
    loop_stall_ms: float = 0.0
    # An app worker's youngest objects are collected every this many net allocations, and what
    # it holds once started and once warmed up is kept out of later full collections
    # (app.web.gctune; 0: Python's defaults).
    gc_threshold: int = 20_000
    quick_run_s: float = 0.5  # runs expected to take at most this long are small
    # Hard limits of each simulation process (app.web.simproc): its address space, and the CPU
    # seconds of one run; a run over either fails alone with a 422 naming the limit (0: none).
    sim_memory_mb: int = 3072
    # ... and the memory one run may add to its process (address space, MB): a run that would
    # grow it more fails alone with a 422 naming APP_SIM_RUN_MB (0: only the limit above).
    sim_run_mb: int = 768
    sim_cpu_s: float = 120.0
    # Stored traces (a cache: run again when missing) go when stored this many days ago, and
    # the oldest go while all take more than this many MB, compressed (presets stay; 0: never).
    trace_store_days: float = 30.0
    trace_store_mb: float = 256.0
    # Users' uploaded recordings and captures: kept this many days, the oldest going while all
    # take more than this many MB (stored compressed; 0: never).
    recording_store_days: float = 30.0
    recording_store_mb: float = 256.0
    recording_quota_per_session: int = 30  # uploads per visitor session and hour
    recording_quota_per_client: int = 60  # uploads per client IP and hour
    sim_queue: int = 8  # runs that may wait for a worker (per kind) before requests get 503
    job_threshold_s: float = 1.5  # runs expected to take longer become jobs with a progress bar
    job_idle_s: float = 10.0  # a job nobody asks about for this long is cancelled (pages poll
    # every 0.5 s; an API client that stops asking has left, and its run should not go on).
    # Not less: a poll counts when a worker answers it, and a loaded worker answered polls
    # seconds late (at 4 s the soak's followed long runs were all cancelled under load)
    # Run every preset not stored yet when the app starts (scripts/serve turns it on; tests
    # leave it off), so the first visitors find their traces ready.
    warm_presets: bool = False
    expensive_runs_per_minute: int = 6  # per client, for runs expected to take over 1 s
    chromium: Path = Path("/usr/bin/chromium")  # PNG export draws in Debian's chromium
    export_nice: int = 15  # Chromium's CPU priority is lowered this much (as long runs')
    # Each app worker keeps one Chromium for PNG exports (app.web.pngbrowser), replaced by a new
    # one after this many PNGs or once its processes hold this many MB resident (summed), and
    # closed after this many seconds without a PNG (0: never, for each).
    export_browser_pngs: int = 200
    export_browser_mb: int = 1024
    export_browser_idle_s: float = 5.0
    # Let visitors run a script against this machine's own kernel as well as the model (in a
    # network namespace made for the run; needs root). Off by default: a public server should
    # not hand its kernel to anonymous visitors; turn it on for a lab or a lecture machine.
    kernel_runs: bool = False

    # Absolute links (share URLs, embed snippets, exports) are built from this, never from the
    # request's Host header, e.g. "https://stepscope.example.org". None: the request's own
    # origin, which TrustedHostMiddleware limits to ``trusted_hosts``.
    public_base_url: str | None = None
    # Host headers accepted (env APP_TRUSTED_HOSTS='["a.example","b.example"]'); the host of
    # public_base_url is always accepted. "testserver" is what Starlette's test client sends.
    trusted_hosts: list[str] = ["127.0.0.1", "localhost", "testserver"]
    secure_cookies: bool = False  # set cookies with Secure (behind an HTTPS proxy)
    # Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses or
    # networks, env APP_TRUSTED_PROXIES='["172.28.0.10"]'). The client address (every quota
    # keys on it) is the right-most hop that is not one of these; from any other peer the
    # headers are ignored. Empty (the default): the socket's peer is the client.
    trusted_proxies: list[str] = []
    max_body_bytes: int = 1_048_576  # larger request bodies are refused with 413
    share_quota_per_session: int = 100  # saved scenarios per visitor session and hour
    share_quota_per_client: int = 300  # saved scenarios per client IP and hour
    sessions_per_client: int = 600  # new visitor sessions per client IP and hour (then 429)
    classes_per_client: int = 20  # live classes one client address may have open (then 429)
    class_idle_s: int = 86_400  # a live class nobody moved for this long has ended
    session_idle_days: int = 90  # anonymous sessions unused this long, with nothing saved, go

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.root / 'data' / 'stepscope.db'}"
        return self

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"
