"""A CPython extension that calls a compiled function with its weights bound, checking the
arguments in C: the call overhead a model pays at batch 1.

`Function.bind` checks the bound arrays once; each call still checked its free arguments in
Python and went through ctypes (about 7 us of an MLP's 34 us at batch 1). Where every argument
is an array (or a bound pointer, or a signed integer scalar), `fast_caller` gives an object
that, called with the free arguments, checks each array through the buffer protocol against its
precomputed rank, shape, format and writability, checks that no two of them overlap and that
none overlaps a bound array, then calls the C function with the GIL released. A symbolic extent
(a kernel of a model compiled once for every batch and length) is one of the function's size
arguments: read from the first array (or integer scalar) that has it, equal in every other
(the Python path took 30 us a kernel there, half of MiniLM's latency at 1 x 7 tokens). It returns the function's status, or
`FALLBACK` when any check fails: the caller then takes the Python path, which gives the exact
error (or accepts an overlap that the function allows). A plain call of a `Function` uses one
too, with nothing bound (its Python checks cost 3.7 us, as much as a small kernel).

The extension is built once per compiler, Python and source (cached beside the shared objects);
without a compiler that can build it (no Python headers) every call takes the Python path.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import subprocess
import sysconfig
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tessel.runtime.arguments import array_dtype
from tessel.runtime.artifact_cache import default_cache_dir, write_atomically
from tessel.runtime.compiler import compiler_identity, find_compiler
from tessel.runtime.errors import BuildError
from tessel.support.abi import FunctionSignature

FALLBACK = -2  # a check failed: take the Python path, which says why
_MAX_ARGS = 64  # C arguments the generated switch calls with; more take the Python path
_MODULE = "_tessel_fastcall"

_HEADER = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

typedef void* P;

/* One free argument's expectations: an array (bits 0) whose extents -1 are symbolic, or a
   signed integer scalar of `bits` bits. */
typedef struct {
    int position, ndim, written, bits;
    Py_ssize_t itemsize;
    Py_ssize_t shape[8];
    char format[8];
} Spec;

/* One size symbol: a constant (known, from a bound array) or the first of its occurrences,
   every occurrence equal: (free argument, axis), axis -1 for an integer scalar's value. A size
   argument of the function is written to its slot; a scalar parameter's symbol is checked. */
typedef struct {
    int known, count, slot;  /* slot: its C argument's position, -1 for a symbol only checked */
    long long value;
    int argument[16], axis[16];
} Size;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    void* function;
    int arity, nfree, nsizes;
    P* values;          /* every C argument; 0 at the free positions, filled per call */
    Spec* specs;
    Size* sizes;        /* the size arguments, after the parameters */
    Py_ssize_t nspans;  /* the bound arrays' [start, end) byte spans */
    char** spans;
} Caller;

static int call_with(void* f, int n, P* a, int32_t* status) {
    switch (n) {
"""

