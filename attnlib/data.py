"""Chapters 4-7: an English -> French corpus with gold word alignments, vocabularies, batches.

d2l trains its translation models on ``fra.txt`` downloaded from the web and scores four
sentences that are most likely in its own training data. This book downloads nothing and
wants honest numbers, so :func:`generate_pairs` writes its own corpus from a small,
deterministic grammar that carries the phenomena attention is about:

=====================================  ===============================================
phenomenon                             example (English -> French)
=====================================  ===============================================
adjective after the noun               ``the red car`` -> ``la voiture rouge``
a few adjectives before it             ``the small dog`` -> ``le petit chien``
gender and number agreement            ``the green cars`` -> ``les voitures vertes``
conjugation                            ``we see`` -> ``nous voyons``
elision and contraction                ``i like`` -> ``j'aime``; ``to the park`` -> ``au parc``
one word to several                    ``i'm home`` -> ``je suis chez moi``
negation around the verb               ``i don't like`` -> ``je n'aime pas``
long sentences                         coordination (``and``), prepositional phrases,
                                       relative clauses (``the dog that i see``)
=====================================  ===============================================

Tokens follow d2l's ``fra.txt`` tokenisation (lowercase, words split on spaces, ``. , ! ?``
separate tokens, apostrophes kept inside a token): ``("i'm", 'home', '.')`` ->
``('je', 'suis', 'chez', 'moi', '.')`` and ``("j'ai", 'perdu', '.')``. So d2l's four test
sentences appear verbatim. Every target token carries its gold alignment: the sorted
indices of the source tokens it translates (``j'ai`` in ``i lost .`` -> ``(0, 1)``: ``je``
from ``i``, the auxiliary ``ai`` from the past tense of ``lost``).

:class:`TranslationData` splits a corpus into train / validation / test sets that share no
source sentence. The test set contains d2l's four sentences (each is *not* in training:
the model has seen related sentences such as ``he lost .`` and ``she's calm .``, never these
exact ones) and, by construction, at least 30 % of sentences with two content words that
never occur together in a training sentence (:data:`HELD_OUT_PAIRS`), so BLEU measures
generalisation, not memory. Batches follow d2l 1.0's ``MTFraEng.build``.

Real sentences: :func:`load_fra_eng` reads the Tatoeba English-French pairs the book ships
(:data:`TATOEBA_FRA_ENG`, d2l's ``fra.txt`` format, its first 600 lines included) with d2l's
preprocessing, and :class:`FraEngData` is :class:`TranslationData` on them, split by
:func:`split_by_source` so that no test English sentence (nor any of its translations) is
seen in training.
"""
from __future__ import annotations

import collections
import numbers
import operator
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ._checks import check_int, check_number

# ----------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class Pair:
    """One sentence pair with its gold alignment.

    ``src``: English tokens; ``tgt``: French tokens; ``align[j]``: sorted indices into
    ``src`` that ``tgt[j]`` translates (``()`` when unknown, as for pairs read from
    ``fra.txt``). ``len(align) == len(tgt)``.
    """

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    align: tuple[tuple[int, ...], ...]

    def __post_init__(self):
        for name, tokens in (("src", self.src), ("tgt", self.tgt)):
            if not isinstance(tokens, tuple):
                raise TypeError(f"a Pair's {name} must be a tuple of tokens (str), got {tokens!r}: "
                                f"e.g. tuple('go .'.split())")
        if not self.src or not self.tgt:
            raise ValueError(f"a Pair needs a non-empty source and target, got src={self.src!r}, "
                             f"tgt={self.tgt!r}")
        if len(self.align) != len(self.tgt):
            raise ValueError(f"align must have one entry per target token: len(tgt)={len(self.tgt)}, "
                             f"len(align)={len(self.align)}")
        for j, links in enumerate(self.align):
            if any(not 0 <= i < len(self.src) for i in links):
                raise ValueError(f"align[{j}]={links} points outside the source "
                                 f"(len(src)={len(self.src)})")

    @property
    def src_text(self) -> str:
        return " ".join(self.src)

    @property
    def tgt_text(self) -> str:
        return " ".join(self.tgt)


def _iterable(name: str, items, what: str, hint: str = ""):
    """``items`` if it is an iterable other than a lone string (which would be read as its letters)."""
    if isinstance(items, str):
        raise TypeError(f"{name} must be {what}, not a string: split it first, e.g. {items!r}.split()")
    if not isinstance(items, Iterable):
        raise TypeError(f"{name} must be {what}, got {type(items).__name__}{hint}")
    return items


def _strings(name: str, items, what: str = "a list of strings") -> list[str]:
    """``items`` (an iterable of ``str``) as a list; anything else gets a ``TypeError`` naming it."""
    items = list(_iterable(name, items, what))
    if not set(map(type, items)) <= {str}:  # one fast pass; then look for the culprit
        bad = next((i for i, x in enumerate(items) if not isinstance(x, str)), None)
        if bad is not None:
            raise TypeError(f"{name}[{bad}] must be a str, got {type(items[bad]).__name__} {items[bad]!r}")
    return items


# ----------------------------------------------------------------------------- lexicon
# Nouns: English singular, plural; French singular, plural, gender; kind (for verb objects).
_NOUNS = [
    ("dog", "dogs", "chien", "chiens", "m", "animal"),
    ("cat", "cats", "chat", "chats", "m", "animal"),
    ("bird", "birds", "oiseau", "oiseaux", "m", "animal"),
    ("horse", "horses", "cheval", "chevaux", "m", "animal"),
    ("boy", "boys", "garçon", "garçons", "m", "person"),
    ("girl", "girls", "fille", "filles", "f", "person"),
    ("friend", "friends", "ami", "amis", "m", "person"),
    ("man", "men", "homme", "hommes", "m", "person"),
    ("woman", "women", "femme", "femmes", "f", "person"),
    ("child", "children", "enfant", "enfants", "m", "person"),
    ("car", "cars", "voiture", "voitures", "f", "thing"),
    ("book", "books", "livre", "livres", "m", "thing"),
    ("table", "tables", "table", "tables", "f", "thing"),
    ("chair", "chairs", "chaise", "chaises", "f", "thing"),
    ("letter", "letters", "lettre", "lettres", "f", "thing"),
    ("bike", "bikes", "vélo", "vélos", "m", "thing"),
    ("apple", "apples", "pomme", "pommes", "f", "food"),
    ("cake", "cakes", "gâteau", "gâteaux", "m", "food"),
    ("house", "houses", "maison", "maisons", "f", "place"),
    ("school", "schools", "école", "écoles", "f", "place"),
    ("park", "parks", "parc", "parcs", "m", "place"),
    ("garden", "gardens", "jardin", "jardins", "m", "place"),
]
_PLACES = [n for n in _NOUNS if n[5] == "place"]
_ANIMATE = [n for n in _NOUNS if n[5] in ("person", "animal")]

