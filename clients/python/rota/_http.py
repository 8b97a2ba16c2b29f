"""The blocking client's HTTP: http.client connections kept alive in a
small pool, so that threads (a worker's) share them without sharing one."""

import http.client
import socket
import ssl
import threading
from urllib.parse import urlsplit

from ._base import RotaError

USER_AGENT = "rota-python/0.1"


class RotaConnectionError(RotaError, ConnectionError):
    """The server could not be reached, or the connection broke before
    its answer (code None). A worker tries finishes and heartbeats again
    after it while their leases hold."""


def parse_url(url):
    u = urlsplit(url.rstrip("/"))
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError("server address %r: want http://host:port or https://host:port" % (url,))
    port = u.port or (443 if u.scheme == "https" else 80)
    return u.scheme, u.hostname, port, u.path


def ssl_context(ca):
    """An SSL context that trusts ca (a PEM file's path, PEM text, or an
    ssl.SSLContext used as is); None means the system's roots."""
    if isinstance(ca, ssl.SSLContext):
        return ca
    ctx = ssl.create_default_context()
    if ca is not None:
        if "-----BEGIN" in ca:
            ctx.load_verify_locations(cadata=ca)
        else:
            ctx.load_verify_locations(cafile=ca)
    return ctx


def base_headers(token):
    h = {"User-Agent": USER_AGENT}
    if token:
        h["Authorization"] = "Bearer " + token
    return h


# Errors of a kept-alive connection the server closed meanwhile: a request
# on it had not been read, so it is sent once more on a new connection.
_STALE = (http.client.RemoteDisconnected, http.client.BadStatusLine, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError)


class Transport:
    def __init__(self, url, token=None, ca=None, timeout=60.0, max_idle=16):
        self.scheme, self.host, self.port, self.prefix = parse_url(url)
        self.url = url
        self.timeout = timeout
        self.headers = base_headers(token)
        self.ssl = ssl_context(ca) if self.scheme == "https" else None
        self.max_idle = max_idle
        self._idle = []
        self._lock = threading.Lock()
        self._closed = False

    def connect(self, timeout):
        if self.ssl is not None:
            c = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.ssl)
        else:
            c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        c.connect()
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return c

    def _get(self, timeout):
        with self._lock:
            if self._closed:
                raise RotaError("the client is closed")
            if self._idle:
                c = self._idle.pop()
                c.sock.settimeout(timeout)
                return c, True
        try:
            return self.connect(timeout), False
        except (OSError, http.client.HTTPException) as e:
            raise RotaConnectionError("cannot reach the rota server at %s: %s" % (self.url, e)) from e

    def _put(self, c):
        with self._lock:
            if not self._closed and len(self._idle) < self.max_idle:
                self._idle.append(c)
                return
        c.close()

    def request(self, method, path, body=None, extra_wait=0.0):
        """Sends one request and returns (status, headers, body bytes)."""
        timeout = self.timeout + extra_wait
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            c, reused = self._get(timeout)
            try:
                c.request(method, self.prefix + path, body, headers)
                resp = c.getresponse()
                data = resp.read()
            except _STALE as e:
                c.close()
                if reused and attempt == 0:
                    continue
                raise RotaConnectionError("%s %s: the connection broke: %s" % (method, path, e)) from e
            except (OSError, http.client.HTTPException) as e:
                c.close()
                if isinstance(e, socket.timeout):
                    raise RotaConnectionError("%s %s: no answer in %.0fs" % (method, path, timeout)) from e
                raise RotaConnectionError("%s %s: %s" % (method, path, e)) from e
            if resp.will_close:
                c.close()
            else:
                self._put(c)
            return resp.status, resp.headers, data
        raise AssertionError("unreachable")

    def close(self):
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()
