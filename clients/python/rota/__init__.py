"""rota's Python client: producers and workers of a rota server.

    import rota
    client = rota.Client("http://127.0.0.1:7700")
    job = client.add("email.send", {"to": "ann@example.com"})

See README.md for workers, the asyncio forms and errors."""

from ._base import Model, RotaError, format_duration, format_time, parse_duration, parse_time
from ._http import RotaConnectionError
from ._models import *  # noqa: F401,F403 (the error classes and models)
from ._models import ERROR_CLASSES, ROUTES
from ._sse import StreamReset
from .client import Client
from .worker import Cancel, LeasedJob, Permanent, Snooze, Worker

from .aio import AsyncClient, AsyncLeasedJob, AsyncWorker

__version__ = "0.1.0"
