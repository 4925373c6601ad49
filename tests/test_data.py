"""attnlib.data: the generated corpus, its alignments and splits, Vocab, batches, fra.txt."""
from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlib.data import (
    D2L_SENTENCES,
    HELD_OUT_PAIRS,
    Pair,
    TranslationData,
    Vocab,
    generate_pairs,
    length_buckets,
    load_fra_eng,
    novel_pair_fraction,
    split_pairs,
    truncate_pad,
)

FIXTURE = Path(__file__).parent / "fixtures" / "fra_sample.txt"
NEGATIONS = {"don't", "doesn't", "didn't", "not"}


@pytest.fixture(scope="module")
def pairs():
    return generate_pairs()


@pytest.fixture(scope="module")
def big():
    return generate_pairs(20000, seed=1)


@pytest.fixture(scope="module")
def data():
    return TranslationData()


def _find(pairs, src_phrase: str):
    """Pairs whose source contains ``src_phrase`` as consecutive tokens."""
    words = src_phrase.split()
    n = len(words)
    return [p for p in pairs if any(list(p.src[i:i + n]) == words for i in range(len(p.src)))]


def _tgt_has(p: Pair, phrase: str) -> bool:
    return f" {phrase} " in f" {p.tgt_text} "


# ---------------------------------------------------------------- the corpus


def test_generation_is_deterministic(pairs):
    assert generate_pairs(500, seed=0) == pairs[:500]  # a smaller corpus is a prefix
    assert generate_pairs(300, seed=3) == generate_pairs(300, seed=3)
    assert generate_pairs(300, seed=3) != generate_pairs(300, seed=4)


def test_default_corpus_size_sources_distinct_and_lengths(pairs):
    assert len(pairs) == 6000
    assert len({p.src for p in pairs}) == len(pairs)
    lengths = collections.Counter(len(p.src) for p in pairs)
    assert min(lengths) == 2 and max(lengths) >= 15
    buckets = length_buckets(pairs)
    assert list(buckets) == ["2-5", "6-9", "10-12", "13+"]
    assert sum(map(len, buckets.values())) == len(pairs)
    assert len(buckets["13+"]) >= 0.2 * len(pairs)  # a decent share of long sentences
    assert len({w for p in pairs for w in p.src}) <= 200
    assert len({w for p in pairs for w in p.tgt}) <= 260


def test_d2l_sentences_verbatim(pairs):
    got = {p.src_text: p.tgt_text for p in pairs[:4]}
    assert got == {"go .": "va !", "i lost .": "j'ai perdu .", "he's calm .": "il est calme .",
                   "i'm home .": "je suis chez moi ."}


def test_every_target_token_aligned_in_range_and_punctuation(pairs):
    for p in pairs:
        assert len(p.align) == len(p.tgt)
        for links in p.align:
            assert links and list(links) == sorted(set(links))
            assert all(0 <= i < len(p.src) for i in links)
        assert p.src[-1] == "." and p.tgt[-1] in {".", "!"}
        assert p.align[-1] == (len(p.src) - 1,)  # final punctuation <- final punctuation
        punct = [j for j, t in enumerate(p.tgt) if t in {".", "!"}]
        assert punct == [len(p.tgt) - 1]


def test_elision_aligns_both_words(pairs):
    checked = collections.Counter()
    for p in pairs:
        for tok, links in zip(p.tgt, p.align, strict=True):
            words = {p.src[i] for i in links}
            if tok.startswith("j'"):  # je + verb
                assert "i" in words and len(links) == 2, (p, tok)
                checked["j'"] += 1
            elif tok.startswith("n'"):  # ne + verb: the negation word is among its sources
                assert words & NEGATIONS, (p, tok)
                checked["n'"] += 1
            elif tok.startswith("l'"):  # le/la + noun
                assert "the" in words and len(links) == 2, (p, tok)
                checked["l'"] += 1
            elif tok in {"au", "aux"}:  # à + le/les
                assert words == {"to", "the"}, (p, tok)
                checked["au"] += 1
            assert "'" not in tok or tok.split("'")[1][0] in "aeiouéèêâàh", tok
    assert min(checked.values()) >= 20 and len(checked) == 4


