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
- if the hook fails (recursion, memory), the audited operation fails with it, and the frame
  of the hook that the traceback hands over holds only immutable values (no closures).

Not audited, on purpose: ``exec``/``compile``/``import`` of ordinary modules (every import and
many stdlib modules exec and compile: the operations that decoded code then performs are what
is audited), ``sys._getframe``, ``object.__getattr__`` (``namedtuple``, ``typing``, ``enum``,
``warnings`` and tracebacks use them), ``code.__new__`` (the standard library builds code
objects), reads of files under the interpreter's own import path (imports read them).

Known gaps — CPython 3.11 raises no audit event for: ``ctypes.memmove``/``ctypes.cast`` once
ctypes is loaded (the harness unloads the job server's ctypes so that importing it is seen, but
its classes stay reachable through ``object.__subclasses__()``); ``_posixsubprocess.fork_exec``
(closed another way: the harness sets ``RLIMIT_NPROC`` to 0 before the candidate runs, so no
process or thread can be created at all, and the audited ways report before they fail);
``frame.f_back``, ``function.__globals__``, closures. The AST rule flags those names (a cheap
check, dodged by ``getattr``); beyond it the sandbox (uid, namespaces, seccomp, rlimits) is the
boundary.

Only modules the zygote has loaded already are imported (``tests/verifiers`` checks it): ``json``
alone (through ``re`` and ``enum``) would triple the start-up cost, and ``typing`` costs 5 ms of
CPU per job, so requests come as ``marshal``, reports are written by :func:`dumps`, and nothing
is annotated with ``typing`` names.
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
# Evidence is printable ASCII without quotes or backslashes, a JSON string as it stands: a
# translation table indexed by code point (a tuple, so nothing can edit it).
_SWAPPED = {ord('"'): "'", ord("\\"): "/"}
_EVIDENCE_TABLE = tuple("?" if c < 32 or c == 127 else _SWAPPED.get(c, chr(c)) for c in range(128))


def install_audit_hook(channel, workdir, import_path):
    """Report forbidden operations on ``channel`` before they run; return the channel writer.

    ``import_path``: the absolute ``sys.path`` entries, read-only opens below which are the
    interpreter's own (imports). Paths below ``workdir`` are reported relative to it, so the
    same code gives the same evidence in every sandbox.

    The hook is one flat function whose state is its default values, all immutable, and that
    calls no Python function: if it fails (the candidate can make it hit the recursion limit)
    the traceback hands the candidate a frame of it, and a frame of nested functions would
    hand over their closures, which can be rewritten (``cell_contents``).
    """
    pipe = os.fstat(channel)

    def hook(
        event,
        args,
        rules=frozenset(AUDIT_RULES),
        native=NATIVE_MODULES,
        table=_EVIDENCE_TABLE,
        roots=tuple(p.rstrip("/") + "/" for p in import_path if p.startswith("/")),
        here=workdir.rstrip("/") + "/",
        fds=(channel, CHANNEL_FD),  # fd 3 too: evidence for the void run, if it still is the pipe
        dev=pipe.st_dev,
        ino=pipe.st_ino,
        broken=CHANNEL_BROKEN_EXIT,
        write=os.write,
        fstat=os.fstat,
        exit_now=os._exit,
        oserror=OSError,
        str_=str,
        bytes_=bytes,
        int_=int,
        type_=type,
        len_=len,
        tuple_=tuple,
    ):
        if type_(event) is not str_ or event not in rules:
            return  # sys.audit() hands hooks a plain str; anything else is not an operation
        count = len_(args) if type_(args) is tuple_ else 0
        # Only exact str and bytes are read: never a method of a candidate object; numbers
        # (pids, fds) would differ between runs.
        kind = type_(args[0]) if count else None
        textual, first = kind is str_ or kind is bytes_, ""
        if kind is str_:
            first = args[0]
        elif kind is bytes_:
            first = args[0].decode("utf-8", "surrogateescape")
        own = textual and "/../" not in first and "/./" not in first
        if own:  # under the interpreter's own import path
            own = False
            for root in roots:
                if first.startswith(root) or first + "/" == root:
                    own = True
                    break
        shown = "./" + first[len_(here) :] if textual and first.startswith(here) else first
        if event == "open" and count == 3:
            mode, flags = args[1], args[2]
            if type_(mode) is str_:
                reading = "w" not in mode and "a" not in mode and "x" not in mode and "+" not in mode
            else:
                reading = type_(flags) is int_ and flags & 0o3 == 0 and not flags & 0o1100  # CREAT, TRUNC
            if not textual:
                detail = None if kind is int_ else "<object>"  # an fd: opened already
            elif own and (reading or "/__pycache__/" in first):
                detail = None  # imports read the standard library and may cache its bytecode
            else:
                detail = ("read " if reading else "write ") + shown
        elif event == "os.listdir" or event == "os.scandir":
            detail = None if own else shown if textual else "."
        elif event == "import":
            detail = first if textual and first in native else None
        elif event == "socket.__new__":
            family = args[1] if count > 1 else 0
            if type_(family) is int_ and -(2**31) <= family < 2**31:
                detail = None if family == 1 else "family " + str_(family)  # AF_UNIX: a local pair
            else:
                detail = "family ?"
        elif event == "sqlite3.connect" and textual and (first == ":memory:" or first == ""):
            detail = None
        else:
            detail = ""
            for value in args[:3]:
                kind = type_(value)
                if kind is bytes_ or kind is str_:
                    text = value.decode("utf-8", "surrogateescape") if kind is bytes_ else value
                    detail = "./" + text[len_(here) :] if text.startswith(here) else text
                    break
        if detail is None:
            return
        detail = detail[:200].encode("ascii", "backslashreplace").decode("ascii").translate(table)
        data = ('\n{"audit":"' + event + '","detail":"' + detail + '"}\n').encode("ascii")
        for fd in fds:  # only to the pipe the host reads, whole, or the job ends here
            try:
                now = fstat(fd)
                if now.st_dev == dev and now.st_ino == ino and write(fd, data) == len_(data):
                    if fd == fds[0]:
                        return
                    break
            except oserror:
                pass
        exit_now(broken)

    sys.addaudithook(hook)
    return channel_writer(channel, pipe.st_dev, pipe.st_ino)


def channel_writer(channel, dev, ino):
    """The harness's own writer: whole lines, each framed by newlines, to the pipe only."""
    write, fstat, exit_now, oserror, size = os.write, os.fstat, os._exit, OSError, len
    broken = CHANNEL_BROKEN_EXIT

    def emit(line):
        data = ("\n" + line + "\n").encode("utf-8", "surrogatepass")
        try:
            now = fstat(channel)
            if now.st_dev == dev and now.st_ino == ino and write(channel, data) == size(data):
                return
        except oserror:
            pass
        exit_now(broken)

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
    # No new process or thread, however made: ``_posixsubprocess.fork_exec`` raises no audit
    # event, and a child program runs without the hook. A limit of 0 makes every fork, vfork
    # and clone of this uid fail (EAGAIN); the audited ways still report before they fail.
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    sys.setrecursionlimit(5000)
    # A private copy of the channel, which the hook watches; fd 3 stays open for the candidate
    # to (harmlessly) abuse.
    channel = os.dup(CHANNEL_FD)
    hide_preloaded_native_modules()
    emit = install_audit_hook(channel, os.getcwd(), sys.path)

    def write(record):
        emit(dumps(record))

    inputs = request["inputs"]
    namespace: dict = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        exec(compile(request["source"], "solution.py", "exec", dont_inherit=True), namespace)
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
