"""Family ``cvrp``: the CVRP split of a giant tour, deterministic and over demand scenarios.

Everything that solves it lives here: ``family`` (the descriptor), ``instance`` (the model of an
instance and the CLI's flags), ``deterministic`` (Bellman, Vidal's O(n) and brute-force splits),
``sampling`` (Philox + Poisson tables, the NumPy reference stream), ``kernels_numpy`` /
``kernels_numba`` (the scenario kernels; the CUDA twin is ``solvopt.gpu.cvrp``),
``stochastic`` (the chunk protocol for scenarios), ``solvers`` (the registered methods) and
``saa`` (choosing a giant tour by SAA). The models are :mod:`solvopt.dsl.split`.
"""
