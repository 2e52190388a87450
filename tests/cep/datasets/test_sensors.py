"""Sensor readings into a probabilistic stream of changes (cep/datasets/sensors.py); no JVM, no network."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.errors import InputDataError
from cep.prob.stream import from_long
from cep.datasets.prob_streams import long_columns
from cep.datasets.sensors import CHANGE_VALUES, SensorFileError, change_pstream, read_sensor_csv

CSV = ("date,temp\n"
       "2010/03/14 00:00,41.0\n"
       "2010/03/14 01:00,40.2\n"
       "2010/03/14 03:00,40.1\n"   # a missing hour (as at a daylight-saving switch)
       "2010/03/14 04:00,42.0\n")


def test_a_small_csv_becomes_readings_in_file_order() -> None:
    s = read_sensor_csv(CSV.encode(), name="t.csv")
    assert len(s) == 4 and s.column == "temp"
    assert s.t.dtype == np.int64 and s.t.tolist() == [0, 1, 2, 3]
    assert s.reading.dtype == np.float64 and s.reading.tolist() == [41.0, 40.2, 40.1, 42.0]
    assert [str(x) for x in s.ts] == ["2010-03-14T00:00:00", "2010-03-14T01:00:00",
                                      "2010-03-14T03:00:00", "2010-03-14T04:00:00"]
    # Text, a BOM with CRLF line ends, the other column order (sf-temps.csv) and ISO dates with
    # seconds give the same readings.
    other = "temp,Date\n" + "".join(f"{v},{d.replace('/', '-')}:00\n" for d, v in
                                    (line.split(",") for line in CSV.splitlines()[1:]))
    for variant in (CSV, ("\ufeff" + CSV.replace("\n", "\r\n")).encode(), other,
                    CSV.replace(" ", "T")):
        q = read_sensor_csv(variant)
        assert q.reading.tolist() == s.reading.tolist() and np.array_equal(q.ts, s.ts)
        assert q.t.tolist() == s.t.tolist()


def test_the_small_csv_becomes_a_change_stream_from_the_normal_cdf() -> None:
    s = read_sensor_csv(CSV)
    p = change_pstream(s.reading, sigma=0.25, step=0.5, stream="demo")
    assert p.values == CHANGE_VALUES == ("fall", "rise", "steady") and p.stream == "demo"
    assert p.t.tolist() == [1, 2, 3]  # the index of the later reading of each change
    noise = NormalDist(0.0, 0.25 * math.sqrt(2))
    for row, d in zip(p.probs, np.diff(s.reading)):
        change = NormalDist(d, noise.stdev)
        expected = [change.cdf(-0.5), 1 - change.cdf(0.5), change.cdf(0.5) - change.cdf(-0.5)]
        np.testing.assert_allclose(row, expected, rtol=1e-9, atol=1e-15)
    assert [p.values[j] for j in p.probs.argmax(axis=1)] == ["fall", "steady", "rise"]
    cols = long_columns(p)
    assert from_long(cols["t"], cols["value"], cols["p"], stream="demo") == p


def test_the_tails_keep_their_precision() -> None:
    # A change of 5 with sigma 0.25: P(fall) is about 1e-34, computed without cancellation.
    p = change_pstream(np.array([0.0, 5.0, 0.0]), sigma=0.25, step=0.5)
    fall, rise, steady = p.probs[0]
    assert rise == 1.0 and 0 < fall < 1e-30 and 0 < steady < 1e-15
    assert math.isclose(fall, 0.5 * math.erfc(5.5 / 0.5), rel_tol=1e-12)
    assert math.isclose(steady, 0.5 * (math.erfc(4.5 / 0.5) - math.erfc(5.5 / 0.5)), rel_tol=1e-9)
    # Symmetric: a fall mirrors a rise.
    assert p.probs[1].tolist() == [rise, fall, steady]


def test_fewer_than_two_readings_give_an_empty_stream() -> None:
    for readings in ([], [3.0]):
        p = change_pstream(np.array(readings), sigma=1.0, step=0.0)
        assert len(p) == 0 and p.values == CHANGE_VALUES and p.probs.shape == (0, 3)


readings = st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=0, max_size=40)


@settings(max_examples=80, deadline=None)
@given(x=readings, sigma=st.floats(1e-3, 100.0), step=st.floats(0.0, 50.0))
def test_every_change_stream_is_a_valid_probabilistic_stream(x: list[float], sigma: float,
                                                             step: float) -> None:
    p = change_pstream(np.array(x), sigma=sigma, step=step, stream="s")
    n = max(len(x) - 1, 0)
    assert p.t.tolist() == list(range(1, n + 1)) and p.probs.shape == (n, 3)
    assert np.all(p.probs >= 0.0) and np.all(p.probs <= 1.0)
    np.testing.assert_allclose(p.probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    if n:
        cols = long_columns(p)
        back = from_long(cols["t"], cols["value"], cols["p"], stream="s")
        for v in CHANGE_VALUES:
            np.testing.assert_array_equal(back.column(v), p.column(v))
        # A larger change is never less likely to be a rise, nor more likely to be a fall.
        order = np.argsort(np.diff(np.array(x)), kind="stable")
        assert np.all(np.diff(p.column("rise")[order]) >= -1e-12)
        assert np.all(np.diff(p.column("fall")[order]) <= 1e-12)


@pytest.mark.parametrize("kwargs, message", [
    ({"sigma": 0.0}, "sigma must be a finite number > 0, found 0.0"),
    ({"sigma": -1.0}, "sigma must be a finite number > 0, found -1.0"),
    ({"sigma": float("inf")}, "sigma must be a finite number > 0, found inf"),
    ({"sigma": "1"}, "sigma must be a finite number > 0, found '1'"),
    ({"step": -0.5}, "step must be a finite number >= 0, found -0.5"),
    ({"step": float("nan")}, "step must be a finite number >= 0, found nan"),
    ({"step": True}, "step must be a finite number >= 0, found True"),
    ({"reading": np.array([1.0, float("nan")])}, "reading 1 is not a finite number: nan"),
    ({"reading": np.ones((2, 2))}, "reading must be one-dimensional, found shape (2, 2)"),
])
def test_bad_conversion_arguments_are_typed_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"reading": np.array([1.0, 2.0]), "sigma": 1.0, "step": 0.5, **kwargs}
    reading = args.pop("reading")
    with pytest.raises(InputDataError) as info:
        change_pstream(reading, **args)  # type: ignore[arg-type]
    assert str(info.value) == f"CEP-DATA-001: {message}"


@pytest.mark.parametrize("data, message", [
    (b"", "empty file, expected a header 'date,<reading>'"),
    (b"date,temp\n2010/01/01 00:00,\xff1\n", "not UTF-8"),
    (b"when,temp\n2010/01/01 00:00,1\n", "line 1: expected a header of two names, 'date' and "
                                         "the reading's, found 'when,temp'"),
    (b"date,temp,wind\n2010/01/01 00:00,1,2\n", "line 1: expected a header of two names"),
    (b"date,date\n2010/01/01 00:00,1\n", "line 1: expected a header of two names"),
    (b"date,\n2010/01/01 00:00,1\n", "line 1: expected a header of two names"),
    (b"date,temp\n", "a header but no readings"),
    (b"date,temp\n2010/01/01 00:00,1\n2010/01/01 01:00\n", "line 3: expected 2 fields, found 1"),
    (b"date,temp\n01.01.2010 00:00,1\n", "line 2: expected a date 'YYYY/MM/DD HH:MM[:SS]', "
                                         "found '01.01.2010 00:00'"),
    (b"date,temp\n2010/02/30 00:00,1\n", "line 2: '2010/02/30 00:00' is not a calendar date"),
    (b"date,temp\n2010/01/01 24:00,1\n", "line 2: '2010/01/01 24:00' is not a calendar date"),
    (b"date,temp\n2010/01/01 00:61,1\n", "line 2: '2010/01/01 00:61' is not a calendar date"),
    (b"date,temp\n2010/01/01 00:00,1\n2010/01/01 01:00,warm\n",
     "line 3: temp must be a finite number, found 'warm'"),
    (b"date,temp\n2010/01/01 00:00,\n", "line 2: temp must be a finite number, found ''"),
    (b"date,temp\n2010/01/01 00:00,inf\n", "line 2: temp must be a finite number, found 'inf'"),
    (b"date,temp\n2010/01/01 00:00,nan\n", "line 2: temp must be a finite number, found 'nan'"),
    (b"date,temp\n2010/01/01 01:00,1\n2010/01/01 00:00,2\n",
     "line 3: date 2010-01-01T00:00:00 is not after 2010-01-01T01:00:00"),
    (b"date,temp\n2010/01/01 01:00,1\n\n2010/01/01 01:00,2\n",
     "line 4: date 2010-01-01T01:00:00 is not after 2010-01-01T01:00:00"),
    (b'date,temp\n"2010/01/01 00:00,1\n', "line 2: expected 2 fields, found 1"),
])
def test_unreadable_sensor_files_are_typed_errors_naming_the_line(data: bytes,
                                                                message: str) -> None:
    with pytest.raises(SensorFileError) as info:
        read_sensor_csv(data, name="s.csv")
    assert isinstance(info.value, InputDataError)
    assert str(info.value).startswith("CEP-DATA-004: s.csv") and message in str(info.value)
