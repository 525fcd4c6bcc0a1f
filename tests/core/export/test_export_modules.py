"""Rebuilding leaf submodules from their configuration: the constructor expression an export writes,
evaluated, loaded with the original weights and run, must behave like the original module."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fxstudio.core.errors import ExportError
from fxstudio.core.export.modules import ImportNamer, constructor_expression

CASES = [
    (nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False), (1, 3, 9, 9)),
    (nn.Conv1d(4, 8, 3, groups=2, padding="same", padding_mode="reflect"), (2, 4, 7)),
    (nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1), (1, 4, 5, 5)),
    (nn.Linear(5, 3, bias=False), (2, 5)),
    (nn.LayerNorm(6, eps=1e-3, bias=False), (2, 6)),
    (nn.GroupNorm(2, 4), (1, 4, 3, 3)),
    (nn.BatchNorm2d(4, momentum=0.3, affine=False), (2, 4, 3, 3)),
    (nn.Embedding(10, 4, padding_idx=0), None),
    (nn.MultiheadAttention(8, 2, bias=False, batch_first=True), None),
    (nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True), (2, 3, 8)),
    (nn.LSTM(4, 6, num_layers=2, batch_first=True), (2, 3, 4)),
    (nn.RNN(4, 5, nonlinearity="relu"), (3, 2, 4)),
    (nn.Sequential(nn.Linear(4, 4), nn.GELU(approximate="tanh")), (2, 4)),
    (nn.MaxPool2d(3, 2, 1, ceil_mode=True), (1, 2, 8, 8)),
    (nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), (1, 2, 3, 3)),
    (nn.Hardtanh(-2.0, 2.0), (5,)),
]


@pytest.mark.parametrize("module, shape", CASES, ids=[type(m).__name__ for m, _ in CASES])
def test_rebuilt_module_behaves_like_the_original(module, shape):
    torch.manual_seed(0)
    module.eval()
    namer = ImportNamer(set(), None, None)
    expr = constructor_expression(module, "m", namer)
    assert expr.startswith("nn.") and set(namer.lines) <= {"from torch import nn"}
    rebuilt = eval(expr, {"nn": nn, "torch": torch})  # noqa: S307 - the expression under test
    rebuilt.load_state_dict(module.state_dict())
    rebuilt.eval()
    assert repr(rebuilt) == repr(module)
    if isinstance(module, nn.Embedding):
        args = (torch.tensor([[0, 3, 9]]),)
    elif isinstance(module, nn.MultiheadAttention):
        x = torch.randn(2, 3, 8)
        args = (x, x, x)
    else:
        args = (torch.randn(shape),)
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(*args), module(*args), rtol=0, atol=0)


class NeedsUnstoredArgument(nn.Module):
    """A custom leaf whose constructor argument is not kept as an attribute."""

    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)


def test_a_module_that_cannot_be_rebuilt_is_named_with_the_reason():
    with pytest.raises(ExportError) as info:
        constructor_expression(NeedsUnstoredArgument(3), "blocks.0", ImportNamer(set(), None, None))
    message = str(info.value)
    assert "cannot rebuild submodule 'blocks.0'" in message and "NeedsUnstoredArgument" in message
    assert "__init__ parameter 'width' is not stored as an attribute" in message
