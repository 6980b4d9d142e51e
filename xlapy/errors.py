"""Error types raised by xlapy.

Every error the library raises on bad input derives from :class:`XlapyError`, so
callers can catch one type. Each names the place: an HLO ``line:column``, an
instruction, or the user's source line.
"""
from __future__ import annotations


class XlapyError(Exception):
    """Base class of every error raised by xlapy."""


class InvalidArgumentError(XlapyError, ValueError):
    """An argument (a shape, an attribute, a value) is not valid for the operation."""


class ShapeError(InvalidArgumentError):
    """Shape inference or verification failed: the operands do not fit the op."""


class HloParseError(XlapyError, ValueError):
    """HLO text could not be parsed.

    Attributes ``line`` and ``column`` are 1-based; ``source_line`` is the text
    of the offending line; ``expected`` says what the parser wanted there.
    """

    def __init__(self, message: str, line: int = 0, column: int = 0,
                 source_line: str = "", expected: str = "") -> None:
        self.line = line
        self.column = column
        self.source_line = source_line
        self.expected = expected
        self.bare_message = message
        text = f"{line}:{column}: {message}" if line else message
        if source_line:
            shown, col = _excerpt(source_line, column)
            text += f"\n  {shown}\n  {' ' * max(col - 1, 0)}^"
        super().__init__(text)


def _excerpt(line: str, column: int, width: int = 160) -> tuple[str, int]:
    """At most ``width`` characters of ``line`` around ``column`` and the column within them."""
    if len(line) <= width:
        return line, column
    start = max(0, min(column - 1 - width // 2, len(line) - width))
    shown = line[start:start + width]
    prefix = "..." if start > 0 else ""
    suffix = "..." if start + width < len(line) else ""
    return prefix + shown + suffix, column - start + len(prefix)


class VerificationError(XlapyError, ValueError):
    """An HLO module breaks an IR invariant (found by the verifier).

    ``problems`` lists every problem found, one line each.
    """

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems or [])


class UnimplementedError(XlapyError, NotImplementedError):
    """The operation is valid HLO but this backend cannot execute it."""


class ExecutionError(XlapyError, RuntimeError):
    """A program failed while running (e.g. a custom-call reported an error)."""


class ResourceExhaustedError(ExecutionError, MemoryError):
    """A device ran out of memory (the message gives the requested and free sizes)."""


class DeviceUnavailableError(ExecutionError):
    """The requested device cannot be used (no GPU, no driver, no library): the message
    names what is missing."""


class CollectiveError(ExecutionError):
    """A collective could not complete: a participant failed, disagreed on the operation or
    its shapes, or did not arrive within the timeout. The message names the collective."""
