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

export class SSEParser {
  private buf = "";
  private event = "";
  private data: string[] | undefined;
  private id: string | undefined;
  private skipLF = false;

  /** push feeds text and returns the messages it completed. */
  push(text: string): Message[] {
    const out: Message[] = [];
    let s = this.buf + text;
    let start = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 10 && this.skipLF && i === start) {
        // The \n of a \r\n whose \r ended the previous line.
        start = i + 1;
        this.skipLF = false;
        continue;
      }
      this.skipLF = false;
      if (c === 10 || c === 13) {
        this.line(s.slice(start, i), out);
        if (c === 13) this.skipLF = true;
        start = i + 1;
      }
    }
    this.buf = s.slice(start);
    s = "";
    return out;
  }

  private line(line: string, out: Message[]): void {
    if (line === "") {
      if (this.data !== undefined || this.id !== undefined || this.event !== "") {
        out.push({ event: this.event, data: this.data?.join("\n"), id: this.id });
      }
      this.event = "";
      this.data = undefined;
      this.id = undefined;
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" a comment (keep-alive)
    const colon = line.indexOf(":");
    let field = line;
    let value = "";
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
    }
    switch (field) {
      case "event":
        this.event = value;
        break;
      case "data":
        (this.data ??= []).push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      // retry, and unknown fields, are ignored.
    }
  }
}
