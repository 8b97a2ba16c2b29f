import * as http from "node:http";
import * as https from "node:https";
import type { IncomingMessage } from "node:http";
import { ConnectionError, RotaError, UnavailableError, errorOf } from "./errors.js";

/**
 * Transport sends the client's requests with Node's http and https
 * modules, over keep-alive connections. Not fetch: Node's fetch trusts
 * only its built-in roots (and NODE_EXTRA_CA_CERTS, read once at start,
 * for the whole process); a private CA for one client needs an undici
 * Agent, which Node does not expose without the undici package. https
 * takes the CA per agent, so a Client's `ca` reaches its requests only,
 * and the package depends on nothing.
 */
export class Transport {
  readonly base: URL;
  private readonly token?: string;
  private readonly agent: http.Agent;
  private readonly mod: typeof http | typeof https;

  constructor(url: string, opts: { token?: string; ca?: string | Buffer | Array<string | Buffer> }) {
    let u: URL;
    try {
      u = new URL(url.replace(/\/+$/, ""));
    } catch {
      throw new TypeError(`rota: server address ${JSON.stringify(url)}: want http://host:port or https://host:port`);
    }
    if ((u.protocol !== "http:" && u.protocol !== "https:") || !u.host) {
      throw new TypeError(`rota: server address ${JSON.stringify(url)}: want http://host:port or https://host:port`);
    }
    if (opts.ca && u.protocol !== "https:") {
      throw new TypeError(`rota: a ca is for https:// servers; ${JSON.stringify(url)} is not one`);
    }
    this.base = u;
    this.token = opts.token || undefined;
    const agentOpts = { keepAlive: true, maxSockets: 64, maxFreeSockets: 64 };
    if (u.protocol === "https:") {
      this.mod = https;
      this.agent = new https.Agent({ ...agentOpts, ...(opts.ca ? { ca: opts.ca } : {}) });
    } else {
      this.mod = http;
      this.agent = new http.Agent(agentOpts);
    }
  }

  /** close ends the idle keep-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  url(path: string, query?: URLSearchParams): string {
    const q = query && [...query.keys()].length > 0 ? "?" + query.toString() : "";
    return this.base.origin + this.base.pathname.replace(/\/$/, "") + path + q;
  }

  /**
   * open sends a request and answers its response, unread, whatever its
   * status. A request that gets no answer fails with ConnectionError (or
   * the signal's reason, when the signal ended it).
   */
  open(
    method: string,
    path: string,
    opts: { query?: URLSearchParams; body?: string; signal?: AbortSignal; headers?: Record<string, string> } = {},
  ): Promise<IncomingMessage> {
    const headers: Record<string, string> = { Accept: "application/json", ...opts.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let payload: Buffer | undefined;
    if (opts.body !== undefined) {
      payload = Buffer.from(opts.body, "utf8");
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = String(payload.length);
    }
    const target = this.url(path, opts.query);
    return new Promise((resolve, reject) => {
      const signal = opts.signal;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const req = this.mod.request(target, { method, headers, agent: this.agent });
      const onAbort = () => req.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
      signal?.addEventListener("abort", onAbort, { once: true });
      req.on("response", (res) => {
        res.once("close", () => signal?.removeEventListener("abort", onAbort));
        resolve(res);
      });
      req.on("error", (err) => {
        signal?.removeEventListener("abort", onAbort);
        if (signal?.aborted) reject(signal.reason);
        else reject(new ConnectionError(`rota: ${method} ${path}: no answer from ${this.base.origin}: ${err.message}`, { cause: err }));
      });
      req.end(payload);
    });
  }

  /**
   * call sends a request and answers its JSON body (undefined for an
   * empty one); an error answer throws the RotaError of its code.
   */
  async call<T>(
    method: string,
    path: string,
    opts: { query?: URLSearchParams; body?: unknown; signal?: AbortSignal } = {},
  ): Promise<T> {
    const res = await this.open(method, path, {
      query: opts.query,
      signal: opts.signal,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    let text: string;
    try {
      text = await readAll(res);
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw new ConnectionError(`rota: ${method} ${path}: the answer broke off: ${(err as Error).message}`, { cause: err });
    }
    const status = res.statusCode ?? 0;
    if (status >= 300) throw answerError(method, path, status, text, res.headers["retry-after"]);
    if (text.length === 0) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new RotaError(`rota: ${method} ${path}: the answer is not JSON: ${text.slice(0, 200)}`, "internal", status, { cause: err });
    }
  }
}

/** answerError turns an error answer into its RotaError. */
export function answerError(method: string, path: string, status: number, text: string, retryAfter?: string | string[]): RotaError {
  let err: RotaError;
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (!body.error?.code) throw new Error("no code");
    err = errorOf(body.error.code, body.error.message ?? "", status);
  } catch {
    err = new RotaError(`rota: ${method} ${path}: HTTP ${status}: ${text.trim().slice(0, 500)}`, status >= 500 ? "internal" : "unknown", status);
  }
  if (err instanceof UnavailableError && typeof retryAfter === "string") {
    const secs = Number.parseInt(retryAfter, 10);
    if (secs > 0) err.retryAfterMs = secs * 1000;
  }
  return err;
}

export function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => resolve(chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
    res.on("aborted", () => reject(new Error("connection closed")));
  });
}

/** sleep waits ms, or until signal ends (then it resolves early). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
