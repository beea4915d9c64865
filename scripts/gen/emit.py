"""Where a generator's output goes: the path its command line names, else stdout (as bytes, so the
checked-in file and a regeneration compare byte for byte)."""
import pathlib
import sys


def emit(text, argv):
    """Writes `text` (UTF-8) to `argv[1]` when given, else to stdout."""
    data = text.encode()
    if len(argv) > 1:
        pathlib.Path(argv[1]).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
