"""A small TCP proxy for cutting a real server's connections on cue (tests only).

Put between a client and a server (the state PostgreSQL): it forwards both ways until told to
cut. A cut closes every live connection at once and turns new ones away (accepted and closed
at once, as a server going down does) for a while. ``cut_at_packet(n, seconds)`` cuts when the
n-th chunk a client sends from now arrives, which is dropped: the statement it carried never
reaches the server, so the cut lands in the middle of whatever the client was doing.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import suppress


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        self._live: set[socket.socket] = set()
        self._away_until = 0.0
        self._cut_in: int | None = None  # client chunks until an armed cut
        self._cut_for = 0.0
        self.cuts = 0  # cuts made so far
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str) -> str:
        """``url`` (postgresql+psycopg://user@host:port/db) pointed at the proxy."""
        head, _, tail = url.partition("@")
        _, _, db = tail.partition("/")
        return f"{head}@127.0.0.1:{self.port}/{db}"

    # --- cues -------------------------------------------------------------------------

    def cut(self, seconds: float) -> None:
        """Close every live connection now and turn new ones away for ``seconds``."""
        with self._lock:
            self._cut_locked(seconds)

    def cut_at_packet(self, n: int, seconds: float) -> None:
        """Cut (see :meth:`cut`) when the ``n``-th chunk a client sends from now arrives (dropped)."""
        with self._lock:
            self._cut_in, self._cut_for = n, seconds

    def heal(self) -> None:
        """Take connections again at once."""
        with self._lock:
            self._away_until = 0.0

    def close(self) -> None:
        self._closed = True
        with self._lock:
            self._cut_locked(0)
        with suppress(OSError):
            self.listener.close()

    # --- the forwarding -----------------------------------------------------------------

    def _cut_locked(self, seconds: float) -> None:
        self._away_until = time.monotonic() + seconds
        self.cuts += 1
        for sock in list(self._live):
            _drop(sock)
        self._live.clear()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                away = time.monotonic() < self._away_until
            if away:
                _drop(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                _drop(client)
                continue
            with self._lock:
                self._live.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                if from_client:
                    with self._lock:
                        if self._cut_in is not None:
                            self._cut_in -= 1
                            if self._cut_in <= 0:
                                self._cut_in = None
                                self._cut_locked(self._cut_for)
                                return
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                self._live.discard(src)
                self._live.discard(dst)
            _drop(src)
            _drop(dst)


def _drop(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()
