"""An httpx2 transport that stops reading a response body past a byte cap (see ``http_base``).

The cap counts the bytes the SDK will hold, that is the *decoded* body: a gzip body of 300 KB can inflate
to 300 MB, and httpx would inflate it above a transport that counted what came over the wire. So every
request asks for ``Accept-Encoding: identity`` (the SDK's own ``gzip, deflate`` is replaced), and a server
that compresses anyway has its body decoded here, in pieces of at most ``PIECE`` bytes, each counted
before the next is made; the response handed up then says no ``Content-Encoding``, so nothing above
inflates it again. Codings decoded here: ``gzip`` (``x-gzip``) and ``deflate`` (zlib-wrapped or raw), up
to ``MAX_CODINGS`` stacked; a body in any other coding (``br``, ``zstd``, ``compress``, unknown) is not read
at all (``refused``), since its decoded size could not be counted.

Imported only by adapters whose SDK brings httpx2 (openai, anthropic, google-genai all do).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Callable, Iterator

import httpx2

#: the most bytes one decoding step makes at a time (what the cap can overshoot by before it is checked)
PIECE = 1 << 20
#: stacked codings decoded (``gzip, gzip``); more is refused (httpx itself stops at 5)
MAX_CODINGS = 3
_GZIP, _DEFLATE = ("gzip", "x-gzip"), ("deflate",)


class _Inflate:
    """One gzip or deflate layer, decoded in pieces of at most ``PIECE`` bytes."""

    def __init__(self, coding: str) -> None:
        self.gzip = coding in _GZIP
        self.first = True
        self.d = zlib.decompressobj(zlib.MAX_WBITS | 16 if self.gzip else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> Iterator[bytes]:
        first, self.first = self.first, False
        try:
            out = self.d.decompress(data, PIECE)
        except zlib.error as e:
            if self.gzip or not first:
                raise httpx2.DecodingError(str(e)) from e
            self.d = zlib.decompressobj(-zlib.MAX_WBITS)  # 'deflate' sent raw, as some servers do (httpx does the same)
            out = self.d.decompress(data, PIECE)
        try:
            while out:
                yield out
                out = self.d.decompress(self.d.unconsumed_tail, PIECE)
        except zlib.error as e:
            raise httpx2.DecodingError(str(e)) from e

    def flush(self) -> Iterator[bytes]:
        try:
            tail = self.d.flush()
        except zlib.error as e:
            raise httpx2.DecodingError(str(e)) from e
        if tail:
            yield tail


def _pipe(layer: _Inflate, upstream: Iterator[bytes]) -> Iterator[bytes]:
    for piece in upstream:
        yield from layer.decode(piece)


class _DecodedStream(httpx2.AsyncByteStream):
    """The body's bytes with its codings undone (the last applied first), piece by piece."""

    def __init__(self, inner: httpx2.AsyncByteStream, codings: list[str]) -> None:
        self.inner = inner
        self.layers = [_Inflate(c) for c in reversed(codings)]

    def _through(self, data: bytes, start: int = 0) -> Iterator[bytes]:
        pieces: Iterator[bytes] = iter((data,))
        for layer in self.layers[start:]:
            pieces = _pipe(layer, pieces)
        return pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            for piece in self._through(chunk):
                yield piece
        for n, layer in enumerate(self.layers):
            for tail in layer.flush():
                for piece in self._through(tail, n + 1):
                    yield piece

    async def aclose(self) -> None:
        await self.inner.aclose()


class _CappedStream(httpx2.AsyncByteStream):
    """The body's bytes as they arrive, until more than ``limit`` have come: then ``too_large`` is raised."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, too_large: Callable[[str], Exception]) -> None:
        self.inner = inner
        self.limit = limit
        self.too_large = too_large

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self.inner:
            total += len(chunk)
            if total > self.limit:
                await self.inner.aclose()
                # no byte count in the message: the same cause reads the same for every trial it hits
                raise self.too_large("it grew past the cap while being read")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def _codings(headers: httpx2.Headers) -> list[str]:
    """The body's content codings in the order applied, ``identity`` left out."""
    values = [v.strip().lower() for v in headers.get_list("content-encoding", split_commas=True)]
    return [v for v in values if v and v != "identity"]


class CappedTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport; a body announced or grown (decoded) over ``limit`` bytes raises ``too_large(detail)``,
    one in a coding that cannot be counted raises ``refused(detail)`` unread."""

    def __init__(
        self,
        limit: int,
        too_large: Callable[[str], Exception],
        inner: httpx2.AsyncBaseTransport | None = None,
        refused: Callable[[str], Exception] | None = None,
    ) -> None:
        self.limit = limit
        self.too_large = too_large
        self.refused = refused or too_large
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self.inner.handle_async_request(request)
        announced = response.headers.get("content-length", "")
        if announced.strip().isdecimal() and int(announced) > self.limit:
            await response.aclose()
            raise self.too_large(f"Content-Length {int(announced):,}; not read")
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        codings = _codings(response.headers)
        if codings:
            if len(codings) > MAX_CODINGS or any(c not in _GZIP + _DEFLATE for c in codings):
                await response.aclose()
                raise self.refused(
                    f"Content-Encoding {', '.join(codings)[:80]!r} although identity was asked "
                    "for; its decoded size cannot be counted, so it was not read"
                )
            stream = _DecodedStream(stream, codings)
            for name in ("content-encoding", "content-length"):  # what is handed up is the decoded body
                if name in response.headers:
                    del response.headers[name]
        response.stream = _CappedStream(stream, self.limit, self.too_large)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
