"""Chapter 5: multi-head attention, and the reshape that runs every head at once."""

import functools
import math

from . import diagram
from .draw import INK, LINE, MUTED, ROLES, Diagram, viridis

HEAD_TINTS = ["#fde7d8", "#f8c6a3", "#ef9d68", "#d9722e"]  # head 1 .. 4, light to dark


def _drop(d: Diagram, x: float, y0: float, y1: float, colour: str) -> None:
    """A vertical arrow from a bus at y0 up to y1, with a white halo where it crosses other buses."""
    d.polyline([(x, y0), (x, y1 + 6)], stroke="#ffffff", sw=5)
    d.arrow((x, y0), (x, y1), color=colour, sw=1.4, head=6)


@diagram(720, 400)
def ch05_multihead(d: Diagram) -> None:
    """h heads side by side, each with its own projections and scaled dot-product attention; the
    outputs are concatenated and mixed by W_o."""
    q, k, v, o = ROLES["query"], ROLES["key"], ROLES["value"], ROLES["output"]
    buses = {
        "q": (334, q, r"\mathbf{q}", "queries"),
        "k": (350, k, r"\mathbf{k}", "keys"),
        "v": (366, v, r"\mathbf{v}", "values"),
    }
    for y, role, tex, _name in buses.values():
        d.math(34, y + 5, tex, 14, fill=role[2])
        d.cells(44, y - 6, 3, cell=12, colours=[role[0]] * 3, stroke=role[1])
        d.polyline([(80, y), (664, y)], stroke=role[1], sw=1.8)
    d.shape(96, 392, "(batch, n, num_hiddens)", 10, anchor="start")
    d.label(
        700, 392, "attnlib stacks the heads' matrices into one W_q, W_k and W_v", 11, anchor="end", fill=MUTED
    )
    heads = [(200, "1"), (370, "2"), (580, "h")]
    for x, i in heads:
        for dx, key, tex in (
            (-48, "q", rf"\mathbf{{W}}_{i}^{{(q)}}"),
            (0, "k", rf"\mathbf{{W}}_{i}^{{(k)}}"),
            (48, "v", rf"\mathbf{{W}}_{i}^{{(v)}}"),
        ):
            y_bus, role, _, _ = buses[key]
            _drop(d, x + dx, y_bus, 302, role[1])
            d.box(x + dx - 21, 276, 42, 26, "module", tex=tex, size=10)
            d.arrow((x + dx, 276), (x + dx * 0.6, 246), color=role[1], sw=1.3, head=6)
        d.box(x - 70, 212, 140, 34, "module", title="scaled dot-product attention", size=11)
        d.arrow((x, 212), (x, 196), color=o[1], sw=1.4)
        d.cells(x - 18, 182, 3, "output", cell=12)
        d.math(x + 26, 193, rf"\mathbf{{h}}_{i}", 13, anchor="start", fill=o[2])
    d.text(475, 236, "…", 20, fill=MUTED)
    d.text(475, 290, "…", 20, fill=MUTED)
    # concatenation and W_o
    seg = 36
    cx = 360
    x0 = cx - (3 * seg + 20) / 2
    starts = [x0, x0 + seg + 4, x0 + 2 * seg + 20]
    for (hx, _), sx in zip(heads, starts, strict=True):
        d.polyline([(hx, 182), (hx, 160), (sx + seg / 2, 136), (sx + seg / 2, 130)], stroke=o[1], sw=1.2)
        d.cells(sx, 116, 3, "output", cell=12)
    d.text(x0 + 2 * seg + 12, 128, "…", 12, fill=MUTED)
    d.math(x0 + 3 * seg + 32, 128, r"[\mathbf{h}_1; \mathbf{h}_2; \ldots; \mathbf{h}_h]", 13, anchor="start")
    d.label(x0 - 12, 128, "concatenate", 12, anchor="end", fill=MUTED)
    d.arrow((cx, 116), (cx, 96), color=o[1], sw=1.4)
    d.box(cx - 40, 70, 80, 26, "module", tex=r"\mathbf{W}_o", size=12)
    d.arrow((cx, 70), (cx, 52), color=o[1], sw=1.6)
    d.cells(cx - 30, 38, 5, "output", cell=12)
    d.label(cx + 46, 49, "output", 12, anchor="start", fill=o[2])
    d.rect(14, 14, 692, 314, fill="none", stroke="#8c8c8c", sw=1.1, rx=8, dash="5 3")
    d.code(24, 32, "MultiHeadAttention", 12, anchor="start")
    d.shape(cx + 92, 90, "(batch, n, num_hiddens)", 10, anchor="start")
    d.label(36, 200, "each head:", 10, anchor="start", fill=MUTED)
    d.shape(98, 200, "(batch, n, p)", 10, anchor="start")


