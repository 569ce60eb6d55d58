"""Domain errors. Each carries Slurm's own message, so the CLI can print it unchanged.

    DomainError
    ├── InvalidRequest    (400) the request cannot be satisfied as asked
    ├── NotFound          (404) no such job / node / partition
    ├── Conflict          (409) the object is in a state that forbids the change
    └── Unavailable       (503) the controller cannot record anything now (its database)
"""

from __future__ import annotations


class DomainError(Exception):
    """The request was refused."""

    status = 400

    def __init__(self, error: str | None = None, *, pre: list[str] | None = None, code: int = 1):
        self.error = error or (self.__doc__ or "").strip()
        #: extra `error:` lines Slurm prints before the main one (e.g. which limit failed)
        self.pre = pre or []
        self.code = code
        super().__init__(self.error)

    def to_json(self) -> dict:
        return {"error": self.error, "pre": self.pre, "code": self.code}


class InvalidRequest(DomainError):
    """Invalid request."""

    status = 400


class NotFound(DomainError):
    """Invalid job id specified"""

    status = 404


class Conflict(DomainError):
    """Job/step already completing or completed"""

    status = 409


class Unavailable(DomainError):
    """The controller's database cannot be written"""

    status = 503
