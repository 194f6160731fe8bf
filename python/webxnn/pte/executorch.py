"""Run a `.pte` in ExecuTorch's own Python runtime (the optional `executorch` extra), with webxnn's calling
convention: inputs by name, outputs by name. Used to check that what webxnn writes runs in ExecuTorch (the
conformance cases with `--runtime executorch`, the round-trip tests and `bench pte`); webxnn itself never
needs executorch.

ExecuTorch binds a method's arguments by position; a `.pte` written by webxnn carries the names in its
payload's metadata (inputs and outputs in external-id order, the order the program binds them), so they are
read back from there rather than trusted from the caller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InputError, UnsupportedError


def executorch_runtime() -> Any:
    """ExecuTorch's `Runtime` singleton; UnsupportedError saying how to get it when executorch or torch is
    not installed."""
    try:
        import torch  # noqa: F401
        from executorch.runtime import Runtime
    except ImportError as e:
        raise UnsupportedError(
            f"ExecuTorch's runtime is not installed ({e}); pip install 'webxnn[executorch]' "
            "--extra-index-url https://download.pytorch.org/whl/cpu"
        ) from None
    return Runtime.get()


class ExecutorchProgram:
    """A `.pte` loaded in ExecuTorch's runtime: `run({name: array})` → `{name: array}` like `Program.run`."""

    def __init__(self, pte: bytes, input_names: list[str], output_names: list[str]) -> None:
        self.input_names, self.output_names = input_names, output_names
        # the program must outlive its method: ExecuTorch's method points into it
        self._program = executorch_runtime().load_program(bytes(pte))
        self._method = self._program.load_method("forward")

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise InputError(f"ExecuTorch program: inputs {missing} not given (it takes {self.input_names})")
        # np.require, not np.ascontiguousarray: that one makes a 0-D array 1-D, which ExecuTorch refuses
        args = [torch.from_numpy(np.require(inputs[n], requirements="C")) for n in self.input_names]
        outs = self._method.execute(args)
        return {n: o.numpy().copy() for n, o in zip(self.output_names, outs)}


def load_in_executorch(pte: bytes) -> ExecutorchProgram:
    """`pte` (written by webxnn, so its payload names the inputs and outputs) in ExecuTorch's runtime."""
    from ..xnn.reader import read
    from .reader import payload_for_runtime

    meta = read(payload_for_runtime(pte)).metadata
    ins = list(meta.input_names) if meta else []
    outs = list(meta.output_names) if meta else []
    return ExecutorchProgram(pte, ins, outs)


__all__ = ["ExecutorchProgram", "executorch_runtime", "load_in_executorch"]
