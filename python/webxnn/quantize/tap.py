"""Run a graph and read intermediate values: the graph compiled with those values as extra outputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from ..graph import Graph


class Tapped:
    """`graph` compiled (by webxnn's own compiler and runtime) so that `run` returns `values` too."""

    def __init__(self, graph: Graph, values: Iterable[str], threads: int | None = None) -> None:
        from ..compiler import compile as compile_graph
        from ..runtime import load

        self.inputs = set(graph.inputs)
        outputs = dict(graph.outputs)
        self.names: dict[str, str] = {}  # value -> output name
        by_value = {v: k for k, v in outputs.items()}
        for v in values:
            if v in self.inputs:
                continue
            if v in by_value:
                self.names[v] = by_value[v]
                continue
            name = v if v not in outputs else f"{v}__tap"
            outputs[name] = v
            self.names[v] = name
        self.outputs = list(graph.outputs)
        # io_names={}: the tap Program is keyed by identifiers, like the samples (data._by_identifier)
        tapped = dataclasses.replace(graph, outputs=outputs, io_names={})
        tapped.weights = graph.weights
        self.program = load(compile_graph(tapped), threads=threads)

    def run(self, sample: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """{value: array} for every tapped value (graph inputs straight from `sample`)."""
        return self.run_with_outputs(sample)[0]

    def run_with_outputs(
        self, sample: dict[str, np.ndarray]
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """({value: array} as `run`, {graph output name: array})."""
        out = self.program.run(sample)
        got = {v: out[name] for v, name in self.names.items()}
        for v in self.inputs:
            got[v] = sample[v]
        return got, {k: out[k] for k in self.outputs}
