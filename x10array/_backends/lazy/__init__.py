"""The lazy XLA backend: record, then compile and run whole graphs (the X10 backend).

Life of a lazy array (the `_data` of an `Array` on an XLA device is always a `Node`):

- *pending*: `node.call` is the recipe (a primitive, its parameters, its input nodes and
  Python scalars); `node.value` is None. Recording is cheap: output shapes and dtypes come from
  a cache keyed by (primitive, parameters, input shapes/dtypes), filled by abstract evaluation
  of the primitive's lowering.
- *materialized*: `node.value` holds a device buffer (a jax array) and `node.call` is dropped,
  so the graph behind it can be freed. Later graphs that use the node read it as an input.

Materialization happens when a value is needed (`_host`, which `bool()`, `float()`,
printing, `__array__`, `__dlpack__` and device copies go through) or at `lazy_barrier()`.
A graph is keyed by its structure (primitives, parameters, wiring, input shapes and dtypes,
the device); Python scalars are inputs, not constants, so changing one does not recompile.
The first time a structure is seen it is *interpreted* (each primitive through the eager
kernels). From its `X10ARRAY_COMPILE_THRESHOLD`-th sighting on (default 2; 1 compiles every
graph at once) it is compiled with XLA as soon as compiling has paid for itself: when the
estimated cost of interpreting it so far reaches `X10ARRAY_COMPILE_PAYBACK` (default 0.5) times
the estimated cost of its compile (ski rental: rent until renting has cost a share of buying).
Both are estimates from the graph's operations and sizes by a fixed cost model
(tiering._CostModel: interpreting is charged only what a compile would save, per-operation
dispatch and passes over arithmetic results, not the multiply-adds of a matmul, data movement
or library calls, which both tiers do alike), never measured time, so a script takes the same tiers at the same points
on every run and gives the same numbers. So a training step, whose interpretation costs
milliseconds, compiles within its first steps, while a cheap graph that a scikit-learn fit runs
a dozen times does not spend more on compiling than the fit takes. The tiers agree within the
bounds that docs/eager-and-lazy.md states (the interpreter reproduces XLA's flushing of
subnormals, see _core/xla_numerics.py). Compiled programs live in an LRU cache.

Operations whose output shape depends on values (`dynamic_shape` primitives) materialize their
inputs, run eagerly and continue lazily from the result (a counted graph break).

Faults lose nothing: a run that raises (a kernel, a failed compile, out of memory, Ctrl-C)
leaves its targets pending, with their graphs and input buffers, and `lazy_barrier` keeps them
registered, so a read or the next barrier computes them again (see executor._run_and_adopt,
which also keeps donation safe). Out of memory is one MemoryError on both tiers
(executor._out_of_memory).

A gather or scatter by an index array whose values are pending carries a bounds check (see
`graph.Check`): a flag computed in the same run, after which every value that depends on an
out-of-bounds index stays unadopted and raises IndexError when read; the others are adopted.

The stages, in the order a call goes through them (each imports only `_core` and the stages
above it, and none another's underscore names; docs/architecture.md, section 5):

- `runtime`: the backend's state (`RUNTIME`): its lock, the live lists, the capture watch,
  in-flight replay results, the program cache;
- `shapes`: the output shapes and dtypes of a recorded operation (cached, bounded);
- `graph`: the nodes (Call, Node, Check), recording (`Recorder.run`, `adopt`) and the size
  guard (X10ARRAY_GRAPH_LIMIT);
- `trace`: the walk of a pending graph into its key's parts, `outside_references`, and the one
  step walker both tiers run a graph with (`replay`);
- `interpreter`: the NumPy steps (the cold tier), with XLA's subnormal flushing;
- `spmd`: the mechanics of a mesh (one SPMD program over many devices): placement in a
  layout, layouts in the key, pinned outputs, the sharded program, the agreement of processes;
- `placement`: one device or a mesh, chosen once per device: every difference between them;
- `tiering`: when a graph is interpreted and when it is compiled, and its fixed cost model;
- `lowering`: the compiled tier, how a graph becomes one jax function (its steps, its select
  writes, its packed scalars);
- `program`: the one builder of keys, donation masks and programs (`key_for`, `donation`,
  `build`) and the program itself: its tier (asked of `tiering`), the interpreted run, the
  jitted function, its lowering for x10array.debug, the compile log;
- `plans`: the barrier's program (`barrier_program`): a plan of a structure seen before, else
  the walk, donation and build;
- `executor`: materialize, barrier, running a graph on either tier and handing its values
  over, out of memory, and `LazyBackend`, registered here for XLA devices;
- `capture`: the lazy half of `x10array.compile`: record a function once, check that its graph
  alone reproduces it, and replay its compiled program on later arguments;
- `inspect`: the pending graph as data (`describe`) and as the XLA program a read would compile
  (`lower`), for `x10array.debug`, without running or changing anything.
"""

from __future__ import annotations

from ..._core.backend import register
from ..._core.devices import Backend
from . import capture as capture
from .executor import LazyBackend, barrier, from_global, from_host, materialize
from .graph import Call, Check, Node
from .inspect import Graph, Operation, describe, lower
from .tiering import NEVER, compile_threshold

__all__ = [
    "barrier", "from_host", "from_global", "materialize", "compile_threshold", "NEVER", "Call", "Check", "Node",
    "LazyBackend", "describe", "lower", "Graph", "Operation",
]  # fmt: skip

register(Backend.XLA, LazyBackend())
