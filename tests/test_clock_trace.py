"""bench/clock_trace.py's reading of nvidia-smi's samples and its summary of the replays."""
import pandas as pd
import pytest

from .conftest import load_bench


@pytest.fixture(scope="module")
def clock_trace():
    return load_bench("clock_trace")


def test_a_kernel_slow_while_the_clock_is_low_shows_in_the_summary(clock_trace, tmp_path):
    smi = tmp_path / "smi.csv"
    # ten samples, 50 ms apart: 1980 MHz, then 1400 MHz and power capped from the sixth on
    smi.write_text("".join(
        f"2026/12/07 18:00:00.{100 * i:03d}, {1980 if i < 5 else 1400}, "
        f"{600 if i < 5 else 700}.00, {60 + i}, {'0x0' if i < 5 else '0x4'}\n"
        for i in range(10)))
    samples = clock_trace.read_smi(smi)
    assert list(samples["sm_mhz"][:6]) == [1980] * 5 + [1400]
    start = samples["t"][0]
    # t201 and the default slow down together with the clock, t24 does not
    replays = pd.DataFrame(
        [{"t": start + 0.1 * i + 0.01, "variant": "t201", "us": 193.0 if i < 5 else 280.0,
          "round": i} for i in range(10)]
        + [{"t": start + 0.1 * i + 0.02, "variant": "t24", "us": 210.0, "round": i}
           for i in range(10)]
        + [{"t": start + 0.1 * i + 0.03, "variant": "default", "us": 200.0 if i < 5 else 290.0,
            "round": i} for i in range(10)])
    result = clock_trace.summarize(replays, samples)
    t201, t24 = result["variants"]["t201"], result["variants"]["t24"]
    assert t201["at_or_above_median_clock_us"] == 193.0
    assert t201["below_median_clock_us"] == 280.0
    assert t201["first_third_us"] == 193.0 and t201["last_third_us"] == 280.0
    assert t24["below_median_clock_us"] == t24["at_or_above_median_clock_us"] == 210.0
    assert result["sm_mhz"] == {"min": 1400.0, "median": 1690.0, "max": 1980.0}
    # paired with the default round by round, t201's ratio moves 0.05%, its time 37%
    assert t201["spread_pct"] == pytest.approx(100 * 87 / 236.5)
    assert t201["vs_default_spread_pct"] == pytest.approx(
        100 * (280 / 290 - 193 / 200) / t201["vs_default_median"])
    assert t201["vs_default_spread_pct"] < 0.5 < 30 < t24["vs_default_spread_pct"]
    assert result["reasons_seen"] == ["0x0", "0x4"]
