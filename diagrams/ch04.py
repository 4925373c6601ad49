"""Chapter 4: the encoder-decoder with Bahdanau attention, and Luong's variant."""

import math

from . import diagram
from .draw import LINE, MUTED, ROLES, Diagram, signed, viridis

SOURCE = ["the", "cat", "sleeps", ".", "<eos>"]  # the encoder annotates <eos> too
SCORES = [-1.2, -0.1, 1.5, -0.7, -1.6]  # e_{t,i} of step t ("dort"): most on "sleeps"
ALPHA = [math.exp(e) / sum(math.exp(s) for s in SCORES) for e in SCORES]  # 0.05, 0.14, 0.70, 0.08, 0.03


def _token(d: Diagram, cx: float, y: float, text: str, role: str = "plain", w: float = 52) -> None:
    fill, stroke, _ = ROLES[role]
    d.rect(cx - w / 2, y, w, 22, fill=fill, stroke=stroke, sw=1.2, rx=3)
    d.code(cx, y + 15, text, 11)


def _key_value(d: Diagram, cx: float, y: float, w: float = 36, h: float = 28) -> None:
    """An encoder output h_i, both key (top half, blue) and value (bottom half, green)."""
    d.rect(cx - w / 2, y, w, h / 2, fill=ROLES["key"][0], stroke=ROLES["key"][1], sw=1.2, rx=2)
    d.rect(cx - w / 2, y + h / 2, w, h / 2, fill=ROLES["value"][0], stroke=ROLES["value"][1], sw=1.2, rx=2)


