"""The exceptions bitlens raises, one class per cause (the engine's error classes); each one's
text is the line the ``bitlens`` CLI prints after ``bitlens:``, naming the file and the rule."""


class BitlensError(Exception):
    """Base class of the errors bitlens raises (local I/O errors are ``OSError``\\ s instead)."""


class UsageError(BitlensError, ValueError):
    """The request cannot be carried out as given: options that do not go together, an input of
    a kind the function does not take, a tensor or step that is not there, the wrong base."""


class FormatError(BitlensError, ValueError):
    """A file's bytes break a rule of its format (a safetensors header or shard index, GGUF,
    PyTorch, NumPy, zip, a snapshot's magic or version), or its files do not make one
    checkpoint."""


class CorruptError(BitlensError, ValueError):
    """A snapshot or chain is damaged: a checksum, frame, index or annex that does not decode or
    match."""


class RemoteError(BitlensError, OSError):
    """A remote file could not be read as asked (an HTTP status, a server that ignores
    ``Range``, the network), after the retries."""


class BitlensWarning(UserWarning):
    """Something to know that did not stop the call (a tensor missing from a shard index, files
    left out of a chain)."""
