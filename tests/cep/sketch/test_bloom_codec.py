"""Bloom filters, the persisted bit format, the config and name factorisation (no JVM)."""

from __future__ import annotations

import struct
import zlib

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.sketch import codec
from cep.sketch.bloom import BloomFilter, has_positions, pack_positions
from cep.sketch.codec import decode_bits, encode_bits
from cep.sketch.config import SketchConfig
from cep.sketch.errors import CorruptSketchError, SketchConfigError, SketchInputError
from cep.sketch.hashing import bit_positions, positions_of
from cep.sketch.names import factorize, merge_vocabularies

NAMES = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
SEEDS = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=6, unique=True).map(tuple)
MS = st.integers(1, 64).map(lambda b: 8 * b)


# ---- config ----------------------------------------------------------------------------------

@pytest.mark.parametrize("field, kwargs", [
    ("m", {"m": 0, "k": 1, "C": 1}),
    ("m", {"m": 12, "k": 1, "C": 1}),
    ("m", {"m": 2**31 + 8, "k": 1, "C": 1}),
    ("m", {"m": 8.0, "k": 1, "C": 1}),
    ("k", {"m": 8, "k": 0, "C": 1}),
    ("k", {"m": 8, "k": True, "C": 1}),
    ("C", {"m": 8, "k": 1, "C": 0}),
    ("fanout", {"m": 8, "k": 1, "C": 1, "fanout": 1}),
    ("seeds", {"m": 8, "k": 2, "C": 1, "seeds": (1,)}),
    ("seeds", {"m": 8, "k": 2, "C": 1, "seeds": (1, 1)}),
    ("seeds", {"m": 8, "k": 1, "C": 1, "seeds": (-1,)}),
    ("seeds", {"m": 8, "k": 1, "C": 1, "seeds": (2**32,)}),
    ("seeds", {"m": 8, "k": 1, "C": 1, "seeds": "a"}),
    ("config_version", {"m": 8, "k": 1, "C": 1, "config_version": -1}),
    ("target_fpq", {"m": 8, "k": 1, "C": 1, "target_fpq": 1.0}),
])
def test_config_errors_name_the_field_and_value(field: str, kwargs: dict) -> None:
    with pytest.raises(SketchConfigError) as info:
        SketchConfig(**kwargs)
    assert info.value.code == "CEP-SKETCH-001"
    assert str(info.value).startswith(f"CEP-SKETCH-001: {field}: ")
    assert repr(kwargs[field]) in str(info.value) or str(list(kwargs[field])) in str(info.value)


def test_config_defaults_and_round_trip() -> None:
    cfg = SketchConfig(m=np.int64(64), k=2, C=4, fanout=3, seeds=[7, 9], target_fpq=0.01)
    assert (cfg.m, cfg.seeds, cfg.leaf_size, cfg.bytes_per_node) == (64, (7, 9), 4, 8)
    assert type(cfg.m) is int
    assert SketchConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(SketchConfigError, match="unknown config fields"):
        SketchConfig.from_dict({**cfg.to_dict(), "x": 1})
    with pytest.raises(SketchConfigError, match="missing config fields"):
        SketchConfig.from_dict({"m": 8})


# ---- names and hashing -----------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["", "A", "AB", "ABC", "é", "x y z", "ABCDEFGHIJ", "ABCDEFGHIK"]),
                max_size=60), st.booleans())
def test_factorize_matches_sorted_distinct(names: list[str], as_array: bool) -> None:
    data = np.array(names, dtype=str) if as_array else names
    codes, vocabulary = factorize(data)
    assert vocabulary == tuple(sorted(set(names)))
    assert codes.dtype == np.int32
    assert [vocabulary[c] for c in codes] == names


@pytest.mark.parametrize("width", [1, 2, 3, 7])
def test_factorize_vectorised_path_on_large_arrays(width: int, monkeypatch) -> None:
    rng = np.random.default_rng(width)
    pool = ["".join(chr(65 + int(c)) for c in rng.integers(0, 26, width)) for _ in range(300)]
    pool += [p[:-1] for p in pool[:20]]   # shorter names (trailing padding) too
    names = np.array(pool)[rng.integers(0, len(pool), 20_000)]
    codes, vocabulary = factorize(names)
    assert vocabulary == tuple(sorted(set(names.tolist())))
    assert np.array_equal(np.array(vocabulary)[codes], names)


