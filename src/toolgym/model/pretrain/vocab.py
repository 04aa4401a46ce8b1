"""Entity vocabularies and value generators for the synthetic pre-training corpus.

Words come from Faker's pinned word lists (people, places, lorem) plus hand-written domain
nouns chosen from domains the env suite does not model (gardens, labs, boats, ...), so tool
names built from them never coincide with the suite's tools while the *shapes* of values
(names, usernames, emails, ids, codes, dates, prices) are the ones tool use meets everywhere.
"""

from __future__ import annotations

import datetime as dt
import random
import string
from dataclasses import dataclass

from faker.providers.address.en_US import Provider as _AddressProvider
from faker.providers.lorem.en_US import Provider as _LoremProvider
from faker.providers.person.en_US import Provider as _PersonProvider

FIRST_NAMES: tuple[str, ...] = tuple(_PersonProvider.first_names)
LAST_NAMES: tuple[str, ...] = tuple(_PersonProvider.last_names)
LOREM_WORDS: tuple[str, ...] = tuple(w for w in _LoremProvider.word_list if len(w) > 2)
CITY_PREFIXES: tuple[str, ...] = tuple(_AddressProvider.city_prefixes)
CITY_SUFFIXES: tuple[str, ...] = tuple(dict.fromkeys(_AddressProvider.city_suffixes))

WORLD_CITIES: tuple[str, ...] = (
    "Lisbon", "Porto", "Madrid", "Seville", "Valencia", "Paris", "Lyon", "Marseille", "Nice", "Rome",
    "Milan", "Naples", "Turin", "Venice", "Berlin", "Munich", "Hamburg", "Cologne", "Vienna", "Zurich",
    "Geneva", "Basel", "Prague", "Warsaw", "Krakow", "Budapest", "Athens", "Oslo", "Bergen", "Stockholm",
    "Helsinki", "Copenhagen", "Dublin", "Cork", "London", "Leeds", "Bristol", "Glasgow", "Edinburgh",
    "Cardiff", "Amsterdam", "Utrecht", "Brussels", "Antwerp", "Ghent", "Tallinn", "Riga", "Vilnius",
    "Sofia", "Bucharest", "Zagreb", "Split", "Ljubljana", "Istanbul", "Cairo", "Tunis", "Nairobi",
    "Accra", "Lagos", "Dakar", "Casablanca", "Cape Town", "Durban", "Mumbai", "Delhi", "Pune", "Chennai",
    "Kolkata", "Dhaka", "Colombo", "Bangkok", "Hanoi", "Manila", "Jakarta", "Singapore", "Seoul", "Busan",
    "Tokyo", "Osaka", "Kyoto", "Sapporo", "Taipei", "Shanghai", "Beijing", "Shenzhen", "Sydney",
    "Melbourne", "Perth", "Auckland", "Wellington", "Toronto", "Montreal", "Vancouver", "Calgary",
    "Ottawa", "Boston", "Chicago", "Denver", "Austin", "Dallas", "Houston", "Phoenix", "Seattle",
    "Portland", "Atlanta", "Miami", "Tampa", "Detroit", "Memphis", "Nashville", "Omaha", "Tucson",
    "Lima", "Quito", "Bogota", "Santiago", "Buenos Aires", "Montevideo", "Caracas", "Havana", "Mexico City",
)

