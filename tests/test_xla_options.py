"""`_core.xla_options`: x10array's per-compile XLA options, per jaxlib version, that leave the
user's XLA_FLAGS alone and reach every compile of x10array's (the lazy programs)."""

from __future__ import annotations

import numpy as np
from _util import forget_programs

import x10array as xp
from x10array._core import xla_options
from x10array.extend import settings


def test_options_are_per_jaxlib_version_and_yield_to_xla_flags(monkeypatch):
    version = xla_options._jaxlib_version()
    monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), {None: {"xla_backend_optimization_level": 2}})
    assert xla_options.compiler_options("cpu") == {"xla_backend_optimization_level": 2}
    assert xla_options.compiler_options("cpu", xla_options.NARROW) is None  # a kind not measured: defaults
    assert xla_options.compiler_options("tpu") is None  # nothing measured there
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=1")
    assert xla_options.compiler_options("cpu") is None  # the user's flag wins
    monkeypatch.setitem(xla_options._MEASURED, ("0.0", "cpu"), {None: {"xla_backend_optimization_level": 0}})
    assert ("0.0", "cpu") != (version, "cpu")


def _assert_barrier_refused(what: str) -> None:
    """A barrier whose compile XLA refuses for the invalid YNNPACK option set by the test."""
    try:
        xp.lazy_barrier(wait=True)
    except Exception as e:  # noqa: BLE001 - XLA's error, wrapped or not
        assert "ynn_fusion_type" in str(e), e
    else:
        raise AssertionError(f"{what} did not reach the compile")


def test_a_lazy_compile_passes_the_options(monkeypatch):
    """An invalid option makes XLA refuse the compile: proof that the lazy program got it
    (and the failed compile keeps the arrays pending, with their values after the fix)."""
    version = xla_options._jaxlib_version()
    lazy = xp.Device("cpu", 0, "xla")
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=1):
        # first with valid options: the subnormal probes of these operations (cached per
        # operation, for the process) are made now, so the bad option below fails no probe
        np.asarray(xp.tanh(xp.asarray(np.ones(3), device=lazy)) * 3.0 + 1.0)
        bad = {None: {"xla_cpu_experimental_ynn_fusion_type": "?"}}
        monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), bad)
        host = np.arange(11.0) * 0.5  # another shape: another program, compiled now
        y = xp.tanh(xp.asarray(host, device=lazy)) * 3.0 + 1.0
        _assert_barrier_refused("the option")
        monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), {})
        np.testing.assert_allclose(np.asarray(y), np.tanh(host) * 3.0 + 1.0, rtol=1e-15)


# -- programs with a narrow reduction ------------------------------------------------------------


def test_a_program_is_narrow_when_its_sizeable_reductions_run_over_a_short_last_axis():
    """The measured rule (xla_options._MEASURED): YNNPACK's reduce fusion is slow over a short
    last axis and fast (or machine-dependent) elsewhere."""
    kind_of, NARROW = xla_options.kind_of, xla_options.NARROW
    assert kind_of([((500_000, 2), (1,), False)], False) == NARROW
    assert kind_of([((5000, 5, 4), (2,), False), ((5000, 5), (1,), False)], False) == NARROW  # k-means' distances
    assert kind_of([((5000, 5, 4), (2,), False)], True) is None  # beside a matrix product
    assert kind_of([((5000, 5, 4), (2,), False), ((1_000_000,), (0,), False)], False) is None  # and a long sum
    assert kind_of([((5000, 5, 4), (2,), False), ((5, 4), (0, 1), False)], False) == NARROW  # and a small one
    assert kind_of([((250_000, 4), (0,), False)], False) is None  # over a leading axis: slower on some CPUs
    assert kind_of([((62_500, 16), (1,), False)], False) is None and kind_of([((256, 784), (1,), False)], False) is None
    assert kind_of([((256, 10), (1,), False)], False) is None and kind_of([], False) is None
    # a reduction of elementwise work on a column (policies.COLUMN_READS): narrow wherever it is,
    # beside a long contiguous sum too, unless small or beside a matrix product
    column = ((1_000_000,), (0,), True)
    assert kind_of([column], False) == NARROW and kind_of([column, ((1_000_000,), (0,), False)], False) == NARROW
    assert kind_of([((4096,), (0,), True)], False) is None and kind_of([column], True) is None


def _kinds(fn, *hosts: np.ndarray) -> list:
    """The option kinds of the programs that `fn`'s graph makes (read at a barrier)."""
    from x10array._backends.lazy import program

    forget_programs()
    lazy = xp.Device("cpu", 0, "xla")
    out = fn(*[xp.asarray(h, device=lazy) for h in hosts])
    xp.lazy_barrier()
    del out
    return [entry[0].kind for entry in program.RUNTIME.programs.entries.values()]


