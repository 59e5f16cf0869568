"""A ParamError raised inside a simulation process reaches the app worker whole: the process pool
hands exceptions back pickled, and an error that cannot be unpickled broke the pool ("the
simulation process stopped unexpectedly") instead of answering 422 with the field."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.i18n import msg


def _refuse(n: int) -> None:
    raise ParamError(
        [
            ParamIssue(loc=("requests", n), msg=msg("{n} tokens is over the limit", n=n)),
            ParamIssue(loc=("config",), msg="plain words"),
        ]
    )


def test_param_error_survives_pickling() -> None:
    with pytest.raises(ParamError) as caught:
        _refuse(7)
    back = pickle.loads(pickle.dumps(caught.value))
    assert type(back) is ParamError
    assert [i.loc for i in back.issues] == [("requests", 7), ("config",)]
    assert [i.msg for i in back.issues] == ["7 tokens is over the limit", "plain words"]
    assert back.issues[0].message.params == {"n": 7}
    assert str(back) == str(caught.value)


def test_param_error_from_another_process_keeps_its_issues() -> None:
    with ProcessPoolExecutor(max_workers=1) as pool:
        with pytest.raises(ParamError) as caught:
            pool.submit(_refuse, 3).result(timeout=60)
        assert pool.submit(abs, -2).result(timeout=60) == 2  # the pool still works
    assert caught.value.issues[0].loc == ("requests", 3)
