"""SQL schema of the maps app: places with weekly hours and closures, reviews, saved lists, and visits.

Coordinates are WGS84 degrees; distances and travel times are computed from them (rules.py), so no
route table can disagree with the map. Times of day are 'HH:MM' text ('24:00' closes at midnight),
dates ISO text. List names compare case-insensitively, so 'favorites' and 'Favorites' clash.
`places.search_text` is derived at seed time (rules.search_text) so a text search is one instr() per row.
"""

SCHEMA = """
CREATE TABLE places (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    category TEXT NOT NULL CHECK (category IN ('restaurant', 'cafe', 'bakery', 'bar', 'museum', 'park',
        'pharmacy', 'gas_station', 'supermarket', 'gym', 'library', 'office')),
    cuisine TEXT,
    address TEXT NOT NULL UNIQUE,
    neighborhood TEXT NOT NULL,
    city TEXT NOT NULL,
    lat REAL NOT NULL CHECK (lat BETWEEN -90 AND 90),
    lon REAL NOT NULL CHECK (lon BETWEEN -180 AND 180),
    phone TEXT NOT NULL,
    rating REAL NOT NULL CHECK (rating BETWEEN 1 AND 5),
    review_count INTEGER NOT NULL CHECK (review_count >= 0),
    price_level INTEGER CHECK (price_level BETWEEN 1 AND 4),
    search_text TEXT NOT NULL  -- lowercase words a query matches: name, kind, cuisine, area, rooms inside
);
CREATE INDEX idx_places_category_city ON places(category, city);
CREATE INDEX idx_places_city ON places(city);

CREATE TABLE place_aliases (
    id INTEGER PRIMARY KEY,
    place_id INTEGER NOT NULL REFERENCES places(id),
    alias TEXT NOT NULL UNIQUE COLLATE NOCASE,
    detail TEXT NOT NULL
);
CREATE INDEX idx_place_aliases_place ON place_aliases(place_id);

CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    home_address TEXT NOT NULL,
    home_neighborhood TEXT NOT NULL,
    home_city TEXT NOT NULL,
    home_lat REAL NOT NULL,
    home_lon REAL NOT NULL,
    work_place_id INTEGER REFERENCES places(id)
);

CREATE TABLE opening_hours (
    id INTEGER PRIMARY KEY,
    place_id INTEGER NOT NULL REFERENCES places(id),
    weekday INTEGER NOT NULL CHECK (weekday BETWEEN 0 AND 6),
    opens TEXT NOT NULL,
    closes TEXT NOT NULL,
    UNIQUE (place_id, weekday),
    CHECK (opens < closes)
);
CREATE INDEX idx_opening_hours_weekday ON opening_hours(weekday, opens, closes);

CREATE TABLE closures (
    id INTEGER PRIMARY KEY,
    place_id INTEGER NOT NULL REFERENCES places(id),
    date TEXT NOT NULL,
    reason TEXT NOT NULL,
    UNIQUE (place_id, date)
);
CREATE INDEX idx_closures_date ON closures(date);

CREATE TABLE reviews (
    id INTEGER PRIMARY KEY,
    place_id INTEGER NOT NULL REFERENCES places(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    stars INTEGER NOT NULL CHECK (stars BETWEEN 1 AND 5),
    text TEXT NOT NULL,
    created_on TEXT NOT NULL,
    UNIQUE (place_id, user_id)
);
CREATE INDEX idx_reviews_user ON reviews(user_id);

CREATE TABLE saved_lists (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    name TEXT NOT NULL COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    created_on TEXT NOT NULL,
    UNIQUE (user_id, name)
);

CREATE TABLE saved_places (
    id INTEGER PRIMARY KEY,
    list_id INTEGER NOT NULL REFERENCES saved_lists(id),
    place_id INTEGER NOT NULL REFERENCES places(id),
    note TEXT NOT NULL DEFAULT '',
    saved_on TEXT NOT NULL,
    UNIQUE (list_id, place_id)
);
CREATE INDEX idx_saved_places_place ON saved_places(place_id);

CREATE TABLE visits (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    place_id INTEGER NOT NULL REFERENCES places(id),
    date TEXT NOT NULL,
    arrived TEXT NOT NULL,
    departed TEXT NOT NULL,
    CHECK (arrived < departed)
);
CREATE INDEX idx_visits_user_date ON visits(user_id, date, arrived);
CREATE INDEX idx_visits_place ON visits(place_id);
"""