def test_a_program_finds_its_kind_from_its_reductions_and_products():
    rng = np.random.default_rng(0)
    X, C, W = rng.standard_normal((500, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    distances = lambda x, c: xp.argmin(xp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=2), axis=1)  # noqa: E731
    assert _kinds(distances, X, C) == [xla_options.NARROW]  # k-means' distance program
    assert _kinds(lambda x: xp.mean(x * 2.0, axis=-1), X) == [xla_options.NARROW]
    assert _kinds(lambda x: xp.sum(x * x), X) == [xla_options.NARROW]  # (every axis: the last one too)
    assert _kinds(lambda x: xp.sum(x * x, axis=0), rng.standard_normal((5000, 4))) == [None]  # a leading axis
    # a matrix product keeps XLA's defaults, whose fusions make it fast (policies.MATRIX_PRODUCTS)
    assert _kinds(lambda x, c, w: xp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=2) @ w, X, C, W) == [None]
    assert _kinds(lambda x: xp.sum(x * 2.0, axis=1), rng.standard_normal((50, 64))) == [None]  # a long last axis
    assert _kinds(lambda x: xp.exp(x) * 2.0, X) == [None]  # no reduction
    P = rng.standard_normal((5000, 2))
    gauss = lambda p: xp.mean(xp.exp(-(p[:, 0] ** 2)))  # noqa: E731  # Monte-Carlo's, on a column
    assert _kinds(gauss, P) == [xla_options.NARROW]
    assert _kinds(lambda p: xp.max(xp.tanh(p[..., 1:2]) + 1.0), P) == [xla_options.NARROW]
    wide = rng.standard_normal((5000, 64))
    assert _kinds(lambda p: xp.mean(xp.exp(p[:, 3])), wide) == [xla_options.NARROW]
    assert _kinds(lambda p: xp.mean(xp.exp(p[:, ::-1])), wide) == [None]  # every element, reversed
    assert _kinds(lambda p: xp.sum(p[:, 0]), P) == [None]  # a column alone: faster with XLA's defaults
    assert _kinds(lambda p: xp.mean(xp.exp(xp.permute_dims(p, (1, 0))[0])), P) == [None]  # a transposed row
    assert _kinds(lambda p: xp.mean(xp.exp(xp.reshape(p, (-1,))[::2])), P) == [None]  # a stride, not a column
    assert _kinds(lambda p: xp.exp(p[:, 0]) * 2.0, P) == [None]  # no reduction
    assert _kinds(gauss, P[:2000]) == [None]  # 2,000 elements: too small to weigh


def test_column_reads_are_told_from_the_index_description():
    """policies.COLUMN_READS of GETITEM: one element kept of a last axis longer than 1, by an
    integer or a slice (whose stop is None where a negative step runs to the axis' start)."""
    from x10array._api.indexing import GETITEM
    from x10array._core.policies import COLUMN_READS

    reads = COLUMN_READS.get(GETITEM)
    whole = ("s", 0, 10, 1)
    assert reads({"index": (whole, ("a", 0))}, (10, 2)) and reads({"index": (whole, ("s", 1, 2, 1))}, (10, 2))
    assert reads({"index": (whole, ("s", 0, None, -1), ("n",))}, (10, 2))  # [:, 0::-1, None]: one element
    assert not reads({"index": (whole, ("s", 1, None, -1))}, (10, 2))  # [:, ::-1]: both
    assert not reads({"index": (whole, ("a", 0))}, (10, 1))  # (a last axis of one element: contiguous)
    assert not reads({"index": (("a", 0), ("s", 0, 2, 1))}, (10, 2))  # a row
    assert not reads({"index": (whole, ("s", 0, 3, 2))}, (10, 3))  # [:, ::2] of three: two of them


def test_a_narrow_program_compiles_with_its_own_options(monkeypatch):
    """An invalid option for the narrow kind alone makes XLA refuse the narrow program's
    compile and no other (the options reached that program only)."""
    version = xla_options._jaxlib_version()
    lazy = xp.Device("cpu", 0, "xla")
    host = np.arange(12.0).reshape(6, 2)
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=1):
        np.asarray(xp.sum(xp.asarray(host, device=lazy) * 3.0, axis=1))  # (its probes made first)
        bad = {xla_options.NARROW: {"xla_cpu_experimental_ynn_fusion_type": "?"}}
        monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), bad)
        wide = xp.sum(xp.asarray(np.ones((3, 40)), device=lazy) * 3.0, axis=1)  # a long last axis
        np.testing.assert_array_equal(np.asarray(wide), np.full(3, 120.0))
        y = xp.sum(xp.asarray(host[:5], device=lazy) * 3.0, axis=1)  # another shape: compiled now
        _assert_barrier_refused("the narrow kind's option")
        monkeypatch.setitem(xla_options._MEASURED, (version, "cpu"), {})
        np.testing.assert_array_equal(np.asarray(y), host[:5].sum(axis=1) * 3.0)


def test_the_compile_log_names_a_narrow_program_and_its_options(capsys):
    """X10ARRAY_LOG_COMPILES says which programs got options of their own, and which."""
    lazy = xp.Device("cpu", 0, "xla")
    rng = np.random.default_rng(1)
    with settings.override(X10ARRAY_COMPILE_THRESHOLD=1, X10ARRAY_LOG_COMPILES=True):
        x = xp.asarray(rng.standard_normal((301, 4)), device=lazy)
        np.asarray(xp.sum(x * 0.5, axis=1))
        narrow = capsys.readouterr().out
        np.asarray(xp.sum(xp.asarray(rng.standard_normal((7, 33)), device=lazy) * 0.5, axis=1))
        wide = capsys.readouterr().out
    assert "compiling" in narrow and xla_options.NARROW in narrow, narrow
    for name, value in (xla_options.compiler_options("cpu", xla_options.NARROW) or {}).items():
        assert f"{name}" in narrow and str(value) in narrow, narrow
    assert "compiling" in wide and xla_options.NARROW not in wide and "XLA options" not in wide, wide
