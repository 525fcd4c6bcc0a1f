"""The real-model corpus (issue #15): architectures a torch.fx user opens, as model files fxstudio opens.

Each :class:`CorpusModel` is the text of a model ``.py`` file (``get_model()`` and ``example_inputs()``)
built from a tiny configuration with seeded random weights: nothing is downloaded. The Hugging Face
models need ``transformers`` (a test dependency); the hand-written ones (ResNet-, MobileNetV2-, UNet-,
ConvNeXt-style, an LSTM tagger, an ``nn.MultiheadAttention`` encoder) need torch alone. torchvision is
not used: no CPU build of it matches the project's torch (2.13+cpu); the hand-written blocks stand in
for its ResNet and MobileNet.

Tracers: plain ``symbolic_trace`` cannot follow Hugging Face models (transformers 5 has no
``transformers.utils.fx``), so they are opened with ``--tracer export`` only; the hand-written ones
with both tracers. ``tests/corpus/test_corpus.py`` opens, lays out, inspects, edits, compares and
exports every one; ``write_model_file`` writes one where a benchmark or a test wants it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

_HEAD = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n"


@dataclass(frozen=True)
class CorpusModel:
    """One architecture of the corpus: its model file's text and how fxstudio opens it.

    ``tracers``: the tracers that open it (``"fx"``, ``"export"``). ``needs``: the packages the file
    imports besides torch. ``notes``: what the model stands for, where its title does not say.
    """

    name: str
    title: str
    body: str
    tracers: tuple[str, ...]
    needs: tuple[str, ...] = ()
    notes: str = ""

    def source(self) -> str:
        """The model file's text."""
        return _HEAD + textwrap.dedent(self.body).lstrip("\n")


def _hf(name, title, imports, build, call, inputs, notes=""):
    body = f"""
    from transformers import {imports}


    class Model(nn.Module):
        \"\"\"{title}: a wrapper that returns tensors (export needs no ModelOutput).\"\"\"

        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.inner = {build}
            self.inner.eval()

        def forward(self, {", ".join(inputs)}):
            {call}


    def get_model():
        return Model().eval()


    def example_inputs():
        g = torch.Generator().manual_seed(1)
        return {_hf_inputs(inputs)}
    """
    return CorpusModel(name, title, body, ("export",), ("transformers",), notes)


def _hf_inputs(inputs):
    parts = []
    for name in inputs:
        if name == "pixel_values":
            parts.append("torch.randn(1, 3, 32, 32, generator=g)")
        elif name == "input_features":
            parts.append("torch.randn(1, 16, 64, generator=g)")
        elif name in ("attention_mask",):
            parts.append("torch.ones(1, 8, dtype=torch.long)")
        else:
            parts.append("torch.randint(0, 96, (1, 8), generator=g)")
    return "(" + ", ".join(parts) + ",)"


