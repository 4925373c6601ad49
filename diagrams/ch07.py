"""Chapter 7: the Transformer, post-LN and pre-LN, the key/value cache, beam search."""

import functools
import math

from . import diagram
from .draw import INK, LINE, MUTED, ROLES, Diagram, text_width

Q, K, V, O = ROLES["query"], ROLES["key"], ROLES["value"], ROLES["output"]  # noqa: E741


def _tokens(d: Diagram, cx: float, y: float, words: list[str], role: str = "plain", step: float = 50) -> None:
    fill, stroke, _ = ROLES[role]
    left = cx - step * (len(words) - 1) / 2
    for i, w in enumerate(words):
        d.rect(left + i * step - 23, y, 46, 20, fill=fill, stroke=stroke, sw=1.1, rx=3)
        d.code(left + i * step, y + 14, w, 10)


def _qkv(d: Diagram, cx: float, y0: float, y1: float, spread: float = 40, roles=("q", "k", "v")) -> None:
    """Self-attention's three inputs from one stream at (cx, y0) into a box bottom at y1."""
    d.polyline([(cx, y0), (cx, y0 - 10)], stroke=LINE, sw=1.4)
    d.polyline([(cx - spread, y0 - 10), (cx + spread, y0 - 10)], stroke=LINE, sw=1.4)
    for dx, role, name in zip((-spread, 0, spread), (Q, K, V), "qkv", strict=True):
        d.arrow((cx + dx, y0 - 10), (cx + dx, y1), color=role[1], sw=1.5, head=6)
        d.math(cx + dx + 4, y0 - 13, rf"\mathbf{{{name}}}", 11, anchor="start", fill=role[2])


def _addnorm(d: Diagram, x: float, w: float, y: float, y_from: float, x_from: float | None = None) -> None:
    """An AddNorm box at y (22 high) with its residual line from the stream at (x_from, y_from),
    x_from the column's middle unless the stream runs elsewhere."""
    d.box(x + 30, y, w - 60, 22, "module", code="AddNorm", size=10)
    cx = x + w / 2 if x_from is None else x_from
    d.polyline([(cx, y_from), (x + 10, y_from), (x + 10, y + 11)], stroke=LINE, sw=1.2)
    d.arrow((x + 10, y + 11), (x + 30, y + 11), color=LINE, sw=1.2, head=6)


