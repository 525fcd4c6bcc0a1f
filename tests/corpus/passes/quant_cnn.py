"""A small CNN as quantization tutorials use: conv-bn-relu, a residual add, pooling, a linear head."""

import torch
from torch import nn


class QuantCNN(nn.Module):
    """Conv-BN-ReLU, conv-ReLU with a residual add, global pooling and a Linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.conv2(x)) + x
        return self.fc(torch.flatten(self.pool(x), 1))


def get_model():
    """The model in eval mode with seeded random weights (no download)."""
    torch.manual_seed(0)
    model = QuantCNN().eval()
    with torch.no_grad():  # batch-norm statistics that are not the identity
        model.bn1.running_mean.uniform_(-0.5, 0.5)
        model.bn1.running_var.uniform_(0.5, 2.0)
    return model


def example_inputs():
    """One batch of two 16x16 RGB images."""
    return (torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)