_FOOTER = r"""
    default: return -1;
    }
}

static void caller_dealloc(Caller* self) {
    PyMem_Free(self->values);
    PyMem_Free(self->specs);
    PyMem_Free(self->sizes);
    PyMem_Free(self->spans);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static int overlaps(char* a, char* a_end, char* b, char* b_end) {
    return a < b_end && b < a_end;
}

static PyObject* caller_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                                   PyObject* kwnames) {
    Caller* self = (Caller*)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs != self->nfree) return PyLong_FromLong(-2);
    Py_buffer views[64];
    long long scalars[64];
    char acquired[64] = {0};
    P values[64];  /* a copy per call: calls from several threads share the Caller */
    memcpy(values, self->values, (size_t)self->arity * sizeof(P));
    int held = 0, ok = 1;
    for (int k = 0; k < self->nfree && ok; k++) {
        Spec* spec = &self->specs[k];
        if (spec->bits) {  /* an integer scalar: an int (not a bool) that fits */
            if (PyBool_Check(args[k])) { ok = 0; break; }
            long long x = PyLong_AsLongLong(args[k]);
            if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); ok = 0; break; }
            if (spec->bits < 64) {
                long long limit = 1LL << (spec->bits - 1);
                if (x < -limit || x >= limit) { ok = 0; break; }
            }
            scalars[k] = x;
            values[spec->position] = (P)(intptr_t)x;
            continue;
        }
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (spec->written ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[k], &views[k], flags) != 0) { PyErr_Clear(); ok = 0; break; }
        acquired[k] = 1;
        held = k + 1;
        Py_buffer* v = &views[k];
        if (v->ndim != spec->ndim || v->itemsize != spec->itemsize || v->format == NULL
            || strcmp(v->format, spec->format) != 0) { ok = 0; break; }
        for (int d = 0; d < spec->ndim; d++)
            if (spec->shape[d] >= 0 && v->shape[d] != spec->shape[d]) { ok = 0; break; }
        values[spec->position] = v->buf;
    }
    for (int i = 0; i < self->nsizes && ok; i++) {  /* each symbol one size wherever it is */
        Size* size = &self->sizes[i];
        int have = size->known;
        long long value = size->value;
        for (int j = 0; j < size->count; j++) {
            int k = size->argument[j], d = size->axis[j];
            long long got = d < 0 ? scalars[k] : (long long)views[k].shape[d];
            if (!have) { value = got; have = 1; }
            else if (got != value) { ok = 0; break; }
        }
        if (size->slot >= 0) values[size->slot] = (P)(intptr_t)value;
    }
    for (int k = 0; k < held && ok; k++) {  /* no two free arrays, nor a free and a bound one,
                                               share bytes: the Python path decides those */
        if (!acquired[k] || views[k].len == 0) continue;
        char* s = (char*)views[k].buf; char* e = s + views[k].len;
        for (int j = k + 1; j < held && ok; j++)
            if (acquired[j] && views[j].len && overlaps(s, e, (char*)views[j].buf, (char*)views[j].buf + views[j].len)) ok = 0;
        for (Py_ssize_t j = 0; j < self->nspans && ok; j++)
            if (overlaps(s, e, self->spans[2 * j], self->spans[2 * j + 1])) ok = 0;
    }
    int32_t status = -2;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        call_with(self->function, self->arity, values, &status);
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < held; k++)
        if (acquired[k]) PyBuffer_Release(&views[k]);
    return PyLong_FromLong(status);
}

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tessel_fastcall.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)caller_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Caller, vectorcall),
};

/* make(function, values, specs, spans, sizes): values a tuple of ints (addresses; 0 at free
   positions and at the size arguments), specs a tuple of (position, shape tuple with -1 for a
   symbolic extent, itemsize, format bytes, written, scalar bits: 0 for an array), spans a
   tuple of ints (start, end, start, end, ...), sizes a tuple of (known value or -1, tuple of
   (free argument, axis), the C argument position it is passed at or -1). */
static PyObject* make(PyObject* module, PyObject* args) {
    unsigned long long function;
    PyObject *values, *specs, *spans, *sizes;
    if (!PyArg_ParseTuple(args, "KO!O!O!O!", &function, &PyTuple_Type, &values, &PyTuple_Type,
                          &specs, &PyTuple_Type, &spans, &PyTuple_Type, &sizes))
        return NULL;
    Py_ssize_t arity = PyTuple_GET_SIZE(values), nfree = PyTuple_GET_SIZE(specs);
    Py_ssize_t nsizes = PyTuple_GET_SIZE(sizes);
    if (arity > 64 || nfree > 64 || nsizes > 64) {
        PyErr_SetString(PyExc_ValueError, "too many arguments"); return NULL;
    }
    Caller* self = PyObject_New(Caller, &CallerType);
    if (self == NULL) return NULL;
    self->function = (void*)(uintptr_t)function;
    self->arity = (int)arity; self->nfree = (int)nfree;
    self->nsizes = (int)nsizes;
    self->values = PyMem_Calloc(arity ? arity : 1, sizeof(P));
    self->specs = PyMem_Calloc(nfree ? nfree : 1, sizeof(Spec));
    self->sizes = PyMem_Calloc(nsizes ? nsizes : 1, sizeof(Size));
    self->nspans = PyTuple_GET_SIZE(spans) / 2;
    self->spans = PyMem_Calloc(self->nspans ? 2 * self->nspans : 1, sizeof(char*));
    self->vectorcall = caller_vectorcall;
    for (Py_ssize_t i = 0; i < arity; i++)
        self->values[i] = (P)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(values, i));
    for (Py_ssize_t i = 0; i < 2 * self->nspans; i++)
        self->spans[i] = (char*)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(spans, i));
    for (Py_ssize_t k = 0; k < nfree; k++) {
        PyObject* item = PyTuple_GET_ITEM(specs, k);
        PyObject* shape; const char* format; Py_ssize_t flen;
        Spec* spec = &self->specs[k];
        if (!PyArg_ParseTuple(item, "iO!ny#pi", &spec->position, &PyTuple_Type, &shape,
                              &spec->itemsize, &format, &flen, &spec->written, &spec->bits)) {
            Py_DECREF(self); return NULL;
        }
        spec->ndim = (int)PyTuple_GET_SIZE(shape);
        if (spec->ndim > 8 || flen >= 8) { Py_DECREF(self); PyErr_SetString(PyExc_ValueError, "spec too large"); return NULL; }
        for (int d = 0; d < spec->ndim; d++) spec->shape[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        memcpy(spec->format, format, flen); spec->format[flen] = 0;
    }
    for (Py_ssize_t i = 0; i < nsizes; i++) {
        PyObject* item = PyTuple_GET_ITEM(sizes, i);
        PyObject* places;
        Size* size = &self->sizes[i];
        if (!PyArg_ParseTuple(item, "LO!i", &size->value, &PyTuple_Type, &places, &size->slot)) {
            Py_DECREF(self); return NULL;
        }
        size->known = size->value >= 0;
        size->count = (int)PyTuple_GET_SIZE(places);
        if (size->count > 16 || size->slot >= arity) { Py_DECREF(self); PyErr_SetString(PyExc_ValueError, "size too shared"); return NULL; }
        for (int j = 0; j < size->count; j++) {
            PyObject* place = PyTuple_GET_ITEM(places, j);
            if (!PyArg_ParseTuple(place, "ii", &size->argument[j], &size->axis[j])) {
                Py_DECREF(self); return NULL;
            }
        }
    }
    if (PyErr_Occurred()) { Py_DECREF(self); return NULL; }
    return (PyObject*)self;
}

static PyMethodDef methods[] = {
    {"make", make, METH_VARARGS, "A caller of a C function with bound and checked arguments."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_tessel_fastcall", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tessel_fastcall(void) {
    if (PyType_Ready(&CallerType) < 0) return NULL;
    return PyModule_Create(&module_def);
}
"""


