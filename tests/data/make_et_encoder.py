"""Writes et_tiny_encoder.pte (+ .npz: input ids and ExecuTorch's output): a one-layer BERT-style encoder
exported by ExecuTorch with its XnnpackPartitioner — five delegate calls with embedding, layer norm and
expand_copy kernel calls between them — so the tests and the .pte fuzzer cover the merged path without
executorch installed. Run from tests/: python data/make_et_encoder.py (needs the executorch extra)."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from et_models import Encoder, executorch_export  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def main() -> None:
    from executorch.runtime import Runtime

    torch.manual_seed(0)
    model = Encoder(vocab=50, d=16, heads=2, ffn=32, layers=1, max_len=8)
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, 50, (1, 8)).astype(np.int64))
    pte = executorch_export(model, ids)
    program = Runtime.get().load_program(pte)
    (want,) = program.load_method("forward").execute([ids])
    (HERE / "et_tiny_encoder.pte").write_bytes(pte)
    np.savez(HERE / "et_tiny_encoder.npz", ids=ids.numpy(), out=want.numpy())
    print(len(pte), "bytes")


if __name__ == "__main__":
    main()
