"""``flywheel reviewer``: create, change and list review-app accounts."""

from __future__ import annotations

import sys
from typing import Any

import typer

from review_app import accounts
from warehouse import review_tables
from warehouse.errors import InputError
from warehouse.settings import Settings
from warehouse.store import Store


def read_password(*, from_stdin: bool, confirm: bool = True) -> str:
    """The password: the first line of stdin, or typed at a hidden prompt (twice for a new one)."""
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise InputError("--password-stdin: stdin is empty")
        return line.rstrip("\r\n")
    if not sys.stdin.isatty():
        raise InputError("no terminal to type a password at; pipe it in with --password-stdin")
    return typer.prompt("Password", hide_input=True, confirmation_prompt=confirm)


def add_reviewer_account(settings: Settings, name: str, role: str, *, password_stdin: bool,
                         email: str | None = None) -> accounts.User:
    """Check the account, read the password, then write it (nothing is written on bad input)."""
    accounts.check_new_account(name, role, "x" * accounts.MIN_PASSWORD)
    if email:
        accounts.normal_email(email)
    password = read_password(from_stdin=password_stdin)
    return accounts.add_reviewer(Store.from_settings(settings), name, role, password, email=email)


def set_reviewer_account(settings: Settings, name: str, *, role: str | None, active: bool | None,
                         password_prompt: bool, password_stdin: bool, email: str | None = None) -> review_tables.Reviewer:
    """Check the change, read a new password if one was asked for, then write (nothing is
    written, and no password asked for, on bad input)."""
    new_password = password_prompt or password_stdin
    if role is None and active is None and not new_password and email is None:
        raise InputError("nothing to change: pass --role, --active or --inactive, --email, --password or --password-stdin")
    if email:
        accounts.normal_email(email)
    store = Store.from_settings(settings, create=False)  # a mistyped data directory is refused, not made
    accounts.check_account_change(store, name, role=role, active=active)
    password = read_password(from_stdin=password_stdin) if new_password else None
    return accounts.change_account(store, name, role=role, active=active, password=password, email=email)


def reviewer_rows(settings: Settings) -> list[dict[str, Any]]:
    store = Store.from_settings(settings, create=False)  # a mistyped data directory is refused, not made
    with store.session() as s:
        return [
            {"name": r.name, "role": r.role, "active": r.active, "email": r.email or ""}
            for r in review_tables.list_reviewers(session=s)
        ]
