"""The Python worker of drain.py: no-op handlers for one job type, until
SIGTERM. python3 pyworker.py URL TYPE CONCURRENCY [threads|asyncio]"""

import asyncio
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rota  # noqa: E402

logging.basicConfig(level=logging.ERROR)
url, typ, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "threads"

if mode == "threads":
    worker = rota.Worker(rota.Client(url), concurrency=concurrency)
    worker.handle(typ)(lambda job: None)
    worker.run()
else:
    async def main():
        worker = rota.AsyncWorker(rota.AsyncClient(url), concurrency=concurrency)

        @worker.handle(typ)
        async def noop(job):
            return None

        await worker.run()

    asyncio.run(main())