def test_no_unelided_forms(pairs):
    for p in pairs:
        for a, b in zip(p.tgt, p.tgt[1:], strict=False):
            if a in {"je", "ne", "que", "le", "la"}:
                assert not b.startswith(tuple("aeiouéèêâàh")), p
            assert (a, b) not in {("à", "le"), ("à", "les"), ("de", "le"), ("de", "les")}, p


def test_negation_surrounds_the_verb(pairs):
    n = 0
    for p in pairs:
        for j, tok in enumerate(p.tgt):
            if tok in {"ne", "pas"} or tok.startswith("n'"):
                assert {p.src[i] for i in p.align[j]} & NEGATIONS, p
            if tok == "ne":
                assert p.tgt[j + 2] == "pas", p  # ne VERB pas
                n += 1
            if tok.startswith("n'"):
                assert p.tgt[j + 1] == "pas", p
    assert n >= 50
    (p,) = [q for q in _find(pairs, "i didn't") if q.src[:2] == ("i", "didn't")][:1] or [None]
    if p is not None:
        assert p.tgt[:2] == ("je", "n'ai") and p.tgt[2] == "pas"


def test_pas_de_after_negation(big):
    found = [p for p in _find(big, "don't eat a good cake") if p.src[0] == "i"]
    assert found and all(p.tgt_text.startswith("je ne mange pas de bon gâteau") for p in found)
    found = [p for p in big if p.src[:4] == ("i", "don't", "have", "an")]
    assert all("pas d'" in p.tgt_text for p in found)
    found = [p for p in big if p.src[:3] == ("i", "have", "a")]
    assert found and all(p.tgt[1] == "un" or p.tgt[1] == "une" for p in found)


def test_one_to_many_home(big):
    homes = {"i'm": "je suis chez moi", "he's": "il est chez lui", "we're": "nous sommes chez nous",
             "they're": "ils sont chez eux"}
    for subj, fr in homes.items():
        matches = [p for p in _find(big, f"{subj} home") if p.src[0] == subj]
        assert matches, subj
        p = matches[0]
        assert p.tgt_text.startswith(fr)
        home = p.src.index("home")
        assert p.align[2] == (home,) and p.align[3] == (home,)  # chez, moi <- home


def test_adjective_order_and_agreement(big):
    cases = {"the red car": "la voiture rouge", "the green cars": "les voitures vertes",
             "the green bikes": "les vélos verts", "the small dog": "le petit chien",
             "the big house": "la grande maison", "the white car": "la voiture blanche",
             "my good cats": "mes bons chats", "my school": "mon école"}
    for en, fr in cases.items():
        found = [p for p in big if p.src[:len(en.split())] == tuple(en.split())]
        assert found, en
        assert all(p.tgt_text.startswith(fr + " ") for p in found), (en, found[0])
    p = _find(big, "the red car")[0]
    j = p.tgt.index("rouge")
    assert p.src[p.align[j][0]] == "red" and p.tgt[j - 1] == "voiture"  # crossing alignment


def test_conjugation(big):
    for en, fr in {"we see": "nous voyons", "they eat": "ils mangent", "she likes": "elle aime",
                   "i like": "j'aime", "you have": "tu as"}.items():
        found = [p for p in big if p.src[:2] == tuple(en.split())]
        assert found and all(p.tgt_text.startswith(fr) for p in found), en


def test_pair_validation():
    with pytest.raises(ValueError, match="one entry per target token"):
        Pair(("a", "."), ("b", "."), ((0,),))
    with pytest.raises(ValueError, match="outside the source"):
        Pair(("a", "."), ("b", "."), ((0,), (2,)))
    with pytest.raises(ValueError, match="non-empty"):
        Pair((), ("b",), ((),))
    with pytest.raises(ValueError, match="num_pairs"):
        generate_pairs(2)


