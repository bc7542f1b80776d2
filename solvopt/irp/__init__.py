"""Family ``irp``: inventory reinsertion under an order-up-to policy (Archetti IRP instances)."""