@diagram(720, 640)
def ch07_transformer(d: Diagram) -> None:
    """The encoder-decoder Transformer as attnlib builds it: token embeddings scaled by sqrt(d),
    positions added (``_embed``), post-LN blocks (AddNorm after each sublayer), two of each; the
    encoder's output is the keys and values of every decoder block's second attention."""
    ex, dx, w = 140, 396, 190  # the two columns
    ecx, dcx = ex + w / 2, dx + w / 2
    d.rect(ex - 6, 258, w + 12, 232, fill="#f7f7f7", stroke="#8c8c8c", sw=1.2, rx=8, dash="5 3")
    d.rect(dx - 6, 150, w + 12, 340, fill="#f7f7f7", stroke="#8c8c8c", sw=1.2, rx=8, dash="5 3")
    # inputs: embedding(X) * sqrt(d), then PositionalEncoding adds the positions' rows
    _tokens(d, ecx, 606, ["the", "cat", "sleeps", "."])
    _tokens(d, dcx, 606, ["<bos>", "le", "chat", "dort"])
    for cx, pe_x, side in ((ecx, 12, 1), (dcx, dx + w + 10, -1)):
        d.arrow((cx, 604), (cx, 584), color=LINE)
        d.box(cx - 55, 560, 110, 24, "module", code="embedding", size=10)
        d.arrow((cx, 560), (cx, 547), color=LINE)
        d.op(cx, 538, "×", r=9, size=13)
        d.math(cx + side * 14, 543, r"\sqrt{d}", 13, anchor="start" if side > 0 else "end")
        d.arrow((cx, 529), (cx, 518), color=LINE)
        d.op(cx, 508, "+", r=9, size=13)
        d.box(pe_x, 496, 116, 24, "module", code="PositionalEncoding", size=9)
        if pe_x < cx:
            d.arrow((pe_x + 116, 508), (cx - 10, 508), color=LINE)
        else:
            d.arrow((pe_x, 508), (cx + 10, 508), color=LINE)
    # encoder block
    d.code(ex - 6, 250, "TransformerEncoderBlock × 2", 11, anchor="start")
    d.arrow((ecx, 499), (ecx, 490), color=LINE)
    _qkv(d, ecx, 490, 458)
    d.box(ex + 15, 430, w - 30, 28, "module", code="MultiHeadAttention", size=11)
    d.arrow((ecx, 430), (ecx, 414), color=LINE)
    _addnorm(d, ex, w, 392, 484)
    d.arrow((ecx, 392), (ecx, 346), color=LINE)
    d.box(ex + 15, 318, w - 30, 28, "module", code="PositionWiseFFN", size=11)
    d.arrow((ecx, 318), (ecx, 302), color=LINE)
    _addnorm(d, ex, w, 280, 372)
    # the encoder's output, from the last block's side: keys and values of the decoder's second
    # attention, in every decoder block
    ox = ex + w - 8  # clear of the block label above
    route = [(ex + w - 30, 291), (ox, 291), (ox, 236), (366, 236), (366, 370), (dcx - 55, 370)]
    d.polyline(route, stroke=INK, sw=1.6)
    d.arrow((dcx - 55, 370), (dcx - 55, 346), color=K[1], sw=1.5, head=6)
    d.polyline([(dcx - 55, 370), (dcx - 25, 370)], stroke=INK, sw=1.6)
    d.arrow((dcx - 25, 370), (dcx - 25, 346), color=V[1], sw=1.5, head=6)
    d.math(dcx - 51, 364, r"\mathbf{k}", 11, anchor="start", fill=K[2])
    d.math(dcx - 21, 364, r"\mathbf{v}", 11, anchor="start", fill=V[2])
    d.label(362, 228, "keys and values from the encoder", 11, anchor="end", fill=MUTED)
    # decoder block
    d.code(dcx + 10, 142, "TransformerDecoderBlock × 2", 11, anchor="start")
    d.arrow((dcx, 499), (dcx, 490), color=LINE)
    _qkv(d, dcx, 490, 458)
    d.box(dx + 15, 430, w - 30, 28, "module", code="MultiHeadAttention", size=11)
    d.label(dx + w + 12, 446, "causal mask", 11, anchor="start", fill=MUTED)
    d.arrow((dcx, 430), (dcx, 414), color=LINE)
    _addnorm(d, dx, w, 392, 484)
    d.arrow((dcx + 30, 392), (dcx + 30, 346), color=Q[1], sw=1.5, head=6)
    d.math(dcx + 34, 364, r"\mathbf{q}", 11, anchor="start", fill=Q[2])
    d.box(dx + 15, 318, w - 30, 28, "module", code="MultiHeadAttention", size=11)
    d.label(dx + w + 12, 334, "encoder-decoder attention", 11, anchor="start", fill=MUTED, width=100)
    d.arrow((dcx, 318), (dcx, 302), color=LINE)
    _addnorm(d, dx, w, 280, 382, x_from=dcx + 30)  # from the query line, the stream here
    d.arrow((dcx, 280), (dcx, 234), color=LINE)
    d.box(dx + 15, 206, w - 30, 28, "module", code="PositionWiseFFN", size=11)
    d.arrow((dcx, 206), (dcx, 190), color=LINE)
    _addnorm(d, dx, w, 168, 260)
    # output
    d.arrow((dcx, 168), (dcx, 120), color=LINE)
    d.box(dcx - 40, 96, 80, 24, "module", code="dense", size=11)
    d.arrow((dcx, 96), (dcx, 76), color=O[1])
    _tokens(d, dcx, 54, ["le", "chat", "dort", "."], role="output")
    d.label(dcx, 40, "next-word scores at every position", 11, fill=MUTED)
    d.label(ecx, 44, "post-LN, as built:", 12, weight="bold")
    sub = d._("sublayer")
    d.math(ecx, 68, rf"\mathrm{{LayerNorm}}(\mathbf{{X}} + \mathrm{{{sub}}}(\mathbf{{X}}))", 13)
    d.label(ecx, 92, "(AddNorm after every sublayer)", 11, fill=MUTED)


