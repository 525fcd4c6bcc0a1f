"""A Conv2d / BatchNorm2d / ReLU stack (eval mode, so BatchNorm uses its running statistics)."""

import torch
from torch import nn


class ConvBnRelu(nn.Module):
    """Two conv-bn-relu stages with fixed, seeded weights."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.relu2 = nn.ReLU()
        self.eval()

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(x)))
        return self.relu2(self.bn2(self.conv2(x)))


def example_inputs():
    """One 3x16x16 image."""
    torch.manual_seed(1)
    return (torch.randn(1, 3, 16, 16),)
