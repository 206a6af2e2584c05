"""Reviewer accounts: salted scrypt password hashes, creation and sign-in."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from warehouse import review_tables as rt
from warehouse.errors import InputError, one_line
from warehouse.store import Store

# scrypt parameters (N=2**17, r=8, p=1): 128 MiB and about a second per check, the floor of
# current guidance (OWASP's password storage cheat sheet). A hash stored with other parameters is
# replaced on its next good sign-in (see :func:`authenticate`).
SCRYPT_N, _R, _P = 2**17, 8, 1
_MAXMEM = 2**28  # OpenSSL refuses scrypt above its 32 MiB default; N=2**17, r=8 needs 128 MiB
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,189}$")
MIN_PASSWORD = 8
# Throttle: after this many failed sign-ins under one name within the window, that name
# is refused (without checking the password) until the oldest of them leaves the window.
MAX_FAILURES = 5
FAILURE_WINDOW = timedelta(minutes=15)


class SignInThrottled(InputError):
    """Too many failed sign-ins under one name lately; try again later."""


@dataclass(frozen=True)
class User:
    """A signed-in reviewer. ``credential`` (from a sign-in) tells which password it signed in
    with, so a password reset ends the sessions opened with the old one."""

    name: str
    role: str
    credential: str = field(default="", compare=False, repr=False)

    @property
    def is_lead(self) -> bool:
        return self.role == "lead"


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """``scrypt$n$r$p$salt$hash`` (base64), with a fresh 16-byte salt unless given."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    n = SCRYPT_N
    key = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=_R, p=_P, dklen=32, maxmem=_MAXMEM)
    b64 = base64.b64encode
    return f"scrypt${n}${_R}${_P}${b64(salt).decode()}${b64(key).decode()}"


def needs_rehash(stored: str) -> bool:
    """True if ``stored`` was made with other scrypt parameters than new hashes get."""
    return stored.split("$")[1:4] != [str(SCRYPT_N), str(_R), str(_P)]


