"""A small SVG drawing kit for the book's diagrams: one visual language for every chapter.

Every diagram is a :class:`Diagram`, a white card of fixed size in pixels (its SVG scales down with
the page). Text stays text (``<text>`` elements, so the SVG is small, sharp and searchable); widths
are estimated with the DejaVu fonts that ship with matplotlib, which are as wide as or wider than
the fonts a reader's browser falls back to, so nothing measured to fit overflows.

The visual language (``docs/diagrams.md``):

* queries vermilion, keys blue, values green, outputs purple (the Okabe-Ito colours, which stay
  apart for colour-blind readers); each has a light fill and a dark outline and label;
* attention weights are cells coloured with viridis from 0 to 1 and signed numbers (scores,
  embeddings) with RdBu_r centred on 0, as in the book's heatmaps (``attnlib.show_heatmaps``);
* modules are grey boxes named like attnlib's classes, in a monospace font;
* symbols are written as in the formulas: bold upright vectors (``\\mathbf{q}``), italic scalars and
  Greek letters, sub- and superscripts;
* tensor shapes ride on arrows in small grey monospace.

Labels meant for readers go through ``d._("english")``, which records them for the catalogue
``locale/zh_CN/LC_MESSAGES/diagrams.po`` and returns the Chinese in the Chinese edition.
"""

from __future__ import annotations

import html
import math
import re
from functools import cache
from pathlib import Path

# --------------------------------------------------------------------------- colours
INK = "#1a1a1a"  # text and outlines
MUTED = "#595959"  # secondary text (shapes), 7:1 on white
LINE = "#4d4d4d"  # arrows
GRID = "#bfbfbf"
PAPER = "#ffffff"
ROLES = {  # role: (fill, outline, label text) -- label colours reach 4.5:1 on white
    "query": ("#fbe1cf", "#d55e00", "#a64200"),
    "key": ("#d4e7f5", "#0072b2", "#00588a"),
    "value": ("#cdeee2", "#009e73", "#00704f"),
    "output": ("#f5dcea", "#cc79a7", "#8f3a6c"),
    "module": ("#eeeeee", "#4d4d4d", INK),
    "state": ("#f3f0e4", "#8c7a3c", "#5c4f1f"),  # hidden states of RNNs
    "plain": ("#ffffff", "#808080", INK),
    "mask": ("#e6e6e6", "#a6a6a6", MUTED),
}
MASK_SLASH = "#8c8c8c"  # masked or padded entries: the mask's grey, crossed out by one slash
# No text is smaller than this on the card (720 px wide): a phone shows the card at about half size,
# where 10 px is already small; the website's viewer enlarges a diagram on a tap.
MIN_TEXT = 10.0
MIN_MATH = 12.5  # formulas: their sub- and superscripts are 0.72 of it, 9 px

SANS = (
    "'DejaVu Sans', 'Noto Sans', 'Helvetica Neue', Arial, 'Noto Sans CJK SC', "
    "'Source Han Sans SC', 'WenQuanYi Zen Hei', 'PingFang SC', 'Microsoft YaHei', sans-serif"
)
SERIF = "'DejaVu Serif', 'Times New Roman', Times, serif"
MONO = "'DejaVu Sans Mono', Menlo, Consolas, 'Noto Sans CJK SC', 'WenQuanYi Zen Hei', monospace"
STYLE = (
    f".s{{font-family:{SANS}}} .m{{font-family:{SERIF}}} .c{{font-family:{MONO}}} "
    "text{dominant-baseline:alphabetic}"
)


@cache
def _lut(name: str) -> tuple[tuple[int, int, int], ...]:
    from matplotlib import colormaps

    cmap = colormaps[name]
    return tuple(tuple(round(255 * c) for c in cmap(i / 255)[:3]) for i in range(256))


def cmap(name: str, t: float) -> str:
    """The colour of ``t`` in [0, 1] on the matplotlib map ``name`` ('viridis', 'RdBu_r')."""
    r, g, b = _lut(name)[max(0, min(255, round(t * 255)))]
    return f"#{r:02x}{g:02x}{b:02x}"


def viridis(w: float) -> str:
    return cmap("viridis", w)


def signed(v: float, limit: float = 1.0) -> str:
    """RdBu_r centred on 0: white at 0, red above, blue below."""
    return cmap("RdBu_r", 0.5 + 0.5 * max(-1.0, min(1.0, v / limit)))


