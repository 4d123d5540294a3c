"""Reading memtrace CTF traces (memtrace's format, versions 1 to 3).

Job: decode a trace written by memtrace's own writer or by the memprof-ci
runtime (OCAMLMEMPROF=...,trace=FILE) into its trace info and a stream of
alloc / promote / collect events with decoded backtraces; ctf_profile.py
turns that stream into the harness's in-memory profile.

Invariants:
- The decoder follows memtrace's reader (src/trace.ml, backtrace_codec.ml,
  location_codec.ml of github:janestreet/memtrace) and checks what it
  checks: magic, version, packet bounds, timestamps within their packet and
  monotone per domain, the backtrace cache check in each packet header, the
  object id count of each packet.  Packets written by another pid (a forked
  child) are skipped, as memtrace does.
- Anything else that is wrong (truncated, garbage, an unknown event code, a
  backtrace entry without a location event) raises CtfError, one line
  naming the offset; callers turn it into InputError (exit 2).
- Per-domain state (backtrace cache, last backtrace, move-to-front tables)
  is kept per domain id, the location table is shared, as in memtrace.
"""

from __future__ import annotations

import struct

MAGIC = 0xC1FC1FC1
MAX_VERSION = 3
CACHE_SIZE = 1 << 14
MTF_LEN = 31
SOURCES = ("minor", "major", "external")

_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")
_I32, _I64, _F64 = struct.Struct("<i"), struct.Struct("<q"), struct.Struct("<d")


class CtfError(Exception):
    """A malformed trace: the message names the byte offset."""


class _Reader:
    __slots__ = ("b", "pos", "end")

    def __init__(self, b: bytes, pos: int, end: int):
        self.b, self.pos, self.end = b, pos, end

    def take(self, n: int) -> int:
        p = self.pos
        if p + n > self.end:
            raise CtfError(f"offset {p}: truncated (needed {n} more bytes)")
        self.pos = p + n
        return p

    def u8(self) -> int:
        return self.b[self.take(1)]

    def u16(self) -> int:
        return _U16.unpack_from(self.b, self.take(2))[0]

    def u32(self) -> int:
        return _U32.unpack_from(self.b, self.take(4))[0]

    def u64(self) -> int:
        return _U64.unpack_from(self.b, self.take(8))[0]

    def vint(self) -> int:
        c = self.u8()
        if c < 253:
            return c
        if c == 253:
            return self.u16()
        if c == 254:
            return _I32.unpack_from(self.b, self.take(4))[0]
        return _I64.unpack_from(self.b, self.take(8))[0]

    def string(self) -> str:
        z = self.b.find(b"\0", self.pos, self.end)
        if z < 0:
            raise CtfError(f"offset {self.pos}: unterminated string")
        s = self.b[self.pos:z].decode("utf-8", "replace")
        self.pos = z + 1
        return s


class _Domain:
    """One domain's decoder state."""

    def __init__(self, start: int):
        self.cache_loc = [0] * CACHE_SIZE
        self.cache_pred = [0] * CACHE_SIZE
        self.last: list = []
        self.files: list = []           # move-to-front [name, [defnames]]
        self.time = start

    def mtf(self, table: list, code: int, r: _Reader, new):
        if code == MTF_LEN:
            entry = new(r.string())
            table.insert(0, entry)
            del table[MTF_LEN:]
            return entry
        if code >= len(table):
            raise CtfError(f"offset {r.pos}: move-to-front code {code} names no entry")
        entry = table.pop(code)
        table.insert(0, entry)
        return entry

    def location(self, r: _Reader) -> tuple:
        code, n = r.u64(), r.u8()
        locs = []
        for _ in range(n):
            bits = r.u32() | r.u16() << 32
            f = self.mtf(self.files, (bits >> 38) & 31, r, lambda s: [s, []])
            d = self.mtf(f[1], (bits >> 43) & 31, r, lambda s: s)
            locs.append((f[0], bits & 0xFFFFF, (bits >> 20) & 0xFF, (bits >> 28) & 0x3FF, d))
        return code, tuple(locs)

    def backtrace(self, r: _Reader, nencoded: int, common: int) -> list:
        loc, pred_of = self.cache_loc, self.cache_pred
        out = self.last[:common] if common <= len(self.last) else None
        got: list = []
        pred = 0
        for _ in range(nencoded):
            word = r.u16()
            bucket, tag = word >> 2, word & 3
            pred_of[pred] = bucket
            if tag == 3:
                loc[bucket] = r.u64()
                got.append(loc[bucket])
                pred = bucket
                continue
            got.append(loc[bucket])
            n = tag if tag < 2 else r.u8()
            pred = bucket
            for _ in range(n):
                pred = pred_of[pred]
                got.append(loc[pred])
        if out is None:      # the last backtrace was cut short (memtrace's rule)
            return self.last
        self.last = out + got
        return self.last