def test_factorize_survives_hash_collisions(monkeypatch) -> None:
    # A mixer of 0 sends every long name to one key: the check must fall back to np.unique.
    from cep.sketch import names as module
    monkeypatch.setattr(module, "_MIX", np.uint64(0))
    names = np.array(["ABC", "XYZ", "ABD"] * 3000)
    codes, vocabulary = factorize(names)
    assert vocabulary == ("ABC", "ABD", "XYZ")
    assert np.array_equal(np.array(vocabulary)[codes], names)


def test_factorize_many_distinct_names_use_the_sort_path() -> None:
    names = np.array([f"n{i}" for i in range(70_000)] * 2)
    codes, vocabulary = factorize(names)
    assert len(vocabulary) == 70_000
    assert np.array_equal(np.array(vocabulary)[codes], names)


@pytest.mark.parametrize("bad", [np.array([1, 2]), np.array([["a"]]), "abc", ["a", None],
                                 [["a"]], np.array([b"a"])])
def test_factorize_rejects_non_strings(bad: object) -> None:
    with pytest.raises(SketchInputError):
        factorize(bad)


def test_merge_vocabularies_keeps_code_order() -> None:
    merged, remap = merge_vocabularies(("b", "d"), ["a", "c"])
    assert merged == ("a", "b", "c", "d") and remap.tolist() == [1, 3]
    same, ident = merge_vocabularies(("b",), ["b"])
    assert same == ("b",) and ident.tolist() == [0]


@settings(max_examples=100, deadline=None)
@given(st.lists(NAMES, max_size=20), MS, SEEDS)
def test_bit_positions_are_murmur3_mod_m(names: list[str], m: int, seeds: tuple[int, ...]) -> None:
    got = bit_positions(names, m, seeds)
    want = [[mmh3.hash(n.encode("utf-8"), s, signed=False) % m for s in seeds] for n in names]
    assert got.shape == (len(names), len(seeds)) and got.tolist() == want


def test_bit_positions_hash_each_distinct_name_once(monkeypatch) -> None:
    calls: list[bytes] = []
    real = mmh3.hash

    def counting(data: bytes, seed: int, signed: bool) -> int:
        calls.append(data)
        return real(data, seed, signed=signed)

    monkeypatch.setattr("cep.sketch.hashing.mmh3.hash", counting)
    bit_positions(np.array(["A", "B", "A", "A", "B"]), 64, (1, 2))
    assert sorted(calls) == [b"A", b"A", b"B", b"B"]


def test_bit_positions_rejects_unencodable_names() -> None:
    with pytest.raises(SketchInputError, match="UTF-8"):
        bit_positions(["\ud800"], 64, (0,))


def test_positions_of_checks_the_hasher() -> None:
    with pytest.raises(SketchConfigError, match="shape"):
        positions_of(lambda names, m, seeds: np.zeros((len(names), 5), int), ["A"], 8, (0,))
    with pytest.raises(SketchConfigError, match=r"\[0, 8\)"):
        positions_of(lambda names, m, seeds: np.full((len(names), 1), -1), ["A"], 8, (0,))


# ---- Bloom filters ---------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(NAMES, max_size=40), st.lists(NAMES, max_size=10), MS, SEEDS)
def test_bloom_has_no_false_negatives(added: list[str], probes: list[str], m: int,
                                      seeds: tuple[int, ...]) -> None:
    bf = BloomFilter.empty(m, seeds).add(added)
    assert all(bf.contains(name) and name in bf for name in added)
    # A name is reported present exactly when all its bits are set.
    pos = bit_positions(added, m, seeds)
    set_bits = set(pos.reshape(-1).tolist())
    for name in probes:
        expected = all(int(p) in set_bits for p in bit_positions([name], m, seeds)[0])
        assert bf.might_contain(name) == expected
    assert bf.n_set == len(set_bits)
    assert bf.density == len(set_bits) / m


@settings(max_examples=100, deadline=None)
@given(st.lists(NAMES, max_size=20), st.lists(NAMES, max_size=20), MS, SEEDS)
def test_bloom_merge_is_the_filter_of_the_union(a: list[str], b: list[str], m: int,
                                                seeds: tuple[int, ...]) -> None:
    empty = BloomFilter.empty(m, seeds)
    left, right = empty.add(a), empty.add(b)
    assert left.merge(right) == empty.add(a + b) == (right | left)
    assert left.merge(empty) == left


def test_bloom_add_returns_a_new_value() -> None:
    empty = BloomFilter.empty(64, (1, 2))
    full = empty.add("A")
    assert empty.n_set == 0 and full.n_set >= 1 and empty != full
    assert full.add([]) is full
    assert 3 not in full


