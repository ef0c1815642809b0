"""The model tier's real models (issue [F6]): built from the libraries on the GPU machine with
random weights from a fixed seed (nothing is downloaded). Each function returns (name, model,
example_args, dynamic_shapes, extra_args); regen.py exports them all."""
import torch
import torch.nn as nn


def _seed():
    torch.manual_seed(0)


def _lively_norms(m):
    """Batch norms with running statistics and affine parameters away from the identity, so
    their arithmetic is tested (fresh ones are mean 0, variance 1, weight 1, bias 0), and the
    activations of a deep random network stay away from zero."""
    for bn in m.modules():
        if isinstance(bn, nn.BatchNorm2d):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.data.uniform_(0.8, 1.6)
            bn.bias.data.uniform_(-0.1, 0.3)
    return m


def mlp():
    _seed()
    m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 16))
    batch = torch.export.Dim("batch", min=2, max=4096)
    return "m01_mlp", m, (torch.randn(8, 32),), ({0: batch},), [(torch.randn(3, 32),)]


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, dilation=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.body(x), 1))


def small_cnn():
    _seed()
    m = _lively_norms(SmallCNN())
    return "m02_small_cnn", m, (torch.randn(2, 3, 32, 32),), None, []


def squeezenet():
    import torchvision
    _seed()
    m = torchvision.models.squeezenet1_1(weights=None, num_classes=10)
    return "m03_squeezenet1_1", m, (torch.randn(1, 3, 64, 64),), None, []


def mobilenet():
    import torchvision
    _seed()
    m = _lively_norms(torchvision.models.mobilenet_v3_small(weights=None, num_classes=10))
    nn.init.normal_(m.classifier[-1].weight, std=0.5)  # torchvision's 0.01 leaves outputs near 0
    return "m04_mobilenet_v3_small", m, (torch.randn(1, 3, 64, 64),), None, []


class _LastHidden(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, ids):
        return self.inner(input_ids=ids).last_hidden_state


def gpt2():
    from transformers import GPT2Config, GPT2Model
    _seed()
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64, use_cache=False,
                     attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0)
    m = _LastHidden(GPT2Model(cfg))
    return "m05_gpt2_tiny", m, (torch.randint(0, 128, (1, 16)),), None, []


def bert():
    from transformers import BertConfig, BertModel
    _seed()
    cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                     vocab_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    m = _LastHidden(BertModel(cfg, add_pooling_layer=False))
    return "m06_bert_tiny", m, (torch.randint(0, 128, (1, 16)),), None, []


def encoder_layer():
    _seed()
    m = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    batch = torch.export.Dim("batch", min=2, max=1024)
    return "m07_transformer_encoder_layer", m, (torch.randn(4, 10, 64),), ({0: batch},), [(torch.randn(2, 10, 64),)]


def vit():
    from timm.models.vision_transformer import VisionTransformer
    _seed()
    m = VisionTransformer(img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=4, num_classes=10)
    return "m08_vit_tiny", m, (torch.randn(1, 3, 32, 32),), None, []


ALL = [mlp, small_cnn, squeezenet, mobilenet, gpt2, bert, encoder_layer, vit]
