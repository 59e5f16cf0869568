"""Shell lines of a script mapped to the model's knobs: ``sysctl -q net.ipv4.tcp_X=V``
settings and the kernel selftests' ``defaults.sh``. A setting whose name is a field of
:class:`app.sim.tcp.params.Sysctls` (``tcp_fin_timeout`` → ``tcp_fin_timeout_s``) is applied
(within the range ``params.parse`` allows); one whose value is not of its type or out of that
range is listed as a bad value (the web layer answers 422 naming its line); any other is listed
as having no knob in the model. The mapping reads the fields, so knobs added to ``Sysctls``
later are picked up unchanged."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from app.sim.tcp.packetdrill.ast import Script, Shell
from app.sim.tcp.params import SYSCTL_FLOAT_LIMITS, SYSCTL_INT_LIMITS, Sysctls, parse_triple

# What the kernel selftests' defaults.sh sets (tools/testing/selftests/net/packetdrill/
# defaults.sh), as name=value facts; the fast-open key and the qdisc are left out.
DEFAULTS_SH: tuple[tuple[str, str], ...] = (
    ("tcp_rmem", "4096 540000 15728640"),
    ("tcp_wmem", "4096 262144 4194304"),
    ("tcp_timestamps", "1"),
    ("tcp_syn_retries", "5"),
    ("tcp_synack_retries", "5"),
    ("tcp_frto", "2"),
    ("tcp_sack", "1"),
    ("tcp_dsack", "1"),
    ("tcp_fack", "0"),
    ("tcp_reordering", "3"),
    ("tcp_congestion_control", "cubic"),
    ("tcp_slow_start_after_idle", "0"),
    ("tcp_early_retrans", "4"),
    ("tcp_recovery", "1"),
    ("tcp_tso_win_divisor", "3"),
    ("tcp_ecn", "0"),
    ("tcp_pacing_ss_ratio", "200"),
    ("tcp_pacing_ca_ratio", "120"),
    ("tcp_notsent_lowat", "4294967295"),
    ("tcp_fastopen", "3"),
    ("tcp_syncookies", "1"),
)
_FIELDS = {f.name: f for f in dataclasses.fields(Sysctls)}


@dataclass(slots=True)
class Knobs:
    sysctls: Sysctls
    window_scaling: bool
    per_line: dict[int, dict[str, Any]] = field(default_factory=dict)

    def applied(self, ev: Shell) -> dict[str, Any]:
        return self.per_line.get(ev.line, {"applied": [], "no_model_knob": []})


def knob_name(name: str) -> str | None:
    for key in (name, name + "_s"):
        if key in _FIELDS:
            return key
    return None


def convert(key: str, value: str) -> Any:
    """``value`` as the field's type, or None when it is not one or out of range."""
    default = getattr(Sysctls(), key)
    try:
        if isinstance(default, bool):
            return int(value, 0) != 0
        if isinstance(default, int):
            v = int(value, 0)
            lo, hi = SYSCTL_INT_LIMITS.get(key, (0, 2**32))
            return v if lo <= v <= hi else None
        if isinstance(default, float):
            fv = float(value)
            flo, fhi = SYSCTL_FLOAT_LIMITS.get(key, (0.0, float(2**32)))
            return fv if flo <= fv <= fhi else None
        if isinstance(default, tuple):  # tcp_rmem / tcp_wmem: min <= default <= max bytes
            return parse_triple([int(x, 0) for x in value.split()])
    except ValueError:
        return None
    return value if isinstance(default, str) else None


def knobs(script: Script) -> Knobs:
    values: dict[str, Any] = {}
    per_line: dict[int, dict[str, Any]] = {}
    window_scaling = True
    for ev in script.events:
        if not isinstance(ev, Shell):
            continue
        settings = [*(DEFAULTS_SH if ev.defaults else ()), *ev.sysctls]
        applied: list[str] = []
        ignored: list[str] = []
        bad: list[str] = []
        for name, value in settings:
            if name == "tcp_window_scaling":
                window_scaling = value.strip() != "0"
            key = knob_name(name)
            v = convert(key, value) if key is not None else None
            if key is None or v is None:
                (ignored if key is None else bad).append(f"{name}={value}")
                continue
            values[key] = v
            applied.append(f"{name}={value}")
        per_line[ev.line] = {"applied": applied, "no_model_knob": ignored}
        if bad:
            per_line[ev.line]["bad_value"] = bad
    return Knobs(sysctls=Sysctls(**values), window_scaling=window_scaling, per_line=per_line)
