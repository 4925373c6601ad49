"""Train every model of chapters 4-7 with the book's presets and measure it honestly.

    make quality     # or: .venv/bin/python scripts/quality.py [--what ...] [--seeds 0 1 2] [--models ...]

For each preset in ``attnlib.presets.PRESETS`` and each seed: build the model
(``torch.manual_seed(seed)``), train it with ``train_seq2seq`` on
``TranslationData(**DATA_DEFAULTS)``, then score greedy translations of the held-out
test split (sentences never seen in training; about a third contain a word pair
never seen together) with sacrebleu's corpus BLEU and chrF, overall and by source
length, and score the attention against the gold word alignments (teacher-forced:
the decoder reads the reference, row j of the weights is the attention used to
predict target token j). Writes ``attnlib/quality.json`` (every run; it ships with attnlib,
which chapters 4 and 7 read through ``attnlib.results``) and ``results/quality.md`` (mean and
spread over seeds, the report to read).

``--what dropout`` runs only the attention-dropout ablation: every RNN model with attention
trained with its preset's settings twice, with dropout 0 and 0.1 on its attention weights (with
one GRU layer the models have no other dropout), scored as above plus the mean largest weight
of an attention row (how sharp the weights are). Each ``--what`` section is merged into the two
files, the other sections kept.

``--what real`` does the same on real Tatoeba sentences (``FraEngData(**REAL_DATA_DEFAULTS)``:
held-out English sentences never seen in training, scored against their first listed
translation and against all of them), with beam search (sizes 1, 4, 8) for the attention
models. ``--what d2l`` reproduces d2l-zh's experiment (first 600 pairs, d2l's sizes, 250 / 200
epochs) twice in one run: with d2l 1.0.3's own training loop, encoder, decoding loop and BLEU
wherever d2l ships them, and with attnlib's. Both go into the same two files.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

import attnlib
from attnlib.data import D2L_SENTENCES, FraEngData, TranslationData, length_buckets
from attnlib.decoding import beam_search, translate
from attnlib.metrics import (
    attention_alignment,
    bleu,
    corpus_alignment_accuracy,
    corpus_alignment_error_rate,
    corpus_bleu,
    corpus_chrf,
    teacher_forced_attention,
)
from attnlib.presets import (
    D2L_DATA,
    D2L_MODELS,
    D2L_TRAINING,
    DATA_DEFAULTS,
    PRESETS,
    REAL_DATA_DEFAULTS,
    REAL_TRAINING,
    build_model,
    training_args,
)
from attnlib.results import D2L_BOOK as D2L_BOOK_NUMBERS
from attnlib.results import QUALITY_FILE, mean_std
from attnlib.training import train_seq2seq

ROOT = Path(__file__).resolve().parents[1]
#: The measurements as attnlib ships them (package data); chapters 4 and 7 read them.
JSON_OUT = ROOT / "attnlib" / QUALITY_FILE
LABELS = {"no_attention": "no attention (GRU)", "bahdanau": "Bahdanau (additive)",
          "luong_dot": "Luong (dot)", "luong_general": "Luong (general)",
          "transformer": "Transformer (post-LN)", "transformer_pre_ln": "Transformer (pre-LN)"}


def evaluate(model, data) -> dict:
    test = data.test
    t = time.perf_counter()
    hyps = translate(model, data, [p.src for p in test])
    decode_s = time.perf_counter() - t
    refs = [p.tgt_text for p in test]
    by_len = {}
    index = {p.src: i for i, p in enumerate(test)}
    for name, bucket in length_buckets(test).items():
        if bucket:
            by_len[name] = {"n": len(bucket), "bleu": corpus_bleu(
                [hyps[index[p.src]] for p in bucket], [p.tgt_text for p in bucket])}
    d2l = {" ".join(s): translate(model, data, [s])[0] for s, _, _ in D2L_SENTENCES}
    d2l_bleu = {s: bleu(h, " ".join(t), k=2)
                for (s, h), (_, t, _) in zip(d2l.items(), D2L_SENTENCES, strict=True)}
    return {"bleu": corpus_bleu(hyps, refs), "chrf": corpus_chrf(hyps, refs),
            "exact": 100 * sum(h == r for h, r in zip(hyps, refs, strict=True)) / len(refs),
            "bleu_by_length": by_len, "alignment": attention_alignment(model, data, test),
            "decode_seconds": decode_s, "d2l_sentences": d2l, "d2l_bleu_k2": d2l_bleu}


def run(name: str, seed: int, data) -> dict:
    torch.manual_seed(seed)
    model = build_model(name, data)
    cpu = time.process_time()
    history = train_seq2seq(model, data, seed=seed, progress=False, **training_args(name))
    cpu = time.process_time() - cpu  # one thread: about the wall time on an idle core
    result = {"model": name, "seed": seed,
              "parameters": sum(p.numel() for p in model.parameters()),
              "train_seconds": history.total_seconds, "tokens_per_sec": history.tokens_per_sec,
              "train_cpu_seconds": cpu,
              "tokens_per_cpu_sec": sum(history.tokens) / cpu,
              "final_train_loss": history.train_loss[-1], "final_val_loss": history.val_loss[-1],
              "device": history.device}
    result.update(evaluate(model, data))
    return result


def _by_length_table(title: str, runs: list[dict], models: list[str]) -> list[str]:
    """A markdown section: each model's BLEU (mean ± std over its runs) per source-length bucket."""
    buckets = list(runs[0]["bleu_by_length"])
    sizes = {b: runs[0]["bleu_by_length"][b]["n"] for b in buckets}
    lines = ["", f"## {title}", "", "| model | " + " | ".join(f"{b} ({sizes[b]})" for b in buckets) + " |",
             "|---|" + "---:|" * len(buckets)]
    for m in models:
        rs = [r for r in runs if r["model"] == m]
        lines.append(f"| {LABELS.get(m, m)} | " + " | ".join(
            mean_std(r["bleu_by_length"][b]["bleu"] for r in rs) for b in buckets) + " |")
    return lines


