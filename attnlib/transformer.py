"""Chapter 7: the Transformer's building blocks.

An encoder block is two sublayers, each wrapped in a residual connection and
layer normalization::

    post-LN (the paper):  Y = LN(X + MHA(X)),        out = LN(Y + FFN(Y))
    pre-LN  (GPT-2 on):   Y = X + MHA(LN(X)),        out = Y + FFN(LN(Y))

Pre-LN keeps an identity path from input to output, which trains more
stably in deep stacks without a learning-rate warm-up.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import (
    check_device,
    check_float,
    check_int,
    check_probability,
    check_rows,
    check_tensor,
)
from .multihead import KVCache, MultiHeadAttention
from .positional import PositionalEncoding
from .seq2seq import Decoder, Encoder, check_token_ids


class PositionWiseFFN(nn.Module):
    """The same two-layer MLP applied to every position: ``(batch, n, d) -> (batch, n, outputs)``."""

    def __init__(self, ffn_num_hiddens: int, ffn_num_outputs: int,
                 ffn_num_inputs: int | None = None) -> None:
        super().__init__()
        check_int("ffn_num_hiddens", ffn_num_hiddens)
        check_int("ffn_num_outputs", ffn_num_outputs)
        if ffn_num_inputs is not None:
            check_int("ffn_num_inputs", ffn_num_inputs)
        self.dense1 = nn.Linear(ffn_num_inputs or ffn_num_outputs, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_features("X", X, self.dense1.in_features)
        return self.dense2(self.relu(self.dense1(X)))  # (batch, n, ffn_num_outputs)


class AddNorm(nn.Module):
    """Residual connection and layer normalization.

    ``forward(X, Y)`` is post-LN, ``LN(X + dropout(Y))`` where ``Y`` is the
    sublayer's output (d2l's interface). ``residual(X, sublayer)`` picks post- or
    pre-LN (``X + dropout(sublayer(LN(X)))``) according to ``pre_norm``.
    """

    def __init__(self, norm_shape, dropout: float = 0.0, pre_norm: bool = False) -> None:
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)
        self.pre_norm = pre_norm

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        check_features("X", X, self.ln.normalized_shape[-1])
        if not isinstance(Y, torch.Tensor) or X.shape != Y.shape:
            shape = tuple(Y.shape) if isinstance(Y, torch.Tensor) else type(Y).__name__
            raise ValueError(f"AddNorm needs X and Y of the same shape, got {tuple(X.shape)} "
                             f"and {shape}")
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
        check_tensor("X", X, 3, f"(batch, steps, {self.attention.num_hiddens})")
        Y = self.addnorm1.residual(X, lambda x: self.attention(x, x, x, valid_lens))
        return self.addnorm2.residual(Y, self.ffn)  # (batch, n, num_hiddens)


# --- the encoder-decoder Transformer (chapter 7) -------------------------------------------------

class TransformerDecoderBlock(nn.Module):
    """Masked self-attention, encoder-decoder attention and an FFN, each with :class:`AddNorm`.

    ``forward(X (batch, steps, num_hiddens), state) -> (Y (same shape), state)`` with d2l's
    ``state = [enc_outputs (batch, src_steps, num_hiddens), enc_valid_lens (batch,) or None,
    caches]``. ``caches[i]`` belongs to this block (number ``i``): a pair of :class:`KVCache`,
    the projected keys and values of its self-attention (every target position so far) and of
    its encoder-decoder attention (the source, projected once), or ``None`` to keep nothing.
    Feeding one token per call (decoding) then attends over the whole prefix while computing
    only the new position; feeding the full target at once (training) gives the same result.

    The causal mask is applied on every call, in training *and* evaluation: d2l 1.0 masks
    only in training, so its validation loss lets each position see the words it must
    predict. The mask is aligned bottom-right, so new queries see all cached keys.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, i: int = 0, use_bias: bool = False,
                 pre_norm: bool = False) -> None:
        super().__init__()
        self.i = i
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, pre_norm)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm2 = AddNorm(num_hiddens, dropout, pre_norm)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout, pre_norm)

    def forward(self, X: torch.Tensor, state: list):
        check_state(state, self.i)
        enc_outputs, enc_valid_lens, caches = state
        self_cache, cross_cache = caches[self.i] or (None, None)

        def self_attend(x):
            return self.attention1(x, x, x, causal=True, cache=self_cache)

        def cross_attend(y):
            return self.attention2(y, enc_outputs, enc_outputs, enc_valid_lens, cache=cross_cache)

        Y = self.addnorm1.residual(X, self_attend)  # (batch, steps, num_hiddens)
        Z = self.addnorm2.residual(Y, cross_attend)  # (batch, steps, num_hiddens)
        return self.addnorm3.residual(Z, self.ffn), state  # (batch, steps, num_hiddens)


