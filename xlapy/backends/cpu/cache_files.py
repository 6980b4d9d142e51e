"""The disk cache's file system side: a directory nobody else can write, a per-user key,
entries read without following links or blocking, and a size bound.

Everything here works relative to one file descriptor of the cache directory, opened
with ``O_NOFOLLOW | O_DIRECTORY`` and checked with ``fstat`` (:meth:`CacheDirectory.open`),
so the directory that was checked is the one used even if its path is swapped later.

- **The directory** is created ``0700``. It is refused -- a warning, and the module is
  compiled without the disk cache -- when it is world-writable, or (unless
  ``XLAPY_CACHE_SHARED``, :class:`~xlapy.config.CacheSettings`) group-writable or owned by
  another user.
- **The key** (:data:`KEY_NAME`): 32 random bytes made once per cache directory, mode
  ``0600`` (``0640`` when shared), created atomically (written under a temporary name,
  then hard-linked to its name, which fails if another process got there first: every
  process ends up with the same key). A key file that is not a regular file of 32
  bytes, that others may read or write, or that another user owns (not shared) refuses
  the directory.
- **Entries** are opened with ``O_NOFOLLOW | O_NONBLOCK`` (a symbolic link fails, a FIFO
  cannot block the open), ``fstat`` ed (regular files only, at most the size bound) and
  read up to their size. A successful load touches the entry's times (the LRU order)
  when it may: in a shared directory another member's entry is read but not touched.
- **Writes** go to a fresh temporary name (``O_EXCL``) then ``rename`` over the entry.
- **The size bound** (:func:`evict`): after a store, while the entries' total size is
  above ``XLAPY_CACHE_MAX_BYTES``, the least recently used entry (oldest mtime) is removed.
"""
from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("xlapy.cpu")

SUFFIX = ".xcache"
TMP_PREFIX = ".tmp-"
KEY_NAME = "hmac-key"
KEY_BYTES = 32
STALE_TMP_SECONDS = 3600.0        # temporaries older than this were left by a crashed writer

_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_WARNED: set[tuple[str, str]] = set()


class Refused(Exception):
    """The cache directory or its key cannot be trusted (the message says why)."""