def _grid(
    d: Diagram, x: float, y: float, rows: int, cols: list[str], cell: float = 16, gaps: dict | None = None
) -> float:
    """A matrix whose columns have the fills ``cols``; ``gaps`` {col: px} opens gaps before
    columns. Returns its width."""
    gaps = gaps or {}
    cx = x
    for j, fill in enumerate(cols):
        cx += gaps.get(j, 0)
        for i in range(rows):
            d.rect(cx, y + i * cell, cell, cell, fill=fill, stroke="#8c5a3c", sw=0.7, rx=0)
        cx += cell
    return cx - x


@diagram(720, 290)
def ch05_split_heads(d: Diagram) -> None:
    """The reshape: the last axis is cut into h slices (a view), the heads move to a batch axis,
    attention runs on every head at once, and the inverse reshape is the concatenation."""
    n, cell = 4, 16
    tints = [t for t in HEAD_TINTS for _ in range(2)]
    y = 92
    # A: projected queries
    w = _grid(d, 24, y, n, tints)
    for h in range(4):
        d.text(24 + (2 * h + 1) * cell, y - 8, str(h + 1), 11, fill=MUTED)
    d.label(24 + w / 2, y - 46, "projected queries", 12)
    d.label(24 + w / 2, y - 26, "head", 11, fill=MUTED)
    d.shape(24 + w / 2, y + n * cell + 18, "(batch, n, num_hiddens)", 10)
    # B: the same numbers, the last axis cut into heads (a view)
    bx = 204
    d.arrow((24 + w + 8, y + 32), (bx - 10, y + 32), color=LINE)
    wb = _grid(d, bx, y, n, tints, gaps={2: 8, 4: 8, 6: 8})
    d.shape(bx + wb / 2, y + n * cell + 18, "(batch, n, heads, head_dim)", 10)
    d.label(bx + wb / 2, y - 26, "cut the last axis: a view", 11, fill=MUTED)
    # C: heads as a batch axis, one page per head
    cx0 = 412
    d.arrow((bx + wb + 8, y + 32), (cx0 - 10, y + 32), color=LINE)
    for h in reversed(range(4)):  # the back page first: head 4 behind, head 1 in front
        _grid(d, cx0 + h * 12, y - h * 12, n, [HEAD_TINTS[h]] * 2)
    d.shape(cx0 + 34, y + n * cell + 34, "(batch, heads, n, head_dim)", 10)
    d.label(cx0 + 34, y - 58, "heads become a batch axis", 11, fill=MUTED)
    # D: attention on every head at once, then the inverse reshape
    dx0 = 560
    d.arrow((cx0 + 76, y + 32), (dx0 - 10, y + 32), color=LINE)
    outs = ["#f5dcea", "#ebbcd6", "#d98fb9", "#c2679b"]  # head outputs, in the output colour
    wd = _grid(d, dx0, y, n, [t for t in outs for _ in range(2)])
    d.shape(dx0 + wd / 2, y + n * cell + 18, "(batch, n, num_hiddens)", 10)
    d.label(dx0 + wd / 2, y - 26, "concatenated heads", 11, fill=MUTED)
    # the two functions, under their arrows
    d.polyline([(24, 214), (24, 222), (cx0 + 70, 222), (cx0 + 70, 214)], stroke=MUTED, sw=1)
    d.code((24 + cx0 + 70) / 2, 240, "transpose_qkv", 12)
    d.polyline([(cx0 + 8, 250), (cx0 + 8, 258), (dx0 + wd, 258), (dx0 + wd, 250)], stroke=MUTED, sw=1)
    d.label((cx0 + dx0 + wd) / 2 - 4, 276, "attention, then", 12, anchor="end")
    d.code((cx0 + dx0 + wd) / 2 + 2, 276, "transpose_output", 12, anchor="start")


# --------------------------------------------------------------------------- heads on a sentence
#: What ch05_heads_sentence draws: the first test sentence chapter 5 studies (section 5.5's
#: ``pick_sentences``; not ``data.test[0]``), the layer and the
#: query token whose row of weights is drawn, head by head. The weights are computed when the
#: diagram is rendered, from the Transformer whose weights ship with attnlib (the model of
#: chapter 5), so the diagram shows that model and no copy of its numbers.
HEADS_SENTENCE, HEADS_LAYER, HEADS_QUERY = "my green car is not black .", 1, "car"


