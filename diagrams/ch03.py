"""Chapter 3: scoring functions, the masked softmax, additive and scaled dot-product attention."""

import math

from . import diagram
from .draw import LINE, MUTED, ROLES, Diagram, signed, viridis

SCORES = [1.2, -0.4, 0.6, -1.1]


def _softmax(s: list[float]) -> list[float]:
    e = [math.exp(v - max(s)) for v in s]
    return [v / sum(e) for v in e]


@diagram(720, 330)
def ch03_scoring_pipeline(d: Diagram) -> None:
    """Score, masked softmax, weighted sum: the three steps every attention layer takes."""
    m, cell = 4, 24
    ys = [64 + i * 52 for i in range(m)]  # the rows of the keys, scores, weights, values
    names = ["1", "2", "3", "m"]
    # query and keys
    d.cells(230, 22, 4, "query", cell=16)
    d.math(222, 36, r"\mathbf{q}", 17, anchor="end", fill=ROLES["query"][2])
    d.label(302, 35, "query", 12, anchor="start", fill=ROLES["query"][2])
    for y, i in zip(ys, names, strict=True):
        d.cells(118, y + 4, 4, "key", cell=16)
        d.math(110, y + 17, rf"\mathbf{{k}}_{i}", 14, anchor="end", fill=ROLES["key"][2])
    d.label(150, 48, "keys", 12, fill=ROLES["key"][2])
    # the scoring function, one box for all pairs
    bx, bw = 214, 96
    d.box(
        bx,
        ys[0] - 8,
        bw,
        ys[-1] - ys[0] + 40,
        "module",
        title="scoring function",
        tex=r"a(\mathbf{q}, \mathbf{k}_i)",
        size=13,
        title_width=84,
    )
    d.arrow((262, 38), (262, ys[0] - 8), color=ROLES["query"][1], sw=1.8)
    for y in ys:
        d.arrow((184, y + 12), (bx, y + 12), color=ROLES["key"][1])
    # scores (signed, RdBu_r), softmax, weights (viridis)
    sx = 350
    w = _softmax(SCORES)
    d.label(sx + cell / 2 + 2, 52, "scores", 12)
    for y, s, a in zip(ys, SCORES, w, strict=True):
        d.arrow((bx + bw, y + 12), (sx, y + 12), color=LINE)
        d.cells(  # a little larger than the weights: a signed score has four characters
            sx,
            y - 2,
            1,
            "plain",
            cell=cell + 4,
            colours=[signed(s, 1.5)],
            values=[f"{s:+.1f}".replace("-", "−")],
            size=9,
            stroke="#555555",
        )
        d.arrow((sx + cell + 4, y + 12), (420, y + 12), color=LINE)
        d.weights(500, y, [a], cell=cell, numbers=True, size=9)
        d.arrow((474, y + 12), (500, y + 12), color=LINE)
    d.box(420, ys[0] - 8, 54, ys[-1] - ys[0] + 40, "module", title="masked softmax", size=12, title_width=50)
    d.label(512, 52, "weights", 12)
    d.math(512, ys[-1] + 52, r"\alpha(\mathbf{q}, \mathbf{k}_i)", 13)
    d.math(sx + 12, ys[-1] + 52, r"a(\mathbf{q}, \mathbf{k}_i)", 13)
    # values and the weighted sum
    vx = 560
    d.label(vx + 32, 52, "values", 12, fill=ROLES["value"][2])
    for y, i in zip(ys, names, strict=True):
        d.text(542, y + 17, "×", 14, kind="m")
        d.cells(vx, y + 4, 4, "value", cell=16)
        d.math(vx + 70, y + 17, rf"\mathbf{{v}}_{i}", 14, anchor="start", fill=ROLES["value"][2])
    sx_, sy_ = 682, (ys[0] + ys[-1]) / 2 + 12  # the sum, right of the values: one line from each
    for y in ys:
        end = (sx_ - 13 * 0.9, sy_ + (y + 12 - sy_) * 0.25)
        d.arrow((vx + 96, y + 12), end, color=viridis(0.35), sw=1.3, head=6)
    d.op(sx_, sy_, "∑", r=13, size=16)
    d.arrow((sx_, sy_ + 13), (sx_, 256), color=ROLES["output"][1], sw=1.8)
    d.cells(sx_ - 24, 258, 4, "output", cell=12)
    d.label(sx_ - 6, 290, "output", 12, fill=ROLES["output"][2])
    # the mask's input: the valid lengths
    d.code(447, 30, "valid_lens", 11, fill=MUTED)
    d.arrow((447, 34), (447, ys[0] - 8), color=LINE, sw=1.3, head=6)
    # the steps, named as attnlib names them
    d.code(262, 316, "score", 12, fill=MUTED)
    d.code(560, 316, "attend", 12, fill=MUTED)
    d.brace(214, 300, 310, 300, depth=-5)
    d.brace(420, 300, 700, 300, depth=-5)


