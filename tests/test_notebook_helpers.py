"""attnlib.notebook: the helpers the chapters show their work with."""
import torch

from attnlib.notebook import agree, rounded, show_source


def test_agree_says_agree_within_the_tolerance_and_by_how_much_otherwise():
    a = torch.tensor([1.0, 2.0, 3.0])
    assert agree("by hand and attnlib", a - (a + 1e-7)) == "by hand and attnlib agree to within 1e-6"
    assert agree("the two paths", 3e-5, tol=1e-5) == "the two paths differ by 3.0e-05, more than 1e-05"
    gap = torch.tensor([[0.0, -2e-3]])
    assert agree("two paths", gap, tol=1e-3) == "two paths differ by 2.0e-03, more than 0.001"


def test_rounded_prints_minus_zero_as_zero_and_rounds():
    assert rounded(torch.tensor([-1e-9, 0.12345, 2.0])) == [0.0, 0.123, 2.0]
    assert str(rounded(torch.tensor([-0.0001]), 2)) == "[0.0]"


def test_show_source_displays_the_code(capsys):
    show_source(rounded)
    assert "def rounded" in capsys.readouterr().out
