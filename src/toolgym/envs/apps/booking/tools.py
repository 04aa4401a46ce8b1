"""Tools of the booking app: search and book flights and hotels, list and cancel bookings, review hotels.

Every rule a booking must follow is checked here and broken rules come back as a ToolError saying
what was wrong and what is allowed. "My" means the LOGGED_IN_USER; dates go through the task's
CURRENT_DATE, so "tomorrow" and "next Friday" work and nothing reads the wall clock.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.booking.rules import (
    MAX_NIGHTS,
    MAX_PASSENGERS,
    available_room_types,
    confirmation_code,
    flight_total,
    free_rooms,
    stay_total,
)
from toolgym.envs.kit.lookups import row_by_id
from toolgym.envs.kit.payments import listed_payment_methods

MAX_RESULTS = 20


# ---------------------------------------------------------------- shared validation


def _city(ctx: ToolContext, name: str, text: str) -> dict[str, Any]:
    """A city by name or airport code (case-insensitive)."""
    wanted = " ".join(text.split())
    row = ctx.one(
        "SELECT id, name, country, airport_code FROM cities WHERE lower(name)=lower(?) OR upper(airport_code)=upper(?)",
        (wanted, wanted),
    )
    if row is None:
        known = ", ".join(f"{r['name']} ({r['airport_code']})" for r in ctx.query(
            "SELECT name, airport_code FROM cities ORDER BY name"))
        raise ToolError(f"argument '{name}': unknown city or airport {text!r}; known: {known}")
    return row


def _me(ctx: ToolContext) -> dict[str, Any]:
    return kit.logged_in_user(ctx, "the booking app")


def _positive(name: str, value: int, maximum: int) -> None:
    if not 1 <= value <= maximum:
        raise ToolError(f"argument '{name}' must be between 1 and {maximum}; got {value}")



def _stay(ctx: ToolContext, check_in: str, check_out: str) -> tuple[str, str, int]:
    start = kit.date_arg(ctx, "check_in", check_in)
    end = kit.date_arg(ctx, "check_out", check_out)
    nights = (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days
    if nights < 1:
        raise ToolError(f"argument 'check_out' ({end}) must be after check_in ({start})")
    if nights > MAX_NIGHTS:
        raise ToolError(f"a stay can be at most {MAX_NIGHTS} nights; {start} to {end} is {nights}")
    return start, end, nights


def _flight_view(row: dict[str, Any]) -> dict[str, Any]:
    view = {
        "flight_id": row["id"], "flight_number": row["flight_number"], "airline": row["airline"],
        "origin": row["origin"], "destination": row["destination"], "date": row["date"],
        "depart_time": row["depart_time"], "arrive_time": row["arrive_time"], "price": row["price"],
        "refundable_price": row["refundable_price"], "seats_left": row["seats_left"],
    }
    if row["arrive_time"] < row["depart_time"]:
        view["arrives_next_day"] = True
    return view


# ---------------------------------------------------------------- flights


def _my_card(ctx: ToolContext, me: dict[str, Any], payment_method_id: int | None) -> int:
    """The id of the card a booking charges: the one named, else the user's default."""
    return int(kit.payment_method(
        ctx, ("user_id", me["id"]), payment_method_id,
        no_default="you have no default payment method; add one or name a payment_method_id",
        not_found="no payment method {id} belongs to you; see list_my_payment_methods")["id"])


def _flight(ctx: ToolContext, flight_id: int) -> dict[str, Any]:
    """The flights row of a flight_id argument; the error points to search_flights."""
    return row_by_id(ctx, "SELECT * FROM flights WHERE id=?", "flight_id", flight_id, "flight",
                     "use search_flights to find one")


def _hotel(ctx: ToolContext, sql: str, hotel_id: int) -> dict[str, Any]:
    """The hotel `sql` finds for a hotel_id argument; the error points to search_hotels."""
    return row_by_id(ctx, sql, "hotel_id", hotel_id, "hotel", "use search_hotels to find one")


