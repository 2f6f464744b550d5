"""Storage on Redis: what several workers and hosts must share, starting with the rate limit."""