# ---------------------------------------------------------------- splits


def test_splits_disjoint_and_d2l_in_test(data):
    train = {p.src for p in data.train}
    val, test = {p.src for p in data.val}, {p.src for p in data.test}
    assert not train & val and not train & test and not val & test
    assert (len(data.train), len(data.val), len(data.test)) == (len(train), len(val), len(test))
    for src, _, _ in D2L_SENTENCES:
        assert src in test and src not in train
        assert not data.is_seen(src) and not data.is_seen(" ".join(src))
    assert data.is_seen(data.train[0].src) and data.is_seen(data.train[0].src_text)
    assert len(data.test) == len(data.val) == 600


def test_held_out_pairs_never_in_train(data):
    for p in data.train:
        words = set(p.src)
        assert not any(a in words and b in words for a, b in HELD_OUT_PAIRS), p
    assert any(set(HELD_OUT_PAIRS[0]) <= set(p.src) for p in data.test)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_novel_pair_fraction(seed):
    d = TranslationData(seed=seed, num_pairs=3000)
    assert novel_pair_fraction(d.test, d.train) >= 0.30
    assert novel_pair_fraction(d.train[:100], d.train) == 0.0


def test_novel_pair_fraction_by_hand():
    mk = lambda s: Pair(tuple(s.split()), ("x",), ((0,),))  # noqa: E731
    train = [mk("the red car ."), mk("the dog sees the cat .")]
    assert novel_pair_fraction([mk("the red car ."), mk("the red dog ."), mk("go .")], train) == 1 / 3
    with pytest.raises(ValueError, match="at least one"):
        novel_pair_fraction([], train)


def test_split_groups_duplicate_sources_and_errors():
    ps = [Pair((f"w{i}", "."), ("x", "."), ((0,), (1,))) for i in range(20)]
    ps += [Pair(("w0", "."), ("y", "."), ((0,), (1,)))]
    train, val, test = split_pairs(ps, 0.2, 0.2, seed=0)
    assert len(train) + len(val) + len(test) == 21
    homes = [name for name, split in zip("tvs", (train, val, test), strict=True)
             if any(p.src == ("w0", ".") for p in split)]
    assert len(homes) == 1
    with pytest.raises(ValueError, match="val_frac"):
        split_pairs(ps, 0.6, 0.5)
    with pytest.raises(ValueError, match="empty"):
        split_pairs([])


def test_length_buckets_edges():
    ps = [Pair(tuple("a" * n), ("x",), ((0,),)) for n in (1, 2, 5, 6, 12, 13, 30)]
    b = length_buckets(ps)
    assert {k: [len(p.src) for p in v] for k, v in b.items()} == {
        "2-5": [2, 5], "6-9": [6], "10-12": [12], "13+": [13, 30]}
    assert list(length_buckets(ps, edges=(1, 10))) == ["1-9", "10+"]
    with pytest.raises(ValueError, match="edges"):
        length_buckets(ps, edges=(5, 3))


# ---------------------------------------------------------------- vocabulary


def test_vocab_specials_min_freq_and_round_trip():
    v = Vocab([["b", "a", "b"], ["c", "b", "a"]], min_freq=2, reserved_tokens=["<sep>"])
    assert v.idx_to_token == ["<pad>", "<bos>", "<eos>", "<unk>", "<sep>", "a", "b"]
    assert (v.pad, v.bos, v.eos, v.unk) == (0, 1, 2, 3)
    assert v["c"] == v.unk and v["zzz"] == v.unk  # rarer than min_freq / unseen
    assert v[["a", "b", "c"]] == [5, 6, 3]
    assert v.to_tokens(v[["a", "b"]]) == ["a", "b"] and v.to_tokens(5) == "a"
    assert v.to_tokens(torch.tensor([5, 6])) == ["a", "b"]
    assert v.to_tokens([5]) == ["a"]  # a one-element list stays a list (d2l returns a str)
    assert len(v) == 7 and v.token_to_idx["b"] == 6
    assert Vocab(["a", "b", "a"]).idx_to_token == ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b"]
    assert len(Vocab()) == 4
    with pytest.raises(ValueError, match="out of range"):
        v.to_tokens(7)
    assert v.to_tokens(np.int64(5)) == "a" and v.to_tokens(np.array([5, 6])[1]) == "b"  # NumPy ints
    for bad in (5.0, True, "5"):
        with pytest.raises(TypeError, match="indices must be ints"):
            v.to_tokens(bad)


