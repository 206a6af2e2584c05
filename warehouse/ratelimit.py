"""Rate-limit bookings every worker of a round reaches: the state database, or Redis.

One row (or key) per limit holds its theoretical arrival time (GCRA, see
generators.models.limits). A booking moves it in one atomic statement, so workers in
other threads, processes and machines book against the same schedule.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from warehouse.errors import StateError, first_line
from warehouse.upsert import insert_for


class RateBooking(SQLModel, table=True):
    __tablename__ = "rate_bookings"
    key: str = Field(primary_key=True)
    tat: float = 0.0  # wall-clock seconds: when everything booked so far is spent


class SqlBookings:
    """Bookings in the state database (SQLite or PostgreSQL): one UPDATE ... RETURNING each."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        greatest = sa.func.greatest if engine.dialect.name == "postgresql" else sa.func.max  # scalar max in SQLite
        table = RateBooking.__table__
        self._book = (sa.update(table).where(table.c.key == sa.bindparam("k"))
                      .values(tat=greatest(table.c.tat, sa.bindparam("now")) + sa.bindparam("cost"))
                      .returning(table.c.tat))
        self._up = sa.update(table).where(table.c.key == sa.bindparam("k")).values(tat=table.c.tat + sa.bindparam("cost"))
        self._down = (sa.update(table).where(table.c.key == sa.bindparam("k"))
                      .values(tat=greatest(sa.bindparam("now"), table.c.tat + sa.bindparam("cost"))))
        self._known: set[str] = set()

    def _ensure(self, conn: sa.Connection, key: str) -> None:
        if key in self._known:
            return
        table = RateBooking.__table__
        insert = insert_for(self.engine.dialect.name)
        conn.execute(insert(table).values(key=key, tat=0.0).on_conflict_do_nothing())
        self._known.add(key)

    def book(self, key: str, cost_s: float, now: float) -> float:
        try:
            with self.engine.begin() as conn:
                self._ensure(conn, key)
                return float(conn.execute(self._book, {"k": key, "now": now, "cost": cost_s}).scalar_one())
        except sa.exc.SQLAlchemyError as exc:
            raise StateError(f"cannot book a model call in the state database: {first_line(exc)}") from exc

    def adjust(self, key: str, cost_s: float, now: float) -> None:
        try:
            with self.engine.begin() as conn:
                self._ensure(conn, key)
                if cost_s < 0:
                    conn.execute(self._down, {"k": key, "now": now, "cost": cost_s})
                else:
                    conn.execute(self._up, {"k": key, "cost": cost_s})
        except sa.exc.SQLAlchemyError as exc:
            raise StateError(f"cannot book a model call in the state database: {first_line(exc)}") from exc


# GCRA in one round trip: KEYS[1] the limit, ARGV now, cost, mode (book|adjust); returns the new tat.
_REDIS_GCRA = """
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
if ARGV[3] == 'book' then tat = math.max(tat, now) + cost
elseif cost < 0 then tat = math.max(now, tat + cost)
else tat = tat + cost end
redis.call('SET', KEYS[1], string.format('%.6f', tat), 'EX', 86400)
return string.format('%.6f', tat)
"""


class RedisBookings:
    """Bookings in Redis (``redis_url``), for teams that already run one: a Lua script each."""

    def __init__(self, url: str, prefix: str = "flywheel:limit:"):
        import redis  # deferred: 130 ms, paid only by a team that sets redis_url

        self.prefix = prefix
        try:
            self.client = redis.Redis.from_url(url, socket_timeout=10)
            self.client.ping()
        except (redis.RedisError, ValueError) as exc:
            raise StateError(f"cannot reach Redis at {url}: {first_line(exc)}") from exc
        self.script = self.client.register_script(_REDIS_GCRA)

    def book(self, key: str, cost_s: float, now: float) -> float:
        return float(self.script(keys=[self.prefix + key], args=[repr(now), repr(cost_s), "book"]))

    def adjust(self, key: str, cost_s: float, now: float) -> None:
        self.script(keys=[self.prefix + key], args=[repr(now), repr(cost_s), "adjust"])
