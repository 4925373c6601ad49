"""Chapter 2: Nadaraya-Watson kernel regression as attention pooling."""

import math

from . import diagram
from .draw import INK, LINE, MUTED, ROLES, Diagram, viridis

# Ten training pairs of the chapter's function f(x) = 2 sin x + x^0.8, with fixed small noise,
# rounded to the one decimal the diagram prints, so that a reader's arithmetic matches it.
XS = [0.3, 0.8, 1.2, 1.7, 2.1, 2.6, 3.0, 3.5, 4.1, 4.6]
NOISE = [0.3, -0.4, 0.2, 0.35, -0.3, 0.25, -0.2, 0.3, -0.35, 0.2]
YS = [round(2 * math.sin(x) + x**0.8 + e, 1) for x, e in zip(XS, NOISE, strict=True)]
QUERY, WIDTH = 2.4, 0.5


def _weights(q: float, h: float) -> list[float]:
    scores = [-0.5 * ((q - x) / h) ** 2 for x in XS]
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    return [v / sum(e) for v in e]


@diagram(720, 340)
def ch02_nw_pooling(d: Diagram) -> None:
    """Left: the data, a query x, the Gaussian kernel around it and the prediction. Right: the
    same as attention pooling, query, keys x_i, values y_i, weights."""
    w = _weights(QUERY, WIDTH)
    pred = sum(a * y for a, y in zip(w, YS, strict=True))
    # axes
    x0, y0, sx, sy = 50, 250, 64, 40  # origin (x = 0, y = 0) and px per unit
    X = lambda v: x0 + v * sx  # noqa: E731
    Y = lambda v: y0 - v * sy  # noqa: E731
    d.arrow((x0, y0), (X(5.25), y0), color=LINE, sw=1.2, head=6)
    d.arrow((x0, y0 + 4), (x0, Y(4.6)), color=LINE, sw=1.2, head=6)
    for t in range(6):
        d.polyline([(X(t), y0), (X(t), y0 + 4)], stroke=LINE, sw=1)
        d.text(X(t), y0 + 17, str(t), 11, fill=MUTED)
    d.math(X(5.25) + 4, y0 + 5, "x", 15, anchor="start")
    d.math(x0 - 8, Y(4.6) + 6, "y", 15, anchor="end")
    # the true function, thin and grey
    pts = [(X(t / 20), Y(2 * math.sin(t / 20) + (t / 20) ** 0.8)) for t in range(1, 101)]
    d.polyline(pts, stroke="#b3b3b3", sw=1.4, dash="5 3")
    # the Gaussian kernel around the query, drawn along the x axis
    kern = [(X(QUERY + u / 20), y0 - 46 * math.exp(-0.5 * ((u / 20) / WIDTH) ** 2)) for u in range(-40, 41)]
    d.polyline(kern, stroke=ROLES["query"][1], sw=1.6, fill=ROLES["query"][0])
    d.polyline([(X(QUERY), y0), (X(QUERY), Y(4.4))], stroke=ROLES["query"][1], sw=1.4, dash="4 3")
    d.math(X(QUERY), y0 + 34, "x", 15, fill=ROLES["query"][2])
    d.label(X(QUERY), y0 + 52, "query", 12, fill=ROLES["query"][2])
    # the training pairs, coloured by their weight for this query on the right panel's 0-1 scale
    top = max(w)
    for x, y, a in zip(XS, YS, w, strict=True):
        d.circle(X(x), Y(y), 4 + 5 * a / top, fill=viridis(a), stroke=INK, sw=0.8)
    # the prediction
    px, py = X(QUERY), Y(pred)
    d.polygon(
        [(px, py - 9), (px + 9, py), (px, py + 9), (px - 9, py)],
        fill=ROLES["output"][0],
        stroke=ROLES["output"][1],
        sw=2,
    )
    d.math(px - 6, py + 28, r"\hat{f}(x)", 14, anchor="end", fill=ROLES["output"][2])
    d.math(X(4.75), Y(2.55), r"f(x)", 13, fill=MUTED)  # the dashed curve: the truth
    d.label(X(2.5), 24, "data, a query and its kernel", 13, weight="bold")
    # right: the same as attention pooling
    cell, gx = 26, 418
    mid = gx + 5 * cell
    d.label(mid, 24, "the same as attention pooling", 13, weight="bold")
    rows = [
        (62, "keys", "key", [f"{x:.1f}" for x in XS], r"x_i"),
        (170, "values", "value", [f"{y:.1f}" for y in YS], r"y_i"),
    ]
    for y, name, role, vals, sym in rows:
        d.cells(gx, y, 10, role, cell=cell, values=vals, size=9)
        d.math(gx - 6, y + 18, sym, 14, anchor="end", fill=ROLES[role][2])
        d.label(mid, y - 8, name, 12, fill=ROLES[role][2])
    d.weights(gx, 116, w, cell=cell, numbers=True, size=9)
    d.math(gx - 6, 134, r"\alpha", 14, anchor="end")
    d.math(mid, 108, r"\alpha(x, x_i) \propto \exp(-(x - x_i)^2 / 2h^2)", 13)
    d.op(mid, 250, "∑", r=14, size=17)
    for i in range(10):
        cx = gx + cell * (i + 0.5)
        if w[i] > 0.02:
            d.arrow((cx, 198), (mid + (cx - mid) * 0.12, 237), color=viridis(0.35), sw=0.6 + 5 * w[i])
    d.arrow((mid, 264), (mid, 288), color=ROLES["output"][1], sw=1.8)
    fill, stroke, ink = ROLES["output"]
    d.rect(mid - 30, 290, 60, 22, fill=fill, stroke=stroke, sw=1.4, rx=3)
    d.text(mid, 306, f"{pred:.1f}", 12)  # the values have one decimal, so has their average
    d.math(mid - 40, 306, r"\hat{f}(x) = \sum_i \alpha(x, x_i)\, y_i", 14, anchor="end", fill=ink)
    d.label(X(2.5), 326, f"query x = {QUERY}, width h = {WIDTH}", 12, fill=MUTED)
    d.viridis_key(622, 292, w=66)