def test_translation_data_reads_pairs_from_any_iterable_once():
    pairs = generate_pairs(300, 0)
    from_list = TranslationData(batch_size=32, pairs=pairs)
    from_generator = TranslationData(batch_size=32, pairs=(p for p in pairs))
    assert from_generator.train == from_list.train and from_generator.test == from_list.test
    for bad in ("abc", 3, [("go", "va")]):
        with pytest.raises(TypeError, match="pairs must be a list of Pair"):
            TranslationData(pairs=bad)


def test_vocab_order_is_deterministic():
    assert Vocab(["z", "y", "x"]).idx_to_token == Vocab(["x", "y", "z"]).idx_to_token


def test_truncate_pad():
    assert truncate_pad([5, 6, 7], 5, 0) == [5, 6, 7, 0, 0]
    assert truncate_pad([5, 6, 7], 2, 0) == [5, 6]
    assert truncate_pad([], 2, 9) == [9, 9]
    with pytest.raises(ValueError, match="num_steps"):
        truncate_pad([1], 0, 0)


# ---------------------------------------------------------------- batches


def test_vocab_from_train_only(data):
    assert set(data.src_vocab.idx_to_token[4:]) == {w for p in data.train for w in p.src}
    assert set(data.tgt_vocab.idx_to_token[4:]) == {w for p in data.train for w in p.tgt}
    # every word of the test set was seen in training (only the combinations are new)
    assert all(data.src_vocab[w] != data.src_vocab.unk for p in data.test for w in p.src)


def test_build_matches_d2l_layout(data):
    p = data.test[1]  # i lost .
    assert p.src_text == "i lost ."
    src, tgt_in, valid, label = data.build([p])
    v, tv, n = data.src_vocab, data.tgt_vocab, data.num_steps
    assert src.shape == tgt_in.shape == label.shape == (1, n) and valid.shape == (1,)
    assert src.dtype == tgt_in.dtype == label.dtype == torch.int64
    assert src[0].tolist() == v[["i", "lost", "."]] + [v.eos] + [v.pad] * (n - 4)
    assert tgt_in[0].tolist() == [tv.bos] + tv[["j'ai", "perdu", "."]] + [tv.eos] + [tv.pad] * (n - 5)
    assert label[0].tolist() == tgt_in[0, 1:].tolist() + [tv.pad]
    assert valid.tolist() == [4]
    # string pairs give the same arrays
    again = data.build([("i lost .", "j'ai perdu .")])
    assert all(torch.equal(a, b) for a, b in zip(again, (src, tgt_in, valid, label), strict=True))


def test_dataloaders(data):
    batches = list(data.train_dataloader())
    assert sum(b[0].shape[0] for b in batches) == len(data.train)
    src, tgt_in, valid, label = batches[0]
    assert src.shape == (64, data.num_steps) and valid.shape == (64,)
    assert torch.equal(valid, (src != data.src_vocab.pad).sum(1))
    assert (tgt_in[:, 0] == data.tgt_vocab.bos).all()
    assert ((label == data.tgt_vocab.eos).sum(1) == 1).all()  # exactly one <eos> per label
    assert (src[torch.arange(64), valid - 1] == data.src_vocab.eos).all()
    val = next(iter(data.val_dataloader()))
    assert torch.equal(val[0], data.build(data.val[:64])[0])  # not shuffled
    assert next(iter(data.test_dataloader()))[0].shape[1] == data.num_steps


