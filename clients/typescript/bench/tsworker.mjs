// The TypeScript worker with a no-op handler until SIGTERM, for drain.mjs.
import { Client, Worker } from "../dist/index.js";

const [url, type, concurrency] = process.argv.slice(2);
const client = new Client({ url });
const worker = new Worker(client, { concurrency: Number(concurrency), logger: { info() {}, warn() {}, error: console.error } });
worker.handle(type, () => undefined);
await worker.run();
client.close();