HF_MODELS = [
    _hf(
        "gpt2", "HF GPT-2 (2 blocks, logits)", "GPT2Config, GPT2LMHeadModel",
        "GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=96, n_positions=16, use_cache=False, "
        "bos_token_id=0, eos_token_id=0))",
        "return self.inner(input_ids, use_cache=False, return_dict=False)[0]", ["input_ids"],
    ),
    _hf(
        "bert", "HF BERT (2 layers, last hidden state and pooled)", "BertConfig, BertModel",
        "BertModel(BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64, "
        "vocab_size=96, max_position_embeddings=16))",
        "out = self.inner(input_ids, attention_mask=attention_mask, return_dict=False)\n            return out[0], out[1]",
        ["input_ids", "attention_mask"],
    ),
    _hf(
        "t5", "HF T5 encoder-decoder (1+1 layers)", "T5Config, T5ForConditionalGeneration",
        "T5ForConditionalGeneration(T5Config(num_layers=1, num_decoder_layers=1, d_model=32, d_kv=8, d_ff=64, "
        "num_heads=2, vocab_size=96, decoder_start_token_id=0, use_cache=False))",
        "return self.inner(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False, return_dict=False)[0]",
        ["input_ids", "decoder_input_ids"],
    ),
    _hf(
        "llama", "Llama-style decoder (LlamaConfig, 2 layers, RoPE, GQA)", "LlamaConfig, LlamaForCausalLM",
        "LlamaForCausalLM(LlamaConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=4, "
        "num_key_value_heads=2, vocab_size=96, max_position_embeddings=32, use_cache=False))",
        "return self.inner(input_ids, use_cache=False, return_dict=False)[0]", ["input_ids"],
    ),
    _hf(
        "vit", "HF ViT (2 layers, 32x32 image, 8x8 patches)", "ViTConfig, ViTModel",
        "ViTModel(ViTConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64, "
        "image_size=32, patch_size=8, num_channels=3))",
        "return self.inner(pixel_values, return_dict=False)[0]", ["pixel_values"],
    ),
    _hf(
        "whisper_encoder", "Whisper-style encoder (WhisperConfig, 2 layers, conv front end)",
        "WhisperConfig, WhisperModel",
        "WhisperModel(WhisperConfig(encoder_layers=2, decoder_layers=1, d_model=32, encoder_attention_heads=2, "
        "decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=32, "
        "vocab_size=96, pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)).get_encoder()",
        "return self.inner(input_features, return_dict=False)[0]", ["input_features"],
    ),
    _hf(
        "distilbert", "HF DistilBERT (2 layers)", "DistilBertConfig, DistilBertModel",
        "DistilBertModel(DistilBertConfig(n_layers=2, dim=32, n_heads=2, hidden_dim=64, vocab_size=96, "
        "max_position_embeddings=16))",
        "return self.inner(input_ids, return_dict=False)[0]", ["input_ids"],
    ),
]

GPT2_MODEL_OUTPUT = CorpusModel(
    "gpt2_model_output", "HF GPT-2 returning its default ModelOutput", """
    from transformers import GPT2Config, GPT2LMHeadModel


    def get_model():
        torch.manual_seed(0)
        config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=96, n_positions=16, use_cache=False,
                            bos_token_id=0, eos_token_id=0)
        return GPT2LMHeadModel(config).eval()


    def example_inputs():
        return (torch.randint(0, 96, (1, 8), generator=torch.Generator().manual_seed(1)),)
    """,
    ("export",), ("transformers",),
    notes="the model as it is, output CausalLMOutputWithCrossAttentions (issue #15 defects 2, 3)",
)

RESNET = CorpusModel("resnet", "ResNet-style (BasicBlocks with batch norm and a downsampling shortcut)", """
    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)


    class ResNet(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
            self.layer2 = nn.Sequential(BasicBlock(8, 16, 2), BasicBlock(16, 16))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(16, classes)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer2(self.layer1(x))
            return self.fc(torch.flatten(self.avgpool(x), 1))


    def get_model():
        torch.manual_seed(0)
        return ResNet().eval()


    def example_inputs():
        return (torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)
    """, ("fx", "export"))

MOBILENET = CorpusModel("mobilenet_v2", "MobileNetV2-style (inverted residuals, depthwise convs, ReLU6)", """
    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            self.conv = nn.Sequential(
                nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                nn.ReLU6(inplace=True),
                nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout),
            )

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)


    class MobileNetV2(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.features = nn.Sequential(
                nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6(inplace=True)),
                InvertedResidual(8, 8, 1, 2), InvertedResidual(8, 12, 2, 4), InvertedResidual(12, 12, 1, 4),
            )
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(12, classes))

        def forward(self, x):
            x = self.features(x)
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.classifier(x)


    def get_model():
        torch.manual_seed(0)
        return MobileNetV2().eval()


    def example_inputs():
        return (torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)
    """, ("fx", "export"))

