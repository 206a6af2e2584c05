"""Reviewer accounts: salted scrypt password hashes, creation and sign-in."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from warehouse import review_tables as rt
from warehouse.errors import InputError, one_line
from warehouse.store import Store

# scrypt parameters (n=2**14, r=8, p=1): ~16 MiB and a few tens of ms per check,
# the interactive-login setting of the scrypt paper.
_N, _R, _P = 2**14, 8, 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MIN_PASSWORD = 8
# Throttle: after this many failed sign-ins under one name within the window, that name
# is refused (without checking the password) until the oldest of them leaves the window.
MAX_FAILURES = 5
FAILURE_WINDOW = timedelta(minutes=15)


class SignInThrottled(InputError):
    """Too many failed sign-ins under one name lately; try again later."""


@dataclass(frozen=True)
class User:
    """A signed-in reviewer."""

    name: str
    role: str

    @property
    def is_lead(self) -> bool:
        return self.role == "lead"


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """``scrypt$n$r$p$salt$hash`` (base64), with a fresh 16-byte salt unless given."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    key = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${_N}${_R}${_P}${b64(salt).decode()}${b64(key).decode()}"


def verify_password(password: str, stored: str) -> bool:
    """True if ``password`` matches ``stored``; constant-time comparison."""
    try:
        algo, n, r, p, salt, key = stored.split("$")
        if algo != "scrypt":
            return False
        want = base64.b64decode(key)
        got = hashlib.scrypt(
            password.encode("utf-8"), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(want)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, want)


def check_new_account(name: str, role: str, password: str) -> None:
    """One InputError naming what is wrong with a new account, or nothing."""
    if not _NAME.match(name):
        raise InputError(f"reviewer name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
    if role not in rt.ROLES:
        raise InputError(f"role {role!r} must be one of {', '.join(rt.ROLES)}")
    if len(password) < MIN_PASSWORD:
        raise InputError(f"password for {name} must be at least {MIN_PASSWORD} characters")


def add_reviewer(store: Store, name: str, role: str, password: str) -> User:
    """Create an account; an existing name is an error (nothing is overwritten)."""
    check_new_account(name, role, password)
    with store.session() as s:
        ok = rt.add_reviewer(session=s, reviewer=rt.Reviewer(name=name, role=role, password_hash=hash_password(password)))
    if not ok:
        raise InputError(f"reviewer {name!r} already exists")
    return User(name, role)


def authenticate(store: Store, name: str, password: str, *, now: datetime | None = None) -> User | None:
    """The user if the name and password match an active account, else None (and the failure
    is counted). SignInThrottled, without checking the password, once a name has failed
    :data:`MAX_FAILURES` times within :data:`FAILURE_WINDOW`; a good sign-in clears its count.
    Unknown names are throttled alike, so trying names tells nothing about which exist."""
    name = name.strip()
    if not _NAME.match(name):  # no account has such a name: nothing to look up, nothing to count
        verify_password(password, _DUMMY_HASH)
        return None
    now = now or datetime.now(UTC)
    with store.session() as s:
        failures = rt.signin_failures_since(session=s, name=name, since=now - FAILURE_WINDOW)
    if len(failures) >= MAX_FAILURES:
        wait = failures[-MAX_FAILURES] + FAILURE_WINDOW - now
        minutes = max(1, -(-int(wait.total_seconds()) // 60))
        raise SignInThrottled(f"too many failed sign-ins for {name!r}; try again in {minutes} minute(s)")
    with store.session() as s:
        row = rt.get_reviewer(session=s, name=name)
    if row is None or not row.active:
        # Spend the same work as a real check, so a wrong name is not faster than a wrong password.
        verify_password(password, _DUMMY_HASH)
        user = None
    else:
        user = User(row.name, row.role) if verify_password(password, row.password_hash) else None
    with store.session() as s:
        if user is None:
            rt.add_signin_failure(session=s, name=name, at=now, keep_since=now - FAILURE_WINDOW)
        elif failures:
            rt.clear_signin_failures(session=s, name=name)
    return user


def session_user(store: Store, user: User | None, signed_in_at: datetime | None, *, hours: float,
                 now: datetime | None = None) -> User | None:
    """The signed-in user of an app session as the account stands now, or None when there is
    none, the session is older than ``hours`` (it expired), or the account is gone or inactive.
    The role is read again, so a lead demoted since signing in no longer acts as one."""
    if user is None or signed_in_at is None:
        return None
    if (now or datetime.now(UTC)) - signed_in_at >= timedelta(hours=hours):
        return None
    with store.session() as s:
        row = rt.get_reviewer(session=s, name=user.name)
    return User(row.name, row.role) if row is not None and row.active else None


def require_user(store: Store, name: str) -> User:
    """The account behind a decision; InputError if there is none (no anonymous decisions)."""
    name = (name or "").strip()
    if not name:
        raise InputError("a decision needs a signed-in reviewer")
    if not _NAME.match(name):
        raise InputError(f"no active reviewer account {one_line(name, 80)!r}")
    with store.session() as s:
        row = rt.get_reviewer(session=s, name=name)
    if row is None or not row.active:
        raise InputError(f"no active reviewer account {name!r} (create one with: flywheel reviewer add {name})")
    return User(row.name, row.role)


_DUMMY_HASH = hash_password("not a password", salt=b"\0" * 16)
