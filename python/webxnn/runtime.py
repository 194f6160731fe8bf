"""Run `.xnn` blobs: `load(blob_or_path)` verifies, plans and returns a `Program`; `Program.run` executes it.

A thin layer over the C++ module `webxnn._runtime`: this file only maps names to positions and checks what the
caller passed, so that mistakes come back as `InputError` naming the input. The C++ side verifies the blob
(any bad blob is a `FormatError` or `UnsupportedError`), re-plans for input shapes that differ from the
declared ones when the graph allows it, and releases the GIL while running, so one Program can serve several
Python threads at once.

A Program pickles as its blob's bytes and the options it was loaded with (`threads`, None = one per core of
whichever machine unpickles it; `spin_us`; `pool`), so it can be sent to worker processes (multiprocessing,
Ray actors) and is verified and planned again there.
"""

from __future__ import annotations

import mmap
import os
import pathlib
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

import numpy as np

from . import _runtime
from .compiler import GRAPH_KINDS, check_model_options
from .errors import FileError, FormatError, InputError, OptionError, WebxnnError
from .filekind import KINDS, expect, sniff_bytes

BlobOrPath = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]
Pool = Literal["own", "shared"]

_MODEL = "a compiled .xnn blob"


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output: its name, WebNN dtype name ("float32", "int8", ...) and declared shape.

    `dynamic` has one entry per dim: None for a fixed dim, else the name of a dynamic dim (WebNN-graph
    `dyn("name", max)`; "?" when unnamed, e.g. the upper-bound dims of an ExecuTorch payload) whose size may
    be 1..shape[d] at run time. Outputs have no dynamic entries."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    dynamic: tuple[str | None, ...] = ()

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)


def _infos(raw: list[tuple[str, str, list[int], list[str | None]]], inputs: bool) -> list[TensorInfo]:
    return [
        TensorInfo(name, dtype, tuple(shape), tuple(dyn) if inputs else (None,) * len(shape))
        for name, dtype, shape, dyn in raw
    ]


