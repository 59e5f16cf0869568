"""lib/win_minmax.c (Linux 6.4): Kathleen Nichols' windowed min/max filter, as BBR's
bandwidth filter uses it (``minmax_running_max``, ``minmax_subwin_update``)."""

from __future__ import annotations


class MinMax:
    """lib/win_minmax.c: Kathleen Nichols' windowed max with three (time, value) samples.

    ``quiet`` is the model's own: the time of the last update that changed nothing with a
    sample below the third choice (-1 after any other update). Such an update only compares
    the sample and ages the choices by time, so another sample below the third choice at the
    same time changes nothing either, and the caller may skip it (BBR's per-ACK bw sample).
    """

    __slots__ = ("quiet", "t", "v")

    def __init__(self) -> None:
        self.t = [0, 0, 0]
        self.v = [0, 0, 0]
        self.quiet = -1

    def reset(self, t: int, meas: int) -> int:
        self.t[:] = (t, t, t)
        self.v[:] = (meas, meas, meas)
        self.quiet = -1
        return meas

    def get(self) -> int:
        return self.v[0]

    def running_max(self, win: int, t: int, meas: int) -> int:
        tt, vv = self.t, self.v
        if meas >= vv[0] or t - tt[2] > win:  # a new max, or nothing left in the window
            return self.reset(t, meas)
        quiet = -1
        if meas >= vv[1]:
            tt[1] = tt[2] = t
            vv[1] = vv[2] = meas
        elif meas >= vv[2]:
            tt[2] = t
            vv[2] = meas
        else:
            quiet = t
        # minmax_subwin_update: age the choices as the window slides
        dt = t - tt[0]
        if dt > win:
            tt[0], tt[1], tt[2] = tt[1], tt[2], t
            vv[0], vv[1], vv[2] = vv[1], vv[2], meas
            if t - tt[0] > win:
                tt[0], tt[1], tt[2] = tt[1], tt[2], t
                vv[0], vv[1], vv[2] = vv[1], vv[2], meas
            quiet = -1
        elif tt[1] == tt[0] and dt > win // 4:
            tt[1] = tt[2] = t
            vv[1] = vv[2] = meas
            quiet = -1
        elif tt[2] == tt[1] and dt > win // 2:
            tt[2] = t
            vv[2] = meas
            quiet = -1
        self.quiet = quiet
        return vv[0]
