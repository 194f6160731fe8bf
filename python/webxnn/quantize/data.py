"""Calibration data: read and check it all before any work is done.

Accepted forms (each becomes a list of samples, one `{input name: array}` per model run):
- a folder: `.npz` files keyed by input name, or (single-input models) `.npy` files, read in name order;
- one `.npz` keyed by input name whose arrays carry a batch axis (`[N, *shape]`, or `[N, *shape[1:]]` for a
  model whose batch dim is 1), or are one sample;
- from Python, any iterable of input dicts (or a Mapping of batched arrays, as an `.npz` holds).
Names, ranks, dims (fixed or within a `dyn()` bound) and dtypes must match the model, every value must be
finite, and there must be at least one sample: otherwise a `CalibrationError` names the sample and input."""

from __future__ import annotations

import os
import pathlib
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, Union

import numpy as np

from ..errors import InputError, WebxnnWarning
from ..graph import DynDim, Graph, Operand

Sample = dict[str, np.ndarray]
CalibrationData = Union[str, "os.PathLike[str]", Mapping[str, Any], Iterable[Mapping[str, Any]]]


class CalibrationError(InputError):
    """Calibration data that does not fit the model: names, shapes or dtypes that differ, no samples, or
    values that are not finite. Raised before calibration starts."""