@diagram(720, 310)
def ch02_leave_one_out(d: Diagram) -> None:
    """The weight matrices of training queries over training keys at one tiny width: with every
    point among its own keys all weight sits on the diagonal (each point copies its own label);
    leave-one-out removes the diagonal, and the weight moves to the nearest other point."""
    n, cell = 8, 19
    xs = [0.3, 0.9, 1.3, 2.0, 2.4, 3.1, 3.7, 4.4]

    def row(j: int, h: float, own: bool) -> list[float]:
        scores = [(-0.5 * ((xs[j] - xs[i]) / h) ** 2 if (own or i != j) else None) for i in range(n)]
        top = max(s for s in scores if s is not None)
        e = [0.0 if s is None else math.exp(s - top) for s in scores]
        return [v / sum(e) for v in e]

    panels = [
        (
            40,
            "every point among its own keys",
            0.05,
            True,
            "width → 0: all weight on itself; training loss 0",
        ),
        (
            390,
            "leave-one-out",
            0.05,
            False,
            "its own key removed: each point copies its nearest neighbour's label; loss above 0",
        ),
    ]
    for x0, title, h, own, note in panels:
        M = [row(j, h, own) for j in range(n)]
        top = 36
        d.label(x0 + 150, top, title, 14, weight="bold")
        gx, gy = x0 + 70, top + 30
        d.matrix(gx, gy, M, cell=cell, limit=1.0, masked=None if own else {(j, j) for j in range(n)})
        d.label(gx + n * cell / 2, gy + n * cell + 18, "keys: training inputs", 12, fill=ROLES["key"][2])
        d.label(
            gx - 10,
            gy + n * cell / 2,
            "queries: the training inputs",
            12,
            anchor="end",
            fill=ROLES["query"][2],
            width=80,
            valign="middle",
        )
        d.math(gx + n * cell + 14, gy + 14, rf"h = {h}", 13, anchor="start")
        d.label(x0 + 150, gy + n * cell + 44, note, 12, fill=MUTED, width=300)
    d.viridis_key(315, 272, w=90)