def _new_booking(ctx: ToolContext, me: dict[str, Any], payment_method_id: int | None, table: str,
                 prefix: str) -> tuple[int, str, int]:
    """The rowid and confirmation code of the booking about to be added to `table`, and the card it charges."""
    card = _my_card(ctx, me, payment_method_id)
    rowid = kit.next_id(ctx, table)
    return rowid, confirmation_code(prefix, rowid), card


@tool
def list_cities(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the cities the app serves, with their airport codes and number of hotels."""
    return ctx.query(
        "SELECT c.name AS city, c.country, c.airport_code, COUNT(h.id) AS hotels FROM cities c "
        "LEFT JOIN hotels h ON h.city_id = c.id GROUP BY c.id ORDER BY c.name"
    )


@tool
def search_flights(ctx: ToolContext, origin: str, destination: str, date: str, max_price: int | None = None) -> dict:
    """Find flights on one day from one city to another, earliest departure first.

    Args:
        origin: Departure city name or airport code, e.g. 'Boston' or 'BOS'.
        destination: Arrival city name or airport code.
        date: Travel day: YYYY-MM-DD, 'today', 'tomorrow' or a weekday like 'next Friday'.
        max_price: Only flights whose per-passenger price (non-refundable fare) is at most this, in USD.
    """
    start, end = _city(ctx, "origin", origin), _city(ctx, "destination", destination)
    if start["id"] == end["id"]:
        raise ToolError("arguments 'origin' and 'destination' are the same city")
    day = kit.date_arg(ctx, "date", date)
    if max_price is not None and max_price < 1:
        raise ToolError(f"argument 'max_price' must be a positive number of USD; got {max_price}")
    rows = ctx.query(
        "SELECT * FROM flights WHERE origin=? AND destination=? AND date=? ORDER BY depart_time, id",
        (start["airport_code"], end["airport_code"], day),
    )
    if max_price is not None:
        rows = [r for r in rows if r["price"] <= max_price]
    result: dict[str, Any] = {
        "origin": start["airport_code"], "destination": end["airport_code"], "date": day,
        "flights": [_flight_view(r) for r in rows[:MAX_RESULTS]],
    }
    if not rows:
        other = ctx.query(
            "SELECT DISTINCT date FROM flights WHERE origin=? AND destination=? ORDER BY abs(julianday(date) - "
            "julianday(?)), date LIMIT 5",
            (start["airport_code"], end["airport_code"], day),
        )
        result["note"] = (
            f"no flights from {start['name']} to {end['name']} on {day}"
            + (" within that price" if max_price is not None else "")
        )
        result["nearest_dates_with_flights"] = sorted(r["date"] for r in other)
    return result


@tool
def get_flight(ctx: ToolContext, flight_id: int) -> dict:
    """Show one flight: times, duration, fares and seats left.

    Args:
        flight_id: The flight_id from search_flights.
    """
    row = _flight(ctx, flight_id)
    names = {r["airport_code"]: r["name"] for r in ctx.query("SELECT name, airport_code FROM cities ORDER BY id")}
    return {**_flight_view(row), "origin_city": names[row["origin"]], "destination_city": names[row["destination"]],
            "duration_min": row["duration_min"]}


@tool
def book_flight(
    ctx: ToolContext, flight_id: int, passengers: int = 1, refundable: bool = False,
    payment_method_id: int | None = None,
) -> dict:
    """Book seats on a flight for the logged-in user and return the confirmation code.

    Args:
        flight_id: The flight_id from search_flights.
        passengers: Number of travellers (1-9); the flight needs that many seats left.
        refundable: True for the refundable fare (costs more, can be cancelled later); default non-refundable.
        payment_method_id: One of your payment methods; default: your default payment method.
    """
    me = _me(ctx)
    _positive("passengers", passengers, MAX_PASSENGERS)
    flight = _flight(ctx, flight_id)
    if flight["date"] < ctx.env.today.isoformat():
        raise ToolError(f"flight {flight['flight_number']} left on {flight['date']}; only future flights can be booked")
    if flight["seats_left"] < passengers:
        raise ToolError(
            f"flight {flight['flight_number']} on {flight['date']} has {flight['seats_left']} seat(s) left; "
            f"{passengers} requested"
        )
    rowid, code, card = _new_booking(ctx, me, payment_method_id, "flight_bookings", "F")
    total = flight_total(flight["price"], flight["refundable_price"], passengers, refundable)
    ctx.db.execute(
        "INSERT INTO flight_bookings(id, code, user_id, flight_id, passengers, refundable, total_price, "
        "payment_method_id, status, booked_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
        (rowid, code, me["id"], flight_id, passengers, int(refundable), total, card, ctx.env.today.isoformat()),
    )
    ctx.db.execute("UPDATE flights SET seats_left = seats_left - ? WHERE id=?", (passengers, flight_id))
    return {
        "code": code, "status": "confirmed", "flight_number": flight["flight_number"], "date": flight["date"],
        "depart_time": flight["depart_time"], "origin": flight["origin"], "destination": flight["destination"],
        "passengers": passengers, "refundable": refundable, "total_price": total,
    }


# ---------------------------------------------------------------- hotels


@tool
def search_hotels(
    ctx: ToolContext, city: str, check_in: str | None = None, check_out: str | None = None, guests: int = 1,
    max_price: int | None = None,
) -> dict:
    """Find hotels in a city with their cheapest room that fits the guests, cheapest first.

    With check_in and check_out, only rooms free on every night of the stay count and hotels with none
    are listed as sold out; without dates, the list shows the hotels' room prices.

    Args:
        city: City name or airport code, e.g. 'Paris' or 'CDG'.
        check_in: Arrival date (YYYY-MM-DD, 'tomorrow', 'next Friday'); give check_out with it.
        check_out: Departure date; the stay is the nights from check_in up to check_out.
        guests: Number of guests the room must hold.
        max_price: Only rooms whose non-refundable price per night is at most this, in USD.
    """
    place = _city(ctx, "city", city)
    _positive("guests", guests, 8)
    if max_price is not None and max_price < 1:
        raise ToolError(f"argument 'max_price' must be a positive number of USD; got {max_price}")
    if (check_in is None) != (check_out is None):
        raise ToolError("give both 'check_in' and 'check_out', or neither")
    stay = _stay(ctx, check_in, check_out) if check_in is not None and check_out is not None else None
    hotels = ctx.query("SELECT * FROM hotels WHERE city_id=? ORDER BY id", (place["id"],))
    listed, sold_out = [], []
    for hotel in hotels:
        if stay is not None:
            rooms = available_room_types(ctx, hotel["id"], stay[0], stay[1], guests)
        else:
            rooms = ctx.query(
                "SELECT id, name, max_guests, price_per_night, refundable_price_per_night FROM room_types "
                "WHERE hotel_id=? AND max_guests>=? ORDER BY price_per_night, id", (hotel["id"], guests))
        if max_price is not None:
            rooms = [r for r in rooms if r["price_per_night"] <= max_price]
        if not rooms:
            fits = ctx.one("SELECT 1 AS ok FROM room_types WHERE hotel_id=? AND max_guests>=?", (hotel["id"], guests))
            if stay is not None and max_price is None and fits is not None:
                sold_out.append(hotel["name"])
            continue
        room = rooms[0]
        entry = {
            "hotel_id": hotel["id"], "name": hotel["name"], "stars": hotel["stars"], "rating": hotel["rating"],
            "cheapest_room_type_id": room["id"], "cheapest_room": room["name"],
            "price_per_night": room["price_per_night"],
        }
        if stay is not None:
            entry["total_price"] = room["price_per_night"] * stay[2]
        listed.append(entry)
    listed.sort(key=lambda h: (h["price_per_night"], h["hotel_id"]))
    result: dict[str, Any] = {"city": place["name"], "guests": guests, "hotels": listed[:MAX_RESULTS]}
    if stay is not None:
        result.update(check_in=stay[0], check_out=stay[1], nights=stay[2])
        if sold_out:
            result["sold_out_for_these_dates"] = sold_out
    return result


@tool
def get_hotel(ctx: ToolContext, hotel_id: int, check_in: str | None = None, check_out: str | None = None) -> dict:
    """Show a hotel: stars, guest rating, amenities, room types with prices, recent reviews.

    With check_in and check_out, each room type also shows how many rooms are free for that stay.

    Args:
        hotel_id: The hotel_id from search_hotels.
        check_in: Optional arrival date, to see availability.
        check_out: Optional departure date, to see availability.
    """
    hotel = _hotel(ctx, "SELECT h.*, c.name AS city FROM hotels h JOIN cities c ON c.id = h.city_id WHERE h.id=?",
                   hotel_id)
    if (check_in is None) != (check_out is None):
        raise ToolError("give both 'check_in' and 'check_out', or neither")
    stay = _stay(ctx, check_in, check_out) if check_in is not None and check_out is not None else None
    rooms = []
    for room in ctx.query("SELECT * FROM room_types WHERE hotel_id=? ORDER BY price_per_night, id", (hotel_id,)):
        entry = {
            "room_type_id": room["id"], "name": room["name"], "max_guests": room["max_guests"],
            "price_per_night": room["price_per_night"],
            "refundable_price_per_night": room["refundable_price_per_night"],
        }
        if stay is not None:
            entry["rooms_free"] = free_rooms(ctx, room["id"], room["total_rooms"], stay[0], stay[1])
        rooms.append(entry)
    reviews = ctx.query(
        "SELECT r.rating, r.comment, r.created_on, u.name AS author FROM reviews r JOIN users u ON u.id = r.user_id "
        "WHERE r.hotel_id=? ORDER BY r.created_on DESC, r.id DESC LIMIT 3", (hotel_id,))
    result = {
        "hotel_id": hotel["id"], "name": hotel["name"], "city": hotel["city"], "address": hotel["address"],
        "stars": hotel["stars"], "rating": hotel["rating"], "rating_scale": "guest rating out of 10",
        "review_count": hotel["review_count"], "amenities": hotel["amenities"].split(", "),
        "room_types": rooms, "recent_reviews": reviews,
    }
    if stay is not None:
        result.update(check_in=stay[0], check_out=stay[1], nights=stay[2])
    return result


@tool
def book_hotel(
    ctx: ToolContext, hotel_id: int, room_type_id: int, check_in: str, check_out: str, guests: int = 1,
    refundable: bool = False, payment_method_id: int | None = None,
) -> dict:
    """Reserve one room for the logged-in user and return the confirmation code.

    Args:
        hotel_id: The hotel_id from search_hotels.
        room_type_id: A room type of that hotel (see get_hotel); it must fit the guests and be free every night.
        check_in: Arrival date (YYYY-MM-DD, 'tomorrow', 'next Friday'); today or later.
        check_out: Departure date, 1 to 14 nights after check_in.
        guests: Number of guests in the room.
        refundable: True for the refundable rate (costs more, can be cancelled later); default non-refundable.
        payment_method_id: One of your payment methods; default: your default payment method.
    """
    me = _me(ctx)
    hotel = _hotel(ctx, "SELECT * FROM hotels WHERE id=?", hotel_id)
    room = ctx.one("SELECT * FROM room_types WHERE id=? AND hotel_id=?", (room_type_id, hotel_id))
    if room is None:
        raise ToolError(
            f"argument 'room_type_id': {hotel['name']} has no room type {room_type_id}; see get_hotel({hotel_id})")
    start, end, nights = _stay(ctx, check_in, check_out)
    if start < ctx.env.today.isoformat():
        raise ToolError(f"argument 'check_in' ({start}) is in the past; today is {ctx.env.today.isoformat()}")
    _positive("guests", guests, 8)
    if guests > room["max_guests"]:
        raise ToolError(f"a {room['name']} holds at most {room['max_guests']} guest(s); {guests} requested")
    if free_rooms(ctx, room_type_id, room["total_rooms"], start, end) < 1:
        raise ToolError(f"no {room['name']} is free at {hotel['name']} for every night from {start} to {end}")
    rowid, code, card = _new_booking(ctx, me, payment_method_id, "hotel_reservations", "H")
    total = stay_total(room["price_per_night"], room["refundable_price_per_night"], nights, refundable)
    ctx.db.execute(
        "INSERT INTO hotel_reservations(id, code, user_id, hotel_id, room_type_id, check_in, check_out, nights, "
        "guests, refundable, total_price, payment_method_id, status, booked_on) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
        (rowid, code, me["id"], hotel_id, room_type_id, start, end, nights, guests, int(refundable), total, card,
         ctx.env.today.isoformat()),
    )
    return {
        "code": code, "status": "confirmed", "hotel": hotel["name"], "room": room["name"], "check_in": start,
        "check_out": end, "nights": nights, "guests": guests, "refundable": refundable, "total_price": total,
    }


@tool
def review_hotel(ctx: ToolContext, hotel_id: int, rating: int, comment: str) -> dict:
    """Post the logged-in user's review of a hotel they have stayed at (one review per hotel).

    Args:
        hotel_id: The hotel to review.
        rating: 1 (terrible) to 5 (excellent).
        comment: The review text, 3-500 characters.
    """
    me = _me(ctx)
    hotel = row_by_id(ctx, "SELECT id, name FROM hotels WHERE id=?", "hotel_id", hotel_id, "hotel")
    if not 1 <= rating <= 5:
        raise ToolError(f"argument 'rating' must be between 1 and 5; got {rating}")
    text = comment.strip()
    if not 3 <= len(text) <= 500:
        raise ToolError(f"argument 'comment' must be 3-500 characters; got {len(text)}")
    today = ctx.env.today.isoformat()
    stayed = ctx.one(
        "SELECT id FROM hotel_reservations WHERE user_id=? AND hotel_id=? AND status='confirmed' AND check_out<=? "
        "ORDER BY id LIMIT 1", (me["id"], hotel_id, today))
    if stayed is None:
        raise ToolError(f"you can only review a hotel after a completed stay; you have none at {hotel['name']}")
    if ctx.one("SELECT id FROM reviews WHERE user_id=? AND hotel_id=?", (me["id"], hotel_id)) is not None:
        raise ToolError(f"you already reviewed {hotel['name']}; one review per hotel")
    cur = ctx.db.execute(
        "INSERT INTO reviews(hotel_id, user_id, rating, comment, created_on) VALUES (?, ?, ?, ?, ?)",
        (hotel_id, me["id"], rating, text, today))
    return {"review_id": cur.lastrowid, "hotel": hotel["name"], "rating": rating, "comment": text, "created_on": today}


# ---------------------------------------------------------------- my bookings


def _flight_booking_rows(ctx: ToolContext, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    rows = ctx.query(
        "SELECT b.code, b.passengers, b.refundable, b.total_price, b.status, b.booked_on, f.flight_number, "
        "f.airline, f.origin, f.destination, f.date, f.depart_time, f.arrive_time, co.name AS origin_city, "
        "cd.name AS destination_city FROM flight_bookings b JOIN flights f ON f.id = b.flight_id "
        "JOIN cities co ON co.airport_code = f.origin JOIN cities cd ON cd.airport_code = f.destination "
        f"WHERE {where} ORDER BY f.date, f.depart_time, b.id", params)
    return [{"type": "flight", **r, "refundable": bool(r["refundable"])} for r in rows]


def _hotel_booking_rows(ctx: ToolContext, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    rows = ctx.query(
        "SELECT r.code, h.name AS hotel, c.name AS city, t.name AS room, r.check_in, r.check_out, r.nights, "
        "r.guests, r.refundable, r.total_price, r.status, r.booked_on, r.hotel_id FROM hotel_reservations r "
        "JOIN hotels h ON h.id = r.hotel_id JOIN cities c ON c.id = h.city_id "
        f"JOIN room_types t ON t.id = r.room_type_id WHERE {where} ORDER BY r.check_in, r.id", params)
    return [{"type": "hotel", **r, "refundable": bool(r["refundable"])} for r in rows]


@tool
def list_my_bookings(
    ctx: ToolContext, kind: Literal["all", "flight", "hotel"] = "all", upcoming_only: bool = False
) -> dict:
    """List the logged-in user's flight bookings and hotel reservations, soonest first.

    Args:
        kind: 'flight', 'hotel' or 'all'.
        upcoming_only: True to hide trips that start before today.
    """
    me = _me(ctx)
    today = ctx.env.today.isoformat()
    result: dict[str, Any] = {"today": today}
    if kind in ("all", "flight"):
        where, params = ("b.user_id=? AND f.date>=?", (me["id"], today)) if upcoming_only else ("b.user_id=?", (me["id"],))
        result["flights"] = _flight_booking_rows(ctx, where, params)[:MAX_RESULTS]
    if kind in ("all", "hotel"):
        where, params = ("r.user_id=? AND r.check_in>=?", (me["id"], today)) if upcoming_only else ("r.user_id=?", (me["id"],))
        result["hotels"] = _hotel_booking_rows(ctx, where, params)[:MAX_RESULTS]
    return result


def _my_booking(ctx: ToolContext, user_id: int, code: str) -> dict[str, Any]:
    wanted = code.strip().upper()
    flights = _flight_booking_rows(ctx, "b.user_id=? AND b.code=?", (user_id, wanted))
    hotels = _hotel_booking_rows(ctx, "r.user_id=? AND r.code=?", (user_id, wanted))
    if not flights and not hotels:
        raise ToolError(f"argument 'code': you have no booking with confirmation code {code!r}; see list_my_bookings")
    return (flights or hotels)[0]


@tool
def get_booking(ctx: ToolContext, code: str) -> dict:
    """Show one of the logged-in user's bookings by its confirmation code.

    Args:
        code: Confirmation code, e.g. 'F7KQ2M' (flight) or 'H3XB9P' (hotel).
    """
    return _my_booking(ctx, _me(ctx)["id"], code)


@tool
def cancel_booking(ctx: ToolContext, code: str) -> dict:
    """Cancel one of the logged-in user's bookings; only refundable bookings that have not started can be cancelled.

    Args:
        code: Confirmation code of the flight booking or hotel reservation.
    """
    me = _me(ctx)
    booking = _my_booking(ctx, me["id"], code)
    today = ctx.env.today.isoformat()
    starts = booking["date"] if booking["type"] == "flight" else booking["check_in"]
    if booking["status"] == "cancelled":
        raise ToolError(f"booking {booking['code']} is already cancelled")
    if not booking["refundable"]:
        raise ToolError(f"booking {booking['code']} is non-refundable and cannot be cancelled")
    if starts <= today:
        raise ToolError(f"booking {booking['code']} starts on {starts} (today is {today}); it can no longer be cancelled")
    if booking["type"] == "flight":
        row = ctx.one("SELECT id, flight_id, passengers FROM flight_bookings WHERE code=?", (booking["code"],))
        assert row is not None
        ctx.db.execute("UPDATE flight_bookings SET status='cancelled', cancelled_on=? WHERE id=?", (today, row["id"]))
        ctx.db.execute("UPDATE flights SET seats_left = seats_left + ? WHERE id=?", (row["passengers"], row["flight_id"]))
    else:
        ctx.db.execute("UPDATE hotel_reservations SET status='cancelled', cancelled_on=? WHERE code=?",
                       (today, booking["code"]))
    return {"code": booking["code"], "type": booking["type"], "status": "cancelled", "refund": booking["total_price"]}


@tool
def list_my_payment_methods(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the logged-in user's payment methods; bookings use the default one unless told otherwise."""
    return listed_payment_methods(ctx, ("user_id", _me(ctx)["id"]))


TOOLS = [
    list_cities, search_flights, get_flight, book_flight, search_hotels, get_hotel, book_hotel,
    list_my_bookings, get_booking, cancel_booking, review_hotel, list_my_payment_methods,
]
