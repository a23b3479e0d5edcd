"""The persistent compile cache: compiled XLA programs survive the process.

x10array does not serialize executables itself: it plugs a store into jax's own persistent
compilation cache (`jax._src.compilation_cache`, which keys an entry by the program's
StableHLO, the jaxlib version, the platform and its version, the XLA flags, the compile
options and the devices, then serializes and compresses the executable). Only x10array's own
compiles use the store: they run inside `scope()`, which selects it for the thread (a context
variable, and jax's thread-local settings: the directory, no minimum compile time or entry
size), so a user's own `jax.jit` code keeps jax's defaults (and its own cache directory, if it
set one: calls outside a scope are passed to jax's cache for it).

What the store adds to jax's file cache:

- the directory: `X10ARRAY_COMPILE_CACHE_DIR`, else `$XDG_CACHE_HOME/x10array/xla`, else
  `~/.cache/x10array/xla`; empty or `0` turns the cache off. Entries go to a subdirectory
  named after the x10array, entry format, jax and jaxlib versions and the CPU
  (`x10array-<version>-entry<format>-jax-<version>-jaxlib-<version>-cpu-<hash>`, `_host`), so
  an entry written by another version or for another CPU is never read (jax's key already
  covers jaxlib, the XLA flags, the device kind and the compression, zstd or zlib, but not
  the host's instruction set, which XLA's CPU code is generated for);
- a checksum of its own: jax compresses an entry with zstd when the `zstandard` package is
  installed, and a zstd frame has no checksum, so a damaged entry could reach XLA's
  deserializer (which crashes on some damage, or loads a wrong program). Every file is
  `_MAGIC`, a BLAKE2b digest of the key and the bytes, their length, then jax's bytes; `get`
  verifies all of it before jax sees a byte, whichever the compression. An entry that fails
  (truncated, corrupted, not ours) is removed with a RuntimeWarning and the program is
  compiled again (and written again); so is one that jax fails to load;
- every write is atomic (a temporary file renamed into place), so two processes filling the
  cache at once never read a partial entry; the same key is the same program, so whichever
  write lands last is as good;
- a size bound, `X10ARRAY_COMPILE_CACHE_MB`, over x10array's own files under the directory
  (every version's folder, nothing else: pointed at a shared directory such as `~/.cache`, it
  never touches another tool's files): the least recently used entries (file modification
  time, touched at each load) are removed until the total fits. A process lists the
  directory at its first write, then only when the total it knows (that scan's plus its own
  writes since) would pass the bound, or a minute or more after its last scan (`written`):
  listing costs ~6.5 us an entry, which at every write would cost seconds per compile in a
  full cache. Temporary files count too; one older than `_STALE_SECONDS` (a write killed
  midway) is removed at the next scan, a younger one is left to the process writing it;
- counts of loads and writes per thread (`thread_counts`), from which the lazy backend tells
  a program loaded from the disk from a program compiled (`metrics().disk_cache_loads`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
import re
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

from . import settings

_SUFFIX = "-cache"
_FORMAT = 2  # of the entry files (1: jax's bytes alone, before the checksum)
_MAGIC = b"x10acc2\n"  # the start of every entry file (8 bytes)
_DIGEST_SIZE = 32
_HEAD = len(_MAGIC) + _DIGEST_SIZE + 8  # magic, digest, payload length
_STALE_SECONDS = 600.0  # a temporary file this old is a write that never finished
# what x10array writes under the cache's directory: its version folders, and in them entries
# and their temporary files (nothing else there is ever removed)
_FOLDER = re.compile(r"x10array-.+-jax-.+-jaxlib-.+")
_TEMPORARY = re.compile(r".+-cache\.\d+\.\d+\.tmp")
_OFF = object()  # the scope's value when the cache is off

# the store of the current scope (None: outside any scope)
_ACTIVE: contextvars.ContextVar[Any] = contextvars.ContextVar("x10array_compile_cache", default=None)
_COUNTS = threading.local()  # .loads, .writes: see thread_counts
_STORES: dict[str, _Store] = {}
_INSTALL_LOCK = threading.Lock()


def root() -> str | None:
    """The cache's directory (all versions), or None when the cache is off."""
    value = settings.get("X10ARRAY_COMPILE_CACHE_DIR")
    if value is None:  # unset: the default
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "x10array", "xla")
    return os.path.abspath(os.path.expanduser(value)) if value else None


def directory() -> str | None:
    """Where this version of x10array, jax and jaxlib keeps its entries for this CPU, or None
    when off."""
    top = root()
    return None if top is None else os.path.join(top, f"{_version_tag()}-cpu-{_host()}")


@functools.cache  # (one entry: the CPU of this process)
def _host() -> str:
    """The CPU that compiled programs are compiled for, as a short hash: its architecture and
    the instruction-set features the OS reports (/proc/cpuinfo's `flags` on x86, `Features` on
    ARM; the processor's name elsewhere). XLA's CPU compiler generates code for the host's
    instruction set, and jax's key names the platform only ("cpu"): a cache directory shared by
    machines of different CPUs (a home directory on a network) must not hand one the other's
    programs (an instruction it lacks, or other roundings; the subnormal probe,
    xla_numerics.xla_flushes, is a program too)."""
    import platform

    text = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    text += " " + " ".join(sorted(line.partition(":")[2].split()))
                    break
    except OSError:
        text += " " + platform.processor()
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