# Adjectives: English; French masc. sg, fem. sg, masc. pl, fem. pl.
_POST_ADJ = [  # after the noun
    ("red", "rouge", "rouge", "rouges", "rouges"),
    ("green", "vert", "verte", "verts", "vertes"),
    ("blue", "bleu", "bleue", "bleus", "bleues"),
    ("black", "noir", "noire", "noirs", "noires"),
    ("white", "blanc", "blanche", "blancs", "blanches"),
]
_PRE_ADJ = [  # before the noun
    ("small", "petit", "petite", "petits", "petites"),
    ("big", "grand", "grande", "grands", "grandes"),
    ("good", "bon", "bonne", "bons", "bonnes"),
]
_STATE_ADJ = [  # after "to be" only
    ("calm", "calme", "calme", "calmes", "calmes"),
    ("tired", "fatigué", "fatiguée", "fatigués", "fatiguées"),
    ("happy", "content", "contente", "contents", "contentes"),
    ("sick", "malade", "malade", "malades", "malades"),
    ("sad", "triste", "triste", "tristes", "tristes"),
    ("ready", "prêt", "prête", "prêts", "prêtes"),
]

# Persons: 0 = 1sg, 1 = 2sg, 2 = 3sg, 3 = 1pl, 4 = 3pl.
# Pronouns: English, French, person, gender, "to be" contraction, French "to be", "chez ..."
_PRONOUNS = [
    ("i", "je", 0, "m", "i'm", "suis", "moi"),
    ("you", "tu", 1, "m", "you're", "es", "toi"),
    ("he", "il", 2, "m", "he's", "est", "lui"),
    ("she", "elle", 2, "f", "she's", "est", "elle"),
    ("we", "nous", 3, "m", "we're", "sommes", "nous"),
    ("they", "ils", 4, "m", "they're", "sont", "eux"),
]

# Transitive verbs: English base, 3sg, past (None: no past); French present by person,
# past participle; object kinds; may stand without an object; imperative (None: none).
_VERBS = [
    ("see", "sees", "saw", ("vois", "vois", "voit", "voyons", "voient"), "vu",
     ("animal", "person", "thing", "food"), False, None),
    ("like", "likes", "liked", ("aime", "aimes", "aime", "aimons", "aiment"), "aimé",
     ("animal", "person", "thing", "food"), False, None),
    ("have", "has", None, ("ai", "as", "a", "avons", "ont"), None,
     ("animal", "thing", "food"), False, None),
    ("eat", "eats", "ate", ("mange", "manges", "mange", "mangeons", "mangent"), "mangé",
     ("food",), True, "mange"),
    ("find", "finds", "found", ("trouve", "trouves", "trouve", "trouvons", "trouvent"), "trouvé",
     ("animal", "person", "thing"), False, "trouve"),
    ("lose", "loses", "lost", ("perds", "perds", "perd", "perdons", "perdent"), "perdu",
     ("animal", "thing"), True, None),
    ("want", "wants", "wanted", ("veux", "veux", "veut", "voulons", "veulent"), "voulu",
     ("animal", "thing", "food"), False, None),
    ("buy", "buys", "bought", ("achète", "achètes", "achète", "achetons", "achètent"), "acheté",
     ("animal", "thing", "food"), False, "achète"),
    ("wash", "washes", "washed", ("lave", "laves", "lave", "lavons", "lavent"), "lavé",
     ("animal", "thing"), False, "lave"),
    ("win", "wins", "won", ("gagne", "gagnes", "gagne", "gagnons", "gagnent"), "gagné",
     ("thing",), True, None),
    ("call", "calls", "called", ("appelle", "appelles", "appelle", "appelons", "appellent"),
     "appelé", ("animal", "person"), False, "appelle"),
]
_MOTION = [  # English base, 3sg; French present by person; imperative
    ("go", "goes", ("vais", "vas", "va", "allons", "vont"), "va"),
    ("come", "comes", ("viens", "viens", "vient", "venons", "viennent"), "viens"),
]
_BARE_IMPERATIVES = [("run", "cours"), ("wait", "attends"), ("stop", "arrête"), ("come", "viens"),
                     ("eat", "mange"), ("go", "va")]
_PREPS = [("in", ("dans",)), ("on", ("sur",)), ("under", ("sous",)), ("with", ("avec",)),
          ("near", ("près", "de"))]

#: d2l's four example sentences, in d2l's tokenisation. Always generated; always in test.
D2L_SENTENCES = (
    (("go", "."), ("va", "!"), ((0,), (1,))),
    (("i", "lost", "."), ("j'ai", "perdu", "."), ((0, 1), (1,), (2,))),
    (("he's", "calm", "."), ("il", "est", "calme", "."), ((0,), (0,), (1,), (2,))),
    (("i'm", "home", "."), ("je", "suis", "chez", "moi", "."), ((0,), (0,), (1,), (1,), (2,))),
)

#: Source word pairs that never occur together in a training sentence (see split_pairs).
HELD_OUT_PAIRS = (("red", "dog"), ("black", "car"), ("small", "apple"), ("green", "bike"),
                  ("white", "horse"), ("big", "cake"), ("blue", "chair"), ("good", "friend"),
                  ("tired", "girl"), ("sad", "boy"))

