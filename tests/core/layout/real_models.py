"""Real models for the frame and repeated-block tests: a ResNet-style CNN with BatchNorm (as a .py
file, and exported to .pt2) and tiny GPT-2 and BERT from transformers configs (exported to .pt2;
random weights, no downloads)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import torch
from torch import nn

CNN_SOURCE = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(x + y)   # one ReLU module called twice, as torchvision's BasicBlock does


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.layer1 = nn.Sequential(Block(8), Block(8), Block(8))
        self.down = nn.Conv2d(8, 16, 1, stride=2)
        self.layer2 = nn.Sequential(Block(16), Block(16))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = self.layer2(self.down(self.layer1(x)))
        return self.fc(x.mean((2, 3)))


def example_inputs():
    return (torch.randn(1, 3, 16, 16),)
'''


class _Tensors(nn.Module):
    """An HF model returning its first output as a tensor (as people export them)."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False, return_dict=False)[0]


@functools.lru_cache(maxsize=None)
def folder() -> Path:
    """One temporary folder per test process for the generated files, removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="fxs_real_models_"))
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.lru_cache(maxsize=None)
def cnn_py() -> Path:
    """The CNN as a model file."""
    path = folder() / "cnn_bn.py"
    path.write_text(CNN_SOURCE)
    return path


@functools.lru_cache(maxsize=None)
def cnn_pt2() -> Path:
    """The CNN exported with torch.export (eval mode) and saved as .pt2."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fxs_cnn_bn", cnn_py())
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    path = folder() / "cnn_bn.pt2"
    torch.export.save(torch.export.export(mod.Net().eval(), mod.example_inputs()), str(path))
    return path


@functools.lru_cache(maxsize=None)
def gpt2_pt2(layers: int = 6) -> Path:
    """A tiny GPT-2 (``layers`` GPT2Blocks) exported and saved as .pt2."""
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=layers, n_embd=32, n_head=2, vocab_size=64, n_positions=16,
                     bos_token_id=0, eos_token_id=0)
    path = folder() / f"gpt2_{layers}.pt2"
    ids = torch.randint(0, 64, (1, 8))
    torch.export.save(torch.export.export(_Tensors(GPT2Model(cfg).eval()), (ids,)), str(path))
    return path


@functools.lru_cache(maxsize=None)
def bert_pt2() -> Path:
    """A tiny two-layer BERT exported and saved as .pt2."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                     vocab_size=64, max_position_embeddings=16)
    path = folder() / "bert.pt2"
    ids = torch.randint(0, 64, (1, 8))
    torch.export.save(torch.export.export(_Tensors(BertModel(cfg).eval()), (ids,)), str(path))
    return path
