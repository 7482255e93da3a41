"""Strided matrices onto gemmtune's layouts (what gemmtune.torch does with tensor strides)."""

from __future__ import annotations

from gemmtune._layout import Plan, operand, plan


def test_row_major_and_transposed_views():
    assert operand(4, 3, (3, 1)) == ("n", 3)      # contiguous 4x3
    assert operand(4, 3, (8, 1)) == ("n", 8)      # rows of a wider tensor
    assert operand(4, 3, (1, 4)) == ("t", 4)      # the transpose of a contiguous 3x4
    assert operand(4, 3, (1, 6)) == ("t", 6)
    assert isinstance(operand(4, 3, (2, 2)), str)  # neither
    assert isinstance(operand(4, 3, (0, 1)), str)  # broadcast rows
    assert isinstance(operand(4, 3, (3, 2)), str)  # every other column


def test_sizes_of_one_take_any_stride():
    assert operand(1, 5, (999, 1)) == ("n", 5)
    assert operand(5, 1, (1, 999)) == ("n", 1)
    assert operand(1, 1, (7, 7)) == ("n", 1)


def test_the_four_layouts():
    m, n, k = 6, 5, 4
    a_n, a_t = ((m, k), (k, 1)), ((m, k), (1, m))
    b_n, b_t = ((k, n), (n, 1)), ((k, n), (1, k))
    assert plan(*a_n, *b_n) == Plan(m, n, k, "nn", k, n, n)
    assert plan(*a_n, *b_t) == Plan(m, n, k, "nt", k, k, n)
    assert plan(*a_t, *b_n) == Plan(m, n, k, "tn", m, n, n)
    assert plan(*a_t, *b_t) == Plan(m, n, k, "tt", m, k, n)


def test_out_must_be_row_major_and_of_the_products_shape():
    a, b = ((6, 4), (4, 1)), ((4, 5), (5, 1))
    assert plan(*a, *b, (6, 5), (8, 1)) == Plan(6, 5, 4, "nn", 4, 5, 8)
    assert "not those of a row-major" in plan(*a, *b, (6, 5), (1, 6))
    assert plan(*a, *b, (5, 6), (6, 1)) == "out is 5x6, the product is 6x5"


def test_what_cannot_be_run_says_why():
    assert plan((2, 3, 4), (12, 4, 1), (4, 5), (5, 1)) == "gemmtune multiplies 2-D matrices, not 3-D by 2-D"
    assert plan((6, 4), (4, 1), (3, 5), (5, 1)) == "A is 6x4 and B is 3x5: their inner sizes differ"
    assert plan((0, 4), (4, 1), (4, 5), (5, 1)) == "an empty product (0x5x4)"
    assert plan((6, 4), (2, 2), (4, 5), (5, 1)).startswith("A: strides (2, 2)")