#: Source words that do not count as content words in novel_pair_fraction.
FUNCTION_WORDS = frozenset(
    "the a an my and that to in on under with near not don't doesn't didn't is are . , ! ?".split()
    + [p[0] for p in _PRONOUNS] + [p[4] for p in _PRONOUNS])

_VOWELS = tuple("aeiouéèêâàh")
_ELIDE = {"je": "j'", "ne": "n'", "que": "qu'", "de": "d'", "le": "l'", "la": "l'"}
_CONTRACT = {("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}


class _Sentence:
    """Builds a pair: English tokens in order, French tokens with the English indices they translate."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.en: list[str] = []

    def e(self, word: str) -> int:
        self.en.append(word)
        return len(self.en) - 1

    # -- noun phrases -------------------------------------------------------------------
    def noun_phrase(self, nouns, depth: int = 0, det: str | None = None, plural: bool | None = None,
                    allow_pp: bool = True, allow_rel: bool = True):
        """``det [pre-adj] [post-adj] noun [pp] [relative]`` -> (French items, person, gender, plural)."""
        r = self.rng
        en_n, en_pl, fr_n, fr_pl, gender, kind = r.choice(nouns)
        plural = r.random() < 0.3 if plural is None else plural
        det = det or r.choice(("the", "the", "a", "my"))
        if plural and det == "a":
            det = "the"
        g = (1 if gender == "f" else 0) + (2 if plural else 0)
        det_fr = {"the": ("le", "la", "les", "les"), "a": ("un", "une", None, None),
                  "my": ("mon", "ma", "mes", "mes")}[det][g]
        pre = r.choice(_PRE_ADJ) if r.random() < 0.25 else None
        post = r.choice(_POST_ADJ) if kind != "person" and r.random() < 0.35 else None
        i_det = self.e(det)
        i_pre = self.e(pre[0]) if pre else None
        i_post = self.e(post[0]) if post else None
        i_n = self.e(en_pl if plural else en_n)
        fr = [(det_fr, {i_det})]
        if pre:
            fr.append((pre[1 + g], {i_pre}))
        fr.append((fr_pl if plural else fr_n, {i_n}))
        if post:
            fr.append((post[1 + g], {i_post}))
        if allow_pp and depth == 0 and r.random() < 0.2:
            fr += self.prep_phrase(depth + 1)
        elif allow_rel and depth == 0 and r.random() < 0.2:
            fr += self.relative(4 if plural else 2)
        return fr, (4 if plural else 2), gender, plural

    def prep_phrase(self, depth: int = 1):
        en_p, fr_p = self.rng.choice(_PREPS)
        i = self.e(en_p)
        np_fr, *_ = self.noun_phrase(_NOUNS, depth=depth)
        return [(w, {i}) for w in fr_p] + np_fr

    def relative(self, head_person: int):
        """``that i see`` -> ``que je vois``; ``that sees the cat`` -> ``qui voit le chat``."""
        r = self.rng
        i_that = self.e("that")
        verb = r.choice([v for v in _VERBS if "animal" in v[5] or "thing" in v[5]])
        if r.random() < 0.5:  # object relative: the head noun is the verb's object
            pron = r.choice(_PRONOUNS)
            i_s = self.e(pron[0])
            i_v = self.e(verb[1] if pron[2] == 2 else verb[0])
            return [("que", {i_that}), (pron[1], {i_s}), (verb[3][pron[2]], {i_v})]
        i_v = self.e(verb[1] if head_person == 2 else verb[0])
        obj, *_ = self.noun_phrase([n for n in _NOUNS if n[5] in verb[5]], depth=1)
        return [("qui", {i_that}), (verb[3][head_person], {i_v})] + obj

    def subject(self, nouns):
        """A pronoun (60 %) or a noun phrase -> (pronoun or French items, person, gender, plural)."""
        if self.rng.random() < 0.6:
            pron = self.rng.choice(_PRONOUNS)
            return pron, pron[2], pron[3], pron[2] in (3, 4)
        fr, person, gender, plural = self.noun_phrase(nouns, det=self.rng.choice(("the", "my")),
                                                      allow_rel=False)
        return fr, person, gender, plural

    # -- clauses --------------------------------------------------------------------------
    def clause(self):
        r = self.rng
        kind = r.choices(("verb", "be", "motion"), weights=(6, 3, 1.5))[0]
        subj, person, gender, plural = self.subject(_NOUNS if kind == "be" else _ANIMATE)
        neg = r.random() < 0.25
        if isinstance(subj, tuple) and isinstance(subj[0], str):  # a pronoun
            pron = subj
            if kind == "be":
                return self.be_clause(person, gender, plural, pron=pron, neg=neg)
            i_s = self.e(pron[0])
            subj = [(pron[1], {i_s})]
        elif kind == "be":
            return self.be_clause(person, gender, plural, subj=subj, neg=neg)
        if kind == "motion":
            en_b, en_3, fr_v, _ = r.choice(_MOTION)
            neg_i = self.e("doesn't" if person == 2 else "don't") if neg else None
            i_v = self.e(en_3 if person == 2 and not neg else en_b)
            verb = [(fr_v[person], {i_v})]
            return subj + self.negate(verb, neg_i) + self.destination()
        return subj + self.verb_phrase(person, neg)

    def negate(self, verb_items, neg_i):
        if neg_i is None:
            return verb_items
        return [("ne", {neg_i})] + verb_items[:1] + [("pas", {neg_i})] + verb_items[1:]

    def destination(self):
        i_to = self.e("to")
        np_fr, *_ = self.noun_phrase(_PLACES, allow_pp=False, allow_rel=False)
        return [("à", {i_to})] + np_fr

    def verb_phrase(self, person: int, neg: bool):
        r = self.rng
        verb = r.choice(_VERBS)
        en_b, en_3, en_past, fr_pres, fr_part, kinds, intrans, _ = verb
        past = en_past is not None and r.random() < 0.35
        neg_i = self.e("didn't" if past else ("doesn't" if person == 2 else "don't")) if neg else None
        if past and not neg:
            i_v = self.e(en_past)
        else:
            i_v = self.e(en_3 if person == 2 and not neg else en_b)
        if past:  # passé composé: the auxiliary carries the tense (or the negation)
            aux = {neg_i if neg else i_v}
            items = self.negate([(("ai", "as", "a", "avons", "ont")[person], aux), (fr_part, {i_v})],
                                neg_i)
        else:
            items = self.negate([(fr_pres[person], {i_v})], neg_i)
        if intrans and r.random() < 0.3:
            return items
        obj, *_ = self.noun_phrase([n for n in _NOUNS if n[5] in kinds])
        if neg and obj[0][0] in ("un", "une"):  # "pas de": je n'ai pas de chien
            obj = [("de", obj[0][1])] + obj[1:]
        items += obj
        if r.random() < 0.2:
            items += self.prep_phrase()
        return items

    def be_clause(self, person, gender, plural, pron=None, subj=None, neg=False):
        r = self.rng
        if pron is not None:
            i_s = self.e(pron[4])
            fr = [(pron[1], {i_s})]
            be = [(pron[5], {i_s})]
        else:
            i_s = self.e("are" if plural else "is")
            fr = subj
            be = [(("sont" if plural else "est"), {i_s})]
        neg_i = self.e("not") if neg else None
        fr += self.negate(be, neg_i)
        what = r.random()
        if pron is not None and what < 0.15:  # one word to several: home -> chez moi
            i_h = self.e("home")
            return fr + [("chez", {i_h}), (pron[6], {i_h})]
        if what < 0.45:  # a place
            return fr + self.prep_phrase()
        adj = r.choice(_STATE_ADJ + _POST_ADJ + _PRE_ADJ)
        i_a = self.e(adj[0])
        return fr + [(adj[1 + (gender == "f") + 2 * plural], {i_a})]

    def imperative(self):
        """``don't eat the apple .`` -> ``ne mange pas la pomme !``"""
        r = self.rng
        neg_i = self.e("don't") if r.random() < 0.25 else None
        kind = r.random()
        if kind < 0.2:
            en, fr = r.choice(_BARE_IMPERATIVES)
            return self.negate([(fr, {self.e(en)})], neg_i)
        if kind < 0.45:
            en, _, _, fr = r.choice(_MOTION)
            return self.negate([(fr, {self.e(en)})], neg_i) + self.destination()
        verb = r.choice([v for v in _VERBS if v[7]])
        items = self.negate([(verb[7], {self.e(verb[0])})], neg_i)
        obj, *_ = self.noun_phrase([n for n in _NOUNS if n[5] in verb[5]], allow_rel=False)
        if neg_i is not None and obj[0][0] in ("un", "une"):
            obj = [("de", obj[0][1])] + obj[1:]
        return items + obj


def _finish(fr_items: list[tuple[str, set[int]]]) -> list[tuple[str, set[int]]]:
    """French spelling rules: ``le ami`` -> ``l'ami``, ``à le`` -> ``au``, ``je ai`` -> ``j'ai``."""
    out: list[list] = []
    for stage in ("article", "contract", "elide"):
        out = []
        for tok, links in fr_items:
            if out:
                prev, prev_links = out[-1]
                merged = None
                if stage == "article" and prev in ("le", "la") and tok.startswith(_VOWELS):
                    merged = _ELIDE[prev] + tok
                elif stage == "article" and prev == "ma" and tok.startswith(_VOWELS):
                    out[-1][0] = "mon"  # ma école -> mon école
                elif stage == "contract" and (prev, tok) in _CONTRACT:
                    merged = _CONTRACT[prev, tok]
                elif stage == "elide" and prev in ("je", "ne", "que", "de") and tok.startswith(_VOWELS):
                    merged = _ELIDE[prev] + tok
                if merged is not None:
                    out[-1] = [merged, prev_links | links]
                    continue
            out.append([tok, set(links)])
        fr_items = [(t, s) for t, s in out]
    return fr_items


def _make_pair(en: list[str], fr_items: list[tuple[str, set[int]]]) -> Pair:
    en = ["an" if w == "a" and nxt.startswith(tuple("aeiou")) else w
          for w, nxt in zip(en, en[1:] + [""], strict=True)]  # a apple -> an apple
    fr_items = _finish(fr_items)
    return Pair(tuple(en), tuple(t for t, _ in fr_items), tuple(tuple(sorted(s)) for _, s in fr_items))


def _sentence(rng: random.Random) -> Pair:
    s = _Sentence(rng)
    kind = rng.random()
    if kind < 0.12:
        fr = s.imperative()
        return _make_pair(s.en + ["."], fr + [("!", {len(s.en)})])
    fr = s.clause()
    if kind > 0.55:  # coordination: two clauses
        fr += [("et", {s.e("and")})] + s.clause()
    return _make_pair(s.en + ["."], fr + [(".", {len(s.en)})])


#: Longest source sentence generate_pairs keeps, and the longest target it keeps.
MAX_SRC_LEN, MAX_TGT_LEN = 18, 22


def generate_pairs(num_pairs: int = 6000, seed: int = 0) -> list[Pair]:
    """``num_pairs`` distinct English -> French pairs from the grammar, deterministic for ``seed``.

    The first four are d2l's sentences (:data:`D2L_SENTENCES`); the rest are drawn from the
    grammar, without repeating a source sentence, with at most ``MAX_SRC_LEN`` source and
    ``MAX_TGT_LEN`` target tokens. The grammar gives one translation per source sentence.
    """
    if not isinstance(num_pairs, int) or num_pairs < 4:
        raise ValueError(f"num_pairs must be an int >= 4 (d2l's four sentences), got {num_pairs!r}")
    rng = random.Random(seed)
    pairs = [Pair(*p) for p in D2L_SENTENCES]
    seen = {p.src for p in pairs}
    tries = 0
    while len(pairs) < num_pairs:
        tries += 1
        if tries > 20 * num_pairs:
            raise ValueError(f"the grammar cannot give {num_pairs} distinct sentences; ask for fewer")
        p = _sentence(rng)
        if p.src in seen or len(p.src) > MAX_SRC_LEN or len(p.tgt) > MAX_TGT_LEN:
            continue
        seen.add(p.src)
        pairs.append(p)
    return pairs


# ----------------------------------------------------------------------------- splits


def check_pairs(name: str, pairs) -> list[Pair]:
    """``pairs``, an iterable of :class:`Pair` (a generator is read once, here), as a list."""
    what = "a list of Pair (from generate_pairs or load_fra_eng)"
    if isinstance(pairs, str) or not isinstance(pairs, Iterable):
        raise TypeError(f"{name} must be {what}, got {type(pairs).__name__}")
    pairs = list(pairs)
    for i, p in enumerate(pairs):
        if not isinstance(p, Pair):
            raise TypeError(f"{name}[{i}] must be a Pair, got {type(p).__name__}: {name} must be {what}")
    return pairs


def _content_words(src: Sequence[str]) -> list[str]:
    return sorted({w for w in src if w not in FUNCTION_WORDS})


def _cooccurring(pairs: Iterable[Pair]) -> set[tuple[str, str]]:
    seen = set()
    for p in pairs:
        words = _content_words(p.src)
        seen.update((a, b) for i, a in enumerate(words) for b in words[i + 1:])
    return seen


def novel_pair_fraction(test: Sequence[Pair], train: Sequence[Pair]) -> float:
    """Share of ``test`` sentences with two content words that never occur together in a
    ``train`` source sentence (content words: not in :data:`FUNCTION_WORDS`)."""
    test, train = check_pairs("test", test), check_pairs("train", train)
    if not test:
        raise ValueError("test must contain at least one pair")
    seen = _cooccurring(train)
    novel = 0
    for p in test:
        words = _content_words(p.src)
        novel += any((a, b) not in seen for i, a in enumerate(words) for b in words[i + 1:])
    return novel / len(test)


#: Share of val and test filled with sentences containing a HELD_OUT_PAIRS pair.
HELD_OUT_SHARE = 0.35


def _has_held_out_pair(src: Sequence[str]) -> bool:
    words = set(src)
    return any(a in words and b in words for a, b in HELD_OUT_PAIRS)


def split_pairs(pairs: Sequence[Pair], val_frac: float = 0.1, test_frac: float = 0.1,
                seed: int = 0) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """Split into (train, val, test) with no source sentence in two splits.

    d2l's four sentences go to test. Sentences containing a :data:`HELD_OUT_PAIRS` word pair
    never go to train: they fill up to ``HELD_OUT_SHARE`` (35 %) of val and of test (the rest
    of them is left unused), so a generated corpus has >= 30 % test sentences with an unseen
    word pair. The
    remaining sentences are shuffled with ``seed`` and cut by the fractions. Pairs sharing a
    source sentence (``fra.txt`` has several translations of ``go .``) stay together.
    """
    pairs = check_pairs("pairs", pairs)
    if not pairs:
        raise ValueError("pairs is empty")
    check_number("val_frac", val_frac)
    check_number("test_frac", test_frac)
    if not (0 < val_frac < 1 and 0 < test_frac < 1 and val_frac + test_frac < 1):
        raise ValueError(f"need 0 < val_frac, test_frac and val_frac + test_frac < 1, "
                         f"got {val_frac}, {test_frac}")
    groups: dict[tuple[str, ...], list[Pair]] = {}
    for p in pairs:
        groups.setdefault(p.src, []).append(p)
    d2l = {s for s, _, _ in D2L_SENTENCES}
    forced_test = [s for s in groups if s in d2l]
    held = [s for s in groups if s not in d2l and _has_held_out_pair(s)]
    rest = [s for s in groups if s not in d2l and not _has_held_out_pair(s)]
    rng = random.Random(seed)
    rng.shuffle(held)
    rng.shuffle(rest)
    n_val, n_test = round(val_frac * len(groups)), round(test_frac * len(groups))
    held_test = held[: round(HELD_OUT_SHARE * n_test)]
    held_val = held[len(held_test): len(held_test) + round(HELD_OUT_SHARE * n_val)]
    n_rest_test = max(0, n_test - len(forced_test) - len(held_test))
    n_rest_val = max(0, n_val - len(held_val))
    test = forced_test + held_test + rest[:n_rest_test]
    val = held_val + rest[n_rest_test: n_rest_test + n_rest_val]
    train = rest[n_rest_test + n_rest_val:]
    if not train:
        raise ValueError(f"{len(pairs)} pairs leave nothing to train on; pass more pairs")
    return tuple([q for s in split for q in groups[s]] for split in (train, val, test))


def length_buckets(pairs: Iterable[Pair], edges: Sequence[int] = (2, 6, 10, 13)
                   ) -> dict[str, list[Pair]]:
    """Group pairs by source length: edges ``(2, 6, 10, 13)`` give buckets ``'2-5'``,
    ``'6-9'``, ``'10-12'``, ``'13+'`` (every bucket is present, maybe empty; shorter
    sentences than ``edges[0]`` are dropped)."""
    pairs = check_pairs("pairs", pairs)
    if not isinstance(edges, (list, tuple, range)) or not all(isinstance(e, int) for e in edges):
        raise TypeError(f"edges must be a list of increasing positive ints, got {edges!r}")
    edges = list(edges)
    if not edges or edges != sorted(set(edges)) or edges[0] < 1:
        raise ValueError(f"edges must be increasing positive ints, got {edges}")
    names = [f"{lo}-{hi - 1}" for lo, hi in zip(edges, edges[1:], strict=False)] + [f"{edges[-1]}+"]
    buckets: dict[str, list[Pair]] = {n: [] for n in names}
    for p in pairs:
        n = len(p.src)
        for name, lo, hi in zip(names, edges, edges[1:] + [float("inf")], strict=True):
            if lo <= n < hi:
                buckets[name].append(p)
    return buckets


# ----------------------------------------------------------------------------- vocabulary

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


class Vocab:
    """Token <-> index, d2l's interface. ``<pad>, <bos>, <eos>, <unk>`` are 0, 1, 2, 3, then
    ``reserved_tokens``, then the other tokens with frequency >= ``min_freq`` in alphabetical
    order (deterministic). Unknown tokens map to ``<unk>``."""

    def __init__(self, tokens: Iterable = (), min_freq: int = 0,
                 reserved_tokens: Sequence[str] | None = None):
        check_int("min_freq", min_freq, minimum=0)
        what = "a list of tokens or of token lists"
        tokens = list(_iterable("tokens", tokens, what, ": pass [] for the special tokens only"))
        if tokens and not isinstance(tokens[0], str):  # a list of sentences: flatten
            _iterable("tokens[0]", tokens[0], "a token (str) or a list of tokens")
            tokens = [t for i, line in enumerate(tokens)
                      for t in _strings(f"tokens[{i}]", line, "a list of tokens, like tokens[0]")]
        counter = collections.Counter(_strings("tokens", tokens, what))
        self.token_freqs = sorted(counter.items(), key=lambda x: (-x[1], x[0]))
        reserved = [] if reserved_tokens is None else _strings("reserved_tokens", reserved_tokens)
        front = list(SPECIAL_TOKENS) + [t for t in reserved if t not in SPECIAL_TOKENS]
        rest = sorted(t for t, f in counter.items() if f >= min_freq and t not in front)
        self.idx_to_token = front + rest
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if isinstance(tokens, (list, tuple)):
            return [self[t] for t in tokens]
        return self.token_to_idx.get(tokens, self.unk)

    def to_tokens(self, indices):
        """An index -> its token; a list / 1-D tensor of indices -> a list of tokens."""
        if isinstance(indices, torch.Tensor):
            if indices.dim() > 1:
                raise ValueError(f"indices must be an int or a 1-D tensor, got a tensor of shape "
                                 f"{tuple(indices.shape)}")
            indices = indices.tolist()
        if isinstance(indices, (list, tuple)):
            return [self.to_tokens(i) for i in indices]
        if isinstance(indices, bool):
            raise TypeError(f"indices must be ints, got bool {indices!r}")
        try:
            index = operator.index(indices)  # Python and NumPy ints; not floats
        except TypeError:
            raise TypeError(f"indices must be ints, got {type(indices).__name__} {indices!r}") from None
        if not 0 <= index < len(self):
            raise ValueError(f"index {index} out of range for a vocabulary of {len(self)} tokens")
        return self.idx_to_token[index]

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocab) and self.idx_to_token == other.idx_to_token

    __hash__ = None

    pad = property(lambda self: 0, doc="index of <pad>")
    bos = property(lambda self: 1, doc="index of <bos>")
    eos = property(lambda self: 2, doc="index of <eos>")
    unk = property(lambda self: 3, doc="index of <unk>")


def truncate_pad(ids: Sequence[int], num_steps: int, pad: int) -> list[int]:
    """Cut ``ids`` to ``num_steps`` or pad it with ``pad`` up to ``num_steps`` (d2l)."""
    if not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
    check_int("pad", pad, minimum=0)
    if isinstance(ids, str):
        raise TypeError(f"ids must be a sequence of ints, not a string, got {ids!r}")
    if not isinstance(ids, Sequence) or not all(isinstance(i, numbers.Integral) for i in ids):
        got = type(ids).__name__ if not isinstance(ids, Sequence) else f"{ids!r}"
        raise TypeError(f"ids must be a sequence of ints (token ids), got {got}")
    ids = list(ids)
    return ids[:num_steps] + [pad] * (num_steps - len(ids))


# ----------------------------------------------------------------------------- data module


def _tokens(sentence, name: str = "sentence") -> tuple[str, ...]:
    """A string (split on spaces, like d2l) or a sequence of tokens -> a tuple of tokens."""
    if isinstance(sentence, str):
        return tuple(t for t in sentence.split(" ") if t)
    if not isinstance(sentence, Sequence):
        raise TypeError(f"{name} must be a string or a sequence of tokens, got {type(sentence).__name__}")
    return tuple(_strings(name, sentence))


class TranslationData:
    """Train / val / test pairs, vocabularies and batches: d2l's ``MTFraEng`` for our corpus.

    ``pairs=None`` generates ``num_pairs`` pairs with :func:`generate_pairs` (``seed``); or
    pass pairs from :func:`load_fra_eng`. Splits come from :func:`split_pairs`, vocabularies
    from the training pairs only (tokens rarer than ``min_freq`` become ``<unk>``). Each
    batch is ``(src, tgt_in, src_valid_len, label)`` as in d2l 1.0. A sentence longer than
    ``num_steps - 1`` tokens (its ``<eos>`` must fit) raises ``ValueError``, unless
    ``truncate=True``, which cuts it like d2l does silently.
    """

    def __init__(self, batch_size: int = 64, num_steps: int = 24, num_pairs: int = 6000,
                 min_freq: int = 1, seed: int = 0, pairs: Sequence[Pair] | None = None,
                 truncate: bool = False, val_frac: float = 0.1, test_frac: float = 0.1):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(num_steps, int) or num_steps < 2:
            raise ValueError(f"num_steps must be an int >= 2, got {num_steps!r}")
        self.batch_size, self.num_steps, self.seed, self.truncate = batch_size, num_steps, seed, truncate
        pairs = generate_pairs(num_pairs, seed) if pairs is None else check_pairs("pairs", pairs)
        self.train, self.val, self.test = self._split(pairs, val_frac, test_frac, seed)
        self.src_vocab = Vocab([p.src for p in self.train], min_freq=min_freq)
        self.tgt_vocab = Vocab([p.tgt for p in self.train], min_freq=min_freq)
        self._train_srcs = {p.src for p in self.train}
        self._arrays = {"train": self.build(self.train),
                        "val": self.build(self.val) if self.val else None}

    def _split(self, pairs, val_frac: float, test_frac: float, seed: int):
        """``(train, val, test)``: :func:`split_pairs` here; :class:`FraEngData` overrides it."""
        return split_pairs(pairs, val_frac, test_frac, seed)

    def _ids(self, tokens, vocab: Vocab, what: str, bos: bool = False) -> list[int]:
        if not tokens:
            raise ValueError(f"empty {what} sentence")
        ids = ([vocab.bos] if bos else []) + vocab[list(tokens)] + [vocab.eos]
        width = self.num_steps + bos
        if len(ids) > width and not self.truncate:
            raise ValueError(
                f"{what} sentence has {len(tokens)} tokens, + <eos> that is {len(tokens) + 1} > "
                f"num_steps={self.num_steps}: {' '.join(tokens)!r}. Raise num_steps or pass "
                "truncate=True")
        return truncate_pad(ids, width, vocab.pad)

    def build(self, pairs: Sequence, device=None) -> tuple[torch.Tensor, ...]:
        """Pairs (or ``(src, tgt)`` token sequences / strings) -> ``(src, tgt_in, src_valid_len, label)``.

        ``src`` ``(n, num_steps)``: ids + ``<eos>``, padded; ``tgt = <bos> + ids + <eos>``
        padded to ``num_steps + 1``; ``tgt_in = tgt[:, :-1]``, ``label = tgt[:, 1:]``, both
        ``(n, num_steps)``; ``src_valid_len`` ``(n,)``: non-pad tokens of ``src``. On the CPU,
        or on ``device`` (a model's) when given.
        """
        if isinstance(pairs, str) or not isinstance(pairs, Sequence):
            raise TypeError("pairs must be a list of Pair or of (source, target) sentence pairs, got "
                            f"{type(pairs).__name__}")
        if len(pairs) == 0:
            raise ValueError("build needs at least one pair")
        srcs, tgts = [], []
        for i, p in enumerate(pairs):
            if isinstance(p, Pair):
                s, t = p.src, p.tgt
            elif isinstance(p, (tuple, list)) and len(p) == 2:
                s, t = (_tokens(x, f"pairs[{i}]") for x in p)
            else:
                raise TypeError(f"pairs[{i}] must be a Pair or a (source, target) pair of sentences, "
                                f"got {type(p).__name__} {p!r}")
            srcs.append(self._ids(s, self.src_vocab, "source"))
            tgts.append(self._ids(t, self.tgt_vocab, "target", bos=True))
        src = torch.tensor(srcs, dtype=torch.int64)                       # (n, num_steps)
        tgt = torch.tensor(tgts, dtype=torch.int64)                       # (n, num_steps + 1)
        valid_len = (src != self.src_vocab.pad).sum(dim=1)                # (n,)
        return tuple(t.to(device) for t in (src, tgt[:, :-1], valid_len, tgt[:, 1:]))

    def _loader(self, arrays, shuffle: bool, generator=None):
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*arrays),
                                           batch_size=self.batch_size, shuffle=shuffle,
                                           generator=generator)

    def train_dataloader(self, generator: torch.Generator | None = None):
        """Shuffled batches of ``(src, tgt_in, src_valid_len, label)``, a new order per call.

        The order is drawn from ``generator``, or from torch's global random state when it
        is ``None`` (as in d2l). Pass one seeded generator to every epoch's call to get
        epochs that differ from each other but repeat from run to run; that is what
        :func:`attnlib.training.train_seq2seq` does with its ``seed``.
        """
        return self._loader(self._arrays["train"], shuffle=True, generator=generator)

    def val_dataloader(self):
        if self._arrays["val"] is None:
            raise ValueError("the validation split is empty")
        return self._loader(self._arrays["val"], shuffle=False)

    def test_dataloader(self):
        return self._loader(self.build(self.test), shuffle=False)

    def encode_src(self, sentence, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        """One source sentence (a string split on spaces, or tokens) -> ``src`` ``(1, num_steps)``
        and ``src_valid_len`` ``(1,)``, on ``device`` (a model's) or the CPU. Tokens not in
        ``src_vocab`` become ``<unk>``."""
        ids = self._ids(_tokens(sentence), self.src_vocab, "source")
        src = torch.tensor([ids], dtype=torch.int64, device=device)       # (1, num_steps)
        return src, (src != self.src_vocab.pad).sum(dim=1)                # (1,)

    def is_seen(self, src_tokens) -> bool:
        """Is this source sentence (string or tokens) in the training split?"""
        return _tokens(src_tokens) in self._train_srcs


# ----------------------------------------------------------------------------- d2l's fra.txt


def _preprocess(text: str) -> str:
    """d2l 1.0's ``MTFraEng._preprocess``: plain spaces, lowercase, space before ``, . ! ?``."""
    text = text.replace("\u202f", " ").replace("\xa0", " ")
    out = [" " + c if i > 0 and c in ",.!?" and text[i - 1] != " " else c
           for i, c in enumerate(text.lower())]
    return "".join(out)


TATOEBA_FRA_ENG = Path(__file__).parent / "corpora" / "tatoeba_fra_eng" / "fra.txt"
"""The real English-French pairs the book ships (Tatoeba, CC-BY 2.0 FR; see the README beside it)."""


def _check_max_pairs(max_pairs) -> None:
    if max_pairs is None:
        return
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, int):
        raise TypeError(f"max_pairs must be a positive int or None, got {type(max_pairs).__name__} "
                        f"{max_pairs!r}")
    if max_pairs <= 0:
        raise ValueError(f"max_pairs must be a positive int or None, got {max_pairs}")


