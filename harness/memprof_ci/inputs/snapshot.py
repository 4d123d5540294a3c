"""The `snapshot` section of a version-4 profile: retainer paths.

The runtime writes it with OCAMLMEMPROF snapshot=... (runtime-patch/format/
profile-format.md, "The snapshot"): in the profile written at exit, or in
a profile of its own taken while the program ran (on SIGUSR1, or at the
program's call), whose `at` says which (AT_KINDS); "live at exit" in such a
profile means live at that moment.  parse_snapshot
checks it and returns it with every frame index replaced by its frame
object, as profile.py does for the stacks; sites.retainers_by_site keys its
sites as the site grouping keys a stack with the same frames, so a caller
finds the retaining path of a site of its site table.

Invariants: parse_snapshot either returns a dict whose every key the format
lists has the documented type (counts are validate.is_count, frame lists
are frame objects, a path is a non-empty list of hops whose last one is a
block of the site), or raises InputError naming the file and the key; it
never reads past the structure it checked.
"""

from __future__ import annotations

from . import validate
from ..errors import InputError

ROOT_KINDS = ("global", "stack", "c_local", "c_global", "global_data", "finaliser",
              "finalised_value", "other")
SITE_COUNTS = ("live_blocks", "live_samples", "live_words", "shared_samples",
               "shared_words")
AT_KINDS = ("exit", "signal", "call")
TAKEN_COUNTS = ("reachable_blocks", "tracked_blocks", "tracked_reachable", "table_bytes")


def _bad(path: str, msg: str) -> InputError:
    return InputError(f"{path}: malformed profile: snapshot{msg}; regenerate it "
                      f"with the memprof-ci runtime")


def _frames(idx, table: list, path: str, where: str) -> list:
    if type(idx) is not list:
        raise _bad(path, f"{where}.frames is not a list")
    n = len(table)
    for j, k in enumerate(idx):
        if type(k) is not int or not 0 <= k < n:
            raise _bad(path, f"{where}.frames[{j}] is {k!r}, not an index into "
                             f"frame_table (0 to {n - 1})")
    return [table[k] for k in idx]


def _keys(obj, allowed: set, required: tuple, path: str, where: str) -> None:
    if type(obj) is not dict:
        raise _bad(path, f"{where} is not an object")
    missing = [k for k in required if k not in obj]
    if missing:
        raise _bad(path, f"{where} lacks {', '.join(missing)}")
    extra = sorted(set(obj) - allowed)
    if extra:
        raise _bad(path, f"{where} has unknown key(s) {', '.join(map(str, extra))[:200]}")


def _opt_text(v) -> bool:
    return v is None or type(v) is str


def _root(root, path: str, where: str) -> dict:
    if type(root) is not dict or root.get("kind") not in ROOT_KINDS:
        raise _bad(path, f"{where}.root has no known kind")
    kind = root["kind"]
    if kind == "global":
        _keys(root, {"kind", "unit", "field"}, ("unit", "field"), path, f"{where}.root")
        if not _opt_text(root["unit"]) or not validate.is_count(root["field"]):
            raise _bad(path, f"{where}.root: unit or field has the wrong type")
    elif kind == "stack":
        _keys(root, {"kind", "function", "file", "line"}, ("function", "file", "line"),
              path, f"{where}.root")
        line = root["line"]
        if not (_opt_text(root["function"]) and _opt_text(root["file"])
                and (line is None or validate.is_line(line))):
            raise _bad(path, f"{where}.root: function or file is not a string or null, or "
                             f"line is not null or a line number (0 to {validate.MAX_LINE})")
    else:
        _keys(root, {"kind"}, (), path, f"{where}.root")
    return dict(root)


def _hop(hop, last: bool, table: list, path: str, where: str) -> dict:
    if type(hop) is dict and "elided" in hop:
        _keys(hop, {"elided"}, (), path, where)
        if not (validate.is_count(hop["elided"]) and hop["elided"] > 0) or last:
            raise _bad(path, f"{where}.elided is not a positive count between hops")
        return {"elided": hop["elided"]}
    _keys(hop, {"tag", "size", "field", "frames"}, ("tag", "size"), path, where)
    tag, size = hop["tag"], hop["size"]
    if not (validate.is_count(tag) and tag <= 255 and validate.is_count(size)):
        raise _bad(path, f"{where}: tag or size is not a count (tag at most 255)")
    out = {"tag": tag, "size": size}
    if not last:
        if "field" not in hop:
            raise _bad(path, f"{where} lacks field")
        f = hop["field"]
        if not (f is None or validate.is_count(f)):
            raise _bad(path, f"{where}.field is neither null nor a count")
        out["field"] = f
    elif "field" in hop:
        raise _bad(path, f"{where}: the last hop has a field")
    if "frames" in hop:
        out["frames"] = _frames(hop["frames"], table, path, where)
    elif last:
        raise _bad(path, f"{where}: the last hop is not a sampled block (no frames)")
    return out


