"""Chapter 6: CNN, RNN and self-attention over one sequence; positions added or rotated in."""

import math

from . import diagram
from .draw import INK, LINE, MUTED, ROLES, Diagram

N = 5  # tokens in the comparison


def _panel(d: Diagram, x0: float, title: str, rows: list[tuple[str, str]]) -> list[float]:
    """A panel with its title and its three costs; returns the token x positions."""
    d.rect(x0, 10, 224, 318, fill="#fafafa", stroke="#d0d0d0", sw=1, rx=8)
    d.label(x0 + 112, 34, title, 14, weight="bold")
    for k, (name, tex) in enumerate(rows):
        y = 254 + k * 24
        d.label(x0 + 12, y, name, 11, anchor="start", fill=MUTED)
        d.math(x0 + 212, y, tex, 13, anchor="end")
    return [x0 + 32 + i * 40 for i in range(N)]


def _node(d: Diagram, x: float, y: float, role: str, tex: str | None = None, below: bool = False) -> None:
    fill, stroke, ink = ROLES[role]
    d.circle(x, y, 9, fill=fill, stroke=stroke, sw=1.4)
    if tex:
        d.math(x, y + (26 if below else -14), tex, 12, fill=ink)


@diagram(720, 338)
def ch06_cnn_rnn_sa(d: Diagram) -> None:
    """How information moves from inputs (bottom) to outputs (top) in one layer of each kind;
    the paths of the third output are dark."""
    names = ["computational complexity", "sequential operations", "maximum path length"]
    specs = [
        ("CNN (kernel 3)", [r"\mathrm{O}(knd^2)", r"\mathrm{O}(1)", r"\mathrm{O}(n/k)"]),
        ("RNN", [r"\mathrm{O}(nd^2)", r"\mathrm{O}(n)", r"\mathrm{O}(n)"]),
        ("self-attention", [r"\mathrm{O}(n^2d)", r"\mathrm{O}(1)", r"\mathrm{O}(1)"]),
    ]
    y_in, y_out = 204, 76
    for p, (title, texs) in enumerate(specs):
        x0 = 12 + p * 236
        xs = _panel(d, x0, title, list(zip(names, texs, strict=True)))
        focus = 2
        if p == 0:  # each output sees its neighbours
            for i in range(N):
                for j in (i - 1, i, i + 1):
                    if 0 <= j < N:
                        dark = i == focus
                        d.polyline(
                            [(xs[j], y_in - 9), (xs[i], y_out + 9)],
                            stroke=INK if dark else "#c4c4c4",
                            sw=1.6 if dark else 1,
                        )
        elif p == 1:  # a chain of states
            y_h = 140
            for i in range(N):
                dark = i <= focus
                d.arrow(
                    (xs[i], y_in - 9), (xs[i], y_h + 10), color=INK if dark else "#c4c4c4", sw=1.3, head=5
                )
                d.arrow(
                    (xs[i], y_h - 9),
                    (xs[i], y_out + 10),
                    color=INK if i == focus else "#c4c4c4",
                    sw=1.3,
                    head=5,
                )
                _node(d, xs[i], y_h, "state")
                if i:
                    d.arrow(
                        (xs[i - 1] + 9, y_h),
                        (xs[i] - 10, y_h),
                        color=INK if dark else "#c4c4c4",
                        sw=1.4,
                        head=5,
                    )
        else:  # everyone sees everyone
            for i in range(N):
                for j in range(N):
                    dark = i == focus
                    d.polyline(
                        [(xs[j], y_in - 9), (xs[i], y_out + 9)],
                        stroke=INK if dark else "#d0d0d0",
                        sw=1.5 if dark else 0.8,
                    )
        for i in range(N):
            _node(d, xs[i], y_in, "plain", rf"x_{i + 1}", below=True)
            _node(d, xs[i], y_out, "output")
        d.label(x0 + 112, 58, "outputs", 11, fill=MUTED)


