"""attnlib.results: reading make quality's measurements the way chapters 4 and 7 print them."""
import statistics

import pytest

from attnlib.data import FraEngData
from attnlib.presets import D2L_DATA
from attnlib.results import D2L_BOOK, D2L_CODE, d2l_tables, load_quality, mean_std


def test_mean_std_formats_one_value_and_several():
    assert mean_std([12.345]) == "12.3"
    assert mean_std([1.0, 2.0, 4.0], digits=2) == (
        f"{statistics.mean([1, 2, 4]):.2f} ± {statistics.stdev([1, 2, 4]):.2f}")
    assert mean_std(x for x in (3, 3)) == "3.0 ± 0.0"
    with pytest.raises(ValueError, match="at least one value"):
        mean_std([])


def test_load_quality_reads_the_shipped_measurements_and_names_the_command(tmp_path):
    quality = load_quality()
    assert {"runs", "real", "d2l"} <= set(quality)
    with pytest.raises(FileNotFoundError, match="make quality"):
        load_quality(tmp_path / "quality.json")


@pytest.mark.parametrize("model", sorted(D2L_BOOK))
def test_d2l_tables_put_both_codes_beside_the_book(model):
    quality = load_quality()
    d2l_data = FraEngData(**D2L_DATA)
    runs, speed, sentences = d2l_tables(quality, d2l_data, model)
    assert set(runs) == {"attnlib", D2L_CODE}
    steps = quality["d2l"]["data"]["num_steps"]
    # d2l prints the per-token loss divided by num_steps; the table shows both readings
    per_token = float(speed.loc["cross-entropy per token", D2L_CODE])
    assert per_token == pytest.approx(runs[D2L_CODE]["loss"] * steps, abs=1e-3)
    assert speed.loc["loss as printed", "the d2l book (V100)"] == D2L_BOOK[model][0]
    assert len(sentences) == 4
    assert list(sentences["in the 600 training pairs"]).count("yes") == 3
    with pytest.raises(ValueError, match="model must be one of"):
        d2l_tables(quality, d2l_data, "gpt")