SPENT = "spent: a decoder call moved these caches into the state it returned"
"""What a :class:`TransformerDecoder` call leaves in ``state[2]`` of the state it was given."""


def check_state(state, blk: int = 0) -> None:
    """d2l's decoder state ``[enc_outputs, enc_valid_lens, caches]`` with a cache entry for block
    ``blk``, and not :data:`SPENT`: feeding a state twice would continue its caches."""
    if not isinstance(state, list):
        raise TypeError("state must be a list [enc_outputs, enc_valid_lens, caches], got "
                        f"{type(state).__name__}: build it with decoder.init_state")
    if len(state) != 3:
        raise ValueError("state must be a list [enc_outputs, enc_valid_lens, caches], got a list "
                         f"of {len(state)}: build it with decoder.init_state")
    if state[2] is SPENT:
        raise ValueError("state was already fed to the decoder, whose key/value caches it no longer "
                         "holds: pass the state that call returned to continue the same prefix, or "
                         "call init_state again to start a new one")
    check_tensor("state[0] (enc_outputs)", state[0], 3, "(batch, src_steps, num_hiddens)")
    caches = state[2]
    if not isinstance(caches, list) or len(caches) <= blk:
        got = f"a list of {len(caches)}" if isinstance(caches, list) else type(caches).__name__
        raise ValueError(f"state[2] must list a cache pair (or None) per decoder block, {blk + 1} or "
                         f"more, got {got}: build the state with this decoder's init_state")


def check_features(name: str, X, size: int) -> None:
    """A floating-point tensor ``(..., size)``."""
    check_tensor(name, X, tuple(range(1, 9)), f"(..., {size})")
    check_float(name, X)
    if X.shape[-1] != size:
        raise ValueError(f"{name} has last dim {X.shape[-1]} (shape {tuple(X.shape)}), "
                         f"expected {size}")


def _token_embedding(vocab_size: int, num_hiddens: int) -> nn.Embedding:
    """Embeddings drawn with std ``1/sqrt(d)``, as in the paper's code (and fairseq), so that
    after the ``sqrt(d)`` scaling in :func:`_embed` a token's entries have a root mean square of
    about 1, close to the positional encoding's ``1/sqrt(2)``. PyTorch's default std of 1, which
    d2l keeps, gives scaled entries of about ``sqrt(d)``: ``sqrt(2 d)`` times the positions'
    (11 times at ``d = 64``), so the positions start as a small signal under the tokens.
    """
    embedding = nn.Embedding(vocab_size, num_hiddens)
    nn.init.normal_(embedding.weight, std=num_hiddens ** -0.5)
    return embedding