class Program:
    """A verified, planned `.xnn` program. Immutable; `run` may be called from several threads at once.
    Pickles by its blob's bytes and load options (see the module docstring)."""

    def __init__(
        self,
        impl: _runtime.Program,
        source: bytes | memoryview | str | None = None,
        threads: int = 0,
        spin_us: int = -1,
        shared_pool: bool = False,
    ) -> None:
        self._impl = impl
        # what pickling needs: the blob (bytes it was loaded from, or the .xnn path, read when pickled) and
        # the load options as requested (threads 0 = one per core and spin_us -1 = the default, both resolved
        # again where it is unpickled; the shared pool is that process's)
        self._source = source
        self._load_opts = (threads, spin_us, shared_pool)
        self.inputs: list[TensorInfo] = _infos(impl.inputs, True)
        self.outputs: list[TensorInfo] = _infos(impl.outputs, False)
        self._in_names = [i.name for i in self.inputs]
        self._out_names = [o.name for o in self.outputs]

    @property
    def peak_arena_bytes(self) -> int:
        """Bytes of the per-run arena for the declared input shapes."""
        return int(self._impl.peak_arena_bytes)

    @property
    def threads(self) -> int:
        return int(self._impl.threads)

    @property
    def run_modes(self) -> dict[str, float]:
        """How the runs at the declared input shapes were made so far (see README, Threads): `workers_runs`
        with the pool's threads, `alone_runs` on the calling thread alone, and each mode's median time over
        its last five timed runs, `workers_ms` / `alone_ms` (0 before any). Counted only while the choice is
        on: a Program with threads > 1, runs (not `profile`), `WEBXNN_ADAPTIVE` not 0."""
        return dict(self._impl.run_modes)

    @property
    def pool(self) -> Pool:
        """ "shared" when the Program runs on the process's shared pool (see `set_threads`), else "own"."""
        return "shared" if self._impl.shared_pool else "own"

    @property
    def spin_us(self) -> int:
        """How long the pool's threads poll for work before sleeping, in microseconds."""
        return int(self._impl.spin_us)

    @property
    def kernels(self) -> str:
        """Name of the kernel table chosen for this CPU ("scalar", "avx2", ...)."""
        return str(self._impl.kernels)

    def run(
        self,
        inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
        outputs: Sequence[str] | None = None,
        out: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """Run once. `inputs` maps input names to arrays, or lists arrays in input order. Returns the outputs
        by name, in output order, or only those named in `outputs`, in that order (all are still computed).
        Arrays of the right dtype that are C-contiguous are used without a copy.
        `out` maps output names to arrays to write those outputs into (like onnxruntime's IOBinding): each
        must have the output's dtype and its shape for these inputs, be C-contiguous and writable and share
        no memory with an input or another output (else InputError, before anything runs); the returned dict
        holds those very arrays. Outputs not in `out` get new arrays."""
        wanted = self._wanted(outputs)  # before running: a wrong name fails fast
        given = self._given(out)
        # dtype, shape and contiguity are checked (and non-contiguous arrays copied) by the C++ module, whose
        # InputError names the input with expected vs got; the `out` arrays are checked there too.
        got = dict(zip(self._out_names, self._impl.run(self._ordered(inputs), given)))
        return got if wanted is None else {k: got[k] for k in wanted}

    def _given(self, out: Mapping[str, np.ndarray] | None) -> list[np.ndarray | None] | None:
        if out is None:
            return None
        if not isinstance(out, Mapping):
            raise InputError(f"out must be a dict of output name -> array; the outputs are {self._out_names}")
        unknown = [k for k in out if k not in self._out_names]
        if unknown:
            raise InputError(f"out: unknown output(s) {unknown}; the outputs are {self._out_names}")
        return [out.get(k) for k in self._out_names]

    def _wanted(self, outputs: Sequence[str] | None) -> list[str] | None:
        if outputs is None:
            return None
        if isinstance(outputs, str) or not isinstance(outputs, Sequence):
            raise InputError(f"outputs must be a list of output names; the outputs are {self._out_names}")
        unknown = [k for k in outputs if k not in self._out_names]
        if unknown:
            raise InputError(f"unknown output(s) {unknown}; the outputs are {self._out_names}")
        return list(outputs)

    def profile(
        self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray], repeat: int = 10
    ) -> list[dict[str, Any]]:
        """Run `repeat` times timing every step, in execution order. One dict per step: `node` (index in the
        blob), `kind` ("XNNConv2d", ...), `source` (the WebNN op it came from, when the blob says), `shape`
        (output shape), `fused` (indices of nodes folded into this step: the NCHW -> NHWC XNNStaticTranspose
        of an image a conv reads in place, the 1x1 XNNConv2d expanding a depthwise step's input, a residual
        XNNAdd, or the HardSwish / Sigmoid / Gelu that was its only reader), `prefetches` (the fully
        connected node whose weights this step pulls toward the cache while it computes, or None), `ms`
        (median over the runs), `total_ms` (sum over the runs), `wait_ms` (median over the runs of the time
        the calling thread waited at the step's end for other threads still running their last piece: a
        high figure means a thread of the pool was late, e.g. its core was busy with another process).
        Nodes that need no work of their own (a reshape or copy whose output shares its input's memory) follow
        with `ms` 0.0 and `aliased` True."""
        if repeat < 1:
            raise OptionError(f"repeat must be >= 1, got {repeat}")
        rows = []
        for raw in self._impl.profile(self._ordered(inputs), int(repeat)):
            row = _step_row(raw)
            ns = raw[5]
            row["ms"] = statistics.median(ns) / 1e6 if ns else 0.0
            row["total_ms"] = sum(ns) / 1e6 if ns else 0.0
            wait = raw[8]
            row["wait_ms"] = statistics.median(wait) / 1e6 if wait else 0.0
            rows.append(row)
        return rows

    def plan(self) -> list[dict[str, Any]]:
        """How the declared input shapes run, without running: one dict per step in execution order (`node`,
        `kind`, `source`, `shape`, `fused`, `serial`: too small to split over threads, `prefetches`: the node
        whose weights the step pulls toward the cache for a later step, or None), then the nodes that need no
        step (`aliased` True: a reshape/copy sharing its input's memory)."""
        return [_step_row(raw) for raw in self._impl.plan]

    @property
    def packed_weight_bytes(self) -> int:
        """Bytes of weights packed at load for the kernels (the blob's constants are used in place)."""
        return int(self._impl.packed_weight_bytes)

    def _ordered(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[np.ndarray]:
        expected = self._in_names
        if isinstance(inputs, dict) and len(inputs) == len(expected):
            try:  # the common case, without building error lists
                return [inputs[k] for k in expected]
            except KeyError:
                pass
        if isinstance(inputs, Mapping):
            unknown = [k for k in inputs if k not in expected]
            missing = [k for k in expected if k not in inputs]
            if unknown or missing:
                parts = []
                if unknown:
                    parts.append(f"unknown input(s) {unknown}")
                if missing:
                    parts.append(f"missing input(s) {missing}")
                raise InputError(f"{' and '.join(parts)}; expected {expected}")
            return [inputs[k] for k in expected]
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence):
            raise InputError(
                f"inputs must be a dict of name -> array or a list of arrays; expected {expected}"
            )
        if len(inputs) != len(expected):
            raise InputError(f"expected {len(expected)} input(s) {expected}, got {len(inputs)}")
        return list(inputs)

    def blob(self) -> bytes:
        """The bytes of the `.xnn` blob this Program was loaded from (a path is read again)."""
        src = self._source
        if src is None:
            raise TypeError("this Program was built without its blob; load it with webxnn.load to pickle it")
        if isinstance(src, str):
            with open(src, "rb") as f:
                return f.read()
        return bytes(src)

    def __reduce__(self) -> tuple[Any, tuple[bytes, int, int, bool]]:
        return _unpickle, (self.blob(), *self._load_opts)

    def __repr__(self) -> str:
        def fmt(infos: list[TensorInfo]) -> str:
            def dims(i: TensorInfo) -> str:
                return ", ".join(
                    f"{d or '?'}<={n}" if d else str(n)
                    for n, d in zip(i.shape, i.dynamic or (None,) * len(i.shape))
                )

            return ", ".join(f"{i.name}: {i.dtype}[{dims(i)}]" for i in infos)

        return (
            f"webxnn.Program(inputs=[{fmt(self.inputs)}], outputs=[{fmt(self.outputs)}], "
            f"threads={self.threads}, peak_arena_bytes={self.peak_arena_bytes})"
        )


