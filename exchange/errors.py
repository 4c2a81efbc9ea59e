"""Errors the services raise; the API maps them to ``{"error": {...}}`` responses."""

from __future__ import annotations


class ExchangeError(Exception):
    """A request the exchange refuses. ``code`` is stable for programs, ``message`` for people."""

    status = 400

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        position: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.position = position

    def as_dict(self) -> dict:
        body: dict = {"code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        if self.position is not None:
            body["position"] = self.position
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
