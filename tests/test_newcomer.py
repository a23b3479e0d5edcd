"""A newcomer's mistakes (issue 14): each gets a TypeError / ValueError that starts with the
function's name and says what to do, on the eager and the lazy device alike; device strings
work wherever a device does; the public modules show only public names.

The error table runs once per device; every call is made without reading the result, so a
lazy device must refuse at the call site too (not at the read).
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import x10array as xp

EAGER = xp.Device("cpu", 0, "eager")
LAZY = xp.Device("cpu", 0, "xla")
DEVICES = {"eager": EAGER, "lazy": LAZY}
ROOT = Path(xp.__file__).parents[1]


def f64(d: xp.Device, shape: tuple[int, ...] = (2, 3)) -> xp.Array:
    return xp.asarray(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), device=d)


# (id, expected exception, the name the message starts with, a regex the message must match, call(device))
Case = tuple[str, Any, str, str, Callable[[xp.Device], Any]]
CASES: list[Case] = []


def case(id: str, exc: Any, fname: str, fn: Callable[[xp.Device], Any], match: str = "") -> None:
    CASES.append((id, exc, fname, match, fn))


for _obj in (None, "abc", [1.0], 3):
    case(
        f"from_dlpack-{type(_obj).__name__}", TypeError, "from_dlpack", lambda d, o=_obj: xp.from_dlpack(o),
        match=r"does not implement __dlpack__; pass an array",
    )  # fmt: skip
case("metrics_report-file-str", TypeError, "metrics_report", lambda d: xp.metrics_report(file="abc"), "writable")
case("repeat-huge", ValueError, "repeat", lambda d: xp.repeat(f64(d), 2**70), "more than an array can hold")
case("repeat-huge-axis", ValueError, "repeat", lambda d: xp.repeat(f64(d), 2**62, axis=1), "more than")
case("fftfreq-huge", ValueError, "fftfreq", lambda d: xp.fft.fftfreq(2**70, device=d), "more than")
case("rfftfreq-huge", ValueError, "rfftfreq", lambda d: xp.fft.rfftfreq(2**70, device=d), "more than")
case("eye-huge", ValueError, "eye", lambda d: xp.eye(2**70, device=d), "more than")
case("eye-huge-product", ValueError, "eye", lambda d: xp.eye(2**32, 2**32, device=d), "more than")
case("linspace-huge", ValueError, "linspace", lambda d: xp.linspace(0.0, 1.0, num=2**70, device=d), "more than")
case("lazy_barrier-devices-int", TypeError, "lazy_barrier", lambda d: xp.lazy_barrier(devices=3), "devices must be")
case("lazy_barrier-devices-list-int", TypeError, "lazy_barrier", lambda d: xp.lazy_barrier(devices=[d, 3]), "Device")
case("lazy_barrier-wait-str", TypeError, "lazy_barrier", lambda d: xp.lazy_barrier(wait="yes"), "wait must be a bool")
case("lazy_barrier-device-unknown", ValueError, "lazy_barrier", lambda d: xp.lazy_barrier(devices="cpu:0"), "unknown")
case(
    "asarray-None-dtype", TypeError, "asarray", lambda d: xp.asarray(None, dtype=xp.float64, device=d),
    r"cannot convert NoneType to an array of numbers",
)  # fmt: skip
case("asarray-None", TypeError, "asarray", lambda d: xp.asarray(None, device=d), r"cannot convert NoneType")
case("asarray-list-None", TypeError, "asarray", lambda d: xp.asarray([1.0, None], device=d), r"cannot convert list")
for _dev in ("gpu:7:xla", "tpu", "cpu:0", "cpu:0:lazy", "cpu:x:xla", ""):
    case(f"zeros-device-{_dev}", ValueError, "zeros", lambda d, s=_dev: xp.zeros(2, device=s), re.escape(repr(_dev)))
case("asarray-device-int", ValueError, "asarray", lambda d: xp.asarray([1.0], device=0), "device string")
case("to_device-unknown", ValueError, "to_device", lambda d: f64(d).to_device("cpu:0:jit"), "unknown backend")
case("device_scope-int", TypeError, "device_scope", lambda d: xp.device_scope(0).__enter__(), "device string")
case("device_scope-unknown", ValueError, "device_scope", lambda d: xp.device_scope("npu").__enter__(), "unknown")

# NumPy arrays meet x10array arrays: both orders, several operators, and the functions.
_MIX = "NumPy arrays and x10array arrays do not mix implicitly; convert the NumPy array with xp.asarray"
case("numpy-plus-x", TypeError, "add", lambda d: np.ones(3) + f64(d, (3,)), _MIX)
case("x-plus-numpy", TypeError, "add", lambda d: f64(d, (3,)) + np.ones(3), _MIX)
case("numpy-times-x", TypeError, "multiply", lambda d: np.ones(3) * f64(d, (3,)), _MIX)
case("x-minus-numpy", TypeError, "subtract", lambda d: f64(d, (3,)) - np.ones(3), _MIX)
case("numpy-minus-x", TypeError, "subtract", lambda d: np.ones(3) - f64(d, (3,)), _MIX)
case("x-eq-numpy", TypeError, "equal", lambda d: f64(d, (3,)) == np.ones(3), _MIX)
case("x-iadd-numpy", TypeError, "add", lambda d: f64(d, (3,)).__iadd__(np.ones(3)), _MIX)
case("add-function-numpy", TypeError, "add", lambda d: xp.add(np.ones(3), f64(d, (3,))), _MIX)
case("numpy-0d-plus-x", TypeError, "add", lambda d: np.ones(()) + f64(d, (3,)), _MIX)

# A list where an array is wanted, and an integer array where a float one is: the message names
# the call that fixes it.
_ASARRAY = r"got list \(use xp\.asarray to make one\)"
case("sin-list", TypeError, "sin", lambda d: xp.sin([1.0, 2.0]), _ASARRAY)
case("mean-list", TypeError, "mean", lambda d: xp.mean([1.0, 2.0]), _ASARRAY)
case("clip-list", TypeError, "clip", lambda d: xp.clip([1.0], 0.0, 1.0), _ASARRAY)
_ASTYPE = r"got int64; convert it with xp\.astype\(x, xp\.float64\)"
case("sin-int", TypeError, "sin", lambda d: xp.sin(xp.asarray([1, 2], device=d)), _ASTYPE)
case("mean-int", TypeError, "mean", lambda d: xp.mean(xp.asarray([1, 2], device=d)), _ASTYPE)
case("inv-int", TypeError, "inv", lambda d: xp.linalg.inv(xp.eye(2, dtype=xp.int64, device=d)), _ASTYPE)
case(
    "atan2-int", TypeError, "atan2", lambda d: xp.atan2(*[xp.asarray([1, 2], device=d)] * 2),
    r"got int64; convert them with xp\.astype\(x, xp\.float64\)",
)  # fmt: skip
case(
    "bitwise_and-float", TypeError, "bitwise_and", lambda d: xp.bitwise_and(*[f64(d)] * 2),
    r"must have integer or boolean dtypes, got float64$",  # no exact conversion to name
)  # fmt: skip


def _jax_bfloat16() -> Any:
    import jax.numpy as jnp

    return jnp.ones(3, dtype=jnp.bfloat16)


case("from_dlpack-bfloat16-jax", TypeError, "from_dlpack", lambda d: xp.from_dlpack(_jax_bfloat16(), device=d),
     r"bfloat16 is not one of x10array's dtypes; convert it")  # fmt: skip

# axis=True (a bool is not an int) and axis=[0] (the standard's axes are ints or tuples): every
# public function with an `axis` parameter, found by a loop over the namespace.
_AXIS_ARGS: dict[str, Callable[[xp.Device], tuple[Any, ...]]] = {
    "concat": lambda d: ([f64(d), f64(d)],),
    "stack": lambda d: ([f64(d), f64(d)],),
    "repeat": lambda d: (f64(d), 2),
    "take": lambda d: (f64(d), xp.asarray([0], device=d)),
    "take_along_axis": lambda d: (f64(d), xp.zeros((2, 1), dtype=xp.int64, device=d)),
    "roll": lambda d: (f64(d), 1),
    "expand_dims": lambda d: (f64(d),),
    "squeeze": lambda d: (xp.ones((1, 3), device=d),),
    "searchsorted": lambda d: (xp.asarray([1.0, 2.0], device=d), f64(d)),
    "vecdot": lambda d: (f64(d), f64(d)),
    "linalg.vecdot": lambda d: (f64(d), f64(d)),
    "linalg.cross": lambda d: (f64(d, (3, 3)), f64(d, (3, 3))),
    "cross": lambda d: (f64(d, (3, 3)), f64(d, (3, 3))),
}


def public_functions() -> list[tuple[str, Callable[..., Any]]]:
    out = []
    for module, prefix in ((xp, ""), (xp.linalg, "linalg."), (xp.fft, "fft.")):
        for name in sorted(dir(module)):
            fn = getattr(module, name)
            if not name.startswith("_") and callable(fn) and not isinstance(fn, type):
                out.append((prefix + name, fn))
    return out


AXIS_FUNCTIONS = [
    (name, fn)
    for name, fn in public_functions()
    if "axis" in inspect.signature(fn).parameters and not (name.startswith("linalg.") and hasattr(xp, name[7:]))
]
for _name, _fn in AXIS_FUNCTIONS:
    _complex = _name in ("fft.fft", "fft.ifft", "fft.hfft", "fft.irfft")
    _default = (lambda d: (xp.astype(f64(d), xp.complex128),)) if _complex else (lambda d: (f64(d),))
    _args = _AXIS_ARGS.get(_name, _default)
    _short = _name.rpartition(".")[2]
    case(f"{_name}-axis-True", TypeError, _short, lambda d, f=_fn, a=_args: f(*a(d), axis=True), "must be")
    if _name not in ("fft.fftshift", "fft.ifftshift"):  # their axes may be any sequence
        case(f"{_name}-axis-list", TypeError, _short, lambda d, f=_fn, a=_args: f(*a(d), axis=[0]), "must be")
for _name in ("fft.fftshift", "fft.ifftshift"):
    case(f"{_name}-axes-True", TypeError, _name[4:], lambda d, n=_name[4:]: getattr(xp.fft, n)(f64(d), axes=True))


@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize(("exc", "fname", "match", "fn"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error(exc: Any, fname: str, match: str, fn: Callable[[xp.Device], Any], device: str) -> None:
    with pytest.raises(exc) as info:
        fn(DEVICES[device])
    message = str(info.value)
    assert re.match(rf"^(in-place )?([\w.]+\.)?{re.escape(fname)}\b", message), f"should start with {fname}: {message}"
    assert re.search(match, message), f"{match!r} not in {message!r}"
    assert not type(info.value).__module__.startswith(("numpy", "jax", "jaxlib")), type(info.value)


def test_the_axis_loop_found_the_functions_of_the_issue() -> None:
    """The loop over the namespace reaches (at least) the 17 functions the issue counted."""
    names = {name for name, _ in AXIS_FUNCTIONS}
    expected = {
        "all", "any", "argmax", "argmin", "argsort", "concat", "count_nonzero", "cumulative_prod", "cumulative_sum",
        "diff", "max", "mean", "min", "prod", "sort", "stack", "std", "sum", "var", "take", "take_along_axis",
        "unstack", "repeat", "flip", "roll", "linalg.vector_norm", "fft.rfft",
    }  # fmt: skip
    assert expected <= names, sorted(expected - names)


def test_from_dlpack_without_dlpack_is_also_the_standards_attribute_error() -> None:
    with pytest.raises(AttributeError):
        xp.from_dlpack(None)


def test_torch_bfloat16_import_says_how_to_convert() -> None:
    torch = pytest.importorskip("torch")
    t = torch.ones(3, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match=r"^from_dlpack: bfloat16 is not one of x10array's dtypes; convert"):
        xp.from_dlpack(t)
    ok = xp.from_dlpack(t.float())  # the conversion the message names works
    assert np.asarray(ok).tolist() == [1.0, 1.0, 1.0]


# -- device strings ----------------------------------------------------------------------------

STRINGS = {"xla": LAZY, "eager": EAGER, "cpu:0:xla": LAZY, "cpu:0:eager": EAGER, " CPU:0:XLA ": LAZY}


@pytest.mark.parametrize("text", list(STRINGS))
def test_device_strings_are_accepted_wherever_a_device_is(text: str) -> None:
    want = STRINGS[text]
    x = f64(EAGER)
    made = {
        "asarray": xp.asarray([1.0, 2.0], device=text),
        "zeros": xp.zeros(2, device=text),
        "ones": xp.ones(2, device=text),
        "empty": xp.empty(2, device=text),
        "full": xp.full(2, 3.0, device=text),
        "arange": xp.arange(3, device=text),
        "linspace": xp.linspace(0, 1, 3, device=text),
        "eye": xp.eye(2, device=text),
        "zeros_like": xp.zeros_like(x, device=text),
        "ones_like": xp.ones_like(x, device=text),
        "empty_like": xp.empty_like(x, device=text),
        "full_like": xp.full_like(x, 2.0, device=text),
        "from_dlpack": xp.from_dlpack(np.ones(2), device=text),
        "to_device": x.to_device(text),
        "astype": xp.astype(x, xp.float32, device=text),
        "fftfreq": xp.fft.fftfreq(4, device=text),
        "rfftfreq": xp.fft.rfftfreq(4, device=text),
    }
    for name, array in made.items():
        assert array.device == want, name
    with xp.device_scope(text) as scoped:
        assert scoped == want and xp.ones(1).device == want
    info = xp.__array_namespace_info__()
    assert info.default_dtypes(device=text) == info.default_dtypes(device=want)
    assert info.dtypes(device=text) == info.dtypes(device=want)
    xp.lazy_barrier(devices=text)
    xp.lazy_barrier(devices=[text, want], wait=True)
    assert np.asarray(made["to_device"]).tobytes() == np.asarray(x).tobytes()  # a copy keeps every bit


def test_the_default_device_variable_is_named_in_its_errors() -> None:
    if xp.Device.default.kind is not xp.DeviceKind.CPU:
        pytest.skip("this machine has an accelerator")
    env = {**os.environ, "X10ARRAY_DEFAULT_DEVICE": "gpu:0:xla", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", "import x10array as xp; xp.ones(2)"], env=env, capture_output=True,
                         text=True)  # fmt: skip
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: X10ARRAY_DEFAULT_DEVICE='gpu:0:xla': there is no GPU device"), last


# -- the public modules show public names --------------------------------------------------------


@pytest.mark.parametrize("module", ["linalg", "fft"])
def test_dir_of_an_extension_shows_only_its_public_names(module: str) -> None:
    mod = getattr(xp, module)
    public = [n for n in dir(mod) if not n.startswith("__")]
    assert public == sorted(mod.__all__)
    assert "np" not in dir(mod) and "bind" not in dir(mod) and "check_array" not in dir(mod)


# -- diff with a large n -------------------------------------------------------------------------


@pytest.mark.parametrize("device", list(DEVICES))
def test_diff_past_the_axis_length_is_empty_at_once(device: str) -> None:
    d = DEVICES[device]
    x = f64(d, (2, 5))
    for n in (5, 6, 100_000, 10**12):
        y = xp.diff(x, n=n)
        assert y.shape == (2, 0) and y.dtype == xp.float64
        if d.is_lazy:  # recorded with n capped at the length: no n passes, one graph for every such n
            assert y._data.call.params["n"] == 5
        assert np.asarray(y).shape == (2, 0)
    y = xp.diff(x, n=2, axis=1, prepend=f64(d, (2, 1)))
    np.testing.assert_array_equal(np.asarray(y), np.diff(np.concatenate([np.asarray(f64(d, (2, 1))), np.asarray(x)],
                                                                          axis=1), n=2, axis=1))  # fmt: skip
    assert xp.diff(x, axis=0, n=3).shape == (0, 5)


# -- the MNIST example's --plot ----------------------------------------------------------------------


def test_mnist_plot_without_matplotlib_fails_before_training(tmp_path: Path) -> None:
    # A `matplotlib` that cannot be imported, first on the path: the check must come before any training.
    fake = tmp_path / "fake"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(ROOT)])}
    out = subprocess.run(
        [sys.executable, "-m", "x10array.examples.mnist", "--plot", str(tmp_path / "out.png"), "--data-dir",
         str(tmp_path / "no-data-here")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert '--plot needs matplotlib: pip install -e ".[plot]"' in out.stderr
    assert "Training" not in out.stdout


def test_mnist_help_shows_every_default(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: `--help` showed no defaults."""
    from x10array.examples import mnist

    with pytest.raises(SystemExit) as info:
        mnist.main(["--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines
    options = [a for a in mnist.make_parser()._actions if a.dest != "help"]
    assert len(options) >= 11
    for action in options:
        if action.default is None:
            assert f"{action.help} ".count("(default:") == 1, action.dest  # said in words: what happens without it
        else:
            assert f"(default: {action.default})" in text, action.dest


@pytest.mark.parametrize("epochs", [1, 3])
def test_mnist_plot_draws_a_useful_picture(tmp_path: Path, epochs: int) -> None:
    """Issue 28: one epoch drew a dot per device on an axis from -0.04 to 0.04, and the time
    axis did not start at 0. One epoch: a bar per device; more: a line per device; seconds from 0."""
    from x10array.examples import mnist

    plt = mnist._pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed (the plot extra)")
    results = {
        name: [{"epoch": e, "seconds": s - e, "test_accuracy": acc + e / 1000} for e in range(epochs)]
        for name, s, acc in (("eager", 12.6, 0.98), ("xla", 6.2, 0.9734))
    }
    fig = mnist._plot(plt, results, str(tmp_path / "plot.png"))
    try:
        assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
        time, accuracy = fig.axes
        assert time.get_ylim()[0] == 0
        for ax, key, scale in ((time, "seconds", 1), (accuracy, "test_accuracy", 100)):
            values = [scale * r[key] for history in results.values() for r in history]
            low, high = ax.get_ylim()
            assert low <= min(values) and max(values) <= high  # every value shown...
            assert (max(values) - min(values)) / (high - low) > 0.1  # ...and their differences visible
        if epochs == 1:
            heights = sorted(round(p.get_height(), 6) for p in time.patches)
            assert heights == [6.2, 12.6]
            assert [t.get_text() for t in time.get_xticklabels()] == ["eager", "xla"]
        else:
            assert len(time.lines) == 2 and not time.patches
    finally:
        plt.close(fig)


def test_pyproject_offers_the_plot_extra() -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"  # the checkout's (.ci/wheel runs
    if not pyproject.is_file():  # this file against an installed wheel, whose ROOT has none)
        pytest.skip("not in a checkout")
    project = tomllib.loads(pyproject.read_text())["project"]
    assert any(r.startswith("matplotlib") for r in project["optional-dependencies"]["plot"])
