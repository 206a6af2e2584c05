"""Shop and delivery: a catalogue, orders with a status policy.

An order can be cancelled only while ``placed``; once ``shipped`` it can only be
returned after delivery. Ordering needs a network.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "shop"
CATALOGUE = [("USB-C cable", 9.99), ("Phone case", 19.5), ("Coffee beans 1kg", 24.0), ("Running socks", 12.0),
             ("Desk lamp", 39.9), ("Notebook A5", 6.5), ("Bluetooth speaker", 59.0), ("Water bottle", 15.0)]
STATUSES = ["placed", "shipped", "delivered", "cancelled", "returned"]


def install(world: World) -> None:
    """Add the products and orders tables."""
    world.add_table("products", key="id", app=APP)
    world.add_table("orders", key="id", incidental=("tracked_at",), app=APP)


def seed(world: World, rng: random.Random) -> None:
    """The catalogue and a few past orders in different states."""
    for n, (name, price) in enumerate(CATALOGUE, 1):
        world.table("products").insert({"id": f"p-{n:03d}", "name": name, "price": price})
    for status in rng.sample(STATUSES[:3], 3):
        name, price = rng.choice(CATALOGUE)
        add_order(world, name, price, 1, status, (world.now - timedelta(days=rng.randint(1, 20))).date().isoformat())


def add_order(world: World, item: str, price: float, quantity: int, status: str, day: str) -> dict[str, Any]:
    """Insert an order."""
    row = {"id": world.next_id("o"), "item": item, "quantity": quantity, "total": round(price * quantity, 2),
           "status": status, "placed_on": day, "tracked_at": None}
    return world.table("orders").insert(row)


def _order(world: World, order_id: str) -> dict[str, Any]:
    row = world.table("orders").get(order_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no order with id {order_id!r}", hint="find the id with shop_list_orders")
    return row


@tool("shop_search_products", APP, "read", "Search the catalogue by name.", params(["query"], query={"type": "string"}),
      ("network",))
def search_products(world: World, query: str) -> dict[str, Any]:
    q = query.strip().lower()
    return {"items": [dict(r) for r in world.table("products").readable().values() if q and q in r["name"].lower()]}


@tool("shop_place_order", APP, "write", "Order a product.",
      params(["product_id"], product_id={"type": "string"}, quantity={"type": "integer", "minimum": 1, "maximum": 20}),
      ("network",), sensitive="places an order")
def place_order(world: World, product_id: str, quantity: int = 1) -> dict[str, Any]:
    product = world.table("products").peek(product_id)
    if product is None:
        raise PhoneError("NOT_FOUND", f"no product {product_id!r}", hint="find it with shop_search_products")
    return dict(add_order(world, product["name"], product["price"], quantity, "placed", world.now.date().isoformat()))


@tool("shop_list_orders", APP, "read", "List orders, newest first, optionally by status or item name (substring).",
      params(status={"type": "string", "enum": STATUSES}, query={"type": "string"}))
def list_orders(world: World, status: str | None = None, query: str | None = None) -> dict[str, Any]:
    rows = sorted(world.table("orders").readable().values(), key=lambda r: (r["placed_on"], r["id"]), reverse=True)
    q = (query or "").strip().lower()
    return {"items": [{k: v for k, v in r.items() if k != "tracked_at"} for r in rows
                      if (status is None or r["status"] == status) and q in r["item"].lower()]}


@tool("shop_track_order", APP, "read", "Where an order is.", params(["order_id"], order_id={"type": "string"}))
def track_order(world: World, order_id: str) -> dict[str, Any]:
    row = _order(world, order_id)
    row["tracked_at"] = world.now.isoformat()
    return {"order_id": order_id, "status": row["status"], "item": row["item"]}


@tool("shop_cancel_order", APP, "write", "Cancel an order that has not shipped yet.",
      params(["order_id"], order_id={"type": "string"}))
def cancel_order(world: World, order_id: str) -> dict[str, Any]:
    row = _order(world, order_id)
    if row["status"] != "placed":
        hint = "return it once delivered (shop_return_order)" if row["status"] == "shipped" else ""
        raise PhoneError("FAILED_PRECONDITION", f"order {order_id} is {row['status']}; only placed orders cancel",
                         hint=hint)
    row["status"] = "cancelled"
    return {"order_id": order_id, "status": "cancelled"}


@tool("shop_return_order", APP, "write", "Return a delivered order.", params(["order_id"], order_id={"type": "string"}))
def return_order(world: World, order_id: str) -> dict[str, Any]:
    row = _order(world, order_id)
    if row["status"] != "delivered":
        raise PhoneError("FAILED_PRECONDITION", f"order {order_id} is {row['status']}; only delivered orders return",
                         hint="cancel it instead if it is still placed")
    row["status"] = "returned"
    return {"order_id": order_id, "status": "returned"}