def _unpickle(blob: bytes, threads: int, spin_us: int = -1, shared_pool: bool = False) -> Program:
    opts: dict[str, Any] = {"threads": threads, "spin_us": spin_us, "shared_pool": shared_pool}
    return Program(_runtime.Program.from_buffer(blob, **opts), blob, **opts)


def _step_row(raw: tuple) -> dict[str, Any]:
    node, kind, source, shape, fused, ns, serial, ahead = raw[:8]
    return {
        "node": node,
        "kind": kind,
        "source": source,
        "shape": tuple(shape),
        "fused": list(fused),
        "aliased": ns is None,
        "serial": bool(serial),
        "prefetches": ahead,
    }


_MAX_SPIN_US: int = _runtime.MAX_SPIN_US  # ThreadPool::kMaxSpinUs


def _spin_arg(spin_us: int | None) -> int:
    if spin_us is None:
        return -1
    if not 0 <= int(spin_us) <= _MAX_SPIN_US:
        raise OptionError(f"spin_us must be in [0, {_MAX_SPIN_US}], got {spin_us}")
    return int(spin_us)


def set_threads(threads: int | None = None, spin_us: int | None = None) -> None:
    """Size the process's shared thread pool, used by Programs loaded with `pool="shared"`: `threads` in
    total (None or 0 = one per core), polling `spin_us` before sleeping (None = the default, or
    WEBXNN_SPIN_US). Programs loaded before keep the pool they were loaded with."""
    n = 0 if threads is None else int(threads)
    if n < 0:
        raise OptionError(f"threads must be >= 0, got {threads}")
    _runtime.set_shared_pool(n, _spin_arg(spin_us))


