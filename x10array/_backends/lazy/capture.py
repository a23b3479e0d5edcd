"""Stage 9, capture and replay: the lazy half of `x10array.compile`.

`x10array.compile(fn)` (x10array/_capture.py) records `fn` once per signature between `begin`
and `end`: the graph from the argument arrays' values (leaves) to the outputs and to the new
values of the arguments that `fn` rebound (`w -= lr * g`), through the recording stages as any
lazy code. `end` checks that the graph alone reproduces `fn` (no value was read and no graph
was run inside it, no data-dependent shape, no bounds check of pending indices, no array other
than an argument or an output was rebound), builds its program (program.build: its key and
donation there, as a barrier's) and runs it compiled for this call (executor.run_compiled, the
persistent cache included). `Captured.replay`
runs that program on later calls' arguments: no Python execution of `fn`, no recording, no
graph key; the outputs are new materialized lazy arrays, and the rebound arguments are rebound
to their new values (`_core.primitive.rebind`, so their views follow).

The program is one of its own (program.build, not the cache's): the graph's constant Python
scalars reach it packed by kind in a few arrays placed once (`ScalarPlan`: converting ~50 of
them at every call was half a LeNet replay's host time), and the previous values of arguments
rebound in place are donated (`Captured.replay` checks that nothing else sees them). On a mesh
it is the SPMD program, keyed with the layouts, its first run checked across processes.

A leaf that is not an argument (an array the function reads from a closure or a global) is a
constant of the program; the replay checks that the array still holds that value, else the
namespace records again. Python scalars recorded in the graph are runtime inputs when they are
the very objects passed as arguments (a learning rate: the namespace passes new objects for the
recording, so that none is also a constant of the body), constants otherwise.

A replay hands its results over as executor._run_and_adopt does: once the program consumed
the donated buffers, the rebound arguments get the results whatever raises (a signal
handler). `end` does not keep a recording that another thread's barrier or read computed part
of (`Retry`, see runtime.Watch.foreign).
"""

from __future__ import annotations

import math
import threading
import time
import types
import warnings
import weakref
from typing import Any

import numpy as np

from ..._core import interrupts
from ..._core.array import Array
from ..._core.devices import Device, jax_put
from ..._core.dtypes import FROM_NUMPY
from ..._core.interrupts import deferred_signals
from ..._core.metrics import COUNTERS
from ..._core.primitive import WRITE_LOCK, rebind
from . import spmd
from .executor import barrier, materialize_nodes, run_compiled
from .graph import Node
from .lowering import unpacked
from .placement import placement_of
from .program import ONE, Program, build, donation
from .runtime import RUNTIME, Watch
from .trace import outside_references, walk


def begin(arrays: list[Array], device: Device) -> Watch | None:
    """Start recording a function of `arrays` (lazy arrays on `device`): pending values are
    computed first, so the recorded graph starts at values. None when another recording is
    under way (the caller then runs the function uncaptured: inside another recording, its
    operations become part of that one)."""
    if RUNTIME.watching[0] is not None:
        return None
    interrupts.import_jax()  # (the recording's end needs it: imported first, with Ctrl-C held)
    # Every pending array of the device is computed first, not only the arguments: an array the
    # function reads from a closure is then a leaf, a constant whose array the replay checks
    # (Captured.stale); a pending one would bake its recipe into the program unchecked.
    barrier([device], False)
    with RUNTIME.lock:
        if RUNTIME.watching[0] is not None:
            return None
        watch = RUNTIME.watching[0] = Watch(threading.get_ident())
    return watch


def recording() -> bool:
    """Whether this thread is recording a function for x10array.compile (a compiled function
    called inside another is then run as plain code, recorded into the outer graph)."""
    return RUNTIME.watching[0] is not None and RUNTIME.watched() is not None


def stop(watch: Watch) -> None:
    with RUNTIME.lock:
        if RUNTIME.watching[0] is watch:
            RUNTIME.watching[0] = None