def markdown(runs: list[dict], meta: dict) -> str:
    models = list(dict.fromkeys(r["model"] for r in runs))
    lines = [
        "# Translation quality of the book's models",
        "",
        f"Generated by `make quality` (`scripts/quality.py`) on {meta['date']}. Every model is "
        f"trained with its preset from `attnlib/presets.py` on `TranslationData(**DATA_DEFAULTS)` "
        f"({meta['train_pairs']} training pairs, {meta['test_pairs']} held-out test pairs, "
        f"{meta['novel_pair_share']:.0f} % of them with a word pair never seen together in "
        f"training), over seeds {meta['seeds']}: mean ± standard deviation.",
        "",
        f"Machine: {meta['machine']}; torch {meta['torch']}, {meta['threads']}. "
        "**Timings were taken on a machine shared with other jobs**, so they are pessimistic.",
        "",
        "BLEU and chrF: sacrebleu (0-100) over greedy translations of the test split. "
        "Alignment: share of target tokens whose most-attended source token is a gold-aligned "
        "one (teacher-forced; Transformer: heads averaged, best decoder layer).",
        "",
        "Time: `train s` is the wall-clock time of the training epochs (History.total_seconds) "
        "and `tokens/s` the target tokens per second over all epochs, both slowed down by the "
        "other jobs; `CPU s` is the CPU time of this process for the whole training call "
        "(validation included), which on one thread approximates the wall time on an idle "
        "core, and `tokens/CPU s` the throughput by that measure.",
        "",
        "| model | params | train s | CPU s | tokens/s | tokens/CPU s | BLEU | chrF | exact % "
        "| alignment % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in models:
        rs = [r for r in runs if r["model"] == m]
        align = [max(r["alignment"].values()) for r in rs if r["alignment"]]
        lines.append(
            f"| {LABELS.get(m, m)} | {rs[0]['parameters']:,} | {mean_std(r['train_seconds'] for r in rs)} | "
            f"{mean_std(r['train_cpu_seconds'] for r in rs)} | "
            f"{statistics.mean(r['tokens_per_sec'] for r in rs):,.0f} | "
            f"{statistics.mean(r['tokens_per_cpu_sec'] for r in rs):,.0f} | "
            f"{mean_std(r['bleu'] for r in rs)} | {mean_std(r['chrf'] for r in rs)} | "
            f"{mean_std(r['exact'] for r in rs)} | {mean_std(align) if align else '-'} |")
    lines += _by_length_table("BLEU by source length (tokens, with the final `.`)", runs, models)
    lines += ["", f"## d2l's four sentences (seed {runs[0]['seed']}; none is in the training split)",
              "", "| model | " + " | ".join(f"`{s}`" for s in runs[0]["d2l_sentences"]) + " |",
              "|---|" + "---|" * len(runs[0]["d2l_sentences"])]
    for m in models:
        r = next(r for r in runs if r["model"] == m)
        lines.append(f"| {LABELS.get(m, m)} | " + " | ".join(
            f"{h} ({r['d2l_bleu_k2'][s]:.2f})" for s, h in r["d2l_sentences"].items()) + " |")
    lines += ["", "In brackets: d2l's sentence BLEU (k = 2) against the corpus's reference.", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- dropout ablation

#: The attention-dropout ablation: each model with its preset's dropout on the attention weights and
#: with the other value (the presets: none for Bahdanau's model, 0.1 for Luong's).
DROPOUT_ABLATION = {"bahdanau": (0.0, 0.1), "luong_dot": (0.1, 0.0), "luong_general": (0.1, 0.0)}


def peak_weight(weights, pairs) -> float:
    """The mean, over the target tokens that have a gold alignment, of the largest weight in their
    (teacher-forced) attention row: 1 when every row puts all its weight on one source token."""
    peaks = [w[j].max() for w, p in zip(weights, pairs, strict=True)
             for j, links in enumerate(p.align) if links]
    return float(torch.stack(peaks).mean())


def run_dropout(name: str, dropout: float, seed: int, data) -> dict:
    torch.manual_seed(seed)
    model = build_model(name, data, dropout=dropout)
    history = train_seq2seq(model, data, seed=seed, progress=False, **training_args(name))
    hyps = translate(model, data, [p.src for p in data.test])
    refs = [p.tgt_text for p in data.test]
    pairs = [p for p in data.test if any(p.align)]
    weights = teacher_forced_attention(model, data, pairs)["decoder.attention"]
    return {"model": name, "dropout": dropout, "preset": dropout == PRESETS[name]["dropout"],
            "seed": seed, "final_train_loss": history.train_loss[-1],
            "final_val_loss": history.val_loss[-1], "bleu": corpus_bleu(hyps, refs),
            "chrf": corpus_chrf(hyps, refs),
            "alignment": 100 * corpus_alignment_accuracy(weights, pairs),
            "aer": corpus_alignment_error_rate(weights, pairs), "peak_weight": peak_weight(weights, pairs),
            "device": history.device}


def dropout_markdown(section: dict) -> str:
    meta, runs = section["meta"], section["runs"]
    seeds = sorted({r["seed"] for r in runs})
    lines = [
        "", "# Dropout on the attention weights", "",
        f"Generated by `scripts/quality.py --what dropout` on {meta['date']}: each RNN model with "
        "attention trained with its preset's settings on `TranslationData(**DATA_DEFAULTS)`, once "
        "with dropout 0 and once with 0.1 on its attention weights (with one GRU layer the models have "
        f"no other dropout), seeds {seeds}: mean ± standard deviation, and each seed's value. The "
        "preset's setting is marked *preset*. Alignment and AER as above (teacher-forced); `peak "
        "weight`: the mean, over the target tokens with a gold alignment, of the largest weight in "
        "their attention row (1: all the weight on one source token).", "",
        f"Machine: {meta['machine']}; torch {meta['torch']}, {meta['threads']}.", "",
        "| model | dropout | BLEU | BLEU by seed | chrF | alignment % | alignment % by seed | AER | "
        "peak weight | val loss |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in dict.fromkeys(r["model"] for r in runs):
        for p in dict.fromkeys(r["dropout"] for r in runs if r["model"] == m):
            rs = sorted((r for r in runs if r["model"] == m and r["dropout"] == p), key=lambda r: r["seed"])

            def by_seed(key, rs=rs):
                return " / ".join(f"{r[key]:.1f}" for r in rs)

            lines.append(
                f"| {LABELS.get(m, m)} | {p:g}{' (preset)' if rs[0]['preset'] else ''} | "
                f"{mean_std(r['bleu'] for r in rs)} | {by_seed('bleu')} | "
                f"{mean_std(r['chrf'] for r in rs)} | "
                f"{mean_std(r['alignment'] for r in rs)} | {by_seed('alignment')} | "
                f"{mean_std((r['aer'] for r in rs), 3)} | {mean_std((r['peak_weight'] for r in rs), 2)} | "
                f"{mean_std((r['final_val_loss'] for r in rs), 3)} |")
    return "\n".join(lines + [""])


# ----------------------------------------------------------------------------- real data

REAL_LENGTHS = (2, 5, 7)  # source tokens with the final punctuation: '2-4', '5-6', '7+'
BEAM_MODELS = ("bahdanau", "transformer")


def _multi_bleu(hyps, refs_lists) -> float:
    """sacrebleu corpus BLEU against every listed translation (``tokenize='none'``)."""
    import sacrebleu

    width = max(map(len, refs_lists))
    streams = [[r[i] if i < len(r) else None for r in refs_lists] for i in range(width)]
    return sacrebleu.corpus_bleu(hyps, streams, tokenize="none", force=True).score


def evaluate_real(model, data, beams: bool) -> dict:
    refs = data.references()  # English sentence -> all its translations
    srcs, first = list(refs), [r[0] for r in refs.values()]
    t = time.perf_counter()
    hyps = translate(model, data, srcs)
    greedy_s = time.perf_counter() - t
    by_len = {}
    names = [f"{lo}-{hi - 1}" for lo, hi in zip(REAL_LENGTHS, REAL_LENGTHS[1:], strict=False)] + [
        f"{REAL_LENGTHS[-1]}+"]
    for name, lo, hi in zip(names, REAL_LENGTHS, REAL_LENGTHS[1:] + (99,), strict=True):
        idx = [i for i, s in enumerate(srcs) if lo <= len(s) < hi]
        by_len[name] = {"n": len(idx), "bleu": corpus_bleu([hyps[i] for i in idx],
                                                           [first[i] for i in idx])}
    result = {"bleu": corpus_bleu(hyps, first), "chrf": corpus_chrf(hyps, first),
              "bleu_all_refs": _multi_bleu(hyps, list(refs.values())),
              "exact_any": 100 * sum(h in r for h, r in zip(hyps, refs.values(), strict=True))
              / len(srcs), "bleu_by_length": by_len, "greedy_seconds": greedy_s,
              "test_sentences": len(srcs), "examples": dict(zip(
                  [" ".join(s) for s in srcs[:8]], hyps[:8], strict=True))}
    if beams:
        result["beam"] = {}
        for k in (1, 4, 8):
            t = time.perf_counter()
            out = [b.sentence for b in beam_search(model, data, srcs, beam_size=k,
                                                   need_weights=False)]
            result["beam"][str(k)] = {"bleu": corpus_bleu(out, first), "chrf": corpus_chrf(
                out, first), "seconds": time.perf_counter() - t}
    return result


def run_real(name: str, seed: int, data) -> dict:
    torch.manual_seed(seed)
    model = build_model(name, data)
    cpu = time.process_time()
    history = train_seq2seq(model, data, seed=seed, progress=False, **REAL_TRAINING[name])
    result = {"model": name, "seed": seed, "parameters": sum(p.numel() for p in model.parameters()),
              "train_seconds": history.total_seconds, "tokens_per_sec": history.tokens_per_sec,
              "train_cpu_seconds": time.process_time() - cpu,
              "final_train_loss": history.train_loss[-1], "final_val_loss": history.val_loss[-1],
              "device": history.device}
    result.update(evaluate_real(model, data, beams=name in BEAM_MODELS))
    return result


def real_markdown(real: dict) -> str:
    meta, runs = real["meta"], real["runs"]
    models = [m for m in PRESETS if any(r["model"] == m for r in runs)]
    seeds = sorted({r["seed"] for r in runs})
    lines = [
        "", "# Real sentences: Tatoeba English-French", "",
        f"Generated by `scripts/quality.py --real` on {meta['date']}: "
        f"`FraEngData(**REAL_DATA_DEFAULTS)`, {meta['train_pairs']:,} training pairs, "
        f"{meta['test_sentences']:,} held-out English sentences ({meta['test_pairs']:,} pairs; no "
        "test sentence occurs in training), vocabularies of "
        f"{meta['src_vocab']:,} / {meta['tgt_vocab']:,} tokens (min_freq 2). Each model keeps its "
        f"preset's size and trains {meta['epochs']} epochs (Adam, lr 0.005). Seeds {seeds} "
        f"({len(seeds)} seed{'s' if len(seeds) > 1 else ''}; mean ± standard deviation where "
        "more than one ran).", "",
        "BLEU and chrF: sacrebleu over greedy translations, against the first listed "
        "translation of each test sentence; `BLEU all refs` against every translation "
        "Tatoeba lists; `exact %`: the output equals one of them. The models are far from "
        "converged at this size (look at the validation loss): the table compares what each "
        "architecture learns in the same short budget, not what it can reach.", "",
        "| model | params | train s | val loss | BLEU | BLEU all refs | chrF | exact % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in models:
        rs = [r for r in runs if r["model"] == m]
        lines.append(
            f"| {LABELS.get(m, m)} | {rs[0]['parameters']:,} | {mean_std(r['train_seconds'] for r in rs)} | "
            f"{statistics.mean(r['final_val_loss'] for r in rs):.2f} | "
            f"{mean_std(r['bleu'] for r in rs)} | {mean_std(r['bleu_all_refs'] for r in rs)} | "
            f"{mean_std(r['chrf'] for r in rs)} | {mean_std(r['exact_any'] for r in rs)} |")
    lines += _by_length_table("Real sentences: BLEU by source length (tokens, with the final "
                              "punctuation)", runs, models)
    beam_runs = [r for r in runs if "beam" in r]
    if beam_runs:
        lines += ["", "## Real sentences: greedy search vs beam search (length penalty 0.6)", "",
                  "| model | greedy BLEU | greedy s | beam 1 BLEU | beam 4 BLEU | beam 8 BLEU | "
                  "beam 1 s | beam 4 s | beam 8 s |", "|---|" + "---:|" * 8]
        for m in models:
            rs = [r for r in beam_runs if r["model"] == m]
            if rs:
                lines.append(f"| {LABELS.get(m, m)} | {mean_std(r['bleu'] for r in rs)} | "
                             f"{mean_std(r['greedy_seconds'] for r in rs)} | " + " | ".join(
                                 mean_std(r["beam"][k]["bleu"] for r in rs) for k in "148") + " | "
                             + " | ".join(mean_std(r["beam"][k]["seconds"] for r in rs)
                                          for k in "148") + " |")
        lines += ["", "Seconds: decoding all test sentences on one CPU thread, greedy in "
                  "batches, beam search one sentence at a time (machine shared with other jobs).",
                  ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- d2l's experiment

D2L_BOOK = {m: f"loss {loss}, {speed} tokens/s (d2l-zh, V100)"
            for m, (loss, speed) in D2L_BOOK_NUMBERS.items()}


class _D2LNet(torch.nn.Module):
    """What d2l-zh's ``train_seq2seq`` calls: ``net(X, dec_X, X_valid_len) -> (Y_hat, state)``."""

    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, X, dec_X, valid_len):
        state = self.decoder.init_state(self.encoder(X, valid_len), valid_len)
        return self.decoder(dec_X, state)


def _d2l_batches(data):
    """Our batches in d2l-zh's layout ``(X, X_valid_len, Y, Y_valid_len)``, reshuffled per epoch."""
    pad = data.tgt_vocab.pad

    class Batches:
        def __iter__(self):
            for src, _, valid, label in data.train_dataloader():
                yield src, valid, label, (label != pad).sum(1)
    return Batches()


def _d2l_predict(d2l, net, data, device):
    out = {}
    for src, tgt, _ in D2L_SENTENCES:
        s = " ".join(src)
        hyp, _ = d2l.predict_seq2seq(net, s, data.src_vocab, data.tgt_vocab, data.num_steps, device)
        out[s] = {"translation": hyp, "bleu": d2l.bleu(hyp, " ".join(tgt), k=2) if hyp else 0.0}
    return out


def run_d2l(seed: int = 0) -> dict:
    """d2l-zh's two experiments, each with d2l 1.0.3's code and with attnlib's, on one thread."""
    import contextlib
    import io
    import re

    from d2l import torch as d2l

    from attnlib.decoding import greedy_decode
    from attnlib.transformer import TransformerDecoder

    torch.set_num_threads(1)
    device = torch.device("cpu")
    data = FraEngData(**D2L_DATA)
    result = {"data": D2L_DATA, "train_pairs": len(data.train), "src_vocab": len(data.src_vocab),
              "tgt_vocab": len(data.tgt_vocab), "in_training": {
                  " ".join(s): data.is_seen(s) for s, _, _ in D2L_SENTENCES}, "runs": []}
    for name in ("bahdanau", "transformer"):
        sizes, train = D2L_MODELS[name], D2L_TRAINING[name]
        # 1. d2l's code: d2l's encoder, training loop (init, loss, clipping), decoding loop, BLEU.
        torch.manual_seed(seed)
        ours = build_model(name, data, **sizes)
        if name == "bahdanau":
            encoder = d2l.Seq2SeqEncoder(len(data.src_vocab), sizes["embed_size"],
                                         sizes["num_hiddens"], sizes["num_layers"], sizes["dropout"])
        else:
            args = [sizes[k] for k in ("num_hiddens", "ffn_num_hiddens", "num_heads", "num_blks",
                                       "dropout")]
            encoder = d2l.TransformerEncoder(len(data.src_vocab), *args)
            ours.decoder = TransformerDecoder(len(data.tgt_vocab), *args)
        net = _D2LNet(encoder, ours.decoder)
        log = io.StringIO()
        t = time.perf_counter()
        with contextlib.redirect_stdout(log):
            d2l.train_seq2seq(net, _d2l_batches(data), train["lr"], train["num_epochs"],
                              data.tgt_vocab, device)
        seconds = time.perf_counter() - t
        m = re.search(r"loss ([\d.]+), ([\d.]+) tokens/sec", log.getvalue())
        result["runs"].append({
            "model": name, "code": "d2l", "loss": float(m[1]), "tokens_per_sec_last_epoch":
            float(m[2]), "seconds": seconds, "sentences": _d2l_predict(d2l, net, data, device),
            "what": ("d2l.Seq2SeqEncoder" if name == "bahdanau" else "d2l.TransformerEncoder")
            + " + attnlib decoder; d2l.train_seq2seq, d2l.predict_seq2seq, d2l.bleu"})
        # 2. attnlib's code: its model, train_seq2seq, greedy decoding; d2l's BLEU formula.
        torch.manual_seed(seed)
        model = build_model(name, data, **sizes)
        history = train_seq2seq(model, data, seed=seed, progress=False, device=device, **train)
        sentences = {}
        for src, tgt, _ in D2L_SENTENCES:
            hyp = greedy_decode(model, data, " ".join(src), need_weights=False).sentence
            sentences[" ".join(src)] = {"translation": hyp,
                                        "bleu": d2l.bleu(hyp, " ".join(tgt), k=2) if hyp else 0.0}
        last = history.tokens[-1] / history.seconds[-1]
        result["runs"].append({
            "model": name, "code": "attnlib", "loss": history.train_loss[-1],
            "tokens_per_sec_last_epoch": last, "seconds": history.total_seconds,
            "sentences": sentences, "what": "attnlib model, train_seq2seq, greedy_decode"})
        print(f"d2l setup {name}: " + "; ".join(
            f"{r['code']} loss {r['loss']:.3f} {r['tokens_per_sec_last_epoch']:,.0f} tok/s"
            for r in result["runs"][-2:]), flush=True)
    return result


def d2l_markdown(d2l: dict) -> str:
    lines = ["", "# d2l's experiment on d2l's data", "",
             f"Generated by `scripts/quality.py --d2l` on {d2l['date']}: d2l-zh's setup, the first "
             f"{d2l['train_pairs']} pairs of `fra.txt` all used for training (`FraEngData(**D2L_DATA)`, "
             f"num_steps 10, batch 64, vocabularies {d2l['src_vocab']} / {d2l['tgt_vocab']}), d2l's "
             "sizes (Bahdanau: embed 32, hidden 32, 2 GRU layers, dropout 0.1, 250 epochs; "
             "Transformer: 32 hidden, 2 + 2 blocks, 4 heads, FFN 64, dropout 0.1, 200 epochs), "
             "Adam lr 0.005, one CPU thread shared with other jobs. d2l 1.0.3 ships "
             "`Seq2SeqEncoder`, `AdditiveAttention`, `TransformerEncoder`, `train_seq2seq`, "
             "`predict_seq2seq` and `bleu`, but neither a Bahdanau nor a Transformer decoder: the "
             "`d2l` rows use d2l's encoder, training loop, decoding loop and BLEU around attnlib's "
             "decoder; the `attnlib` rows are attnlib alone. tokens/s: last epoch, as d2l prints it.",
             "", "| model | code | loss | tokens/s | " + " | ".join(
                 f"`{s}`" for s in d2l["runs"][0]["sentences"]) + " |",
             "|---|---|---:|---:|" + "---|" * len(d2l["runs"][0]["sentences"])]
    steps = d2l["data"]["num_steps"]
    for r in d2l["runs"]:
        loss = (f"{r['loss']:.3f} (= {r['loss'] * steps:.3f} a token)" if r["code"] == "d2l"
                else f"{r['loss']:.3f}")
        lines.append(f"| {LABELS.get(r['model'], r['model'])} | {r['code']} | {loss} | "
                     f"{r['tokens_per_sec_last_epoch']:,.0f} | " + " | ".join(
                         f"{v['translation']} ({v['bleu']:.3f})" for v in r["sentences"].values())
                     + " |")
    for m, text in D2L_BOOK.items():
        lines.append(f"| {LABELS[m]} | d2l book | {text} | | | | | |")
    seen = ", ".join(f"`{s}` {'yes' if v else 'no'}" for s, v in d2l["in_training"].items())
    lines += ["", f"Loss: d2l's `MaskedSoftmaxCELoss` averages over all {steps} steps of a "
              "sequence, padding included, and `train_seq2seq` then divides by the real tokens: "
              f"its printed loss is the cross-entropy per token divided by {steps} (the d2l book's "
              f"0.019-0.022 is about {0.019 * steps:.2f}-{0.022 * steps:.2f} a token). attnlib's "
              "loss is the cross-entropy per real token.",
              "", f"In brackets: d2l's BLEU (k = 2). In the training data: {seen}. So this "
              "experiment shows that the code runs and fits 600 pairs; it says nothing about "
              "translating unseen sentences (see the real-data tables above).", ""]
    return "\n".join(lines)


def _meta(dataset, **extra) -> dict:
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "train_pairs": len(dataset.train), "test_pairs": len(dataset.test),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, {platform.python_version()}",
            "torch": torch.__version__, "attnlib": attnlib.__version__,
            "threads": "training with 1 torch thread (train_seq2seq's cpu_threads=1)"} | extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", nargs="+", default=["generated", "dropout", "real", "d2l"],
                        choices=["generated", "dropout", "real", "d2l"],
                        help="generated corpus, the attention-dropout ablation on it, real Tatoeba "
                        "sentences, d2l's 600-pair experiment (default: all); only these sections "
                        "are rewritten, the others kept")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--models", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--out", type=Path, default=ROOT / "results", help="folder for quality.md")
    parser.add_argument("--json", type=Path, default=JSON_OUT,
                        help="the measurements attnlib ships (default: attnlib/quality.json)")
    parser.add_argument("--part", type=Path, help="only write these runs to PART (a .json), "
                        "to run models in several processes; then --merge the parts")
    parser.add_argument("--merge", type=Path, nargs="+", help="join parts written by --part")
    args = parser.parse_args()
    if args.merge:
        parts = [json.loads(p.read_text()) for p in args.merge]
        for kind in dict.fromkeys(p.get("kind", "generated") for p in parts):
            same = [p for p in parts if p.get("kind", "generated") == kind]
            if kind == "d2l":
                write(args.out, args.json, "d2l", same[-1])
                continue
            runs = [r for p in same for r in p["runs"]]
            dates = {}  # parts measured on other days say which models each day measured
            for part in same:
                models = dict.fromkeys(r["model"] for r in part["runs"])
                dates.setdefault(part["meta"]["date"], {}).update(models)
            date = same[0]["meta"]["date"] if len(dates) == 1 else "; ".join(
                f"{day} ({', '.join(models)})" for day, models in dates.items())
            write(args.out, args.json, kind, {"meta": same[0]["meta"] | {
                "seeds": sorted({r["seed"] for r in runs}), "date": date}, "runs": runs})
        return
    for kind in args.what:
        section = {"generated": _generated, "dropout": _dropout, "real": _real, "d2l": _d2l}[kind](args)
        if args.part:
            args.part.with_suffix(f".{kind}.json").write_text(
                json.dumps(section | {"kind": kind}, indent=1) + "\n")
        else:
            write(args.out, args.json, kind, section)


def _save_part(args, kind: str, meta: dict, runs: list) -> None:
    if args.part:  # after every run, so a part that is stopped early keeps its runs
        args.part.with_suffix(f".{kind}.json").write_text(
            json.dumps({"kind": kind, "meta": meta, "runs": runs}, indent=1) + "\n")


def _generated(args) -> dict:
    from attnlib.data import novel_pair_fraction

    data = TranslationData(**DATA_DEFAULTS)
    meta = _meta(data, seeds=args.seeds, data=DATA_DEFAULTS, presets=dict(PRESETS),
                 novel_pair_share=100 * novel_pair_fraction(data.test, data.train))
    runs = []
    for name in args.models:
        for seed in args.seeds:
            r = run(name, seed, data)
            runs.append(r)
            print(f"{name:20s} seed {seed}: BLEU {r['bleu']:5.1f}  chrF {r['chrf']:5.1f}  "
                  f"{r['train_seconds']:5.1f} s  {r['tokens_per_sec']:8,.0f} tokens/s  "
                  f"alignment {max(r['alignment'].values(), default=float('nan')):5.1f}", flush=True)
            _save_part(args, "generated", meta, runs)
    return {"meta": meta, "runs": runs}


def _dropout(args) -> dict:
    data = TranslationData(**DATA_DEFAULTS)
    meta = _meta(data, seeds=args.seeds, data=DATA_DEFAULTS, ablation=DROPOUT_ABLATION,
                 presets={m: PRESETS[m] for m in DROPOUT_ABLATION})
    runs = []
    for name in [m for m in args.models if m in DROPOUT_ABLATION]:
        for dropout in DROPOUT_ABLATION[name]:
            for seed in args.seeds:
                r = run_dropout(name, dropout, seed, data)
                runs.append(r)
                print(f"dropout {name:14s} p={dropout:g} seed {seed}: BLEU {r['bleu']:5.1f}  alignment "
                      f"{r['alignment']:5.1f}  peak weight {r['peak_weight']:.2f}", flush=True)
                _save_part(args, "dropout", meta, runs)
    return {"meta": meta, "runs": runs}


def _real(args) -> dict:
    data = FraEngData(**REAL_DATA_DEFAULTS)
    meta = _meta(data, seeds=args.seeds, data=REAL_DATA_DEFAULTS, training=REAL_TRAINING,
                 epochs=sorted({t["num_epochs"] for t in REAL_TRAINING.values()})[0],
                 test_sentences=len(data.references()), src_vocab=len(data.src_vocab),
                 tgt_vocab=len(data.tgt_vocab))
    runs = []
    for name in [m for m in args.models if m in REAL_TRAINING]:
        for seed in args.seeds:
            r = run_real(name, seed, data)
            runs.append(r)
            print(f"real {name:16s} seed {seed}: BLEU {r['bleu']:5.1f} (all refs "
                  f"{r['bleu_all_refs']:5.1f})  chrF {r['chrf']:5.1f}  {r['train_seconds']:6.1f} s",
                  flush=True)
            _save_part(args, "real", meta, runs)
    return {"meta": meta, "runs": runs}


def _d2l(args) -> dict:
    return run_d2l(args.seeds[0]) | {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def write(out: Path, path: Path, kind: str, section: dict) -> None:
    """Put one section (generated, dropout, real or d2l) into the JSON file ``path``, keep the others,
    and rewrite ``out/quality.md`` from all of them."""
    out.mkdir(exist_ok=True)
    everything = json.loads(path.read_text()) if path.exists() else {}
    section = {k: v for k, v in section.items() if k != "kind"}
    if kind == "generated":
        order = list(PRESETS)
        section["runs"] = sorted(section["runs"], key=lambda r: (order.index(r["model"]), r["seed"]))
        everything.update(section)  # the generated corpus stays at the top level
    else:
        if kind == "real":
            section["runs"] = sorted(section["runs"], key=lambda r: (list(PRESETS).index(
                r["model"]), r["seed"]))
        if kind == "dropout":
            section["runs"] = sorted(section["runs"], key=lambda r: (list(PRESETS).index(
                r["model"]), not r["preset"], r["seed"]))
        everything[kind] = section
    path.write_text(json.dumps(everything, indent=1) + "\n")
    md = markdown(everything["runs"], everything["meta"]) if "runs" in everything else ""
    if "dropout" in everything:
        md += dropout_markdown(everything["dropout"])
    if "real" in everything:
        md += real_markdown(everything["real"])
    if "d2l" in everything:
        md += d2l_markdown(everything["d2l"])
    (out / "quality.md").write_text(md)
    print(f"wrote {out / 'quality.md'} and {path}")


if __name__ == "__main__":
    main()