def _pte_in_place(pte: str | bytes | memoryview) -> bool:
    """Whether the C++ loader runs this `.pte` in place (one XnnpackBackend delegate call, nothing else)."""
    from .pte.reader import is_one_delegate_call

    if not isinstance(pte, str):
        try:
            return is_one_delegate_call(pte)
        except WebxnnError:
            return True  # malformed: the C++ loader names the problem
    try:
        with open(pte, "rb") as fh:
            # not closed here: views into it may live on in an exception's traceback; the GC unmaps it
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        return is_one_delegate_call(memoryview(mm))
    except (OSError, ValueError, WebxnnError):
        return True  # unreadable, empty or malformed: the C++ loader names the problem


def _read_file(path: str) -> bytes:
    try:
        return pathlib.Path(path).read_bytes()
    except OSError as e:
        raise FileError.from_os_error(path, e) from None


def load(
    blob_or_path: BlobOrPath,
    threads: int | None = None,
    mmap: bool = True,
    *,
    spin_us: int | None = None,
    pool: Pool = "own",
    override_dims: Mapping[str, int] | None = None,
    dyn_max: int | Mapping[str, int] | None = None,
    weights: str | os.PathLike[str] | None = None,
    manifest: str | os.PathLike[str] | None = None,
    cache: bool | str | os.PathLike[str] = False,
) -> Program:
    """Verify and plan a `.xnn` blob given as bytes or a file path (memory-mapped); a `.webnn` / `.json` graph
    or `.onnx` model path is compiled on the fly; an ExecuTorch `.pte` (bytes or path) runs its XnnpackBackend
    payload (the C++ loader finds it and the program's named data). `threads`: threads per run (None or 0 =
    one per core). `spin_us`: how long the pool's threads poll for the next piece of work before sleeping
    (None = the default, or WEBXNN_SPIN_US). `pool="shared"`: run on the process's shared pool instead (sized
    by `set_threads`; `threads` and `spin_us` must then be None), so several Programs share its threads (see
    `set_threads`). `mmap=False` reads the file into memory instead of mapping it: for a file that may
    be truncated or rewritten in place while the Program lives (constants are read from a mapping at every
    run, and a truncated mapping is a SIGBUS). Raises FormatError / UnsupportedError for bad blobs or wrong
    kinds of file, FileError for files that cannot be read.
    A model compiled on the fly takes the options of `compiler.read_model` (`override_dims` / `dyn_max` for
    an `.onnx` model, `weights` / `manifest` for a graph; OptionError for one its kind has no use for) and
    `cache`: False, True (the per-user folder, see `compile_cache.cache_folder`) or a folder, where the
    compiled blob is kept under a key covering every input that changes it (see `compile_cache`); a path
    that needs no compiling ignores `cache`."""
    n = 0 if threads is None else int(threads)
    if n < 0:
        raise OptionError(f"threads must be >= 0, got {threads}")
    if pool not in ("own", "shared"):
        raise OptionError(f"pool must be 'own' or 'shared', got {pool!r}")
    shared = pool == "shared"
    if shared and (threads is not None or spin_us is not None):
        raise OptionError("pool='shared' takes its threads and spin_us from webxnn.set_threads(), not load()")
    opts: dict[str, Any] = {"threads": n, "spin_us": _spin_arg(spin_us), "shared_pool": shared}
    model_options: dict[str, Any] = {
        "weights": weights,
        "manifest": manifest,
        "override_dims": override_dims,
        "dyn_max": dyn_max,
    }
    if isinstance(blob_or_path, (str, os.PathLike)):
        path = os.fspath(blob_or_path)
        # an unknown kind goes to the blob verifier, which says which bytes are wrong
        kind = expect(path, ("xnn", "unknown", "pte", *GRAPH_KINDS), what=_MODEL)
        # (an unknown kind is what the verifier will take for a blob)
        check_model_options(path, "xnn" if kind == "unknown" else kind, **model_options)
        if kind in GRAPH_KINDS:  # a graph or ONNX model: compiled here (or found in the cache)
            return _load_model(path, kind, opts, mmap, cache, model_options)
        if kind == "pte" and not _pte_in_place(path):
            return load(_read_file(path), threads, spin_us=spin_us, pool=pool)
        return _load_file(path, opts, mmap)
    if isinstance(blob_or_path, memoryview) and (not blob_or_path.contiguous or not blob_or_path.readonly):
        blob_or_path = blob_or_path.tobytes()
    if not isinstance(blob_or_path, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"load() takes bytes, bytearray, memoryview or a path, not {type(blob_or_path).__name__}"
        )
    if isinstance(blob_or_path, bytearray):
        # the runtime copies writable buffers anyway; an immutable copy here is what it then borrows, and
        # what a pickle sends, whatever the caller later does to the bytearray
        blob_or_path = bytes(blob_or_path)
    kind = sniff_bytes(bytes(blob_or_path[:256]))
    if kind not in ("xnn", "pte", "unknown"):
        raise FormatError(f"these bytes are {KINDS[kind][0]}, not {_MODEL}; {KINDS[kind][1]}")
    check_model_options("<bytes>", "xnn" if kind == "unknown" else kind, **model_options)
    if kind == "pte" and not _pte_in_place(blob_or_path):
        # delegates with portable operators between them: one merged webxnn graph (pte/merge.py)
        from .pte.reader import payload_for_runtime

        blob_or_path = payload_for_runtime(blob_or_path)
    return Program(_runtime.Program.from_buffer(blob_or_path, **opts), blob_or_path, **opts)


