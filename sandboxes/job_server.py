"""The in-sandbox job server: one per sandbox, the same on every backend.

Started as ``python -s -S job_server.py --socket PATH --workdir DIR --job-uid N [...]``
(standard library only: it runs inside a bubblewrap jail or a container too). It serves one
client over a Unix socket with length-prefixed JSON frames (payloads base64): exec, write,
read, list, snapshot, restore, reset, ping. The host parses nothing but JSON from it.

Three kinds of process, so that no job ever sees another job's data:

* the **server** speaks to the host; it holds job payloads (inputs, outputs, reports) and
  never runs job code;
* the **zygote** is forked from the server once, at start, before any payload exists, and never
  receives one: per job it gets only pipe descriptors (SCM_RIGHTS) and forks;
* each **job** is a fork of the zygote. It reads its own spec (argv or script, env, limits)
  from the head of its stdin pipe, then starts a new session, takes its pipes as 0/1/2 (and 3,
  the side channel), closes everything else, sets rlimits, drops to the sandbox's uid, sets
  no-new-privileges and a seccomp filter, and execs ``argv`` or runs a Python ``script``.

The server enforces the deadline itself, from outside the job and independent of its pipes:
at the deadline it kills the job's process group and then every process of the job uid (the
uid is the sandbox's alone). Memory and process limits bind the whole job through the cgroup
the zygote joins at start (descriptors passed by the host), on top of per-process rlimits.
Every path the server touches under the work dir is resolved one component at a time with
``O_NOFOLLOW`` from a directory descriptor, so a job that swaps a folder for a symlink cannot
steer a root-run write, read, list, snapshot or restore out of the work dir.

The ``local`` backend also asks the server (``--jail``) to build its own minimal root: a
private mount, network and IPC namespace; a tmpfs root holding only the system folders and the
interpreter, read-only, with every site-packages folder masked; a private /proc, /dev, /tmp,
/var/tmp, /dev/shm and /dev/mqueue; then ``pivot_root``, so nothing else of the host exists.
"""

import base64
import gc
import json
import os
import platform
import resource
import secrets
import select
import selectors
import signal
import socket
import stat
import struct
import sys
import time
import traceback

MAX_FRAME = 64 * 1024 * 1024
MAX_DEPTH = 512  # list / snapshot refuse deeper trees (reset handles any depth)
MAX_ENTRIES = 200_000

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 0x4000, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_LIBC: list = []


def _libc():
    # ctypes is imported here, never at module level: the zygote (and so every job) runs this
    # file without ever loading it, so a job cannot reach native calls it did not import itself
    import ctypes

    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _check(result, what):
    import ctypes

    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


# ---------------------------------------------------------------------- seccomp
# Syscalls no job needs and an escape would: namespaces, mounts, keyrings, eBPF, perf,
# tracing or reading other processes, io_uring (it bypasses seccomp), kernel modules.
_DENIED = {
    "x86_64": {
        "ptrace": 101, "syslog": 103, "vhangup": 153, "pivot_root": 155, "adjtimex": 159,
        "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166,
        "swapon": 167, "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173,
        "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212,
        "clock_settime": 227, "kexec_load": 246, "add_key": 248, "request_key": 249,
        "keyctl": 250, "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303,
        "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308, "process_vm_readv": 310,
        "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320,
        "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_getfd": 438,
        "process_madvise": 440, "mount_setattr": 442,
    },
    "aarch64": {
        "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51,
        "vhangup": 58, "quotactl": 60, "acct": 89, "unshare": 97, "kexec_load": 104,
        "init_module": 105, "delete_module": 106, "clock_settime": 112, "syslog": 116,
        "ptrace": 117, "reboot": 142, "settimeofday": 170, "adjtimex": 171, "add_key": 217,
        "request_key": 218, "keyctl": 219, "swapon": 224, "swapoff": 225,
        "perf_event_open": 241, "name_to_handle_at": 264, "open_by_handle_at": 265,
        "clock_adjtime": 266, "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271,
        "kcmp": 272, "finit_module": 273, "bpf": 280, "userfaultfd": 282,
        "kexec_file_load": 294, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_getfd": 438,
        "process_madvise": 440, "mount_setattr": 442,
    },
}  # fmt: skip
_ARCH = {"x86_64": (0xC000003E, 56, 435), "aarch64": (0xC00000B7, 220, 435)}  # audit arch, clone, clone3
_NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
EPERM, ENOSYS = 1, 38


