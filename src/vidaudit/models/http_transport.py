"""An httpx2 transport that stops reading a response body past a byte cap (see ``http_base``).

Imported only by adapters whose SDK brings httpx2 (openai, anthropic, google-genai all do).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx2


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


class CappedTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport; a body announced or grown over ``limit`` bytes raises ``too_large(detail)``."""

    def __init__(self, limit: int, too_large: Callable[[str], Exception],
                 inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.limit = limit
        self.too_large = too_large
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        announced = response.headers.get("content-length", "")
        if announced.strip().isdecimal() and int(announced) > self.limit:
            await response.aclose()
            raise self.too_large(f"Content-Length {int(announced):,}; not read")
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _CappedStream(stream, self.limit, self.too_large)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
