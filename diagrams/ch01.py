"""Chapter 1: attention cues, queries, keys and values."""

from . import diagram
from .draw import INK, LINE, MUTED, ROLES, Diagram, viridis

WEIGHTS = [0.10, 0.62, 0.23, 0.05]  # one query's weights over four keys (they sum to 1)
#: ch01_pooling's drawn weights: pairs 1, 2, 3 and m; the pairs in "…" hold the rest of the 1
POOLING_WEIGHTS = [0.10, 0.55, 0.20, 0.05]
RED = "#a8322d"  # "no gradient"


@diagram(720, 372)
def ch01_pooling(d: Diagram) -> None:
    """Attention pooling: the query meets each key, the softmax of the scores weights the paired
    values, and their weighted sum is the output."""
    cols = [215, 310, 405, 540]  # key-value pairs 1, 2, 3 and m
    names = ["1", "2", "3", "m"]
    y_key, y_score, y_soft, y_w, y_val, y_sum = 50, 118, 148, 192, 250, 324
    for x, i in zip(cols, names, strict=True):  # each pair: key on top, value below, one frame
        d.rect(x - 44, 16, 88, 282, fill="none", stroke="#c8c8c8", sw=1, rx=8, dash="3 3")
        d.math(x, y_key - 10, rf"\mathbf{{k}}_{i}", 16, fill=ROLES["key"][2])
        d.cells(x - 32, y_key, 4, "key")
        d.arrow((x, y_key + 17), (x, y_score - 10), color=ROLES["key"][1])
        d.op(x, y_score, "a", r=10, size=14)
        d.arrow((x, y_score + 10), (x, y_soft), color=LINE)
        d.arrow((x, y_soft + 24), (x, y_w - 1), color=LINE)
        d.weights(x - 13, y_w, [POOLING_WEIGHTS[names.index(i)]], cell=26, numbers=True, size=10)
        d.text(x, y_w + 44, "×", 16, fill=INK, kind="m")
        d.cells(x - 32, y_val, 4, "value")
        d.math(x, y_val + 36, rf"\mathbf{{v}}_{i}", 16, fill=ROLES["value"][2])
    for y in (y_key + 13, y_w + 18, y_val + 13):
        d.text(472, y, "…", 18, fill=MUTED)
    # the query (left) runs past every key
    d.math(56, y_score - 16, r"\mathbf{q}", 18, fill=ROLES["query"][2])
    d.cells(24, y_score - 8, 4, "query")
    start = 90
    for x in cols:  # from circle to circle, never through the score's letter
        d.arrow((start, y_score), (x - 11, y_score), color=ROLES["query"][1], sw=1.8)
        start = x + 10
    d.box(cols[0] - 40, y_soft, cols[-1] - cols[0] + 80, 24, "module", title="softmax over the keys", size=13)
    # left: what each row is
    d.label(24, y_key + 2, "keys", 13, anchor="start", fill=ROLES["key"][2])
    d.label(24, y_key + 18, "(non-volitional cues)", 12, anchor="start", fill=MUTED)
    d.label(24, y_score + 26, "query", 13, anchor="start", fill=ROLES["query"][2])
    d.label(24, y_score + 42, "(volitional cue)", 12, anchor="start", fill=MUTED)
    d.label(24, y_val + 4, "values", 13, anchor="start", fill=ROLES["value"][2])
    d.label(24, y_val + 20, "(sensory inputs)", 12, anchor="start", fill=MUTED)
    d.viridis_key(36, y_w + 4, w=70)
    # right: the two quantities per pair
    d.math(598, y_score + 5, r"a(\mathbf{q}, \mathbf{k}_i)", 14, anchor="start")
    d.label(598, y_score + 22, "score", 12, anchor="start", fill=MUTED)
    d.math(598, y_w + 12, r"\alpha(\mathbf{q}, \mathbf{k}_i)", 14, anchor="start")
    d.label(598, y_w + 29, "attention weight", 12, anchor="start", fill=MUTED)
    d.math(598, y_soft + 17, r"\mathrm{softmax}(a / T)", 13, anchor="start")
    rest = f"{1 - sum(POOLING_WEIGHTS):.2f}".lstrip("0")
    d.label(598, y_w + 50, f"the pairs in … hold the other {rest}", 11, anchor="start", fill=MUTED, width=112)
    # the weighted values, summed
    sx = 360
    for x, w in zip(cols, POOLING_WEIGHTS, strict=True):
        d.arrow((x, y_val + 42), (sx + (x - sx) * 0.12, y_sum - 14), color=viridis(0.35), sw=0.8 + 6 * w)
    d.op(sx, y_sum, "∑", r=14, size=17)
    d.arrow((sx + 14, y_sum), (410, y_sum), color=ROLES["output"][1], sw=1.8)
    d.cells(414, y_sum - 8, 4, "output")
    d.math(
        490,
        y_sum + 6,
        r"\sum_i \alpha(\mathbf{q}, \mathbf{k}_i)\, \mathbf{v}_i",
        16,
        anchor="start",
        fill=ROLES["output"][2],
    )
    d.label(446, y_sum + 34, "attention pooling: a weighted average of the values", 12, fill=MUTED)