@diagram(720, 300)
def ch03_masked_softmax(d: Diagram) -> None:
    """One row of six scores whose last three keys are padding, and a row whose every key is
    padding, through masked_softmax; and what a fully masked row gives in three implementations."""
    cell = 28
    scores = [1.2, -0.3, 0.8, 0.5, 2.0, -1.0]
    valid = 3
    w = _softmax(scores[:valid]) + [0.0] * (len(scores) - valid)
    x_s, x_w = 116, 412
    d.label(x_s + 3 * cell, 28, "scores", 13, weight="bold")
    d.label(x_w + 3 * cell, 28, "weights", 13, weight="bold")
    # row 1: valid length 3
    y1 = 48
    d.label(20, y1 + 12, "valid length 3", 12, anchor="start")
    d.cells(
        x_s,
        y1,
        6,
        "plain",
        cell=cell,
        colours=[signed(s, 2) for s in scores],
        values=[f"{s:+.1f}".replace("-", "−") for s in scores],
        size=10,
        stroke="#555555",
        hatch=range(valid, 6),  # padding: grey, crossed out, its scores ignored
    )
    d.box(x_s + 6 * cell + 16, y1 - 2, 84, cell + 4, "module", code="masked_softmax", size=10)
    d.arrow((x_s + 6 * cell + 2, y1 + cell / 2), (x_s + 6 * cell + 14, y1 + cell / 2), color=LINE)
    d.arrow((x_s + 6 * cell + 102, y1 + cell / 2), (x_w - 2, y1 + cell / 2), color=LINE)
    d.cells(
        x_w,
        y1,
        6,
        "plain",
        cell=cell,
        colours=[viridis(a) for a in w[:valid]] + ["#ffffff"] * 3,
        values=[f"{a:.2f}".lstrip("0") for a in w[:valid]] + ["0"] * 3,
        size=10,
        stroke="#555555",
        hatch=None,
    )
    d.brace(x_s + valid * cell + 1, y1 + cell + 6, x_s + 6 * cell - 1, y1 + cell + 6, depth=-5)
    d.label(x_s + 4.5 * cell, y1 + cell + 22, "padding: ignored", 12, fill=MUTED)
    d.brace(x_s + 1, y1 + cell + 6, x_s + valid * cell - 1, y1 + cell + 6, depth=-5)
    d.label(x_s + 1.5 * cell, y1 + cell + 22, "valid keys", 12, fill=MUTED)
    d.label(x_w + 3 * cell, y1 + cell + 22, "the padding gets exactly 0", 12, fill=MUTED)
    # row 2: nothing valid, three answers
    y2 = 150
    d.label(20, y2 + 12, "valid length 0", 12, anchor="start")
    d.cells(x_s, y2, 6, "plain", cell=cell, hatch=range(6))
    d.label(x_s + 3 * cell, y2 + cell + 18, "every key is padding", 12, fill=MUTED)
    answers = [
        ("attnlib", ["0"] * 6, ["#ffffff"] * 6, "zeros: no weight at all"),
        ("d2l", [".17"] * 6, [viridis(1 / 6)] * 6, "fill −10⁶: uniform over the padding"),
        ("-inf", ["NaN"] * 6, ["#f2d0d0"] * 6, "fill −∞: 0/0 = NaN, which spreads"),
    ]
    for k, (who, vals, colours, note) in enumerate(answers):
        y = y2 - 14 + k * 42
        d.arrow((x_s + 6 * cell + 4, y2 + cell / 2), (x_w - 70, y + cell / 2), color=LINE, sw=1.2)
        d.code(x_w - 8, y + cell / 2 + 4, who, 11, anchor="end")
        d.cells(x_w, y, 6, "plain", cell=cell, colours=colours, values=vals, size=9, stroke="#555555")
        d.label(
            x_w + 6 * cell + 8,
            y + cell / 2 + 4,
            note,
            11,
            anchor="start",
            fill=MUTED,
            width=124,
            valign="middle",
        )


