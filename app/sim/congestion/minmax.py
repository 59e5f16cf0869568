"""lib/win_minmax.c (Linux 6.4): Kathleen Nichols' windowed min/max filter, as BBR's
bandwidth filter uses it (``minmax_running_max``, ``minmax_subwin_update``)."""

from __future__ import annotations


class MinMax:
    """lib/win_minmax.c: Kathleen Nichols' windowed max with three (time, value) samples."""

    __slots__ = ("t", "v")

    def __init__(self) -> None:
        self.t = [0, 0, 0]
        self.v = [0, 0, 0]

    def reset(self, t: int, meas: int) -> int:
        self.t[:] = (t, t, t)
        self.v[:] = (meas, meas, meas)
        return meas

    def get(self) -> int:
        return self.v[0]

    def running_max(self, win: int, t: int, meas: int) -> int:
        tt, vv = self.t, self.v
        if meas >= vv[0] or t - tt[2] > win:  # a new max, or nothing left in the window
            return self.reset(t, meas)
        if meas >= vv[1]:
            tt[1] = tt[2] = t
            vv[1] = vv[2] = meas
        elif meas >= vv[2]:
            tt[2] = t
            vv[2] = meas
        # minmax_subwin_update: age the choices as the window slides
        dt = t - tt[0]
        if dt > win:
            tt[0], tt[1], tt[2] = tt[1], tt[2], t
            vv[0], vv[1], vv[2] = vv[1], vv[2], meas
            if t - tt[0] > win:
                tt[0], tt[1], tt[2] = tt[1], tt[2], t
                vv[0], vv[1], vv[2] = vv[1], vv[2], meas
        elif tt[1] == tt[0] and dt > win // 4:
            tt[1] = tt[2] = t
            vv[1] = vv[2] = meas
        elif tt[2] == tt[1] and dt > win // 2:
            tt[2] = t
            vv[2] = meas
        return vv[0]
