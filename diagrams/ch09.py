"""Chapter 9: online softmax, shared key/value heads, sliding windows, linear attention."""

import math

from . import diagram
from .draw import INK, LINE, MUTED, ROLES, Diagram, signed

Q, K, V, O = ROLES["query"], ROLES["key"], ROLES["value"], ROLES["output"]  # noqa: E741
SCORES = [1.0, 0.2, 2.5, -0.3, 0.4, 1.8]  # one query's scores, read two at a time


@diagram(720, 330)
def ch09_online_softmax(d: Diagram) -> None:
    """One query's scores read in blocks of two: a running maximum m and sum l (and the output
    accumulator) are rescaled whenever the maximum grows; the full row is never stored."""
    cell = 30
    x0, y_s = 120, 70
    d.label(24, y_s + 20, "scores", 12, anchor="start")
    d.cells(
        x0,
        y_s,
        6,
        "plain",
        cell=cell,
        colours=[signed(s, 2.5) for s in SCORES],
        values=[f"{s:+.1f}".replace("-", "−") for s in SCORES],
        size=10,
        stroke="#555555",
        gap=0,
    )
    m, ell = -math.inf, 0.0
    states = []
    for b in range(3):
        block = SCORES[2 * b : 2 * b + 2]
        new_m = max(m, *block)
        ell = (ell * math.exp(m - new_m) if ell else 0.0) + sum(math.exp(s - new_m) for s in block)
        states.append((new_m, ell, m != -math.inf and new_m > m))
        m = new_m
    for b, (mb, lb, rescaled) in enumerate(states):
        bx = x0 + b * 2 * cell
        d.brace(bx + 2, y_s - 6, bx + 2 * cell - 2, y_s - 6, depth=5)
        d.label(bx + cell, y_s - 14, f"block {b + 1}", 11, fill=MUTED)
        # the state after this block
        sx = 96 + b * 200
        sy = 170
        d.arrow((bx + cell, y_s + cell + 2), (sx + 60, sy - 2), color=LINE, sw=1.3)
        d.rect(sx, sy, 120, 64, fill="#f7f7f7", stroke=INK, sw=1.3, rx=6)
        d.math(sx + 12, sy + 22, rf"m = {mb:.2f}", 13, anchor="start")
        d.math(sx + 12, sy + 42, rf"\ell = {lb:.3f}", 13, anchor="start")
        d.math(sx + 12, sy + 58, r"\mathbf{o}", 12, anchor="start", fill=O[2])
        d.cells(sx + 30, sy + 48, 4, "output", cell=10)
        if b:
            px = sx - 200 + 120
            d.arrow((px, sy + 32), (sx - 2, sy + 32), color=INK, sw=1.4)
            note = r"\times e^{m - m'}" if rescaled else r"\times 1"
            d.math((px + sx) / 2, sy + 24, note, 12)
        d.label(
            sx + 60,
            sy + 84,
            "rescaled: a larger maximum"
            if rescaled
            else ("first block" if b == 0 else "same maximum: no rescaling"),
            11,
            fill=MUTED,
        )
    d.label(
        360,
        296,
        "the weights are exp(s − m) / ℓ with the final m and ℓ: exactly the softmax of the whole row",
        11,
        fill=MUTED,
    )
    d.code(24, 316, "blockwise_attention", 11, anchor="start", fill=MUTED)
    d.label(160, 316, "reads keys and values block by block and never builds the n × n matrix", 11,
            anchor="start", fill=MUTED)
    d.math(x0 + 6 * cell + 24, y_s + 20, r"\mathbf{q}^\top \mathbf{k}_j / \sqrt{d}", 13, anchor="start")


