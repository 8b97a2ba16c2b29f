"""Server-Sent Events, read as the server writes them (httpapi/events.go)
and as the SSE standard says: the decoder is fed lines and gives messages."""

import json

from . import _models as m


class StreamReset:
    """Yielded by a subscription of types when the server could not replay
    what changed while the stream was away (too much, or the replay
    failed): read the jobs again (list) and go on."""

    def __init__(self, reason):
        self.reason = reason

    def __repr__(self):
        return "StreamReset(%r)" % (self.reason,)


class Decoder:
    """Feed it lines without their endings; each complete message comes
    back from feed as (event, id, data), with id the last id seen (which a
    reconnection sends back as Last-Event-ID). A message with only an id
    comes back as (None, id, None): it moves the id on."""

    def __init__(self):
        self.name = None
        self.data = []
        self.id = None
        self.id_only = False

    def feed(self, line):
        if line == "":
            out = None
            if self.data or self.name:
                out = (self.name or "message", self.id, "\n".join(self.data))
            elif self.id_only:
                out = (None, self.id, None)
            self.name, self.data, self.id_only = None, [], False
            return out
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self.name = value.strip()
        elif field == "data":
            self.data.append(value)
        elif field == "id":
            self.id = value
            self.id_only = True
        return None


def event_of(data, event_id):
    """A "job" event's data as an Event, with event_id (the SSE id) beside
    its fields."""
    ev = m.Event.from_json(json.loads(data))
    ev.event_id = event_id
    return ev


# What a message tells a subscriber besides an event to yield.
END = "end"  # the stream is over: the job has ended or is gone
RECONNECT = "reconnect"  # the server ended this connection: open another


def meaning(event, event_id, data):
    """What one message of the stream means, the same for the blocking
    and the asyncio client: an Event or a StreamReset to yield, END,
    RECONNECT, or None (nothing to do). A revoked token raises
    ForbiddenError: reconnecting would only be refused."""
    if event == "job":
        return event_of(data, event_id)
    if event == "end":
        return END
    if event == "reset":
        return StreamReset(json.loads(data).get("reason", ""))
    if event == "resume":
        return RECONNECT  # this client fell behind
    if event == "revoked":
        raise m.ForbiddenError("event stream: %s" % json.loads(data).get("reason", "the token was revoked"), 403)
    return None


def events_path(job=None, types=None, running=True, completed=True):
    from urllib.parse import urlencode

    q = []
    if job is not None and types is not None:
        raise ValueError("subscribe to one job or to types, not both")
    if job is not None:
        q.append(("job", str(job)))
    elif types is not None:
        if isinstance(types, str):
            types = [types]
        q += [("type", t) for t in types]
    if not running:
        q.append(("running", "false"))
    if not completed:
        q.append(("completed", "false"))
    allowed = m.ROUTES["events"][2]
    for k, _ in q:
        assert k in allowed, k
    path = m.ROUTES["events"][1]
    return path + ("?" + urlencode(q) if q else "")


TERMINAL = frozenset(("completed", "failed", "cancelled"))


def wait_states(states):
    """The states a wait waits for: the given ones, or the terminal ones."""
    if isinstance(states, str):
        states = [states]
    return frozenset(states) if states else TERMINAL


def settled(id, state, want, finished_error):
    """Whether a job in state satisfies a wait for want; raises
    finished_error when it has ended in another state, which it can never
    leave for one of them."""
    if state in want:
        return True
    if state in TERMINAL:
        raise finished_error("job %d has ended (%s) without being %s" % (id, state, " or ".join(sorted(want))), 409)
    return False