class ScalarPlan:
    """How a captured program takes the graph's Python scalars. The function's own constants
    (`0.5 * x`, an epsilon) are the same at every call: packed by kind (dtype, weak type) into
    a few arrays placed on the device once, and taken apart inside the program, where each is
    the same weakly typed value as before (still a runtime input, never folded into the
    program, so the numbers are those of the recorded graph). The scalars passed as arguments
    (a learning rate) go as they are. (Before, each of LeNet's ~50 scalars was converted to a
    device value at every call: half a millisecond of a replay.)"""

    __slots__ = ("where", "args", "kinds", "host")

    def __init__(self, specs: list[tuple[str, Any]]):
        import jax.numpy as jnp

        self.where: list[tuple[Any, ...]] = []  # per graph scalar: ("a", k) or ("c", group, index)
        self.args: list[int] = []  # the scalar arguments the program takes, in order (indices into a call's scalars)
        self.kinds: list[tuple[Any, bool]] = []  # per group: (dtype, weak type)
        groups: dict[tuple[Any, bool], list[Any]] = {}
        for spec in specs:
            if spec[0] == "arg":  # (one input per argument, however often the graph reads it)
                if spec[1] not in self.args:
                    self.args.append(spec[1])
                self.where.append(("a", self.args.index(spec[1]), None))
                continue
            value = spec[1]
            try:
                with _x64():
                    aval = jnp.asarray(value)
                kind = (aval.dtype, bool(aval.weak_type))
            except Exception:  # (not a number jax takes as an array: passed as it is at every call)
                self.where.append(("k", value, None))
                continue
            group = groups.get(kind)
            if group is None:
                group = groups[kind] = []
                self.kinds.append(kind)
            self.where.append(("c", self.kinds.index(kind), len(group)))
            group.append(value)
        self.host = [np.array(groups[kind], dtype=kind[0]) for kind in self.kinds]

    def unpack(self, packed_args: Any) -> list[Any]:
        """Inside the program's trace: the graph's scalars, in order, from (packed constants,
        scalar arguments): lowering.unpacked."""
        packed, args = packed_args
        return unpacked(self.where, self.kinds, packed, args)


_PLACED_SCALARS = 64  # the scalar argument values a Captured keeps placed (all dropped when full)


def _signs(value: Any) -> tuple[float, ...]:
    """The signs of a float's or a complex number's parts (so that -0.0 is not 0.0)."""
    if type(value) is complex:
        return (math.copysign(1.0, value.real), math.copysign(1.0, value.imag))
    return (math.copysign(1.0, value),)


def _x64() -> Any:
    import jax

    return jax.enable_x64(True)


def _in_views(a: Any) -> bool:
    """Whether `a` takes part in views (`_api.indexing.Alias`): it views an array, or a view
    of it is alive. An array whose views are all gone (a `w.T` made while recording) may be
    donated."""
    alias = a._alias
    return alias is not None and (alias.base is not None or any(r() is not None for r in alias.views))