def seccomp_program():
    """The job filter as a classic-BPF program, or None where the architecture is unknown."""
    machine = platform.machine()
    if machine not in _ARCH:
        return None
    audit_arch, clone_nr, clone3_nr = _ARCH[machine]
    allow, kill = 0x7FFF0000, 0x80000000
    errno = 0x00050000
    ins = []

    def op(code, k, jt=0, jf=0):
        ins.append(struct.pack("HBBI", code, jt, jf, k))

    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    op(ld, 4)  # seccomp_data.arch
    op(jeq, audit_arch, 1, 0)
    op(ret, kill)  # another ABI (i386 via int 0x80): numbers differ, so nothing else is safe
    op(ld, 0)  # seccomp_data.nr
    if machine == "x86_64":
        op(jset, 0x40000000, 0, 1)  # the x32 ABI
        op(ret, errno | ENOSYS)
    for nr in sorted(_DENIED[machine].values()):
        op(jeq, nr, 0, 1)
        op(ret, errno | EPERM)
    op(jeq, clone3_nr, 0, 1)  # its flags are behind a pointer: refuse, libc falls back to clone
    op(ret, errno | ENOSYS)
    op(jeq, clone_nr, 0, 3)
    op(ld, 16)  # args[0], low word: clone flags
    op(jset, _NAMESPACE_FLAGS, 0, 1)
    op(ret, errno | EPERM)
    op(ret, allow)
    return b"".join(ins)


class SeccompFilter:
    """A classic-BPF filter, installed with one prctl (inherited across fork and exec)."""

    def __init__(self, program):
        import ctypes

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self._buffer = ctypes.create_string_buffer(program, len(program))
        self._fprog = SockFprog(len(program) // 8, ctypes.cast(self._buffer, ctypes.c_void_p))

    def install(self):
        import ctypes

        _check(_libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._fprog), 0, 0), "seccomp")


