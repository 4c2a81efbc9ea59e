"""Errors the services raise; the API maps them to ``{"error": {...}}`` responses."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass


@dataclass(eq=False)  # compared and hashed by identity, as exceptions are
class ExchangeError(Exception):
    """A request the exchange refuses. ``code`` is stable for programs, ``message`` for people."""

    status = 400  # not a field: each subclass's HTTP status

    code: str
    message: str
    _: KW_ONLY
    field: str | None = None
    position: int | None = None
    # More members of the error object, for errors that carry numbers (``over_limit``'s
    # ``limit``).
    extra: dict | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def as_dict(self) -> dict:
        body: dict = {"code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        if self.position is not None:
            body["position"] = self.position
        if self.extra:
            body.update(self.extra)
        return body


class InvalidInput(ExchangeError):
    status = 400


class StaleVersion(ExchangeError):
    status = 409


class Conflict(ExchangeError):
    """The request does not fit the object's current state (a subscription that has
    ended cannot be paused)."""

    status = 409


class NotAllowed(ExchangeError):
    status = 403


class NotFound(ExchangeError):
    status = 404
