"""Family ``irp``: inventory reinsertion under an order-up-to policy (Archetti IRP instances).

- :mod:`solvopt.irp.family`: the descriptor (CLI parameters, ``from_instance``);
- :mod:`solvopt.irp.instance`: route options of one customer of an instance, ``model_from_instance``;
- :mod:`solvopt.irp.reinsertion`: the DP on the min-plus engine (compile with a memory
  estimate, decode the result);
- :mod:`solvopt.irp.solvers`: the registered methods (numpy, numba, cuda).
"""
