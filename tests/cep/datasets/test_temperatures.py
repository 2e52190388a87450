"""Daily temperature files and heat waves (cep/datasets/temperatures.py); no JVM, no network."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.errors import InputDataError
from cep.datasets.temperatures import TemperatureFileError, heat_runs, read_daily_temperatures

# The layout of tunis_climate.txt (tabs), across a month, a year end and a leap day.
TEXT = ("Day\tMonth\tYear\tTmin(C)\tTmax(C)\tPrcp(mm)\tEt0(mm)\n"
        "31\t12\t1999\t8.0\t15.5\t0.0\t1.5\n"
        "1\t1\t2000\t7.5\t16.0\t2.5\t1.3\n"
        "28\t2\t2000\t9.0\t18.25\t0.0\t2.0\n")


def test_a_small_file_becomes_consecutive_days() -> None:
    with pytest.raises(TemperatureFileError, match="line 4: expected 2000-01-02 \\(the day after "
                                                   "2000-01-01\\), found 2000-02-28"):
        read_daily_temperatures(TEXT, city="x")  # a gap of 57 days
    lines = TEXT.splitlines()
    text = "\n".join(lines[:3] + ["2\t1\t2000\t6.0\t14.0\t0.0\t1.1", "29\t2\t2000\t1.0\t2.0\t0\t0"])
    with pytest.raises(TemperatureFileError, match="line 5: expected 2000-01-03"):
        read_daily_temperatures(text, city="x")
    leap = ("Day Month Year Tmin(C) Tmax(C) Prcp(mm) Et0(mm)\n"
            "28 2 2000 9.0 18.25 0.0 2.0\n29 2 2000 -1.5 31.0 0.0 2.0\n1 3 2000 0 30.0 1 1\n")
    t = read_daily_temperatures(leap.encode(), city="tunis", name="t.txt")
    assert len(t) == 3 and t.city == "tunis"
    assert t.day.dtype == np.dtype("datetime64[D]")
    assert [str(d) for d in t.day] == ["2000-02-28", "2000-02-29", "2000-03-01"]
    assert t.tmax.dtype == np.float64 and t.tmax.tolist() == [18.25, 31.0, 30.0]
    assert t.tmin.tolist() == [9.0, -1.5, 0.0]
    # Tabs, padded spaces (champion_climate.txt), CRLF with a BOM (cordoba_climate.txt), the
    # names of hyderabad_climate.txt and blank lines give the same days.
    variants = [
        leap.replace(" ", "\t"),
        "".join(f"{line.replace(' ', '      ')}   \n" for line in leap.splitlines()),
        ("\ufeff" + leap.replace("\n", "\r\n")).encode(),
        leap.replace("Tmin(C) Tmax(C) Prcp(mm) Et0(mm)", "MinTemp MaxTemp Precipitation ReferenceET"),
        "\n\n" + leap.replace("\n", "\n\n"),
        leap.replace("Day Month Year", "DAY month Year"),
    ]
    for variant in variants:
        v = read_daily_temperatures(variant, city="tunis")
        assert np.array_equal(v.day, t.day) and v.tmax.tolist() == t.tmax.tolist()
        assert v.tmin.tolist() == t.tmin.tolist()


def test_the_minimum_is_optional_and_columns_are_found_by_name() -> None:
    t = read_daily_temperatures("day month year tmax rain\n1 1 2001 12.5 0\n2 1 2001 13 0.2\n",
                                city="c")
    assert t.tmax.tolist() == [12.5, 13.0] and np.isnan(t.tmin).all() and len(t.tmin) == 2
    swapped = read_daily_temperatures("Day Month Year Tmax(C) Et0(mm) Tmin(C)\n"
                                      "5 7 2010 35.5 7.0 24.0\n", city="c")
    assert (swapped.tmax.tolist(), swapped.tmin.tolist()) == ([35.5], [24.0])


HEADER = b"Day Month Year Tmin(C) Tmax(C) Prcp(mm)\n"


@pytest.mark.parametrize("data, message", [
    (b"", "t.txt: empty file, expected a header 'Day Month Year ... Tmax(C) ...'"),
    (b"\n \n\t\n", "t.txt: empty file"),
    (b"Day Month Year Tmin(C) Tmax(C)\n1 1 2000 \xff1 2\n", "t.txt: not UTF-8 text"),
    (b"Date Tmin Tmax\n2000-01-01 1 2\n", "t.txt line 1: expected a header 'Day Month Year' "
                                          "then columns including one of tmax(c), maxtemp, tmax "
                                          "(any case), found 'Date Tmin Tmax'"),
    (b"Day Month Year Tmin(F) Tmax(F)\n1 1 2000 30 50\n",
     "t.txt line 1: expected a header 'Day Month Year' then columns including one of"),
    (b"Month Day Year Tmax\n1 1 2000 2\n", "t.txt line 1: expected a header 'Day Month Year'"),
    (b"\nDay Month Year Tmax Tmin MaxTemp\n1 1 2000 1 2 3\n",
     "t.txt line 2: expected at most one of tmax(c), maxtemp, tmax, found "
     "'Day Month Year Tmax Tmin MaxTemp'"),
    (b"Day Month Year Tmin MinTemp Tmax\n1 1 2000 1 2 3\n", "t.txt line 1: expected at most one "
                                                           "of tmin(c), mintemp, tmin"),
    (HEADER, "t.txt: a header but no days"),
    (HEADER + b"1 1 2000 1.0 2.0 0\n2 1 2000 1.0 2.0\n", "t.txt line 3: expected 6 fields, found 5"),
    (HEADER + b"1 1 2000 1.0 2.0 0 9\n", "t.txt line 2: expected 6 fields, found 7"),
    (HEADER + b"1 Jan 2000 1.0 2.0 0\n", "t.txt line 2: expected a day, month and a four-digit "
                                         "year, found '1 Jan 2000'"),
    (HEADER + b"1 1 00 1.0 2.0 0\n", "t.txt line 2: expected a day, month and a four-digit "
                                     "year, found '1 1 00'"),
    (HEADER + b"-1 1 2000 1.0 2.0 0\n", "t.txt line 2: expected a day, month and a four-digit"),
    (HEADER + b"29 2 2001 1.0 2.0 0\n", "t.txt line 2: day 29, month 2, year 2001 is not a "
                                        "calendar date"),
    (HEADER + b"1 13 2001 1.0 2.0 0\n", "t.txt line 2: day 1, month 13, year 2001 is not a "
                                        "calendar date"),
    (HEADER + b"0 1 2001 1.0 2.0 0\n", "t.txt line 2: day 0, month 1, year 2001 is not a "
                                       "calendar date"),
    (HEADER + b"2 1 2001 1.0 2.0 0\n1 1 2001 1.0 2.0 0\n",
     "t.txt line 3: expected 2001-01-03 (the day after 2001-01-02), found 2001-01-01"),
    (HEADER + b"2 1 2001 1.0 2.0 0\n\n2 1 2001 1.0 2.0 0\n",
     "t.txt line 4: expected 2001-01-03 (the day after 2001-01-02), found 2001-01-02"),
    (HEADER + b"1 1 2001 1.0 warm 0\n", "t.txt line 2: expected Tmax(C) in degrees Celsius "
                                        "between -90 and 60, found 'warm'"),
    (HEADER + b"1 1 2001 1.0 nan 0\n", "t.txt line 2: expected Tmax(C) in degrees Celsius "
                                       "between -90 and 60, found 'nan'"),
    (HEADER + b"1 1 2001 -inf 2.0 0\n", "t.txt line 2: expected Tmin(C) in degrees Celsius "
                                        "between -90 and 60, found '-inf'"),
    (HEADER + b"1 1 2001 1.0 2.0 0\n2 1 2001 70.0 95.5 0\n",
     "t.txt line 3: expected Tmax(C) in degrees Celsius between -90 and 60, found '95.5'"),
    (HEADER + b"1 1 2001 -90.5 2.0 0\n", "t.txt line 2: expected Tmin(C) in degrees Celsius "
                                         "between -90 and 60, found '-90.5'"),
    (HEADER + b"1 1 2001 1.0 2.0 0\n2 1 2001 21.5 20.0 0\n",
     "t.txt line 3: expected Tmin(C) <= Tmax(C), found 21.5 > 20"),
    (b"Day Month Year MinTemp MaxTemp\n1 1 2001 5 4\n",
     "t.txt line 2: expected MinTemp <= MaxTemp, found 5 > 4"),
])
def test_unreadable_temperature_files_are_typed_errors_naming_the_line(data: bytes,
                                                                      message: str) -> None:
    with pytest.raises(TemperatureFileError) as info:
        read_daily_temperatures(data, city="c", name="t.txt")
    assert isinstance(info.value, InputDataError) and info.value.code == "CEP-DATA-005"
    assert str(info.value).startswith("CEP-DATA-005: t.txt") and message in str(info.value)


def test_the_range_limits_themselves_are_temperatures() -> None:
    t = read_daily_temperatures(HEADER + b"1 1 2001 -90 60 0\n2 1 2001 -90.0 -90.0 0\n", city="c")
    assert t.tmin.tolist() == [-90.0, -90.0] and t.tmax.tolist() == [60.0, -90.0]


def test_heat_runs_are_maximal_runs_strictly_above_the_threshold() -> None:
    hot, mild = 31.0, 30.0  # exactly the threshold is not above it
    assert heat_runs([hot] * 5) == [(0, 4)]
    assert heat_runs([hot] * 4) == []
    assert heat_runs([mild] * 10) == []
    assert heat_runs([hot] * 12) == [(0, 11)]  # a long heat wave is one heat wave
    x = [mild] + [hot] * 5 + [mild] + [hot] * 4 + [float("nan")] + [hot] * 6
    assert heat_runs(x) == [(1, 5), (12, 17)]
    assert heat_runs(np.array(x), threshold=29.5, length=1) == [(0, 10), (12, 17)]
    assert heat_runs(x, length=6) == [(12, 17)]
    assert heat_runs(x, threshold=31) == []
    assert heat_runs([35, 20, 35], length=1) == [(0, 0), (2, 2)]
    assert heat_runs([]) == [] and heat_runs(np.zeros(0)) == []
    assert heat_runs([-5.0] * 3, threshold=-10, length=3) == [(0, 2)]


@pytest.mark.parametrize("kwargs, message", [
    ({"threshold": float("nan")}, "threshold must be a finite number, found nan"),
    ({"threshold": float("inf")}, "threshold must be a finite number, found inf"),
    ({"threshold": "30"}, "threshold must be a finite number, found '30'"),
    ({"threshold": True}, "threshold must be a finite number, found True"),
    ({"length": 0}, "length must be an integer >= 1, found 0"),
    ({"length": 2.0}, "length must be an integer >= 1, found 2.0"),
    ({"length": True}, "length must be an integer >= 1, found True"),
    ({"tmax": np.ones((2, 3))}, "tmax must be one-dimensional, found shape (2, 3)"),
])
def test_bad_heat_run_arguments_are_typed_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"tmax": [31.0] * 6, **kwargs}
    with pytest.raises(InputDataError) as info:
        heat_runs(**args)  # type: ignore[arg-type]
    assert str(info.value) == f"CEP-DATA-001: {message}"


def runs_by_counting(x: list[float], threshold: float, length: int) -> list[tuple[int, int]]:
    """Oracle: walk the days and count the current run, as a person would."""
    found, start = [], None
    for i, value in enumerate(x + [float("nan")]):
        if value > threshold:
            start = i if start is None else start
            continue
        if start is not None and i - start >= length:
            found.append((start, i - 1))
        start = None
    return found


temps = st.lists(st.one_of(st.sampled_from([29.0, 30.0, 30.1, 35.0, float("nan")]),
                           st.floats(-40, 50)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(x=temps, threshold=st.sampled_from([30.0, 25.0, 0.0]), length=st.integers(1, 7))
def test_heat_runs_agree_with_counting_day_by_day(x: list[float], threshold: float,
                                                 length: int) -> None:
    runs = heat_runs(x, threshold, length)
    assert runs == runs_by_counting(x, threshold, length)
    for first, last in runs:  # each run is hot throughout and cannot be extended
        assert last - first + 1 >= length and all(v > threshold for v in x[first:last + 1])
        assert first == 0 or not x[first - 1] > threshold
        assert last == len(x) - 1 or not x[last + 1] > threshold
