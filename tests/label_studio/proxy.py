"""A loopback TCP proxy that drops every connection once it has passed a number of task
listings: a real network failure midway through a pull, for the real server's tests."""

from __future__ import annotations

import socket
import threading


class CuttingProxy:
    """Forwards 127.0.0.1:port to ``target``; after ``cut_after`` requests for ``/api/tasks``
    it closes the connection instead of forwarding (until ``cut_after`` is set to None)."""

    def __init__(self, target_port: int, cut_after: int | None) -> None:
        self.target_port = target_port
        self.cut_after = cut_after
        self.listings = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._stop = True
        self._server.close()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        try:
            while data := src.recv(65536):
                if from_client and b"/api/tasks" in data.split(b"\r\n", 1)[0]:
                    with self._lock:
                        self.listings += 1
                        cut = self.cut_after is not None and self.listings > self.cut_after
                    if cut:
                        break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
