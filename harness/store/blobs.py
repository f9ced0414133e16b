"""Content-addressed screenshot blobs.

A blob's address is the sha256 of the screenshot bytes as the sandbox captured them
(Chromium's PNG encoder is deterministic, so the same pixels give the same bytes):
hashing needs no decode, so a repeated screenshot costs one hash and one lookup.
By default a new screenshot is kept exactly as captured (PNG from Chromium: no decode,
no re-encode, so inserts stay above 5,000 steps/s even when every screenshot is new);
``fmt="webp"`` re-encodes new screenshots as lossless WebP instead (pixel-identical, about
4.5x smaller than Chromium's compact PNG, more than the default fast-encoded one, but
about 50-70 ms of CPU each). Numbers in docs/store.md and BENCHMARKS.md.
Files are written to a temp name and renamed, so a crash never leaves a torn blob.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
import secrets
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harness.errors import StoreError

if TYPE_CHECKING:
    import PIL.Image

BlobFormat = Literal["webp", "png"]
_SUFFIX = {"webp": ".webp", "png": ".png"}
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def blob_hash(data: bytes) -> str:
    """The address of a screenshot: sha256 hex of its captured bytes."""
    return hashlib.sha256(data).hexdigest()


class BlobDir:
    """A directory of image files named by hash, fanned out by the first two hex digits."""

    def __init__(self, root: Path, fmt: BlobFormat = "png", *, create: bool = True) -> None:
        if fmt not in _SUFFIX:
            raise StoreError(f"expected blob format 'webp' or 'png', got {fmt!r}; pick one of those")
        self.root = root
        self.fmt = fmt
        if create:  # a read-only store only reads blobs: it makes no folder
            self.root.mkdir(parents=True, exist_ok=True)
        self._root, self._suffix = str(root), _SUFFIX[fmt]
        self._made: set[str] = set()  # fan-out folders known to exist
        # Temp names unique to this object and process (O_EXCL refuses a clash anyway).
        self._tmp_prefix = f".tmp-{secrets.token_hex(4)}-"
        self._tmp_ids = itertools.count()

    def path(self, digest: str) -> Path:
        """Where the blob lives (whichever format it was written in)."""
        for suffix in (_SUFFIX[self.fmt], *(s for s in _SUFFIX.values() if s != _SUFFIX[self.fmt])):
            candidate = self.root / digest[:2] / (digest + suffix)
            if candidate.exists():
                return candidate
        return self.root / digest[:2] / (digest + _SUFFIX[self.fmt])

    def put(self, data: bytes, digest: str | None = None) -> tuple[str, int, int, int]:
        """Store a screenshot once; return (hash, stored bytes, width, height).
        ``digest``, when the caller already hashed ``data``, spares hashing it again."""
        # Plain os calls on str paths: this runs once per new screenshot, where pathlib
        # and tempfile cost a fifth of the insert (BENCHMARKS.md, issue 4).
        digest = digest or blob_hash(data)
        folder = os.path.join(self._root, digest[:2])
        target = os.path.join(folder, digest + self._suffix)
        try:
            stored = os.stat(target).st_size
        except FileNotFoundError:
            pass
        else:  # stored before (by another writer): the same pixels, so the same size
            return digest, stored, *_size(data)
        encoded, width, height = self._encode(data)
        if digest[:2] not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(digest[:2])
        tmp = os.path.join(folder, f"{self._tmp_prefix}{os.getpid()}-{next(self._tmp_ids)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(encoded)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, target)
        return digest, len(encoded), width, height

    def get(self, digest: str) -> bytes:
        """The stored (re-encoded) bytes of a blob."""
        path = self.path(digest)
        if not path.exists():
            raise StoreError(f"expected blob {digest} under {self.root}, got no such file; "
                             "the blob directory is incomplete")
        return path.read_bytes()

    def image(self, digest: str) -> PIL.Image.Image:
        """Decode a blob into an RGB PIL image."""
        from PIL import Image

        return Image.open(io.BytesIO(self.get(digest))).convert("RGB")

    def _encode(self, data: bytes) -> tuple[bytes, int, int]:
        if self.fmt == "png" and (size := _png_size(data)) is not None:
            return data, *size  # already PNG: keep the captured bytes (header read only)
        from PIL import Image

        image = Image.open(io.BytesIO(data))
        width, height = image.size
        out = io.BytesIO()
        if self.fmt == "webp":
            image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB").save(
                out, "WEBP", lossless=True, quality=80, method=4
            )
        else:
            image.save(out, "PNG")
        return out.getvalue(), width, height


def _png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, None if ``data`` is not a PNG."""
    if data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _size(data: bytes) -> tuple[int, int]:
    if (size := _png_size(data)) is not None:
        return size
    from PIL import Image

    return Image.open(io.BytesIO(data)).size
