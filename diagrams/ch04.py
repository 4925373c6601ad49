"""Chapter 4: the encoder-decoder with Bahdanau attention, and Luong's variant."""

from . import diagram
from .draw import LINE, MUTED, ROLES, Diagram, viridis

SOURCE = ["the", "cat", "sleeps", "."]
ALPHA = [0.05, 0.15, 0.72, 0.08]  # step t ("dort") attends mostly to "sleeps"


def _token(d: Diagram, cx: float, y: float, text: str, role: str = "plain", w: float = 52) -> None:
    fill, stroke, _ = ROLES[role]
    d.rect(cx - w / 2, y, w, 22, fill=fill, stroke=stroke, sw=1.2, rx=3)
    d.code(cx, y + 15, text, 11)


def _key_value(d: Diagram, cx: float, y: float, w: float = 36, h: float = 28) -> None:
    """An encoder output h_i, both key (top half, blue) and value (bottom half, green)."""
    d.rect(cx - w / 2, y, w, h / 2, fill=ROLES["key"][0], stroke=ROLES["key"][1], sw=1.2, rx=2)
    d.rect(cx - w / 2, y + h / 2, w, h / 2, fill=ROLES["value"][0], stroke=ROLES["value"][1], sw=1.2, rx=2)


@diagram(720, 420)
def ch04_bahdanau_step(d: Diagram) -> None:
    """One decoding step t: the previous decoder state queries every encoder output with the
    additive score; the weights pool the same outputs into c_t, which enters the GRU step."""
    cols = [70, 150, 230, 310]
    y_h, y_op, y_soft, y_w, y_sum = 286, 256, 214, 176, 132
    # encoder
    for x, tok in zip(cols, SOURCE, strict=True):
        _token(d, x, 382, tok)
        d.arrow((x, 382), (x, 366), color=LINE)
    d.box(36, 338, 310, 28, "module", code="Seq2SeqEncoder(bidirectional=True)", size=12)
    for x, i in zip(cols, ["1", "2", "3", "4"], strict=True):
        d.arrow((x, 338), (x, y_h + 30), color=LINE)
        # the value's path runs up beside the column (behind the softmax band)
        d.polyline(
            [(x + 18, y_h + 21), (x + 28, y_h + 21), (x + 28, y_w + 12), (x + 22, y_w + 12)],
            stroke=ROLES["value"][1],
            sw=1.4,
        )
        _key_value(d, x, y_h)
        d.math(x - 22, y_h + 19, rf"\mathbf{{h}}_{i}", 13, anchor="end")
        d.arrow((x, y_h), (x, y_op + 10), color=ROLES["key"][1])
        d.op(x, y_op, "a", r=9, size=13)
        d.arrow((x, y_op - 9), (x, y_soft + 18), color=LINE)
        d.arrow((x, y_soft), (x, y_w + 24), color=LINE)
        d.weights(x - 12, y_w, [ALPHA[int(i) - 1]], cell=24, numbers=True, size=9)
        d.text(x + 34, y_w + 17, "×", 13, kind="m")
    d.box(40, y_soft, 300, 18, "module", title="softmax over the source positions", size=11)
    d.rect(
        32, y_soft - 8, 320, y_op + 16 - (y_soft - 8), fill="none", stroke="#8c8c8c", sw=1, rx=6, dash="4 3"
    )
    d.code(358, y_op - 10, "AdditiveAttention", 11, anchor="start", fill=MUTED)
    # the weighted values summed into the context
    sx = 190
    for x, w in zip(cols, ALPHA, strict=True):
        d.arrow((x + 34, y_w + 4), (sx + (x - sx) * 0.15, y_sum + 12), color=viridis(0.35), sw=0.8 + 5 * w)
    d.op(sx, y_sum, "∑", r=12, size=15)
    d.arrow((sx + 12, y_sum), (236, y_sum), color=ROLES["output"][1], sw=1.6)
    d.cells(238, y_sum - 7, 4, "output", cell=14)
    d.math(270, y_sum - 13, r"\mathbf{c}_t", 14, fill=ROLES["output"][2])
    d.arrow((296, y_sum), (388, y_sum), color=ROLES["output"][1], sw=1.6)
    # the decoder step
    dx = 400
    d.op(dx, y_sum, "‖", r=11, size=14)
    _token(d, dx + 100, 169, "chat")
    d.math(dx + 100, 210, r"y_{t-1}", 13)
    d.box(dx - 34, 168, 68, 24, "module", code="embedding", size=10)
    d.arrow((dx + 74, 180), (dx + 34, 180), color=LINE)
    d.arrow((dx, 168), (dx, y_sum + 11), color=LINE)
    d.box(dx - 50, 70, 100, 28, "module", code="GRU", size=12)
    d.arrow((dx, y_sum - 11), (dx, 98), color=LINE)
    # previous state: the GRU's state and the query
    qx = 530
    fill, stroke, ink = ROLES["query"]
    d.rect(qx - 30, 72, 60, 24, fill=fill, stroke=stroke, sw=1.4, rx=3)
    d.math(qx, 89, r"\mathbf{s}_{t-1}", 14, fill=ink)
    d.arrow((qx - 30, 84), (dx + 50, 84), color=stroke, sw=1.6)
    d.polyline([(qx, 96), (qx, y_op), (cols[0] + 40, y_op)], stroke=stroke, sw=1.8)
    for x in cols:
        d.arrow((x + 40, y_op), (x + 10, y_op), color=stroke, sw=1.8)
    d.label(qx + 10, 160, "query: the previous decoder state", 12, anchor="start", fill=ink, width=150)
    d.label(qx + 30, y_h + 8, "keys and values: the encoder outputs", 12, anchor="start", width=140)
    d.rect(qx + 10, y_h - 2, 14, 7, fill=ROLES["key"][0], stroke=ROLES["key"][1], sw=1, rx=1)
    d.rect(qx + 10, y_h + 5, 14, 7, fill=ROLES["value"][0], stroke=ROLES["value"][1], sw=1, rx=1)
    # the new state and the prediction
    d.arrow((dx, 70), (dx, 52), color=LINE)
    d.rect(dx - 30, 28, 60, 24, fill="#ffffff", stroke=ROLES["query"][1], sw=1.4, rx=3, dash="4 2")
    d.math(dx, 45, r"\mathbf{s}_t", 14, fill=ink)
    d.box(dx + 60, 28, 64, 24, "module", code="dense", size=11)
    d.arrow((dx + 30, 40), (dx + 60, 40), color=LINE)
    d.arrow((dx + 124, 40), (dx + 150, 40), color=ROLES["output"][1])
    _token(d, dx + 180, 29, "dort", "output")
    d.math(dx + 214, 45, r"y_t", 13, anchor="start")
    d.code(36, 20, "Seq2SeqAttentionDecoder", 12, anchor="start")
    d.label(210, 20, "one decoding step t", 12, anchor="start", fill=MUTED)


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
            ("att", "box", "attention", 96, "module"),
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
