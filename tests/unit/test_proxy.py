"""The tests' TCP proxy ends cleanly: nothing of one test is reported in another."""

from __future__ import annotations

import asyncio
import socket
import threading

from tests.proxy import Proxy


def test_a_proxy_stopped_while_it_holds_a_connection_leaves_no_task_pending() -> None:
    """A task left pending on the proxy's closed loop is logged as an error by asyncio when
    it is collected, in whichever test runs then (it failed a test of sales.json once)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    waiting = threading.Thread(target=lambda: accepted.append(listener.accept()[0]))
    waiting.start()
    proxy = Proxy("127.0.0.1", listener.getsockname()[1])
    proxy.start()
    client = socket.create_connection(("127.0.0.1", proxy.port))
    try:
        client.sendall(b"ping")
        waiting.join(5)
        assert accepted, "the proxy never connected to its target"
        assert accepted[0].recv(4) == b"ping"
        proxy.stall()
        client.sendall(b"held")  # a pipe now waits for the proxy to flow again
        proxy.stop()
        assert [task for task in asyncio.all_tasks(proxy._loop) if not task.done()] == []
    finally:
        client.close()
        for end in accepted:
            end.close()
        listener.close()