def test_train_dataloader_shuffles_anew_each_epoch_and_repeats_per_seed(data):
    def first_batches(seed, epochs=3):
        g = torch.Generator().manual_seed(seed)
        return [next(iter(data.train_dataloader(generator=g)))[0] for _ in range(epochs)]

    a, b = first_batches(0), first_batches(0)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))  # same seed, same epochs
    assert not torch.equal(a[0], a[1]) and not torch.equal(a[1], a[2])  # epochs differ
    assert not torch.equal(first_batches(1)[0], a[0])  # the seed matters


def test_num_steps_too_small_and_truncate():
    ps = generate_pairs(300)
    longest = max(len(p.tgt) for p in ps)
    with pytest.raises(ValueError, match="num_steps=5"):
        TranslationData(num_steps=5, pairs=ps)
    d = TranslationData(num_steps=5, pairs=ps, truncate=True)
    src, tgt_in, valid, label = d.build(d.train)
    assert src.shape[1] == tgt_in.shape[1] == label.shape[1] == 5 and valid.max() == 5
    TranslationData(num_steps=longest + 1, pairs=ps)  # the tightest that fits
    with pytest.raises(ValueError, match="num_steps"):
        TranslationData(num_steps=1)


def test_encode_src_and_bad_sentences(data):
    src, valid = data.encode_src("i lost .")
    assert src.shape == (1, data.num_steps) and valid.tolist() == [4]
    assert torch.equal(src, data.encode_src(["i", "lost", "."])[0])
    src, _ = data.encode_src("i lost the zebra .")
    assert src[0, 3] == data.src_vocab.unk
    for bad in ("", "   ", []):
        with pytest.raises(ValueError, match="empty"):
            data.encode_src(bad)
    with pytest.raises(ValueError, match="empty"):
        data.build([("go .", "")])
    with pytest.raises(ValueError, match="at least one"):
        data.build([])
    with pytest.raises(ValueError, match="batch_size"):
        TranslationData(batch_size=0)


def test_min_freq_maps_rare_words_to_unk():
    ps = generate_pairs(300)
    d = TranslationData(pairs=ps, min_freq=1000)
    assert len(d.src_vocab) == len(d.tgt_vocab) == 4
    assert (d.build(d.train[:3])[0][:, 0] == d.src_vocab.unk).all()


# ---------------------------------------------------------------- fra.txt


def test_load_fra_eng_fixture():
    ps = load_fra_eng(FIXTURE)
    assert [(p.src_text, p.tgt_text) for p in ps] == [
        ("go .", "va !"), ("go .", "marche ."), ("i lost .", "j'ai perdu ."),
        ("he's calm .", "il est calme ."), ("i'm home .", "je suis chez moi ."),
        ("really ?", "vraiment ?"), ("hello , tom !", "bonjour , tom !")]
    assert all(p.align == ((),) * len(p.tgt) for p in ps)
    assert len(load_fra_eng(str(FIXTURE), max_pairs=2)) == 2
    d = TranslationData(pairs=ps * 1, num_steps=8, val_frac=0.2, test_frac=0.3)
    assert not {p.src for p in d.train} & {p.src for p in d.test}
    assert ("go", ".") in {p.src for p in d.test}


def test_load_fra_eng_errors(tmp_path):
    missing = tmp_path / "fra-eng" / "fra.txt"
    with pytest.raises(FileNotFoundError, match="place fra.txt at .*fra-eng/fra.txt"):
        load_fra_eng(missing)
    bad = tmp_path / "bad.txt"
    bad.write_text("Go.\tVa !\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: expected 'English<TAB>French'"):
        load_fra_eng(bad)
    bad.write_text("Go.\t \n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty sentence"):
        load_fra_eng(bad)
