"""A small transformer encoder: token embedding, three pre-norm blocks (multi-head self-attention
written with Linear/matmul/softmax, and a GELU MLP), a final LayerNorm and a classifier head.
"""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    """Multi-head self-attention from Linear projections, matmul and softmax (fx-traceable)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def _split(self, t, batch, seq):
        return t.reshape(batch, seq, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        batch, seq, dim = x.shape
        q = self._split(self.q_proj(x), batch, seq)
        k = self._split(self.k_proj(x), batch, seq)
        v = self._split(self.v_proj(x), batch, seq)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        attn = torch.softmax(scores, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(batch, seq, dim)
        return self.out_proj(out)


class MLP(nn.Module):
    """Linear, GELU, Linear."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class EncoderBlock(nn.Module):
    """Pre-norm block: ``x + attn(ln1(x))`` then ``x + mlp(ln2(x))``."""

    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class TransformerEncoder(nn.Module):
    """Embedding + learned positions, three encoder blocks, LayerNorm, mean-pool, 4-way head."""

    def __init__(self, vocab=100, dim=32, heads=4, hidden=64, depth=3, max_len=16, classes=4):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)
        self.blocks = nn.Sequential(*[EncoderBlock(dim, heads, hidden) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        self.eval()

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        x = self.blocks(x)
        x = self.norm(x)
        return self.head(x.mean(dim=1))


def example_inputs():
    """Two sequences of 16 token ids."""
    return (torch.arange(32, dtype=torch.long).reshape(2, 16) % 100,)
