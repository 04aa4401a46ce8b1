"""Shared pieces of the server-guard tests: raw HTTP on a socket, and a process's resident memory.

A client library always sends a body that matches its Content-Length; an attacker need not. These
send a declared body that never comes, or a chunked body with no length at all, and read the reply.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHUNK = 64 * 1024


@dataclass
class RawReply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def raw_post(url: str, headers: dict[str, str], body: Iterable[bytes] = (), timeout_s: float = 60.0) -> RawReply:
    """POST to `url` with exactly these headers (plus Host) and body bytes; the reply, however early it came."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    head = f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout_s) as sock:
        try:
            sock.sendall(head.encode())
            for piece in body:
                sock.sendall(piece)
        except OSError:
            pass  # the server answered and closed before taking everything: read what it said
        return _read_reply(sock)


def chunked(total: int, byte: bytes = b" ") -> Iterator[bytes]:
    """`total` body bytes in chunked transfer encoding, without the closing chunk (the sender never finishes)."""
    sent = 0
    while sent < total:
        size = min(CHUNK, total - sent)
        yield b"%x\r\n" % size + byte * size + b"\r\n"
        sent += size


def _read_reply(sock: socket.socket) -> RawReply:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(CHUNK)
        if not piece:
            raise ConnectionError(f"the server closed the connection before replying: {data!r}")
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        piece = sock.recv(CHUNK)
        if not piece:
            break
        body += piece
    return RawReply(int(status_line.split()[1]), headers, body[:length])


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")