def ink_on(colour: str) -> str:
    """Black or white text, whichever reads better on ``colour``."""
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    lum = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    y = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2]
    return "#ffffff" if (1.05 / (y + 0.05)) > ((y + 0.05) / 0.05) else INK


# --------------------------------------------------------------------------- text widths
@cache
def _font(kind: str):
    import matplotlib
    from matplotlib.ft2font import FT2Font

    names = {
        "s": "DejaVuSans.ttf",
        "sb": "DejaVuSans-Bold.ttf",
        "m": "DejaVuSerif.ttf",
        "mi": "DejaVuSerif-Italic.ttf",
        "mb": "DejaVuSerif-Bold.ttf",
        "c": "DejaVuSansMono.ttf",
    }
    return FT2Font(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / names[kind]))


JOIN = "\u2060"  # WORD JOINER: no line breaks between two characters it joins
# Chinese words a wrapped label never splits (Chinese breaks between any two characters otherwise)
KEEP_TOGETHER = ("注意力", "均匀", "隐藏", "隐状态", "查询", "填充", "位置", "缓存", "权重", "输出", "词元")


def _is_wide(ch: str) -> bool:
    return ord(ch) >= 0x2E80  # CJK ideographs, kana, full-width punctuation: one em each


@cache
def _advance(kind: str, ch: str) -> float:
    """Advance of one character, in em."""
    if ch == JOIN:
        return 0.0
    if _is_wide(ch):
        return 1.0
    font = _font(kind)
    index = font.get_char_index(ord(ch))
    if index == 0:
        return 0.6
    font.set_size(100, 72)
    return font.load_glyph(index).linearHoriAdvance / 65536 / 100


def text_width(s: str, size: float, kind: str = "s") -> float:
    """Estimated width in px of ``s`` at font ``size`` (kind: s sans, sb bold, c mono, m serif)."""
    return sum(_advance(kind, ch) for ch in s) * size


def wrap(s: str, size: float, width: float, kind: str = "s") -> list[str]:
    """Break ``s`` into lines no wider than ``width`` (at spaces; Chinese between any two characters
    not joined by a word joiner, which is dropped from the lines)."""
    lines, line = [], ""
    for word in KEEP_TOGETHER:
        s = s.replace(word, JOIN.join(word))
    tokens = re.findall(
        r"(?:[\u2e80-\uffff]\u2060)*[\u2e80-\uffff]|[^\s\u2e80-\uffff\u2060]+\s*|\s+|\u2060", s
    )
    for tok in tokens:
        if line and text_width((line + tok).rstrip(), size, kind) > width:
            lines.append(line.rstrip())
            line = tok.lstrip()
        else:
            line += tok
    if line.strip():
        lines.append(line.rstrip())
    if len(lines) > 1 and len(lines[-1]) == 1 and _is_wide(lines[-1]) and len(lines[-2]) > 2:
        lines[-2], lines[-1] = lines[-2][:-1], lines[-2][-1] + lines[-1]  # no orphan character
    return [line.replace(JOIN, "") for line in lines] or [""]


# --------------------------------------------------------------------------- maths as tspans
GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ϵ",
    "theta": "θ",
    "lambda": "λ",
    "mu": "μ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "ell": "ℓ",
    "pi": "π",
    "omega": "ω",
    "Sigma": "Σ",
}
SYMBOLS = {
    "top": "⊤",
    "cdot": "·",
    "times": "×",
    "sum": "∑",
    "odot": "⊙",
    "oplus": "⊕",
    "dots": "…",
    "ldots": "…",
    "in": "∈",
    "sqrt": "√",
    "leftarrow": "←",
    "rightarrow": "→",
    "to": "→",
    "le": "≤",
    "propto": "∝",
    "left": "",
    "right": "",
    "Delta": "Δ",
    "ge": "≥",
    "approx": "≈",
    "neq": "≠",
    "infty": "∞",
    "prod": "∏",
    "quad": "\u2003",
    ",": "\u2009",
    " ": " ",
    "mid": "|",
    "sim": "∼",
    "prime": "′",
    "max": "max",
    "exp": "exp",
    "tanh": "tanh",
    "log": "log",
    "cos": "cos",
    "sin": "sin",
    "arg": "arg ",
    "min": "min",
}
UPRIGHT_WORDS = {"max", "exp", "tanh", "log", "cos", "sin"}


