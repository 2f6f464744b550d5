"""Tools the project runs on itself (``make client-methods``); not part of the package."""
