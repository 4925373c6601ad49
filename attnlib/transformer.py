"""Chapter 7: the Transformer's building blocks.

An encoder block is two sublayers, each wrapped in a residual connection and
layer normalization::

    post-LN (the paper):  Y = LN(X + MHA(X)),        out = LN(Y + FFN(Y))
    pre-LN  (GPT-2 on):   Y = X + MHA(LN(X)),        out = Y + FFN(LN(Y))

Pre-LN keeps an identity path from input to output, which trains more
stably in deep stacks without a learning-rate warm-up.
"""
from __future__ import annotations

import torch
from torch import nn

from .multihead import MultiHeadAttention


class PositionWiseFFN(nn.Module):
    """The same two-layer MLP applied to every position: ``(batch, n, d) -> (batch, n, outputs)``."""

    def __init__(self, ffn_num_hiddens: int, ffn_num_outputs: int,
                 ffn_num_inputs: int | None = None) -> None:
        super().__init__()
        self.dense1 = nn.Linear(ffn_num_inputs or ffn_num_outputs, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.dense2(self.relu(self.dense1(X)))  # (batch, n, ffn_num_outputs)


class AddNorm(nn.Module):
    """Residual connection and layer normalization.

    ``forward(X, Y)`` is post-LN, ``LN(X + dropout(Y))`` where ``Y`` is the
    sublayer's output (d2l's interface). ``residual(X, sublayer)`` picks post- or
    pre-LN (``X + dropout(sublayer(LN(X)))``) according to ``pre_norm``.
    """

    def __init__(self, norm_shape, dropout: float = 0.0, pre_norm: bool = False) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)
        self.pre_norm = pre_norm

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        if X.shape != Y.shape:
            raise ValueError(f"AddNorm needs X and Y of the same shape, got {tuple(X.shape)} "
                             f"and {tuple(Y.shape)}")
        return self.ln(self.dropout(Y) + X)

    def residual(self, X: torch.Tensor, sublayer) -> torch.Tensor:
        if self.pre_norm:
            return X + self.dropout(sublayer(self.ln(X)))
        return self(X, sublayer(X))


class TransformerEncoderBlock(nn.Module):
    """Self-attention then a position-wise FFN, each with :class:`AddNorm`.

    ``forward(X (batch, n, num_hiddens), valid_lens)`` returns the same shape;
    ``valid_lens`` hides padding keys, as in d2l.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, use_bias: bool = False, pre_norm: bool = False) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, pre_norm)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout, pre_norm)

    def forward(self, X: torch.Tensor, valid_lens=None) -> torch.Tensor:
        Y = self.addnorm1.residual(X, lambda x: self.attention(x, x, x, valid_lens))
        return self.addnorm2.residual(Y, self.ffn)  # (batch, n, num_hiddens)