def parse_math(tex: str) -> list[tuple[str, str, int]]:
    """A small LaTeX subset as runs (text, style, level): style is 'i' (italic), 'r' (upright) or
    'b' (bold upright); level 0 is the baseline, -1 a subscript, +1 a superscript."""
    runs: list[tuple[str, str, int]] = []
    i = 0

    def group(j: int) -> tuple[str, int]:
        if j < len(tex) and tex[j] == "{":
            depth, k = 0, j
            while k < len(tex):
                depth += {"{": 1, "}": -1}.get(tex[k], 0)
                if depth == 0:
                    return tex[j + 1 : k], k + 1
                k += 1
            raise ValueError(f"unbalanced braces in {tex!r}")
        if j < len(tex) and tex[j] == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", tex[j:])
            end = j + len(m.group(0))
            if m.group(1) in ("mathbf", "mathrm", "text", "operatorname", "mathit", "boldsymbol"):
                _, end = group(end)  # the command and its argument
            return tex[j:end], end
        return tex[j : j + 1], j + 1

    def emit(sub: str, style: str | None, level: int) -> None:
        for text, st, lv in parse_math(sub):
            runs.append((text, style if style and st != "r" or style == "b" else st, lv + level))

    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
            name = m.group(1)
            i += len(m.group(0))
            if name in ("mathbf", "boldsymbol"):
                body, i = group(i)
                emit(body, "b", 0)
            elif name in ("mathrm", "text", "operatorname"):
                body, i = group(i)
                runs.append((body, "r", 0))
            elif name in ("tilde", "hat", "bar"):  # a combining accent on the last character
                body, i = group(i)
                inner = parse_math(body)
                mark = {"tilde": "\u0303", "hat": "\u0302", "bar": "\u0304"}[name]
                runs.extend(inner[:-1] + [(inner[-1][0] + mark, *inner[-1][1:])])
            elif name == "mathit":
                body, i = group(i)
                runs.append((body, "i", 0))
            elif name in GREEK:
                runs.append((GREEK[name], "i" if name.islower() else "r", 0))
            elif name in SYMBOLS:
                runs.append((SYMBOLS[name], "r", 0))
            else:
                raise ValueError(f"unknown TeX command \\{name} in {tex!r}")
        elif ch in "_^":
            body, i = group(i + 1)
            emit(body, None, -1 if ch == "_" else 1)
        elif ch in "{}":
            i += 1
        elif ch.isalpha():
            runs.append((ch, "i", 0))
            i += 1
        else:
            runs.append(("−" if ch == "-" else ch, "r", 0))
            i += 1
    merged: list[tuple[str, str, int]] = []
    for run in runs:
        if merged and merged[-1][1:] == run[1:]:
            merged[-1] = (merged[-1][0] + run[0], *run[1:])
        else:
            merged.append(run)
    return merged


ACCENTS = {"\u0303": "\u02dc", "\u0302": "\u02c6", "\u0304": "\u02c9"}  # combining -> spacing
TALL = set("bdfhklt") | set("ABCDEFGHIJKLMNOPQRSTUVWXYZ") | set("0123456789")


def math_layout(tex: str, size: float) -> list[tuple[str, str, int, float, float]]:
    """The runs of a formula as (text, style, level, dx, width): a superscript that follows a
    subscript moves back over it (``W_1^{(q)}`` stacks its indices, as TeX does), and the pair
    advances by the wider of the two. An accent (a combining mark) stays in its run's text."""
    out = []
    for text, style, level in parse_math(tex):
        kind = {"i": "mi", "r": "m", "b": "mb"}[style]
        bare = "".join(ch for ch in text if ch not in ACCENTS)
        out.append([text, style, level, 0.0, text_width(bare, size * (0.72 if level else 1.0), kind)])
    k = 0
    while k < len(out):
        if out[k][2] < 0:
            sub_end = k
            while sub_end < len(out) and out[sub_end][2] < 0:
                sub_end += 1
            sup_end = sub_end
            while sup_end < len(out) and out[sup_end][2] > 0:
                sup_end += 1
            if sup_end > sub_end:  # a subscript, then a superscript: stack them
                sub_w = sum(r[4] for r in out[k:sub_end])
                sup_w = sum(r[4] for r in out[sub_end:sup_end])
                out[sub_end][3] -= sub_w
                if sub_w > sup_w:
                    if sup_end < len(out):
                        out[sup_end][3] += sub_w - sup_w
                    else:
                        out.append(["", "r", 0, sub_w - sup_w, 0.0])
            k = sup_end
        else:
            k += 1
    return [tuple(r) for r in out]