@diagram(720, 250)
def ch09_gqa(d: Diagram) -> None:
    """Eight query heads share key/value heads: eight (multi-head), two (grouped-query) or one
    (multi-query)."""
    panels = [("multi-head", 8), ("grouped-query", 2), ("multi-query", 1)]
    for p, (title, g) in enumerate(panels):
        x0 = 12 + p * 236
        d.rect(x0, 10, 224, 230, fill="#fafafa", stroke="#d0d0d0", sw=1, rx=8)
        d.label(x0 + 112, 34, title, 14, weight="bold")
        qs = [x0 + 28 + i * 24 for i in range(8)]
        span = 24 * 7
        ks = [x0 + 28 + (span / (g - 1) * j if g > 1 else span / 2) for j in range(g)] if g < 8 else qs
        if 1 < g < 8:
            ks = [x0 + 28 + span * (2 * j + 1) / (2 * g) for j in range(g)]
        for i, qx in enumerate(qs):
            kx = ks[i * g // 8]
            d.polyline([(qx, 78), (kx, 146)], stroke=LINE, sw=1.1)
            d.rect(qx - 9, 60, 18, 18, fill=Q[0], stroke=Q[1], sw=1.2, rx=2)
        for kx in ks:
            d.rect(kx - 9, 146, 18, 9, fill=K[0], stroke=K[1], sw=1.2, rx=1)
            d.rect(kx - 9, 155, 18, 9, fill=V[0], stroke=V[1], sw=1.2, rx=1)
        d.label(x0 + 112, 56 - 6, "8 query heads", 11, fill=Q[2])
        d.label(x0 + 112, 184, f"{g} key/value head" + ("s" if g > 1 else ""), 11, fill=K[2])
        d.code(x0 + 112, 206, f"num_kv_heads={g}", 11, fill=MUTED)
        d.label(x0 + 112, 226, f"the cache holds {g} head" + ("s" if g > 1 else ""), 11, fill=MUTED)


@diagram(720, 300)
def ch09_sliding_window(d: Diagram) -> None:
    """Causal sliding windows of w = 3 positions, three layers deep: the last position's output
    depends on the 7 positions before and at it, 3 (w - 1) + 1."""
    n, w = 12, 3
    xs = [104 + i * 50 for i in range(n)]
    ys = [236, 172, 108, 44]  # the input, then layers 1, 2, 3
    cone = [set() for _ in ys]
    cone[-1] = {n - 1}
    for level in range(len(ys) - 1, 0, -1):
        cone[level - 1] = {p for q in cone[level] for p in range(q - w + 1, q + 1) if p >= 0}
    for level in range(1, len(ys)):
        for q in sorted(cone[level]):
            for p in range(q - w + 1, q + 1):
                d.polyline([(xs[p], ys[level - 1] - 7), (xs[q], ys[level] + 7)], stroke=INK, sw=1.2)
    for level, y in enumerate(ys):
        for i, x in enumerate(xs):
            inside = i in cone[level]
            top = level == len(ys) - 1 and inside
            fill = O[0] if top else ("#bdbdbd" if inside else "#ffffff")
            stroke = O[1] if top else (INK if inside else "#b3b3b3")
            d.circle(x, y, 7, fill=fill, stroke=stroke, sw=1.2)
        name = "input" if level == 0 else f"layer {level}"
        d.label(20, y + 4, name, 11, anchor="start", fill=MUTED)
    d.label(
        360,
        276,
        "window w = 3: each layer reaches w − 1 = 2 positions further back; after 3 layers, 7 positions",
        11,
        fill=MUTED,
    )
    d.code(360, 294, "sliding_window_mask", 11, fill=MUTED)


@diagram(720, 330)
def ch09_linear_rnn(d: Diagram) -> None:
    """Linear attention as a recurrence: a fixed-size state S_t (and z_t) absorbs each key-value
    pair; softmax attention's cache instead grows by one key and one value per token."""
    xs = [96 + 120 * t for t in range(5)]
    d.label(24, 30, "linear attention: a state of fixed size", 13, anchor="start", weight="bold")
    for t, x in enumerate(xs):
        # the state: a d x d_v grid, the same size at every step
        for i in range(4):
            for j in range(4):
                d.rect(
                    x - 24 + j * 12,
                    70 + i * 12,
                    12,
                    12,
                    fill="#efe9d6",
                    stroke=ROLES["state"][1],
                    sw=0.6,
                    rx=0,
                )
        d.math(x, 62, rf"\mathbf{{S}}_{t + 1}", 13)
        if t:
            d.arrow((xs[t - 1] + 26, 94), (x - 28, 94), color=INK, sw=1.4)
        # what the step adds, and what it reads
        d.math(x, 150, rf"\phi(\mathbf{{k}}_{t + 1})\mathbf{{v}}_{t + 1}^\top", 12, fill=K[2])
        d.arrow((x, 136), (x, 122), color=K[1], sw=1.2, head=6)
    d.math(
        360,
        186,
        r"\mathbf{S}_t = \mathbf{S}_{t-1} + \phi(\mathbf{k}_t)\mathbf{v}_t^\top,\quad "
        r"\mathbf{y}_t = \phi(\mathbf{q}_t)^\top \mathbf{S}_t \,/\, \phi(\mathbf{q}_t)^\top \mathbf{z}_t",
        13,
    )
    d.code(700, 30, "linear_attention_recurrent", 11, anchor="end", fill=MUTED)
    # the cache of softmax attention, for contrast
    d.label(24, 224, "softmax attention: a cache that grows", 13, anchor="start", weight="bold")
    for t, x in enumerate(xs):
        for i in range(t + 1):
            d.rect(x - 24, 300 - (i + 1) * 12, 24, 12, fill=K[0], stroke=K[1], sw=0.6, rx=0)
            d.rect(x, 300 - (i + 1) * 12, 24, 12, fill=V[0], stroke=V[1], sw=0.6, rx=0)
        d.text(x, 318, f"t = {t + 1}", 11, fill=MUTED, kind="m")
    d.code(700, 224, "KVCache", 11, anchor="end", fill=MUTED)
