"""The names of the Python Array API standard, version 2025.12, written out as data.

Transcribed from the standard's function stubs (``array_api_stubs/_2025_12/*.py`` in
https://github.com/data-apis/array-api): every top-level ``def`` of each chapter, the
constants, the data types, the array object's attributes and methods, the operators listed
in the "Array object" chapter (reflected and in-place forms), the ``linalg`` and ``fft``
extensions and the inspection (``__array_namespace_info__``) methods. Signatures are the
stubs' parameter lists without annotations: names, positional-only ``/`` and keyword-only
``*`` markers and default values.

Embedded here (not parsed at test time) so that the tests run without a copy of the spec.
"""

API_VERSION = "2025.12"

CHAPTERS = {
    'constants': (
        'e', 'inf', 'nan', 'newaxis', 'pi',
    ),
    'creation_functions': (
        'arange', 'asarray', 'empty', 'empty_like', 'eye', 'from_dlpack', 'full', 'full_like',
        'linspace', 'meshgrid', 'ones', 'ones_like', 'tril', 'triu', 'zeros', 'zeros_like',
    ),
    'data_type_functions': (
        'astype', 'can_cast', 'finfo', 'iinfo', 'isdtype', 'result_type',
    ),
    'elementwise_functions': (
        'abs', 'acos', 'acosh', 'add', 'asin', 'asinh', 'atan', 'atan2', 'atanh', 'bitwise_and',
        'bitwise_invert', 'bitwise_left_shift', 'bitwise_or', 'bitwise_right_shift',
        'bitwise_xor', 'ceil', 'clip', 'conj', 'copysign', 'cos', 'cosh', 'divide', 'equal',
        'exp', 'expm1', 'floor', 'floor_divide', 'greater', 'greater_equal', 'hypot', 'imag',
        'isfinite', 'isinf', 'isnan', 'less', 'less_equal', 'log', 'log10', 'log1p', 'log2',
        'logaddexp', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'maximum',
        'minimum', 'multiply', 'negative', 'nextafter', 'not_equal', 'positive', 'pow', 'real',
        'reciprocal', 'remainder', 'round', 'sign', 'signbit', 'sin', 'sinh', 'sqrt', 'square',
        'subtract', 'tan', 'tanh', 'trunc',
    ),
    'indexing_functions': (
        'take', 'take_along_axis',
    ),
    'linear_algebra_functions': (
        'matmul', 'matrix_transpose', 'tensordot', 'vecdot',
    ),
    'manipulation_functions': (
        'broadcast_arrays', 'broadcast_shapes', 'broadcast_to', 'concat', 'expand_dims', 'flip',
        'moveaxis', 'permute_dims', 'repeat', 'reshape', 'roll', 'squeeze', 'stack', 'tile',
        'unstack',
    ),
    'searching_functions': (
        'argmax', 'argmin', 'count_nonzero', 'nonzero', 'searchsorted', 'where',
    ),
    'set_functions': (
        'isin', 'unique_all', 'unique_counts', 'unique_inverse', 'unique_values',
    ),
    'sorting_functions': (
        'argsort', 'sort',
    ),
    'statistical_functions': (
        'cumulative_prod', 'cumulative_sum', 'max', 'mean', 'min', 'prod', 'std', 'sum', 'var',
    ),
    'utility_functions': (
        'all', 'any', 'diff',
    ),
}
LINALG = (
    'cholesky', 'cross', 'det', 'diagonal', 'eig', 'eigh', 'eigvals', 'eigvalsh', 'inv',
    'matmul', 'matrix_norm', 'matrix_power', 'matrix_rank', 'matrix_transpose', 'outer', 'pinv',
    'qr', 'slogdet', 'solve', 'svd', 'svdvals', 'tensordot', 'trace', 'vecdot', 'vector_norm',
)
FFT = (
    'fft', 'fftfreq', 'fftn', 'fftshift', 'hfft', 'ifft', 'ifftn', 'ifftshift', 'ihfft',
    'irfft', 'irfftn', 'rfft', 'rfftfreq', 'rfftn',
)
ARRAY_ATTRIBUTES = (
    'T', 'device', 'dtype', 'mT', 'ndim', 'shape', 'size',
)
ARRAY_METHODS = (
    '__abs__', '__add__', '__and__', '__array_namespace__', '__bool__', '__complex__',
    '__dlpack__', '__dlpack_device__', '__eq__', '__float__', '__floordiv__', '__ge__',
    '__getitem__', '__gt__', '__index__', '__int__', '__invert__', '__le__', '__lshift__',
    '__lt__', '__matmul__', '__mod__', '__mul__', '__ne__', '__neg__', '__or__', '__pos__',
    '__pow__', '__rshift__', '__setitem__', '__sub__', '__truediv__', '__xor__', 'to_device',
)
INFO_METHODS = (
    'capabilities', 'default_device', 'default_dtypes', 'devices', 'dtypes',
)

DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)  # fmt: skip

# The "Array object" chapter: operators with a reflected form and with an in-place form.
REFLECTED_OPERATORS = (
    "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rpow__", "__rmod__",
    "__rmatmul__", "__rand__", "__ror__", "__rxor__", "__rlshift__", "__rrshift__",
)  # fmt: skip
IN_PLACE_OPERATORS = (
    "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__ipow__", "__imod__",
    "__imatmul__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
)  # fmt: skip

# Every name the standard puts in the main namespace.
NAMESPACE = frozenset(
    [name for names in CHAPTERS.values() for name in names]
    + list(DTYPES)
    + ["linalg", "fft", "__array_api_version__", "__array_namespace_info__"]
)

# Names x10array adds to the main namespace, each documented in README.md / docs.
X10ARRAY_EXTRAS = frozenset(
    [
        "Array", "Device", "DeviceKind", "Backend", "device_scope", "set_cpu_kernels",
        # the lazy XLA backend (after X10's LazyTensorBarrier and metrics)
        "lazy_barrier", "metrics", "metrics_report", "reset_metrics",
    ]
)  # fmt: skip

# Subpackages of x10array beyond `linalg` and `fft` (documented in README.md). Python makes a
# subpackage an attribute of the package once it is imported, so they may appear in dir().
X10ARRAY_SUBPACKAGES = frozenset(["autodiff", "nn", "optim", "datasets", "examples"])

