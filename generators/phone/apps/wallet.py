"""Wallet and expenses: a balance, transactions, payments with a confirmation policy.

A payment above CONFIRM_ABOVE is refused with POLICY_REQUIRES_CONFIRMATION until it
is repeated with ``confirmed: true``, which an agent should only do after asking.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone.apps.contacts import paginate
from generators.phone.timeparse import resolve_date
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "wallet"
CONFIRM_ABOVE = 100.0
CATEGORIES = ["groceries", "dining", "transport", "rent", "utilities", "shopping", "health", "other"]
MERCHANTS = {"groceries": ["FreshMart", "Green Grocer"], "dining": ["Cafe Rio", "Noodle Bar"],
             "transport": ["Metro", "CityCab"], "utilities": ["PowerCo"], "shopping": ["ShopNow"],
             "health": ["Pharmacy Plus"], "rent": ["Landlord"], "other": ["Misc"]}
_PAGE = {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer", "minimum": 1, "maximum": 50}}


def install(world: World) -> None:
    """Add the account and transactions tables."""
    world.add_table("account", key="name", app=APP)
    world.add_table("transactions", key="id", app=APP)


def add_transaction(world: World, merchant: str, amount: float, category: str, day: str, note: str = "",
                    kind: str = "card") -> dict[str, Any]:
    """Insert a transaction (negative amount = money out)."""
    row = {"id": world.next_id("tx"), "merchant": merchant, "amount": round(amount, 2), "category": category,
           "date": day, "note": note, "kind": kind}
    return world.table("transactions").insert(row)


def seed(world: World, rng: random.Random) -> None:
    """A balance and a month of ordinary spending."""
    world.table("account").insert({"name": "balance", "value": round(rng.uniform(800, 3000), 2)})
    for _ in range(rng.randint(10, 16)):
        cat = rng.choice(CATEGORIES[:6])
        day = (world.now.date() - timedelta(days=rng.randint(0, 30))).isoformat()
        add_transaction(world, rng.choice(MERCHANTS[cat]), -round(rng.uniform(3, 90), 2), cat, day)


def _balance(world: World) -> dict[str, Any]:
    return world.table("account").rows["balance"]


@tool("wallet_get_balance", APP, "read", "The wallet balance.")
def get_balance(world: World) -> dict[str, Any]:
    return {"balance": world.table("account").readable()["balance"]["value"], "currency": "USD"}


@tool("wallet_list_transactions", APP, "read",
      "List transactions newest first, optionally by category and from a date. Paginated.",
      params(category={"type": "string", "enum": CATEGORIES}, since={"type": "string"}, **_PAGE))
def list_transactions(world: World, category: str | None = None, since: str | None = None, page: int = 1,
                      page_size: int = 10) -> dict[str, Any]:
    lo = resolve_date(since, world.now).isoformat() if since else ""
    rows = sorted(world.table("transactions").readable().values(), key=lambda r: (r["date"], r["id"]), reverse=True)
    return paginate([dict(r) for r in rows if (category is None or r["category"] == category) and r["date"] >= lo],
                    page, page_size)


@tool("wallet_send_money", APP, "write",
      f"Send money to a contact. Above {CONFIRM_ABOVE:.0f} USD the user must confirm: ask, then call again with "
      "confirmed=true.",
      params(["contact_id", "amount"], contact_id={"type": "string"}, amount={"type": "number", "minimum": 0.01},
             note={"type": "string"}, confirmed={"type": "boolean"}), ("network",), sensitive="spends money")
def send_money(world: World, contact_id: str, amount: float, note: str = "", confirmed: bool = False) -> dict[str, Any]:
    if "contacts" in world.tables and world.table("contacts").peek(contact_id) is None:
        raise PhoneError("NOT_FOUND", f"no contact with id {contact_id!r}", hint="find the id with contacts_search")
    if amount > CONFIRM_ABOVE and not confirmed:
        raise PhoneError("POLICY_REQUIRES_CONFIRMATION", f"{amount:.2f} USD is above {CONFIRM_ABOVE:.0f} USD",
                         hint="ask the user to confirm, then repeat the call with confirmed=true")
    balance = _balance(world)
    if amount > balance["value"]:
        raise PhoneError("INSUFFICIENT_FUNDS", f"balance {balance['value']:.2f} is below {amount:.2f}")
    balance["value"] = round(balance["value"] - amount, 2)
    return add_transaction(world, contact_id, -amount, "other", world.now.date().isoformat(), note, kind="transfer")


@tool("expenses_add", APP, "write", "Record a cash expense.",
      params(["amount", "category"], amount={"type": "number", "minimum": 0.01},
             category={"type": "string", "enum": CATEGORIES}, note={"type": "string"}, date={"type": "string"}))
def add_expense(world: World, amount: float, category: str, note: str = "", date: str = "today") -> dict[str, Any]:
    day = resolve_date(date, world.now).isoformat()
    return add_transaction(world, note or "cash", -amount, category, day, note, kind="cash")
