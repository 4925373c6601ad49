"""Chapter 9: online softmax, shared key/value heads, sliding windows, linear attention."""

import math
from fractions import Fraction

from . import diagram
from .draw import INK, LINE, MASK_SLASH, MUTED, ROLES, Diagram, _f, signed

Q, K, V, O = ROLES["query"], ROLES["key"], ROLES["value"], ROLES["output"]  # noqa: E741
SCORES = [2.0, 1.0, 5.0, 3.0, 9.0, 0.5]  # the chapter's row of six scores, read two at a time


def _online_states(scores: list[float], block: int = 2) -> list[tuple[float, float]]:
    """(running maximum m, running sum l) after each block, as the chapter's loop computes them."""
    m, ell, states = -math.inf, 0.0, []
    for b in range(0, len(scores), block):
        chunk = scores[b : b + block]
        new_m = max(m, *chunk)
        ell = ell * math.exp(m - new_m) + sum(math.exp(x - new_m) for x in chunk)
        m = new_m
        states.append((m, ell))
    return states


@diagram(720, 346)
def ch09_online_softmax(d: Diagram) -> None:
    """The chapter's row of six scores read in blocks of two: the running maximum m and sum l
    after each block, and attention's third running quantity, the weighted sum of values o; l and
    o are rescaled by e^(m - m') whenever the maximum grows, and the full row is never stored."""
    cell = 34
    x0, y_s = 190, 62
    d.label(x0 - 14, y_s + 22, "scores", 12, anchor="end")
    d.math(x0 - 14, y_s + 44, r"s_j", 13, anchor="end")
    d.cells(
        x0,
        y_s,
        6,
        "plain",
        cell=cell,
        colours=[signed(x, 9.0) for x in SCORES],
        values=[f"{x:.1f}" for x in SCORES],
        size=11,
        stroke="#555555",
        gap=0,
    )
    states = _online_states(SCORES)
    for b, (mb, lb) in enumerate(states):
        bx = x0 + b * 2 * cell
        d.brace(bx + 2, y_s - 6, bx + 2 * cell - 2, y_s - 6, depth=5)
        d.label(bx + cell, y_s - 14, f"block {b + 1}", 11, fill=MUTED)
        sx, sy = 60 + b * 220, 160  # the state after this block
        d.arrow((bx + cell, y_s + cell + 2), (sx + 65, sy - 2), color=LINE, sw=1.3)
        d.rect(sx, sy, 130, 80, fill="#f7f7f7", stroke=INK, sw=1.3, rx=6)
        d.math(sx + 14, sy + 23, rf"m = {mb:.1f}", 14, anchor="start")
        d.math(sx + 14, sy + 45, rf"\ell = {lb:.4f}", 14, anchor="start")
        # the weighted sum of the values seen so far, against the current maximum
        acc = r"\mathbf{o} = \sum_j e^{s_j - m} \mathbf{v}_j"
        d.math(sx + 10, sy + 68, acc, 13, anchor="start", fill=O[2])
        if b:
            px = sx - 220 + 130
            d.arrow((px, sy + 28), (sx - 2, sy + 28), color=INK, sw=1.4)
            old = states[b - 1][0]
            d.math((px + sx) / 2, sy + 18, r"\times e^{m - m'}", 12)
            d.math((px + sx) / 2, sy + 48, rf"= e^{{{old - mb:.0f}}}".replace("-", "−"), 12)
            d.arrow((px, sy + 62), (sx - 2, sy + 62), color=O[1], sw=1.4)
            d.math((px + sx) / 2, sy + 78, r"\ell, \mathbf{o}", 12)
        note = "first block" if b == 0 else "a larger maximum: ℓ and o are rescaled"
        d.label(sx + 65, sy + 100, note, 11, fill=MUTED, width=150)
    d.math(160, 310, r"\exp(s_j - m) / \ell", 13, anchor="end")
    d.label(
        168,
        310,
        "with the final m and ℓ: exactly the softmax of the whole row",
        11,
        anchor="start",
        fill=MUTED,
    )
    d.math(160, 332, r"\mathbf{o} / \ell", 13, anchor="end", fill=O[2])
    d.label(168, 332, "after the last block: the attention output", 11, anchor="start", fill=MUTED)


