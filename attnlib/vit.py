"""Chapter 8: the Vision Transformer (Dosovitskiy et al., 2021) and attention rollout.

An image is cut into non-overlapping ``p x p`` patches; each patch, flattened, is a token.
A learned ``<cls>`` token is put in front, learned position vectors are added, and
chapter 7's encoder blocks (pre-LN) mix the tokens. The ``<cls>`` output is classified.

* :func:`patchify`, :func:`unpatchify`: images ``<->`` patch tokens (exact inverses);
* :class:`PatchEmbedding`, :class:`ViT`: the model;
* :func:`attention_rollout`: how much each input token flows into each output token through
  all layers (Abnar & Zuidema, 2020), for drawing the ``<cls>`` token's attention on the image.
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import (
    check_bool,
    check_float,
    check_int,
    check_module_input,
    check_nonempty,
    check_tensor,
)
from .seq2seq import check_sizes
from .transformer import TransformerEncoderBlock


def _check_patch(images: torch.Tensor, patch_size: int) -> None:
    check_tensor("images", images, 4, "(batch, channels, height, width)")
    check_int("patch_size", patch_size)
    h, w = images.shape[-2:]
    if h % patch_size or w % patch_size:
        raise ValueError(f"images of {h}x{w} pixels (shape {tuple(images.shape)}) cannot be cut "
                         f"into {patch_size}x{patch_size} patches: both sides must be multiples "
                         f"of patch_size")


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """``(batch, channels, H, W) -> (batch, H/p * W/p, channels * p * p)``, patches in row-major
    order (left to right, then top to bottom), each flattened channel by channel."""
    _check_patch(images, patch_size)
    b, c, h, w = images.shape
    p = patch_size
    x = images.reshape(b, c, h // p, p, w // p, p)  # (batch, c, rows, p, cols, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (batch, rows, cols, c, p, p)
    return x.reshape(b, (h // p) * (w // p), c * p * p)  # (batch, patches, c p p)


def unpatchify(patches: torch.Tensor, patch_size: int, height: int, width: int) -> torch.Tensor:
    """The inverse of :func:`patchify`: ``(batch, patches, c p p) -> (batch, c, height, width)``."""
    check_tensor("patches", patches, 3, "(batch, patches, channels * p * p)")
    check_sizes(patch_size=patch_size, height=height, width=width)
    p = patch_size
    rows, cols = height // p, width // p
    if rows * p != height or cols * p != width or patches.shape[1] != rows * cols \
            or patches.shape[2] % (p * p):
        raise ValueError(f"patches of shape {tuple(patches.shape)} do not tile a {height}x{width} "
                         f"image with {p}x{p} patches ({rows * cols} patches expected)")
    b, c = patches.shape[0], patches.shape[2] // (p * p)
    x = patches.reshape(b, rows, cols, c, p, p)  # (batch, rows, cols, c, p, p)
    x = x.permute(0, 3, 1, 4, 2, 5)  # (batch, c, rows, p, cols, p)
    return x.reshape(b, c, height, width)  # (batch, c, H, W)


class PatchEmbedding(nn.Module):
    """Cut images into patches and project each to ``num_hiddens``:
    ``(batch, channels, H, W) -> (batch, patches, num_hiddens)``."""

    def __init__(self, patch_size: int, in_channels: int, num_hiddens: int) -> None:
        super().__init__()
        check_sizes(patch_size=patch_size, in_channels=in_channels, num_hiddens=num_hiddens)
        self.patch_size, self.in_channels = patch_size, in_channels
        self.proj = nn.Linear(in_channels * patch_size * patch_size, num_hiddens)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        _check_patch(images, self.patch_size)
        if images.shape[1] != self.in_channels:
            raise ValueError(f"images have {images.shape[1]} channels (shape "
                             f"{tuple(images.shape)}), expected in_channels={self.in_channels}")
        check_float("images", images)
        check_module_input(self, "images", images)
        return self.proj(patchify(images, self.patch_size))  # (batch, patches, num_hiddens)


class ViT(nn.Module):
    """Vision Transformer: patch embedding, ``<cls>`` token, learned positions, ``num_blks``
    pre-LN encoder blocks, LayerNorm and a linear classifier on the ``<cls>`` output.

    ``forward(images (batch, channels, img_size, img_size)) -> logits (batch, num_classes)``.
    Token 0 is ``<cls>``; tokens ``1 ..`` are the patches in :func:`patchify`'s order.
    """

    def __init__(self, img_size: int, patch_size: int, num_classes: int, in_channels: int = 1,
                 num_hiddens: int = 32, ffn_num_hiddens: int = 64, num_heads: int = 4,
                 num_blks: int = 2, dropout: float = 0.0) -> None:
        super().__init__()
        check_sizes(dropout, img_size=img_size, patch_size=patch_size, num_classes=num_classes,
                    in_channels=in_channels, num_hiddens=num_hiddens,
                    ffn_num_hiddens=ffn_num_hiddens, num_heads=num_heads, num_blks=num_blks)
        if img_size % patch_size:
            raise ValueError(f"img_size ({img_size}) must be a multiple of patch_size "
                             f"({patch_size})")
        self.img_size = img_size
        self.num_patches = (img_size // patch_size) ** 2
        self.patch_embedding = PatchEmbedding(patch_size, in_channels, num_hiddens)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, num_hiddens))
        self.pos_embedding = nn.Parameter(0.02 * torch.randn(1, self.num_patches + 1, num_hiddens))
        self.dropout = nn.Dropout(dropout)
        self.blks = nn.ModuleList(
            TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout,
                                    pre_norm=True)
            for _ in range(num_blks))
        self.head = nn.Sequential(nn.LayerNorm(num_hiddens), nn.Linear(num_hiddens, num_classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        check_tensor("images", images, 4, "(batch, channels, height, width)")
        check_nonempty("images", images)
        if tuple(images.shape[-2:]) != (self.img_size, self.img_size):
            raise ValueError(f"images must be {self.img_size}x{self.img_size}, got shape "
                             f"{tuple(images.shape)}")
        X = self.patch_embedding(images)  # (batch, patches, num_hiddens)
        cls = self.cls_token.expand(X.shape[0], -1, -1)  # (batch, 1, num_hiddens)
        X = torch.cat((cls, X), dim=1)  # (batch, 1 + patches, num_hiddens)
        X = self.dropout(X + self.pos_embedding)  # (batch, 1 + patches, num_hiddens)
        for blk in self.blks:
            X = blk(X)  # (batch, 1 + patches, num_hiddens)
        return self.head(X[:, 0])  # (batch, num_classes)


def _check_attentions(attentions, residual) -> None:
    """:func:`attention_rollout`'s arguments, or a clear error naming the one at fault: a
    non-empty list of floating-point ``(batch, heads >= 1, n, n)`` weights, every layer with the
    same ``batch`` and ``n``, and a bool ``residual``."""
    if not isinstance(attentions, (list, tuple)):
        raise TypeError("attentions must be a list of (batch, heads, n, n) tensors, one per "
                        f"layer, got {type(attentions).__name__}")
    if not attentions:
        raise ValueError("attentions must hold at least one (batch, heads, n, n) tensor")
    check_bool("residual", residual)
    for i, W in enumerate(attentions):
        check_tensor(f"attentions[{i}]", W, 4, "(batch, heads, n, n)")
        check_float(f"attentions[{i}]", W)
        if W.shape[-1] != W.shape[-2]:
            raise ValueError(f"attentions[{i}] must be square self-attention weights, got shape "
                             f"{tuple(W.shape)}")
        if W.shape[1] == 0:
            raise ValueError(f"attentions[{i}] has no heads to average (shape {tuple(W.shape)}): "
                             "expected (batch, heads >= 1, n, n)")
        first = attentions[0]
        if (W.shape[0], W.shape[-1]) != (first.shape[0], first.shape[-1]):
            raise ValueError(f"attentions[{i}] has shape {tuple(W.shape)}, unlike the layers "
                             "before it")


def attention_rollout(attentions: list[torch.Tensor], residual: bool = True) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020) through a stack of self-attention layers.

    ``attentions``: one ``(batch, heads, n, n)`` tensor per layer, first layer first. Heads
    are averaged; with ``residual`` the identity (the skip connection) is added and rows are
    renormalised, ``A = (W + I) / 2``; the layers are then multiplied,
    ``R = A_L ... A_2 A_1``. Returns ``R (batch, n, n)``: row ``i`` says how much of each input
    token reaches output token ``i``; every row sums to 1.
    """
    _check_attentions(attentions, residual)
    rollout = None
    for W in attentions:
        A = W.mean(1)  # (batch, n, n): heads averaged
        if residual:
            A = 0.5 * A + 0.5 * torch.eye(A.shape[-1], device=A.device, dtype=A.dtype)
            A = A / A.sum(-1, keepdim=True)  # (batch, n, n), rows sum to 1
        rollout = A if rollout is None else A @ rollout  # (batch, n, n): layers 1 .. l
    return rollout
