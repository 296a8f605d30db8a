"""Trusted harness that calls a candidate function on test inputs (runs inside the sandbox).

The host sends :data:`BOOTSTRAP` as the job's script: a few lines that read, from stdin
(``marshal``, written by the trusted host), this module compiled on the host — or its source,
when the sandbox's interpreter differs — and the request, then call :func:`main` (compiling this
file in every job would cost more than running the tests). Run as ``python -I -S -c <this
source>`` it reads the request alone. The request:
``{"source", "entry_point", "inputs": [[arg, ...], ...], "limits": {...}}``. It sets its own
rlimits, installs an audit hook, executes the candidate's source, calls the entry point on each
input and writes one JSON line per input to fd 3 — never stdout — followed by ``{"done": true}``.

Expected outputs never enter the sandbox: the host compares values. So nothing the candidate
does here can forge a pass: printing, exiting, patching ``assert`` or this harness, or writing
its own lines to fd 3 (a duplicate or malformed line voids the whole run).

What the candidate does is observed, not guessed from names (PEP 578): before its code runs,
:func:`install_audit_hook` adds a hook (hooks cannot be removed) that writes an
``{"audit": event, "detail": ...}`` line to the channel for every operation a pure function
has no use for (:data:`AUDIT_RULES`: files, sockets, processes, native code, introspection of
the interpreter), *before* the operation happens. The host turns them into RLVP penalties.
The candidate cannot hide one:

- the hook holds its own references (``os.write``, ``os.fstat``, ``os._exit``, ``str`` ...),
  bound before the candidate runs, and never calls a method of a candidate object: patching
  ``os.write``, ``builtins`` or ``json`` changes nothing it does;
- it writes to a private duplicate of fd 3 and checks, before every write, that the duplicate
  still is the same pipe (device and inode): if the candidate closed it or ``dup2``-ed another
  file over it, the event goes to fd 3 if that still is the pipe, and the process exits at
  once with :data:`CHANNEL_BROKEN_EXIT`, before the operation: the host voids the run;
- each line starts and ends with a newline, so a partial line written by the candidate becomes
  a malformed line of its own (the run is void) rather than swallowing the event;
- a line after ``done`` voids the run, so nothing can be done once the report is complete;
- if the hook fails (recursion, memory), the audited operation fails with it.

Not audited, on purpose: ``exec``/``compile``/``import`` of ordinary modules (every import and
many stdlib modules exec and compile: the operations that decoded code then performs are what
is audited), ``sys._getframe`` and ``object.__getattr__`` (``namedtuple``, ``typing``,
``enum``, ``warnings`` and tracebacks use them), reads of files under the interpreter's own
import path (importing the standard library reads them). Known gaps, raised by no audit event
in CPython 3.11: ``ctypes.memmove``/``ctypes.cast`` once ctypes is loaded (so the harness
unloads a pre-imported ctypes: importing it again is observed), ``_posixsubprocess.fork_exec``
and ``frame.f_back``; the sandbox (uid, namespaces, rlimits) is the boundary there.

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
CHANNEL_BROKEN_EXIT = 86  # the hook found its channel closed or replaced: the run is void
# The job's script. Its stdin: marshal of (cache tag, marshal of this module's code, this
# module's source, request); the code is used only by an interpreter with the same cache tag.
BOOTSTRAP = """
import marshal, sys
tag, code, source, request = marshal.loads(sys.stdin.buffer.read())
same = tag == sys.implementation.cache_tag
harness = {"__name__": "function_harness", "__builtins__": __builtins__}
exec(marshal.loads(code) if same else compile(source, "function_harness.py", "exec"), harness)
del tag, code, source, same
harness["main"](request)
"""

_FILES, _NETWORK, _PROCESSES = "filesystem-access", "network-access", "process-spawn"
_INTERPRETER, _EXIT = "runtime-patching", "exit-call"
# Audit event -> the RLVP rule it feeds (one home: the host maps lines with this table).
AUDIT_RULES = {
    **dict.fromkeys(
        (
            "open",  # judged: reads under the import path are the interpreter's own
            "os.listdir",  # judged, as open
            "os.scandir",  # judged, as open
            "os.walk",
            "os.fwalk",
            "glob.glob",
            "glob.glob/2",
            "os.chdir",
            "os.chmod",
            "os.chown",
            "os.chflags",
            "os.link",
            "os.symlink",
            "os.mkdir",
            "os.rmdir",
            "os.remove",
            "os.rename",
            "os.truncate",
            "os.utime",
            "os.lockf",
            "os.getxattr",
            "os.listxattr",
            "os.removexattr",
            "os.setxattr",
            "shutil.copyfile",
            "shutil.copymode",
            "shutil.copystat",
            "shutil.copytree",
            "shutil.rmtree",
            "shutil.move",
            "shutil.chown",
            "shutil.make_archive",
            "shutil.unpack_archive",
            "tempfile.mkstemp",
            "tempfile.mkdtemp",
            "sqlite3.connect",  # judged: an in-memory database touches no file
            "dbm.open",
        ),
        _FILES,
    ),
    **dict.fromkeys(
        (
            "socket.__new__",  # judged: AF_UNIX pairs (asyncio's self-pipe) reach nothing
            "socket.connect",
            "socket.bind",
            "socket.sendto",
            "socket.sendmsg",
            "socket.getaddrinfo",
            "socket.gethostbyname",
            "socket.gethostbyname_ex",
            "socket.gethostbyaddr",
            "socket.getnameinfo",
            "socket.getservbyname",
            "socket.getservbyport",
            "socket.sethostname",
            "urllib.Request",
            "http.client.connect",
            "ftplib.connect",
            "smtplib.connect",
            "imaplib.open",
            "poplib.connect",
            "nntplib.connect",
            "telnetlib.Telnet.open",
        ),
        _NETWORK,
    ),
    **dict.fromkeys(
        (
            "subprocess.Popen",
            "os.system",
            "os.exec",
            "os.posix_spawn",
            "os.spawn",
            "os.fork",
            "os.forkpty",
            "pty.spawn",
            "os.startfile",
            "webbrowser.open",
        ),
        _PROCESSES,
    ),
    **dict.fromkeys(
        (
            "import",  # judged: only native-code modules (ctypes, cffi)
            "ctypes.dlopen",
            "ctypes.dlsym",
            "ctypes.dlsym/handle",
            "ctypes.cdata",
            "ctypes.cdata/buffer",
            "ctypes.string_at",
            "ctypes.wstring_at",
            "ctypes.addressof",
            "ctypes.call_function",
            "ctypes.create_string_buffer",
            "ctypes.create_unicode_buffer",
            "sys.addaudithook",
            "sys.settrace",
            "sys.setprofile",
            "sys._current_frames",
            "gc.get_objects",
            "gc.get_referrers",
            "gc.get_referents",
            "resource.setrlimit",
            "resource.prlimit",
        ),
        _INTERPRETER,
    ),
    **dict.fromkeys(("os.kill", "os.killpg", "signal.pthread_kill"), _EXIT),
}
NATIVE_MODULES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend"})
# Evidence is printable ASCII without quotes or backslashes: a JSON string as it stands.
_EVIDENCE_TABLE = {**{c: "?" for c in range(32)}, 127: "?", ord('"'): "'", ord("\\"): "/"}


def install_audit_hook(channel, workdir, import_path):
    """Report forbidden operations on ``channel`` before they run; return the channel writer.

    ``import_path``: the absolute ``sys.path`` entries, read-only opens below which are the
    interpreter's own (imports). Paths below ``workdir`` are reported relative to it, so the
    same code gives the same evidence in every sandbox.
    """
    rules, native, table = dict(AUDIT_RULES), NATIVE_MODULES, dict(_EVIDENCE_TABLE)
    roots = tuple(p.rstrip("/") + "/" for p in import_path if p.startswith("/"))
    here = workdir.rstrip("/") + "/"
    write, fstat, exit_now, oserror = os.write, os.fstat, os._exit, OSError
    str_, bytes_, int_, type_, len_, tuple_ = str, bytes, int, type, len, tuple
    pipe = fstat(channel)
    dev, ino = pipe.st_dev, pipe.st_ino

    def send(fd, data):  # only to the pipe the host reads, whole, or not at all
        try:
            now = fstat(fd)
            return now.st_dev == dev and now.st_ino == ino and write(fd, data) == len_(data)
        except oserror:
            return False

    def emit(line):
        data = ("\n" + line + "\n").encode("utf-8", "surrogatepass")
        if not send(channel, data):
            send(CHANNEL_FD, data)  # evidence for the void run, if fd 3 still is the pipe
            exit_now(CHANNEL_BROKEN_EXIT)

    def as_text(value):  # never calls into a candidate object: exact builtin types only
        kind = type_(value)
        if kind is bytes_:
            return value.decode("utf-8", "surrogateescape")
        return value if kind is str_ else None  # numbers (pids, fds) would vary between runs

    def evidence(value):
        return value[:200].encode("ascii", "backslashreplace").decode("ascii").translate(table)

    def own_path(path):  # a read-only path the interpreter itself uses
        if "/../" in path or "/./" in path or path.endswith("/.."):
            return False
        for root in roots:
            if path.startswith(root) or path + "/" == root:
                return True
        return False

    def shown(path):
        return "./" + path[len_(here) :] if path.startswith(here) else path

    def judge(event, args):
        """The evidence for this event, or None when it is allowed."""
        count = len_(args) if type_(args) is tuple_ else 0
        first = as_text(args[0]) if count else None
        if event == "open" and count == 3:
            mode, flags = args[1], args[2]
            if type_(mode) is str_:
                reading = "w" not in mode and "a" not in mode and "x" not in mode and "+" not in mode
            else:
                reading = type_(flags) is int_ and flags & 0o3 == 0 and not flags & 0o1100  # CREAT, TRUNC
            if first is None:
                return None if type_(args[0]) is int_ else "<object>"  # an fd: opened already
            if own_path(first) and (reading or "/__pycache__/" in first):
                return None  # imports read the standard library and may cache its bytecode
            return ("read " if reading else "write ") + shown(first)
        if event == "os.listdir" or event == "os.scandir":
            if first is not None and own_path(first):
                return None
            return shown(first) if first is not None else "."
        if event == "import":
            return first if first in native else None
        if event == "socket.__new__":
            family = args[1] if count > 1 else None
            if type_(family) is int_ and -(2**31) <= family < 2**31:
                return None if family == 1 else "family " + str_(family)
            return "family ?"
        if event == "sqlite3.connect" and (first == ":memory:" or first == ""):
            return None
        for value in args[: min(count, 3)]:
            text = as_text(value)
            if text is not None:
                return shown(text)
        return ""

    def hook(event, args):
        if type_(event) is not str_:
            return  # sys.audit() called with a str subclass: not an operation
        if event not in rules:
            return
        detail = judge(event, args)
        if detail is not None:
            emit('{"audit":"' + event + '","detail":"' + evidence(detail) + '"}')

    sys.addaudithook(hook)
    return emit


def hide_preloaded_native_modules():
    """Unload native-code modules the process that forked this job had imported (the job
    server uses ctypes), and its ``__main__``, so the candidate's first use is an import the
    hook sees."""
    for name in list(sys.modules):
        if name.partition(".")[0] in NATIVE_MODULES:
            del sys.modules[name]
    sys.modules["__main__"] = type(sys)("__main__")


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


def main(request):
    sys.stdin.close()
    os.close(0)
    limits = request.get("limits", {})
    mb = 1024 * 1024
    if "memory_mb" in limits:
        resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mb,) * 2)
    sys.setrecursionlimit(5000)
    # A private copy of the channel, which the hook watches; fd 3 stays open for the candidate
    # to (harmlessly) abuse.
    channel = os.dup(CHANNEL_FD)
    hide_preloaded_native_modules()
    emit = install_audit_hook(channel, os.getcwd(), sys.path)

    def write(record):
        emit(dumps(record))

    inputs = request["inputs"]
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        exec(compile(request["source"], "solution.py", "exec"), namespace)
    except BaseException as exc:  # anything the candidate raises, even SystemExit, is a failure
        write({"load_error": type(exc).__name__})
        return
    if request["entry_point"] not in namespace:  # the code loads but defines another name
        write({"missing_function": request["entry_point"]})
        return
    function = namespace[request["entry_point"]]
    for index, args in enumerate(inputs):
        try:
            value = function(*args)  # each input is a fresh object: nothing to copy
            record = {"i": index, "ok": True, "value": encode_value(value)}
            dumps(record)  # fail here, as this test, if the value cannot be written
        except BaseException as exc:  # as above, for this one test
            record = {"i": index, "ok": False, "error": type(exc).__name__}
        write(record)
    write({"done": True})


if __name__ == "__main__":
    main(marshal.loads(sys.stdin.buffer.read()))