# ---------------------------------------------------------------------- the local jail
def build_jail(spec, workdir):
    """Local backend, as root: a private mount/network/IPC namespace and a minimal root.

    ``spec``: {"root": scratch dir to build in, "binds": [host paths, read-only],
    "masks": [paths hidden under an empty read-only tmpfs], "links": {path: target},
    "work_mb": size of the work dir}.
    """
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    root = spec["root"]
    os.makedirs(root, mode=0o700, exist_ok=True)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path in spec["binds"]:
        target = root + path
        os.makedirs(target, mode=0o755, exist_ok=True)
        _check(libc.mount(path.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {path}")
        _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    for path in spec["masks"]:
        if os.path.isdir(root + path):
            _mount("tmpfs", root + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0755")
    for path, target in spec["links"].items():
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        os.symlink(target, root + path)
    small = "mode=1777,size=64m,nr_inodes=65536"
    for path, fstype, options in (
        ("/proc", "proc", "hidepid=invisible"),
        ("/dev", "tmpfs", "mode=0755,size=64k"),
        ("/tmp", "tmpfs", small),
        ("/var/tmp", "tmpfs", small),
        (workdir, "tmpfs", f"mode=0755,size={spec['work_mb']}m,nr_inodes=262144"),
    ):
        os.makedirs(root + path, mode=0o755, exist_ok=True)
        _mount(fstype, root + path, fstype, MS_NOSUID | MS_NODEV, options)
    for node in ("null", "zero", "full", "random", "urandom", "tty"):
        open(f"{root}/dev/{node}", "w").close()
        _mount(f"/dev/{node}", f"{root}/dev/{node}", None, MS_BIND, None)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{root}/dev/{name}")
    for path, fstype, extra in (("/dev/shm", "tmpfs", small), ("/dev/mqueue", "mqueue", None)):
        os.makedirs(root + path, exist_ok=True)
        _mount(fstype, root + path, fstype, MS_NOSUID | MS_NODEV, extra)
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.chdir(root)
    pivot_root = {"x86_64": 155, "aarch64": 41}[platform.machine()]
    _check(libc.syscall(pivot_root, b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "detach the host root")
    os.chdir("/")


def _mount(source, target, fstype, flags, options):
    def enc(value):
        return value.encode() if isinstance(value, str) else value

    _check(_libc().mount(enc(source), enc(target), enc(fstype), flags, enc(options)), f"mount {target}")


# ---------------------------------------------------------------------- paths beneath the work dir
def _parts(rel):
    parts = [p for p in str(rel).split("/") if p not in ("", ".")]
    if str(rel).startswith("/") or ".." in parts or not parts or "\x00" in str(rel):
        raise PermissionError(f"path {rel!r} is not a relative path inside the work dir")
    return parts


class Tree:
    """The work dir, touched only through descriptors (no symlink is ever followed)."""

    def __init__(self, root, uid, gid):
        self.root, self.uid, self.gid = root, uid, gid

    def open_dir(self, parts, create=False):
        fd = os.open(self.root, OPEN_DIR)
        try:
            for part in parts:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                        self._own(part, fd)
                    except FileExistsError:
                        pass
                try:
                    child = os.open(part, OPEN_DIR, dir_fd=fd)
                except OSError as exc:  # ELOOP / ENOTDIR: a symlink or a file where a folder was
                    raise PermissionError(f"{'/'.join(parts)!r} is not a folder inside the work dir") from exc
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _own(self, name, dir_fd):
        if self.uid is not None:
            os.chown(name, self.uid, self.gid, dir_fd=dir_fd, follow_symlinks=False)

    def write(self, rel, data, mode):
        parts = _parts(rel)
        dfd = self.open_dir(parts[:-1], create=True)
        tmp = f".gymhub-write-{secrets.token_hex(8)}"
        try:
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd
            )
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode & 0o7777 & ~0o6000)
                if self.uid is not None:
                    os.fchown(fd, self.uid, self.gid)
            finally:
                os.close(fd)
            os.rename(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)  # never opens the old entry
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
        finally:
            os.close(dfd)

    def read(self, rel, max_bytes):
        parts = _parts(rel)
        dfd = self.open_dir(parts[:-1])
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        finally:
            os.close(dfd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise PermissionError(f"{rel!r} is not a regular file")
            chunks, left = [], max_bytes + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def walk(self, with_data):
        """Every entry as (path, kind, data-or-target, mode, size), sorted by path (so a folder
        comes before what it holds). Depth-first with one open descriptor per level; bounded
        depth and count, so a hostile tree cannot wedge the server."""
        out = []
        root = os.open(self.root, OPEN_DIR)
        stack = [(root, "", _entries(root))]
        try:
            while stack:
                fd, prefix, entries = stack[-1]
                if not entries:
                    os.close(fd)
                    stack.pop()
                    continue
                entry = entries.pop()
                rel = prefix + entry.name
                info = entry.stat(follow_symlinks=False)
                mode = stat.S_IMODE(info.st_mode)
                if stat.S_ISLNK(info.st_mode):
                    out.append((rel, "symlink", os.readlink(entry.name, dir_fd=fd), mode, info.st_size))
                elif stat.S_ISDIR(info.st_mode):
                    out.append((rel, "dir", None, mode, info.st_size))
                    if len(stack) >= MAX_DEPTH:
                        raise OSError(f"the work dir is deeper than {MAX_DEPTH} levels")
                    child = os.open(entry.name, OPEN_DIR, dir_fd=fd)
                    stack.append((child, rel + "/", _entries(child)))
                elif stat.S_ISREG(info.st_mode):
                    data = self._read_at(fd, entry.name) if with_data else None
                    out.append((rel, "file", data, mode, info.st_size))
                if len(out) > MAX_ENTRIES:
                    raise OSError(f"more than {MAX_ENTRIES} entries in the work dir")
        except BaseException:
            for fd, _, _ in stack:
                os.close(fd)
            raise
        out.sort(key=lambda e: e[0])
        return out

    @staticmethod
    def _read_at(dir_fd, name):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def apply(self, entries):
        """Recreate a captured tree in the (wiped) work dir."""
        dirs = {"": os.open(self.root, OPEN_DIR)}
        try:
            for rel, kind, data, mode, _ in entries:
                parent, _, name = rel.rpartition("/")
                dfd = dirs[parent]
                if kind == "dir":
                    os.mkdir(name, 0o700, dir_fd=dfd)
                    fd = os.open(name, OPEN_DIR, dir_fd=dfd)
                    dirs[rel] = fd
                    os.fchmod(fd, mode)
                    if self.uid is not None:
                        os.fchown(fd, self.uid, self.gid)
                elif kind == "symlink":
                    os.symlink(data, name, dir_fd=dfd)
                    self._own(name, dfd)
                else:
                    fd = os.open(name, NEW_FILE, 0o600, dir_fd=dfd)
                    try:
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view) :]
                        os.fchmod(fd, mode)
                        if self.uid is not None:
                            os.fchown(fd, self.uid, self.gid)
                    finally:
                        os.close(fd)
        finally:
            for fd in dirs.values():
                os.close(fd)


def _entries(dir_fd):
    with os.scandir(dir_fd) as it:
        return list(it)


def wipe(path):
    """Empty a folder whatever is in it — any depth, any names — without recursion and without
    following a symlink: subfolders are renamed up to the top and emptied one by one."""
    try:
        top = os.open(path, OPEN_DIR)
    except FileNotFoundError:
        return
    nonce = secrets.token_hex(6)
    pending: list = [None]
    counter = 0
    try:
        while pending:
            name = pending.pop()
            try:
                dfd = top if name is None else os.open(name, OPEN_DIR, dir_fd=top)
            except FileNotFoundError:
                continue
            try:
                with os.scandir(dfd) as it:
                    entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
                for entry, is_dir in entries:
                    if not is_dir:
                        os.unlink(entry, dir_fd=dfd)
                    elif name is None:
                        pending.append(entry)
                    else:
                        moved = f".gymhub-wipe-{nonce}-{counter}"
                        counter += 1
                        os.rename(entry, moved, src_dir_fd=dfd, dst_dir_fd=top)
                        pending.append(moved)
            finally:
                if dfd != top:
                    os.close(dfd)
            if name is not None:
                os.rmdir(name, dir_fd=top)
    finally:
        os.close(top)


# ---------------------------------------------------------------------- the zygote and its jobs
def start_zygote(sock, uid, gid, workdir, cgroup_fds, source):
    """In the server's fresh child: join the cgroup, set the parent-death signal, the subreaper
    flag, no-new-privileges and the seccomp filter (all kept across exec and inherited by
    every job), then exec a new interpreter running this file as the zygote. The zygote so
    holds no memory of the server's and never loads ctypes."""
    code = 1
    try:
        for fd in cgroup_fds:  # the whole job — every process it starts — is bound by the cgroup
            os.write(fd, b"0")
            os.close(fd)
        libc = _libc()
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
        _check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "child subreaper")
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no-new-privileges")
        program = seccomp_program()
        if program is not None:
            SeccompFilter(program).install()
        os.set_inheritable(sock.fileno(), True)
        argv = [sys.executable, "-s", "-S", "-c", source, "--zygote", str(sock.fileno())]
        argv += ["--workdir", workdir]
        if uid is not None:
            argv += ["--job-uid", str(uid), "--job-gid", str(gid)]
        os.execve(sys.executable, argv, dict(os.environ))
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def zygote_main(sock, uid, gid, workdir):
    """Fork jobs on request; reap every child; report each job's exit. Never sees a payload."""
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    # everything alive now is the zygote's own and shared with every job: the collector never
    # walks it, so a job's collections do not copy-on-write the zygote's pages
    gc.collect()
    gc.freeze()
    sock.send(b"R")
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    job: list = [None]

    def reap():
        for pid, status in _reap_all():
            if pid == job[0]:  # the job itself: its exit status goes to the server
                job[0] = None
                sock.send(f"X {pid} {status} {int(_has_children())}".encode())

    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            while True:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    break
        reap()
        if sock not in ready:
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 8)
        except OSError:
            msg, fds = b"", []
        if not msg:
            os._exit(0)  # the server is gone
        if msg == b"W":  # the server killed stragglers: reap them before the next job
            deadline = time.monotonic() + 2
            while _has_children() and time.monotonic() < deadline:
                reap()
                time.sleep(0.002)
            reap()
            sock.send(b"w")
            continue
        pid = os.fork()
        if pid == 0:
            os.close(wake_r)
            os.close(wake_w)
            _job(sock, fds, uid, gid, workdir)
        for fd in fds:
            os.close(fd)
        job[0] = pid
        sock.send(f"P {pid}".encode())


