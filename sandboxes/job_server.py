"""The in-sandbox job server: one per sandbox, the same on every backend.

Started as ``python -I -S job_server.py --socket PATH --workdir DIR [...]`` (standard library
only: it runs inside a bubblewrap jail or a container too). It serves one client over a Unix
socket with length-prefixed JSON frames (payloads base64): exec, write, read, list, snapshot,
restore, reset, ping. The host parses nothing but JSON from it — jobs may compromise a server
that shares their uid, never the host.

Each job is forked from this already-running interpreter (no interpreter start-up): the child
starts a new session, takes pipes as stdin/stdout/stderr (and fd 3 as a side channel), closes
every other descriptor, sets rlimits, forbids new privileges, drops to the job uid when the
server runs as root, and then either execs ``argv`` or runs a Python ``script`` in place.
The server enforces the time limit itself (a process-group kill), caps output while it
streams, and afterwards kills every process left under the job uid: nothing outlives a job.
"""

import base64
import ctypes
import json
import os
import resource
import selectors
import shutil
import signal
import socket
import stat
import struct
import sys
import time
import traceback

MAX_FRAME = 64 * 1024 * 1024
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_NO_NEW_PRIVS = 38


_LIBC = []
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


def _libc():
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


MS_BIND, MS_RDONLY, MS_REMOUNT = 4096, 1, 32


def _hidden_ancestor(path):
    """The topmost ancestor of ``path`` that other users cannot traverse (e.g. /root), if any."""
    parts = os.path.realpath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        folder = os.sep.join(parts[:i])
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return folder
    return None


