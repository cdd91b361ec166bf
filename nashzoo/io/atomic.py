"""Atomic, durable writes that leave nothing behind, a folder lock, and dying with the parent.

* :func:`atomic_write_bytes` writes a temporary file BESIDE its target (same folder, so the final
  rename is atomic and a killed write never leaves anything in the system temp folder), named
  ``.<target>.<random>.nashzoo-tmp``; :func:`remove_stale_temp_files` deletes the ones a killed
  process left, and every command that writes a folder calls it when it takes the folder's lock.
* :func:`folder_lock` makes one process at a time the writer of an output folder (an OS lock,
  released by the kernel when the process dies, even by ``kill -9``).
* :func:`exit_with_parent` is for worker processes: when their parent dies they remove the
  temporary files of the writes they have in flight and exit, instead of idling forever.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from nashzoo._locks import ForkSafeLock

TEMP_SUFFIX = ".nashzoo-tmp"
LOCK_NAME = ".nashzoo.lock"


def _process_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _process_umask()  # read once, at import: changing it later would race other threads
_IN_FLIGHT: set[str] = set()  # temporary files of writes not yet renamed into place
_IN_FLIGHT_LOCK = ForkSafeLock()


def atomic_write_bytes(
    path: str | os.PathLike[str],
    data: bytes | Iterable[bytes],
    *,
    durable: bool = True,
    keep_mode: bool = False,
) -> None:
    """Write ``data`` to ``path`` atomically and durably (:func:`atomic_file`). ``data`` may
    come in chunks (an iterable of bytes), so a large file need not be held whole; a chunk that
    fails to come leaves the old file."""
    with atomic_file(path, durable=durable, keep_mode=keep_mode) as handle:
        for chunk in [data] if isinstance(data, (bytes, bytearray, memoryview)) else data:
            handle.write(chunk)


@contextlib.contextmanager
def atomic_file(
    path: str | os.PathLike[str], *, durable: bool = True, keep_mode: bool = False
) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through, atomically and durably: a temporary file in
    the same folder, flushed to disk when the block ends, then renamed over ``path`` (readers
    see the old or the new file, never a part of one, even after a crash); an exception in the
    block removes it and leaves the old file. For a writer that wants a file, not bytes
    (``np.savez``): the file is never held whole in memory.

    ``durable=False`` leaves out the two flushes to disk (about 7 ms a file here): the write is
    still atomic for every process (a killed writer leaves the old file or the new one), but a
    power cut soon after may leave the file empty. Only for many small files whose reader
    checks each one (a checksum) and can make a damaged one again, as a tournament's pairings.

    The new file gets the permissions a plain ``open()`` would give (``0o666`` less the
    umask, not ``mkstemp``'s private ``0o600``); with ``keep_mode``, a file already at ``path``
    keeps its own (a document rewritten in place, such as BENCHMARKS.md by the benchmarks)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    if keep_mode:
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(path.stat().st_mode)
    tmp = str(path.parent / _temp_name(path.name))
    with _IN_FLIGHT_LOCK:
        _IN_FLIGHT.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 & ~_UMASK)
        if mode is not None:
            os.chmod(tmp, mode)  # exactly the old file's: open() masks its mode with the umask
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError) and _is_a_write_failure(err, tmp):
            raise FileWriteError.of(err, path) from err
        raise
    finally:
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.discard(tmp)
    if durable:
        _fsync_folder(path.parent)


NAME_MAX = 255
"""The longest file name (bytes) the usual file systems take (ext4, XFS, APFS, NTFS)."""


def _temp_name(name: str) -> str:
    """The temporary file's name beside ``name``: hidden, random, with :data:`TEMP_SUFFIX`;
    a long ``name`` is cut so the whole stays within :data:`NAME_MAX` bytes (a legal name of
    230-255 bytes used to fail with ``File name too long``, naming the temporary file)."""
    tail = f".{secrets.token_hex(6)}{TEMP_SUFFIX}"
    room = NAME_MAX - 1 - len(tail.encode())
    raw = os.fsencode(name)  # a name's bytes as the file system has them, undecodable ones too
    if len(raw) > room:
        raw = raw[:room]
        while raw and os.fsdecode(raw).encode("utf-8", "surrogateescape") != raw:
            raw = raw[:-1]  # not in the middle of a character
    return f".{os.fsdecode(raw)}{tail}"


_WRITE_HINTS = {
    errno.ENOSPC: "free some space and run the command again",
    getattr(errno, "EDQUOT", errno.ENOSPC): "free some space under your quota and run the "
    "command again",
    errno.EFBIG: "the file is larger than this process may write (ulimit -f): raise the limit "
    "and run the command again",
    errno.EACCES: "the folder is not writable: fix its permissions or choose another place",
    errno.EPERM: "the folder is not writable: fix its permissions or choose another place",
    errno.EROFS: "the file system is read-only: choose another place",
    errno.ENAMETOOLONG: "the path is too long for this file system: choose a shorter one",
}
"""What to do about a failed write, by its errno."""


def _is_a_write_failure(err: OSError, tmp: str) -> bool:
    """Whether ``err`` is the write's own failure (a full disk, no permission, a folder in the
    way), not one from the caller's block or chunks (a source that failed, a reader gone),
    which goes on as it was raised."""
    return err.filename in (None, tmp) and (err.errno in _WRITE_HINTS or err.errno == errno.EISDIR)


class FileWriteError(OSError):
    """A file could not be written (disk full, no permission, a folder in its place): the
    message names the file the caller asked for, not its temporary twin, and what to do; a file
    that was there is unchanged. Its ``errno`` is the failure's."""

    @classmethod
    def of(cls, err: OSError, path: Path) -> FileWriteError:
        """The error for ``err``, raised while writing ``path``."""
        if err.errno == errno.EISDIR or path.is_dir():
            text = f"cannot write {path}: it is a folder; give a file path"
        else:
            hint = _WRITE_HINTS.get(err.errno or 0, "a file already there is unchanged")
            text = f"cannot write {path} ({err.strerror or err}); {hint}"
        return cls(err.errno or 0, text)

    def __str__(self) -> str:
        return str(self.strerror)