# (singular, plural) nouns for tool domains the env suite does not model.
DOMAIN_NOUNS: tuple[tuple[str, str], ...] = (
    ("garden", "gardens"), ("plant", "plants"), ("seedling", "seedlings"), ("greenhouse", "greenhouses"),
    ("recipe", "recipes"), ("ingredient", "ingredients"), ("pantry_item", "pantry_items"),
    ("telescope", "telescopes"), ("observation", "observations"), ("boat", "boats"), ("dock", "docks"),
    ("vessel", "vessels"), ("cargo", "cargos"), ("shipment", "shipments"), ("pallet", "pallets"),
    ("warehouse", "warehouses"), ("sample", "samples"), ("specimen", "specimens"),
    ("experiment", "experiments"), ("enclosure", "enclosures"), ("animal", "animals"),
    ("painting", "paintings"), ("exhibit", "exhibits"), ("sculpture", "sculptures"),
    ("instrument", "instruments"), ("rehearsal", "rehearsals"), ("song", "songs"), ("playlist", "playlists"),
    ("album", "albums"), ("vehicle", "vehicles"), ("bike", "bikes"), ("scooter", "scooters"),
    ("trail", "trails"), ("campsite", "campsites"), ("tent", "tents"), ("orchard", "orchards"),
    ("hive", "hives"), ("sensor", "sensors"), ("reading", "readings"), ("printer", "printers"),
    ("badge", "badges"), ("locker", "lockers"), ("parcel", "parcels"), ("meal", "meals"),
    ("workout", "workouts"), ("course", "courses"), ("lesson", "lessons"), ("student", "students"),
    ("volunteer", "volunteers"), ("shift", "shifts"), ("pet", "pets"), ("kennel", "kennels"),
    ("wine", "wines"), ("cellar", "cellars"), ("brew", "brews"), ("batch", "batches"),
    ("robot", "robots"), ("drone", "drones"), ("battery", "batteries"), ("panel", "panels"),
    ("turbine", "turbines"), ("well", "wells"), ("pump", "pumps"), ("valve", "valves"),
    ("fossil", "fossils"), ("mineral", "minerals"), ("crate", "crates"), ("tool_kit", "tool_kits"),
    ("costume", "costumes"), ("puppet", "puppets"), ("kite", "kites"), ("quilt", "quilts"),
    ("pottery", "potteries"), ("candle", "candles"), ("lamp", "lamps"), ("mural", "murals"),
    ("bakery_order", "bakery_orders"), ("cake", "cakes"), ("pie", "pies"), ("cheese", "cheeses"),
    ("herb", "herbs"), ("spice", "spices"), ("tea", "teas"), ("coffee_bean", "coffee_beans"),
    ("aquarium", "aquariums"), ("fish_tank", "fish_tanks"), ("coral", "corals"), ("bird", "birds"),
    ("nest", "nests"), ("feeder", "feeders"), ("tractor", "tractors"), ("field", "fields"),
    ("harvest", "harvests"), ("silo", "silos"), ("mill", "mills"), ("forge", "forges"),
    ("chess_club", "chess_clubs"), ("tournament", "tournaments"), ("team", "teams"), ("match", "matches"),
    ("locomotive", "locomotives"), ("wagon", "wagons"), ("lighthouse", "lighthouses"), ("buoy", "buoys"),
)

READ_VERBS: tuple[str, ...] = ("get", "fetch", "show", "lookup", "read", "describe", "inspect", "view")
SEARCH_VERBS: tuple[str, ...] = ("search", "find", "list", "browse", "query", "scan", "filter")
WRITE_VERBS: tuple[str, ...] = (
    "create", "add", "register", "log", "schedule", "assign", "reserve", "order", "ship", "tag", "rate",
    "transfer", "close", "open", "move", "rename", "update", "cancel", "remove", "archive", "approve",
    "reject", "adopt", "plant", "water", "repair", "inspect", "calibrate", "refill", "paint", "rent",
    "borrow", "return", "enroll", "invite", "lock", "unlock", "pause", "resume", "clone", "merge_into",
    "flag", "pin", "star", "mark", "claim", "donate", "label_as", "move_to", "set", "restock",
)
WRITE_PHRASES: dict[str, str] = {
    "merge_into": "merge", "label_as": "label", "move_to": "move", "set": "set up",
}

ENUM_SETS: dict[str, tuple[str, ...]] = {
    "color": ("red", "blue", "green", "yellow", "black", "white", "orange", "purple", "grey", "teal"),
    "status": ("active", "pending", "closed", "paused", "archived", "ready", "broken", "done"),
    "priority": ("low", "medium", "high", "urgent"),
    "size": ("small", "medium", "large", "huge"),
    "level": ("beginner", "intermediate", "advanced", "expert"),
    "category": ("indoor", "outdoor", "seasonal", "rare", "common", "premium", "basic"),
    "mode": ("manual", "automatic", "scheduled", "instant"),
    "visibility": ("private", "shared", "public"),
    "condition": ("new", "used", "refurbished", "damaged"),
    "shift_type": ("morning", "evening", "night", "weekend"),
}

EMAIL_DOMAINS: tuple[str, ...] = (
    "mailbox.test", "post.local", "inbox.dev", "corp.internal", "team.io", "acme.co", "north.net",
    "blue.org", "lab.edu", "studio.xyz",
)

WEEKDAYS: tuple[str, ...] = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def person_name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def username_of(name: str, rng: random.Random) -> str:
    base = name.lower().replace("'", "").replace(" ", rng.choice([".", ".", "_", ""]))
    return base if rng.random() < 0.8 else f"{base}{rng.randint(2, 99)}"


def email_of(username: str, rng: random.Random) -> str:
    return f"{username.replace('_', '.')}@{rng.choice(EMAIL_DOMAINS)}"


def city(rng: random.Random) -> str:
    if rng.random() < 0.6:
        return rng.choice(WORLD_CITIES)
    first = rng.choice(FIRST_NAMES) if rng.random() < 0.5 else rng.choice(LAST_NAMES)
    if rng.random() < 0.5:
        return f"{rng.choice(CITY_PREFIXES)} {first}"
    return f"{first}{rng.choice(CITY_SUFFIXES)}"