class NotRegularFile(ValueError):
    """An entry is not a regular file (a FIFO, a device, a directory, a symbolic link)."""


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def directory_problem(st: os.stat_result, shared: bool) -> str | None:
    """Why a directory with this ``fstat`` cannot hold a trusted cache, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_mode & stat.S_IWOTH:
        return f"it is world-writable (mode {_mode(st)})"
    if shared:
        return None
    if st.st_uid != os.geteuid():
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & stat.S_IWGRP:
        return f"it is group-writable (mode {_mode(st)})"
    return None


def key_problem(st: os.stat_result, shared: bool) -> str | None:
    """Why a key file with this ``fstat`` cannot be trusted, or None."""
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_size != KEY_BYTES:
        return f"it has {st.st_size} bytes, not {KEY_BYTES}"
    if shared:
        return (f"others may access it (mode {_mode(st)}, expected 0640 or stricter)"
                if st.st_mode & 0o007 or st.st_mode & stat.S_IWGRP else None)
    if st.st_uid != os.geteuid():
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o077:
        return f"others may access it (mode {_mode(st)}, expected 0600)"
    return None


def warn_once(path: Path, problem: str) -> None:
    if (str(path), problem) not in _WARNED:
        _WARNED.add((str(path), problem))
        log.warning("not using the cpu disk cache %s: %s; compiling without it (see the "
                    "threat model in docs/architecture.md; XLAPY_CACHE_SHARED=1 accepts a "
                    "directory shared by its group)", path, problem)


@dataclass
class CacheDirectory:
    """The checked cache directory: ``open()`` gives a descriptor and the key."""

    path: Path
    shared: bool = False

    def open(self) -> tuple[int, bytes]:
        """``(directory descriptor, key)``; the caller closes the descriptor. Raises
        :class:`Refused` (untrusted) or ``OSError`` (cannot create or open)."""
        try:
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except FileExistsError:
            pass                     # a symbolic link or a file: the open says which
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                         | os.O_CLOEXEC)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise Refused("it is a symbolic link or not a directory") from None
            raise
        try:
            problem = directory_problem(os.fstat(fd), self.shared)
            if problem:
                raise Refused(problem)
            return fd, self._key(fd)
        except BaseException:
            os.close(fd)
            raise

    def _key(self, dfd: int) -> bytes:
        for _ in range(3):
            try:
                return _read_key(dfd, self.shared)
            except FileNotFoundError:
                _create_key(dfd, self.shared)
        raise Refused("its key file keeps disappearing")


def _read_key(dfd: int, shared: bool) -> bytes:
    try:
        fd = os.open(KEY_NAME, _OPEN_FILE, dir_fd=dfd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Refused(f"its key file {KEY_NAME} is a symbolic link") from None
        raise
    try:
        problem = key_problem(os.fstat(fd), shared)
        if problem:
            raise Refused(f"its key file {KEY_NAME}: {problem}")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise Refused(f"its key file {KEY_NAME} changed while read")
    return data


def _create_key(dfd: int, shared: bool) -> None:
    """Write a new random key under a temporary name and link it to :data:`KEY_NAME`;
    losing the race to another process is fine (its key is then used)."""
    tmp = f"{TMP_PREFIX}{secrets.token_hex(8)}.key"
    fd = os.open(tmp, _CREATE_FILE, 0o600, dir_fd=dfd)
    try:
        try:
            os.fchmod(fd, 0o640 if shared else 0o600)
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, KEY_NAME, src_dir_fd=dfd, dst_dir_fd=dfd)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp, dir_fd=dfd)


def read_entry(dfd: int, name: str, limit: int, shared: bool) -> bytes:
    """The bytes of entry ``name``: ``FileNotFoundError`` when absent,
    :class:`NotRegularFile` or ``ValueError`` when it is no regular file of ours of at
    most ``limit`` bytes. A successful read touches the entry's times (LRU)."""
    try:
        fd = os.open(name, _OPEN_FILE, dir_fd=dfd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegularFile("a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"not a regular file (mode {st.st_mode:o})")
        if not shared and st.st_uid != os.geteuid():
            raise ValueError(f"owned by uid {st.st_uid}")
        if st.st_size > limit:
            raise ValueError(f"{st.st_size} bytes, more than the bound of {limit}")
        chunks, left = [], st.st_size + 1      # one byte more: a file that grew is bad
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) != st.st_size:
            raise ValueError("the file changed while it was read")
        try:
            os.utime(fd)
        except PermissionError:
            pass        # another member's entry in a shared cache: read, not ours to touch
        return data
    finally:
        os.close(fd)


def write_entry(dfd: int, name: str, data: bytes, shared: bool) -> None:
    """Write ``data`` as entry ``name`` atomically (a fresh temporary, then rename)."""
    tmp = f"{TMP_PREFIX}{secrets.token_hex(8)}{SUFFIX}"
    fd = os.open(tmp, _CREATE_FILE, 0o600, dir_fd=dfd)
    try:
        try:
            if shared:
                os.fchmod(fd, 0o640)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise


def remove(dfd: int, name: str) -> bool:
    """Unlink ``name``; whether it is gone (False: it cannot be removed, e.g. another
    member's entry in a shared directory with the sticky bit)."""
    try:
        os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def evict(dfd: int, max_bytes: int, keep: str) -> list[str]:
    """Remove least recently used entries (oldest mtime first, never ``keep``) until the
    entries' total size is at most ``max_bytes``; also temporaries a crashed writer left.
    Returns the names removed (an entry that cannot be removed is passed over)."""
    return evict_counting(dfd, max_bytes, keep)[0]


def evict_counting(dfd: int, max_bytes: int, keep: str) -> tuple[list[str], int]:
    """:func:`evict`, also returning the entries' total size left in the directory."""
    entries, total, now = [], 0, time.time()
    with os.scandir(dfd) as it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if e.name.startswith(TMP_PREFIX):
                if now - st.st_mtime > STALE_TMP_SECONDS:
                    remove(dfd, e.name)
            elif e.name.endswith(SUFFIX):
                entries.append((st.st_mtime_ns, e.name, st.st_size))
                total += st.st_size
    removed = []
    for _, name, size in sorted(entries):
        if total <= max_bytes:
            break
        if name != keep and remove(dfd, name):
            removed.append(name)
            total -= size
    return removed, total


__all__ = ["CacheDirectory", "KEY_NAME", "NotRegularFile", "Refused", "SUFFIX", "evict",
           "evict_counting",
           "read_entry", "remove", "warn_once", "write_entry"]