def math_width(tex: str, size: float) -> float:
    return sum(dx + w for _, _, _, dx, w in math_layout(tex, size))


# --------------------------------------------------------------------------- the canvas
def _clip(segment, box):
    """The piece of ``segment`` (x0, y0, x1, y1) inside ``box`` (x0, x1, top, bottom), or None
    (Liang-Barsky)."""
    sx0, sy0, sx1, sy1 = segment
    dx, dy = sx1 - sx0, sy1 - sy0
    lo, hi = 0.0, 1.0
    for p, q in ((-dx, sx0 - box[0]), (dx, box[1] - sx0), (-dy, sy0 - box[2]), (dy, box[3] - sy0)):
        if p == 0:
            if q < 0:
                return None
        elif p < 0:
            lo = max(lo, q / p)
        else:
            hi = min(hi, q / p)
    if lo >= hi:
        return None
    return (sx0 + lo * dx, sy0 + lo * dy, sx0 + hi * dx, sy0 + hi * dy)


def _hides(cover, piece) -> bool:
    """Whether an opaque shape lies over the whole ``piece`` of a line (both ends: shapes are convex)."""
    kind, geometry, _ = cover
    ends = ((piece[0], piece[1]), (piece[2], piece[3]))
    if kind == "rect":
        x0, y0, x1, y1 = geometry
        return all(x0 <= x <= x1 and y0 <= y <= y1 for x, y in ends)
    cx, cy, r = geometry
    return all((x - cx) ** 2 + (y - cy) ** 2 <= r * r for x, y in ends)


def _f(v: float) -> str:
    """Coordinates with one decimal, no trailing zeros: the same file on every machine."""
    s = f"{v:.1f}"
    return s[:-2] if s.endswith(".0") else s