def verify_password(password: str, stored: str) -> bool:
    """True if ``password`` matches ``stored``; constant-time comparison."""
    try:
        algo, n, r, p, salt, key = stored.split("$")
        if algo != "scrypt":
            return False
        want = base64.b64decode(key)
        got = hashlib.scrypt(
            password.encode("utf-8"), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(want),
            maxmem=_MAXMEM,
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


def normal_email(email: str) -> str:
    """The address as accounts store it (trimmed, lower case); InputError if it is not one."""
    address = email.strip().lower()
    if not _EMAIL.match(address):
        raise InputError(f"e-mail {one_line(email, 80)!r} is not an address like name@example.org")
    return address


def _check_email_free(s, address: str | None, name: str) -> None:
    other = rt.reviewer_by_email(session=s, email=address) if address else None
    if other is not None and other.name != name:
        raise InputError(f"e-mail {address} is already on reviewer {other.name!r}; one address, one account")


def add_reviewer(store: Store, name: str, role: str, password: str, *, email: str | None = None) -> User:
    """Create an account; an existing name, or an e-mail already on another account, is an error
    (nothing is overwritten). ``email``: the person's Label Studio address (see :func:`normal_email`)."""
    check_new_account(name, role, password)
    address = normal_email(email) if email else None
    with store.session() as s:
        rt.take_gate(session=s, key="accounts")
        _check_email_free(s, address, name)
        ok = rt.add_reviewer(session=s, reviewer=rt.Reviewer(name=name, role=role, email=address,
                                                             password_hash=hash_password(password)))
    if not ok:
        raise InputError(f"reviewer {name!r} already exists")
    return User(name, role)


def credential_of(password_hash: str) -> str:
    """A short digest of a stored hash: it changes with every new password (a fresh salt each time)."""
    return hashlib.sha256(password_hash.encode("utf-8")).hexdigest()[:16]


def check_account_change(store: Store, name: str, *, role: str | None = None, active: bool | None = None) -> None:
    """One InputError naming what is wrong with changing ``name``'s role or active flag, or nothing."""
    if role is not None and role not in rt.ROLES:
        raise InputError(f"role {role!r} must be one of {', '.join(rt.ROLES)}")
    with store.session() as s:
        row = rt.get_reviewer(session=s, name=name) if _NAME.match(name) else None
        leads = rt.active_leads(session=s)
    if row is None:
        raise InputError(f"no reviewer {one_line(name, 80)!r} (flywheel reviewer list shows them)")
    _keep_a_lead(row, leads, role, active)


def _keep_a_lead(row: rt.Reviewer, leads: list[str], role: str | None, active: bool | None) -> None:
    """Refuse to take away the only active lead: nobody could approve a release or settle a dispute."""
    stays = (row.role if role is None else role) == "lead" and (row.active if active is None else active)
    if not stays and leads == [row.name]:
        raise InputError(
            f"{row.name} is the only active lead, and releases and adjudication need one; "
            "make another lead first (flywheel reviewer set NAME --role lead)")


def change_account(store: Store, name: str, *, role: str | None = None, active: bool | None = None,
                   password: str | None = None, email: str | None = None) -> rt.Reviewer:
    """Change what is given of an existing account: role, active, password. Refused (nothing
    written): an unknown name, an unknown role, a short password, or leaving no active lead.
    The account is read again on every page of the app, so a deactivated account is signed out
    and a demoted lead loses the lead's pages at once; a new password ends the sessions signed
    in with the old one and clears the name's failed sign-ins. ``email``: the person's Label Studio
    address ("" removes it); one already on another account is refused."""
    if role is None and active is None and password is None and email is None:
        raise InputError(f"nothing to change for {name!r}")
    if password is not None and len(password) < MIN_PASSWORD:
        raise InputError(f"password for {name} must be at least {MIN_PASSWORD} characters")
    address = (normal_email(email) if email else "") if email is not None else None
    check_account_change(store, name, role=role, active=active)
    with store.session() as s:
        rt.take_gate(session=s, key="accounts")
        _check_email_free(s, address, name)
        row = rt.get_reviewer(session=s, name=name)
        if row is None:  # deleted in between by hand: say so as for any unknown name
            raise InputError(f"no reviewer {name!r} (flywheel reviewer list shows them)")
        _keep_a_lead(row, rt.active_leads(session=s), role, active)  # again, in the writing transaction
        row = rt.update_reviewer(session=s, reviewer=row, role=role, active=active, email=address,
                                 password_hash=None if password is None else hash_password(password))
        if password is not None:
            rt.clear_signin_failures(session=s, name=name)
    return row


def authenticate(store: Store, name: str, password: str, *, now: datetime | None = None) -> User | None:
    """The user if the name and password match an active account, else None (and the failure
    is counted). SignInThrottled, without checking the password, once a name has
    :data:`MAX_FAILURES` failures within :data:`FAILURE_WINDOW`; a good sign-in clears its count.
    Unknown names are throttled alike, so trying names tells nothing about which exist.

    Atomic under concurrent sign-ins (threads, processes, app servers on one database): each
    attempt counts the name's failures and records itself as one more in a single transaction
    that holds the name's gate, and only then checks the password, so of a burst at most
    :data:`MAX_FAILURES` attempts reach a password check. A good one clears the name's count,
    the burst's failures included; a hash made with weaker parameters is replaced then."""
    name = name.strip()
    if not _NAME.match(name):  # no account has such a name: nothing to look up, nothing to count
        verify_password(password, _dummy_hash())
        return None
    now = now or datetime.now(UTC)
    with store.session() as s:
        rt.take_gate(session=s, key=f"signin:{name}")
        failures = rt.signin_failures_since(session=s, name=name, since=now - FAILURE_WINDOW)
        if len(failures) >= MAX_FAILURES:
            s.rollback()  # frees the gate before the error leaves
            wait = failures[-MAX_FAILURES] + FAILURE_WINDOW - now
            minutes = max(1, -(-int(wait.total_seconds()) // 60))
            raise SignInThrottled(f"too many failed sign-ins for {name!r}; try again in {minutes} minute(s)")
        rt.add_signin_failure(session=s, name=name, at=now, keep_since=now - FAILURE_WINDOW)  # commits
        row = rt.get_reviewer(session=s, name=name)
    if row is None or not row.active:
        # Spend the same work as a real check, so a wrong name is not faster than a wrong password.
        verify_password(password, _dummy_hash())
        return None
    if not verify_password(password, row.password_hash):
        return None  # the failure recorded above stays
    with store.session() as s:
        rt.clear_signin_failures(session=s, name=name)
        if needs_rehash(row.password_hash):
            rt.replace_password_hash(session=s, name=name, old=row.password_hash, new=hash_password(password))
        row = rt.get_reviewer(session=s, name=name) or row
    return User(row.name, row.role, credential_of(row.password_hash))


def session_user(store: Store, user: User | None, signed_in_at: datetime | None, *, hours: float,
                 now: datetime | None = None) -> User | None:
    """The signed-in user of an app session as the account stands now, or None when there is
    none, the session is older than ``hours`` (it expired), the account is gone or inactive, or
    its password was reset since the sign-in. The role is read again, so a lead demoted since
    signing in no longer acts as one."""
    if user is None or signed_in_at is None:
        return None
    if (now or datetime.now(UTC)) - signed_in_at >= timedelta(hours=hours):
        return None
    with store.session() as s:
        row = rt.get_reviewer(session=s, name=user.name)
    if row is None or not row.active:
        return None
    if user.credential and user.credential != credential_of(row.password_hash):
        return None
    return User(row.name, row.role, user.credential)


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


@functools.cache
def _dummy_hash_at(n: int) -> str:
    return hash_password("not a password", salt=b"\0" * 16)


def _dummy_hash() -> str:
    """A hash no password matches, made with today's parameters (once, on first use)."""
    return _dummy_hash_at(SCRYPT_N)