def load_fra_eng(path=None, max_pairs: int | None = None) -> list[Pair]:
    """Read English / French pairs in d2l's ``fra.txt`` format, by default the shipped Tatoeba file.

    ``path=None`` reads :data:`TATOEBA_FRA_ENG` (76,036 pairs, the shortest Tatoeba
    sentences, d2l's first 600 lines among them); a ``path`` reads another file in the
    same format, such as d2l's full ``fra.txt``. Each line is ``English<TAB>French``, an
    optional third column (attribution, as in the manythings.org files) is ignored.
    ``max_pairs`` keeps the first pairs only (d2l trains on the first 600).
    Text is normalised exactly like d2l (:func:`_preprocess`) and split on spaces, so
    ``"I'm home."`` becomes ``("i'm", 'home', '.')``. Alignments are unknown: ``align``
    holds empty tuples. Nothing is ever downloaded.
    """
    _check_max_pairs(max_pairs)
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path (a str or pathlib.Path) or None for the shipped "
                        f"file, got {type(path).__name__} {path!r}")
    path = TATOEBA_FRA_ENG if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no English-French file at {path}. This book never downloads data: get fra-eng.zip "
            "(d2l's copy: http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip, or fra-eng.zip "
            f"from https://www.manythings.org/anki/), unzip it and place fra.txt at {path}")
    with path.open("rb") as f:
        head = f.read(4096)
    if b"\x00" in head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ValueError(f"{path} looks like a binary or UTF-16 file (it contains NUL bytes); "
                         "expected UTF-8 text with one 'English<TAB>French' pair a line")
    pairs = []
    try:
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                parts = line.split("\t")
                if len(parts) < 2:
                    raise ValueError(f"{path}:{lineno}: expected 'English<TAB>French', got {line!r}")
                src, tgt = (_tokens(_preprocess(part)) for part in parts[:2])
                if not src or not tgt:
                    raise ValueError(f"{path}:{lineno}: empty sentence in {line!r}")
                pairs.append(Pair(src, tgt, ((),) * len(tgt)))
                if max_pairs is not None and len(pairs) >= max_pairs:
                    break
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start} of a line); "
                         "expected one 'English<TAB>French' pair a line") from None
    if not pairs:
        raise ValueError(f"{path} holds no sentence pairs (it is empty, or blank lines only): "
                         "expected one 'English<TAB>French' pair a line, as in d2l's fra.txt")
    return pairs


