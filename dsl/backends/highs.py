"""Moved: the HiGHS array handover is :mod:`solvopt.dsl.highs_export`, the HiGHS solver :mod:`solvopt.lp.highs`.

Kept only while ``solvopt/khc/node_lp.py`` and ``benchmarks/dsl_build.py`` import ``new_highs`` /
``load_standard_form`` from here; delete this module once they import ``solvopt.dsl.highs_export``.
"""
from ..highs_export import load_standard_form, new_highs  # noqa: F401

__all__ = ["load_standard_form", "new_highs"]