def _load_file(path: str, opts: dict[str, Any], mmap: bool) -> Program:
    """A `.xnn` / `.pte` file, memory-mapped or (`mmap=False`) read."""
    if not mmap:
        try:
            data = pathlib.Path(path).read_bytes()  # bytes are immutable: the runtime uses them in place
        except OSError as e:
            raise FileError.from_os_error(path, e) from None
        return Program(_runtime.Program.from_buffer(data, **opts), data, **opts)
    return Program(_runtime.Program.from_path(path, **opts), os.path.abspath(path), **opts)


def _load_model(
    path: str, kind: str, opts: dict[str, Any], mmap: bool, cache: Any, model_options: dict[str, Any]
) -> Program:
    """The model at `path` compiled in memory, or through the compile cache: an entry that exists and
    passes the loader's verification is run as it is; a missing or damaged one is compiled and written."""
    from . import compile_cache
    from .compiler import compile_graph, read_model

    folder = compile_cache.cache_folder(cache)
    entry = compile_cache.cache_entry(folder, path, kind, **model_options) if folder else None
    if entry is not None and entry.is_file():
        try:
            return _load_file(str(entry), opts, mmap)
        except WebxnnError:  # truncated or damaged (or unreadable): compiled again below, and replaced
            pass
    from .xnn.writer import serialize

    blob = serialize(compile_graph(read_model(path, **model_options)))
    if entry is not None:
        compile_cache.store(entry, blob)
    return Program(_runtime.Program.from_buffer(blob, **opts), blob, **opts)


__all__ = ["Pool", "Program", "TensorInfo", "load", "set_threads"]