def _write_proc(path, value):
    try:
        with open(path, "w") as fh:
            fh.write(value)
        return True
    except OSError:
        return False


def _reap_all():
    reaped: list = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status))


def _has_children():
    """Any descendant still alive? As a child subreaper, every survivor of a dead job has become
    our child, so no children means nothing survived."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)  # raises only if none
        return True
    except ChildProcessError:
        return False


def _read_exact(fd, size):
    chunks, left = [], size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            raise EOFError("the job's spec was cut short")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _job(sock, fds, uid, gid, workdir):
    code = 127
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        sock.close()
        os.setsid()
        (size,) = struct.unpack(">I", _read_exact(fds[0], 4))
        spec = json.loads(_read_exact(fds[0], size))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(len(fds), 1 << 20)
        os.chdir(workdir)
        os.umask(0o022)
        # the OOM killer takes any job process before the zygote (raising needs no privilege)
        _write_proc("/proc/self/oom_score_adj", "1000")
        limits = spec["limits"]
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
        queues = min(resource.getrlimit(resource.RLIMIT_MSGQUEUE)[1], 1 << 20)
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (queues, queues))
        if uid is not None:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
        if spec.get("script") is not None:
            code = _run_script(spec["script"], env)
        else:
            argv = spec["argv"]
            os.execvpe(argv[0], argv, env)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # the job could not start: say why on its stderr
        traceback.print_exc()
        code = 127
    finally:
        os._exit(code)


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


# ---------------------------------------------------------------------- the server
class Server:
    def __init__(self, workdir, job_uid, job_gid, cgroup_fds, scratch, source):
        self.workdir = workdir
        self.job_uid, self.job_gid = job_uid, job_gid
        self.drop = os.getuid() == 0 and job_uid is not None
        self.scratch = [p for p in scratch if os.path.isdir(p) and os.access(p, os.W_OK)]
        os.makedirs(self.workdir, exist_ok=True)
        if self.drop:
            os.chown(self.workdir, job_uid, job_gid)
        self.tree = Tree(self.workdir, job_uid if self.drop else None, job_gid)
        self.snapshots = {"pristine": self.tree.walk(with_data=True)}
        self.reap_pending = False
        self.inbox = []
        self.zygote_sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.seccomp = seccomp_program() is not None
        self.zygote = os.fork()
        if self.zygote == 0:
            self.zygote_sock.close()
            start_zygote(theirs, job_uid if self.drop else None, job_gid, self.workdir, cgroup_fds, source)
        theirs.close()
        self._zygote_wait("R", timeout=30)  # the zygote is up
        for fd in cgroup_fds:
            os.close(fd)

    # ------------------------------------------------------------------ files
    def op_write(self, req):
        self.tree.write(req["path"], base64.b64decode(req["data"]), int(req.get("mode", 0o644)))
        return {}

    def op_read(self, req):
        data = self.tree.read(req["path"], int(req.get("max_bytes", 16 * 1024 * 1024)))
        return {"data": base64.b64encode(data).decode()}

    def op_list(self, req):
        entries = [[rel, kind, size, mode] for rel, kind, _, mode, size in self.tree.walk(with_data=False)]
        return {"entries": entries}

    def op_snapshot(self, req):
        snap_id = f"s{len(self.snapshots)}"
        self.snapshots[snap_id] = self.tree.walk(with_data=True)
        return {"id": snap_id}

    def op_restore(self, req):
        if req["id"] not in self.snapshots:
            raise KeyError(f"no snapshot {req['id']!r}")
        if self.reap_pending:
            self._kill_job_processes(ipc=False)
        wipe(self.workdir)
        self.tree.apply(self.snapshots[req["id"]])
        return {}

    def op_reset(self, req):
        if not self.zygote_alive():
            raise RuntimeError("the zygote is gone; the sandbox is broken: replace it")
        ipc = _ipc_left()
        if ipc or self.reap_pending:
            self._kill_job_processes(ipc=ipc)
        for folder in self.scratch:
            wipe(folder)
        wipe(self.workdir)
        self.tree.apply(self.snapshots["pristine"])
        return {}

    def zygote_alive(self):
        """The zygote cannot be replaced (the server's memory is no longer pristine): once it is
        gone — an OOM kill, say — the sandbox is broken, and ping and reset say so."""
        try:
            pid, _ = os.waitpid(self.zygote, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid:
            self.zygote = -1
        return pid == 0 and self.zygote > 0

    def op_ping(self, req):
        if not self.zygote_alive():
            raise RuntimeError("the zygote is gone; the sandbox is broken: replace it")
        return {"pid": os.getpid(), "uid": os.getuid(), "workdir": self.workdir, "seccomp": self.seccomp}

    # ------------------------------------------------------------------ jobs
    def op_exec(self, req):
        limits = req.get("limits", {})
        cap = int(limits.get("max_output_bytes", 1_000_000))
        side = bool(req.get("side_channel"))
        pipes = [os.pipe2(os.O_CLOEXEC) for _ in range(4 if side else 3)]
        ours = [pipes[0][1]] + [r for r, _ in pipes[1:]]
        theirs = [pipes[0][0]] + [w for _, w in pipes[1:]]
        spec = json.dumps({k: req.get(k) for k in ("argv", "script", "env")} | {"limits": limits}).encode()
        stdin = struct.pack(">I", len(spec)) + spec + base64.b64decode(req.get("stdin", ""))
        start = time.monotonic()
        os.set_blocking(ours[0], False)
        try:
            sent = os.write(ours[0], stdin[:65536])  # the spec is waiting when the job starts
            socket.send_fds(self.zygote_sock, [b"J"], theirs)
        except OSError:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        streams = {ours[1]: "stdout", ours[2]: "stderr"}
        if side:
            streams[ours[3]] = "channel"
        data, killed_by, truncated, exit_msg = self._collect(
            ours[0], stdin[sent:], streams, start + float(req.get("timeout", 10.0)), cap
        )
        pid = self._zygote_wait("P", timeout=10)[0]
        if exit_msg is None or killed_by is not None or exit_msg[3] or self.reap_pending:
            # timeout, output cap, or survivors: nothing of the job outlives this reply
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._kill_job_processes(ipc=False)
            if exit_msg is None:
                exit_msg = ["X", *self._zygote_wait("X", timeout=5)]
        status = exit_msg[2]
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

    def _zygote_recv(self):
        msg = self.zygote_sock.recv(256).decode().split()
        if not msg:
            raise RuntimeError("the zygote is gone; the sandbox is broken")
        return [msg[0], *(int(x) for x in msg[1:])]

    def _zygote_wait(self, kind, timeout):
        """The zygote's next message of ``kind`` (P: pid; X: exit; w: reaped); others are kept."""
        deadline = time.monotonic() + timeout
        while True:
            for i, msg in enumerate(self.inbox):
                if msg[0] == kind:
                    return self.inbox.pop(i)[1:]
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.zygote_sock], [], [], max(left, 0))
            if not ready:
                raise RuntimeError("the zygote did not answer; the sandbox is broken")
            self.inbox.append(self._zygote_recv())

    def _collect(self, stdin_fd, stdin, streams, deadline, cap):
        """Feed stdin and drain the outputs until the job has exited and its pipes are closed,
        the deadline passes, or the output cap is hit. The job's exit comes from the zygote as
        one more event, so nothing here ever waits on the job itself."""
        sel = selectors.DefaultSelector()
        data = {"stdout": b"", "stderr": b"", "channel": b""}
        for fd, name in streams.items():
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ, name)
        view = memoryview(stdin)
        if view:
            sel.register(stdin_fd, selectors.EVENT_WRITE, "stdin")
        else:
            os.close(stdin_fd)
        exit_msg = next((m for m in self.inbox if m[0] == "X"), None)
        self.inbox = [m for m in self.inbox if m[0] != "X"]
        if exit_msg is None:
            sel.register(self.zygote_sock, selectors.EVENT_READ, "zygote")
        killed_by, truncated = None, False
        exited_at = time.monotonic() if exit_msg else None
        try:
            while True:
                now = time.monotonic()
                if exit_msg is not None and not any(k.data in data for k in sel.get_map().values()):
                    break  # exited, and every pipe drained
                if exited_at is not None and now - exited_at > 0.2:
                    self.reap_pending = True  # survivors still hold a pipe
                    break
                if now >= deadline:
                    killed_by = "timeout"
                    break
                for key, _ in sel.select(timeout=min(deadline - now, 0.05)):
                    if key.data == "stdin":
                        try:
                            view = view[os.write(key.fd, view[:65536]) :]
                        except BlockingIOError:
                            continue
                        except OSError:
                            view = view[:0]
                        if not view:
                            sel.unregister(key.fd)
                            os.close(key.fd)
                        continue
                    if key.data == "zygote":
                        msg = self._zygote_recv()
                        if msg[0] == "X":
                            exit_msg, exited_at = msg, time.monotonic()
                            sel.unregister(key.fd)
                        else:
                            self.inbox.append(msg)
                        continue
                    try:
                        chunk = os.read(key.fd, 65536)
                    except BlockingIOError:
                        continue
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
        finally:
            for key in list(sel.get_map().values()):
                sel.unregister(key.fd)
                if key.data != "zygote":
                    os.close(key.fd)
            sel.close()
        return data, killed_by, truncated, exit_msg

    def _kill_job_processes(self, ipc):
        """Kill every process of the job uid (background jobs, escaped sessions, stopped ones)
        and, with ``ipc``, remove the IPC objects and message queues left behind. The killer
        runs as the job uid (the sandbox's alone), so it can touch nothing else."""
        self.reap_pending = False
        if not self.drop:
            return
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.setgroups([])
                os.setgid(self.job_gid)
                os.setuid(self.job_uid)
                for _ in range(1000):  # until none is left (kill -1 spares the caller)
                    try:
                        os.kill(-1, signal.SIGKILL)
                    except ProcessLookupError:
                        break
                if ipc:
                    _remove_ipc()
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.waitpid(pid, 0)
        self.zygote_sock.send(b"W")  # the zygote reaps them before the next job starts
        self._zygote_wait("w", timeout=5)