class Captured:
    """A recorded function's compiled program and how to feed it (see the module docstring)."""

    __slots__ = (
        "program", "device", "leaves", "scalars", "outputs", "rebinds", "key", "constants", "run", "plan", "packed",
        "donors", "kept", "made", "where", "placed", "smallest", "launched",
    )  # fmt: skip

    def __init__(self, program: Program, device: Device, leaves: list[tuple[Any, ...]], scalars: list[tuple[str, Any]],
                 outputs: list[tuple[str, Any]], rebinds: list[tuple[int, int]], key: Any, plan: ScalarPlan,
                 donate: tuple[bool, ...]):  # fmt: skip
        self.program = program
        self.device = device
        self.leaves = leaves  # per leaf: ("arg", index of the argument array) or ("const", node)
        self.scalars = scalars  # per scalar: ("arg", index of the scalar argument) or ("const", value)
        # per output: ("out", program output index) / ("arg", i) / ("scalar", j) / ("const", value)
        self.outputs = outputs
        self.rebinds = rebinds  # (argument index, program output index) of each rebound argument
        self.key = key  # what the debug check compares
        self.plan = plan
        self.packed: Any = None  # the plan's constants on the device (placed at the first run)
        self.run: Any = None  # the program's jitted function (made at the first run: program.compiled)
        self.where: Any = None  # where its inputs are placed: the device, or the mesh's replicated layout
        self.placed: dict[Any, Any] = {}  # scalar argument -> its value on the device (see `scalar`)
        # the arrays whose values are constants of the program: (weak ref to the array, its node)
        self.constants = [(c[2], c[1]) for c in leaves if c[0] == "const" and c[2] is not None]
        # the arguments whose previous values the program consumes (donated: see `replay`), and
        # the other leaves, in the program's order
        self.donors = [spec[1] for spec, d in zip(leaves, donate) if d]
        self.kept = [spec for spec, d in zip(leaves, donate) if not d]
        # per program output: (shape, NumPy dtype, x10array dtype) of the array a replay makes of it
        self.made: list[tuple[tuple[int, ...], Any, Any]] = []
        self.smallest = 0  # which output stands for the program in spmd.launched
        self.launched = placement_of(device).launched_value  # (told of each run: a CPU mesh bounds them)

    def stale(self) -> bool:
        """A constant's array was rebound since the recording (captured state changed)."""
        for ref, node in self.constants:
            owner = ref()
            if owner is not None and owner._data is not node:
                return True
        return False

    def place_constants(self) -> None:
        """Before the first run: the plan's constants and the rounding's 1.0 placed on the
        device (or the mesh, replicated) once, for every run (a NumPy scalar would be
        converted at every call)."""
        import jax

        device = self.device
        with _x64():
            where = self.where = placement_of(device).constants_target()
            self.packed = [jax.device_put(h, where) for h in self.plan.host]
            self.program.one = jax.device_put(ONE, where)

    def scalar(self, value: Any) -> Any:
        """A scalar argument (a learning rate) as the program takes it: placed on the device,
        weakly typed as the Python number is, once per value (a loop passes the same few values
        again and again; converting a Python float at each call is costly on a mesh)."""
        key = (type(value), value, _signs(value))  # (0.0 and -0.0 are equal keys otherwise)
        placed = self.placed.get(key)
        if placed is None:
            import jax

            if len(self.placed) >= _PLACED_SCALARS:
                self.placed.clear()
            with _x64():
                placed = self.placed[key] = jax.device_put(value, self.where)
        return placed

    def replay(self, arrays: list[Array], scalars: list[Any]) -> list[Any]:
        """Run the program on the arguments: its outputs; the arguments it rebinds are rebound
        to their new values (`_core.primitive.rebind`: their views follow).

        The previous value of an argument rebound in place (`w -= lr * g`, the program's
        `donors`) is donated: the program writes the new value into its buffer, as the step
        recorded at each call does (trace._donatable), when nothing else can see that value:
        no other reference to its node (a pending computation that reads it, a view), not
        handed to the host. Otherwise the program consumes a copy."""
        device = self.device
        pending = [a._data for a in arrays if a._data.value is None]
        if pending:
            materialize_nodes(pending, device)
        del pending
        donated = []
        for i in self.donors:
            a = arrays[i]
            node = a._data
            value = node.value
            if type(value) is np.ndarray:  # an interpreted (host) value: placed, so its buffer can be taken
                with _x64():
                    value = jax_put(value.copy() if node.host else value, device.jax_device)
                    if not node.host:
                        node.value = value
            # known references: a._data and `node`
            if node.exported or _in_views(a) or outside_references(node, 2) > 0:
                with _x64():
                    value = value.copy()
            donated.append(value)
        node = a = None
        kept = [arrays[spec[1]]._data.value if spec[0] == "arg" else spec[1].value for spec in self.kept]
        if np.ndarray in map(type, kept):  # an interpreted (host) value: placed once, then reused
            kept = self._placed(arrays)
        args = [self.scalar(scalars[j]) for j in self.plan.args] if self.plan.args else []
        # The hand-over (executor._run_and_adopt's rule): once the program has consumed the
        # donated buffers its results are the only copy of those values, so whatever raises
        # after it returns (a signal handler: KeyboardInterrupt, a timeout) the rebound
        # arguments get them first. The result is stored by C code (no signal is handled between
        # the return and the store: jax runs a compiled program's later calls in C++), the
        # hand-over is resumed where it stopped.
        out: list[Any] = []
        made: list[Array] = []
        done = [0]
        # (a Python function, a mesh run checked across processes: Python code runs between the
        # program's return and the store, so the signal handlers wait, see executor)
        deferred = deferred_signals() if type(self.run) is _FunctionType else None
        try:
            start = time.perf_counter()
            with RUNTIME.lock:
                free, (x64, on_device) = RUNTIME.scope(device)
                try:
                    with x64, on_device:
                        out.extend(map(self.run, (donated,), (kept,), ((self.packed, args),)))
                finally:
                    free.append((x64, on_device))
                COUNTERS.execute_seconds += time.perf_counter() - start
                COUNTERS.execute_count += 1
                COUNTERS.cache_hits += 1
                COUNTERS.captured_replays += 1
                COUNTERS.donated_buffers += len(donated)
            self._hand_over(out[0], arrays, made, done)
        except BaseException:
            if out:
                self._hand_over(out[0], arrays, made, done)
            raise
        finally:
            if deferred is not None:
                deferred.close()
        results = out[0]
        RUNTIME.in_flight[device] = results
        self.launched(results[self.smallest])  # (a CPU mesh bounds the programs in flight)
        outs: list[Any] = []
        for spec in self.outputs:
            if spec[0] == "out":
                outs.append(made[spec[1]])
            elif spec[0] == "arg":
                outs.append(arrays[spec[1]])
            elif spec[0] == "scalar":
                outs.append(scalars[spec[1]])
            else:
                outs.append(spec[1])
        return outs

    def _placed(self, arrays: list[Array]) -> list[Any]:
        """The kept leaves' values on the device, an interpreted (host) value placed there
        (and kept as the node's value, unless the host may write its buffer)."""

        kept = []
        for spec in self.kept:
            node = arrays[spec[1]]._data if spec[0] == "arg" else spec[1]
            value = node.value
            if type(value) is np.ndarray:
                with _x64():
                    value = jax_put(value.copy() if node.host else value, self.device.jax_device)
                    if not node.host:
                        node.value = value
            kept.append(value)
        return kept

    def _hand_over(self, results: Any, arrays: list[Array], made: list[Array], done: list[int]) -> None:
        """Wrap the program's results as arrays (into `made`) and rebind the arguments rebound
        in place (`done[0]` of them rebound so far): resumed where it stopped when called
        again after an interruption."""
        device = self.device
        specs = self.made
        start = len(made)  # (a materialized node and its array, their types known)
        for (shape, np_dtype, dtype), value in zip(specs[start:], results[start:]) if start else zip(specs, results):
            node = Node(None, 0, shape, np_dtype, value, 0)
            arr = _new_array(node, dtype, device)
            node.owner = _weakref(arr)
            made.append(arr)
        rebinds = self.rebinds
        if done[0] < len(rebinds):
            with WRITE_LOCK:
                while done[0] < len(rebinds):
                    i, k = rebinds[done[0]]
                    rebind(arrays[i], made[k])
                    done[0] += 1


