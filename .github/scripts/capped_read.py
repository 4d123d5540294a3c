"""Reading an input file whole, up to a size cap, for the gate's scripts.

read_capped(path, cap, error) returns the file's bytes, or raises `error`
(an Exception class) with one line naming the file: it cannot be read, or
it is larger than `cap` bytes. Nothing more than cap + 1 bytes is read."""


def read_capped(path, cap, error):
    try:
        with open(path, "rb") as fh:
            raw = fh.read(cap + 1)
    except OSError as err:
        raise error(f"{path}: {err.strerror}") from None
    if len(raw) > cap:
        raise error(f"{path}: larger than {cap} bytes")
    return raw
