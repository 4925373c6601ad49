"""Chapter 4: sequence to sequence, without and with attention.

An encoder reads the source sentence; a decoder writes the target one token at a
time. The models differ in what the decoder sees of the source:

=============================  ==============================================  ===========
decoder                        context for target step t                       paper
=============================  ==============================================  ===========
:class:`Seq2SeqDecoder`        the encoder's last output, the same for every t  Cho
:class:`Seq2SeqAttentionDecoder`  additive attention, query = state s_{t-1}     Bahdanau
:class:`LuongAttentionDecoder`    dot/general attention, query = new state h_t  Luong
=============================  ==============================================  ===========

d2l's interface throughout: ``encoder(src, valid_lens) -> enc_all_outputs``,
``decoder.init_state(enc_all_outputs, valid_lens) -> state`` and
``decoder(X, state) -> (logits (batch, steps, vocab), state)``. A decoder may be fed
the whole target prefix at once (teacher forcing) or one token per call with the
returned state (decoding): both give the same logits. :class:`EncoderDecoder` joins an
encoder and a decoder, RNN or Transformer alike.

The GRU encoder's outputs are ``(steps, batch, num_hiddens)`` (time first, as in
d2l) and its state ``(num_layers, batch, num_hiddens)``; given the valid lengths it
stops at each sentence's end instead of reading the padding as d2l does.
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import (
    check_device,
    check_int,
    check_lengths,
    check_module_input,
    check_nonempty,
    check_probability,
    check_rows,
    check_same,
    check_tensor,
    check_values,
    module_device,
)
from .scoring import AdditiveAttention, DotAttention, GeneralAttention, make_mask


def init_seq2seq(module: nn.Module) -> None:
    """Xavier-uniform weights for linear and GRU layers (d2l's ``init_seq2seq``)."""
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
    if isinstance(module, nn.GRU):
        for name, param in module.named_parameters():
            if name.startswith("weight"):
                nn.init.xavier_uniform_(param)


def _between(dropout: float, num_layers: int) -> float:
    """A GRU's dropout acts between its layers only, so one layer gets none (and no warning)."""
    return dropout if num_layers > 1 else 0.0


def check_token_ids(name: str, X, vocab_size: int, device=None) -> None:
    """Require ``X`` to be a non-empty integer ``(batch, steps)`` tensor of ids below
    ``vocab_size`` on ``device`` (the model's; None: anywhere). The id range is checked
    without a GPU sync (:func:`attnlib._checks.check_values`)."""
    check_tensor(name, X, 2, "(batch, steps) of token ids")
    if X.is_floating_point() or X.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {X.dtype}")
    check_nonempty(name, X)
    check_device(name, X, device)
    def message():
        return (f"{name} holds token ids in [{int(X.min())}, {int(X.max())}], but the model's "
                f"vocabulary has {vocab_size} tokens (ids 0..{vocab_size - 1}): were the model and "
                "the data built with the same vocabulary?")

    if X.device.type == "cpu":  # one reduction, read at once (no device to wait for)
        low, high = torch.aminmax(X)
        if low < 0 or high >= vocab_size:
            raise ValueError(message())
    else:
        check_values((X >= 0) & (X < vocab_size), message)


def check_sizes(dropout: float = 0.0, **sizes) -> None:
    """Positive int sizes (``vocab_size=..., num_hiddens=...``) and a dropout probability."""
    for name, value in sizes.items():
        check_int(name, value)
    check_probability("dropout", dropout)


def check_encoder_sizes(dropout: float, bidirectional: bool, **sizes) -> None:
    """:func:`check_sizes`, and an even ``num_hiddens`` when two directions share it."""
    check_sizes(dropout, **sizes)
    if bidirectional and sizes["num_hiddens"] % 2:
        raise ValueError(f"a bidirectional encoder splits num_hiddens between two directions, "
                         f"so it must be even, got {sizes['num_hiddens']}")


def unpack_encoder_outputs(enc_all_outputs) -> tuple[torch.Tensor, torch.Tensor]:
    """A :class:`Seq2SeqEncoder`'s ``(outputs (steps, batch, h), state (layers, batch, h))``."""
    if not (isinstance(enc_all_outputs, (tuple, list)) and len(enc_all_outputs) == 2):
        got = (f"a tensor of shape {tuple(enc_all_outputs.shape)} (a Transformer encoder's output?)"
               if isinstance(enc_all_outputs, torch.Tensor) else type(enc_all_outputs).__name__)
        raise TypeError(f"enc_all_outputs must be the (outputs, state) pair a Seq2SeqEncoder returns, "
                        f"got {got}: pair a GRU decoder with a Seq2SeqEncoder")
    outputs, hidden = enc_all_outputs
    check_tensor("enc_all_outputs[0]", outputs, 3, "(steps, batch, num_hiddens)")
    check_tensor("enc_all_outputs[1]", hidden, 3, "(num_layers, batch, num_hiddens)")
    return outputs, hidden


def check_gru_state(decoder: nn.Module, state, names: tuple[str, ...]) -> None:
    """``state`` is the list ``names`` (``[context or enc_outputs, hidden, ...]``, as ``init_state``
    builds it) and fits ``decoder.rnn``: ``hidden (num_layers, batch, num_hiddens)``, the first
    entry ending in ``num_hiddens``, one batch size, the GRU's dtype and device. Metadata only."""
    if not isinstance(state, (list, tuple)) or len(state) != len(names):
        got = f"a list of {len(state)}" if isinstance(state, (list, tuple)) else type(state).__name__
        raise TypeError(f"state must be the list [{', '.join(names)}] that init_state returns, got {got}")
    rnn, first, hidden = decoder.rnn, state[0], state[1]
    layers, h = rnn.num_layers, rnn.hidden_size
    check_tensor("state[1] (hidden)", hidden, 3, f"(num_layers, batch, num_hiddens) = ({layers}, batch, {h})")
    ndim, what = {"context": (2, f"(batch, {h})"), "enc_outputs": (3, f"(batch, src_steps, {h})")}[names[0]]
    check_tensor(f"state[0] ({names[0]})", first, ndim, what)
    if hidden.shape[0] != layers or hidden.shape[2] != h or first.shape[-1] != h:
        raise ValueError(f"the state holds {names[0]} {tuple(first.shape)} and hidden {tuple(hidden.shape)}, "
                         f"but this decoder's GRU has num_layers={layers} and num_hiddens={h}: build the "
                         "encoder with the decoder's num_hiddens and num_layers")
    if first.shape[0] != hidden.shape[1]:
        raise ValueError(f"the state's {names[0]} {tuple(first.shape)} and hidden {tuple(hidden.shape)} "
                         "disagree on the batch size: build the state with init_state")
    check_same(f"state[0] ({names[0]}) and state[1] (hidden)", first, hidden)
    check_module_input(rnn, "state[1] (hidden)", hidden)


class Encoder(nn.Module):
    """Base encoder: ``forward(X (batch, steps), *args) -> enc_all_outputs``."""

    vocab_size: int

    def forward(self, X, *args):  # pragma: no cover - abstract
        raise NotImplementedError

    def host_lengths(self, valid_lens, X) -> torch.Tensor:
        """``valid_lens (batch,)`` checked against ``X (batch, steps)`` and copied to the CPU as
        int64, where packing an RNN's input needs it (on a GPU, the encoder's one host-device
        copy). A GRU cannot read zero tokens: every length must be in ``1..steps``."""
        b, n = X.shape
        check_tensor("valid_lens", valid_lens, 1, f"(batch,) = ({b},)")
        if valid_lens.shape[0] != b:
            raise ValueError(f"valid_lens has shape {tuple(valid_lens.shape)}; expected ({b},)")
        check_device("valid_lens", valid_lens, X.device, "X")
        lengths = valid_lens.detach().cpu()
        check_lengths("valid_lens", lengths, 1, n)
        return lengths.to(torch.int64)


class Decoder(nn.Module):
    """Base decoder: ``init_state``, ``forward(X, state) -> (logits, state)``, ``reorder_state``.

    ``reorder_state(state, index)`` picks batch rows of a state (beam search).
    ``cross_attentions()`` lists the attention modules whose keys are source positions.
    """

    vocab_size: int

    def init_state(self, enc_all_outputs, *args):  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, X, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def reorder_state(self, state, index: torch.Tensor):  # pragma: no cover - abstract
        raise NotImplementedError

    def cross_attentions(self) -> list[nn.Module]:
        return []

    def check_input(self, X, batch_size: int) -> None:
        """``X`` holds ids of this decoder's vocabulary, on its device, one row per state row."""
        check_token_ids("X", X, self.vocab_size, self.embedding.weight.device)
        if X.shape[0] != batch_size:
            raise ValueError(f"X has batch size {X.shape[0]}, but the state was built for batch "
                             f"size {batch_size}: call init_state for this batch")


class GRUDecoder(Decoder):
    """What the GRU decoders share: their state is the list named by ``state_names``, whose
    first entry is what the decoder reads of the source and whose second is the GRU's ``hidden
    (num_layers, batch, num_hiddens)``; :meth:`checked` validates it, so that each decoder's
    own methods can be read as the computation they are."""

    state_names: tuple[str, ...]
    rnn: nn.GRU

    def checked(self, state, X=None, rows=None):
        """``state`` itself, once it is known to fit this decoder (:func:`check_gru_state`), ``X``
        (if given) to hold ids of its vocabulary with one row per state row, and ``rows`` (if given)
        to be a valid index of the state's batch rows; otherwise a clear error."""
        check_gru_state(self, state, self.state_names)
        if X is not None:
            self.check_input(X, state[1].shape[1])
        if rows is not None:
            check_rows(rows, state[1].shape[1])
        return state


class EncoderDecoder(nn.Module):
    """An encoder and a decoder: ``forward(src, tgt_in, src_valid_len) -> logits``.

    ``src (batch, src_steps)``, ``tgt_in (batch, tgt_steps)`` (``<bos>`` then the target,
    teacher forcing), ``src_valid_len (batch,)``; logits ``(batch, tgt_steps, tgt_vocab)``.
    """

    def __init__(self, encoder: Encoder, decoder: Decoder) -> None:
        super().__init__()
        for name, part in (("encoder", encoder), ("decoder", decoder)):
            if not isinstance(part, nn.Module):
                raise TypeError(f"{name} must be an nn.Module, got {type(part).__name__}")
        self.encoder, self.decoder = encoder, decoder

    def encode(self, src, src_valid_len=None):
        """Run the encoder and build the decoder's initial state."""
        check_tensor("src", src, 2, "(batch, steps) of token ids")
        if src_valid_len is not None:
            check_tensor("src_valid_len", src_valid_len, 1, f"(batch,) = ({src.shape[0]},)")
            if src_valid_len.shape[0] != src.shape[0]:
                raise ValueError(f"src_valid_len has shape {tuple(src_valid_len.shape)}; expected "
                                 f"({src.shape[0]},), one length per source sentence")
            check_device("src_valid_len", src_valid_len, module_device(self.encoder))
        enc_all_outputs = self.encoder(src, src_valid_len)
        return self.decoder.init_state(enc_all_outputs, src_valid_len)

    def forward(self, src, tgt_in, src_valid_len=None):
        check_token_ids("tgt_in", tgt_in, self.decoder.vocab_size, module_device(self.decoder))
        check_tensor("src", src, 2, "(batch, steps) of token ids")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"tgt_in has batch size {tgt_in.shape[0]}, but src has batch size "
                             f"{src.shape[0]}: one target per source sentence")
        state = self.encode(src, src_valid_len)
        return self.decoder(tgt_in, state)[0]  # (batch, tgt_steps, tgt_vocab)