def layouts(arrays: list[Array], device: Device) -> tuple[Any, ...]:
    """On a mesh: the canonical layout of each argument array (part of a captured function's
    signature: the program was compiled for its inputs' shardings), its pending ones computed
    first (as a replay or a recording would compute them anyway)."""
    pending = [a._data for a in arrays if a._data.value is None]
    if pending:
        materialize_nodes(pending, device)
    return tuple([spmd.layout(a._data) for a in arrays])


_new_array = Array._new
_weakref = weakref.ref
_FunctionType = types.FunctionType


class Retry:
    """What `end` returns when this recording cannot be kept but the next one may be: another
    thread's barrier or read computed part of it while it was recorded (`Watch.foreign`), so
    the graph holds that value instead of its recipe. The call's values are right (they are
    those of the function run as recorded); the next call records again."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


def end(
    watch: Watch, device: Device, arrays: list[Array], nodes: list[Node], scalars: list[Any], outputs: list[Any]
) -> Captured | str | Retry:
    """Finish the recording of a function whose argument arrays `arrays` held `nodes` and whose
    scalar arguments are `scalars`, and which returned the leaves `outputs`: its Captured
    program (already run for this call), why it cannot be captured (a sentence naming the
    line), or Retry.

    Under the lazy lock from the end of the watch to the program's first run: no other
    thread's barrier can compute the recorded graph's nodes in between (while the function
    ran, those it computed are in `watch.foreign`)."""
    with RUNTIME.lock:
        stop(watch)
        return _end(watch, device, arrays, nodes, scalars, outputs)


_DISTURBED = (
    "a barrier or a read in another thread computed part of the recording while the function ran (its value,"
    " not its recipe, would be in the program)"
)


def _end(
    watch: Watch, device: Device, arrays: list[Array], nodes: list[Node], scalars: list[Any], outputs: list[Any]
) -> Captured | str | Retry:
    foreign = watch.foreign
    watch.foreign = weakref.WeakSet()
    if watch.breaks:  # (first: what is computed from a break's result runs at once, a read too)
        return f"an operation whose result shape depends on values ({watch.breaks[0]})"
    if watch.reads:
        return f"a value was read or a graph was run inside the function (at {watch.reads[0]})"
    arg_ids = {id(n): i for i, n in enumerate(nodes)}
    for node, line in watch.checked:
        # an argument's (or a closure's, a global's: an array still alive outside) values were
        # checked for this call only; one made inside the function and gone with it holds the
        # same value at every call (a recorded constant)
        if id(node) in arg_ids or (node.owner is not None and node.owner() is not None):
            return f"a value was read or a graph was run inside the function (at {line})"
    out_ids = {id(o) for o in outputs if type(o) is Array}
    arg_arrays = {id(a) for a in arrays}
    for ref, line in watch.rebound:
        a = ref()
        if a is not None and id(a) not in arg_arrays and id(a) not in out_ids:
            return f"an array that is neither an argument nor an output was written (captured state, at {line})"
    for o in outputs:
        if type(o) is Array and o._device != device and o._device.is_lazy:
            return f"an output is on {o._device}, not on {device}"
    rebound = [(i, a._data) for i, a in enumerate(arrays) if a._data is not nodes[i]]
    targets: list[Node] = []
    index: dict[int, int] = {}

    def target(node: Node) -> int:
        if id(node) not in index:
            index[id(node)] = len(targets)
            targets.append(node)
        return index[id(node)]

    out_specs: list[tuple[str, Any]] = []
    scalar_ids = {id(v): j for j, v in enumerate(scalars)}
    for o in outputs:
        if id(o) in scalar_ids and (type(o) is float or type(o) is complex):  # a scalar argument returned
            out_specs.append(("scalar", scalar_ids[id(o)]))
        elif type(o) is not Array or not o._device.is_lazy:
            out_specs.append(("const", o))
        elif o._data.value is None:
            out_specs.append(("out", target(o._data)))
        elif id(o._data) in arg_ids:
            out_specs.append(("arg", arg_ids[id(o._data)]))
        elif foreign and o._data in foreign:
            return Retry(_DISTURBED)
        else:
            out_specs.append(("const", o))
    rebinds = []
    for i, node in rebound:
        if node.value is None:
            rebinds.append((i, target(node)))
        elif foreign and node in foreign:
            return Retry(_DISTURBED)
        else:
            return "an argument was rebound to a value computed outside the function"
    if any(n.checks for n in targets):
        return (
            "an index array was used (its bounds check, made on this call's values, cannot be replayed: a replay's"
            " out-of-bounds index would be clamped)"
        )
    if not targets:
        return "the function computes nothing on the device"
    n = len(targets)
    joined = list(targets)
    traced = walk(joined, device)  # (may add held intermediate values: not outputs of the program)
    leaf_specs: list[tuple[Any, ...]] = []
    for leaf in traced.leaves:
        if id(leaf) in arg_ids:
            leaf_specs.append(("arg", arg_ids[id(leaf)]))
        elif foreign and leaf in foreign:
            return Retry(_DISTURBED)
        else:
            owner = leaf.owner
            leaf_specs.append(("const", leaf, owner if owner is not None and owner() is not None else None))
    scalar_specs: list[tuple[str, Any]] = []
    for value in traced.scalars:
        for j, s in enumerate(scalars):
            if value is s:
                scalar_specs.append(("arg", j))
                break
        else:
            scalar_specs.append(("const", value))
    # the previous values of the arguments rebound in place: donated at each replay (when
    # nothing else sees them, see Captured.replay), if an output of their shape and dtype can
    # take their buffer
    rebound_args = {i for i, _ in rebinds}
    rebound_leaves = {k for k, spec in enumerate(leaf_specs) if spec[0] == "arg" and spec[1] in rebound_args}
    outs = joined[:n]
    plan = ScalarPlan(scalar_specs)
    # a program of its own, not the cache's: it takes its scalars packed (`plan`)
    program = build(traced, outs, device, donation(traced, outs, rebound_leaves), cached=False, unpack=plan.unpack)
    key = program.key
    constants = tuple(
        (s[0], s[1]) if s[0] == "arg" else (s[0], type(s[1]), repr(s[1])) for s in scalar_specs
    )  # fmt: skip
    leaves_key = tuple(s[1] if s[0] == "arg" else -1 for s in leaf_specs)
    captured = Captured(
        program, device, leaf_specs, scalar_specs, out_specs, rebinds, (key, constants, leaves_key), plan, key.donate
    )  # fmt: skip
    captured.made = [(t.shape, t.dtype, FROM_NUMPY[t.dtype]) for t in outs]
    captured.smallest = spmd.smallest([t.shape for t in outs])
    program.agree()  # (on a mesh of several processes: before placing anything for it)
    captured.place_constants()
    first_scalars = (captured.packed, [captured.scalar(scalars[j]) for j in plan.args])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        # compiles (or loads), runs this call
        run_compiled(program, traced, outs, device, copy_donated=True, scalars=first_scalars)
    captured.run = program.compiled
    return captured
