"""Torch models for the ExecuTorch round trips (need torch): a BERT-style encoder (token ids → embedding +
positions → post-LN layers; ExecuTorch's XnnpackPartitioner leaves layer norm, the embedding lookup and the
expands between the attention matmuls outside its delegates) and ResNet-18, plus the export the ExecuTorch
docs show (`to_edge_transform_and_lower` with the XnnpackPartitioner)."""

from __future__ import annotations

import math

import torch
from bench.models import MOBILENET_V2_BLOCKS


class _Layer(torch.nn.Module):
    def __init__(self, d: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = torch.nn.LayerNorm(d, eps=1e-12), torch.nn.LayerNorm(d, eps=1e-12)
        self.f1, self.f2 = torch.nn.Linear(d, ffn), torch.nn.Linear(ffn, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        hd = d // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, hd).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd), dim=-1) @ v
        x = self.ln1(x + self.o(a.transpose(1, 2).reshape(b, t, d)))
        return self.ln2(x + self.f2(torch.nn.functional.gelu(self.f1(x))))


class Encoder(torch.nn.Module):
    """MiniLM-L6-H384 sizes by default; `ids=False` takes embeddings [1, seq, d] instead of int64 ids."""

    def __init__(
        self,
        vocab: int = 30522,
        d: int = 384,
        heads: int = 12,
        ffn: int = 1536,
        layers: int = 6,
        max_len: int = 128,
        ids: bool = True,
    ) -> None:
        super().__init__()
        self.ids = ids
        self.emb = torch.nn.Embedding(vocab, d) if ids else None
        self.pos = torch.nn.Parameter(torch.randn(max_len, d) * 0.02)
        self.ln = torch.nn.LayerNorm(d, eps=1e-12)
        self.layers = torch.nn.ModuleList([_Layer(d, heads, ffn) for _ in range(layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.ln((self.emb(x) if self.emb is not None else x) + self.pos[: x.shape[1]])
        for layer in self.layers:
            x = layer(x)
        return x


class _Block(torch.nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(torch.nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            torch.nn.BatchNorm2d(64),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(3, 2, 1),
        )
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [_Block(cin, cout, stride), _Block(cout, cout, 1)]
            cin = cout
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
        return self.fc(torch.flatten(y, 1))


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, relu6: bool = True) -> list:
    layers = [
        torch.nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        torch.nn.BatchNorm2d(cout),
    ]
    return layers + [torch.nn.ReLU6()] if relu6 else layers


class _Inverted(torch.nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        layers = _conv_bn(cin, mid, 1) if expand != 1 else []
        layers += _conv_bn(mid, mid, 3, stride, groups=mid) + _conv_bn(mid, cout, 1, relu6=False)
        self.body = torch.nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(torch.nn.Module):
    """The torchvision layout (width 1.0): inverted residual blocks, ReLU6, 1280 features, 1000 classes."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        layers, cin = _conv_bn(3, 32, 3, 2), 32
        for t, c, n, s in MOBILENET_V2_BLOCKS:
            for i in range(n):
                layers.append(_Inverted(cin, c, s if i == 0 else 1, t))
                cin = c
        self.features = torch.nn.Sequential(*layers, *_conv_bn(cin, 1280, 1))
        self.classifier = torch.nn.Linear(1280, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(y, 1))


def executorch_export(model: torch.nn.Module, x: torch.Tensor) -> bytes:
    """`model` exported the way ExecuTorch's docs show: whatever the XnnpackPartitioner takes is delegated,
    the rest left to ExecuTorch's portable kernels."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    lowered = to_edge_transform_and_lower(
        torch.export.export(model.eval(), (x,)), partitioner=[XnnpackPartitioner()]
    )
    return lowered.to_executorch().buffer
