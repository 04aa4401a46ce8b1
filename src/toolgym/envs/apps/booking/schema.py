"""SQL schema of the booking app: cities with airports, flights, hotels and rooms, bookings, payments, reviews.

Prices are whole US dollars (INTEGER) so answers and checks compare exact numbers. Dates are ISO
text (YYYY-MM-DD), times HH:MM local. Availability of hotel rooms is not stored: it is computed from
the confirmed reservations overlapping each night, so a cancellation frees the room with no counter.
"""

from toolgym.envs import kit

SCHEMA = f"""
{kit.POPULATION_USERS_TABLE}
CREATE TABLE cities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL,
    airport_code TEXT NOT NULL UNIQUE,
    airport_name TEXT NOT NULL
);

CREATE TABLE flights (
    id INTEGER PRIMARY KEY,
    flight_number TEXT NOT NULL,
    airline TEXT NOT NULL,
    origin TEXT NOT NULL REFERENCES cities(airport_code),
    destination TEXT NOT NULL REFERENCES cities(airport_code),
    date TEXT NOT NULL,
    depart_time TEXT NOT NULL,
    arrive_time TEXT NOT NULL,
    duration_min INTEGER NOT NULL CHECK (duration_min > 0),
    price INTEGER NOT NULL CHECK (price > 0),
    refundable_price INTEGER NOT NULL CHECK (refundable_price >= price),
    seats_left INTEGER NOT NULL CHECK (seats_left >= 0),
    UNIQUE (flight_number, date),
    CHECK (origin != destination)
);
CREATE INDEX idx_flights_route_date ON flights(origin, destination, date, depart_time);

CREATE TABLE hotels (
    id INTEGER PRIMARY KEY,
    city_id INTEGER NOT NULL REFERENCES cities(id),
    name TEXT NOT NULL UNIQUE,
    address TEXT NOT NULL,
    stars INTEGER NOT NULL CHECK (stars BETWEEN 1 AND 5),
    rating REAL NOT NULL CHECK (rating BETWEEN 0 AND 10),
    review_count INTEGER NOT NULL CHECK (review_count >= 0),
    amenities TEXT NOT NULL
);
CREATE INDEX idx_hotels_city ON hotels(city_id);

CREATE TABLE room_types (
    id INTEGER PRIMARY KEY,
    hotel_id INTEGER NOT NULL REFERENCES hotels(id),
    name TEXT NOT NULL,
    max_guests INTEGER NOT NULL CHECK (max_guests BETWEEN 1 AND 8),
    price_per_night INTEGER NOT NULL CHECK (price_per_night > 0),
    refundable_price_per_night INTEGER NOT NULL CHECK (refundable_price_per_night >= price_per_night),
    total_rooms INTEGER NOT NULL CHECK (total_rooms > 0),
    UNIQUE (hotel_id, name)
);
CREATE INDEX idx_room_types_hotel ON room_types(hotel_id);

{kit.CARDS_TABLE}
CREATE TABLE flight_bookings (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    user_id INTEGER NOT NULL REFERENCES users(id),
    flight_id INTEGER NOT NULL REFERENCES flights(id),
    passengers INTEGER NOT NULL CHECK (passengers BETWEEN 1 AND 9),
    refundable INTEGER NOT NULL CHECK (refundable IN (0, 1)),
    total_price INTEGER NOT NULL CHECK (total_price > 0),
    payment_method_id INTEGER NOT NULL REFERENCES payment_methods(id),
    status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
    booked_on TEXT NOT NULL,
    cancelled_on TEXT
);
CREATE INDEX idx_flight_bookings_user ON flight_bookings(user_id);
CREATE INDEX idx_flight_bookings_flight ON flight_bookings(flight_id);

CREATE TABLE hotel_reservations (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    user_id INTEGER NOT NULL REFERENCES users(id),
    hotel_id INTEGER NOT NULL REFERENCES hotels(id),
    room_type_id INTEGER NOT NULL REFERENCES room_types(id),
    check_in TEXT NOT NULL,
    check_out TEXT NOT NULL,
    nights INTEGER NOT NULL CHECK (nights BETWEEN 1 AND 14),
    guests INTEGER NOT NULL CHECK (guests BETWEEN 1 AND 8),
    refundable INTEGER NOT NULL CHECK (refundable IN (0, 1)),
    total_price INTEGER NOT NULL CHECK (total_price > 0),
    payment_method_id INTEGER NOT NULL REFERENCES payment_methods(id),
    status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
    booked_on TEXT NOT NULL,
    cancelled_on TEXT,
    CHECK (check_out > check_in)
);
CREATE INDEX idx_hotel_reservations_user ON hotel_reservations(user_id);
CREATE INDEX idx_hotel_reservations_room ON hotel_reservations(room_type_id, check_in);

CREATE TABLE reviews (
    id INTEGER PRIMARY KEY,
    hotel_id INTEGER NOT NULL REFERENCES hotels(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    comment TEXT NOT NULL,
    created_on TEXT NOT NULL,
    UNIQUE (hotel_id, user_id)
);
CREATE INDEX idx_reviews_user ON reviews(user_id);
"""