@diagram(720, 272)
def ch09_gqa(d: Diagram) -> None:
    """Eight query heads share key/value heads: eight (multi-head), two (grouped-query) or one
    (multi-query); the key/value cache shrinks in proportion."""
    panels = [("multi-head", 8), ("grouped-query", 2), ("multi-query", 1)]
    for p, (title, g) in enumerate(panels):
        x0 = 12 + p * 236
        d.rect(x0, 10, 224, 252, fill="#fafafa", stroke="#d0d0d0", sw=1, rx=8)
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
        ratio = Fraction(g, panels[0][1])  # the key/value cache against multi-head's
        d.label(x0 + 112, 248, f"cache size × {ratio}", 12, weight="bold")


def _window_grid(d: Diagram, x: float, y: float, n: int, w: int, block: int | None, cell: float) -> None:
    """The n x n scores of a causal window of w keys: in the window (used), computed and masked,
    or (with query blocks of ``block``) never computed, as sliding_window_attention skips them."""
    used, masked_fill, skipped = "#fde725", ROLES["mask"][0], "#ffffff"  # viridis at 1: attends
    cells, crosses = [], []
    for i in range(n):
        lo, hi = 0, n  # the keys computed for query i
        if block:
            start = i - i % block
            lo, hi = max(0, start - w + 1), min(n, start + block)
        for j in range(n):
            inside = i - w < j <= i
            fill = used if inside else (masked_fill if lo <= j < hi else skipped)
            cx, cy = x + j * cell, y + i * cell
            size = _f(cell)
            cells.append(f'<rect x="{_f(cx)}" y="{_f(cy)}" width="{size}" height="{size}" fill="{fill}"/>')
            if fill == masked_fill:  # computed, then masked: crossed out
                crosses.append(f"M{_f(cx + 3)} {_f(cy + cell - 3)}L{_f(cx + cell - 3)} {_f(cy + 3)}")
    d.add('<g stroke="#bfbfbf" stroke-width="0.6">' + "".join(cells) + "</g>")
    if crosses:
        d.path("".join(crosses), stroke=MASK_SLASH, sw=0.9)
    if block:
        for start in range(0, n, block):
            lo, hi = max(0, start - w + 1), min(n, start + block)
            d.rect(x + lo * cell, y + start * cell, (hi - lo) * cell, block * cell, fill="none", stroke=INK,
                   sw=1.6, rx=0)
            d.label(x - 6, y + (start + block / 2) * cell + 4, f"block {start // block + 1}", 10,
                    anchor="end", fill=MUTED)
    d.label(x + n * cell / 2, y - 8, "keys", 11, fill=MUTED)


@diagram(720, 344)
def ch09_sliding_window(d: Diagram) -> None:
    """A causal window of w = 3 keys over n = 12 positions, two ways: masked in a full
    computation (every score computed, most thrown away) or, as sliding_window_attention does,
    one block of 4 queries at a time over only the keys its window reaches."""
    n, w, block, cell = 12, 3, 4, 13
    lx, rx, y = 96, 470, 78
    d.label(lx + n * cell / 2, 30, "the window as a mask", 13, weight="bold")
    d.label(rx + n * cell / 2, 30, "the window's keys only", 13, weight="bold")
    d.code(rx + n * cell / 2, 50, "sliding_window_attention", 11, fill=MUTED)
    d.code(lx + n * cell / 2, 50, "sliding_window_mask", 11, fill=MUTED)
    _window_grid(d, lx, y, n, w, None, cell)
    _window_grid(d, rx, y, n, w, block, cell)
    d.label(lx - 6, y + n * cell / 2 + 4, "queries", 11, anchor="end", fill=MUTED)
    grid_bottom = y + n * cell
    d.label(lx + n * cell / 2, grid_bottom + 22, "144 scores computed, 33 used:", 12)
    d.math(lx + n * cell / 2, grid_bottom + 42, r"O(n^2d)", 13)
    d.label(rx + n * cell / 2, grid_bottom + 22, "64 scores computed, 33 used:", 12)
    d.math(rx + n * cell / 2 - 4, grid_bottom + 42, r"O(nwd)", 13, anchor="end")
    d.label(rx + n * cell / 2 + 2, grid_bottom + 42, "for n ≫ block size", 11, anchor="start", fill=MUTED)
    # the key
    ky = 328
    for kx, fill, text in (
        (150, "#fde725", "in the window: used"),
        (330, ROLES["mask"][0], "computed, then masked"),
        (520, "#ffffff", "never computed"),
    ):
        d.rect(kx, ky - 10, 12, 12, fill=fill, stroke="#8c8c8c", sw=0.8, rx=0)
        d.label(kx + 18, ky, text, 11, anchor="start")
    d.label(360, grid_bottom + 68, "window w = 3, n = 12 positions, blocks of 4 queries", 11, fill=MUTED)