def _site(site, table: list, path: str, where: str) -> dict:
    _keys(site, {"frames", "root", "depth", "path", *SITE_COUNTS},
          ("frames", "root", "depth", "path", *SITE_COUNTS), path, where)
    out = {k: site[k] for k in SITE_COUNTS}
    for k in SITE_COUNTS:
        if not validate.is_count(site[k]):
            raise _bad(path, f"{where}.{k} is not a count")
    if site["shared_samples"] > site["live_samples"] or site["shared_words"] > site["live_words"]:
        raise _bad(path, f"{where}: more shared than live")
    out["frames"] = _frames(site["frames"], table, path, where)
    out["root"] = _root(site["root"], path, where)
    hops = site["path"]
    if type(hops) is not list or not hops:
        raise _bad(path, f"{where}.path is not a non-empty list")
    if not (validate.is_count(site["depth"]) and site["depth"] >= 1):
        raise _bad(path, f"{where}.depth is not a positive count")
    out["depth"] = site["depth"]
    out["path"] = [_hop(h, i == len(hops) - 1, table, path, f"{where}.path[{i}]")
                   for i, h in enumerate(hops)]
    shown = sum(1 for h in out["path"] if "elided" not in h)
    elided = sum(h.get("elided", 0) for h in out["path"])
    if shown + elided != out["depth"]:
        raise _bad(path, f"{where}: depth {out['depth']} is not the path's length")
    return out


def parse_snapshot(snap, table: list, path: str) -> dict:
    """The checked section, frame indices replaced by `table`'s objects."""
    _keys(snap, {"at", "taken", "reason", "walk", "sites_limit", "sites", *TAKEN_COUNTS},
          ("at", "taken"), path, "")
    if snap["at"] not in AT_KINDS or type(snap["taken"]) is not bool:
        raise _bad(path, f": at is not one of {', '.join(AT_KINDS)} or taken is not a boolean")
    at = snap["at"]
    if not snap["taken"]:
        _keys(snap, {"at", "taken", "reason"}, ("reason",), path, "")
        reason = validate.text(snap["reason"], f"{path}: snapshot.reason")
        return {"at": at, "taken": False, "reason": reason, "sites": []}
    _keys(snap, {"at", "taken", "walk", "sites_limit", "sites", *TAKEN_COUNTS},
          ("walk", "sites_limit", "sites", *TAKEN_COUNTS), path, "")
    if snap["walk"] != "breadth-first":
        raise _bad(path, ".walk is not \"breadth-first\"")
    out = {"at": at, "taken": True, "walk": snap["walk"]}
    for k in ("sites_limit", *TAKEN_COUNTS):
        if not validate.is_count(snap[k]):
            raise _bad(path, f".{k} is not a count")
        out[k] = snap[k]
    sites = snap["sites"]
    if type(sites) is not list or len(sites) > snap["sites_limit"]:
        raise _bad(path, ".sites is not a list of at most sites_limit sites")
    out["sites"] = [_site(s, table, path, f".sites[{i}]") for i, s in enumerate(sites)]
    return out


# OCaml's tags from No_scan_tag's neighbours up (runtime/caml/mlvalues.h);
# a tag below 245 is a constructor's, a record's, a tuple's or an array's.
TAG_NAMES = {245: "continuation", 246: "lazy", 247: "closure", 248: "object",
             249: "infix", 250: "forward", 251: "abstract", 252: "string",
             253: "float", 254: "float array", 255: "custom"}


def tag_name(tag: int) -> str:
    return TAG_NAMES.get(tag, f"tag {tag}")


def root_text(root: dict) -> str:
    """A snapshot root (snapshot.ROOT_KINDS) in words."""
    kind = root["kind"]
    if kind == "global":
        unit = root["unit"] if root["unit"] is not None else "an unnamed unit"
        return f"global {unit}, field {root['field']}"
    if kind == "stack":
        fn = root["function"] if root["function"] is not None else "?"
        where = root["file"] if root["file"] is not None else "?"
        if root["line"] is not None:
            where = f"{where}:{root['line']}"
        return f"stack frame of {fn} ({where})"
    return {"c_local": "a C local root (CAMLparam, CAMLlocal)",
            "c_global": "a C global root",
            "global_data": "the bytecode program's global data",
            "finaliser": "a function under Gc.finalise",
            "finalised_value": "a value under Gc.finalise",
            "other": "another root (another thread's stack or C locals, "
                     "effect handlers, a bytecode stack slot)"}[kind]
