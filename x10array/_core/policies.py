"""Backend policies about primitives, registered beside the primitive they concern.

A `Primitive` (`primitive.py`) holds facts about the op that hold on every backend: its
kernel, lowering and shape/dtype rule, whether its shape depends on values, whether it
returns several results or writes in place. A *policy* is one backend's choice about how to
run an op: the eager NumPy executor silences NumPy's floating-point warnings for some ops,
the lazy backend's cost model does not count library routines, the lazy recorder rewrites a
matmul of a transpose. Policies live here, one registry per policy, and are filled right
under the primitive's definition, as JAX registers a lowering or a transpose rule:

    _SOLVE = Primitive("linalg.solve", _solve_kernel)
    NUMPY_QUIET.add(_SOLVE)
    COST_LIBRARY.add(_SOLVE)

Why one small registry object per policy, in `_core`, rather than a table keyed by
(backend, policy name) or registries inside each backend:

- `_api`, where primitives are defined, may import `_core` only, never a backend; the
  backends import `_core` only, never `_api`. `_core` is the one place both can reach.
- A named object is found by grep at every registration and every read, and a misspelt one
  is an ImportError, not an entry in a table that no backend reads.
- Each registry names the backend that reads it (`reader`), and tests/test_policies.py
  checks that this backend does read it and that every entry is a primitive of `OP_TABLE`.
- The read is as cheap as the attribute it replaced: a backend binds the registry's set or
  dict once at import (`_QUIET = NUMPY_QUIET.members`) and asks `prim in _QUIET`, one C-level
  hash lookup on the primitive's identity. The set and dict are never replaced, only added
  to, so a primitive registered later (by `nn`, or a user's extension) is seen at once.

The registries, and who reads them:

`NUMPY_QUIET` (the eager backend's NumPy executor, `_backends/eager.py`)
    The kernel may raise floating-point warnings that the standard does not have (division
    by zero, overflow to inf): the NumPy executor runs it with every warning ignored. (The
    lazy interpreter ignores them for every op; XLA raises none.)
`COST_LIBRARY` (the lazy backend's cost model and interpreter, `_backends/lazy/`)
    The kernel is one call into a numerical library routine (LAPACK, FFT) that a compiled
    program calls as well, no faster: the cost model does not count its time towards paying
    for a compile, and the lazy interpreter counts its results as flushed to XLA's numerics
    already, as an arithmetic op's (see `_replay`).
    (Not matmul: XLA's own GEMM differs from NumPy's BLAS, for better or worse, and fuses
    with its neighbours.)
`MATRIX_PRODUCTS` (the lazy backend's programs, `_backends/lazy/program.py`)
    The lowering computes a matrix product (XLA's dot): a program holding one keeps XLA's
    default options (`_core.xla_options`: YNNPACK's elementwise fusion into the dot makes
    `relu(A @ W)` faster) even where one of its reductions is narrow.
`COLUMN_READS` (the lazy backend's programs, `_backends/lazy/program.py`)
    `rule(params, shape) -> bool`: whether the operation, on an operand of `shape`, reads a
    column: keeps one element of the operand's last axis, of more than one (`p[:, 0]`,
    `t[..., 2]`, `p[:, 1:2]`), so that its result is strided in the operand's memory. A program that
    reduces elementwise work on a column gets the dot fusion alone (`_core.xla_options`:
    YNNPACK's default fusions run such a reduction several times slower, `mean(exp(-(p[:, 0] ** 2)))`).
`SLICE_BOXES` (the lazy backend's compiled tier, `_backends/lazy/lowering.py`)
    `rule(params, shape) -> int | None`: the primitive reads (`x[index]`) or, if `in_place`,
    writes (`x[index] = value`) a box of an operand of `shape` given by static slices alone
    (no integer or array index): the number of elements in the box; None otherwise. Two such
    primitives with equal key parameters name the same positions. A compiled write whose
    value reads the array it writes at other positions (a stencil's neighbours), over at least
    half of it or into an array the program computes, is lowered as a select of the whole
    array (`lowering.select_writes`).
`GRAPH_REWRITES` (the lazy backend's recorder, `_backends/lazy/`)
    `rewrite(operands, producers, params) -> (operands, params) | None`: `operands` are the
    recorded operands (with `.shape`), `producers[i]` the (primitive, params, inputs) of the
    operation that made operand i, or None. A result is what to record instead
    (matmul absorbs a transpose, which XLA's CPU code would otherwise copy). A rule names the
    primitives whose producers it reads (`register(..., reads=...)`): the recorder keeps
    what made their results (the node's `origin`) even once computed, so a rewrite happens
    whether or not another thread's barrier ran the producer in between (its bits never
    depend on the timing of threads).
`XLA_HOST_KERNELS` (the eager backend's XLA executor, `_backends/eager.py`)
    `kernel(flush, *buffers, **params) -> ndarray | None`: on the CPU, a NumPy function that
    gives the bits of the primitive's XLA program (`flush`: whether XLA flushes subnormals
    here, `xla_numerics.xla_flushes`), run on host views of the operands instead of compiling a
    program for each new shape and dtype (a cast: one per dtype pair and size; comparisons,
    logical and bitwise operations, all/any: `kernels.numpy_on_flushed`); None where it does
    not apply (the XLA program runs). tests/test_eager_xla.py checks the bits.
`INTERPRETER_UFUNCS` (the lazy backend's interpreter, `_backends/lazy/interpreter.py`)
    `ufunc`: the primitive's NumPy kernel, on real, integer and boolean operands of one shape
    (arrays, Python scalars), is exactly this NumPy ufunc of its operands, with no parameters.
    The interpreter may then write its result into an operand's buffer that nothing reads
    afterwards (`out=`: the same loop on the same operands, the same bits, no new buffer;
    `NumpySteps._into`). tests/test_interpreter_into.py checks each rule against the kernel.
`INTERPRETER_BLOCKS` (the lazy backend's interpreter, `_backends/lazy/interpreter.py`)
    A primitive of `INTERPRETER_UFUNCS` whose ufunc gives each element of its result from the
    operands' elements at that position alone, whatever the array's length, strides or where
    a block of it starts: an exactly rounded IEEE operation (add, subtract, multiply,
    negative) or a comparison; or one of `INTERPRETER_BLOCKS_UNCAST` under its condition. The
    interpreter may then run a chain of them block by block (strip-mining, as numexpr does:
    `Schedule`'s blocked runs), its dead intermediates held in block-sized buffers that stay
    in the cache. tests/test_interpreter_blocks.py.
`INTERPRETER_BLOCKS_UNCAST` (the lazy backend's interpreter, `_backends/lazy/interpreter.py`)
    A primitive of `INTERPRETER_BLOCKS` whose NumPy loop (SIMD or scalar) is picked by the
    operands' and the output's layout: `exp`, whose float64 AVX512F loop runs where the output
    is contiguous, aligned and the input itself or at least 64 bytes away from it, else the
    scalar `npy_exp` (which rounds otherwise), and whose float32 SIMD loop runs where they do
    not overlap. Blocked only on float32 or float64 operands of the result's dtype and the
    run's shape (no cast buffers, no broadcast rows), in blocks of at least 8 elements: each
    block's output is then contiguous, aligned and the input or far from it, as the whole
    array's is, so each element takes the loop it takes in the whole array (the same in every
    SIMD position: a short tail block is masked, not a different loop).
`INTERPRETER_BLOCK_COUNTS` (the lazy backend's interpreter, `_backends/lazy/interpreter.py`)
    `rule(params, ndim) -> (count, finish) | None`: where the primitive with these parameters
    on an operand of `ndim` axes is an exact integer count over every axis (count_nonzero),
    `count(block) -> int` counts one block and `finish(total)` is the kernel's result for the
    total, so a blocked run ends in it, accumulated per block; None otherwise.
`INTERPRETER_BLOCK_SUMS` (the lazy backend's interpreter, `_backends/lazy/interpreter.py`)
    `rule(params, shape, dtype) -> finish | None`: where the primitive with these parameters
    on a C-contiguous operand of `shape` and `dtype` is NumPy's `add.reduce` of the whole
    operand as one pairwise sum (one axis, float32 or float64: no cast buffers) followed by
    `finish(total)`, the kernel's result from that sum (mean: the sum over the count). A
    blocked run may then end in it: its blocks follow NumPy's pairwise tree (halves rounded
    down to a multiple of 8, as `pairwise_sum` splits), each block's `add.reduce` is that
    node's sum, and the nodes are added as the tree adds them, so the same bits as the whole
    array's sum; None otherwise (a float sum split any other way rounds otherwise). Read only
    where this NumPy's `add.reduce` of a whole contiguous array is that one pairwise sum
    (interpreter.numpy_sums_pairwise, checked once: NumPy 2.4's is; 2.1's sums 8192-element
    chunks one after another, and there no mean is blocked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .primitive import Primitive

__all__ = [
    "PrimitiveSet", "PrimitiveRules", "NUMPY_QUIET", "COST_LIBRARY", "MATRIX_PRODUCTS", "COLUMN_READS",
    "SLICE_BOXES", "GRAPH_REWRITES", "XLA_HOST_KERNELS", "INTERPRETER_UFUNCS", "INTERPRETER_BLOCKS",
    "INTERPRETER_BLOCKS_UNCAST", "INTERPRETER_BLOCK_COUNTS", "INTERPRETER_BLOCK_SUMS", "REGISTRIES", "FLAGS", "facts",
]  # fmt: skip


def _check(registry: str, prim: Any) -> None:
    if not isinstance(prim, Primitive):
        raise TypeError(f"{registry}: expected a Primitive, got {type(prim).__name__}")


class PrimitiveSet:
    """A policy that a primitive has or has not: the set of primitives that have it.

    `members` is the set itself, for a backend's hot path (`prim in members`); register with
    `add`, which checks what it is given."""

    __slots__ = ("name", "reader", "members")

    def __init__(self, name: str, reader: str) -> None:
        self.name = name
        self.reader = reader  # the module (or package) of the backend that reads it
        self.members: set[Primitive] = set()

    def add(self, *prims: Primitive) -> None:
        for prim in prims:
            _check(self.name, prim)
        self.members.update(prims)

    def __contains__(self, prim: object) -> bool:
        return prim in self.members

    def __iter__(self) -> Iterator[Primitive]:
        return iter(self.members)

    def __repr__(self) -> str:
        return f"<policy {self.name}: {len(self.members)} primitives, read by {self.reader}>"


class PrimitiveRules:
    """A policy that gives some primitives a function: primitive -> rule.

    `rules` is the dict itself, for a backend's hot path (`rules.get(prim)`); register with
    `register`, at most once per primitive."""

    __slots__ = ("name", "reader", "rules", "reads")

    def __init__(self, name: str, reader: str) -> None:
        self.name = name
        self.reader = reader
        self.rules: dict[Primitive, Callable[..., Any]] = {}
        self.reads: set[Primitive] = set()  # the producers the rules look at (GRAPH_REWRITES)

    def register(self, prim: Primitive, rule: Callable[..., Any], reads: tuple[Primitive, ...] = ()) -> None:
        _check(self.name, prim)
        if not callable(rule):
            raise TypeError(f"{self.name}: the rule of {prim.name} must be callable, got {type(rule).__name__}")
        if prim in self.rules:
            raise ValueError(f"{self.name}: {prim.name} has a rule already")
        for p in reads:
            _check(self.name, p)
        self.rules[prim] = rule
        self.reads.update(reads)

    def get(self, prim: Primitive) -> Callable[..., Any] | None:
        return self.rules.get(prim)

    def __contains__(self, prim: object) -> bool:
        return prim in self.rules

    def __iter__(self) -> Iterator[Primitive]:
        return iter(self.rules)

    def __repr__(self) -> str:
        return f"<policy {self.name}: {len(self.rules)} primitives, read by {self.reader}>"


NUMPY_QUIET = PrimitiveSet("NUMPY_QUIET", reader="x10array._backends.eager")
COST_LIBRARY = PrimitiveSet("COST_LIBRARY", reader="x10array._backends.lazy")
MATRIX_PRODUCTS = PrimitiveSet("MATRIX_PRODUCTS", reader="x10array._backends.lazy")
COLUMN_READS = PrimitiveRules("COLUMN_READS", reader="x10array._backends.lazy")
SLICE_BOXES = PrimitiveRules("SLICE_BOXES", reader="x10array._backends.lazy")
GRAPH_REWRITES = PrimitiveRules("GRAPH_REWRITES", reader="x10array._backends.lazy")
XLA_HOST_KERNELS = PrimitiveRules("XLA_HOST_KERNELS", reader="x10array._backends.eager")
INTERPRETER_UFUNCS = PrimitiveRules("INTERPRETER_UFUNCS", reader="x10array._backends.lazy")
INTERPRETER_BLOCKS = PrimitiveSet("INTERPRETER_BLOCKS", reader="x10array._backends.lazy")
INTERPRETER_BLOCKS_UNCAST = PrimitiveSet("INTERPRETER_BLOCKS_UNCAST", reader="x10array._backends.lazy")
INTERPRETER_BLOCK_COUNTS = PrimitiveRules("INTERPRETER_BLOCK_COUNTS", reader="x10array._backends.lazy")
INTERPRETER_BLOCK_SUMS = PrimitiveRules("INTERPRETER_BLOCK_SUMS", reader="x10array._backends.lazy")

# Every registry, for the completeness test.
REGISTRIES: tuple[PrimitiveSet | PrimitiveRules, ...] = (
    NUMPY_QUIET, COST_LIBRARY, MATRIX_PRODUCTS, COLUMN_READS, SLICE_BOXES, GRAPH_REWRITES, XLA_HOST_KERNELS,
    INTERPRETER_UFUNCS, INTERPRETER_BLOCKS, INTERPRETER_BLOCKS_UNCAST, INTERPRETER_BLOCK_COUNTS,
    INTERPRETER_BLOCK_SUMS,
)  # fmt: skip


# Primitive's facts that hold on every backend (its constructor's flags), in its docstring's order.
FLAGS = ("dynamic_shape", "multiple_results", "in_place", "moves_data", "elementwise", "passes_bits", "selects")


def facts(prim: Primitive) -> dict[str, Any]:
    """Everything x10array decides about `prim`, read in one place: its flags (`FLAGS`, facts
    of the op on every backend) and each registry that holds it, by name, with its rule (None
    for a set): `x10array.debug.primitive_facts(name)` prints it. A maintainer adding a
    primitive reads a similar one's facts to see every decision it took."""
    _check("facts", prim)
    found: dict[str, Any] = {flag: getattr(prim, flag) for flag in FLAGS}
    for registry in REGISTRIES:
        if prim in registry:
            found[registry.name] = registry.get(prim) if isinstance(registry, PrimitiveRules) else None
    return found
