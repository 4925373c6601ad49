"""attnlib: the attention mechanisms of the book, one module per chapter.

======================  ===================================================
chapter                 module
======================  ===================================================
2 attention pooling     :mod:`attnlib.pooling` (Nadaraya-Watson)
3 scoring functions     :mod:`attnlib.scoring` (masked softmax, scores)
4 Bahdanau attention    :mod:`attnlib.seq2seq` (GRU encoder, decoders)
5 multi-head attention  :mod:`attnlib.multihead`
6 positional encoding   :mod:`attnlib.positional`, :mod:`attnlib.selfattention`
7 the Transformer       :mod:`attnlib.transformer`
4-7 translation         :mod:`attnlib.data` (generated corpus), :mod:`attnlib.training`,
                        :mod:`attnlib.decoding`, :mod:`attnlib.metrics`, :mod:`attnlib.presets`
8 beyond translation    :mod:`attnlib.lm`, :mod:`attnlib.vit`, :mod:`attnlib.snail`
9 attention at scale    :mod:`attnlib.efficient` (blockwise, windows, linear attention, ALiBi)
(all)                   :mod:`attnlib.recording` (weights for heatmaps),
                        :mod:`attnlib.plotting`, :mod:`attnlib.device`
======================  ===================================================

Importing attnlib imports torch and nothing heavier (no d2l, no matplotlib).
"""
from .data import (
    Pair,
    TranslationData,
    Vocab,
    generate_pairs,
    length_buckets,
    load_fra_eng,
    novel_pair_fraction,
    split_pairs,
    truncate_pad,
)
from .decoding import Translation, beam_search, greedy_decode, translate
from .device import best_device
from .metrics import (
    alignment_accuracy,
    alignment_error_rate,
    attention_alignment,
    bleu,
    corpus_alignment_accuracy,
    corpus_alignment_error_rate,
    corpus_bleu,
    corpus_chrf,
    teacher_forced_attention,
)
from .multihead import KVCache, MultiHeadAttention
from .plotting import show_heatmaps, show_pair_attention
from .pooling import KERNELS, NWKernelRegression, kernel_weights, leave_one_out, loo_cv_mse
from .positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    RotaryEmbedding,
    offset_rotation,
    sinusoidal_table,
)
from .presets import PRESETS, build_model, train_preset, train_presets, training_args
from .recording import AttentionModule, AttentionRecord, record_attention
from .scoring import (
    AdditiveAttention,
    CosineAttention,
    DotAttention,
    DotProductAttention,
    GeneralAttention,
    HardAttention,
    LocalAttention,
    LocationAttention,
    causal_mask,
    make_mask,
    masked_softmax,
    scaled_dot_product,
)
from .seq2seq import (
    EncoderDecoder,
    LuongAttentionDecoder,
    Seq2Seq,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)
from .training import History, masked_ce_loss, run_side_by_side, train_seq2seq
from .transformer import (
    AddNorm,
    PositionWiseFFN,
    TransformerDecoder,
    TransformerDecoderBlock,
    TransformerEncoder,
    TransformerEncoderBlock,
)

__version__ = "0.1.0"

__all__ = [
    "AddNorm", "AdditiveAttention", "AttentionModule", "AttentionRecord", "CosineAttention",
    "DotAttention", "DotProductAttention", "GeneralAttention", "HardAttention", "KERNELS",
    "KVCache", "LearnedPositionalEmbedding", "LocalAttention", "LocationAttention", "MultiHeadAttention",
    "NWKernelRegression", "PositionWiseFFN", "PositionalEncoding", "RotaryEmbedding",
    "TransformerEncoderBlock", "best_device", "causal_mask", "kernel_weights", "leave_one_out",
    "loo_cv_mse", "make_mask",
    "masked_softmax", "offset_rotation", "record_attention", "scaled_dot_product", "show_heatmaps",
    "show_pair_attention",
    "sinusoidal_table",
]
__all__ += [  # data and metrics (chapters 4-7)
    "Pair", "TranslationData", "Vocab", "generate_pairs", "length_buckets", "load_fra_eng",
    "novel_pair_fraction", "split_pairs", "truncate_pad",
    "alignment_accuracy", "alignment_error_rate", "attention_alignment", "bleu", "corpus_alignment_accuracy",
    "corpus_alignment_error_rate", "corpus_bleu", "corpus_chrf", "teacher_forced_attention",
]
__all__ += [  # models, training and decoding (chapters 4, 5, 7)
    "EncoderDecoder", "History", "LuongAttentionDecoder", "PRESETS", "Seq2Seq",
    "Seq2SeqAttentionDecoder", "Seq2SeqDecoder", "Seq2SeqEncoder", "Translation",
    "TransformerDecoder", "TransformerDecoderBlock", "TransformerEncoder", "beam_search",
    "build_model", "greedy_decode", "masked_ce_loss", "run_side_by_side", "train_preset", "train_presets",
    "train_seq2seq", "training_args", "translate",
]

from .lm import CausalBlock, DecoderOnlyLM, NGramLM, next_token_probs, sample  # noqa: E402
from .snail import SNAIL, AttentionBlock, CausalConv1d, CausalTransformerTagger, TCBlock  # noqa: E402
from .vit import PatchEmbedding, ViT, attention_rollout, patchify, unpatchify  # noqa: E402

__all__ += [  # chapter 8
    "CausalBlock", "DecoderOnlyLM", "NGramLM", "next_token_probs", "sample",
    "SNAIL", "AttentionBlock", "CausalConv1d", "CausalTransformerTagger", "TCBlock",
    "ViT", "PatchEmbedding", "attention_rollout", "patchify", "unpatchify",
]

from .efficient import (  # noqa: E402
    ALiBiAttention,
    EfficientLM,
    KeyValueMemory,
    WindowKVCache,
    alibi_bias,
    alibi_slopes,
    attention_pattern,
    blockwise_attention,
    kept_positions,
    linear_attention,
    linear_attention_recurrent,
    sliding_window_attention,
    sliding_window_mask,
)

__all__ += [  # chapter 9
    "ALiBiAttention", "EfficientLM", "KeyValueMemory", "WindowKVCache", "alibi_bias", "alibi_slopes",
    "attention_pattern", "blockwise_attention", "kept_positions", "linear_attention",
    "linear_attention_recurrent", "sliding_window_attention", "sliding_window_mask",
]
