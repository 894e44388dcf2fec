"""HeadTail: bounded output, the start and end kept, the cut said."""

from __future__ import annotations

import re

from plane.tools.capture import HeadTail


def test_output_under_the_cap_is_kept_whole_whatever_the_chunking():
    captured = HeadTail(100)
    for byte in b"hello\nworld\n":
        captured.write(bytes([byte]))
    assert captured.text() == "hello\nworld\n"
    assert not captured.cut


def test_output_at_exactly_the_cap_is_not_cut():
    captured = HeadTail(10)
    captured.write(b"0123456789")
    assert captured.text() == "0123456789"


def test_long_output_keeps_head_and_tail_on_line_boundaries_and_counts_the_cut():
    lines = [f"line {n:05d}\n".encode() for n in range(10_000)]  # 11 bytes each
    captured = HeadTail(1000)
    for chunk in range(0, len(lines), 7):  # uneven chunks, as pipes deliver
        captured.write(b"".join(lines[chunk : chunk + 7]))
    text = captured.text()
    head, marker, tail = re.split(r"(\[… .* cut from the middle …\]\n)", text)
    assert head == "".join(line.decode() for line in lines[:45])
    assert tail == "".join(line.decode() for line in lines[-45:])
    cut_bytes = 110_000 - len(head) - len(tail)
    assert marker == f"[… {cut_bytes:,} bytes (9,910 lines) cut from the middle …]\n"
    assert len(text) < 1100


def test_memory_stays_bounded_while_streaming():
    captured = HeadTail(1000)
    for _ in range(2000):
        captured.write(b"x" * 4096)
    assert len(captured.head) + len(captured.tail) == 1000
    assert captured.total == 2000 * 4096


def test_a_cut_without_newlines_still_says_how_much():
    captured = HeadTail(100)
    captured.write(b"a" * 1000)
    text = captured.text()
    assert text.startswith("a" * 50 + "\n[… 900 bytes (0 lines) cut")
    assert text.endswith("…]\n" + "a" * 50)


def test_a_multibyte_character_split_by_the_cut_does_not_break_decoding():
    captured = HeadTail(11)
    captured.write("é".encode() * 100)
    text = captured.text()  # must not raise
    assert text.startswith("éé")
    assert text.endswith("ééé")
    assert "cut from the middle" in text