@pytest.mark.parametrize("other, field", [
    (BloomFilter.empty(128, (1, 2)), "m"),
    (BloomFilter.empty(64, (1, 3)), "seeds"),
])
def test_bloom_merge_requires_the_same_config(other: BloomFilter, field: str) -> None:
    with pytest.raises(SketchConfigError, match=f"differ in {field}"):
        BloomFilter.empty(64, (1, 2)).merge(other)
    with pytest.raises(SketchConfigError, match="expected a BloomFilter"):
        BloomFilter.empty(64, (1, 2)).merge("x")  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(st.lists(NAMES, max_size=20), MS, SEEDS)
def test_bloom_byte_round_trip(names: list[str], m: int, seeds: tuple[int, ...]) -> None:
    bf = BloomFilter.empty(m, seeds).add(names)
    blob = bf.to_bytes()
    assert BloomFilter.from_bytes(blob, seeds) == bf
    assert BloomFilter.from_bytes(blob, seeds, m=m) == bf
    assert BloomFilter.from_packed(bf.packed(), m, seeds) == bf
    with pytest.raises(CorruptSketchError, match="m mismatch"):
        BloomFilter.from_bytes(blob, seeds, m=m + 8)


def test_bloom_with_toy_hasher_and_config() -> None:
    toy = lambda names, m, seeds: np.array([[ord(n[0]) % m, (ord(n[0]) + 1) % m] for n in names])
    bf = BloomFilter.from_config(SketchConfig(m=16, k=2, C=1), hasher=toy).add(["A", "B"])
    # A = 65 -> bits 1, 2; B = 66 -> bits 2, 3
    assert np.unpackbits(bf.packed(), bitorder="little").nonzero()[0].tolist() == [1, 2, 3]
    assert bf.contains("A") and bf.contains("B")
    assert bf.contains("Q") is True     # Q = 81 -> bits 1, 2: a false positive
    assert bf.contains("D") is False    # D = 68 -> bits 4, 5
    assert repr(bf) == "BloomFilter(m=16, seeds=(0, 1))"


def test_bloom_rejects_bad_bits() -> None:
    with pytest.raises(SketchInputError, match="expected 8 bytes"):
        BloomFilter(m=64, seeds=(0,), bits=b"\x00")
    with pytest.raises(SketchConfigError, match="seeds"):
        BloomFilter.empty(64, ())
    with pytest.raises(SketchConfigError, match="m: "):
        BloomFilter.empty(-8, (0,))


def test_pack_and_has_positions() -> None:
    packed = pack_positions(np.array([[0, 7], [8, 63]]), 64)
    assert packed.tolist() == [0b10000001, 1, 0, 0, 0, 0, 0, 0b10000000]
    rows = np.stack([packed, np.zeros(8, np.uint8)])
    assert has_positions(rows, np.array([0, 63])).tolist() == [True, False]
    assert bool(has_positions(packed, np.array([1]))) is False


# ---- codec -----------------------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.binary(min_size=n, max_size=n)))
def test_codec_round_trip(payload: bytes) -> None:
    m = 8 * len(payload)
    blob = encode_bits(payload, m)
    assert len(blob) == len(payload) + codec.OVERHEAD
    assert decode_bits(blob, m).tobytes() == payload
    assert decode_bits(bytearray(blob)).tobytes() == payload
    arr = np.frombuffer(payload, dtype=np.uint8)
    assert encode_bits(arr, m) == blob
    assert encode_bits(np.unpackbits(arr, bitorder="little").astype(bool), m) == blob


def test_codec_layout_is_the_documented_one() -> None:
    blob = encode_bits(b"\x01\x80", 16)
    head = struct.pack("<4sHII", b"CSK1", 1, 16, 2) + b"\x01\x80"
    assert blob == head + struct.pack("<I", zlib.crc32(head))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 16).flatmap(lambda n: st.binary(min_size=n, max_size=n)), st.data())
def test_codec_detects_any_changed_byte(payload: bytes, data: st.DataObject) -> None:
    m = 8 * len(payload)
    blob = bytearray(encode_bits(payload, m))
    where = data.draw(st.integers(0, len(blob) - 1), label="position")
    blob[where] ^= data.draw(st.integers(1, 255), label="xor")
    with pytest.raises(CorruptSketchError) as info:
        decode_bits(bytes(blob), m)
    message = str(info.value)
    assert message.startswith("CEP-SKETCH-002: ")
    # A version field turned into the other known version announces the other length.
    expected = ("bad magic" if where < 4 else ("unknown format version", "length mismatch")
                if where < 6 else "length mismatch" if 10 <= where < 14 else "checksum mismatch")
    assert any(e in message for e in ((expected,) if isinstance(expected, str) else expected))


