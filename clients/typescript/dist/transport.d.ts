import type { IncomingMessage } from "node:http";
import { RotaError } from "./errors.js";
/**
 * Transport sends the client's requests with Node's http and https
 * modules, over keep-alive connections. Not fetch: Node's fetch trusts
 * only its built-in roots (and NODE_EXTRA_CA_CERTS, read once at start,
 * for the whole process); a private CA for one client needs an undici
 * Agent, which Node does not expose without the undici package. https
 * takes the CA per agent, so a Client's `ca` reaches its requests only,
 * and the package depends on nothing.
 */
export declare class Transport {
    readonly base: URL;
    private readonly token?;
    private readonly agent;
    private readonly mod;
    constructor(url: string, opts: {
        token?: string;
        ca?: string | Buffer | Array<string | Buffer>;
    });
    /** close ends the idle keep-alive connections. */
    close(): void;
    url(path: string, query?: URLSearchParams): string;
    /**
     * open sends a request and answers its response, unread, whatever its
     * status. A request that gets no answer fails with ConnectionError (or
     * the signal's reason, when the signal ended it).
     */
    open(method: string, path: string, opts?: {
        query?: URLSearchParams;
        body?: string;
        signal?: AbortSignal;
        headers?: Record<string, string>;
    }): Promise<IncomingMessage>;
    /**
     * call sends a request and answers its JSON body (undefined for an
     * empty one); an error answer throws the RotaError of its code.
     */
    call<T>(method: string, path: string, opts?: {
        query?: URLSearchParams;
        body?: unknown;
        signal?: AbortSignal;
    }): Promise<T>;
}
/** answerError turns an error answer into its RotaError. */
export declare function answerError(method: string, path: string, status: number, text: string, retryAfter?: string | string[]): RotaError;
export declare function readAll(res: IncomingMessage): Promise<string>;
/** sleep waits ms, or until signal ends (then it resolves early). */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<void>;
