"""Family ``cvrp``: the CVRP split of a giant tour, deterministic and over demand scenarios."""