def isolate_host_process(workdir, tmpfs_mb, stash):
    """Local backend, as root: private network (loopback only), a private tmpfs work dir, and —
    when the interpreter lives under a private folder such as /root (pyenv) — that folder
    replaced by an empty tmpfs with only the interpreter bound back, read-only."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNET | CLONE_NEWNS), "unshare")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    os.makedirs(workdir, exist_ok=True)
    options = f"size={tmpfs_mb}m,mode=0755".encode()
    _check(libc.mount(b"tmpfs", workdir.encode(), b"tmpfs", 0, options), "mount tmpfs")
    # Our own /proc instance (per-mount options since Linux 5.8): jobs see only their uid's
    # processes, so concurrent sandboxes do not see each other. The host's /proc is untouched.
    if libc.mount(b"proc", b"/proc", b"proc", 0, b"hidepid=invisible") != 0:
        _check(libc.mount(b"proc", b"/proc", b"proc", 0, b"hidepid=2"), "mount /proc with hidepid")
    prefix = os.path.realpath(sys.base_prefix)
    hidden = _hidden_ancestor(prefix)
    if hidden:
        os.makedirs(stash, exist_ok=True)
        _check(libc.mount(prefix.encode(), stash.encode(), None, MS_BIND | MS_REC, None), "stash interpreter")
        _check(libc.mount(b"tmpfs", hidden.encode(), b"tmpfs", 0, b"size=1m,mode=0755"), f"hide {hidden}")
        os.makedirs(prefix, exist_ok=True)
        for folder in _ancestors_below(prefix, hidden):
            os.chmod(folder, 0o755)
        _check(
            libc.mount(stash.encode(), prefix.encode(), None, MS_BIND | MS_REC, None), "restore interpreter"
        )
        _check(
            libc.mount(b"none", prefix.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None),
            "interpreter read-only",
        )


def _ancestors_below(path, top):
    out = []
    while path != top and path != os.sep:
        out.append(path)
        path = os.path.dirname(path)
    return out


class Server:
    def __init__(self, workdir, job_uid, job_gid):
        self.workdir = os.path.realpath(workdir)
        self.job_uid, self.job_gid = job_uid, job_gid
        self.drop = os.getuid() == 0 and job_uid is not None
        self.snapshots = {}
        self.reap_pending = False
        os.makedirs(self.workdir, exist_ok=True)
        if self.drop:
            os.chown(self.workdir, job_uid, job_gid)
        self.snapshots["pristine"] = self._capture()

    # ------------------------------------------------------------------ files
    def _path(self, rel):
        target = os.path.realpath(os.path.join(self.workdir, rel))
        if target != self.workdir and not target.startswith(self.workdir + os.sep):
            raise PermissionError(f"path {rel!r} leaves the work dir")
        return target

    def op_write(self, req):
        path = self._path(req["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(req["data"]))
        os.chmod(path, req.get("mode", 0o644))
        if self.drop:
            self._chown_tree(os.path.dirname(path))
            os.chown(path, self.job_uid, self.job_gid)
        return {}

    def _chown_tree(self, folder):
        while folder.startswith(self.workdir):
            os.chown(folder, self.job_uid, self.job_gid)
            if folder == self.workdir:
                break
            folder = os.path.dirname(folder)

    def op_read(self, req):
        path = self._path(req["path"])
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(req.get("max_bytes", 16 * 1024 * 1024) + 1)
        return {"data": base64.b64encode(data).decode()}

    def op_list(self, req):
        entries = []
        for root, dirs, files in os.walk(self.workdir):
            dirs.sort()
            for name in sorted(dirs + files):
                full = os.path.join(root, name)
                info = os.lstat(full)
                kind = (
                    "symlink"
                    if stat.S_ISLNK(info.st_mode)
                    else "dir"
                    if stat.S_ISDIR(info.st_mode)
                    else "file"
                )
                entries.append(
                    [os.path.relpath(full, self.workdir), kind, info.st_size, stat.S_IMODE(info.st_mode)]
                )
        entries.sort()
        return {"entries": entries}

    def _capture(self):
        tree = []
        for root, dirs, files in os.walk(self.workdir):
            for name in sorted(dirs) + sorted(files):
                full = os.path.join(root, name)
                rel = os.path.relpath(full, self.workdir)
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    tree.append((rel, "symlink", os.readlink(full), 0))
                elif stat.S_ISDIR(info.st_mode):
                    tree.append((rel, "dir", None, stat.S_IMODE(info.st_mode)))
                elif stat.S_ISREG(info.st_mode):
                    with open(full, "rb") as fh:
                        tree.append((rel, "file", fh.read(), stat.S_IMODE(info.st_mode)))
        return tree

    def _wipe(self):
        for name in os.listdir(self.workdir):
            full = os.path.join(self.workdir, name)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
            else:
                os.unlink(full)

    def _apply(self, tree):
        self._wipe()
        for rel, kind, data, mode in tree:
            full = os.path.join(self.workdir, rel)
            if kind == "dir":
                os.makedirs(full, exist_ok=True)
                os.chmod(full, mode)
            elif kind == "symlink":
                os.symlink(data, full)
            else:
                with open(full, "wb") as fh:
                    fh.write(data)
                os.chmod(full, mode)
            if self.drop:
                os.lchown(full, self.job_uid, self.job_gid)

    def op_snapshot(self, req):
        snap_id = f"s{len(self.snapshots)}"
        self.snapshots[snap_id] = self._capture()
        return {"id": snap_id}

    def op_restore(self, req):
        if req["id"] not in self.snapshots:
            raise KeyError(f"no snapshot {req['id']!r}")
        if _has_children():  # only survivors of earlier jobs need killing
            self._reap()
        self._apply(self.snapshots[req["id"]])
        return {}

    def op_reset(self, req):
        return self.op_restore({"id": "pristine"})

    def op_ping(self, req):
        return {"pid": os.getpid(), "uid": os.getuid(), "workdir": self.workdir}

    # ------------------------------------------------------------------ jobs
    def op_exec(self, req):
        limits = req.get("limits", {})
        cap = int(limits.get("max_output_bytes", 1_000_000))
        side = bool(req.get("side_channel"))
        pipes = [os.pipe() for _ in range(4 if side else 3)]
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            self._child(req, pipes, limits)
        os.close(pipes[0][0])
        for _read_end, write_end in pipes[1:]:
            os.close(write_end)
        streams = {pipes[1][0]: "stdout", pipes[2][0]: "stderr"}
        if side:
            streams[pipes[3][0]] = "channel"
        data, killed_by, truncated = _collect(
            pid,
            pipes[0][1],
            base64.b64decode(req.get("stdin", "")),
            streams,
            start + float(req.get("timeout", 10.0)),
            cap,
        )
        _, status = os.waitpid(pid, 0)
        if killed_by:
            self._reap()  # orphans of a killed job die before the caller hears of it
        elif _has_children():
            self.reap_pending = True  # done right after the reply, before the next request
        code = os.waitstatus_to_exitcode(status)
        if killed_by is None and code == -signal.SIGXCPU:
            killed_by = "timeout"
        out_of_memory = code in (-signal.SIGKILL, -signal.SIGSEGV) or b"MemoryError" in data["stderr"][-4000:]
        if killed_by is None and out_of_memory:
            killed_by = "memory"
        return {
            "exit_code": code,
            "stdout": base64.b64encode(data["stdout"]).decode(),
            "stderr": base64.b64encode(data["stderr"]).decode(),
            "channel": base64.b64encode(data["channel"]).decode(),
            "duration": time.monotonic() - start,
            "timed_out": killed_by == "timeout",
            "killed_by": killed_by,
            "truncated": truncated,
        }

    def _child(self, req, pipes, limits):
        code = 127
        try:
            os.setsid()
            for fd, (read_end, write_end) in enumerate(pipes):
                os.dup2(read_end if fd == 0 else write_end, fd)
            os.closerange(len(pipes), 65536)
            os.chdir(self.workdir)
            os.umask(0o022)
            mb = 1024 * 1024
            cpu = int(limits.get("cpu_seconds", 10))
            for res, value in (
                (resource.RLIMIT_CPU, (cpu, cpu + 1)),
                (resource.RLIMIT_AS, (limits.get("memory_mb", 1024) * mb,) * 2),
                (resource.RLIMIT_FSIZE, (limits.get("file_size_mb", 16) * mb,) * 2),
                (resource.RLIMIT_NOFILE, (limits.get("open_files", 64),) * 2),
                (resource.RLIMIT_NPROC, (limits.get("processes", 64),) * 2),
                (resource.RLIMIT_CORE, (0, 0)),
            ):
                resource.setrlimit(res, value)
            _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if self.drop:
                os.setgroups([])
                os.setgid(self.job_gid)
                os.setuid(self.job_uid)
            env = {str(k): str(v) for k, v in (req.get("env") or {}).items()}
            if req.get("script") is not None:
                code = _run_script(req["script"], env)
            else:
                argv = req["argv"]
                os.execvpe(argv[0], argv, env)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # the job could not start: say why on its stderr
            traceback.print_exc()
            code = 127
        finally:
            os._exit(code)

    def _reap(self):
        """Kill every process left under the job uid (background jobs, escaped sessions)."""
        if not self.drop:
            return
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(self.job_gid)
                os.setuid(self.job_uid)
                os.kill(-1, signal.SIGKILL)  # every process of the job uid; never the caller
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        _reap_children()


def _has_children():
    """Any descendant of a finished job still alive? As a child subreaper, every survivor of a
    dead job has become our child — so no children means nothing survived (no reaper needed)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)  # raises only if none
        return True
    except ChildProcessError:
        return False


