"""pkgcat: the Package Catalogue API server, its storage and its command line."""

__version__ = "0.1.0"

__all__ = ["__version__"]