def _embed(embedding: nn.Embedding, pos_encoding, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Token embeddings scaled by ``sqrt(d)`` plus positions ``offset ..``:
    ``(batch, steps) -> (batch, steps, d)``."""
    d = embedding.embedding_dim
    return pos_encoding(embedding(X) * math.sqrt(d), offset)  # (batch, steps, d)


class TransformerEncoder(Encoder):
    """Embedding, positional encoding and ``num_blks`` :class:`TransformerEncoderBlock` s.

    ``forward(X (batch, steps), valid_lens (batch,)) -> (batch, steps, num_hiddens)``.
    With ``pre_norm`` a final LayerNorm closes the stack (the residual path is otherwise
    never normalised).
    """

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False,
                 pre_norm: bool = False, max_len: int = 1000) -> None:
        super().__init__()
        check_int("vocab_size", vocab_size)
        check_int("num_blks", num_blks, minimum=0)
        self.vocab_size, self.num_hiddens, self.pre_norm = vocab_size, num_hiddens, pre_norm
        self.embedding = _token_embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.ModuleList(
            TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias, pre_norm)
            for _ in range(num_blks))
        self.ln = nn.LayerNorm(num_hiddens) if pre_norm else nn.Identity()

    def forward(self, X: torch.Tensor, valid_lens=None, *args) -> torch.Tensor:
        check_token_ids("X", X, self.vocab_size, self.embedding.weight.device)
        X = _embed(self.embedding, self.pos_encoding, X)  # (batch, steps, num_hiddens)
        for blk in self.blks:
            X = blk(X, valid_lens)  # (batch, steps, num_hiddens)
        return self.ln(X)


class TransformerDecoder(Decoder):
    """Embedding, positions, ``num_blks`` :class:`TransformerDecoderBlock` s and a linear layer.

    ``init_state(enc_outputs, enc_valid_lens) -> [enc_outputs, enc_valid_lens, caches]``;
    ``forward(X (batch, steps), state) -> (logits (batch, steps, vocab_size), state)``.
    The key/value caches make incremental decoding exact: feeding a prefix one token per
    call gives the same logits as feeding it whole, because positions continue from the
    number of tokens already cached (``PositionalEncoding(..., offset=)``) and each block
    attends over everything it has seen. Each call returns the next state and marks the one
    it was given :data:`SPENT`, so a state fed twice (a second prefix, or a forgotten
    ``state = ...``) is refused instead of silently continuing: start each prefix from ``init_state``.
    """

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False,
                 pre_norm: bool = False, max_len: int = 1000) -> None:
        super().__init__()
        check_int("vocab_size", vocab_size)
        check_int("num_blks", num_blks)
        self.vocab_size, self.num_hiddens, self.num_blks = vocab_size, num_hiddens, num_blks
        self.embedding = _token_embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.ModuleList(
            TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, i, use_bias,
                                    pre_norm)
            for i in range(num_blks))
        self.ln = nn.LayerNorm(num_hiddens) if pre_norm else nn.Identity()
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs: torch.Tensor, enc_valid_lens=None, *args) -> list:
        check_tensor("enc_outputs", enc_outputs, 3, f"(batch, src_steps, {self.num_hiddens})")
        check_device("enc_outputs", enc_outputs, self.embedding.weight.device)
        check_float("enc_outputs", enc_outputs)
        if enc_outputs.shape[-1] != self.num_hiddens:
            raise ValueError(f"enc_outputs has last dim {enc_outputs.shape[-1]} (shape "
                             f"{tuple(enc_outputs.shape)}), but this decoder has num_hiddens="
                             f"{self.num_hiddens}: build the encoder with the same num_hiddens")
        if enc_valid_lens is not None:
            check_tensor("enc_valid_lens", enc_valid_lens, 1, "(batch,)")
            if enc_valid_lens.shape[0] != enc_outputs.shape[0]:
                raise ValueError(f"enc_valid_lens has shape {tuple(enc_valid_lens.shape)}; expected "
                                 f"({enc_outputs.shape[0]},), one length per source sentence")
        caches = [(KVCache(), KVCache(static=True)) for _ in range(self.num_blks)]
        return [enc_outputs, enc_valid_lens, caches]

    def forward(self, X: torch.Tensor, state: list):
        check_state(state, self.num_blks - 1)
        self.check_input(X, state[0].shape[0])
        offset = len(state[2][0][0]) if state[2][0] else 0  # tokens already decoded
        X = _embed(self.embedding, self.pos_encoding, X, offset)  # (batch, steps, num_hiddens)
        for blk in self.blks:
            X, state = blk(X, state)  # (batch, steps, num_hiddens); the caches grow
        enc_outputs, enc_valid_lens, caches = state
        state[2] = SPENT  # the caches now describe the returned state, not this one
        return self.dense(self.ln(X)), [enc_outputs, enc_valid_lens, caches]  # (batch, steps, vocab)

    def reorder_state(self, state: list, index: torch.Tensor) -> list:
        """Pick batch rows ``index`` of every tensor in the state (beam search)."""
        check_state(state, self.num_blks - 1)
        check_rows(index, state[0].shape[0])
        enc_outputs, lens, caches = state
        return [enc_outputs[index], None if lens is None else lens[index],
                [None if c is None else (c[0].reorder(index), c[1].reorder(index)) for c in caches]]

    def cross_attentions(self) -> list[nn.Module]:
        return [blk.attention2 for blk in self.blks]
