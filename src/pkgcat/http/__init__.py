"""HTTP in: the ASGI application, its routes, authentication and error envelopes."""
