"""Real data: the shipped Tatoeba file, d2l's preprocessing, the held-out split, FraEngData."""
from __future__ import annotations

import hashlib

import pytest
import torch

from attnlib.data import (
    TATOEBA_FRA_ENG,
    FraEngData,
    _preprocess,
    _tokens,
    load_fra_eng,
    split_by_source,
)
from attnlib.presets import build_model
from attnlib.training import train_seq2seq

SHA256 = "253b377b164d4da0cac71b8ae38487c3e9ac5eedd32aebb4c60a29a958aa79d2"


@pytest.fixture(scope="module")
def pairs():
    return load_fra_eng()


@pytest.fixture(scope="module")
def real():
    return FraEngData(num_train=3000)


def test_shipped_file_unchanged_and_read_by_default(pairs):
    assert hashlib.sha256(TATOEBA_FRA_ENG.read_bytes()).hexdigest() == SHA256
    assert len(pairs) == 76036
    assert (pairs[0].src_text, pairs[0].tgt_text) == ("go .", "va !")
    assert (pairs[37].src_text, pairs[37].tgt_text) == ("i lost .", "j'ai perdu .")
    assert (pairs[282].src_text, pairs[282].tgt_text) == ("i'm home .", "je suis chez moi .")
    assert load_fra_eng(TATOEBA_FRA_ENG, max_pairs=600) == pairs[:600]


def test_preprocessing_matches_d2l_on_first_1000_lines(d2l):
    lines = TATOEBA_FRA_ENG.read_text(encoding="utf-8").split("\n")[:1000]
    # d2l 1.0.3 normalises the whole text, then tokenises line by line (self is unused).
    src, tgt = d2l.MTFraEng._tokenize(None, d2l.MTFraEng._preprocess(None, "\n".join(lines)))
    ours = load_fra_eng(max_pairs=1000)
    assert len(src) == len(ours) == 1000
    assert [list(p.src) + ["<eos>"] for p in ours] == src
    assert [list(p.tgt) + ["<eos>"] for p in ours] == tgt
    for text in ("Hello,Tom!", "Ça\u202fva ?", "Non\xa0!", "Wait... What?", "  A , b.", "É!"):
        assert _preprocess(text) == d2l.MTFraEng._preprocess(None, text), text


def test_preprocess_by_hand():
    # like d2l: a space before punctuation, none added after it
    assert _tokens(_preprocess("Hello,Tom! I'm\xa0home.")) == (
        "hello", ",tom", "!", "i'm", "home", ".")
    assert _preprocess("Vraiment\u202f?") == "vraiment ?"


def test_load_fra_eng_argument_errors(tmp_path):
    for bad in (0, -3):
        with pytest.raises(ValueError, match=f"max_pairs must be a positive int or None, got {bad}"):
            load_fra_eng(max_pairs=bad)
    for bad in (2.5, "600", True):
        with pytest.raises(TypeError, match="max_pairs must be a positive int or None"):
            load_fra_eng(max_pairs=bad)
    utf16 = tmp_path / "utf16.txt"
    utf16.write_text("Go.\tVa !\n", encoding="utf-16")
    with pytest.raises(ValueError, match=r"utf16.txt looks like a binary or UTF-16 file"):
        load_fra_eng(utf16)
    binary = tmp_path / "fra.zip"
    binary.write_bytes(b"PK\x03\x04\x00\x00garbage")
    with pytest.raises(ValueError, match=r"fra.zip looks like a binary"):
        load_fra_eng(binary)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Go.\tVa !\nHe's calm.\tIl est très calme.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt is not UTF-8 text"):
        load_fra_eng(latin1)
    with pytest.raises(FileNotFoundError, match="never downloads"):
        load_fra_eng(tmp_path / "nothing.txt")


def test_split_keeps_every_english_sentence_on_one_side(pairs):
    train, val, test = split_by_source(pairs, num_test=1000, num_val=500, seed=0)
    assert len(train) + len(val) + len(test) == len(pairs)
    srcs = [{p.src for p in part} for part in (train, val, test)]
    assert len(srcs[2]) == 1000 and len(srcs[1]) == 500
    assert not srcs[2] & srcs[0] and not srcs[2] & srcs[1] and not srcs[1] & srcs[0]
    assert len(test) > 1000  # several translations of one sentence stay together
    again = split_by_source(pairs, num_test=1000, num_val=500, seed=0)
    assert again == (train, val, test)
    assert split_by_source(pairs, num_test=1000, num_val=500, seed=1)[2] != test


def test_split_errors(pairs):
    with pytest.raises(ValueError, match="num_test must be an int >= 0"):
        split_by_source(pairs, num_test=-1)
    with pytest.raises(ValueError, match="num_val must be an int >= 0"):
        split_by_source(pairs, num_test=10, num_val=1.5)
    with pytest.raises(ValueError, match="leave none of the 2 distinct ones"):
        split_by_source(pairs[:2], num_test=1, num_val=1)
    with pytest.raises(ValueError, match="num_train must be a positive int"):
        FraEngData(num_train=0)


def test_fra_eng_data_holds_out_test_sentences(real):
    assert len(real.train) == 3000
    assert len({p.src for p in real.test}) == 1000
    assert not any(real.is_seen(p.src) for p in real.test)
    assert not {p.src for p in real.val} & {p.src for p in real.train}
    refs = real.references()
    assert len(refs) == 1000 and sum(map(len, refs.values())) == len(real.test)
    multi = next(s for s, r in refs.items() if len(r) > 1)
    assert {p.tgt_text for p in real.test if p.src == multi} == set(refs[multi])
    src, tgt_in, valid_len, label = next(iter(real.train_dataloader()))
    assert src.shape == tgt_in.shape == label.shape == (128, 20)
    assert (tgt_in[:, 0] == real.tgt_vocab.bos).all()
    assert real.src_vocab.token_freqs and real.tgt_vocab["<unk>"] == real.tgt_vocab.unk


def test_d2l_setup_trains_on_the_first_600_pairs(pairs):
    d = FraEngData(batch_size=64, num_steps=10, max_pairs=600, num_test=0, num_val=0)
    assert d.train == pairs[:600] and d.val == [] and d.test == []
    assert d.is_seen("go .") and d.is_seen("i lost .") and not d.is_seen("he's calm .")
    src, tgt_in, _, label = d.build(d.train)
    assert src.shape == label.shape == (600, 10)
    assert FraEngData(max_pairs=600, num_test=0, num_val=0, num_train=100).train == pairs[:100]


def test_models_train_on_real_pairs(one_thread):
    d = FraEngData(max_pairs=3000, num_test=100, num_val=50, batch_size=64)
    torch.manual_seed(0)
    model = build_model("bahdanau", d)
    h = train_seq2seq(model, d, num_epochs=3, lr=0.005, progress=False, device="cpu")
    assert h.train_loss[-1] < h.train_loss[0] and torch.isfinite(torch.tensor(h.val_loss)).all()


def test_real_data_preset_holds_out_at_least_1000_sentences():
    from attnlib.presets import D2L_DATA, REAL_DATA_DEFAULTS

    d = FraEngData(**REAL_DATA_DEFAULTS)
    assert len(d.references()) >= 1000 and len(d.train) >= 20000
    assert not {p.src for p in d.test} & {p.src for p in d.train}
    assert len(FraEngData(**D2L_DATA).train) == 600
