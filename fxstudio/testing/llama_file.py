"""Llama-style model files built from a config (random weights, no download) for the meta-device
tests and ``bench/bench_meta.py`` (issue #28): from a 2-layer toy to 8B- and 70B-sized configs."""

from __future__ import annotations

import textwrap

LLAMA_TINY = dict(hidden_size=64, num_hidden_layers=2, vocab_size=1000, intermediate_size=128,
                  num_attention_heads=4, num_key_value_heads=2)
LLAMA_8B = dict(hidden_size=4096, num_hidden_layers=32, intermediate_size=14336, num_attention_heads=32,
                num_key_value_heads=8, vocab_size=128256)
LLAMA_70B = dict(hidden_size=8192, num_hidden_layers=80, intermediate_size=28672, num_attention_heads=64,
                 num_key_value_heads=8, vocab_size=128256)


def llama_source(config: dict | None = None) -> str:
    """A model file building ``LlamaForCausalLM`` from ``LLAMA_TINY`` updated with ``config``
    (``use_cache=False``; the wrapper returns the logits) with eight token ids as example inputs."""
    config = {**LLAMA_TINY, "use_cache": False, **(config or {})}
    return textwrap.dedent(f"""
        import torch
        from torch import nn
        from transformers import LlamaConfig, LlamaForCausalLM


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = LlamaForCausalLM(LlamaConfig(**{config!r}))

            def forward(self, input_ids):
                return self.inner(input_ids, use_cache=False, return_dict=False)[0]


        def get_model():
            return Model().eval()


        def example_inputs():
            return (torch.randint(0, 1000, (1, 8), generator=torch.Generator().manual_seed(1)),)
    """).lstrip()
