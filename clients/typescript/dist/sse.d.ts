/**
 * A parser of text/event-stream, as the HTML standard defines it: fields
 * id, event and data, comments, events ended by a blank line. It is the
 * package's only parser of the stream, so that the package depends on
 * nothing.
 */
export interface Message {
    /** The event's name; "" for none (the default, "message"). */
    event: string;
    /** Its data, the data lines joined by "\n"; undefined when it had none. */
    data?: string;
    /** The id the event set, if any (the stream's last event id from then on). */
    id?: string;
}
export declare class SSEParser {
    private buf;
    private event;
    private data;
    private id;
    private skipLF;
    /** push feeds text and returns the messages it completed. */
    push(text: string): Message[];
    private line;
}