def _rounded(w: float) -> float:
    """``w`` to the two decimals the diagram prints. A weight within 1e-5 of a rounding boundary
    would make the render depend on the float path (another CPU, another torch): refused."""
    if abs(abs(w * 100 - math.floor(w * 100)) - 0.5) < 1e-3:
        raise ValueError(f"weight {w!r} lies on a rounding boundary: choose another query or layer")
    return round(w, 2)


@functools.cache
def head_weights(sentence: str = HEADS_SENTENCE, layer: int = HEADS_LAYER, query: str = HEADS_QUERY):
    """``(tokens, weights)``: the source tokens of ``sentence`` (``<eos>`` included) and, for each
    head of encoder self-attention layer ``layer`` (from 1) of the shipped Transformer, the row of
    ``query``'s weights over the tokens, rounded to two decimals (:func:`_rounded`).

    The shipped weights are loaded only when they are current (their recipe is the one attnlib's
    code gives, as :func:`attnlib.presets.train_preset` requires); stale ones raise: retrain them
    (``make models``), as the chapter would."""
    import torch  # only this diagram needs torch and attnlib: the others draw without them

    from attnlib import TranslationData, record_attention
    from attnlib.presets import DATA_DEFAULTS, build_model, pretrained_path, recipe

    data = TranslationData(**DATA_DEFAULTS)
    saved = torch.load(pretrained_path("transformer", data), map_location="cpu", weights_only=True)
    if saved.get("recipe") != recipe("transformer", data):
        raise RuntimeError("the shipped Transformer is stale (its recipe differs): run `make models`")
    model = build_model("transformer", data)
    model.load_state_dict(saved["model"])
    model.eval()
    src, valid = data.encode_src(sentence)  # (1, steps), (1,)
    n = int(valid)
    tokens = data.src_vocab.to_tokens(src[0, :n].tolist())
    with torch.no_grad(), record_attention(model) as rec:
        model.encoder(src[:, :n], valid)
    weights = rec.last(f"encoder.blks.{layer - 1}.attention")[0, :, tokens.index(query)]  # (heads, keys)
    return tokens, [[_rounded(float(w)) for w in row] for row in weights]


def _mix(colour: str, t: float) -> str:
    """``colour`` at strength ``t`` over white (0: white, 1: the colour), as one opaque colour."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 + (c - 255) * t):02x}" for c in rgb)


@diagram(720, 296)
def ch05_heads_sentence(d: Diagram) -> None:
    """One query token's row of self-attention weights in each head of one layer of chapter 5's
    trained Transformer, drawn as lines from the query to every token, as wide and as dark as the
    weight: the heads of one layer look at different words. The two-column view goes back to
    Tensor2Tensor's attention visualisation (Llion Jones), made familiar by Alammar's *The
    Illustrated Transformer* (2018) and packaged as bertviz's attention view (Vig, 2019)."""
    tokens, rows = head_weights()
    q, k = ROLES["query"], ROLES["key"]
    line = viridis(0.35)
    d.label(360, 26, f"encoder self-attention, layer {HEADS_LAYER}: where the query “{HEADS_QUERY}” looks, "
            f"in each of the {len(rows)} heads", 13)
    top, step, width = 80, 22, 174
    qi = tokens.index(HEADS_QUERY)
    for h, row in enumerate(rows):
        x0 = 12 + h * width
        d.rect(x0, 40, width - 6, 222, fill="#fafafa", stroke="#d0d0d0", sw=1, rx=8)
        d.label(x0 + (width - 6) / 2, 62, f"head {h + 1}", 12, weight="bold")
        qx, kx = x0 + 48, x0 + 100  # the query column ends at qx, the keys' column starts at kx
        for j, token in enumerate(tokens):
            y = top + j * step
            if j == qi:
                d.rect(qx - 40, y - 9, 42, 18, fill=q[0], stroke=q[1], sw=1.2, rx=3)
            d.code(qx - 2, y + 4, token, 10, anchor="end", fill=q[2] if j == qi else MUTED)
            d.code(kx + 2, y + 4, token, 10, anchor="start", fill=k[2])
            w = row[j]
            d.text(x0 + width - 12, y + 4, f"{w:.2f}".lstrip("0") if w < 1 else "1", 10, anchor="end",
                   fill=INK if w >= 0.2 else MUTED)
        for j, w in sorted(enumerate(row), key=lambda jw: jw[1]):  # the widest on top
            if w >= 0.01:
                d.polyline([(qx + 4, top + qi * step), (kx - 2, top + j * step)],
                           stroke=_mix(line, 0.15 + 0.85 * math.sqrt(w)), sw=0.6 + 8 * w)
    d.label(360, 284, "the larger a key's weight (the number beside it), the wider and darker its line",
            11, fill=MUTED)