@functools.cache  # (one entry: the versions of this process)
def _version_tag() -> str:
    import jax
    from jaxlib.version import __version__ as jaxlib_version

    try:
        from importlib.metadata import version

        ours = version("x10array")
    except Exception:  # not installed as a distribution (a source tree on sys.path)
        ours = "unknown"
    return f"x10array-{ours}-entry{_FORMAT}-jax-{jax.__version__}-jaxlib-{jaxlib_version}"


def _digest(key: str, value: bytes | memoryview) -> bytes:
    h = hashlib.blake2b(digest_size=_DIGEST_SIZE, person=b"x10array-xla")
    h.update(key.encode())
    h.update(b"\0")
    h.update(value)
    return h.digest()


def seal(key: str, value: bytes) -> bytes:
    """The header of the entry file of `value` under `key` (written before the value)."""
    return _MAGIC + _digest(key, value) + len(value).to_bytes(8, "little")


def unseal(key: str, data: bytes) -> bytes:
    """jax's bytes of the entry file `data` of `key`; ValueError if the file is not intact."""
    if len(data) < _HEAD or data[: len(_MAGIC)] != _MAGIC:
        raise ValueError("truncated, or not an x10array entry" if len(data) < _HEAD else "not an x10array entry")
    view = memoryview(data)
    digest = bytes(view[len(_MAGIC) : len(_MAGIC) + _DIGEST_SIZE])
    length = int.from_bytes(view[len(_MAGIC) + _DIGEST_SIZE : _HEAD], "little")
    payload = view[_HEAD:]
    if len(payload) != length:
        raise ValueError(f"{len(payload)} bytes where its header says {length}")
    if _digest(key, payload) != digest:
        raise ValueError("its checksum does not match")
    return bytes(payload)


def thread_counts() -> tuple[int, int]:
    """(entries loaded, entries written) by this thread so far: a compile that loaded and
    wrote nothing was served from the disk."""
    return getattr(_COUNTS, "loads", 0), getattr(_COUNTS, "writes", 0)


def _count(name: str) -> None:
    setattr(_COUNTS, name, getattr(_COUNTS, name, 0) + 1)


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """x10array's compiles inside the block read and fill the persistent cache (when on)."""
    path = directory()
    if path is None:
        token = _ACTIVE.set(_OFF)
        try:
            yield
        finally:
            _ACTIVE.reset(token)
        return
    from jax._src import config

    settings.get("X10ARRAY_COMPILE_CACHE_MB")  # a bad value raises here, not inside jax's write (a warning)
    store = _STORES.get(path)
    if store is None:
        store = _STORES.setdefault(path, _Store(path))
    _install()
    token = _ACTIVE.set(store)
    try:
        with (
            config.compilation_cache_dir(path),  # (jax's XLA caches, the GPU autotuning one, go there too)
            config.persistent_cache_min_compile_time_secs(0.0),
            config.persistent_cache_min_entry_size_bytes(-1),
        ):
            yield
    finally:
        _ACTIVE.reset(token)


def _install() -> None:
    """Make the router jax's cache object (once; again if jax's cache was reset)."""
    from jax._src import compilation_cache as cc

    if isinstance(cc._cache, _Router):
        return
    with _INSTALL_LOCK, cc._cache_initialized_mutex:
        if not isinstance(cc._cache, _Router):
            cc._cache = _Router(cc._cache)  # type: ignore[assignment]  # duck-typed: get, put
            cc._cache_initialized = True


class _Router:
    """jax's cache object: inside a scope, the scope's store; outside, the cache jax would have
    used for the user's own programs (theirs when they set jax_compilation_cache_dir, else none)."""

    def __init__(self, previous: Any):
        self._previous = previous
        self._user_path: str | None = None
        self._path = getattr(previous, "_path", None)  # (jax reads it in some versions)

    def _target(self) -> Any:
        active = _ACTIVE.get()
        if active is _OFF:
            return None
        if active is not None:
            return active
        if self._previous is None:
            from jax._src import compilation_cache as cc
            from jax._src import config

            path = config.compilation_cache_dir.value
            if not path or not config.enable_compilation_cache.value:
                return None
            made = cc.get_file_cache(path)
            self._previous = made[0] if made is not None else None
        return self._previous

    def get(self, key: str) -> bytes | None:
        target = self._target()
        return None if target is None else target.get(key)

    def put(self, key: str, value: bytes) -> None:
        target = self._target()
        if target is not None:
            target.put(key, value)

    def clear(self) -> None:
        if self._previous is not None and hasattr(self._previous, "clear"):
            self._previous.clear()