def _ln_stack(d: Diagram, y: float, title: str, code: str, pre: bool, formula: str) -> None:
    """One row: an encoder block's two sublayers (``attention``, ``ffn``), each inside its
    AddNorm, and for pre-LN the encoder's final ``ln``; the residual of each AddNorm runs below."""
    d.label(24, y - 22, title, 13, anchor="start", weight="bold")
    d.code(696, y - 22, code, 11, anchor="end", fill=MUTED)
    d.math(34, y + 20, r"\mathbf{X}", 14)
    mid, low = y + 15, y + 48  # the main line; the residual's line
    x = 54
    d.polyline([(46, mid), (x, mid)], stroke=LINE, sw=1.4)
    units = (["LayerNorm", "attention", "+"], ["LayerNorm", "ffn", "+"]) if pre else (
        ["attention", "+", "LayerNorm"], ["ffn", "+", "LayerNorm"])
    first = x
    for unit in units:
        start = x  # the AddNorm's input, where its residual leaves the main line
        for item in unit:
            if item == "+":
                d.arrow((x, mid), (x + 12, mid), color=LINE)
                d.op(x + 22, mid, "+", r=10, size=14)
                plus = x + 22
                x += 32
            else:
                d.arrow((x, mid), (x + 14, mid), color=LINE)
                d.box(x + 14, y, 80, 30, "module", code=item, size=11)
                x += 94
        d.polyline([(start + 4, mid), (start + 4, low), (plus, low)], stroke=LINE, sw=1.3)
        d.arrow((plus, low), (plus, mid + 11), color=LINE, sw=1.3, head=6)
        x += 6
        d.polyline([(x - 6, mid), (x, mid)], stroke=LINE, sw=1.4)
    block_end = x - 6
    d.rect(first - 6, y - 8, block_end - first + 10, 64, fill="none", stroke="#8c8c8c", sw=1.1, rx=6,
           dash="5 3")  # the N blocks
    d.code((first + block_end) / 2, y + 72, "TransformerEncoderBlock", 10, fill=MUTED)
    d.text(block_end + 2, y - 12, "× N", 12, anchor="end", fill=INK)
    if pre:  # the encoder's last LayerNorm, once after the last block, outside the N blocks
        d.arrow((x, mid), (x + 14, mid), color=LINE)
        d.box(x + 14, y, 80, 30, "module", code="LayerNorm", size=11)
        d.code(x + 14, y + 46, "TransformerEncoder.ln", 10, anchor="start", fill=MUTED)
        d.label(x + 14, y + 62, "once, after the last block", 10, anchor="start", fill=MUTED)
        x += 94
    d.arrow((x, mid), (x + 22, mid), color=LINE)
    d.label(x + 28, y + 20, "output", 12, anchor="start")
    sub = d._("sublayer")  # the word of the formula
    d.math(360, y + 98, formula.replace(r"\mathrm{sublayer}", rf"\mathrm{{{sub}}}"), 13)


@diagram(720, 362)
def ch07_post_pre_ln(d: Diagram) -> None:
    """Where the LayerNorm sits, over an encoder block's two sublayers: after each residual
    addition (post-LN, the original), or before each sublayer with the residual path left
    untouched and one LayerNorm after the last block (pre-LN, TransformerEncoder.ln)."""
    _ln_stack(d, 50, "post-LN (the original Transformer)", "AddNorm(pre_norm=False)", False,
              r"\mathbf{X} \leftarrow \mathrm{LayerNorm}(\mathbf{X} + \mathrm{sublayer}(\mathbf{X}))")
    _ln_stack(d, 210, "pre-LN", "AddNorm(pre_norm=True)", True,
              r"\mathbf{X} \leftarrow \mathbf{X} + \mathrm{sublayer}(\mathrm{LayerNorm}(\mathbf{X}))")
    d.label(
        360,
        332,
        "pre-LN: from X to the last LayerNorm the residual path passes only through additions; "
        "post-LN normalises it after every sublayer",
        11,
        fill=MUTED,
        width=660,
    )