UNET = CorpusModel("unet", "UNet-style (two levels, skip connections by concat, transposed conv)", """
    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.down1 = block(1, 4)
            self.down2 = block(4, 8)
            self.pool = nn.MaxPool2d(2)
            self.bottom = block(8, 16)
            self.up2 = nn.ConvTranspose2d(16, 8, 2, stride=2)
            self.dec2 = block(16, 8)
            self.up1 = nn.ConvTranspose2d(8, 4, 2, stride=2)
            self.dec1 = block(8, 4)
            self.head = nn.Conv2d(4, 2, 1)

        def forward(self, x):
            d1 = self.down1(x)
            d2 = self.down2(self.pool(d1))
            b = self.bottom(self.pool(d2))
            u2 = self.dec2(torch.cat([self.up2(b), d2], dim=1))
            u1 = self.dec1(torch.cat([self.up1(u2), d1], dim=1))
            return self.head(u1)


    def get_model():
        torch.manual_seed(0)
        return UNet().eval()


    def example_inputs():
        return (torch.randn(1, 1, 16, 16, generator=torch.Generator().manual_seed(1)),)
    """, ("fx", "export"))

LSTM = CorpusModel("lstm_tagger", "LSTM tagger (embedding, 2-layer bidirectional LSTM, linear head)", """
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 16)
            self.lstm = nn.LSTM(16, 16, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(32, 5)

        def forward(self, tokens):
            out, _ = self.lstm(self.embed(tokens))
            return self.head(out).log_softmax(-1)


    def get_model():
        torch.manual_seed(0)
        return Tagger().eval()


    def example_inputs():
        return (torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(1)),)
    """, ("fx", "export"))

CONVNEXT = CorpusModel("convnext", "ConvNeXt-style (depthwise 7x7, LayerNorm, GELU MLP, layer scale)", """
    class LayerNorm2d(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
            self.norm = nn.LayerNorm(dim)
            self.pwconv1 = nn.Linear(dim, 4 * dim)
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.gamma = nn.Parameter(torch.full((dim,), 0.5))

        def forward(self, x):
            y = self.dwconv(x).permute(0, 2, 3, 1)
            y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
            return x + (self.gamma * y).permute(0, 3, 1, 2)


    class ConvNeXt(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 4, stride=4), LayerNorm2d(16))
            self.stages = nn.Sequential(Block(16), Block(16))
            self.head = nn.Linear(16, classes)

        def forward(self, x):
            x = self.stages(self.stem(x))
            return self.head(x.mean([-2, -1]))


    def get_model():
        torch.manual_seed(0)
        return ConvNeXt().eval()


    def example_inputs():
        return (torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)
    """, ("fx", "export"))

MHA = CorpusModel("mha_encoder", "Transformer encoder built on nn.MultiheadAttention (2 pre-norm layers)", """
    class Layer(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim)
            self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            h = self.norm1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.norm2(x))


    class Encoder(nn.Module):
        def __init__(self, dim=16, heads=2):
            super().__init__()
            self.layers = nn.ModuleList([Layer(dim, heads) for _ in range(2)])
            self.norm = nn.LayerNorm(dim)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.norm(x)


    def get_model():
        torch.manual_seed(0)
        return Encoder().eval()


    def example_inputs():
        return (torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(1)),)
    """, ("fx", "export"))

HAND_WRITTEN = [RESNET, MOBILENET, UNET, LSTM, CONVNEXT, MHA]

MODELS: dict[str, CorpusModel] = {m.name: m for m in [*HF_MODELS, GPT2_MODEL_OUTPUT, *HAND_WRITTEN]}
"""Every corpus model by name."""


def cases() -> list[tuple[str, str]]:
    """``(model name, tracer)`` for every model and each tracer that opens it."""
    return [(m.name, t) for m in MODELS.values() for t in m.tracers]


def write_model_file(name: str, folder: Path) -> Path:
    """Write corpus model ``name`` as ``folder/<name>.py`` (the file fxstudio opens); returns the path."""
    path = Path(folder) / f"{name}.py"
    path.write_text(MODELS[name].source())
    return path