@diagram(720, 350)
def ch09_linear_rnn(d: Diagram) -> None:
    """Linear attention as a recurrence: a state of fixed size, the matrix M_t and the vector z_t,
    absorbs each key-value pair, and each step's output y_t is read from it with phi(q_t);
    softmax attention's cache instead grows by one key and one value per token."""
    xs = [90 + 124 * t for t in range(5)]
    state = ROLES["state"]
    d.label(24, 30, "linear attention: a state of fixed size", 13, anchor="start", weight="bold")
    for t, x in enumerate(xs):
        # the state: M, a d x d_v grid, and z, a vector of d; the same size at every step
        for i in range(4):
            for j in range(4):
                d.rect(x - 30 + j * 12, 70 + i * 12, 12, 12, fill="#efe9d6", stroke=state[1], sw=0.6, rx=0)
            d.rect(x + 24, 70 + i * 12, 12, 12, fill="#efe9d6", stroke=state[1], sw=0.6, rx=0)
        d.math(x - 6, 62, rf"\mathbf{{M}}_{t + 1}", 13)
        d.math(x + 30, 62, rf"\mathbf{{z}}_{t + 1}", 13)
        if t:
            d.arrow((xs[t - 1] + 38, 94), (x - 34, 94), color=INK, sw=1.4)
        # what the step adds
        d.math(x, 150, rf"\phi(\mathbf{{k}}_{t + 1})\mathbf{{v}}_{t + 1}^\top", 12, fill=state[2])
        d.arrow((x, 136), (x, 122), color=state[1], sw=1.2, head=6)  # an update of the state
        # what the step puts out: the query reads the state
        d.arrow((x + 36, 120), (x + 50, 136), color=O[1], sw=1.2, head=6)
        d.math(x + 54, 150, rf"\mathbf{{y}}_{t + 1}", 13, fill=O[2])
    d.math(
        360,
        184,
        r"\mathbf{M}_t = \mathbf{M}_{t-1} + \phi(\mathbf{k}_t)\mathbf{v}_t^\top,\quad "
        r"\mathbf{z}_t = \mathbf{z}_{t-1} + \phi(\mathbf{k}_t)",
        13,
    )
    d.math(
        360,
        208,
        r"\mathbf{y}_t = \phi(\mathbf{q}_t)^\top \mathbf{M}_t \,/\, \phi(\mathbf{q}_t)^\top \mathbf{z}_t",
        13,
    )
    d.code(700, 30, "linear_attention_recurrent", 11, anchor="end", fill=MUTED)
    # the cache of softmax attention, for contrast
    d.label(24, 246, "softmax attention: a cache that grows", 13, anchor="start", weight="bold")
    for t, x in enumerate(xs):
        for i in range(t + 1):
            d.rect(x - 24, 320 - (i + 1) * 12, 24, 12, fill=K[0], stroke=K[1], sw=0.6, rx=0)
            d.rect(x, 320 - (i + 1) * 12, 24, 12, fill=V[0], stroke=V[1], sw=0.6, rx=0)
        d.text(x, 338, f"t = {t + 1}", 11, fill=MUTED, kind="m")
    d.code(700, 246, "KVCache", 11, anchor="end", fill=MUTED)