@diagram(720, 372)
def ch07_kv_cache(d: Diagram) -> None:
    """One decoding step of one attention layer with a key/value cache: only the new token's
    input x_t is projected (W_q, W_k, W_v, as in MultiHeadAttention.forward); its projected key
    and value are appended to the cache, and its query attends over every position so far."""
    t = 5
    # the new token's input and its three projections
    d.label(24, 32, "step t: the newest token only", 13, anchor="start", weight="bold")
    d.rect(24, 300, 60, 22, fill="#ffffff", stroke="#808080", sw=1.1, rx=3)
    d.code(54, 315, "chat", 11)
    d.math(90, 316, r"y_{t-1}", 13, anchor="start")
    d.arrow((54, 300), (54, 284), color=LINE)
    d.box(14, 260, 80, 24, "module", code="embedding", size=10)
    d.arrow((54, 260), (54, 240), color=LINE)
    d.cells(28, 226, 4, cell=13)
    d.math(86, 237, r"\mathbf{x}_t", 13, anchor="start")
    d.polyline([(54, 226), (54, 214), (104, 214), (104, 78)], stroke=LINE, sw=1.3)
    for k, (role, tex, name) in enumerate(
        ((Q, r"\mathbf{q}_t", "q"), (K, r"\mathbf{k}_t", "k"), (V, r"\mathbf{v}_t", "v"))
    ):
        y = 78 + k * 52  # the middle of the row
        d.arrow((104, y), (116, y), color=LINE, sw=1.3, head=6)
        d.box(116, y - 11, 40, 22, "module", code=f"W_{name}", size=10)
        d.arrow((156, y), (170, y), color=role[1], sw=1.3, head=6)
        d.cells(170, y - 6.5, 4, {"q": "query", "k": "key", "v": "value"}[name], cell=13)
        d.math(226, y + 5, tex, 13, anchor="start", fill=role[2])
    # the cache
    cx0, cell = 300, 14
    d.label(cx0 + 40, 32, "the cache (KVCache)", 13, weight="bold")
    for _name, role, y0, tex in (("keys", K, 60, r"\mathbf{K}"), ("values", V, 170, r"\mathbf{V}")):
        for i in range(t):
            new = i == t - 1
            for j in range(4):
                d.rect(
                    cx0 + j * cell,
                    y0 + i * cell,
                    cell,
                    cell,
                    fill=role[0] if not new else role[1],
                    stroke=role[1],
                    sw=0.8,
                    rx=0,
                )
        d.math(cx0 - 8, y0 + 2 * cell, tex, 14, anchor="end", fill=role[2])
        d.label(cx0 + 4 * cell + 8, y0 + (t - 1) * cell + 11, "appended", 11, anchor="start", fill=role[2])
        d.label(cx0 + 4 * cell + 8, y0 + 11, "kept from earlier steps", 11, anchor="start", fill=MUTED)
    d.shape(cx0 + 28, 156, "(t, d)", 10)
    d.arrow((252, 130), (cx0 - 4, 60 + (t - 0.5) * cell), color=K[1], sw=1.3, head=6)
    d.arrow((252, 182), (cx0 - 4, 170 + (t - 0.5) * cell), color=V[1], sw=1.3, head=6)
    # attention of the new query over all t positions
    ax = 540
    d.label(ax + 60, 32, "the new query attends to all", 13, weight="bold")
    ws = [0.06, 0.10, 0.52, 0.22, 0.10]
    d.weights(ax, 112, ws, cell=24, numbers=True, size=9)
    d.math(ax + 60, 102, r"\mathrm{softmax}(\mathbf{q}_t^\top \mathbf{K}^\top / \sqrt{d_k})", 12)
    d.polyline([(254, 78), (266, 78), (266, 46), (520, 46), (520, 118)], stroke=Q[1], sw=1.3)
    d.arrow((520, 118), (ax - 2, 118), color=Q[1], sw=1.3, head=6)
    # every cached key, the new one included, enters the scores
    d.polyline([(cx0 + 4 * cell, 95), (505, 95), (505, 130)], stroke=K[1], sw=1.3)
    d.arrow((505, 130), (ax - 2, 130), color=K[1], sw=1.3, head=6)
    d.arrow((ax + 60, 136), (ax + 60, 178), color=LINE)
    d.op(ax + 60, 190, "×", r=11, size=14)
    d.polyline([(cx0 + 28, 170 + t * cell), (cx0 + 28, 246), (ax + 60, 246)], stroke=V[1], sw=1.2)
    d.arrow((ax + 60, 246), (ax + 60, 201), color=V[1], sw=1.2, head=6)
    d.arrow((ax + 71, 190), (ax + 100, 190), color=O[1])
    d.cells(ax + 100, 184, 3, "output", cell=12)
    d.label(
        ax + 60,
        286,
        "each step projects one token and reads the cache: no earlier position is computed again",
        11,
        fill=MUTED,
        width=200,
    )
    d.label(
        24,
        346,
        "every attention layer keeps its own cache; above the first block, the new position's input "
        "is the output of the block below, not the embedding",
        11,
        fill=MUTED,
        width=470,
        anchor="start",
    )


