"""The harnesses by name: each makes case k of a seeded campaign and checks it (see runner.py)."""

from __future__ import annotations

from typing import Any


class OnnxHarness:
    def __init__(self, seed: int) -> None:
        from webxnn.onnx import convert

        from . import onnx_models

        self.convert, self.net = convert, convert.SAFETY_NET
        convert.SAFETY_NET = False  # a stray exception must show as itself here, not as the generic error
        self.seed, self.mod = seed, onnx_models
        self.work = onnx_models.Workdir()

    def make(self, k: int) -> Any:
        return self.mod.make(self.seed, k)

    def check(self, case: Any) -> None:
        self.mod.check(self.work.write(case))

    def close(self) -> None:
        self.convert.SAFETY_NET = self.net
        self.work.close()


class TextHarness:
    def __init__(self, seed: int) -> None:
        from . import texts

        self.seed, self.mod = seed, texts
        self.corpus = texts.Corpus()
        self.work = texts.Workdir()

    def make(self, k: int) -> Any:
        return self.mod.make(self.corpus, self.seed, k)

    def check(self, case: Any) -> None:
        self.mod.check(self.corpus, self.work, case)

    def close(self) -> None:
        self.work.close()


class BlobHarness:
    def __init__(self, seed: int) -> None:
        from . import blobs

        self.seed, self.mod = seed, blobs
        self.seeds = blobs.valid_blobs()

    def make(self, k: int) -> Any:
        import numpy as np

        return self.mod.mutate(self.seeds[k % len(self.seeds)], np.random.default_rng([self.seed, k]))

    def check(self, case: Any) -> None:
        self.mod.check(case)

    def close(self) -> None:
        pass


class PteHarness:
    def __init__(self, seed: int, golden: bool = True) -> None:
        from . import ptes

        self.seed, self.mod = seed, ptes
        self.seeds = ptes.seeds(golden)
        self.work = ptes.Workdir()

    def make(self, k: int) -> Any:
        import numpy as np

        rng = np.random.default_rng([self.seed, k])
        return self.mod.mutate(self.seeds[k % len(self.seeds)], rng), k % 8 == 0

    def check(self, case: Any) -> None:
        self.mod.check(self.work, *case)

    def close(self) -> None:
        self.work.close()
