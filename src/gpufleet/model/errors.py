"""One error type for bad input: it renders as one line naming the file, the field and what was expected."""

from __future__ import annotations

from pydantic import ValidationError


class InputError(Exception):
    def __init__(self, source: str, field: str, expected: str) -> None:
        self.source = source
        self.field = field
        self.expected = expected
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(f"{where}{expected}")


def _field_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part and not str(part).startswith("function-"):
            out += f".{part}" if out else str(part)
    return out


def from_validation_error(source: str, err: ValidationError, prefix: str = "") -> InputError:
    """The first pydantic error as an ``InputError``; the rest would only repeat the lesson."""
    first = err.errors()[0]
    path = _field_path(tuple(first.get("loc", ())))
    field = ".".join(p for p in (prefix, path) if p)
    msg = first.get("msg", "invalid value")
    msg = msg.removeprefix("Value error, ")
    if first.get("type") == "missing":
        msg = "missing required field"
    elif "input" in first and first.get("type") != "extra_forbidden" and not isinstance(
            first["input"], dict | list):  # a whole section echoed back is not one line
        got = repr(first["input"])
        msg = f"{msg} (got {got if len(got) <= 80 else got[:77] + '...'})"
    if first.get("type") == "extra_forbidden":
        msg = "unknown field"
    return InputError(source, field, msg)
