"""Storage behind interfaces: the catalogue store, the usage counter and the rate limiter."""
