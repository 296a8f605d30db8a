"""A stateful back-office application — customers, orders, refunds, inventory — with a written
policy, backed by SQLite through SQLAlchemy and served over MCP by ``fastmcp``.

The application does not enforce the policy: the agent must follow it, and the verifier checks
the final database.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

POLICY = """Back-office policy
1. Every request ends in one of two ways: carried out with the tool that does it, or declined
   with decline_request(request_id, reason_code). A customer's open requests are listed on
   their record (find_customer); restock requests on the SKU's record (get_inventory).
2. Before changing anything about a customer — a refund, an address — verify their identity with
   verify_identity(customer_id, zip_code), using the zip code the customer gives. If it fails,
   decline with IDENTITY_NOT_VERIFIED.
3. Refunds: a full refund of the order total, only for an order of the customer who asks, with
   status 'delivered', placed at most 30 days ago, and a total of at most 200.00. Otherwise
   decline with the first reason that applies: NOT_CUSTOMERS_ORDER, ORDER_CANCELLED (status
   'cancelled'), NOT_DELIVERED (any other status), OUTSIDE_REFUND_WINDOW, OVER_REFUND_LIMIT.
4. Never delete a customer.
5. Restocks: bring a SKU up to the stock level asked for, with restock(sku, quantity to add).
   Decline with DISCONTINUED_SKU for a discontinued SKU, and with OVER_STOCK_CAP when the level
   asked for is above 80 units."""
REASON_CODES = (
    "IDENTITY_NOT_VERIFIED",
    "NOT_CUSTOMERS_ORDER",
    "ORDER_CANCELLED",
    "NOT_DELIVERED",
    "OUTSIDE_REFUND_WINDOW",
    "OVER_REFUND_LIMIT",
    "DISCONTINUED_SKU",
    "OVER_STOCK_CAP",
)
STOCK_CAP = 80
TODAY = dt.date(2026, 11, 30)
REFUND_LIMIT = 200.0
REFUND_WINDOW_DAYS = 30


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    zip_code: Mapped[str] = mapped_column(String(10))
    address: Mapped[str] = mapped_column(String(200))


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    total_cents: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    placed_on: Mapped[str] = mapped_column(String(10))


class Refund(Base):
    __tablename__ = "refunds"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.id"))
    amount_cents: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String(200))


class Request(Base):
    """A customer's (or a store manager's) request, waiting to be carried out or declined."""

    __tablename__ = "requests"
    id: Mapped[str] = mapped_column(String(20), primary_key=True)
    customer_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    sku: Mapped[str | None] = mapped_column(String(20), nullable=True)
    summary: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default="open")
    reason_code: Mapped[str | None] = mapped_column(String(40), nullable=True)


class Item(Base):
    __tablename__ = "inventory"
    sku: Mapped[str] = mapped_column(String(20), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    quantity: Mapped[int] = mapped_column(Integer)
    discontinued: Mapped[int] = mapped_column(Integer)


FIRST = ["Ada", "Bo", "Cleo", "Dev", "Esme", "Finn", "Gia", "Hugo", "Ines", "Jun", "Kai", "Lena"]
LAST = ["Moreau", "Okafor", "Lindqvist", "Tanaka", "Silva", "Novak", "Reyes", "Haddad", "Kowalski", "Ng"]
STREETS = ["Elm St", "Harbor Rd", "Mill Lane", "Quay Ave", "Orchard Way", "Station Rd"]
PRODUCTS = ["lamp", "kettle", "chair", "desk", "rug", "clock", "mirror", "shelf", "vase", "fan"]


def seed_database(url: str, seed: int = 0) -> None:
    rng = random.Random(f"backoffice:{seed}")
    engine = create_engine(url)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as session, session.begin():
        for cid in range(1, 121):
            first, last = FIRST[cid % len(FIRST)], LAST[(cid * 7) % len(LAST)]
            session.add(
                Customer(
                    id=cid,
                    name=f"{first} {last}",
                    email=f"{first.lower()}.{last.lower()}{cid}@example.com",
                    zip_code=f"{rng.randint(10000, 99999)}",
                    address=f"{rng.randint(1, 200)} {rng.choice(STREETS)}",
                )
            )
        for oid in range(1001, 1001 + 600):
            days = rng.choice([2, 5, 10, 20, 29, 31, 45, 90])
            session.add(
                Order(
                    id=oid,
                    customer_id=rng.randint(1, 120),
                    total_cents=rng.randint(5, 400) * 100 + 99,
                    status=rng.choice(["delivered", "delivered", "delivered", "shipped", "cancelled"]),
                    placed_on=(TODAY - dt.timedelta(days=days)).isoformat(),
                )
            )
        for i, product in enumerate(PRODUCTS * 12):
            session.add(
                Item(
                    sku=f"SKU-{i + 100}",
                    name=f"{product} model {i}",
                    quantity=rng.randint(0, 50),
                    discontinued=int(rng.random() < 0.25),
                )
            )
    engine.dispose()


def add_requests(url: str, requests: list[dict[str, Any]]) -> None:
    """Open one request per task (the tasks are generated from the seeded rows, so after them)."""
    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        session.add_all(Request(**r, status="open") for r in requests)
    engine.dispose()


def refund_allowed(order: Order, amount_cents: int) -> bool:
    age = (TODAY - dt.date.fromisoformat(order.placed_on)).days
    return (
        order.status == "delivered"
        and age <= REFUND_WINDOW_DAYS
        and 0 < amount_cents <= order.total_cents
        and amount_cents <= REFUND_LIMIT * 100
    )


def build_server(url: str) -> Any:
    """The MCP server over the database at ``url``."""
    from fastmcp import FastMCP

    engine = create_engine(url)
    mcp = FastMCP("backoffice")

    def session() -> Session:
        return Session(engine)

    def open_requests(s: Session, **where: Any) -> list[dict[str, str]]:
        rows = s.scalars(select(Request).filter_by(status="open", **where).order_by(Request.id))
        return [{"request_id": r.id, "summary": r.summary} for r in rows]

    @mcp.tool
    def get_policy() -> str:
        """The policy every action must follow."""
        return POLICY

    @mcp.tool
    def find_customer(email: str) -> dict[str, Any]:
        """Look a customer up by email."""
        with session() as s:
            c = s.scalar(select(Customer).where(Customer.email == email))
            if c is None:
                raise ValueError(f"no customer with email {email}")
            return {
                "customer_id": c.id,
                "name": c.name,
                "address": c.address,
                "open_requests": open_requests(s, customer_id=c.id),
            }

    @mcp.tool
    def verify_identity(customer_id: int, zip_code: str) -> str:
        """Check that the zip code the customer gave matches their record."""
        with session() as s:
            c = s.get(Customer, customer_id)
            if c is None or c.zip_code != zip_code:
                raise ValueError("identity could not be verified")
            return "verified"

    @mcp.tool
    def list_orders(customer_id: int) -> list[dict[str, Any]]:
        """A customer's orders."""
        with session() as s:
            orders = s.scalars(select(Order).where(Order.customer_id == customer_id).order_by(Order.id))
            return [{"order_id": o.id, "status": o.status, "placed_on": o.placed_on} for o in orders]

    @mcp.tool
    def get_order(order_id: int) -> dict[str, Any]:
        """One order: customer, total, status and date."""
        with session() as s:
            o = s.get(Order, order_id)
            if o is None:
                raise ValueError(f"no order {order_id}")
            return {
                "order_id": o.id,
                "customer_id": o.customer_id,
                "total": o.total_cents / 100,
                "status": o.status,
                "placed_on": o.placed_on,
                "today": TODAY.isoformat(),
            }

    @mcp.tool
    def refund_order(order_id: int, amount: float, reason: str) -> str:
        """Refund (part of) an order. The policy decides whether you may."""
        with session() as s, s.begin():
            o = s.get(Order, order_id)
            if o is None:
                raise ValueError(f"no order {order_id}")
            s.add(Refund(order_id=order_id, amount_cents=round(amount * 100), reason=reason[:200]))
            o.status = "refunded"
        return f"refunded {amount:.2f} on order {order_id}"

    @mcp.tool
    def update_address(customer_id: int, address: str) -> str:
        """Change a customer's address."""
        with session() as s, s.begin():
            c = s.get(Customer, customer_id)
            if c is None:
                raise ValueError(f"no customer {customer_id}")
            c.address = address[:200]
        return "address updated"

    @mcp.tool
    def get_inventory(sku: str) -> dict[str, Any]:
        """Stock level of a SKU."""
        with session() as s:
            item = s.get(Item, sku)
            if item is None:
                raise ValueError(f"no SKU {sku}")
            return {
                "sku": item.sku,
                "name": item.name,
                "quantity": item.quantity,
                "discontinued": bool(item.discontinued),
                "open_requests": open_requests(s, sku=item.sku),
            }

    @mcp.tool
    def restock(sku: str, quantity: int) -> str:
        """Add units of a SKU to the inventory."""
        with session() as s, s.begin():
            item = s.get(Item, sku)
            if item is None or quantity <= 0:
                raise ValueError("unknown SKU or non-positive quantity")
            item.quantity += quantity
            now = item.quantity
        return f"{sku} now has {now} units"

    @mcp.tool
    def decline_request(request_id: str, reason_code: str) -> str:
        """Decline an open request, with the policy's reason code for it."""
        if reason_code not in REASON_CODES:
            raise ValueError(f"unknown reason code {reason_code!r}; the codes are {', '.join(REASON_CODES)}")
        with session() as s, s.begin():
            r = s.get(Request, request_id)
            if r is None or r.status != "open":
                raise ValueError(f"no open request {request_id}")
            r.status, r.reason_code = "declined", reason_code
        return f"request {request_id} declined ({reason_code})"

    @mcp.tool
    def delete_customer(customer_id: int) -> str:
        """Delete a customer record."""
        with session() as s, s.begin():
            c = s.get(Customer, customer_id)
            if c is None:
                raise ValueError(f"no customer {customer_id}")
            s.delete(c)
        return "deleted"

    return mcp


def dump(url: str) -> dict[str, list[list[Any]]]:
    """Every table's rows, sorted: the final state the verifier reads (and fingerprints)."""
    engine = create_engine(url)
    out: dict[str, list[list[Any]]] = {}
    with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            rows = conn.execute(table.select()).fetchall()
            out[table.name] = sorted([list(r) for r in rows], key=repr)
    engine.dispose()
    return out