def _npz(path: pathlib.Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise CalibrationError(f"{path}: cannot read it as .npz ({e})") from None


def _npy(path: pathlib.Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise CalibrationError(f"{path}: cannot read it as .npy ({e})") from None


def _by_identifier(graph: Graph, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Keys as the graph's input identifiers: an ONNX model's own input names (`Graph.io_names`, e.g.
    "input.1" for the identifier input_1) are what users key their data by, as with onnxruntime; identifiers
    work too."""
    ident = {name: i for i, name in graph.io_names.items()}
    return {ident.get(k, k) if k not in graph.inputs else k: v for k, v in arrays.items()}


def _input_names(graph: Graph) -> str:
    """The model's inputs as the user knows them (ONNX names where they differ from the identifiers)."""
    return ", ".join(graph.io_names.get(n, n) for n in graph.inputs)


def _split(graph: Graph, arrays: Mapping[str, np.ndarray], where: str) -> list[Sample]:
    """One sample, or the rows of a batch axis, of a dict of arrays."""
    arrays = _by_identifier(graph, arrays)
    counts = set()
    for name, a in arrays.items():
        op = graph.inputs.get(name)
        if op is None:
            continue  # reported by _check with the right wording
        rank = len(op.shape)
        if a.ndim == rank + 1:
            counts.add(a.shape[0])
        elif (
            a.ndim == rank and rank and op.shape[0] == 1 and a.shape[0] != 1 and _fits(op, (1, *a.shape[1:]))
        ):
            counts.add(a.shape[0])  # [N, ...] for a model with batch 1: N samples
        else:
            counts.add(None)
    if counts == {None} or not counts:
        return [dict(arrays)]
    if len(counts) != 1 or None in counts:
        raise CalibrationError(f"{where}: the inputs have different batch sizes or ranks ({_shapes(arrays)})")
    (n,) = counts
    rows = []
    for i in range(n):
        row = {}
        for name, a in arrays.items():
            op = graph.inputs.get(name)
            r = a[i]
            if op is not None and r.ndim == len(op.shape) - 1:
                r = r[None]
            row[name] = r
        rows.append(row)
    return rows


def _shapes(arrays: Mapping[str, np.ndarray]) -> str:
    return ", ".join(f"{k}: {list(np.shape(v))}" for k, v in arrays.items())


def _fits(op: Operand, shape: tuple[int, ...]) -> bool:
    if len(shape) != len(op.shape):
        return False
    return all((1 <= s <= d.max_size) if isinstance(d, DynDim) else s == d for s, d in zip(shape, op.shape))


def _from_folder(graph: Graph, folder: pathlib.Path) -> list[Sample]:
    files = sorted(p for p in folder.iterdir() if p.suffix in (".npz", ".npy") and p.is_file())
    if not files:
        raise CalibrationError(f"{folder}: no .npz or .npy files in this folder")
    samples: list[Sample] = []
    for p in files:
        if p.suffix == ".npz":
            samples += _split(graph, _npz(p), str(p))
        else:
            if len(graph.inputs) != 1:
                raise CalibrationError(
                    f"{p}: a .npy file holds one array, but the model has {len(graph.inputs)} inputs "
                    f"({_input_names(graph)}); use .npz files keyed by input name"
                )
            samples += _split(graph, {next(iter(graph.inputs)): _npy(p)}, str(p))
    return samples


def read_samples(graph: Graph, data: CalibrationData) -> list[Sample]:
    """The samples of `data` (see the module docstring), checked against `graph`'s inputs."""
    if isinstance(data, (str, os.PathLike)):
        path = pathlib.Path(data)
        if path.is_dir():
            samples = _from_folder(graph, path)
        elif path.suffix == ".npz" and path.is_file():
            samples = _split(graph, _npz(path), str(path))
        elif path.suffix == ".npy" and path.is_file() and len(graph.inputs) == 1:
            samples = _split(graph, {next(iter(graph.inputs)): _npy(path)}, str(path))
        elif not path.exists():
            raise CalibrationError(f"{path}: no such file or folder (calibration data)")
        else:
            raise CalibrationError(f"{path}: expected a folder of .npz/.npy files or one .npz file")
    elif isinstance(data, Mapping):
        samples = _split(graph, {k: np.asarray(v) for k, v in data.items()}, "calibration data")
    else:
        try:
            items = list(data)
        except TypeError:
            raise CalibrationError(
                f"calibration data: expected a path, a dict of arrays or an iterable of input dicts, "
                f"got {type(data).__name__}"
            ) from None
        samples = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise CalibrationError(
                    f"calibration sample {i}: expected a dict of input arrays, got {type(item).__name__}"
                )
            samples.append(_by_identifier(graph, {k: np.asarray(v) for k, v in item.items()}))
    check_samples(graph, samples)
    return samples


def check_samples(graph: Graph, samples: list[Sample]) -> None:
    """Every sample names exactly the model's inputs, with their dtypes and shapes, and finite values."""
    if not samples:
        raise CalibrationError("calibration data: no samples")
    want = set(graph.inputs)
    for i, s in enumerate(samples):
        where = f"calibration sample {i}"
        if set(s) != want:
            missing, extra = sorted(want - set(s)), sorted(set(s) - want)
            parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"unknown {', '.join(extra)}"] if extra else []
            )
            raise CalibrationError(f"{where}: {'; '.join(parts)} (the model's inputs: {_input_names(graph)})")
        for name, a in s.items():
            op = graph.inputs[name]
            if a.dtype != np.dtype(op.dtype):
                raise CalibrationError(
                    f"{where}, input {name!r}: dtype {a.dtype}, the model takes {op.dtype}"
                )
            if not _fits(op, a.shape):
                want_shape = [f"<={d.max_size}" if isinstance(d, DynDim) else d for d in op.shape]
                raise CalibrationError(
                    f"{where}, input {name!r}: shape {list(a.shape)}, the model takes {want_shape}"
                )
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
                raise CalibrationError(f"{where}, input {name!r}: {bad} value(s) are NaN or infinite")


def random_samples(graph: Graph, n: int, seed: int = 0) -> list[Sample]:
    """`n` seeded standard-normal samples (for smoke tests only: ranges from noise are not the data's)."""
    warnings.warn(
        f"calibrating on {n} random samples: the ranges fit noise, not your data, so accuracy will be poor; "
        "use --calibration with real inputs for a model you ship",
        WebxnnWarning,
        stacklevel=3,
    )
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        s = {}
        for name, op in graph.inputs.items():
            shape = [d.max_size if isinstance(d, DynDim) else d for d in op.shape]
            dt = np.dtype(op.dtype)
            s[name] = (
                rng.standard_normal(shape).astype(dt)
                if dt.kind == "f"
                else rng.integers(0, 4, shape).astype(dt)
            )
        out.append(s)
    return out
