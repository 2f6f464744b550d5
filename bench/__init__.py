"""The benchmarks: run from the project root as modules (`python -m bench.run`), so they share tests/servers.py with the tests."""