def _reap_children():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _run_script(source, env):
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["-c"]
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(source, "<job>", "exec"), namespace)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return code


def _collect(pid, stdin_fd, stdin, streams, deadline, cap):
    """Feed stdin and drain the job's outputs until they close or the deadline passes."""
    sel = selectors.DefaultSelector()
    data = {"stdout": b"", "stderr": b"", "channel": b""}
    for fd, name in streams.items():
        sel.register(fd, selectors.EVENT_READ, name)
    view = memoryview(stdin)
    if view:
        os.set_blocking(stdin_fd, False)
        sel.register(stdin_fd, selectors.EVENT_WRITE, "stdin")
    else:
        os.close(stdin_fd)
    killed_by, truncated, exited_at = None, False, None
    while any(key.data != "stdin" for key in sel.get_map().values()):
        now = time.monotonic()
        if now >= deadline:
            killed_by = "timeout"
            break
        if exited_at is None and os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            exited_at = now  # the job is gone: whatever still holds a pipe is an orphan
        if exited_at is not None and now - exited_at > 0.2:
            break
        for key, _ in sel.select(timeout=min(deadline - now, 0.05)):
            if key.data == "stdin":
                try:
                    view = view[os.write(key.fd, view[:65536]) :]
                except OSError:
                    view = view[:0]
                if not view:
                    sel.unregister(key.fd)
                    os.close(key.fd)
                continue
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fd)
                os.close(key.fd)
                continue
            room = cap - len(data[key.data])
            data[key.data] += chunk[: max(room, 0)]
            if len(chunk) > room:
                truncated = True
                killed_by = "output"
        if killed_by:
            break
    if killed_by or exited_at is not None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for key in list(sel.get_map().values()):
        sel.unregister(key.fd)
        os.close(key.fd)
    sel.close()
    return data, killed_by, truncated


# ---------------------------------------------------------------------- transport
def _recv(conn):
    header = _recv_exact(conn, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return json.loads(_recv_exact(conn, size))


def _recv_exact(conn, size):
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _send(conn, obj):
    payload = json.dumps(obj).encode()
    conn.sendall(struct.pack(">I", len(payload)) + payload)


def serve(server, sock_path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    listener.bind(sock_path)
    os.chmod(sock_path, 0o600)
    listener.listen(1)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, _ = listener.accept()
        with conn:
            while True:
                req = _recv(conn)
                if req is None:
                    break
                if req.get("op") == "shutdown":
                    _send(conn, {"ok": True})
                    server._reap()
                    return
                try:
                    result = getattr(server, "op_" + str(req.get("op")))(req)
                    _send(conn, {"ok": True, **result})
                except Exception as exc:
                    _send(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
                if server.reap_pending:
                    server.reap_pending = False
                    server._reap()


def main(argv):
    # Started with -s -S (not -I, which would ignore PYTHONHASHSEED): drop our own folder from
    # the path, as -I would, so a job's imports never resolve to files beside this server.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p not in ("", here)]
    args = dict(zip(argv[0::2], argv[1::2], strict=True))
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans come back to us to be reaped
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the host process died: so do we
    workdir = args["--workdir"]
    if args.get("--isolate") == "1":
        stash = os.path.join(os.path.dirname(args["--socket"]), "interpreter")
        isolate_host_process(workdir, int(args.get("--tmpfs-mb", "256")), stash)
    uid = int(args["--job-uid"]) if "--job-uid" in args else None
    gid = int(args.get("--job-gid", args.get("--job-uid", "0"))) if uid is not None else None
    serve(Server(workdir, uid, gid), args["--socket"])


if __name__ == "__main__":
    main(sys.argv[1:])