def _source() -> str:
    cases = []
    for n in range(_MAX_ARGS + 1):
        params = ", ".join(["P"] * n) or "void"
        call_args = ", ".join(f"a[{k}]" for k in range(n))
        cases.append(f"    case {n}: *status = ((int32_t (*)({params}))f)({call_args}); return 0;")
    return _HEADER + "\n".join(cases) + _FOOTER


@cache
def _extension() -> Any | None:
    """The built and loaded extension module, or None where it cannot be built."""
    try:
        compiler = find_compiler()
        identity = compiler_identity(compiler)
    except BuildError:
        return None
    include = sysconfig.get_paths().get("include")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    source = _source()
    key = hashlib.sha256("\n".join((identity, str(include), suffix, source)).encode()).hexdigest()
    path = default_cache_dir() / "fastcall" / f"{_MODULE}-{key[:24]}{suffix}"
    if not path.exists() and not _build(compiler, include, source, path):
        return None
    try:
        spec = importlib.util.spec_from_file_location(_MODULE, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    return module


def _build(compiler: tuple[str, ...], include: str | None, source: str, path: Path) -> bool:
    if include is None or not (Path(include) / "Python.h").exists():
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="tessel-fastcall-") as scratch:
            c_file, built = Path(scratch) / "fastcall.c", Path(scratch) / "fastcall.so"
            c_file.write_text(source)
            command = [*compiler, "-O2", "-shared", "-fPIC", f"-I{include}", "-o", str(built),
                       str(c_file)]  # fmt: skip
            if subprocess.run(command, capture_output=True, check=False).returncode != 0:
                return False
            write_atomically(path, built.read_bytes())
    except OSError:
        return False
    return True


