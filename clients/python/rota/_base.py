"""What the generated models (_models.py) stand on: the Model base class,
RotaError, and the wire forms of times and durations."""

import datetime as _dt
import re as _re

__all__ = ["Model", "RotaError", "parse_time", "format_time", "parse_duration", "format_duration"]

_UTC = _dt.timezone.utc


class RotaError(Exception):
    """An error the API answered with (see its subclasses, one per error
    code), or a failure to reach the server (code None).

    code is the API's stable error code, status the HTTP status, message
    what the server said."""

    code = None
    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __str__(self):
        if self.code:
            return "%s: %s" % (self.code, self.message)
        return self.message


# ---- times ----

_TIME_RE = _re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))$"
)


def parse_time(s):
    """Reads an RFC 3339 time as the server writes it (up to nanoseconds,
    which Python's datetime rounds down to microseconds) into an aware
    datetime."""
    m = _TIME_RE.match(s)
    if m is None:
        raise ValueError("%r is not an RFC 3339 time" % (s,))
    y, mo, d, h, mi, sec, frac, z, sign, oh, om = m.groups()
    us = int((frac + "000000")[:6]) if frac else 0
    if z:
        tz = _UTC
    else:
        off = _dt.timedelta(hours=int(oh), minutes=int(om))
        tz = _dt.timezone(-off if sign == "-" else off) if off else _UTC
    return _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec), us, tz)


def format_time(t):
    """Writes a datetime as RFC 3339 in UTC. A naive datetime is taken as
    local time, as datetime.astimezone does."""
    if isinstance(t, str):
        parse_time(t)  # refuse what the server would, here, naming it
        return t
    if not isinstance(t, _dt.datetime):
        raise TypeError("want a datetime or an RFC 3339 string, got %r" % (t,))
    t = t.astimezone(_UTC)
    if t.microsecond:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- durations (Go's syntax: "1.5s", "1h30m") ----

_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DUR_RE = _re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(s):
    """Reads a Go duration string into a timedelta."""
    text = s
    sign = 1
    if s[:1] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return _dt.timedelta(0)
    pos, total = 0, 0.0
    for m in _DUR_RE.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError("%r is not a duration such as \"1.5s\" or \"10m\"" % (text,))
    return _dt.timedelta(seconds=sign * total)


def format_duration(d):
    """Writes a duration in Go's syntax: a timedelta, a number of seconds,
    or a Go duration string (checked)."""
    if isinstance(d, str):
        parse_duration(d)
        return d
    if isinstance(d, _dt.timedelta):
        us = (d.days * 86400 + d.seconds) * 1000000 + d.microseconds
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        us = round(d * 1000000)
    else:
        raise TypeError("want a timedelta, seconds or a duration string such as \"1.5s\", got %r" % (d,))
    if us % 1000000 == 0:
        return "%ds" % (us // 1000000)
    if us % 1000 == 0:
        return "%dms" % (us // 1000)
    return "%dus" % us


# ---- models ----


def _converter(kind):
    if kind == "json":
        return None
    if kind == "time":
        return parse_time
    if kind == "duration":
        return parse_duration
    from . import _models

    if kind.startswith("["):
        cls = getattr(_models, kind[1:-1])
        return lambda v: [cls.from_json(x) for x in v]
    cls = getattr(_models, kind)
    return cls.from_json


def _encoder(kind):
    if kind == "time":
        return format_time
    if kind == "duration":
        return format_duration
    if kind == "json":
        return None
    def enc(v):
        if isinstance(v, Model):
            return v.to_json()
        if isinstance(v, (list, tuple)):
            return [x.to_json() if isinstance(x, Model) else x for x in v]
        return v

    return enc


class _Lazy:
    """A time or duration field, read from its wire string when first
    asked for: a worker reads thousands of jobs a second and most of their
    times are never looked at."""

    __slots__ = ("name", "raw", "parse")

    def __init__(self, name, parse):
        self.name = name
        self.raw = "_raw_" + name
        self.parse = parse

    def __get__(self, obj, cls=None):
        if obj is None:
            return None
        d = obj.__dict__
        raw = d.get(self.raw)
        if raw is None:
            return None
        v = self.parse(raw)
        d[self.name] = v  # cached: the instance's value hides this descriptor from now on
        return v


class Model:
    """A request or response body of the API. Fields are attributes; a field
    the server left out (it leaves out empty and zero values) reads as its
    zero value (0, "", False, (), or None for objects, times and
    durations). Times are aware datetimes, durations timedeltas."""

    _fields = {}
    _required = ()
    _lazy = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        lazy = {}
        for k, kind in cls.__dict__.get("_fields", {}).items():
            if kind in ("time", "duration") and k.isidentifier():
                setattr(cls, k, _Lazy(k, parse_time if kind == "time" else parse_duration))
                lazy[k] = "_raw_" + k
        if "_fields" in cls.__dict__:
            cls._lazy = lazy

    def __init__(self, **fields):
        for k, v in fields.items():
            if k not in self._fields:
                raise TypeError("%s has no field %r (it has %s)" % (type(self).__name__, k, ", ".join(sorted(self._fields))))
            setattr(self, k, v)

    @classmethod
    def _decoders(cls):
        d = cls.__dict__.get("_decoders_cache")
        if d is None:
            d = {}
            for k, kind in cls._fields.items():
                if k in cls._lazy:
                    d[k] = cls._lazy[k]  # a str: stored raw under this name
                else:
                    f = _converter(kind)
                    if f is not None:
                        d[k] = f
            cls._decoders_cache = d
        return d

    @classmethod
    def from_json(cls, obj):
        """Builds the model from the API's JSON object (a dict)."""
        m = cls.__new__(cls)
        conv = cls._decoders()
        d = m.__dict__
        for k, v in obj.items():
            f = conv.get(k)
            if f is None or v is None:
                d[k] = v
            elif f.__class__ is str:
                d[f] = v
            else:
                d[k] = f(v)
        return m

    def _has(self, k):
        d = self.__dict__
        return k in d or ("_raw_" + k) in d

    def fields(self):
        """The fields the model has (the server sent, or were set), as a
        dict of their Python values."""
        return {k: getattr(self, k) for k in self._fields if self._has(k)}

    def to_json(self):
        """The model as the API's JSON object (a dict), fields it does not
        have left out."""
        out = {}
        d = self.__dict__
        for k, kind in self._fields.items():
            if k in d:
                v = d[k]
                if v is None:
                    continue
                enc = _encoder(kind)
                if enc is not None:
                    v = enc(v)
                out[k] = v
            elif ("_raw_" + k) in d:
                out[k] = d["_raw_" + k]
        return out

    def __getitem__(self, name):
        # For fields that are Python keywords, such as FinishItem's "as".
        if name in self._fields:
            return getattr(self, name, None)
        raise KeyError(name)

    def __eq__(self, other):
        return type(self) is type(other) and self.fields() == other.fields()

    def __repr__(self):
        parts = ["%s=%r" % kv for kv in self.fields().items()]
        return "%s(%s)" % (type(self).__name__, ", ".join(parts))