@diagram(720, 336)
def ch03_additive_vs_dot(d: Diagram) -> None:
    """Additive attention scores a pair with a one-hidden-layer network; scaled dot-product
    attention with one dot product. Shapes on the arrows, for b sequences, n queries, m keys."""
    # additive (left)
    d.label(196, 26, "additive attention", 14, weight="bold")
    d.code(196, 44, "AdditiveAttention.score", 11, fill=MUTED)
    d.math(42, 97, r"\mathbf{q}", 16, fill=ROLES["query"][2])
    d.cells(56, 85, 5, "query", cell=14)
    d.shape(91, 115, "(b, n, d_q)", 10)
    d.math(42, 177, r"\mathbf{k}", 16, fill=ROLES["key"][2])
    d.cells(56, 165, 3, "key", cell=14)
    d.shape(77, 195, "(b, m, d_k)", 10)
    d.box(150, 78, 56, 28, "module", tex=r"\mathbf{W}_q", size=12)
    d.box(150, 158, 56, 28, "module", tex=r"\mathbf{W}_k", size=12)
    d.arrow((128, 92), (150, 92), color=ROLES["query"][1])
    d.arrow((100, 172), (150, 172), color=ROLES["key"][1])
    d.op(262, 132, "+")
    d.arrow((206, 92), (262, 92), (262, 121), color=LINE)
    d.arrow((206, 172), (262, 172), (262, 143), color=LINE)
    d.shape(240, 84, "(b, n, h)", 10)
    d.shape(240, 188, "(b, m, h)", 10)
    d.arrow((273, 132), (316, 132), (316, 172), color=LINE)
    d.shape(324, 158, "(b, n, m, h)", 10, anchor="start")  # right of its arrow, clear of W_k's
    d.box(292, 172, 48, 26, "module", code="tanh", size=12)
    d.arrow((316, 198), (316, 228), color=LINE)
    d.box(292, 228, 48, 26, "module", tex=r"\mathbf{w}_v^\top", size=12)
    d.arrow((316, 254), (316, 284), color=LINE)
    d.shape(324, 274, "(b, n, m)", 10, anchor="start")
    d.label(316, 300, "score", 12)
    d.rect(282, 164, 68, 98, fill="none", stroke="#d55e00", sw=1.1, rx=6, dash="4 3")
    d.label(
        196,
        232,
        "h hidden features for every query-key pair: the cost of additive attention",
        11,
        fill="#a64200",
        width=128,
        valign="middle",
    )
    d.math(196, 324, r"\mathbf{w}_v^\top \tanh(\mathbf{W}_q \mathbf{q} + \mathbf{W}_k \mathbf{k})", 14)
    d.polyline([(400, 20), (400, 316)], stroke="#d9d9d9", sw=1)
    # scaled dot product (right)
    d.label(560, 26, "scaled dot-product attention", 14, weight="bold")
    d.code(560, 44, "DotProductAttention.score", 11, fill=MUTED)
    d.math(430, 97, r"\mathbf{q}", 16, fill=ROLES["query"][2])
    d.cells(444, 85, 4, "query", cell=14)
    d.shape(472, 115, "(b, n, d)", 10)
    d.math(430, 177, r"\mathbf{k}", 16, fill=ROLES["key"][2])
    d.cells(444, 165, 4, "key", cell=14)
    d.shape(472, 195, "(b, m, d)", 10)
    d.op(560, 132, "·")
    d.arrow((502, 92), (560, 92), (560, 121), color=ROLES["query"][1])
    d.arrow((502, 172), (560, 172), (560, 143), color=ROLES["key"][1])
    d.label(576, 100, "the same size d", 11, anchor="start", fill=MUTED)
    d.arrow((571, 132), (616, 132), (616, 172), color=LINE)
    d.shape(624, 156, "(b, n, m)", 10, anchor="start")
    d.box(588, 172, 56, 28, "module", tex=r"/\sqrt{d}", size=12)
    d.arrow((616, 200), (616, 284), color=LINE)
    d.shape(624, 274, "(b, n, m)", 10, anchor="start")
    d.label(616, 300, "score", 12)
    d.label(
        520,
        246,
        "no parameters: one matrix product scores every pair",
        11,
        fill=MUTED,
        width=130,
        valign="middle",
    )
    d.math(560, 324, r"\mathbf{q}^\top \mathbf{k} / \sqrt{d}", 14)