def title(rng: random.Random, low: int = 2, high: int = 4) -> str:
    words = [rng.choice(LOREM_WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize()


def sentence(rng: random.Random) -> str:
    return title(rng, 4, 9) + "."


def slug(rng: random.Random) -> str:
    return "-".join(rng.choice(LOREM_WORDS) for _ in range(rng.randint(1, 3)))


def path(rng: random.Random) -> str:
    """Namespaced names: `owner/name`, `r/word`, `team/word-word`."""
    roll = rng.random()
    if roll < 0.5:
        return f"{username_of(person_name(rng), rng)}/{slug(rng)}"
    if roll < 0.75:
        return f"r/{rng.choice(LOREM_WORDS)}{rng.choice(LOREM_WORDS) if rng.random() < 0.4 else ''}"
    return f"{rng.choice(LOREM_WORDS)}/{slug(rng)}"


def code(rng: random.Random) -> str:
    """Reference codes in several common shapes (confirmation numbers, serials, tracking ids)."""
    shape = rng.randrange(5)
    letters, digits = string.ascii_uppercase, string.digits
    if shape == 0:
        return "".join(rng.choice(letters + digits) for _ in range(6))
    if shape == 1:
        return "".join(rng.choice(letters) for _ in range(2)) + "-" + "".join(rng.choice(digits) for _ in range(4))
    if shape == 2:
        return "".join(rng.choice(letters) for _ in range(3)) + "".join(rng.choice(digits) for _ in range(3))
    if shape == 3:
        return "".join(rng.choice("0123456789abcdef") for _ in range(8))
    return "".join(rng.choice(letters) for _ in range(1)) + "".join(rng.choice(digits) for _ in range(5))


def item_id(rng: random.Random, style: str) -> int | str:
    """An identifier in the episode's id style: small int, large int, or prefixed string."""
    if style == "int":
        return rng.randint(1, 999)
    if style == "bigint":
        return rng.randint(1000, 99999)
    prefix = style.split(":", 1)[1] if ":" in style else "X"
    return f"{prefix}-{rng.randint(100, 9999)}"


def id_style(rng: random.Random, noun: str) -> str:
    roll = rng.random()
    if roll < 0.45:
        return "int"
    if roll < 0.7:
        return "bigint"
    letters = "".join(ch for ch in noun.upper() if ch.isalpha())
    return "prefix:" + (letters[:2] if rng.random() < 0.5 else letters[:3])


def iso_date(rng: random.Random, start: dt.date | None = None, span_days: int = 700) -> str:
    base = start or dt.date(2024, 1, 1)
    return (base + dt.timedelta(days=rng.randrange(span_days))).isoformat()


def clock_time(rng: random.Random) -> str:
    return f"{rng.randint(6, 21):02d}:{rng.choice(['00', '15', '30', '45'])}"


def price(rng: random.Random) -> float | int:
    if rng.random() < 0.5:
        return rng.randint(5, 900)
    return round(rng.uniform(2, 500), 2)


def phone(rng: random.Random) -> str:
    return f"+{rng.randint(1, 49)}-{rng.randint(200, 989)}-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"


@dataclass(frozen=True)
class DateExpression:
    """A relative date phrase and the ISO date it means, given the current date."""

    phrase: str
    iso: str


def relative_date(rng: random.Random, today: dt.date) -> DateExpression:
    """Phrases people use for dates, resolved like `toolgym.envs.resolve_date` does."""
    roll = rng.randrange(10)
    if roll == 0:
        return DateExpression("today", today.isoformat())
    if roll in (1, 2):
        return DateExpression("tomorrow", (today + dt.timedelta(days=1)).isoformat())
    if roll == 3:
        return DateExpression("yesterday", (today - dt.timedelta(days=1)).isoformat())
    if roll == 4:
        n = rng.randint(2, 14)
        return DateExpression(f"in {n} days", (today + dt.timedelta(days=n)).isoformat())
    if roll == 5:
        n = rng.randint(2, 10)
        return DateExpression(f"{n} days ago", (today - dt.timedelta(days=n)).isoformat())
    if roll == 6:
        return DateExpression("the day after tomorrow", (today + dt.timedelta(days=2)).isoformat())
    target = rng.randrange(7)
    name = WEEKDAYS[target]
    if roll == 7:
        delta = (target - today.weekday()) % 7
        return DateExpression(f"this {name}" if rng.random() < 0.5 else f"on {name}", (today + dt.timedelta(days=delta)).isoformat())
    if roll == 8:
        delta = (target - today.weekday()) % 7 or 7
        return DateExpression(f"next {name}", (today + dt.timedelta(days=delta)).isoformat())
    delta = (today.weekday() - target) % 7 or 7
    return DateExpression(f"last {name}", (today - dt.timedelta(days=delta)).isoformat())
