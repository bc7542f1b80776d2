"""W_p optimal transport: a proven constant-factor approximation on a sparse graph, and exact references."""