def _gradient(d: Diagram, x: float, y0: float, y1: float, flows: bool, x_back: float) -> None:
    """A dashed backward arrow from the output's left edge (x, y0) up the margin x_back to the
    weights' row (y1)."""
    colour = ROLES["value"][2] if flows else RED
    d.arrow((x, y0), (x_back, y0), (x_back, y1), (x_back + 12, y1), color=colour, sw=1.4, dash="4 3", head=6)
    if not flows:  # the cross breaks the line: the panel's colour behind it
        d.rect(x_back - 8, (y0 + y1) / 2 - 9, 16, 19, fill="#fafafa", stroke="none", sw=0, rx=2)
        d.text(x_back, (y0 + y1) / 2 + 6, "✗", 17, fill=RED)


@diagram(720, 318)
def ch01_soft_hard(d: Diagram) -> None:
    """Soft attention averages the values with the weights; hard attention takes one value, by
    argmax or by sampling, and passes no gradient to the weights."""
    values = ["4.0", "30", "0.02", "500"]
    panels = [
        ("soft attention", r"\sum_i \alpha_i \mathbf{v}_i", "44.0", None, "gradient reaches every weight"),
        (
            "hard attention: argmax",
            r"\mathbf{v}_{i*},\ i* = \arg\max_i \alpha_i",
            "30",
            1,
            "no gradient to the weights",
        ),
        (
            "hard attention: a sample",
            r"\mathbf{v}_z,\ z \sim \alpha",
            "0.02",
            2,
            "no gradient; on average the soft output",
        ),
    ]
    width = 226
    for p, (title, formula, result, pick, note) in enumerate(panels):
        x0 = 12 + p * (width + 8)
        cx = x0 + width / 2 + 8
        d.rect(x0, 10, width, 298, fill="#fafafa", stroke="#d0d0d0", sw=1, rx=8)
        d.label(x0 + width / 2, 34, title, 14, weight="bold")
        cell = 34
        left = cx - 2 * cell
        d.math(left - 8, 82, r"\alpha", 15, anchor="end")
        d.weights(left, 60, WEIGHTS, cell=cell, numbers=True, size=11)
        d.math(left - 8, 148, r"\mathbf{v}", 15, anchor="end", fill=ROLES["value"][2])
        d.cells(left, 126, 4, "value", cell=cell, values=values, size=11)
        out_y = 214
        for i, w in enumerate(WEIGHTS):
            x = left + cell * (i + 0.5)
            if pick is None:
                d.arrow((x, 162), (cx + (x - cx) * 0.15, out_y - 2), color=viridis(0.35), sw=0.8 + 6 * w)
            elif i == pick:
                d.arrow((x, 162), (cx, out_y - 2), color=viridis(0.35), sw=3.2)
        fill, stroke, ink = ROLES["output"]
        d.rect(cx - 34, out_y, 68, 24, fill=fill, stroke=stroke, sw=1.4, rx=3)
        d.text(cx, out_y + 17, result, 13, fill=INK)
        d.math(cx, out_y + 46, formula, 14, fill=ink)
        _gradient(d, cx - 36, out_y + 12, 77, pick is None, x0 + 14)
        d.label(
            x0 + width / 2, 282, note, 12, fill=ROLES["value"][2] if pick is None else RED, width=width - 16
        )