def _header(r: _Reader) -> dict:
    start = r.pos
    magic, size, t0, t1 = r.u32(), r.u32(), r.u64(), r.u64()
    r.u32()
    version, pid = r.u16(), r.u64()
    if magic != MAGIC:
        raise CtfError(f"offset {start}: not a CTF packet (bad magic)")
    if version > MAX_VERSION:
        raise CtfError(f"offset {start}: trace format v{version:03d}, this reader "
                       f"reads up to v{MAX_VERSION:03d}")
    domain = r.u16() if version >= 3 else 0
    vix, vpred, vval = r.u16(), r.u16(), r.u64()
    id0, id1 = r.u64(), r.u64()
    content = size // 8 - (r.pos - start)
    if size % 8 or content < 0 or t0 > t1 or id0 > id1:
        raise CtfError(f"offset {start}: inconsistent packet header")
    return dict(start=start, end=r.pos + content, t0=t0, t1=t1, version=version,
                pid=pid, domain=domain, verify=(vix, vpred, vval), id0=id0, id1=id1)


def _event_header(r: _Reader, h: dict):
    word = r.u32()
    low, start_low = word & 0x1FFFFFF, h["t0"] & 0x1FFFFFF
    if low < start_low:
        low += 1 << 25
    t = (h["t0"] & ~0x1FFFFFF) + low
    if not h["t0"] <= t <= h["t1"]:
        raise CtfError(f"offset {r.pos - 4}: event time outside its packet")
    return word >> 25, t


def read_info(data: bytes) -> tuple[dict, int]:
    """The trace-info event of the first packet, and where the rest starts."""
    r = _Reader(data, 0, len(data))
    h = _header(r)
    r.end = h["end"]
    if h["end"] > len(data):
        raise CtfError("offset 0: truncated first packet")
    code, t = _event_header(r, h)
    if code != 0:
        raise CtfError("offset 0: the first packet holds no trace-info event")
    info = dict(start=t, domain=h["domain"], sample_rate=_F64.unpack_from(data, r.take(8))[0],
                word_size=r.u8(), executable=r.string(), host=r.string(),
                runtime_params=r.string(), pid=r.u64(),
                context=r.string() if h["version"] >= 2 else "")
    if r.pos != r.end:
        raise CtfError("offset 0: the trace-info packet holds more than the trace info")
    return info, h["end"]


def events(data: bytes, timed: bool = False):
    """(info, iterator of events, location table).  Events are tuples:
    ("alloc", id, length, nsamples, source, backtrace caller-first, domain),
    ("promote", id, domain), ("collect", id, domain); with timed=True each
    is yielded as (event, timestamp in microseconds).  The location table
    {code: ((file, line, start, end, defname), ...) outermost first} is
    complete once the iterator is exhausted."""
    info, pos = read_info(data)
    locations: dict = {}

    def run():
        doms: dict = {}
        r = _Reader(data, pos, len(data))
        while r.pos < len(data):
            r.end = len(data)
            h = _header(r)
            if h["end"] > len(data):
                raise CtfError(f"offset {h['start']}: truncated packet")
            r.end = h["end"]
            if h["pid"] != info["pid"]:
                r.pos = h["end"]
                continue
            yield from _packet(r, h, doms.setdefault(h["domain"], _Domain(info["start"])),
                               locations, timed)
    return info, run(), locations


def _packet(r: _Reader, h: dict, d: _Domain, locations: dict, timed: bool = False):
    vix, vpred, vval = h["verify"]
    if vix != 0xFFFF and (vix >= CACHE_SIZE or d.cache_pred[vix] != vpred
                          or d.cache_loc[vix] != vval):
        raise CtfError(f"offset {h['start']}: backtrace cache check failed")
    alloc_id, dom = h["id0"], h["domain"]
    while r.pos < r.end:
        at = r.pos
        code, t = _event_header(r, h)
        if t < d.time:
            raise CtfError(f"offset {at}: timestamps go back")
        d.time = t
        if code == 1:
            c, locs = d.location(r)
            if locations.setdefault(c, locs) != locs:
                raise CtfError(f"offset {at}: inconsistent location event")
        elif code == 2 or 101 <= code <= 116:
            if code == 2:
                length, nsamples, src = r.vint(), r.vint(), r.u8()
                if src > 2:
                    raise CtfError(f"offset {at}: unknown allocation source {src}")
                common, n = r.vint(), r.u16()
            else:
                length, nsamples, src = code - 100, 1, 0
                common, n = r.vint(), r.u8()
            bt = d.backtrace(r, n, common)
            ev = ("alloc", alloc_id, length, nsamples, SOURCES[src], tuple(bt), dom)
            yield (ev, t) if timed else ev
            alloc_id += 1
        elif code in (3, 4):
            ev = ("promote" if code == 3 else "collect", alloc_id - 1 - r.vint(), dom)
            yield (ev, t) if timed else ev
        else:
            raise CtfError(f"offset {at}: unknown event code {code}")
    if alloc_id != h["id1"]:
        raise CtfError(f"offset {h['start']}: packet object ids do not match its events")
