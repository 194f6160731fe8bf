"""Batch inference with Ray Data: `Predictor`, a callable class for `Dataset.map_batches`.

Ray starts a pool of actors; each builds one `Predictor` (the model verified, planned and its weights packed
once per actor) and is then handed numpy batches, `{column: array}` with the rows on axis 0. The predictor
runs the model over each batch in chunks the model accepts and returns the outputs as columns:

- a model whose inputs all have a dynamic first dim (`dyn("batch", 64)` in `.webnn`, or an ONNX model with a
  symbolic batch dim imported with `max_batch=`) runs chunks of up to that bound, the last one smaller;
- a model with a fixed first dim (an ONNX export with batch 1, say) runs chunks of exactly that many rows, the
  last one padded with zeros and the padding's outputs dropped.

Rows therefore come back one for one and in order, and columns the model does not read (ids, file names) are
passed through. This module does not import Ray: it works on plain dicts too, so a
single-process loop over the same batches (`Predictor(...)(batch)`) gives the same arrays.

    import ray, webxnn.ray
    ds = ray.data.from_numpy(x)                          # one column "data", rows of shape (3, 224, 224)
    out = ds.map_batches(webxnn.ray.Predictor, fn_constructor_kwargs={"model": "m.onnx", "threads": 1},
                         batch_size=64, concurrency=2, num_cpus=1)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Union

import numpy as np

from .errors import InputError
from .runtime import Program, load

Model = Union[Program, bytes, str, "os.PathLike[str]"]


def _load_model(model: Model, threads: int, max_batch: int | None) -> Program:
    if isinstance(model, Program):
        return load(model.blob(), threads=threads)
    if isinstance(model, (str, os.PathLike)) and max_batch is not None:
        from .filekind import sniff

        if sniff(model) == "onnx":  # a symbolic batch dim stays dynamic, up to max_batch
            from .compiler import compile as compile_graph
            from .onnx import from_onnx

            return load(compile_graph(from_onnx(model, dyn_max=max_batch)), threads=threads)
    return load(model, threads=threads)


class Predictor:
    """Runs a webxnn model over numpy batches; one instance per Ray actor (`Dataset.map_batches`).

    `model`: a `.xnn` / `.webnn` / `.onnx` path (it must exist where the actor runs), blob bytes, or a loaded
    `Program` (sent as its blob). `threads`: threads per run in this actor (1 suits one actor per core).
    `max_batch`: the most rows per run; an ONNX model's symbolic batch dim becomes dynamic up to it, and it
    caps a dynamic model's own bound. `columns`: model input name -> batch column (default: same name; a
    one-input model reads the batch's only column when it has one; a one-input model may also take `columns`
    as that column's name). `outputs`: which model outputs to return (default all), as columns of the same
    names. Columns the model does not read are returned unchanged beside the outputs."""

    def __init__(
        self,
        model: Model,
        threads: int = 1,
        max_batch: int | None = None,
        columns: Mapping[str, str] | str | None = None,
        outputs: list[str] | None = None,
    ) -> None:
        if max_batch is not None and max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.program = _load_model(model, threads, max_batch)
        self._outputs = outputs
        if isinstance(columns, str):
            if len(self.program.inputs) != 1:
                raise InputError(
                    f"columns={columns!r} names one column but the model has inputs "
                    f"{[i.name for i in self.program.inputs]}; map each: columns={{input: column}}"
                )
            columns = {self.program.inputs[0].name: columns}
        self._columns = dict(columns or {})
        self.chunk, self.pad = self._chunking(max_batch)

    def _chunking(self, max_batch: int | None) -> tuple[int, bool]:
        """(rows per run, whether a short last chunk is padded to that size)."""
        ins = self.program.inputs
        if any(not i.shape for i in ins):
            raise InputError(f"a scalar input has no batch axis: {[i.name for i in ins if not i.shape]}")
        if all(i.dynamic and i.dynamic[0] is not None for i in ins):
            bound = min(i.shape[0] for i in ins)
            return (min(bound, max_batch) if max_batch else bound), False
        firsts = {i.shape[0] for i in ins}
        if len(firsts) != 1 or any(i.dynamic and i.dynamic[0] is not None for i in ins):
            raise InputError(
                "the model's inputs do not share a batch axis 0: "
                + ", ".join(f"{i.name}{list(i.shape)}" for i in ins)
            )
        return firsts.pop(), True

    def _input_columns(self, batch: Mapping[str, np.ndarray]) -> dict[str, str]:
        names = [i.name for i in self.program.inputs]
        cols = {n: self._columns.get(n, n) for n in names}
        if len(names) == 1 and cols[names[0]] not in batch:
            free = [c for c in batch if c not in self._columns.values()]
            if len(free) == 1:
                cols[names[0]] = free[0]
        missing = [f"{n} (column {c!r})" for n, c in cols.items() if c not in batch]
        if missing:
            raise InputError(
                f"batch has no column for input(s) {', '.join(missing)}; its columns are {list(batch)} "
                "(map them with columns={input: column})"
            )
        return cols

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        cols = self._input_columns(batch)
        arrays = {}
        for info in self.program.inputs:
            a = np.asarray(batch[cols[info.name]])
            if a.ndim != len(info.shape) or a.shape[1:] != info.shape[1:]:
                raise InputError(
                    f"input {info.name!r} (column {cols[info.name]!r}): rows of shape {list(info.shape[1:])} "
                    f"expected, got a batch of shape {list(a.shape)}"
                )
            arrays[info.name] = a  # the dtype is checked by run: an InputError naming the input
        n = len(next(iter(arrays.values())))
        if any(len(a) != n for a in arrays.values()):
            raise InputError(f"input columns differ in length: { {k: len(a) for k, a in arrays.items()} }")
        parts: list[dict[str, np.ndarray]] = []
        for start in range(0, n, self.chunk):
            rows = min(self.chunk, n - start)
            feed = {k: a[start : start + rows] for k, a in arrays.items()}
            if self.pad and rows < self.chunk:
                feed = {k: _pad_rows(a, self.chunk) for k, a in feed.items()}
            out = self.program.run(feed, self._outputs)
            parts.append({k: v[:rows] for k, v in out.items()})
        result = {k: v for k, v in batch.items() if k not in cols.values()}
        names = self._outputs or [o.name for o in self.program.outputs]
        for k in names:
            if parts:
                result[k] = np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k]
            else:  # an empty batch: no rows of each output's row shape
                info = next(o for o in self.program.outputs if o.name == k)
                result[k] = np.empty((0, *info.shape[1:]), info.numpy_dtype)
        return result


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    padded = np.zeros((rows, *a.shape[1:]), a.dtype)
    padded[: len(a)] = a
    return padded


__all__ = ["Predictor"]
