"""Trusted harness that calls a candidate function on test inputs (runs inside the sandbox).

Started as ``python -I -S -c <this source>``; reads one request on stdin (``marshal``, written
by the trusted host), then closes it:
``{"source", "entry_point", "inputs": [[arg, ...], ...], "limits": {...}}``. It sets its own
rlimits, executes the candidate's source, calls the entry point on each input and writes one
JSON line per input to fd 3 — never stdout — followed by ``{"done": true}``.

Expected outputs never enter the sandbox: the host compares values. So nothing the candidate
does here can forge a pass: printing, exiting, patching ``assert`` or this harness, or writing
its own lines to fd 3 (a duplicate or malformed line voids the whole run).

Only built-in modules are imported: ``json`` alone (through ``re`` and ``enum``) would triple
the start-up cost, so requests come as ``marshal`` and reports are written by :func:`dumps`.
The host parses reports with ``json``, never ``marshal``: the candidate can write to fd 3.
"""

import marshal
import math
import os
import resource
import sys

CHANNEL_FD = 3


def encode_value(value, depth=0):
    """Strict, type-exact JSON encoding: only plain builtins pass (no subclasses)."""
    if depth > 50:
        raise TypeError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        if abs(value) > 10**300:
            raise TypeError("integer too large")
        return value
    if kind is float:
        if not math.isfinite(value):
            return {"__float__": repr(value)}
        return {"__float__": repr(round(value, 9))}
    if kind is list:
        return [encode_value(v, depth + 1) for v in value]
    if kind is tuple:
        return {"__tuple__": [encode_value(v, depth + 1) for v in value]}
    if kind is dict:
        if not all(type(k) is str for k in value):
            return {
                "__dict__": sorted(
                    ([encode_value(k, depth + 1), encode_value(v, depth + 1)] for k, v in value.items()),
                    key=repr,
                )
            }
        return {"__map__": {k: encode_value(v, depth + 1) for k, v in value.items()}}
    if kind is set or kind is frozenset:
        return {"__set__": sorted((encode_value(v, depth + 1) for v in value), key=repr)}
    raise TypeError(f"unsupported return type {kind.__name__}")


def _escape_char(ch):
    code = ord(ch)
    if ch == '"' or ch == "\\":
        return "\\" + ch
    if code < 0x20 or 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return ch


def dumps(value):
    """JSON text of an encoded value (dicts, lists, str, int, bool, None) without ``json``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is str:
        if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
            return '"' + value + '"'
        return '"' + "".join(_escape_char(ch) for ch in value) + '"'
    if type(value) is list:
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if type(value) is dict:
        return "{" + ",".join(dumps(k) + ":" + dumps(value[k]) for k in sorted(value)) + "}"
    raise TypeError("cannot serialise " + type(value).__name__)


def _write(fd, record):
    os.write(fd, (dumps(record) + "\n").encode("utf-8", "surrogatepass"))


def main():
    request = marshal.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    os.close(0)
    limits = request.get("limits", {})
    mb = 1024 * 1024
    if "memory_mb" in limits:
        resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mb,) * 2)
    sys.setrecursionlimit(5000)
    # Keep a private copy of the channel; fd 3 stays open for the candidate to (harmlessly) abuse.
    channel = os.dup(CHANNEL_FD)
    write = _write
    inputs = request["inputs"]
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        exec(compile(request["source"], "solution.py", "exec"), namespace)
        function = namespace[request["entry_point"]]
    except BaseException as exc:  # anything the candidate raises, even SystemExit, is a failure
        write(channel, {"load_error": type(exc).__name__})
        return
    for index, args in enumerate(inputs):
        try:
            value = function(*args)  # each input is a fresh object: nothing to copy
            record = {"i": index, "ok": True, "value": encode_value(value)}
            dumps(record)  # fail here, as this test, if the value cannot be written
        except BaseException as exc:  # as above, for this one test
            record = {"i": index, "ok": False, "error": type(exc).__name__}
        write(channel, record)
    write(channel, {"done": True})


if __name__ == "__main__":
    main()