@diagram(720, 576)
def ch04_bahdanau_step(d: Diagram) -> None:
    """One decoding step t of attnlib's Seq2SeqAttentionDecoder over a bidirectional
    Seq2SeqEncoder: the previous decoder state s_{t-1} queries every encoder output h_i with the
    additive score e_{t,i}; the masked softmax gives the weights alpha_{t,i}, which pool the same
    outputs into c_t; c_t and the embedding of y_{t-1} enter one GRU step from s_{t-1} to s_t."""
    q, k, v, o, st = ROLES["query"], ROLES["key"], ROLES["value"], ROLES["output"], ROLES["state"]
    cols = [70, 140, 210, 280, 350]
    y_tok, y_emb, y_enc, y_h, y_e, y_soft, y_w, y_sum = 542, 494, 436, 380, 336, 296, 252, 200
    # the encoder: each token embedded, then read by a GRU left to right and one right to left
    d.rect(30, y_enc - 12, 390, 106, fill="#f7f7f7", stroke="#8c8c8c", sw=1.1, rx=6, dash="4 3")
    d.box(cols[0] - 26, y_emb, cols[-1] - cols[0] + 52, 22, "module", code="embedding", size=10)
    for x, tok in zip(cols, SOURCE, strict=True):
        _token(d, x, y_tok, tok)
        d.arrow((x, y_tok), (x, y_emb + 22), color=LINE)
        d.arrow((x, y_emb), (x, y_enc + 44), color=LINE)
        d.rect(x - 26, y_enc, 52, 44, fill=ROLES["module"][0], stroke=ROLES["module"][1], sw=1.2, rx=4)
        d.code(x, y_enc + 17, "GRU →", 10)
        d.code(x, y_enc + 36, "GRU ←", 10)
        d.arrow((x, y_enc), (x, y_h + 28), color=LINE)
    for a, b in zip(cols, cols[1:], strict=False):
        d.arrow((a + 26, y_enc + 13), (b - 26, y_enc + 13), color=st[1], sw=1.3, head=6)
        d.arrow((b - 26, y_enc + 32), (a + 26, y_enc + 32), color=st[1], sw=1.3, head=6)
    d.code(432, y_enc + 16, "Seq2SeqEncoder", 11, anchor="start")
    d.code(432, y_enc + 32, "(bidirectional=True)", 11, anchor="start")
    d.label(
        432, y_enc - 34, "each output joins the states of both directions", 11, anchor="start",
        fill=MUTED, width=150,
    )
    # the attention: AdditiveAttention scores, masked softmax, weighted sum of the same outputs
    d.rect(30, y_sum - 24, 390, y_e + 22 - (y_sum - 24), fill="none", stroke="#8c8c8c", sw=1, rx=6,
           dash="4 3")
    d.code(40, y_sum - 8, "AdditiveAttention", 11, anchor="start", fill=MUTED)
    for x, i in zip(cols, range(len(cols)), strict=True):
        # the value's path up the column's right side to the weighted sum
        d.polyline([(x + 18, y_h + 21), (x + 30, y_h + 21), (x + 30, y_w + 12), (x + 16, y_w + 12)],
                   stroke=v[1], sw=1.4)
        _key_value(d, x, y_h)
        d.math(x - 22, y_h + 19, rf"\mathbf{{h}}_{i + 1}", 13, anchor="end")
        d.arrow((x, y_h), (x, y_e + 15), color=k[1])
    # the query reaches every score from the right
    d.polyline([(684, 150), (704, 150), (704, y_e), (cols[0] + 13, y_e)], stroke=q[1], sw=1.8)
    for x, i in zip(cols, range(len(cols)), strict=True):
        d.arrow((x + 40, y_e), (x + 16, y_e), color=q[1], sw=1.8)
        d.cells(x - 15, y_e - 15, 1, cell=30, colours=[signed(SCORES[i], 2.0)],
                values=[f"{SCORES[i]:+.1f}".replace("-", "−")], size=10, stroke="#555555", sw=0.8)
        d.arrow((x, y_e - 15), (x, y_soft + 9), color=LINE, sw=1.3, head=6)
        d.arrow((x, y_soft - 9), (x, y_w + 24), color=LINE, sw=1.3, head=6)
        d.weights(x - 12, y_w, [ALPHA[i]], cell=24, numbers=True, size=9)
        d.op(x + 23, y_w + 12, "×", r=7, size=11)  # the weight times the value, on the value's line
    d.math(cols[0] - 18, y_e + 5, r"e_{t,i}", 13, anchor="end")
    d.math(cols[0] - 18, y_w + 17, r"\alpha_{t,i}", 13, anchor="end")
    d.box(40, y_soft - 9, 370, 18, "module", title="masked softmax over the source positions", size=11)
    sx = 210
    for x, w in zip(cols, ALPHA, strict=True):
        d.arrow((x, y_w), (sx + (x - sx) * 0.12, y_sum + 13), color=viridis(0.35), sw=0.8 + 5 * w)
    d.op(sx, y_sum, "∑", r=12, size=15)
    d.math(sx + 18, y_sum - 10, r"\sum_i \alpha_{t,i} \mathbf{h}_i", 12, anchor="start")
    # the context joins the embedding of the previous word; one GRU step
    dx = 560
    d.arrow((sx + 12, y_sum), (dx - 11, y_sum), color=o[1], sw=1.6)
    d.cells(440, y_sum - 7, 4, "output", cell=14)
    d.math(468, y_sum - 13, r"\mathbf{c}_t", 14, fill=o[2])
    d.op(dx, y_sum, "‖", r=11, size=14)
    d.box(596, y_sum - 12, 84, 24, "module", code="embedding", size=10)
    d.arrow((596, y_sum), (dx + 11, y_sum), color=LINE)
    _token(d, 638, 240, "chat")
    d.arrow((638, 240), (638, y_sum + 12), color=LINE)
    d.math(600, 276, r"y_{t-1}", 13, anchor="start")
    d.arrow((dx, y_sum - 11), (dx, 164), color=LINE)
    d.box(dx - 50, 136, 100, 28, "module", code="GRU", size=12)
    # the previous state: the GRU's state and the query
    d.rect(624, 138, 60, 24, fill=q[0], stroke=q[1], sw=1.4, rx=3)
    d.math(654, 155, r"\mathbf{s}_{t-1}", 14, fill=q[2])
    d.arrow((624, 150), (dx + 50, 150), color=q[1], sw=1.6)
    d.label(610, 100, "from step t − 1; the first is the encoder's final state", 10, anchor="start",
            fill=MUTED, width=104)
    d.math(700, y_e - 12, r"e_{t,i} = \mathbf{v}^\top \tanh(\mathbf{W}_s \mathbf{s}_{t-1} + "
           r"\mathbf{W}_h \mathbf{h}_i)", 12, anchor="end")
    # what the colours are
    d.rect(36, 66, 16, 12, fill=q[0], stroke=q[1], sw=1.2, rx=2)
    d.label(60, 76, "query: the previous decoder state", 12, anchor="start", fill=q[2])
    d.rect(36, 90, 16, 6, fill=k[0], stroke=k[1], sw=1, rx=1)
    d.rect(36, 96, 16, 6, fill=v[0], stroke=v[1], sw=1, rx=1)
    d.label(60, 101, "keys and values: the encoder outputs", 12, anchor="start")
    d.op(44, 120, "‖", r=8, size=11)
    d.label(60, 125, "concatenation", 12, anchor="start")
    # the new state and the prediction
    d.arrow((dx, 136), (dx, 118), color=LINE)
    d.rect(dx - 30, 94, 60, 24, fill=st[0], stroke=st[1], sw=1.4, rx=3)
    d.math(dx, 111, r"\mathbf{s}_t", 14, fill=st[2])
    d.arrow((dx, 94), (dx, 80), color=LINE)
    d.box(dx - 32, 56, 64, 24, "module", code="dense", size=11)
    d.arrow((dx, 56), (dx, 44), color=o[1])
    _token(d, dx, 22, "dort", "output")
    d.math(dx + 34, 38, r"y_t", 13, anchor="start")
    d.code(24, 26, "Seq2SeqAttentionDecoder", 12, anchor="start")
    d.label(200, 26, "one decoding step t", 12, anchor="start", fill=MUTED)