#: The made-up search of ch07_beam_search: prefix -> total log-probability of the words drawn
#: after <bos>. The drawn extensions of a prefix have probabilities that sum to at most 1 (the rest
#: of the vocabulary shares what is left). Which prefixes are kept, which hypotheses finish and which
#: one wins are not written here: attnlib's beam_search_ids decides them (:func:`beam_run`).
BEAM_TREE = {
    ("le",): -0.5, ("un",): -1.2, ("la",): -2.5,
    ("le", "chat"): -1.0, ("le", "chien"): -1.7, ("un", "chat"): -1.5, ("un", "chien"): -2.6,
    ("le", "chat", "dort"): -1.3, ("le", "chat", "<eos>"): -2.5,
    ("un", "chat", "<eos>"): -1.7, ("un", "chat", "dort"): -3.3,
    ("le", "chat", "dort", "<eos>"): -1.8, ("le", "chat", "dort", "."): -2.9,
}
BEAM_SIZE, BEAM_ALPHA = 2, 0.6


@functools.cache
def beam_run() -> dict:
    """Run attnlib's ``beam_search_ids`` (beam ``BEAM_SIZE``, ``alpha = BEAM_ALPHA``) on a model
    whose next-token log-probabilities are :data:`BEAM_TREE`'s. Returns ``extended`` (the prefixes
    the search extended, i.e. kept), ``finished`` {hypothesis: (log P, lp, log P / lp)} for the
    hypotheses that ended in <eos> (the winner with alpha = 0.6 and the one with alpha = 0 are both
    among them, which the search itself reports), and ``winner``."""
    import torch
    from torch import nn

    from attnlib.decoding import beam_search_ids, gnmt_length_penalty

    words = sorted({w for prefix in BEAM_TREE for w in prefix} - {"<eos>"})
    vocab = ["<bos>", "<eos>", *words] + [f"w{i}" for i in range(40)]  # 40 words never drawn
    index = {w: i for i, w in enumerate(vocab)}
    extended = set()

    class Tree(nn.Module):  # a decoder without a network: the log-probabilities of BEAM_TREE
        def init_state(self, enc_outputs, valid_lens):
            return None

        def reorder_state(self, state, order):
            return state

        def cross_attentions(self):
            return []

        def forward(self, ys, state):  # ys (alive, t + 1) -> logits (alive, t + 1, vocab)
            logits = torch.full((*ys.shape, len(vocab)), -1e9, dtype=torch.float64)
            for r, row in enumerate(ys.tolist()):
                prefix = tuple(vocab[i] for i in row[1:])
                extended.add(prefix)
                base = BEAM_TREE.get(prefix, 0.0)
                drawn = {p[-1]: math.exp(v - base) for p, v in BEAM_TREE.items() if p[:-1] == prefix}
                rest = (1 - sum(drawn.values())) / (len(vocab) - 1 - len(drawn))  # <bos> never follows
                logits[r, -1] = math.log(rest)
                logits[r, -1, 0] = -1e9
                for w, p in drawn.items():
                    logits[r, -1, index[w]] = math.log(p)
            return logits, state

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.decoder = Tree()

        def encoder(self, src, valid_lens):
            return None

    src, valid = torch.zeros(1, 1, dtype=torch.long), torch.ones(1)
    finished = {}
    for alpha in (BEAM_ALPHA, 0.0):
        ids, log_p, _, done = beam_search_ids(Model(), src, valid, 0, 1, BEAM_SIZE, 6, alpha,
                                              use_cache=False, need_weights=False)
        assert done, "the made-up search must finish"
        finished[tuple(vocab[i] for i in ids)] = log_p
    winner = max(finished, key=lambda y: finished[y] / gnmt_length_penalty(len(y), BEAM_ALPHA))
    return {"extended": extended,
            "finished": {y: (lp, gnmt_length_penalty(len(y), BEAM_ALPHA),
                             lp / gnmt_length_penalty(len(y), BEAM_ALPHA)) for y, lp in finished.items()},
            "winner": winner}


def _minus(v: float, fmt: str = "{:.1f}") -> str:
    return fmt.format(v).replace("-", "−")