class _Store:
    """One directory of entries (see the module's docstring)."""

    def __init__(self, path: str):
        self.path = path
        self._path = path
        self._served: set[str] = set()  # keys loaded by this process: a later put replaces a bad one
        self._lock = threading.Lock()

    def _file(self, key: str) -> str:
        return os.path.join(self.path, key + _SUFFIX)

    def get(self, key: str) -> bytes | None:
        file = self._file(key)
        try:
            with open(file, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            warnings.warn(f"x10array: cannot read the compile cache entry {file} ({error}); compiling", stacklevel=2)
            return None
        try:
            value = unseal(key, data)
        except ValueError as error:
            warnings.warn(
                f"x10array: the compile cache entry {file} is corrupted or truncated ({error}); "
                "it was removed and the program is compiled again",
                RuntimeWarning,
                stacklevel=2,
            )
            _unlink(file)
            return None
        with contextlib.suppress(OSError):
            os.utime(file)  # its last use, for the eviction
        with self._lock:
            self._served.add(key)
        _count("loads")
        return value

    def put(self, key: str, value: bytes) -> None:
        file = self._file(key)
        with self._lock:
            replaces = key in self._served  # jax could not load what we served: replace it
            self._served.discard(key)
        if not replaces and os.path.exists(file):
            return  # the same program, written by another process meanwhile
        try:
            os.makedirs(self.path, exist_ok=True)
            temporary = f"{file}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(temporary, "wb") as f:
                f.write(seal(key, value))
                f.write(value)
            os.replace(temporary, file)  # atomic: readers see the old entry or the new one
        except OSError as error:
            warnings.warn(f"x10array: cannot write the compile cache entry {file} ({error})", stacklevel=2)
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(temporary)
            return
        _count("writes")
        top = root()
        if top is not None:
            written(top, _HEAD + len(value), settings.get("X10ARRAY_COMPILE_CACHE_MB") * 2**20)


# What this process knows of the size of the cache under a directory without listing it (see
# `written`): {directory: [monotonic time of its last scan, that scan's seconds, total bytes
# at that scan plus what this process wrote since]}; one entry per cache directory used.
_USAGE: dict[str, list[float]] = {}
_USAGE_LOCK = threading.Lock()
_RESCAN_SECONDS = 60.0  # the least time between two scans of one directory by a process...
_RESCAN_FACTOR = 100.0  # ...and the least multiple of the last scan's duration
_clock = time.monotonic  # (a test's fake clock replaces it)


def written(top: str, size: int, limit: int) -> None:
    """After this process wrote an entry of `size` bytes under `top`: keep x10array's files
    there within `limit` bytes. Listing the directory costs ~6.5 us an entry (30 ms for 4,600
    entries, 2,048 MB would hold ~300,000 of ~7 KB), so it is not done at every write: each
    process keeps the total of its last scan (`evict`) plus what it wrote since, and scans again
    only when that total would pass `limit`, or when the last scan is older than
    _RESCAN_SECONDS and than _RESCAN_FACTOR times its own duration (other processes write too,
    and stale temporary files are removed at scans). So a cache shared by several processes can
    pass its bound by what the others wrote since this one's last scan, until the next scan,
    and scanning costs a compiling process at most ~1% of its time."""
    now = _clock()
    with _USAGE_LOCK:
        usage = _USAGE.get(top)
        if (
            usage is not None
            and usage[2] + size <= limit
            and now - usage[0] < max(_RESCAN_SECONDS, _RESCAN_FACTOR * usage[1])
        ):
            usage[2] += size
            return
    total = evict(top, limit)
    with _USAGE_LOCK:
        _USAGE[top] = [now, _clock() - now, float(total)]


def entries(top: str) -> list[tuple[float, int, str]]:
    """(last use, size, path) of every file x10array wrote under `top` (all versions): the
    entries and temporary files directly inside its version folders, nothing else."""
    found: list[tuple[float, int, str]] = []
    try:
        folders = [e.path for e in os.scandir(top) if _FOLDER.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    except OSError:  # no directory yet, or unreadable
        return found
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.endswith(_SUFFIX) or _TEMPORARY.fullmatch(name):
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:  # removed meanwhile by another process
                    continue
                if st.st_mode & 0o170000 == 0o100000:  # a regular file (never a link's target)
                    found.append((st.st_mtime, st.st_size, path))
    return found


def evict(top: str, limit: int) -> int:
    """Remove the temporary files of writes that never finished (older than _STALE_SECONDS),
    then the least recently used entries under `top` until x10array's files total at most
    `limit` bytes (a temporary file being written counts, and is left alone): the total
    left. Several processes may evict at once: a file already removed is skipped."""
    stale = time.time() - _STALE_SECONDS
    found = []
    for used, size, path in entries(top):
        if path.endswith(".tmp") and used < stale:
            _unlink(path)
        else:
            found.append((used, size, path))
    total = sum(size for _, size, _ in found)
    if total <= limit:
        return total
    for _, size, path in sorted(found):
        if path.endswith(".tmp"):
            continue  # a write in progress: its process renames or removes it
        _unlink(path)
        total -= size
        if total <= limit:
            break
    return total


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