def fast_caller(  # noqa: C901 - each early return names a signature the fast path cannot take
    address: int,
    signature: FunctionSignature,
    values: tuple[Any, ...],
    free: tuple[int, ...],
    spans: tuple[tuple[Any, int, int], ...],
    extra: tuple[int, ...],
    sizes: dict[str, int] | None = None,
) -> Any | None:
    """A C caller of the function at `address` whose arguments other than `free` are the
    addresses in `values` (then its size arguments, then `extra`), or None when its free
    arguments are not all arrays and signed integer scalars, a bound one is a scalar, the
    function returns a value (T.ret: the Python path gives it back), or the extension is not
    available. An array's symbolic extents (a kernel compiled once for every batch) are the
    function's size arguments: each read from the arrays (or from a scalar that is the size,
    or from `sizes`, bound by the bound arrays), and equal wherever the symbol appears."""
    params = signature.params
    arity = len(params) + len(signature.size_args) + len(extra)
    if signature.returns or arity > _MAX_ARGS:
        return None
    specs = []
    places: dict[str, list[tuple[int, int]]] = {name: [] for name in signature.size_args}
    for k, position in enumerate(free):
        param = params[position]
        if param.kind == "scalar":
            dtype = np.dtype(param.dtype)
            if dtype.kind != "i":
                return None  # floats go in registers the pointer switch does not fill
            if param.symbol is not None:
                places.setdefault(param.symbol, []).append((k, -1))
            specs.append((position, (), 0, b"", False, dtype.itemsize * 8))
            continue
        if param.kind != "buffer" or len(param.shape) > 8:
            return None
        for axis, extent in enumerate(param.shape):
            if isinstance(extent, str):
                places.setdefault(extent, []).append((k, axis))
        probe = np.empty((0,), dtype=array_dtype(param.dtype))
        try:
            fmt = memoryview(probe).format.encode()
        except ValueError:  # ml_dtypes' bfloat16 has no buffer-protocol format: the Python path
            return None
        if len(fmt) >= 8:
            return None
        shape = tuple(d if isinstance(d, int) else -1 for d in param.shape)
        specs.append((position, shape, probe.itemsize, fmt, param.written, 0))
    known = sizes or {}
    slots = {name: len(params) + k for k, name in enumerate(signature.size_args)}
    size_specs = []
    for name, found in places.items():
        if len(found) > 16 or (name in slots and name not in known and not found):
            return None
        size_specs.append((known.get(name, -1), tuple(found), slots.get(name, -1)))
    bound_values = []
    for position, value in enumerate(values):
        if position in free:
            bound_values.append(0)
        elif params[position].kind == "buffer" and isinstance(value, int):
            bound_values.append(value)  # the bound array's address
        else:  # a scalar is passed by value, in a register the pointer switch does not fill
            return None
    if not all(isinstance(e, int) for e in extra):
        return None
    module = _extension()
    if module is None:
        return None
    flat_spans = tuple(x for _, start, end in spans for x in (start, end))
    padding = (0,) * len(signature.size_args)
    return module.make(
        address,
        (*bound_values, *padding, *extra),
        tuple(specs),
        flat_spans,
        tuple(size_specs),
    )