def _ipc_left():
    """Any SysV object or POSIX message queue in our IPC namespace? (cheap: no fork)."""
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                if len(fh.read().splitlines()) > 1:
                    return True
        except OSError:
            pass
    try:
        return bool(os.listdir("/dev/mqueue"))
    except OSError:
        return False


def _remove_ipc():
    """SysV shared memory, semaphores, message queues and POSIX queues of our IPC namespace."""
    libc = _libc()
    for kind, remove in (("shm", libc.shmctl), ("sem", libc.semctl), ("msg", libc.msgctl)):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 1:
                remove(int(fields[1]), 0, None)  # IPC_RMID; only our own objects can go
    try:
        names = os.listdir("/dev/mqueue")
    except OSError:
        names = []
    for name in names:
        try:
            os.unlink(os.path.join("/dev/mqueue", name))
        except OSError:
            pass


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


def listen(sock_path):
    """Listen first, then publish the socket under its name: a client that sees the path can
    connect at once (no 'connection refused' between bind and listen)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = sock_path + ".staging"
    for path in (staging, sock_path):
        if os.path.lexists(path):
            os.unlink(path)
    listener.bind(staging)
    os.chmod(staging, 0o600)
    listener.listen(1)
    os.rename(staging, sock_path)
    return listener


def serve(server, listener):
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
                    server._kill_job_processes(ipc=True)
                    _send(conn, {"ok": True})
                    return
                try:
                    result = getattr(server, "op_" + str(req.get("op")))(req)
                    _send(conn, {"ok": True, **result})
                except Exception as exc:
                    _send(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
                if server.reap_pending:
                    server._kill_job_processes(ipc=False)


def main(argv):
    # Started with -s -S (not -I, which would ignore PYTHONHASHSEED): drop our own folder from
    # the path, as -I would, so a job's imports never resolve to files beside this server.
    here = os.path.dirname(os.path.abspath(globals().get("__file__", "/nonexistent/-c")))
    sys.path[:] = [p for p in sys.path if p not in ("", here)]
    args = dict(zip(argv[0::2], argv[1::2], strict=True))
    uid = int(args["--job-uid"]) if "--job-uid" in args else None
    gid = int(args.get("--job-gid") or args.get("--job-uid") or 0) if uid is not None else None
    if "--zygote" in args:
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        zygote_main(socket.socket(fileno=int(args["--zygote"])), uid, gid, args["--workdir"])
        return
    with open(os.path.abspath(__file__), encoding="utf-8") as fh:
        source = fh.read()  # for the zygote's exec: the file itself is not inside every jail
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the host process died: so do we
    _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no job uid may read our memory, whatever it does
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    workdir = args["--workdir"]
    listener = listen(args["--socket"])
    if "--jail" in args:
        build_jail(json.loads(args["--jail"]), workdir)
    cgroup_fds = [int(fd) for fd in str(args.get("--cgroup-fds", "")).split(",") if fd]
    # writable places besides the work dir, emptied on reset: only ones private to this sandbox
    scratch = [p for p in args.get("--scratch", "").split(",") if p]
    server = Server(workdir, uid, gid, cgroup_fds, scratch, source)
    serve(server, listener)


if __name__ == "__main__":
    main(sys.argv[1:])