def _fsync_folder(folder: Path) -> None:
    """Make a rename durable (not possible on every platform: then it is skipped)."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def remove_stale_temp_files(folder: str | os.PathLike[str]) -> int:
    """Delete the temporary files of interrupted atomic writes under ``folder`` (recursively);
    return how many. Call it only while holding the folder's :func:`folder_lock`."""
    removed = 0
    root = Path(folder)
    if not root.is_dir():
        return 0
    for tmp in root.rglob(f".*{TEMP_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


class FolderLockedError(OSError):
    """Another process holds the folder's lock."""


class OutputFolderError(OSError):
    """An output folder that cannot be written (the message names the option and the fix)."""


def check_output_folder(folder: str | os.PathLike[str], option: str = "--out") -> Path:
    """``folder`` as a Path once it is known to be (or to be creatable as) a writable folder;
    commands call this before any work, so a bad ``--out`` never throws a finished run away."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise OutputFolderError(f"{option} {folder} is a file, not a folder; give a folder path")
    if path.is_symlink() and not path.exists():  # mkdir said only "File exists"
        raise OutputFolderError(
            f"{option} {folder} is a link to {os.readlink(path)}, which does not exist; create "
            "that folder or give another path"
        )
    missing = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputFolderError(
            f"{option} {folder}: cannot create the folder ({err.strerror or err})"
        ) from None
    if missing:  # folder_lock removes it again if the command writes nothing there
        _MADE_BY_CHECK.add(path.resolve())
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputFolderError(f"{option} {folder} is not writable; choose another folder")
    return path


_MADE_BY_CHECK: set[Path] = set()
"""Folders :func:`check_output_folder` created in this process (for :func:`folder_lock`)."""


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike[str], what: str = "output folder") -> Iterator[Path]:
    """Hold ``folder``'s lock for the ``with`` block (created if missing); a second holder is
    refused at once with :class:`FolderLockedError` naming the process that writes it. A folder
    the block created and left holding nothing but the lock (a command that failed or was
    interrupted before it wrote anything) is removed on the way out: it used to stay, empty
    but for ``.nashzoo.lock``."""
    folder = Path(folder)
    created = not folder.exists() or folder.resolve() in _MADE_BY_CHECK
    _MADE_BY_CHECK.discard(folder.resolve())
    folder.mkdir(parents=True, exist_ok=True)
    lock_path = folder / LOCK_NAME
    writable = True
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666 & ~_UMASK)
    except PermissionError:
        # Another user's lock file in a folder shared by a group (0o644 under the usual umask):
        # a lock needs no write access to its file, only the owner's pid is not written.
        fd = os.open(lock_path, os.O_RDONLY)
        writable = False
    held = False
    locker = os.getpid()
    try:
        if not _try_lock(fd, folder):
            os.lseek(fd, 0, os.SEEK_SET)
            owner = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            holder = (  # a lock is per open file: this process's other threads are refused too
                f"this process (pid {owner}: another thread, or a call not finished yet)"
                if owner == str(os.getpid())
                else f"another nashzoo process (pid {owner})"
            )
            raise FolderLockedError(
                f"{folder} is being written by {holder}; wait for it to finish or choose "
                f"another {what}"
            )
        held = True
        with _HELD_LOCKS_LOCK:
            _HELD_LOCKS.add(fd)
        if writable:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(os.getpid()).encode())
        yield folder
    finally:
        if os.getpid() == locker:  # a child forked in the block closed its copy at the fork
            with _HELD_LOCKS_LOCK:
                _HELD_LOCKS.discard(fd)
            if created and held:  # never a refused process: the folder is the holder's
                _remove_if_only_the_lock(folder, lock_path)
            os.close(fd)  # closing releases the lock


_HELD_LOCKS: set[int] = set()
"""The descriptors of the folder locks this process holds now (:func:`_close_inherited_locks`)."""
_HELD_LOCKS_LOCK = ForkSafeLock()


def _close_inherited_locks() -> None:
    """In a child just forked, close its copies of the parent's folder-lock descriptors.

    A lock taken with ``flock`` belongs to the open file, which a forked child shares: a
    process pool forked while a folder was locked (a race's ``on_done`` or a Trainer callback
    that starts a ``fork`` pool, as ``ProcessPoolExecutor`` on Linux does by default) kept the
    folder locked for as long as its workers lived, after the race had finished, and the same
    process's ``resume=True`` was refused as "being written by this process". The child never
    writes the parent's folder; closing its copies leaves the parent's lock as it is."""
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()  # (the lock beside it is a ForkSafeLock: new in the child)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


def _remove_if_only_the_lock(folder: Path, lock_path: Path) -> None:
    """Remove ``folder`` when the lock file is all it holds (still locked while it goes)."""
    with contextlib.suppress(OSError):  # anything in the way (Windows' open file): it stays
        if [entry.name for entry in folder.iterdir()] == [lock_path.name]:
            lock_path.unlink()
            folder.rmdir()


def _try_lock(fd: int, folder: Path) -> bool:
    """Take the lock on ``fd``; False: another process holds it. A file system that has no
    locks (Lustre without ``-o flock``: ENOSYS; NFS mounted ``nolock``: ENOLCK) used to read
    as "being written by another nashzoo process" for ever; now the work goes on unlocked,
    with a warning that says so."""
    if sys.platform == "win32":  # the C runtime's byte-range lock
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as err:
        if err.errno not in _NO_LOCKS:
            raise
        warnings.warn(
            f"{folder} is on a file system without file locks ({err.strerror}): it is written "
            "unlocked, so make sure no other nashzoo command writes it at the same time",
            stacklevel=4,
        )
    return True


_NO_LOCKS = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF}
"""A file system's answers to flock that mean it keeps no locks (not that one is held); EBADF:
NFS emulates flock with byte-range locks, which a read-only descriptor (another user's lock
file) cannot take."""


def exit_with_parent(parent_pid: int, poll_seconds: float = 0.2) -> None:
    """Watch ``parent_pid`` from a daemon thread; when it is gone (this process was re-parented),
    remove the temporary files of this process's writes in flight and exit at once.

    A pool worker calls this when it starts, so a parent killed with ``kill -9`` (which cannot
    stop its children) leaves no idle workers and no partial files behind.
    """

    def watch() -> None:
        stop = threading.Event()
        while not stop.wait(poll_seconds):
            if os.getppid() != parent_pid:
                with _IN_FLIGHT_LOCK:
                    for tmp in list(_IN_FLIGHT):
                        with contextlib.suppress(OSError):
                            os.unlink(tmp)
                os._exit(1)

    if os.getppid() != parent_pid:  # the parent died before this worker got going
        os._exit(1)
    threading.Thread(target=watch, name="nashzoo-exit-with-parent", daemon=True).start()
