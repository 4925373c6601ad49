"""Chapter 8: a decoder-only language model, the Vision Transformer, SNAIL."""

from . import diagram
from .draw import INK, LINE, MUTED, ROLES, Diagram

TEXT = ["<bos>", "t", "o", "m", "_", "i", "s"]


def _sublayer(d: Diagram, x: float, y: float, w: float, name: str, code: str) -> None:
    """A pre-LN sublayer drawn upwards from y: LayerNorm, the sublayer, the residual addition."""
    d.box(x + 24, y - 30, w - 48, 22, "module", code="LayerNorm", size=11)
    d.box(x + 24, y - 68, w - 48, 28, "module", code=code, size=12)
    d.op(x + w / 2, y - 88, "+", r=9, size=13)
    d.arrow((x + w / 2, y), (x + w / 2, y - 8), color=LINE)
    d.arrow((x + w / 2, y - 30), (x + w / 2, y - 40), color=LINE)
    d.arrow((x + w / 2, y - 68), (x + w / 2, y - 79), color=LINE)
    d.arrow(
        (x + w / 2, y + 4), (x + 10, y + 4), (x + 10, y - 88), (x + w / 2 - 10, y - 88), color=LINE, sw=1.2
    )
    del name


@diagram(720, 560)
def ch08_decoder_only_lm(d: Diagram) -> None:
    """DecoderOnlyLM: characters in, the next character's probabilities out, each position seeing
    only itself and the positions before it. The input is attnlib's ``_embed``: the characters'
    embeddings times sqrt(d), to which ``pos_embedding`` adds the learned rows of positions
    0, 1, ... (continuing from the cache's length when decoding)."""
    x, w = 250, 200  # the column of the model
    cx = x + w / 2
    step = 44
    n = len(TEXT)
    left = cx - step * (n - 1) / 2
    for i, tok in enumerate(TEXT):  # inputs at the bottom, the targets (shifted by one) on top
        tx = left + i * step
        d.rect(tx - 19, 526, 38, 22, fill=ROLES["plain"][0], stroke=ROLES["plain"][1], sw=1.2, rx=3)
        d.code(tx, 541, tok, 11)
        d.rect(tx - 19, 14, 38, 22, fill=ROLES["output"][0], stroke=ROLES["output"][1], sw=1.2, rx=3)
        d.code(tx, 29, (TEXT[1:] + ["_"])[i], 11)  # "tom is reading ...": a space follows "is"
    d.label(left - 30, 541, "characters", 12, anchor="end", fill=MUTED)
    d.label(left - 30, 29, "next character", 12, anchor="end", fill=ROLES["output"][2])
    # the input: embedding(X) * sqrt(d), then pos_embedding adds the rows of positions 0 ... 6
    d.arrow((cx, 524), (cx, 506), color=LINE)
    d.box(x + 30, 482, w - 60, 24, "module", code="embedding", size=11)
    d.arrow((cx, 482), (cx, 467), color=LINE)
    d.op(cx, 458, "×", r=9, size=13)
    d.math(cx - 14, 463, r"\sqrt{d}", 13, anchor="end")
    d.arrow((cx, 449), (cx, 436), color=LINE)
    d.box(x + 30, 410, w - 60, 26, "module", code="pos_embedding", size=11)
    px = x + w + 24  # the positions, a learned row each, enter from the side
    d.cells(px, 416, n, cell=14, values=[str(i) for i in range(n)], size=9)
    d.arrow((px - 2, 423), (x + w - 30, 423), color=LINE, head=6)
    d.label(px + n * 7, 448, "positions 0 … 6", 11, fill=MUTED)
    d.label(px + n * 7, 462, "(learned vectors, added)", 11, fill=MUTED)
    d.shape(x - 20, 404, "(batch, steps, 64)", 10, anchor="end")
    # the block (pre-LN), twice
    d.rect(x - 14, 160, w + 28, 232, fill="#f7f7f7", stroke="#8c8c8c", sw=1.2, rx=8, dash="5 3")
    d.code(x - 14, 154, "CausalBlock", 12, anchor="start")
    d.label(x + w + 22, 176, "× 2 blocks", 12, anchor="start", fill=MUTED)
    d.arrow((cx, 410), (cx, 384), color=LINE)
    _sublayer(d, x, 380, w, "attention", "MultiHeadAttention")
    _sublayer(d, x, 274, w, "ffn", "PositionWiseFFN")
    mx, my, cell = x + w + 60, 236, 11  # the causal mask beside the attention: row t sees 0 ... t
    M = [[1.0] * n for _ in range(n)]
    d.matrix(mx, my, M, cell=cell, limit=1.0, masked={(i, j) for i in range(n) for j in range(n) if j > i})
    d.arrow((mx - 4, my + 3.5 * cell + 30), (x + w - 22, 328), color=MUTED, sw=1.1, head=6)
    d.label(mx + n * cell / 2, my + n * cell + 16, "causal mask: position t", 11, fill=MUTED)
    d.label(mx + n * cell / 2, my + n * cell + 30, "sees positions 0 … t", 11, fill=MUTED)
    # the head
    d.box(x + 24, 88, w - 48, 22, "module", code="ln", size=11)
    d.box(x + 24, 52, w - 48, 24, "module", code="dense", size=11)
    d.arrow((cx, 177), (cx, 110), color=LINE)
    d.arrow((cx, 88), (cx, 76), color=LINE)
    d.arrow((cx, 52), (cx, 38), color=ROLES["output"][1])
    d.code(x + w + 22, 70, "LayerNorm, Linear", 10, anchor="start", fill=MUTED)
    d.label(x + w + 22, 84, "logits over the characters", 11, anchor="start", fill=MUTED)
    d.shape(x - 20, 72, "(batch, steps, vocab)", 10, anchor="end")


