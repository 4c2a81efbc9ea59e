"""What the example bots share: a REST session logged in with an API token, the WebSocket
address that token opens, and the API's errors turned into a clear exit.

The bots import this module from beside them (Python puts a script's own folder first on
its import path), so each still runs as ``python ops/examples/<bot>.py`` from any folder;
copy this file along with a bot to use the bot elsewhere.
"""

from __future__ import annotations

import re
from typing import Any

import httpx


class ApiSession:
    """One user's REST session: ``http`` sends the token with every request."""

    def __init__(self, url: str, user: str, password: str) -> None:
        self.http = httpx.Client(base_url=url.rstrip("/") + "/api/v1", timeout=30)
        token = self._ok(
            self.http.post("/auth/token/", json={"username": user, "password": password})
        )["token"]
        self.http.headers["Authorization"] = f"Token {token}"
        self.ws_url = re.sub(r"^http", "ws", url.rstrip("/")) + f"/ws/?token={token}"

    @staticmethod
    def _ok(response: httpx.Response) -> Any:
        """The answer's JSON (None for an empty one); an error answer ends the bot with
        its status, code and message, and where in the sent text it is when the API says."""
        if response.status_code >= 400:
            error = response.json().get("error", {})
            where = f" (at character {error['position'] + 1})" if "position" in error else ""
            raise SystemExit(
                f"{response.status_code} {error.get('code')}: {error.get('message')}{where}"
            )
        return response.json() if response.content else None