Seq2Seq = EncoderDecoder  # d2l's name for the same wrapper


class Seq2SeqEncoder(Encoder):
    """GRU encoder: ``forward(X (batch, steps), valid_lens=None) -> (outputs, state)``.

    ``outputs (steps, batch, num_hiddens)``: the top layer at every step (time first,
    as in d2l); ``state (num_layers, batch, num_hiddens)``: every layer's last state.
    With ``valid_lens`` the GRU stops at each sentence's last real token (a packed
    sequence): padding never enters the state, outputs at padding are 0, and trimming
    trailing padding changes nothing. Without it the GRU reads the padding too (d2l).

    ``bidirectional=True`` follows Bahdanau et al.: one GRU reads left to right, one
    right to left, each with ``num_hiddens // 2`` units, and the annotation of word j is
    the concatenation ``[h_fwd_j; h_bwd_j]``, so it sees the words on both sides. The
    final states of the two directions are concatenated per layer too, so the decoder
    gets ``num_hiddens``-sized outputs and state either way.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int,
                 dropout: float = 0.0, bidirectional: bool = False) -> None:
        super().__init__()
        check_encoder_sizes(dropout, bidirectional, vocab_size=vocab_size, embed_size=embed_size,
                            num_hiddens=num_hiddens, num_layers=num_layers)
        self.vocab_size, self.num_hiddens, self.bidirectional = vocab_size, num_hiddens, bidirectional
        self.embedding = nn.Embedding(vocab_size, embed_size)
        per_direction = num_hiddens // 2 if bidirectional else num_hiddens  # two directions share it
        self.rnn = nn.GRU(embed_size, per_direction, num_layers, dropout=_between(dropout, num_layers),
                          bidirectional=bidirectional)
        self.apply(init_seq2seq)

    def forward(self, X, valid_lens=None, *args):
        check_token_ids("X", X, self.vocab_size, self.embedding.weight.device)
        embs = self.embedding(X.t())  # (steps, batch, embed_size)
        if valid_lens is None:  # every position is read, padding too (d2l)
            outputs, state = self.rnn(embs)  # (steps, batch, num_hiddens), (layers * dirs, batch, h)
        else:  # a packed sequence: each sentence's GRU stops at its last real token
            lengths = self.host_lengths(valid_lens, X)  # (batch,) int64 on the CPU
            packed = nn.utils.rnn.pack_padded_sequence(embs, lengths, enforce_sorted=False)
            outputs, state = self.rnn(packed)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, total_length=X.shape[1])
        if self.bidirectional:
            state = state.reshape(-1, 2, *state.shape[1:])  # (layers, 2, batch, num_hiddens / 2)
            state = torch.cat((state[:, 0], state[:, 1]), dim=-1)  # (layers, batch, num_hiddens)
        return outputs, state


class Seq2SeqDecoder(GRUDecoder):
    """The baseline without attention (Cho et al. 2014's design, d2l's ``Seq2SeqDecoder``).

    The whole source reaches the decoder through one vector, the encoder's final
    top-layer state (d2l takes the output at the last step, the same thing when the
    encoder is unidirectional and reads no padding), concatenated with every target
    embedding; the encoder's final state also initialises the GRU. State:
    ``[context (batch, num_hiddens), hidden (num_layers, batch, num_hiddens)]``.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int,
                 dropout: float = 0.0) -> None:
        super().__init__()
        check_sizes(dropout, vocab_size=vocab_size, embed_size=embed_size, num_hiddens=num_hiddens,
                    num_layers=num_layers)
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers,
                          dropout=_between(dropout, num_layers))
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.apply(init_seq2seq)

    state_names = ("context", "hidden")

    def init_state(self, enc_all_outputs, *args):
        _, hidden = unpack_encoder_outputs(enc_all_outputs)  # (layers, batch, num_hiddens)
        return self.checked([hidden[-1], hidden])  # the context c: the top layer's final state

    def forward(self, X, state):
        context, hidden = self.checked(state, X)  # (batch, h), (layers, batch, h)
        embs = self.embedding(X.t())  # (steps, batch, embed_size)
        every_step = context.expand(embs.shape[0], -1, -1)  # (steps, batch, h): the same c each step
        outputs, hidden = self.rnn(torch.cat((embs, every_step), -1), hidden)  # (steps, batch, h)
        logits = self.dense(outputs).transpose(0, 1)  # (batch, steps, vocab)
        return logits, [context, hidden]

    def reorder_state(self, state, index):
        context, hidden = self.checked(state, rows=index)
        return [context[index], hidden[:, index]]  # batch rows `index` (beam search)


