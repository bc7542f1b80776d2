"""Pseudo-games (static and Markov), their equilibria, and exchange economies built on them."""
