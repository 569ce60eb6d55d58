"""An air run's code archive, unpacked on a node as the run's user (see identity.run_as).

Whatever the archive says, what lands is the user's own: regular files and directories with their
permission bits (no setuid, setgid or sticky bit, and always readable and writable by the user),
symbolic links that stay inside the code, hard links as copies; no absolute or `..` paths, no
devices or FIFOs (skipped), nothing deeper than MAX_DEPTH levels. The same on every Python (the
tarfile module's own filters differ between 3.11 releases)."""

from __future__ import annotations

import gzip  # noqa: F401 - tarfile imports it when it opens the archive: by then the child that unpacks
import io  # is the job's user, who may not be able to read the interpreter's library
import os
import shutil
import tarfile

MAX_DEPTH = 256  #: directory levels a path in the code may have


class UnsafeArchive(ValueError):
    pass


def _parts(name: str) -> list[str]:
    if name.startswith("/") or "\0" in name:
        raise UnsafeArchive(f"unsafe path in the code: {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"unsafe path in the code: {name!r}")
    if len(parts) > MAX_DEPTH:
        raise UnsafeArchive(f"a path in the code is {len(parts)} levels deep (at most {MAX_DEPTH})")
    return parts


def _mkdirs(root: str, parts: list[str]) -> str:
    """root/parts..., made one level at a time (no recursion), never through a symbolic link."""
    path = root
    for p in parts:
        path = os.path.join(path, p)
        if os.path.islink(path):
            raise UnsafeArchive(f"a path in the code goes through a link: {path[len(root) + 1:]!r}")
        if not os.path.isdir(path):
            os.mkdir(path, 0o700)
    return path


def extract(data: bytes, dest: str) -> None:
    """Unpack a gzipped tar into `dest`: into a fresh directory beside it, renamed into place when
    complete. Raises UnsafeArchive, tarfile.TarError or OSError, leaving `dest` absent."""
    tmp = f"{dest}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.mkdir(tmp, 0o700)
    try:
        dirs: list[tuple[str, int]] = []
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for m in tar:
                parts = _parts(m.name)
                if not parts:
                    continue
                mode = m.mode & 0o777
                if m.isdir():
                    dirs.append((_mkdirs(tmp, parts), mode | 0o700))
                elif m.isreg() or m.islnk():  # a hard link: a copy of its target's data
                    src = tar.extractfile(m)
                    if src is None:
                        continue
                    path = os.path.join(_mkdirs(tmp, parts[:-1]), parts[-1])
                    if os.path.islink(path) or os.path.isdir(path):
                        raise UnsafeArchive(f"a file in the code replaces a link or directory: {m.name!r}")
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                    with os.fdopen(fd, "wb") as out:
                        shutil.copyfileobj(src, out)
                        os.fchmod(out.fileno(), mode | 0o600)
                elif m.issym():
                    target = os.path.normpath(os.path.join(*parts[:-1], m.linkname) if len(parts) > 1
                                              else m.linkname)
                    if m.linkname.startswith("/") or target == ".." or target.startswith("../"):
                        raise UnsafeArchive(f"a link in the code points outside it: {m.name!r} -> {m.linkname!r}")
                    path = os.path.join(_mkdirs(tmp, parts[:-1]), parts[-1])
                    if os.path.lexists(path):
                        raise UnsafeArchive(f"a link in the code replaces a file: {m.name!r}")
                    os.symlink(m.linkname, path)
                # devices, FIFOs and other kinds: skipped
        for path, mode in reversed(dirs):  # last: a read-only directory must not stop its own files
            os.chmod(path, mode)
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