@diagram(720, 396)
def ch07_beam_search(d: Diagram) -> None:
    """Beam search with k = 2 as attnlib's beam_search_ids runs it: every kept prefix is extended
    by every word and the k best total log-probabilities are kept; a kept extension ending in
    <eos> is finished and the beam shrinks by one; the finished hypotheses are ranked by
    log P / lp(|Y|) (alpha = 0.6), which here prefers the longer one."""
    run = beam_run()
    cols = [44, 184, 324, 464, 604]
    ys = {  # the rows of the drawing, one per prefix
        (): 126, ("le",): 64, ("un",): 140, ("la",): 212,
        ("le", "chat"): 40, ("le", "chien"): 90, ("un", "chat"): 150, ("un", "chien"): 202,
        ("le", "chat", "dort"): 30, ("le", "chat", "<eos>"): 78,
        ("un", "chat", "<eos>"): 136, ("un", "chat", "dort"): 190,
        ("le", "chat", "dort", "<eos>"): 30, ("le", "chat", "dort", "."): 78,
    }
    scores = {(): 0.0, **BEAM_TREE}

    def status(prefix):
        if prefix in run["finished"]:
            return "finished"
        return "kept" if prefix in run["extended"] else "dropped"

    bw, bh = 72, 34
    for prefix in BEAM_TREE:  # the edges first, so the boxes cover their ends
        parent, kept = prefix[:-1], status(prefix) != "dropped"
        d.polyline([(cols[len(parent)] + bw / 2, ys[parent]), (cols[len(prefix)] - bw / 2, ys[prefix])],
                   stroke=INK if kept else "#bdbdbd", sw=1.8 if kept else 1.1, dash=None if kept else "4 3")
    for prefix, y in ys.items():
        x, state = cols[len(prefix)], status(prefix)
        styles = {"kept": (O[0], O[1]), "finished": (O[0], INK), "dropped": ("#f2f2f2", "#bdbdbd")}
        fill, stroke = styles[state]
        if prefix == run["winner"]:
            d.rect(x - bw / 2 - 4, y - bh / 2 - 4, bw + 8, bh + 8, fill="none", stroke=INK, sw=1.4, rx=6)
        d.rect(x - bw / 2, y - bh / 2, bw, bh, fill=fill, stroke=stroke,
               sw=2.2 if state == "finished" else 1.2, rx=4)
        ink = MUTED if state == "dropped" else INK
        d.code(x, y - 2, prefix[-1] if prefix else "<bos>", 11, fill=ink)
        if prefix:
            d.text(x, y + 12, _minus(scores[prefix]), 10, fill=ink)
    for k in range(1, 5):
        d.label(cols[k], 246, f"step {k}", 12, fill=MUTED)
    d.label(360, 272, "kept: the k = 2 best log-probabilities; dashed: dropped; thick: ends in <eos>, "
            "finished (the beam shrinks by one)", 11, fill=MUTED)
    # the finished hypotheses, ranked by log P / lp
    d.rect(12, 296, 696, 92, fill="#fafafa", stroke="#d0d0d0", sw=1, rx=8)
    d.label(24, 316, "finished, ranked by", 12, anchor="start", weight="bold")
    d.math(160, 317, r"\log P / \mathrm{lp},\ \ \mathrm{lp} = ((5 + |Y|) / 6)^{0.6}", 13, anchor="start")
    ranked = sorted(run["finished"].items(), key=lambda item: -item[1][2])
    for r, (hyp, (log_p, lp, s)) in enumerate(ranked):
        y = 342 + r * 24
        tx = 28
        for token in hyp:  # one text per token: the words are French tokens, not a phrase to translate
            d.code(tx, y, token, 11, anchor="start")
            tx += text_width(token, 11, "c") + 7
        d.text(250, y, f"{_minus(log_p)} / {lp:.2f} = {_minus(s, '{:.2f}')}", 11, anchor="start")
        d.text(430, y, f"|Y| = {len(hyp)}", 11, anchor="start", fill=MUTED)
        best_log_p = run["finished"][run["winner"]][0]
        if hyp == run["winner"]:
            d.label(500, y, "the winner", 11, anchor="start", weight="bold")
        elif log_p > best_log_p and len(hyp) < len(run["winner"]):
            d.label(500, y, "more probable, but shorter", 11, anchor="start", fill=MUTED)