# ----------------------------------------------------------------------------- real data


def split_by_source(pairs: Sequence[Pair], num_test: int, num_val: int = 0, seed: int = 0
                    ) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """Split real pairs into ``(train, val, test)`` with every English sentence on one side only.

    Tatoeba often translates one English sentence several ways (``run !`` -> ``cours !``
    and ``courez !``); splitting lines at random would put ``run !`` in training *and*
    in test, and the test would reward memory. So the distinct English sentences are
    shuffled with ``random.Random(seed)``; the first ``num_test`` of them (with all their
    translations) form the test split, the next ``num_val`` the validation split, the rest
    training. Within a split, pairs keep that shuffled order, sentence by sentence.
    """
    for name, n in (("num_test", num_test), ("num_val", num_val)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be an int >= 0 (English sentences), got {n!r}")
    groups: dict[tuple[str, ...], list[Pair]] = {}
    for p in pairs:
        groups.setdefault(p.src, []).append(p)
    if num_test + num_val >= len(groups):
        raise ValueError(f"num_test + num_val = {num_test + num_val} English sentences leave none "
                         f"of the {len(groups)} distinct ones to train on")
    order = list(groups)  # first appearance: deterministic
    random.Random(seed).shuffle(order)
    cuts = (order[:num_test], order[num_test:num_test + num_val], order[num_test + num_val:])
    test, val, train = ([p for src in part for p in groups[src]] for part in cuts)
    return train, val, test


class FraEngData(TranslationData):
    """:class:`TranslationData` on real Tatoeba pairs (:func:`load_fra_eng`), split by English sentence.

    Same batches, vocabularies and methods as the generated corpus, so every model and
    :func:`attnlib.training.train_seq2seq` work unchanged. ``max_pairs`` reads the first
    lines of the file only; :func:`split_by_source` (``seed``) holds out ``num_test`` and
    ``num_val`` English sentences with all their translations; ``num_train`` (``None``: all)
    keeps that many training pairs. Long sentences are cut to ``num_steps`` like d2l
    (``truncate=True``); ``min_freq=2`` is d2l's: rarer tokens become ``<unk>``.

    d2l's own experiment (``d2l-zh``: the first 600 pairs, all used for training)::

        FraEngData(batch_size=64, num_steps=10, max_pairs=600, num_test=0, num_val=0)
    """

    def __init__(self, batch_size: int = 128, num_steps: int = 20, max_pairs: int | None = None,
                 num_train: int | None = None, num_test: int = 1000, num_val: int = 500,
                 min_freq: int = 2, seed: int = 0, path=None, truncate: bool = True):
        if num_train is not None and (isinstance(num_train, bool) or not isinstance(num_train, int)
                                      or num_train < 1):
            raise ValueError(f"num_train must be a positive int or None, got {num_train!r}")
        self._sizes = (num_test, num_val, num_train)
        pairs = load_fra_eng(path, max_pairs)
        super().__init__(batch_size=batch_size, num_steps=num_steps, min_freq=min_freq, seed=seed,
                         pairs=pairs, truncate=truncate)

    def _split(self, pairs, val_frac, test_frac, seed):
        num_test, num_val, num_train = self._sizes
        if num_test == 0 and num_val == 0:  # d2l's setup: every pair is for training
            train, val, test = list(pairs), [], []
        else:
            train, val, test = split_by_source(pairs, num_test, num_val, seed)
        return (train if num_train is None else train[:num_train]), val, test

    def references(self, split: str = "test") -> dict[tuple[str, ...], list[str]]:
        """Every English sentence of ``split`` -> all its French translations (file order),
        the references for a multi-reference BLEU."""
        refs: dict[tuple[str, ...], list[str]] = {}
        for p in {"train": self.train, "val": self.val, "test": self.test}[split]:
            refs.setdefault(p.src, []).append(p.tgt_text)
        return refs
