"""Put on PYTHONPATH of a server a test starts: every connection or name lookup of that process that would leave the
machine is refused, and written to the file $MEDPROBE_NETWORK_LOG (one line each), which the test reads.

Python imports `sitecustomize` at start from the path; only connections through Python's socket module are seen (the
app's: httpx, huggingface_hub, gradio's analytics), which is what a Space's app sends.
"""

from __future__ import annotations

import os
import socket

LOG = os.environ["MEDPROBE_NETWORK_LOG"]
LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "", None}


def local(host: object) -> bool:
    return host in LOCAL_NAMES or str(host).startswith("127.")


def refuse(what: str) -> None:
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(what + "\n")


class GuardedSocket(socket.socket):
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not local(address[0]):
            refuse(f"connect {address[0]}:{address[1]}")
            raise ConnectionRefusedError(f"the test refuses connections that leave the machine ({address[0]})")
        return super().connect(address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not local(address[0]):
            refuse(f"connect {address[0]}:{address[1]}")
            return 111  # ECONNREFUSED
        return super().connect_ex(address)


_getaddrinfo = socket.getaddrinfo


def getaddrinfo(host, *args, **kwargs):
    if not local(host if not isinstance(host, bytes) else host.decode()):
        refuse(f"lookup {host}")
        raise socket.gaierror(socket.EAI_NONAME, f"the test refuses name lookups that leave the machine ({host})")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket = GuardedSocket
socket.getaddrinfo = getaddrinfo