SIGNATURES = {
    '__array_namespace_info__': '()',
    'abs': '(x, /)',
    'acos': '(x, /)',
    'acosh': '(x, /)',
    'add': '(x1, x2, /)',
    'all': '(x, /, *, axis=None, keepdims=False)',
    'any': '(x, /, *, axis=None, keepdims=False)',
    'arange': '(start, /, stop=None, step=1, *, dtype=None, device=None)',
    'argmax': '(x, /, *, axis=None, keepdims=False)',
    'argmin': '(x, /, *, axis=None, keepdims=False)',
    'argsort': '(x, /, *, axis=-1, descending=False, stable=True)',
    'asarray': '(obj, /, *, dtype=None, device=None, copy=None)',
    'asin': '(x, /)',
    'asinh': '(x, /)',
    'astype': '(x, dtype, /, *, copy=True, device=None)',
    'atan': '(x, /)',
    'atan2': '(x1, x2, /)',
    'atanh': '(x, /)',
    'bitwise_and': '(x1, x2, /)',
    'bitwise_invert': '(x, /)',
    'bitwise_left_shift': '(x1, x2, /)',
    'bitwise_or': '(x1, x2, /)',
    'bitwise_right_shift': '(x1, x2, /)',
    'bitwise_xor': '(x1, x2, /)',
    'broadcast_arrays': '(*arrays)',
    'broadcast_shapes': '(*shapes)',
    'broadcast_to': '(x, /, shape)',
    'can_cast': '(from_, to, /)',
    'ceil': '(x, /)',
    'clip': '(x, /, min=None, max=None)',
    'concat': '(arrays, /, *, axis=0)',
    'conj': '(x, /)',
    'copysign': '(x1, x2, /)',
    'cos': '(x, /)',
    'cosh': '(x, /)',
    'count_nonzero': '(x, /, *, axis=None, keepdims=False)',
    'cumulative_prod': '(x, /, *, axis=None, dtype=None, include_initial=False)',
    'cumulative_sum': '(x, /, *, axis=None, dtype=None, include_initial=False)',
    'diff': '(x, /, *, axis=-1, n=1, prepend=None, append=None)',
    'divide': '(x1, x2, /)',
    'empty': '(shape, *, dtype=None, device=None)',
    'empty_like': '(x, /, *, dtype=None, device=None)',
    'equal': '(x1, x2, /)',
    'exp': '(x, /)',
    'expand_dims': '(x, /, axis)',
    'expm1': '(x, /)',
    'eye': '(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None)',
    'finfo': '(type, /)',
    'flip': '(x, /, *, axis=None)',
    'floor': '(x, /)',
    'floor_divide': '(x1, x2, /)',
    'from_dlpack': '(x, /, *, device=None, copy=None)',
    'full': '(shape, fill_value, *, dtype=None, device=None)',
    'full_like': '(x, /, fill_value, *, dtype=None, device=None)',
    'greater': '(x1, x2, /)',
    'greater_equal': '(x1, x2, /)',
    'hypot': '(x1, x2, /)',
    'iinfo': '(type, /)',
    'imag': '(x, /)',
    'isdtype': '(dtype, kind)',
    'isfinite': '(x, /)',
    'isin': '(x1, x2, /, *, invert=False)',
    'isinf': '(x, /)',
    'isnan': '(x, /)',
    'less': '(x1, x2, /)',
    'less_equal': '(x1, x2, /)',
    'linspace': '(start, stop, /, num, *, dtype=None, device=None, endpoint=True)',
    'log': '(x, /)',
    'log10': '(x, /)',
    'log1p': '(x, /)',
    'log2': '(x, /)',
    'logaddexp': '(x1, x2, /)',
    'logical_and': '(x1, x2, /)',
    'logical_not': '(x, /)',
    'logical_or': '(x1, x2, /)',
    'logical_xor': '(x1, x2, /)',
    'matmul': '(x1, x2, /)',
    'matrix_transpose': '(x, /)',
    'max': '(x, /, *, axis=None, keepdims=False)',
    'maximum': '(x1, x2, /)',
    'mean': '(x, /, *, axis=None, keepdims=False)',
    'meshgrid': "(*arrays, indexing='xy')",
    'min': '(x, /, *, axis=None, keepdims=False)',
    'minimum': '(x1, x2, /)',
    'moveaxis': '(x, source, destination, /)',
    'multiply': '(x1, x2, /)',
    'negative': '(x, /)',
    'nextafter': '(x1, x2, /)',
    'nonzero': '(x, /)',
    'not_equal': '(x1, x2, /)',
    'ones': '(shape, *, dtype=None, device=None)',
    'ones_like': '(x, /, *, dtype=None, device=None)',
    'permute_dims': '(x, /, axes)',
    'positive': '(x, /)',
    'pow': '(x1, x2, /)',
    'prod': '(x, /, *, axis=None, dtype=None, keepdims=False)',
    'real': '(x, /)',
    'reciprocal': '(x, /)',
    'remainder': '(x1, x2, /)',
    'repeat': '(x, repeats, /, *, axis=None)',
    'reshape': '(x, /, shape, *, copy=None)',
    'result_type': '(*arrays_and_dtypes)',
    'roll': '(x, /, shift, *, axis=None)',
    'round': '(x, /)',
    'searchsorted': "(x1, x2, /, *, side='left', sorter=None)",
    'sign': '(x, /)',
    'signbit': '(x, /)',
    'sin': '(x, /)',
    'sinh': '(x, /)',
    'sort': '(x, /, *, axis=-1, descending=False, stable=True)',
    'sqrt': '(x, /)',
    'square': '(x, /)',
    'squeeze': '(x, /, axis)',
    'stack': '(arrays, /, *, axis=0)',
    'std': '(x, /, *, axis=None, correction=0.0, keepdims=False)',
    'subtract': '(x1, x2, /)',
    'sum': '(x, /, *, axis=None, dtype=None, keepdims=False)',
    'take': '(x, indices, /, *, axis=None)',
    'take_along_axis': '(x, indices, /, *, axis=-1)',
    'tan': '(x, /)',
    'tanh': '(x, /)',
    'tensordot': '(x1, x2, /, *, axes=2)',
    'tile': '(x, repetitions, /)',
    'tril': '(x, /, *, k=0)',
    'triu': '(x, /, *, k=0)',
    'trunc': '(x, /)',
    'unique_all': '(x, /)',
    'unique_counts': '(x, /)',
    'unique_inverse': '(x, /)',
    'unique_values': '(x, /)',
    'unstack': '(x, /, *, axis=0)',
    'var': '(x, /, *, axis=None, correction=0.0, keepdims=False)',
    'vecdot': '(x1, x2, /, *, axis=-1)',
    'where': '(condition, x1, x2, /)',
    'zeros': '(shape, *, dtype=None, device=None)',
    'zeros_like': '(x, /, *, dtype=None, device=None)',
}
LINALG_SIGNATURES = {
    'cholesky': '(x, /, *, upper=False)',
    'cross': '(x1, x2, /, *, axis=-1)',
    'det': '(x, /)',
    'diagonal': '(x, /, *, offset=0)',
    'eig': '(x, /)',
    'eigh': '(x, /)',
    'eigvals': '(x, /)',
    'eigvalsh': '(x, /)',
    'inv': '(x, /)',
    'matmul': '(x1, x2, /)',
    'matrix_norm': "(x, /, *, keepdims=False, ord='fro')",
    'matrix_power': '(x, n, /)',
    'matrix_rank': '(x, /, *, rtol=None)',
    'matrix_transpose': '(x, /)',
    'outer': '(x1, x2, /)',
    'pinv': '(x, /, *, rtol=None)',
    'qr': "(x, /, *, mode='reduced')",
    'slogdet': '(x, /)',
    'solve': '(x1, x2, /)',
    'svd': '(x, /, *, full_matrices=True)',
    'svdvals': '(x, /)',
    'tensordot': '(x1, x2, /, *, axes=2)',
    'trace': '(x, /, *, offset=0, dtype=None)',
    'vecdot': '(x1, x2, /, *, axis=-1)',
    'vector_norm': '(x, /, *, axis=None, keepdims=False, ord=2)',
}
FFT_SIGNATURES = {
    'fft': "(x, /, *, n=None, axis=-1, norm='backward')",
    'fftfreq': '(n, /, *, d=1.0, dtype=None, device=None)',
    'fftn': "(x, /, *, s=None, axes=None, norm='backward')",
    'fftshift': '(x, /, *, axes=None)',
    'hfft': "(x, /, *, n=None, axis=-1, norm='backward')",
    'ifft': "(x, /, *, n=None, axis=-1, norm='backward')",
    'ifftn': "(x, /, *, s=None, axes=None, norm='backward')",
    'ifftshift': '(x, /, *, axes=None)',
    'ihfft': "(x, /, *, n=None, axis=-1, norm='backward')",
    'irfft': "(x, /, *, n=None, axis=-1, norm='backward')",
    'irfftn': "(x, /, *, s=None, axes=None, norm='backward')",
    'rfft': "(x, /, *, n=None, axis=-1, norm='backward')",
    'rfftfreq': '(n, /, *, d=1.0, dtype=None, device=None)',
    'rfftn': "(x, /, *, s=None, axes=None, norm='backward')",
}
ARRAY_METHOD_SIGNATURES = {
    '__abs__': '()',
    '__add__': '(other, /)',
    '__and__': '(other, /)',
    '__array_namespace__': '(*, api_version=None)',
    '__bool__': '()',
    '__complex__': '()',
    '__dlpack__': '(*, stream=None, max_version=None, dl_device=None, copy=None)',
    '__dlpack_device__': '()',
    '__eq__': '(other, /)',
    '__float__': '()',
    '__floordiv__': '(other, /)',
    '__ge__': '(other, /)',
    '__getitem__': '(key, /)',
    '__gt__': '(other, /)',
    '__index__': '()',
    '__int__': '()',
    '__invert__': '()',
    '__le__': '(other, /)',
    '__lshift__': '(other, /)',
    '__lt__': '(other, /)',
    '__matmul__': '(other, /)',
    '__mod__': '(other, /)',
    '__mul__': '(other, /)',
    '__ne__': '(other, /)',
    '__neg__': '()',
    '__or__': '(other, /)',
    '__pos__': '()',
    '__pow__': '(other, /)',
    '__rshift__': '(other, /)',
    '__setitem__': '(key, value, /)',
    '__sub__': '(other, /)',
    '__truediv__': '(other, /)',
    '__xor__': '(other, /)',
    'to_device': '(device, /, *, stream=None)',
}
INFO_SIGNATURES = {
    'capabilities': '()',
    'default_device': '()',
    'default_dtypes': '(*, device=None)',
    'devices': '()',
    'dtypes': '(*, device=None, kind=None)',
}