def _fake(i: int, j: int) -> float:
    """A fixed pseudo-random number in [-1, 1] (the same on every machine)."""
    v = math.sin(12.9898 * (i + 1) + 78.233 * (j + 1)) * 43758.5453
    return 2 * (v - math.floor(v)) - 1


@diagram(720, 316)
def ch06_positional_add(d: Diagram) -> None:
    """Token embeddings plus the sinusoidal position table give the model's input."""
    n, dim, cell = 16, 16, 8
    X = [[0.8 * _fake(i, j) for j in range(dim)] for i in range(n)]
    P = [
        [(math.sin if j % 2 == 0 else math.cos)(i / 10000 ** ((j // 2 * 2) / dim)) for j in range(dim)]
        for i in range(n)
    ]
    S = [[X[i][j] + P[i][j] for j in range(dim)] for i in range(n)]
    y = 62
    specs = [
        (56, X, "token embeddings", r"\mathbf{X}", 1.8),
        (286, P, "positional encoding", r"\mathbf{P}", 1.8),
        (516, S, "the model's input", r"\mathbf{X} + \mathbf{P}", 1.8),
    ]
    for x, M, name, tex, limit in specs:
        d.matrix(x, y, M, cell=cell, cmap_name="RdBu_r", limit=limit, stroke="#ffffff", sw=0.5)
        d.math(x + dim * cell / 2, y - 26, tex, 15)
        d.label(x + dim * cell / 2, y - 8, name, 12, fill=MUTED)
        if x == 56:
            d.label(x - 8, y + n * cell / 2 + 4, "position", 11, anchor="end", fill=MUTED)
        d.label(x + dim * cell / 2, y + n * cell + 16, "feature", 11, fill=MUTED)
    d.label(  # what attnlib's _embed does before adding P
        56 + dim * cell / 2, y + n * cell + 34, "in the Transformer, X is the embeddings times √d", 11,
        fill=MUTED, width=190,
    )
    d.text(246, y + n * cell / 2 + 8, "+", 24, kind="m")
    d.text(476, y + n * cell / 2 + 8, "=", 24, kind="m")
    d.code(286 + dim * cell / 2, y + n * cell + 34, "PositionalEncoding", 11, fill=MUTED)
    d.math(
        286 + dim * cell / 2,
        y + n * cell + 58,
        r"p_{p,2j} = \sin(p \omega_j),\ p_{p,2j+1} = \cos(p \omega_j)",
        13,
    )
    d.label(
        286 + dim * cell / 2, y + n * cell + 78, "the frequency falls from column to column", 11, fill=MUTED
    )


@diagram(720, 372)
def ch06_rope(d: Diagram) -> None:
    """Absolute positions are added to the input; RoPE rotates each feature pair of a query and a
    key by its position, after the projections (inside each head of MultiHeadAttention), so their
    dot product depends on the contents and, of the positions, only on the offset m - n."""
    q, k = ROLES["query"], ROLES["key"]
    # absolute (left): the position is added before the projections
    d.label(180, 30, "absolute: added to the input", 14, weight="bold")
    rows = (
        (76, r"\mathbf{x}_m", r"\mathbf{p}_m", r"\mathbf{W}_q", "query", r"\mathbf{q}_m"),
        (166, r"\mathbf{x}_n", r"\mathbf{p}_n", r"\mathbf{W}_k", "key", r"\mathbf{k}_n"),
    )
    for y, x_tex, p_tex, w_tex, role, out_tex in rows:
        d.cells(24, y, 4, "plain", cell=14)
        d.math(52, y - 7, x_tex, 13)
        d.text(93, y + 12, "+", 16, kind="m")
        d.cells(104, y, 4, "plain", cell=14, colours=["#e6e6e6"] * 4)
        d.math(132, y - 7, p_tex, 13)
        d.arrow((164, y + 7), (186, y + 7), color=LINE)
        d.box(188, y - 6, 44, 26, "module", tex=w_tex, size=11)
        d.arrow((232, y + 7), (252, y + 7), color=ROLES[role][1])
        d.cells(254, y, 3, role, cell=14)
        d.math(275, y - 7, out_tex, 13, fill=ROLES[role][2])
    d.op(322, 128, "·")
    d.arrow((296, 83), (316, 83), (322, 117), color=q[1], sw=1.3)
    d.arrow((296, 173), (316, 173), (322, 139), color=k[1], sw=1.3)
    d.label(
        180,
        232,
        "the score sees the positions only through what the projections make of the added "
        "vectors: using the offset has to be learned",
        11,
        fill=MUTED,
        width=300,
    )
    d.polyline([(360, 20), (360, 296)], stroke="#d9d9d9", sw=1)
    # RoPE (right): one feature pair of the projected query and key, as a plane
    cx, cy, r = 520, 160, 90
    d.label(540, 30, "RoPE: rotates queries and keys", 14, weight="bold")
    d.polyline([(cx - r - 10, cy), (cx + r + 20, cy)], stroke="#bfbfbf", sw=1)
    d.polyline([(cx, cy - r - 14), (cx, cy + r + 6)], stroke="#bfbfbf", sw=1)
    d.circle(cx, cy, r, fill="none", stroke="#d9d9d9", sw=1, dash="3 3")

    def at(angle: float, length: float = r) -> tuple[float, float]:
        return cx + length * math.cos(math.radians(angle)), cy - length * math.sin(math.radians(angle))

    m_rot, n_rot = 51, 17  # m = 3 and n = 1 steps of 17 degrees
    for start, turn, role, before, after, turn_tex in (
        (30, m_rot, q, r"\mathbf{q}", r"\tilde{\mathbf{q}}_m", r"m\theta_j"),
        (-20, n_rot, k, r"\mathbf{k}", r"\tilde{\mathbf{k}}_n", r"n\theta_j"),
    ):
        d.polyline([(cx, cy), at(start)], stroke=role[1], sw=1.3, dash="4 3")
        bx, by = at(start, r + 14)
        d.math(bx + 4, by + 6, before, 13, anchor="start", fill=role[2])
        d.arrow((cx, cy), at(start + turn), color=role[1], sw=2.2, head=9)
        tx, ty = at(start + turn, r + 16)
        d.math(tx, ty + 6, after, 14, fill=role[2])
        arc = [at(start + turn * t / 16, 62 if role is q else 44) for t in range(17)]
        d.polyline(arc, stroke=role[1], sw=1.2)
        if role is q:  # inside its arc, clear of the circle
            mx, my = at(start + turn / 2, 42)
            d.math(mx, my + 5, turn_tex, 12, fill=role[2])
        else:
            mx, my = at(start + turn / 2, 58)
            d.math(mx + 2, my + 5, turn_tex, 12, anchor="start", fill=role[2])
    # where the rotation happens: after the projection, inside each head; values are not rotated
    ry = 322
    d.cells(392, ry, 4, "plain", cell=12)
    d.math(416, ry - 6, r"\mathbf{x}_m", 13)
    d.arrow((442, ry + 6), (458, ry + 6), color=LINE, head=6)
    d.box(460, ry - 7, 40, 26, "module", tex=r"\mathbf{W}_q", size=11)
    d.arrow((500, ry + 6), (516, ry + 6), color=q[1], head=6)
    d.box(518, ry - 7, 76, 26, "module", tex=r"R(m\theta_j)", size=11)
    d.arrow((594, ry + 6), (610, ry + 6), color=q[1], head=6)
    d.cells(612, ry, 3, "query", cell=12)
    d.math(660, ry + 11, r"\tilde{\mathbf{q}}_m", 13, anchor="start", fill=q[2])
    d.label(540, ry + 38, "the same for a key at n; the values are not rotated", 11, fill=MUTED)
    d.label(
        540,
        284,
        "their dot product depends on the contents q and k, and on the positions only through m − n",
        12,
        fill=MUTED,
        width=330,
    )