ROW = codec.binding("s0", node_id=5, pos_start=4, pos_end=5, ts_start=40, ts_end=50,
                    n_events=2, is_open=False)


def test_bound_layout_is_the_documented_one() -> None:
    blob = encode_bits(b"\x01\x80", 16, binding=ROW)
    head = struct.pack("<4sHII", b"CSK1", 2, 16, 2) + b"\x01\x80"
    crc = zlib.crc32(head)
    tag = zlib.crc32(ROW[:56], crc) ^ zlib.crc32(b"s0")
    assert blob == head + struct.pack("<II", crc, tag)
    assert len(blob) == 2 + codec.BOUND_OVERHEAD
    assert ROW == struct.pack("<7q", 5, 4, 5, 40, 50, 2, 0) + b"s0"
    assert codec.binding(None, node_id=0, pos_start=0, pos_end=0, ts_start=None, ts_end=None,
                         n_events=1, is_open=True) == struct.pack(
        "<7q", 0, 0, 0, codec.NULL_TS, codec.NULL_TS, 1, 1) + codec.NULL_STREAM


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 16).flatmap(lambda n: st.binary(min_size=n, max_size=n)), st.data())
def test_bound_blobs_detect_any_changed_byte_of_blob_or_row(payload: bytes,
                                                              data: st.DataObject) -> None:
    m = 8 * len(payload)
    blob = encode_bits(payload, m, binding=ROW)
    assert decode_bits(blob, m, binding=ROW).tobytes() == payload
    assert decode_bits(blob, m).tobytes() == payload  # bytes only, without the row
    row = bytearray(ROW)
    where = data.draw(st.integers(0, len(row) - 1), label="position")
    row[where] ^= data.draw(st.integers(1, 255), label="xor")
    with pytest.raises(CorruptSketchError, match="written for another row"):
        decode_bits(blob, m, binding=bytes(row))
    with pytest.raises(CorruptSketchError, match="written for another row"):
        decode_bits(blob, m, binding=ROW + b"1")  # stream 's01', not 's0'
    changed = bytearray(blob)
    where = data.draw(st.integers(0, len(changed) - 1), label="blob position")
    changed[where] ^= data.draw(st.integers(1, 255), label="blob xor")
    with pytest.raises(CorruptSketchError):
        decode_bits(bytes(changed), m, binding=ROW)


@pytest.mark.parametrize("blob, expected", [
    (b"", "truncated"),
    (b"CSK1" + b"\x00" * 10, "truncated"),
    (None, "expected the bytes"),
])
def test_codec_rejects_non_blobs(blob: object, expected: str) -> None:
    with pytest.raises(CorruptSketchError, match=expected):
        decode_bits(blob)  # type: ignore[arg-type]


def test_codec_rejects_truncated_and_padded_blobs() -> None:
    blob = encode_bits(b"\x00" * 4, 32)
    for bad in (blob[:-1], blob + b"\x00", blob[:-3]):
        with pytest.raises(CorruptSketchError, match="length mismatch"):
            decode_bits(bad)


def test_codec_inconsistent_m_with_a_valid_checksum() -> None:
    head = struct.pack("<4sHII", b"CSK1", 1, 24, 2) + b"\x00\x00"
    with pytest.raises(CorruptSketchError, match="inconsistent header"):
        decode_bits(head + struct.pack("<I", zlib.crc32(head)))


@pytest.mark.parametrize("bits, m, expected", [
    (b"\x00", 16, "expected 2 bytes"),
    (np.zeros(3, np.bool_), 8, "expected 8 booleans"),
    (np.zeros(1, np.int64), 8, "uint8 or bool"),
    (np.zeros((1, 1), np.uint8), 8, "1-d"),
    ([0], 8, "bytes or a numpy array"),
    (b"\x00", 7, "multiple of 8"),
    (b"\x00", True, "multiple of 8"),
])
def test_codec_encode_rejects_bad_input(bits: object, m: int, expected: str) -> None:
    with pytest.raises(SketchInputError, match=expected):
        encode_bits(bits, m)  # type: ignore[arg-type]