class Seq2SeqAttentionDecoder(GRUDecoder):
    """Bahdanau et al.'s decoder: additive attention before every GRU step.

    At step t the query is the previous top-layer state ``s_{t-1}``; keys and values
    are the encoder outputs. The context ``c_t`` is concatenated with the embedding of
    ``y_{t-1}`` as the GRU input. Because ``c_t`` depends on ``s_{t-1}``, the steps run
    one after another, also in training. The keys' half of the score, ``W_k h_j``, does
    not depend on t, so it is computed once per call (the paper's appendix makes the same
    remark) and only the query half runs at every step. State: ``[enc_outputs (batch, src_steps,
    num_hiddens), hidden (num_layers, batch, num_hiddens), enc_valid_lens (batch,)]``.
    Recorded weights: one ``(batch, 1, 1, src_steps)`` entry per step.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int,
                 dropout: float = 0.0) -> None:
        super().__init__()
        check_sizes(dropout, vocab_size=vocab_size, embed_size=embed_size, num_hiddens=num_hiddens,
                    num_layers=num_layers)
        self.vocab_size = vocab_size
        self.attention = AdditiveAttention(num_hiddens, dropout, query_size=num_hiddens,
                                           key_size=num_hiddens)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers,
                          dropout=_between(dropout, num_layers))
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.apply(init_seq2seq)

    state_names = ("enc_outputs", "hidden", "enc_valid_lens")

    def init_state(self, enc_all_outputs, enc_valid_lens=None):
        outputs, hidden = unpack_encoder_outputs(enc_all_outputs)  # (src, batch, h), (layers, batch, h)
        state = [outputs.transpose(0, 1), hidden, enc_valid_lens]  # enc_outputs (batch, src, h)
        return self.checked(state)

    def forward(self, X, state):
        enc_outputs, hidden, enc_valid_lens = self.checked(state, X)
        embs = self.embedding(X.t())  # (steps, batch, embed_size)
        att = self.attention
        keys = att.W_k(enc_outputs).unsqueeze(1)  # (batch, 1, src_steps, h): once, not per step
        mask = make_mask(enc_valid_lens, X.shape[0], 1, enc_outputs.shape[1], X.device)  # (batch, 1, src)
        outputs = []
        for x in embs:  # x: (batch, embed_size), the embedding of y_{t-1}
            query = att.W_q(hidden[-1]).unsqueeze(1).unsqueeze(2)  # (batch, 1, 1, h): W_s s_{t-1}
            scores = att.w_v(torch.tanh(query + keys)).squeeze(-1)  # (batch, 1, src_steps): e_{t,i}
            context = att.attend(scores, mask, enc_outputs)  # (batch, 1, num_hiddens): c_t
            x = torch.cat((context.squeeze(1), x), dim=-1)  # (batch, num_hiddens + embed_size)
            out, hidden = self.rnn(x.unsqueeze(0), hidden)  # (1, batch, num_hiddens): s_t
            outputs.append(out)
        logits = self.dense(torch.cat(outputs, 0)).transpose(0, 1)  # (batch, steps, vocab)
        return logits, [enc_outputs, hidden, enc_valid_lens]

    def reorder_state(self, state, index):
        enc_outputs, hidden, lens = self.checked(state, rows=index)
        return [enc_outputs[index], hidden[:, index], None if lens is None else lens[index]]

    def cross_attentions(self):
        return [self.attention]


class LuongAttentionDecoder(GRUDecoder):
    """Luong et al.'s global attention: attend after the GRU step, with its new state.

    ``h_t = GRU(embed(y_{t-1}), h_{t-1})``; the top layer's ``h_t`` scores the encoder
    outputs (``score='dot'``: ``h_t . h_s``; ``'general'``: ``h_t^T W h_s``), giving the
    context ``c_t``; the attentional state ``h~_t = tanh(W_c [c_t; h_t])`` predicts
    ``y_t``. Without Luong's input feeding the GRU never waits for attention, so
    teacher-forced training runs all target steps in one GRU call and one batched
    attention call. State as in :class:`Seq2SeqAttentionDecoder`.
    Recorded weights: ``(batch, 1, steps, src_steps)`` per call.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int,
                 dropout: float = 0.0, score: str = "dot") -> None:
        super().__init__()
        check_sizes(dropout, vocab_size=vocab_size, embed_size=embed_size, num_hiddens=num_hiddens,
                    num_layers=num_layers)
        if score == "dot":
            attention = DotAttention(dropout)
        elif score == "general":
            attention = GeneralAttention(num_hiddens, num_hiddens, dropout)
        else:
            raise ValueError(f"score must be 'dot' or 'general', got {score!r}")
        self.vocab_size, self.score = vocab_size, score
        self.attention = attention
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=_between(dropout, num_layers))
        self.W_c = nn.Linear(2 * num_hiddens, num_hiddens, bias=False)
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.apply(init_seq2seq)

    state_names = Seq2SeqAttentionDecoder.state_names
    init_state = Seq2SeqAttentionDecoder.init_state
    reorder_state = Seq2SeqAttentionDecoder.reorder_state
    cross_attentions = Seq2SeqAttentionDecoder.cross_attentions

    def forward(self, X, state):
        enc_outputs, hidden, enc_valid_lens = self.checked(state, X)
        embs = self.embedding(X.t())  # (steps, batch, embed_size)
        outputs, hidden = self.rnn(embs, hidden)  # (steps, batch, num_hiddens): every h_t at once
        queries = outputs.transpose(0, 1)  # (batch, steps, num_hiddens)
        context = self.attention(queries, enc_outputs, enc_outputs, enc_valid_lens)  # (batch, steps, h)
        attentional = torch.tanh(self.W_c(torch.cat((context, queries), -1)))  # (batch, steps, h)
        return self.dense(attentional), [enc_outputs, hidden, enc_valid_lens]  # (batch, steps, vocab)
