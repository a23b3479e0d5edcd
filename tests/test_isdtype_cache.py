"""`isdtype` answers repeated questions from a table (`_api.data_types._ISDTYPE`): the
answers are those of the checks themselves, on the first call and the repeated one, and a
bad argument raises every time (never stored)."""

from __future__ import annotations

import numpy as np
import pytest

import x10array as xp
from x10array._api import data_types
from x10array._core.dtypes import KINDS

DTYPES = [xp.bool, xp.int8, xp.int64, xp.uint16, xp.float32, xp.float64, xp.complex64, xp.complex128]


def test_answers_are_the_checks() -> None:
    kinds = [*KINDS, *DTYPES, ("integral", xp.float32), ("real floating", "complex floating"), ()]
    for dtype in DTYPES:
        for kind in kinds:
            expected = data_types._isdtype(dtype, kind)
            assert xp.isdtype(dtype, kind) is expected and xp.isdtype(dtype, kind) is expected, (dtype, kind)


@pytest.mark.parametrize(
    ("dtype", "kind", "error"),
    [
        (xp.float64, "nope", ValueError),
        (xp.float64, ("integral", "nope"), ValueError),
        (xp.float64, 3, TypeError),
        ("float64", "real floating", TypeError),
        (np.float64, "real floating", TypeError),
    ],
)
def test_bad_arguments_raise_every_time(dtype: object, kind: object, error: type[Exception]) -> None:
    for _ in range(2):
        with pytest.raises(error, match="isdtype"):
            xp.isdtype(dtype, kind)  # type: ignore[arg-type]