def _chain(d: Diagram, y: float, items: list, gap: float = 24) -> dict:
    """Boxes left to right at height y: (key, kind, content, width, role); kind 'box' holds an
    attnlib name, 'math' a symbol. Arrows join neighbours. Returns key -> (x0, x1)."""
    x, where = 24.0, {}
    for key, kind, content, width, role in items:
        if kind == "box":
            d.box(x, y, width, 30, role, code=content, size=11)
        else:
            fill, stroke, ink = ROLES[role]
            d.rect(x, y, width, 30, fill=fill, stroke=stroke, sw=1.4, rx=4)
            d.math(x + width / 2, y + 20, content, 13, fill=ink)
        where[key] = (x, x + width)
        x += width + gap
    spans = list(where.values())
    for (_, a1), (b0, _) in zip(spans, spans[1:], strict=False):
        d.arrow((a1, y + 15), (b0, y + 15), color=LINE)
    return where


@diagram(720, 360)
def ch04_luong_vs_bahdanau(d: Diagram) -> None:
    """When the query is formed: Bahdanau attends with the state before the recurrent step,
    Luong with the state after it."""
    q = ROLES["query"]
    # Bahdanau
    y = 64
    d.label(24, y - 36, "Bahdanau: attend, then take the step", 13, anchor="start", weight="bold")
    d.code(700, y - 36, "Seq2SeqAttentionDecoder", 11, anchor="end", fill=MUTED)
    w = _chain(
        d,
        y,
        [
            ("s", "math", r"\mathbf{s}_{t-1}", 56, "query"),
            ("att", "box", "AdditiveAttention", 134, "module"),
            ("c", "math", r"\mathbf{c}_t", 44, "output"),
            ("gru", "box", "GRU", 56, "module"),
            ("st", "math", r"\mathbf{s}_t", 44, "state"),
            ("dense", "box", "dense", 56, "module"),
            ("y", "math", r"y_t", 40, "output"),
        ],
    )
    att = sum(w["att"]) / 2
    d.arrow((att, y + 56), (att, y + 31), color=ROLES["key"][1], sw=1.3)
    _kv(d, att, y + 58)
    gru = w["gru"]
    d.arrow((gru[0] + 16, y + 66), (gru[0] + 16, y + 31), color=LINE, sw=1.3)
    d.math(gru[0] + 16, y + 80, r"y_{t-1}", 12)
    s_mid = sum(w["s"]) / 2
    d.polyline([(s_mid, y + 30), (s_mid, y + 92), (gru[1] - 14, y + 92)], stroke=q[1], sw=1.4)
    d.arrow((gru[1] - 14, y + 92), (gru[1] - 14, y + 31), color=q[1], sw=1.4)
    d.label(gru[1] + 4, y + 88, "the same state, as the GRU's", 11, anchor="start", fill=MUTED)
    # Luong
    y = 244
    d.label(24, y - 36, "Luong: take the step, then attend", 13, anchor="start", weight="bold")
    d.code(700, y - 36, "LuongAttentionDecoder", 11, anchor="end", fill=MUTED)
    w = _chain(
        d,
        y,
        [
            ("gru", "box", "GRU", 56, "module"),
            ("h", "math", r"\mathbf{h}_t", 44, "query"),
            ("att", "box", "DotAttention", 96, "module"),
            ("c", "math", r"\mathbf{c}_t", 44, "output"),
            ("mix", "box", "tanh(W_c [c; h])", 136, "module"),
            ("ht", "math", r"\tilde{\mathbf{h}}_t", 44, "state"),
            ("dense", "box", "dense", 56, "module"),
            ("y", "math", r"y_t", 40, "output"),
        ],
        gap=20,
    )
    gru = w["gru"]
    d.arrow((gru[0] + 16, y + 66), (gru[0] + 16, y + 31), color=LINE, sw=1.3)
    d.math(gru[0] + 10, y + 80, r"y_{t-1}", 12, anchor="end")
    d.arrow((gru[1] - 14, y + 66), (gru[1] - 14, y + 31), color=LINE, sw=1.3)
    d.math(gru[1] - 4, y + 80, r"\mathbf{h}_{t-1}", 12, anchor="start")
    att = sum(w["att"]) / 2
    d.arrow((att, y + 56), (att, y + 31), color=ROLES["key"][1], sw=1.3)
    _kv(d, att, y + 58)
    h_mid, mix = sum(w["h"]) / 2, w["mix"]
    d.polyline([(h_mid, y), (h_mid, y - 14), (mix[0] + 30, y - 14)], stroke=q[1], sw=1.4)
    d.arrow((mix[0] + 30, y - 14), (mix[0] + 30, y - 1), color=q[1], sw=1.4)
    d.label(
        360,
        346,
        "vermilion: the query, the decoder state before the step (Bahdanau) or after it (Luong)",
        11,
        fill=MUTED,
    )


def _kv(d: Diagram, x: float, y: float) -> None:
    """The encoder outputs, keys (blue) and values (green), under a box at x."""
    for k in range(4):
        xx = x - 34 + k * 18
        d.rect(xx, y, 14, 7, fill=ROLES["key"][0], stroke=ROLES["key"][1], sw=1, rx=1)
        d.rect(xx, y + 7, 14, 7, fill=ROLES["value"][0], stroke=ROLES["value"][1], sw=1, rx=1)
    d.label(x, y + 30, "encoder outputs", 11, fill=MUTED)
