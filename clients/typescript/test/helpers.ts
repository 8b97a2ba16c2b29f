// Test helpers: a real `rota serve` on a loopback port, on a SQLite file
// of its own or on the PostgreSQL database ROTA_TEST_POSTGRES names.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { Client } from "../src/index.js";

export const pkgDir = resolve(fileURLToPath(new URL(".", import.meta.url)), "..", "..");
export const repoDir = resolve(pkgDir, "..", "..");
/** The rota binary: ROTA_BIN, or build/rota (npm test builds it). */
export const rotaBin = process.env.ROTA_BIN ?? join(pkgDir, "build", "rota");

/** The stores to run on: SQLite, and PostgreSQL when ROTA_TEST_POSTGRES is set. */
export function stores(): Array<"sqlite" | "postgres"> {
  if (process.env.ROTA_TEST_POSTGRES) return ["sqlite", "postgres"];
  if (process.env.ROTA_REQUIRE_POSTGRES) throw new Error("ROTA_REQUIRE_POSTGRES is set but ROTA_TEST_POSTGRES is not");
  return ["sqlite"];
}

/** uniq is a job type (or name) no other test uses, so that tests sharing a database do not meet. */
export function uniq(prefix: string): string {
  return `${prefix}.${randomBytes(4).toString("hex")}`;
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
    s.on("error", rej);
  });
}

export interface ServerOptions {
  store?: "sqlite" | "postgres";
  token?: string;
  tls?: { cert: string; key: string; ca: string };
  dir?: string;
  port?: number;
  /** More flags of rota serve. */
  args?: string[];
}

/** RotaServer is a `rota serve` process the test started. */
export class RotaServer {
  proc?: ChildProcess;
  log = "";
  readonly url: string;
  constructor(
    readonly opts: ServerOptions & { dir: string; port: number },
  ) {
    this.url = `${opts.tls ? "https" : "http"}://127.0.0.1:${opts.port}`;
  }

  static async start(opts: ServerOptions = {}): Promise<RotaServer> {
    const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "rota-ts-"));
    const s = new RotaServer({ ...opts, dir, port: opts.port ?? (await freePort()) });
    await s.restart();
    return s;
  }

  /** restart starts the process (again), on the same store and port. */
  async restart(): Promise<void> {
    const o = this.opts;
    const store = o.store === "postgres" ? process.env.ROTA_TEST_POSTGRES! : join(o.dir, "rota.db");
    const args = ["serve", "--store", store, "--http", `127.0.0.1:${o.port}`, "--ui=false", "--log-level", "warn"];
    if (o.token) args.push("--auth-token", o.token);
    if (o.args) args.push(...o.args);
    if (o.tls) args.push("--tls-cert", o.tls.cert, "--tls-key", o.tls.key);
    const p = spawn(rotaBin, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.proc = p;
    p.stdout!.on("data", (d) => (this.log += d));
    p.stderr!.on("data", (d) => (this.log += d));
    const c = this.client();
    for (let i = 0; ; i++) {
      if (p.exitCode !== null) throw new Error(`rota serve exited ${p.exitCode}: ${this.log}`);
      try {
        await c.stats();
        break;
      } catch (err) {
        if (i > 300) throw new Error(`rota serve did not answer: ${(err as Error).message}\n${this.log}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    c.close();
  }

  client(opts: { token?: string } = {}): Client {
    return new Client({ url: this.url, token: opts.token ?? this.opts.token, ca: this.opts.tls?.ca });
  }

  /** stop ends the process (SIGTERM, or SIGKILL) and waits for it. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill(signal);
    await exited;
  }

  async close(): Promise<void> {
    await this.stop();
    if (!this.opts.dir.startsWith(tmpdir())) return;
    rmSync(this.opts.dir, { recursive: true, force: true });
  }
}

/** rota runs the CLI against a server. */
export async function rota(server: RotaServer, token: string | undefined, ...args: string[]): Promise<string> {
  const all = ["--server", server.url, ...(token ? ["--token", token] : []), ...args];
  const { stdout } = await promisify(execFile)(rotaBin, all);
  return stdout;
}

/** until polls fn until it answers truthy, or fails after ms. */
export async function until<T>(what: string, fn: () => Promise<T> | T, ms = 10000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** makeCA writes a private CA and a certificate for 127.0.0.1 it signed, with openssl. */
export async function makeCA(dir: string): Promise<{ ca: string; cert: string; key: string; caPEM: string }> {
  const run = promisify(execFile);
  const f = (n: string) => join(dir, n);
  await run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
    "-subj", "/CN=rota test CA", "-keyout", f("ca.key"), "-out", f("ca.pem")]);
  await run("openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
    "-subj", "/CN=127.0.0.1", "-keyout", f("server.key"), "-out", f("server.csr")]);
  writeFileSync(f("ext.cnf"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  await run("openssl", ["x509", "-req", "-in", f("server.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"),
    "-CAcreateserial", "-days", "1", "-extfile", f("ext.cnf"), "-out", f("server.pem")]);
  const { readFileSync } = await import("node:fs");
  return { ca: f("ca.pem"), cert: f("server.pem"), key: f("server.key"), caPEM: readFileSync(f("ca.pem"), "utf8") };
}

/**
 * Proxy is a TCP proxy to a server that a test can cut: cut() ends every
 * connection through it and refuses new ones until resume().
 */
export class Proxy {
  private server?: Server;
  private socks = new Set<Socket>();
  port = 0;
  constructor(private readonly target: number) {}
  async start(port = 0): Promise<void> {
    this.server = createServer((s) => {
      const up = connect(this.target, "127.0.0.1");
      this.socks.add(s).add(up);
      s.pipe(up).pipe(s);
      const end = () => {
        s.destroy();
        up.destroy();
        this.socks.delete(s);
        this.socks.delete(up);
      };
      s.on("error", end).on("close", end);
      up.on("error", end).on("close", end);
    });
    await new Promise<void>((r) => this.server!.listen(port, "127.0.0.1", r));
    this.port = (this.server.address() as { port: number }).port;
  }
  async cut(): Promise<void> {
    for (const s of this.socks) s.destroy();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
  async resume(): Promise<void> {
    await this.start(this.port);
  }
  async close(): Promise<void> {
    for (const s of this.socks) s.destroy();
    this.server?.close();
  }
}

export { existsSync };