# Scaled dot-product attention in matrix form: three queries, four keys of size d = 2 (the last
# one padding, valid length 3), values of size 2. Small numbers, so that a reader can redo them.
QM = [[1.0, 0.5], [0.0, 1.0], [-1.0, 0.5]]
KM = [[1.0, 0.0], [0.5, 1.0], [-1.0, 1.0], [0.0, -1.0]]
VM = [[1.0, 0.0], [0.0, 1.0], [-1.0, 1.0], [2.0, 2.0]]
VALID = 3


def _grid(d: Diagram, x, y, rows, role="plain", colours=None, fmt=None, cell=30, hatch=(), size=10.5):
    """A matrix as rows of cells; ``colours`` and the numbers ``rows`` row by row; ``hatch``
    lists the masked columns (grey, crossed out)."""
    for i, row in enumerate(rows):
        d.cells(
            x,
            y + i * cell,
            len(row),
            role,
            cell=cell,
            colours=colours[i] if colours else None,
            values=[fmt(v) for v in row] if fmt else None,
            size=size,
            stroke="#555555" if colours else None,
            hatch=hatch,
            sw=0.9,
        )


def _num(v: float) -> str:
    return "0" if abs(v) < 0.05 else f"{v:.1f}".replace("-", "−")


def _weight(v: float) -> str:
    return "1" if v >= 0.995 else "0" if v == 0 else f"{v:.2f}".lstrip("0")


