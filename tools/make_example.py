"""Regenerate the bundled example's weights (python/webxnn/examples/tiny_cnn.weights + manifest).

Seeded, so the files are reproducible; run from the repo root after changing the example graph.
"""

from __future__ import annotations

import pathlib

import numpy as np

from webxnn.constants import pack_weights

HERE = pathlib.Path(__file__).resolve().parents[1] / "python" / "webxnn" / "examples"


def main() -> None:
    rng = np.random.default_rng(20261122)
    shapes = {"conv1_w": (8, 3, 3, 3), "conv1_b": (8,), "conv2_w": (16, 8, 3, 3), "conv2_b": (16,),
              "fc_w": (16, 10), "fc_b": (10,)}
    arrays = {name: (rng.standard_normal(shape) * 0.3).astype(np.float32) for name, shape in shapes.items()}
    pack_weights(arrays, HERE / "tiny_cnn.weights", HERE / "tiny_cnn.manifest.json")


if __name__ == "__main__":
    main()
