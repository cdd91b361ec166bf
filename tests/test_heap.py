"""Freed memory given back to the system after big builds (``nashzoo.games.heap``)."""

from __future__ import annotations

import platform
import sys

import pytest

from nashzoo.games import heap, load_game
from nashzoo.games import treemath as tm
from nashzoo.games.tree import _compile


def test_give_back_freed_memory_says_whether_it_could() -> None:
    expected = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert heap.give_back_freed_memory() is expected


def test_builds_give_their_freed_memory_back_from_a_size_on(monkeypatch: pytest.MonkeyPatch):
    """The compile, each seat's kernel index and NashConv's index trim the heap once built,
    when they are over at least ``TRIM_AFTER`` histories (the tree) or terminals (the
    indexes); smaller builds do not pay for a trim."""
    from nashzoo.games.treemath import _jit

    calls: list[int] = []
    monkeypatch.setattr(heap, "give_back_freed_memory", lambda: calls.append(1) or True)
    game = load_game("kuhn_poker")  # 58 histories, 30 terminals
    monkeypatch.setattr(heap, "TRIM_AFTER", 59)
    _compile(game)
    assert calls == []
    monkeypatch.setattr(heap, "TRIM_AFTER", 58)
    tree = _compile(game)
    assert calls == [1]
    if not _jit.ENABLED:
        return  # the numpy passes build no packed index
    monkeypatch.setattr(heap, "TRIM_AFTER", 30)
    sf = tm.sequence_form(tree)
    sf.kernel_arguments(0)
    sf.kernel_arguments(0)  # built once
    sf.kernel_arguments(1)
    assert sf.nash_conv_arguments is sf.nash_conv_arguments
    assert calls == [1, 1, 1, 1]
    monkeypatch.setattr(heap, "TRIM_AFTER", 59)
    fresh = tm.sequence_form(_compile(game))
    monkeypatch.setattr(heap, "TRIM_AFTER", 31)
    assert fresh is not sf
    fresh.kernel_arguments(0)
    assert fresh.nash_conv_arguments is fresh.nash_conv_arguments
    assert calls == [1, 1, 1, 1]
