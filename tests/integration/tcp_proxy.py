"""A TCP proxy on loopback, run in its own thread, that can be cut and healed (partitions)."""

from __future__ import annotations

import asyncio
import contextlib
import threading


class TcpProxy:
    def __init__(self, target_port: int) -> None:  # may be set later, before a client connects
        self.target_port = target_port
        self.port = 0
        self.blocked = False
        self._loop = asyncio.new_event_loop()
        self._writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._on_client, "127.0.0.1", 0)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                if self.blocked:
                    break
                w.write(data)
                await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()

    async def _on_client(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        if self.blocked:
            cw.close()
            return
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            cw.close()
            return
        self._writers.update((cw, uw))
        await asyncio.gather(self._pipe(cr, uw), self._pipe(ur, cw))
        self._writers.difference_update((cw, uw))

    def _close_all(self) -> None:
        for w in list(self._writers):
            w.close()

    def cut(self) -> None:
        self.blocked = True
        self._loop.call_soon_threadsafe(self._close_all)

    def heal(self) -> None:
        self.blocked = False

    def close(self) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        with contextlib.suppress(RuntimeError):
            self._thread.join(5)