@diagram(720, 340)
def ch08_vit(d: Diagram) -> None:
    """ViT: a digit cut into 2x2 patches, each a token; a <cls> token first, positions added,
    encoder blocks, the class read from the <cls> output."""
    zero = ["..####..", ".##..##.", ".#....#.", "##....##", "##....##", ".#....#.", ".##..##.", "..####.."]
    ink = [[(1.0 if ch == "#" else 0.0) for ch in row] for row in zero]

    def grey(v: float) -> str:
        g = round(255 * (1 - 0.85 * v))
        return f"#{g:02x}{g:02x}{g:02x}"

    px, gx, gy, gap = 12, 24, 56, 3  # the digit, cut into its 2x2 patches by white gaps
    for i in range(8):
        for j in range(8):
            x, y = gx + j * px + (j // 2) * gap, gy + i * px + (i // 2) * gap
            d.rect(x, y, px, px, fill=grey(ink[i][j]), stroke="#dddddd", sw=0.4, rx=0)
    for a in range(4):  # each patch outlined in grey
        for b in range(4):
            x, y = gx + b * (2 * px + gap), gy + a * (2 * px + gap)
            d.rect(x, y, 2 * px, 2 * px, fill="none", stroke="#808080", sw=0.9, rx=0)
    d.label(gx + 4 * px + 4, gy - 26, "8×8 digit, 2×2 patches", 12, width=110)
    x0, step, tile = 170, 22, 7  # the sequence: patch p at x0 + p * step (token 0 is <cls>)
    # from the digit's first row of patches to the first patch of the sequence, at its height
    d.arrow((gx + 8 * px + 3 * gap + 6, 60 + tile), (x0 + step - 6, 60 + tile), color=LINE)
    for p in range(16):
        r, c = divmod(p, 4)
        x = x0 + (p + 1) * step
        for a in range(2):
            for b in range(2):
                d.rect(
                    x + b * tile,
                    60 + a * tile,
                    tile,
                    tile,
                    fill=grey(ink[2 * r + a][2 * c + b]),
                    stroke="#bbbbbb",
                    sw=0.4,
                    rx=0,
                )
    mid = x0 + 9 * step + 7
    d.label(mid, 46, "16 patches in reading order, 4 pixels each", 12)
    d.code(mid, 92, "patchify", 11, fill=MUTED)
    d.box(mid - 120, 104, 240, 28, "module", code="PatchEmbedding", size=12)
    d.math(mid + 130, 123, r"\mathbf{x}_i \mathbf{E}", 14, anchor="start")
    d.arrow((mid, 96), (mid, 104), color=LINE, head=5)
    y_tok = 160
    d.arrow((mid, 132), (mid, y_tok - 2), color=LINE)
    for t in range(17):
        x = x0 + t * step
        if t == 0:
            d.rect(x, y_tok, 14, 30, fill=ROLES["output"][0], stroke=ROLES["output"][1], sw=1.2, rx=2)
        else:
            d.rect(x, y_tok, 14, 30, fill="#eeeeee", stroke="#808080", sw=1.1, rx=2)
    d.code(x0 + 7, y_tok - 6, "<cls>", 10, fill=ROLES["output"][2])
    end = x0 + 16 * step + 14
    d.polyline([(end + 2, y_tok + 15), (end + 14, y_tok + 15)], stroke=LINE, sw=1.4)
    d.op(end + 25, y_tok + 15, "+", r=10)
    d.math(end + 40, y_tok + 20, r"\mathbf{E}_\mathrm{pos}", 14, anchor="start")
    d.label(end + 40, y_tok + 38, "learned positions", 11, anchor="start", fill=MUTED)
    d.box(x0 - 6, 222, end - x0 + 12, 30, "module", code="TransformerEncoderBlock × 2 (pre-LN)", size=12)
    d.arrow((mid, y_tok + 32), (mid, 222), color=LINE)
    d.arrow((x0 + 7, 252), (x0 + 7, 276), color=ROLES["output"][1])
    d.box(x0 - 43, 278, 100, 26, "module", code="head", size=12)
    d.code(x0 + 7, 322, "LayerNorm, Linear", 10, fill=MUTED)
    d.arrow((x0 + 57, 291), (x0 + 92, 291), color=ROLES["output"][1])
    d.label(
        x0 + 96,
        295,
        "scores of the classes 0 … 9, from the <cls> output alone",
        12,
        anchor="start",
        fill=ROLES["output"][2],
    )


@diagram(720, 330)
def ch08_snail(d: Diagram) -> None:
    """Left: dilated causal convolutions, dilations 1, 2, 4, 8, let position 15 see all 16
    positions. Right: SNAIL's layers, each concatenating new features to its input."""
    n, sx, dx = 16, 32, 18
    rows = [270, 214, 158, 102, 46]  # input, then dilations 1, 2, 4, 8
    reach = {15}
    needed = [set() for _ in rows]
    needed[-1] = {15}
    for level in range(len(rows) - 1, 0, -1):  # the positions the last output depends on
        dil = 2 ** (level - 1)
        needed[level - 1] = {p for q in needed[level] for p in (q, q - dil) if p >= 0}
    del reach
    for level, y in enumerate(rows):
        for p in range(n):
            on = p in needed[level]
            d.circle(
                sx + p * dx,
                y,
                5,
                fill="#bdbdbd" if on else "#ffffff",
                stroke=INK if on else "#999999",
                sw=1.1,
            )
        if level:
            dil = 2 ** (level - 1)
            for q in sorted(needed[level]):
                for p in (q, q - dil):
                    if p >= 0:
                        d.polyline(
                            [(sx + p * dx, rows[level - 1] - 5), (sx + q * dx, y + 5)], stroke=LINE, sw=1.1
                        )
            d.text(sx + n * dx - 2, y + 4, f"d = {dil}", 11, anchor="start", fill=MUTED, kind="m")
    d.label(sx + (n - 1) * dx / 2, 296, "16 positions: the input of one TCBlock", 12, fill=MUTED)
    d.label(sx + (n - 1) * dx / 2, 314, "4 dilated causal convolutions reach all of them", 12, fill=MUTED)
    d.label(sx + (n - 1) * dx / 2, 24, "the last position and what it sees", 12, weight="bold")
    # right: the layers, growing by concatenation
    x0 = 356
    layers = [
        ("Embedding", 16, None),
        ("TCBlock", 40, "+4×6"),
        ("AttentionBlock", 52, "+12"),
        ("TCBlock", 76, "+4×6"),
        ("AttentionBlock", 88, "+12"),
        ("Linear", 8, None),
    ]
    y = 288
    for name, ch, grow in layers:
        w = 1.9 * ch
        d.code(x0 + 118, y - 7, name, 11, anchor="end")
        # block types in greys (the role colours mean queries, keys, values, outputs, states)
        bar_fill = "#bdbdbd" if "Attention" in name else "#e0e0e0" if "TC" in name else "#f5f5f5"
        bar_stroke = "#4d4d4d" if "Attention" in name else "#808080"
        d.rect(x0 + 126, y - 20, w * 0.85, 16, fill=bar_fill, stroke=bar_stroke, sw=1.1, rx=2)
        d.text(
            x0 + 126 + w * 0.85 + 6,
            y - 8,
            f"{ch}" + (f"  ({grow})" if grow else ""),
            10,
            anchor="start",
            fill=MUTED,
            kind="c",
        )
        y -= 44
    d.label(x0 + 150, 24, "SNAIL's layers and their channels", 12, weight="bold")
    d.label(x0 + 150, 314, "each block concatenates its new features to its input", 11, fill=MUTED)
