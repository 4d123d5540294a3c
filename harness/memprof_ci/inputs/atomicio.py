"""Files that matter, written safely: atomic replacement and the baselines lock.

Standard library only (and errors.py, which is), so that every module can
write its outputs without importing the statistics stack.

Invariants:
1. write_atomic: a reader sees the old file or the new one, never a part.
   The temporary file is created exclusively (mkstemp) beside the target and
   renamed over it, so a symlink planted at the target is replaced, never
   followed; the new file gets 0666 & ~umask.
2. write_page: a file a person asked for by name (an HTML page) is
   refused, with a ConfigError naming it, when that name is a symbolic
   link or a directory, and a failed write is an InfraError naming it;
   either way nothing is left at the name.
3. locked: an exclusive flock on the directory itself, so no lock file is
   left behind to be committed with what the directory holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile

from ..errors import ConfigError, InfraError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str, text: str) -> None:
    """Write `text` to `path` so that readers see the old or the new file,
    never a part.  The temporary file is created exclusively (mkstemp) in the
    same directory and renamed over `path`; a symlink at `path` is replaced,
    never followed.  The file gets the usual 0666 & ~umask mode."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    suffix = os.path.splitext(path)[1] or ".tmp"
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix=suffix, dir=d)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_page(path: str, text: str, flag: str) -> None:
    """write_atomic for a file named on the command line by `flag`; see
    invariant 2."""
    if os.path.islink(path):
        raise ConfigError(f"{flag} {path}: is a symbolic link; memprof-ci neither writes "
                          f"through nor replaces one: remove it or name another file")
    if os.path.isdir(path):
        raise ConfigError(f"{flag} {path}: is a directory; name the file to write")
    try:
        write_atomic(path, text)
    except OSError as e:
        where = f"{e.filename}: " if e.filename and e.filename != path else ""
        raise InfraError(f"{flag} {path}: cannot write: {where}{e.strerror or e}") from None


@contextlib.contextmanager
def locked(directory: str):
    """Exclusive lock so concurrent update-baselines runs cannot interleave.

    The lock is taken on the directory itself, so no lock file is left
    behind to be committed with the baselines."""
    os.makedirs(directory, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
