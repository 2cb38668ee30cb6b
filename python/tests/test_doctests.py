"""The docstrings' examples run and print what they say (doctest)."""

import doctest

import treclab


def test_docstring_examples():
    result = doctest.testmod(treclab)
    assert result.attempted >= 8
    assert result.failed == 0