@diagram(720, 400)
def ch03_sdpa_matrix(d: Diagram) -> None:
    """Scaled dot-product attention for all queries at once: Q K^T, divided by sqrt(d), masked
    (valid length 3 of 4 keys), a softmax along each row, times V. Each product is drawn in the
    row-times-column layout: the right factor above the result, the left one beside it."""
    cell = 30
    n, m, dk = len(QM), len(KM), len(QM[0])
    S = [[sum(q[k] * key[k] for k in range(dk)) for key in KM] for q in QM]
    scaled = [[s / math.sqrt(dk) for s in row] for row in S]
    A = [_softmax(row[:VALID]) + [0.0] * (m - VALID) for row in scaled]
    O = [[sum(a[j] * VM[j][c] for j in range(m)) for c in range(len(VM[0]))] for a in A]  # noqa: E741
    y = 196  # the top of the row of n x ... results
    qx, sx, mx, ax, ox = 34, 104, 294, 484, 642
    # Q K^T: K^T above the scores, Q to their left
    _grid(d, qx, y, QM, "query", fmt=_num)
    _grid(d, sx, y - 12 - dk * cell, [[key[k] for key in KM] for k in range(dk)], "key", fmt=_num)
    _grid(d, sx, y, S, colours=[[signed(v, 2.0) for v in row] for row in S], fmt=_num)
    d.math(sx - 8, y - 12 - dk * cell / 2 + 5, r"\mathbf{K}^\top", 16, anchor="end", fill=ROLES["key"][2])
    # one query row times one key column gives one score
    d.rect(qx - 1.5, y - 1.5, dk * cell + 3, cell + 3, fill="none", stroke="#1a1a1a", sw=2, rx=2)
    d.rect(sx - 1.5, y - 13.5 - dk * cell, cell + 3, dk * cell + 3, fill="none", stroke="#1a1a1a", sw=2, rx=2)
    d.rect(sx - 1.5, y - 1.5, cell + 3, cell + 3, fill="none", stroke="#1a1a1a", sw=2, rx=2)
    qk = r"\mathbf{q}_1^\top \mathbf{k}_1"
    d.math(sx + m * cell + 8, y - 12 - dk * cell / 2 + 5, qk, 13, anchor="start")
    # divided by sqrt(d), masked
    d.arrow((sx + m * cell + 6, y + n * cell / 2), (mx - 6, y + n * cell / 2), color=LINE)
    d.math((sx + m * cell + mx) / 2, y + n * cell / 2 - 8, r"/\sqrt{d}", 13)
    d.label((sx + m * cell + mx) / 2, y + n * cell / 2 + 22, "mask", 12, fill=MUTED)
    _grid(
        d, mx, y, scaled, colours=[[signed(v, 2.0) for v in row] for row in scaled], fmt=_num,
        hatch=range(VALID, m),
    )
    # softmax along each row
    d.arrow((mx + m * cell + 6, y + n * cell / 2), (ax - 6, y + n * cell / 2), color=LINE)
    d.math((mx + m * cell + ax) / 2, y + n * cell / 2 - 8, r"\mathrm{softmax}", 12)
    d.label((mx + m * cell + ax) / 2, y + n * cell / 2 + 22, "each row", 12, fill=MUTED)
    _grid(
        d, ax, y, A,
        colours=[[viridis(a) if j < VALID else "#ffffff" for j, a in enumerate(row)] for row in A],
        fmt=_weight,
    )
    # times V: V above the output, the weights to its left
    _grid(d, ox, y - 12 - m * cell, VM, "value", fmt=_num)
    d.math(ox - 8, y - 12 - m * cell / 2 + 5, r"\mathbf{V}", 16, anchor="end", fill=ROLES["value"][2])
    d.arrow((ax + m * cell + 4, y + n * cell / 2), (ox - 4, y + n * cell / 2), color=LINE, head=6)
    _grid(d, ox, y, O, "output", fmt=_num)
    # what each matrix is, and its shape (b: the batch, as attnlib's tensors have)
    under = y + n * cell + 24
    for x, w, tex, shape, role in (
        (qx, dk, r"\mathbf{Q}", "(b, n, d)", "query"),
        (sx, m, r"\mathbf{Q}\mathbf{K}^\top", "(b, n, m)", None),
        (mx, m, r"\mathbf{Q}\mathbf{K}^\top / \sqrt{d}", "(b, n, m)", None),
        (ax, m, r"\mathbf{A}", "(b, n, m)", None),
        (ox, len(VM[0]), r"\mathbf{A}\mathbf{V}", "(b, n, d_v)", "output"),
    ):
        d.math(x + w * cell / 2, under, tex, 14, fill=ROLES[role][2] if role else "#1a1a1a")
        d.shape(x + w * cell / 2, under + 18, shape, 11)
    d.shape(sx + m * cell + 8, y - 12 - dk * cell / 2 + 22, "(b, d, m)", 11, anchor="start")
    d.shape(ox - 8, y - 12 - m * cell / 2 + 24, "(b, m, d_v)", 11, anchor="end")
    d.label(mx + m * cell / 2, under + 44, "scores", 12, fill=MUTED)
    d.label(ax + m * cell / 2, under + 44, "attention weights", 12, fill=MUTED)
    d.label(ox + cell, under + 44, "output", 12, fill=ROLES["output"][2])
    d.label(24, 28, "scaled dot-product attention, all queries at once", 14, anchor="start", weight="bold")
    d.math(24, 56, r"\mathrm{softmax}(\mathbf{Q}\mathbf{K}^\top / \sqrt{d})\, \mathbf{V}", 15, anchor="start")
    d.label(
        24,
        382,
        "n = 3 queries, m = 4 keys (the last one padding: valid length 3), d = 2; "
        "the outlined row and column give the outlined score",
        11,
        anchor="start",
        fill=MUTED,
    )