class Diagram:
    """An SVG card ``width`` x ``height`` px. ``translate`` maps an English label to the
    edition's language (identity for English); ``collect`` receives every label."""

    def __init__(self, name: str, width: float, height: float, translate=None, collect=None):
        self.name, self.width, self.height = name, width, height
        self._translate = translate or (lambda s: s)
        self._collect = collect
        self.parts: list[str] = []
        self.extents: list[tuple[float, float, float, float, str]] = []  # (x0, x1, top, bottom, text)
        # every drawn line, (x0, y0, x1, y1, k) with k its place in the drawing order, and every
        # opaque rectangle or circle, which hides the lines drawn before it: what crossings() reads
        self.segments: list[tuple[float, float, float, float, int]] = []
        self.covers: list[tuple[str, tuple[float, ...], int]] = []

    # ----------------------------------------------------------------- translation
    def _(self, english: str) -> str:
        """A label a reader reads: recorded for the catalogue, translated in the Chinese edition."""
        if self._collect is not None:
            self._collect(english)
        return self._translate(english)

    # ----------------------------------------------------------------- primitives
    def add(self, svg: str) -> None:
        self.parts.append(svg)

    def _lines(self, points, closed=False) -> None:
        """Record the straight pieces of a drawn outline, for the check that no line crosses a text."""
        points = [tuple(p) for p in points]
        if closed:
            points.append(points[0])
        self.segments += [(*a, *b, len(self.parts)) for a, b in zip(points, points[1:], strict=False)]

    def crossings(self, inset: float = 1.0) -> list[tuple[str, tuple[int, int, int, int]]]:
        """(text, line) for every visible line that runs through a text: a line enters the text's
        box shrunk by ``inset`` px, and no opaque shape drawn after the line hides that piece."""
        found = []
        for x0, x1, top, bottom, text in self.extents:
            box = (x0 + inset, x1 - inset, top + inset, bottom - inset)
            if box[1] <= box[0] or box[3] <= box[2]:
                continue
            for sx0, sy0, sx1, sy1, k in self.segments:
                piece = _clip((sx0, sy0, sx1, sy1), box)
                if piece and not any(_hides(cover, piece) for cover in self.covers if cover[2] > k):
                    found.append((text, tuple(round(v) for v in (sx0, sy0, sx1, sy1))))
        return found

    def rect(self, x, y, w, h, fill=PAPER, stroke=INK, sw=1.5, rx=4, dash=None, opacity=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        extra += f' fill-opacity="{opacity}"' if opacity is not None else ""
        if stroke != "none" and sw > 0:
            self._lines([(x, y), (x + w, y), (x + w, y + h), (x, y + h)], closed=True)
        if fill != "none" and opacity is None:
            self.covers.append(("rect", (x, y, x + w, y + h), len(self.parts)))
        self.add(
            f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" rx="{_f(rx)}" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{_f(sw)}"{extra}/>'
        )

    def circle(self, cx, cy, r, fill=PAPER, stroke=INK, sw=1.5, dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        if stroke != "none" and sw > 0:
            turns = [a * math.pi / 12 for a in range(24)]  # the circle as 24 chords
            self._lines([(cx + r * math.cos(a), cy + r * math.sin(a)) for a in turns], closed=True)
        if fill != "none":
            self.covers.append(("circle", (cx, cy, r), len(self.parts)))
        self.add(
            f'<circle cx="{_f(cx)}" cy="{_f(cy)}" r="{_f(r)}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{_f(sw)}"{extra}/>'
        )

    def polyline(self, points, stroke=LINE, sw=1.6, dash=None, fill="none"):
        pts = " ".join(f"{_f(x)},{_f(y)}" for x, y in points)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self._lines(points, closed=fill != "none")
        self.add(
            f'<polyline points="{pts}" fill="{fill}" stroke="{stroke}" stroke-width="{_f(sw)}" '
            f'stroke-linejoin="round" stroke-linecap="round"{extra}/>'
        )

    def polygon(self, points, fill=INK, stroke="none", sw=1.0):
        pts = " ".join(f"{_f(x)},{_f(y)}" for x, y in points)
        self._lines(points, closed=True)
        self.add(f'<polygon points="{pts}" fill="{fill}" stroke="{stroke}" stroke-width="{_f(sw)}"/>')

    def path(self, d: str, stroke=LINE, sw=1.6, fill="none", dash=None):
        """An SVG path of straight pieces only (M and L commands, absolute)."""
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        for piece in re.findall(r"M[^M]+", d):
            numbers = [float(v) for v in re.findall(r"-?[\d.]+", piece)]
            self._lines(list(zip(numbers[::2], numbers[1::2], strict=True)))
        self.add(
            f'<path d="{d}" fill="{fill}" stroke="{stroke}" stroke-width="{_f(sw)}" '
            f'stroke-linecap="round"{extra}/>'
        )

    def arrow(self, *points, color=LINE, sw=1.6, head=8.0, dash=None, start_head=False):
        """A polyline through ``points`` with an arrowhead at the end (and at the start)."""
        points = [tuple(p) for p in points]
        ends = [(points[-2], points[-1])] + ([(points[1], points[0])] if start_head else [])
        trimmed = list(points)
        for k, ((x0, y0), (x1, y1)) in enumerate(ends):
            length = math.hypot(x1 - x0, y1 - y0) or 1.0
            ux, uy = (x1 - x0) / length, (y1 - y0) / length
            bx, by = x1 - ux * head, y1 - uy * head
            self.polygon(
                [
                    (x1, y1),
                    (bx - uy * head * 0.45, by + ux * head * 0.45),
                    (bx + uy * head * 0.45, by - ux * head * 0.45),
                ],
                fill=color,
            )
            if k == 0:
                trimmed[-1] = (x1 - ux * head * 0.8, y1 - uy * head * 0.8)
            else:
                trimmed[0] = (x1 - ux * head * 0.8, y1 - uy * head * 0.8)
        self.polyline(trimmed, stroke=color, sw=sw, dash=dash)

    def text(
        self, x, y, s, size=14, anchor="middle", fill=INK, kind="s", weight=None, italic=False, label=False
    ):
        """Plain text; ``y`` is the baseline. ``label=True`` marks it translatable in the SVG
        (class ``t``), which the Chinese edition's check reads."""
        s = s.replace(JOIN, "")
        size = max(size, MIN_TEXT)
        cls = {"s": "s", "sb": "s", "c": "c", "m": "m"}[kind] + (" t" if label else "")
        width = text_width(s, size, "m" if kind == "m" else kind)
        x0 = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
        self.extents.append((x0, x0 + width, y - 0.75 * size, y + 0.2 * size, s))
        attrs = ' font-weight="bold"' if (weight == "bold" or kind == "sb") else ""
        attrs += ' font-style="italic"' if italic else ""
        self.add(
            f'<text x="{_f(x)}" y="{_f(y)}" class="{cls}" font-size="{_f(size)}" '
            f'text-anchor="{anchor}" fill="{fill}"{attrs}>{html.escape(s, quote=False)}</text>'
        )

    def label(
        self,
        x,
        y,
        english,
        size=14,
        anchor="middle",
        fill=INK,
        width=None,
        weight=None,
        line_height=1.25,
        valign="baseline",
    ):
        """A translated label, wrapped to ``width`` px if given, as one ``<text>`` of class ``t``
        (translatable: the Chinese edition's check reads it). ``y`` is the first baseline, or with
        ``valign='middle'`` the middle of the block of lines. Returns the number of lines."""
        s = self._(english)
        size = max(size, MIN_TEXT)
        kind = "sb" if weight == "bold" else "s"
        lines = wrap(s, size, width, kind) if width else [s.replace(JOIN, "")]
        if valign == "middle":
            y = y - (len(lines) - 1) * size * line_height / 2 + size * 0.36
        spans = []
        for k, line in enumerate(lines):
            w = text_width(line, size, kind)
            x0 = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
            yk = y + k * size * line_height
            self.extents.append((x0, x0 + w, yk - 0.75 * size, yk + 0.2 * size, line))
            dy = f' dy="{_f(size * line_height)}"' if k else ""
            spans.append(f'<tspan x="{_f(x)}"{dy}>{html.escape(line, quote=False)}</tspan>')
        bold = ' font-weight="bold"' if weight == "bold" else ""
        self.add(
            f'<text x="{_f(x)}" y="{_f(y)}" class="s t" font-size="{_f(size)}" text-anchor="{anchor}" '
            f'fill="{fill}"{bold}>' + "".join(spans) + "</text>"
        )
        return len(lines)

    def math(self, x, y, tex, size=16, anchor="middle", fill=INK):
        """A formula in a LaTeX subset (:func:`parse_math`); ``y`` is the baseline. Accents
        (``\\tilde``, ``\\hat``, ``\\bar``) are drawn as their own glyph centred over the letter,
        higher over a tall one: a combining mark lands wherever the browser's fallback font puts it."""
        size = max(size, MIN_MATH)
        width = math_width(tex, size)
        x0 = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
        self.extents.append((x0, x0 + width, y - 0.85 * size, y + 0.3 * size, tex))
        spans, level, cursor, accents = [], 0, x0, []
        for text, style, lv, dx, w in math_layout(tex, size):
            shift = {0: 0.0, -1: 0.28, 1: -0.38}
            dy = (shift[max(-1, min(1, lv))] - shift[max(-1, min(1, level))]) * size
            level = lv
            run_size = size * (0.72 if lv else 1.0)
            kind = {"i": "mi", "r": "m", "b": "mb"}[style]
            cursor += dx
            bare = ""
            for ch in text:
                if ch in ACCENTS and bare:
                    last = bare[-1]
                    centre = cursor + text_width(bare[:-1], run_size, kind)
                    centre += text_width(last, run_size, kind) / 2
                    lift = (0.25 if last in TALL else 0.0) * run_size
                    accents.append((centre + (0.08 * run_size if style == "i" else 0.0), lift, ACCENTS[ch]))
                else:
                    bare += ch
            cursor += w
            attrs = ' font-style="italic"' if style == "i" else ""
            attrs += ' font-weight="bold"' if style == "b" else ""
            if lv:
                attrs += f' font-size="{_f(run_size)}"'
            if dx:
                attrs += f' dx="{_f(dx)}"'
            if dy:
                attrs += f' dy="{_f(dy)}"'
            spans.append(f"<tspan{attrs}>{html.escape(bare, quote=False)}</tspan>")
        self.add(
            f'<text x="{_f(x0)}" y="{_f(y)}" class="m" font-size="{_f(size)}" fill="{fill}">'
            + "".join(spans)
            + "</text>"
        )
        for centre, lift, glyph in accents:
            self.add(
                f'<text x="{_f(centre)}" y="{_f(y - lift)}" class="m" font-size="{_f(size)}" '
                f'text-anchor="middle" fill="{fill}">{glyph}</text>'
            )
        return width

    def code(self, x, y, s, size=13, anchor="middle", fill=INK):
        self.text(x, y, s, size, anchor, fill, kind="c")

    def shape(self, x, y, s, size=11, anchor="middle"):
        """A tensor shape such as ``(batch, queries, keys)`` in small grey monospace."""
        self.text(x, y, s, size, anchor, MUTED, kind="c")

    # ----------------------------------------------------------------- composites
    def box(
        self,
        x,
        y,
        w,
        h,
        role="module",
        title=None,
        code=None,
        tex=None,
        size=14,
        dash=None,
        sw=1.6,
        rx=6,
        title_width=None,
    ):
        """A rounded box in ``role``'s colours, centred text: a translated ``title``, an
        attnlib class name ``code`` (monospace) or a formula ``tex``, stacked in that order."""
        fill, stroke, ink = ROLES[role]
        self.rect(x, y, w, h, fill=fill, stroke=stroke, sw=sw, rx=rx, dash=dash)
        items = [i for i in (("t", title), ("c", code), ("m", tex)) if i[1]]
        n_title = len(wrap(self._(title), size, title_width or w - 12)) if title else 0
        heights = {"t": size * 1.25 * n_title, "c": size * 1.2, "m": size * 1.3}
        total = sum(heights[k] for k, _ in items)
        cy = y + h / 2 - total / 2
        for kind, content in items:
            if kind == "t":
                self.label(
                    x + w / 2,
                    cy + size * 0.95,
                    content,
                    size,
                    fill=INK if role == "module" else ink,
                    width=title_width or w - 12,
                )
            elif kind == "c":
                self.code(x + w / 2, cy + size * 0.92, content, size * 0.95)
            else:
                self.math(x + w / 2, cy + size * 1.0, content, size * 1.1)
            cy += heights[kind]

    def cells(
        self,
        x,
        y,
        n,
        role="plain",
        cell=16,
        orient="h",
        colours=None,
        values=None,
        fmt="{:.2f}",
        size=10,
        gap=0.0,
        stroke=None,
        hatch=None,
        sw=1.2,
    ):
        """A vector of ``n`` cells from (x, y) going right (``orient='h'``) or down ('v').
        ``colours`` gives each cell's fill (default: the role's fill); ``values`` writes numbers
        in them. ``hatch`` lists cells drawn as masked. Returns the (x, y, w, h) bounding box."""
        fill, outline, _ = ROLES[role]
        stroke = stroke or outline
        for i in range(n):
            cx = x + (i * (cell + gap) if orient == "h" else 0)
            cy = y + (i * (cell + gap) if orient == "v" else 0)
            colour = colours[i] if colours else fill
            masked = hatch is not None and i in hatch
            self.rect(
                cx,
                cy,
                cell,
                cell,
                fill=ROLES["mask"][0] if masked else colour,
                stroke=ROLES["mask"][1] if masked else stroke,
                sw=sw,
                rx=1.5,
            )
            if masked:
                self.polyline([(cx + 3, cy + cell - 3), (cx + cell - 3, cy + 3)], stroke=MASK_SLASH, sw=1.2)
            elif values is not None and values[i] is not None:
                text = values[i] if isinstance(values[i], str) else fmt.format(values[i])
                self.text(
                    cx + cell / 2, cy + cell / 2 + size * 0.36, text, size, fill=ink_on(colour), kind="s"
                )
        length = n * cell + (n - 1) * gap
        return (x, y, length, cell) if orient == "h" else (x, y, cell, length)

    def weights(self, x, y, ws, cell=16, orient="h", numbers=False, size=9, gap=0.0):
        """Attention weights as viridis cells (0 dark purple, 1 yellow)."""
        return self.cells(
            x,
            y,
            len(ws),
            "plain",
            cell,
            orient,
            [viridis(w) for w in ws],
            [f"{w:.2f}".lstrip("0") if w < 1 else "1" for w in ws] if numbers else None,
            size=size,
            gap=gap,
            stroke="#555555",
            sw=0.8,
        )

    def matrix(
        self, x, y, M, cell=14, cmap_name="viridis", limit=None, stroke="#ffffff", sw=0.6, masked=None
    ):
        """A heatmap of the nested list ``M`` (rows down). ``masked`` (row, col) cells are grey and
        crossed out, as everywhere. The cells share one group's stroke, which keeps large matrices
        small."""
        limit = limit or max(abs(v) for row in M for v in row) or 1.0
        cells, slashes = [], []
        for i, row in enumerate(M):
            for j, v in enumerate(row):
                if masked and (i, j) in masked:
                    colour = ROLES["mask"][0]
                    a, b = x + j * cell, y + i * cell
                    inset = max(2.0, cell / 5)
                    slashes.append(
                        f"M{_f(a + inset)} {_f(b + cell - inset)}L{_f(a + cell - inset)} {_f(b + inset)}"
                    )
                elif cmap_name == "viridis":
                    colour = viridis(v / limit)
                else:
                    colour = signed(v, limit)
                cells.append(
                    f'<rect x="{_f(x + j * cell)}" y="{_f(y + i * cell)}" width="{_f(cell)}" '
                    f'height="{_f(cell)}" fill="{colour}"/>'
                )
        self.add(f'<g stroke="{stroke}" stroke-width="{_f(sw)}">' + "".join(cells) + "</g>")
        if slashes:
            self.path("".join(slashes), stroke=MASK_SLASH, sw=0.9 if cell < 16 else 1.2)
        return (x, y, len(M[0]) * cell, len(M) * cell)

    def op(self, cx, cy, symbol, r=11, size=15):
        """An operation in a circle: '+', '×', '∑', '‖' (concatenation), 'σ', ..."""
        self.circle(cx, cy, r, fill=PAPER, stroke=INK, sw=1.4)
        self.text(cx, cy + size * 0.35, symbol, size, kind="m")

    def brace(self, x0, y0, x1, y1, depth=6, color=MUTED, sw=1.2):
        """A square bracket from (x0, y0) to (x1, y1), opening to the left or up."""
        if abs(x1 - x0) > abs(y1 - y0):
            self.polyline([(x0, y0 + depth), (x0, y0), (x1, y1), (x1, y1 + depth)], stroke=color, sw=sw)
        else:
            self.polyline([(x0 - depth, y0), (x0, y0), (x1, y1), (x1 - depth, y1)], stroke=color, sw=sw)

    def legend_roles(self, x, y, roles, size=12, cell=12, gap=18):
        """A row of role swatches with their names, from (x, y); returns the end x."""
        names = {
            "query": "query",
            "key": "key",
            "value": "value",
            "output": "output",
            "module": "module (attnlib class)",
            "state": "hidden state",
        }
        for role in roles:
            fill, stroke, _ = ROLES[role]
            self.rect(x, y - cell + 2, cell, cell, fill=fill, stroke=stroke, sw=1.2, rx=2)
            x += cell + 5
            s = self._(names[role])
            self.text(x, y, s, size, anchor="start", fill=INK, label=True)
            x += text_width(s, size) + gap
        return x

    def viridis_key(self, x, y, w=90, h=9, size=11):
        """A small colour bar for attention weights: 0 ... 1."""
        n = 24
        for i in range(n):
            self.rect(x + i * w / n, y, w / n + 0.4, h, fill=viridis(i / (n - 1)), stroke="none", sw=0, rx=0)
        self.rect(x, y, w, h, fill="none", stroke="#666666", sw=0.8, rx=0)
        self.text(x - 4, y + h - 1, "0", size, anchor="end", fill=MUTED)
        self.text(x + w + 4, y + h - 1, "1", size, anchor="start", fill=MUTED)
        self.label(x + w / 2, y + h + size + 3, "attention weight", size, fill=MUTED)

    # ----------------------------------------------------------------- output
    def svg(self) -> str:
        w, h = self.width, self.height
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(w)}" height="{_f(h)}" '
            f'viewBox="0 0 {_f(w)} {_f(h)}">\n<style>{STYLE}</style>\n'
            f'<rect x="0.5" y="0.5" width="{_f(w - 1)}" height="{_f(h - 1)}" rx="8" fill="{PAPER}" '
            'stroke="#d9d9d9"/>\n'
        )
        return head + "\n".join(self.parts) + "\n</svg>\n"
