"""A small torch model for .pt2 tests; tests assert the line numbers below, keep them stable."""

import torch
from torch import nn

from testkit.pt2src.layers import Block


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)  # STEM_LINE = 17
        x = self.blocks(x)
        return self.head(x.mean((2, 3)))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 16, 16),)
