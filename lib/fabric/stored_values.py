"""How the SQLite store keeps a cell's fvj1 text on disk (schema version 2).

Two reversible steps, undone on every read so callers always get the very same fvj1
text (and so the same value and value hash) that was written:

  - a link into the document's own space, at no path, is kept as `\\x01` and the 43
    characters of its ID after `of:fid1:`, instead of its 130-odd characters of JSON
    (`{"/quote":{"/":{"link@1":{"id":..,"path":[],"space":<the space DID>}}}}`). A raw
    U+0001 never occurs in JSON text (control characters inside strings are always
    escaped), so the marker cannot be confused with anything a value holds;
  - a text of at least COMPRESS_AT bytes is zlib-compressed (a BLOB instead of TEXT)
    when that saves at least a tenth of it. The zlib stream is made by ISA-L's deflate
    (`isal`), which any zlib reads; stdlib zlib at level 1 took a sixth of a first
    sync's main thread (docs/store-size-and-speed.md, "Session 22").

`encode_many` does the same for a batch of texts, its compression in one call to
lib._cells.deflate_many, which runs ISA-L's deflate (the very functions isal_zlib calls,
called the same way) over the whole batch with the GIL released: graph_batch.py runs it
on a second thread while the main thread plans the next sessions (docs/store-size-and-
speed.md, "Session 23"). A deflate call per text from a thread would wait for the GIL
after every text.

Rows written by schema version 1 hold plain fvj1 TEXT, which reads back unchanged: it
holds no marker, and it is no BLOB.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from isal import _isal, isal_zlib

from lib.fabric import value_decoding
from lib.fabric.cell_speedups import CELLS

COMPRESS_AT = 256  # characters of text: below it zlib saves little (measured on the bench corpus)
# ISA-L's level 2 (of 0-3): 3 times zlib level 1's speed on the bench corpus's values,
# and 2% fewer bytes; level 0 is faster again but keeps a quarter more bytes
COMPRESS_LEVEL = 2
_MARKER = "\x01"
_ID_PREFIX = "of:fid1:"
_ID_BODY = r"[A-Za-z0-9_-]{43}"
_SHORT = re.compile(_MARKER + "(" + _ID_BODY + ")")


class _SpaceLinks:
    """The long and short forms of a link into one space."""

    __slots__ = ("long", "head", "tail")

    def __init__(self, space: str) -> None:
        self.head = '{"/quote":{"/":{"link@1":{"id":"' + _ID_PREFIX
        self.tail = '","path":[],"space":' + json.dumps(space, ensure_ascii=False) + "}}}}"
        self.long = re.compile(re.escape(self.head) + "(" + _ID_BODY + ")" + re.escape(self.tail))


_spaces: dict[str, _SpaceLinks] = {}


def _links(space: str) -> _SpaceLinks:
    links = _spaces.get(space)
    if links is None:
        if len(_spaces) > 256:
            _spaces.clear()
        links = _spaces[space] = _SpaceLinks(space)
    return links


def encode(text: str, space: str) -> str | bytes:
    """What the documents table stores for fvj1 `text` of a cell in `space`."""
    text = _shortened(text, space)
    if len(text) < COMPRESS_AT:
        return text
    raw = text.encode("utf-8")
    packed = isal_zlib.compress(raw, COMPRESS_LEVEL)
    if len(packed) * 10 <= len(raw) * 9:
        return packed
    return text


def _shortened(text: str, space: str) -> str:
    """`text` with its links into `space` at no path in their short form."""
    if _MARKER in text:  # never in JSON text; stored as it is, it could not be told apart
        raise ValueError("fvj1 text holds a raw U+0001")
    links = _links(space)
    if links.head in text:
        # lib._cells does the same replacement without the regex engine's per-call cost
        text = _shorten(text, links.head, links.tail) if _shorten else links.long.sub(_MARKER + r"\1", text)
    return text


def encode_links(
    head: str, bodies: bytes | Iterable[bytes], tail: str, space: str, count: int | None = None
) -> str | bytes | None:
    """`encode` of the text `head`, the links into `space` at no path to `of:fid1:` + each
    43-byte ID body of `bodies` (comma-joined), `tail`, made from their short forms: that
    long text (about 150 bytes a link) is never made (issue 14 goal 4: an index root).
    A link's long form never meets its neighbours' text, so shortening the parts apart
    gives what shortening the whole does. `bodies`: the bodies, or runs of them (`count`
    bodies in all: root_links.RootLinks.runs). Beyond LINKS_AT_ONCE links, they are made
    short and compressed a run at a time, never all held (session 30: 1.1 MB at 25,000).
    None when a body is not one a short form holds, or a long text does not compress."""
    if count is None:
        count, width = divmod(len(bodies), _BODY_BYTES)  # type: ignore[arg-type]
        if width:
            return None
        bodies = (bodies,)  # type: ignore[assignment]
    head, tail = _shortened(head, space), _shortened(tail, space)
    head_bytes, tail_bytes = head.encode("utf-8"), tail.encode("utf-8")
    listed = max(_LINK_BYTES * count - 1, 0)
    if count <= LINKS_AT_ONCE:  # made whole and compressed in one call, as `encode` does
        whole = b"".join(bodies)
        if len(whole) != _BODY_BYTES * count or not _SHORT_BODIES.fullmatch(whole):
            return None
        raw = head_bytes + _short_links(whole, last=True) + tail_bytes
        if len(head) + listed + len(tail) < COMPRESS_AT:  # in characters, as `encode`
            return raw.decode("utf-8")
        packed = isal_zlib.compress(raw, COMPRESS_LEVEL)
        return packed if len(packed) * 10 <= len(raw) * 9 else raw.decode("utf-8")
    compressor, done = isal_zlib.compressobj(COMPRESS_LEVEL), 0
    parts = [compressor.compress(head_bytes)]
    for run in bodies:
        if len(run) % _BODY_BYTES or not _SHORT_BODIES.fullmatch(run):
            return None
        for start in range(0, len(run), _BODY_BYTES * LINKS_AT_ONCE):
            piece = run[start : start + _BODY_BYTES * LINKS_AT_ONCE]
            done += len(piece) // _BODY_BYTES
            parts.append(compressor.compress(_short_links(piece, last=done == count)))
    if done != count:
        return None
    parts += (compressor.compress(tail_bytes), compressor.flush())
    packed = b"".join(parts)
    return packed if len(packed) * 10 <= (len(head_bytes) + listed + len(tail_bytes)) * 9 else None


LINKS_AT_ONCE = 2048  # short links made and compressed at a time (90 KB)


def _short_links(bodies: bytes, *, last: bool) -> bytearray:
    """The links of `bodies` in their short form, each `\\x01` + body, then a comma but
    after the very last link (`last`: `bodies` ends with it): made at its size, a column
    at a time (no object a link, and no growing buffer's copies left in the heap)."""
    count = len(bodies) // _BODY_BYTES
    cut = 1 if last and count else 0
    raw = bytearray(_LINK_BYTES * count - cut)
    raw[0::_LINK_BYTES] = _MARKER_BYTE * count
    raw[_LINK_BYTES - 1 :: _LINK_BYTES] = b"," * (count - cut)
    for column in range(_BODY_BYTES):
        raw[1 + column :: _LINK_BYTES] = bodies[column::_BODY_BYTES]
    return raw


def encode_pieces(pieces: Iterable[bytes], space: str) -> tuple[bytes, int] | None:
    """(`encode` of the fvj1 text whose UTF-8 is `pieces` joined, the text's length in
    bytes) when that is its compressed form, compressed a piece at a time: the text is
    never held whole (issue 14 goal 4: the ordering's 1.2 MB at 25,000 sessions, held as
    a string and its UTF-8 at the commit's peak). None when `encode` would keep the text
    itself (short, not compressible enough) or the text holds a link into `space` or the
    marker (they would be rewritten): `encode` of the text then."""
    head = _links(space).head.encode("utf-8")
    compressor = isal_zlib.compressobj(COMPRESS_LEVEL)
    packed: list[bytes] = []
    length, tail = 0, b""
    for piece in pieces:
        seam = tail + piece[: len(head)]  # what spans the last piece and this one
        if _MARKER_BYTE in piece or head in piece or head in seam:
            return None
        tail = (tail + bytes(piece[-len(head) :]))[-len(head) :]
        length += len(piece)
        packed.append(compressor.compress(piece))
    packed.append(compressor.flush())
    out = b"".join(packed)
    if length < 4 * COMPRESS_AT or len(out) * 10 > length * 9:  # 4 bytes a character at most
        return None
    return out, length


_BODY_BYTES = 43
_LINK_BYTES = 1 + _BODY_BYTES + 1  # a short link and its comma
_MARKER_BYTE = _MARKER.encode("ascii")
_SHORT_BODIES = re.compile(rb"[A-Za-z0-9_-]*")  # the short form's ID body characters


_shorten = CELLS.shorten_links if CELLS is not None else None


def _batch_deflate() -> Any:
    """lib._cells.deflate_many, when it is built and found ISA-L in isal_zlib's extension
    (whose ISA-L is one of the versions the C side's struct head was checked against),
    and a probe round-trips through it; else None."""
    if CELLS is None or not hasattr(CELLS, "deflate_many"):
        return None
    if (_isal.ISAL_MAJOR_VERSION, _isal.ISAL_MINOR_VERSION) not in _ISAL_VERSIONS:
        return None
    if not CELLS.load_isal(isal_zlib.__file__):
        return None
    probe = ("a probe of the batch deflate, " * 2000) + "".join(map(chr, range(32, 2000)))
    packed = CELLS.deflate_many([probe], COMPRESS_LEVEL)[0]
    if packed is None or isal_zlib.decompress(packed) != probe.encode("utf-8"):
        return None
    return CELLS.deflate_many


# ISA-L releases whose struct isal_zstream begins as lib/_cells.c's zstream_head says
_ISAL_VERSIONS = frozenset({(2, 28), (2, 29), (2, 30), (2, 31), (2, 32)})
_deflate_many = _batch_deflate()
ENCODES_WITHOUT_GIL = _deflate_many is not None


def encode_many(texts: list[str], space: str) -> list[str | bytes]:
    """`encode(text, space)` of each text. The compression is one lib._cells.deflate_many
    call for the batch, without the GIL, where that is available; the result is what
    `encode` gives, except that ISA-L's bytes for a text (never what they decompress to)
    may differ as they do between two isal_zlib.compress calls (lib/_cells.c)."""
    if _deflate_many is None:
        return [encode(text, space) for text in texts]
    links = _links(space)
    head, tail = links.head, links.tail
    out: list[str | bytes] = []
    large: list[str] = []
    at: list[int] = []
    for text in texts:
        if _MARKER in text:
            raise ValueError("fvj1 text holds a raw U+0001")
        if head in text:
            text = _shorten(text, head, tail) if _shorten else links.long.sub(_MARKER + r"\1", text)
        if len(text) >= COMPRESS_AT:
            at.append(len(out))
            large.append(text)
        out.append(text)
    for index, packed in zip(at, _deflate_many(large, COMPRESS_LEVEL), strict=True):
        if packed is not None:
            out[index] = packed
    return out


def read_keeping(stored: str | bytes, space: str, keep: frozenset[str]) -> Any:
    """The value a stored value holds, a field named in `keep` of its top-level object
    left undecoded (value_decoding.decode_keeping); a kept field that is stored as a list
    of short links and nothing else comes back as `SameSpaceLinks` of their IDs, without
    expanding, parsing or checking each link (an index row's twelve previews)."""
    text = isal_zlib.decompress(stored).decode("utf-8") if type(stored) is bytes else stored
    cut: dict[str, SameSpaceLinks] = {}
    if _MARKER in text:
        for name in keep:
            emptied, ids = _cut_short_links(text, name)
            if ids is not None:
                text, cut[name] = emptied, ids
    value = value_decoding.loads(_expanded(text, space), keep)
    if cut:
        # the emptied list was the top-level field's (its key occurs once in the text);
        # else read again without cutting (a value this fast path does not fit)
        if type(value) is not dict or any(value.get(name) != [] for name in cut):
            return value_decoding.loads(decode(stored, space), keep)
        for name, ids in cut.items():
            value[name] = ids
    return value


class SameSpaceLinks(Sequence[str]):
    """A kept field that is stored as a list of links into the value's own space at no
    path (each its short form), as the IDs those links hold: a read-only sequence of
    them, kept as the list's stored text (each short link a marker and 43 characters,
    comma-joined) and each ID made when asked. An index root's 25,000 row links were a
    tuple of 25,000 ID strings, made twice a listing idle sync (target.open looks at the
    roots' labels, read_root reads the rows' links), about 2.5 MB each (session 28)."""

    __slots__ = ("_listed",)

    def __init__(self, listed: str = "") -> None:
        self._listed = listed  # the short links' text, as _SHORT_LIST matched it (no bracket)

    @classmethod
    def of(cls, ids: Iterable[str]) -> SameSpaceLinks:
        """The sequence of these IDs (each `of:fid1:` and 43 characters)."""
        listed = list(ids)
        if any(type(i) is not str or not _ID_TEXT.fullmatch(i) for i in listed):
            raise ValueError("not the ID of a short link")
        return cls(",".join(_MARKER + i[len(_ID_PREFIX) :] for i in listed))

    def __len__(self) -> int:
        return (len(self._listed) + 1) // _STRIDE

    @overload
    def __getitem__(self, at: int) -> str: ...
    @overload
    def __getitem__(self, at: slice) -> list[str]: ...
    def __getitem__(self, at: int | slice) -> str | list[str]:
        if isinstance(at, slice):
            return [self._id(i) for i in range(*at.indices(len(self)))]
        count = len(self)
        if at < 0:
            at += count
        if not 0 <= at < count:
            raise IndexError("SameSpaceLinks index out of range")
        return self._id(at)

    def _id(self, at: int) -> str:
        start = at * _STRIDE + 1
        return _ID_PREFIX + self._listed[start : start + _BODY_LENGTH]

    def __iter__(self) -> Iterator[str]:
        return (self._id(at) for at in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if type(other) is SameSpaceLinks:
            return self._listed == other._listed
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._listed)

    def __repr__(self) -> str:
        return f"SameSpaceLinks({list(self)!r})"


_BODY_LENGTH = 43
_STRIDE = 1 + _BODY_LENGTH + 1  # the marker, the ID's body, the comma
_ID_TEXT = re.compile(re.escape(_ID_PREFIX) + _ID_BODY)
_SHORT_LIST = re.compile("(?:" + _MARKER + _ID_BODY + "(?:," + _MARKER + _ID_BODY + ")*)?\\]")


def _cut_short_links(text: str, name: str) -> tuple[str, SameSpaceLinks | None]:
    """`text` with the list after its one key `name` emptied and the IDs of its short
    links, when that list holds short links and nothing else; else (text, None)."""
    key = json.dumps(name, ensure_ascii=False) + ":["
    at = text.find(key)
    if at < 0 or text.find(key, at + 1) >= 0:
        return text, None
    start = at + len(key)
    listed = _SHORT_LIST.match(text, start)
    if listed is None:
        return text, None
    ids = SameSpaceLinks(text[start : listed.end() - 1])
    return text[:start] + text[listed.end() - 1 :], ids


def decode(stored: str | bytes, space: str) -> str:
    """The fvj1 text a stored value holds (schema version 1's TEXT as it is)."""
    text = isal_zlib.decompress(stored).decode("utf-8") if type(stored) is bytes else stored
    return _expanded(text, space)


INFLATE_BYTES = 1 << 14  # stored bytes inflated at a time (a few times that of text)
_SHORT_CHARS = 1 + _BODY_BYTES  # a short link: the marker, then its ID's body


def decode_pieces(stored: str | bytes, space: str) -> Iterator[str]:
    """`decode(stored, space)` in pieces: a compressed text is inflated a part at a time
    and never held whole (ordering_text.read_pieces scans them as they come; issue 14
    goal 4). A short link cut by a piece's end waits for the next piece."""
    if type(stored) is not bytes:
        yield _expanded(stored, space)
        return
    inflate, utf8 = isal_zlib.decompressobj(), codecs.getincrementaldecoder("utf-8")()
    view, carry = memoryview(stored), ""
    for start in range(0, len(stored), INFLATE_BYTES):
        text = carry + utf8.decode(inflate.decompress(view[start : start + INFLATE_BYTES]))
        cut = text.find(_MARKER, max(len(text) - _SHORT_CHARS + 1, 0))  # a link that may go on
        text, carry = (text[:cut], text[cut:]) if cut >= 0 else (text, "")
        if text:
            yield _expanded(text, space)
    text = carry + utf8.decode(inflate.flush(), final=True)
    if text:
        yield _expanded(text, space)


def _expanded(text: str, space: str) -> str:
    """`text` with its short links written long."""
    if _MARKER in text:
        # split at each short link (the IDs at odd places) and joined back long: no
        # Python call per link, as a replacement function costs (an index row has 13)
        pieces = _SHORT.split(text)
        links = _links(space)
        head, tail = links.head, links.tail
        pieces[1::2] = [head + link_id + tail for link_id in pieces[1::2]]
        text = "".join(pieces)
    return text
