"""Word lists the maps seed draws from: neighborhoods with real streets, fictional place names, review text.

Streets and neighborhoods are real (Boston, Cambridge, Somerville, Brookline) so addresses read like
the ones in mail invites; every business name is invented, so no model "knows" its rating or hours.
The company offices are where the mail app's meeting rooms (Room 4A, Boardroom, ...) are. The lists are
data, in texts/content.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)


@dataclass(frozen=True)
class Neighborhood:
    name: str
    city: str
    zip_code: str
    lat: float
    lon: float
    streets: tuple[str, ...]


NEIGHBORHOODS: tuple[Neighborhood, ...] = tuple(Neighborhood(**fields) for fields in TEXTS["NEIGHBORHOODS"])

# (name, neighborhood, street number, street, detail): the company the mail app's people work for.
OFFICES: tuple[tuple[str, str, int, str], ...] = TEXTS["OFFICES"]
# Meeting rooms of mail calendar invites, all inside Example HQ: (alias, where in the building).
HQ_ROOMS: tuple[tuple[str, str], ...] = TEXTS["HQ_ROOMS"]

CUISINE_NAMES: dict[str, tuple[str, ...]] = TEXTS["CUISINE_NAMES"]
CAFE_PREFIXES: tuple[str, ...] = TEXTS["CAFE_PREFIXES"]
CAFE_SUFFIXES: tuple[str, ...] = TEXTS["CAFE_SUFFIXES"]
BAKERIES: tuple[str, ...] = TEXTS["BAKERIES"]
BARS: tuple[str, ...] = TEXTS["BARS"]
MUSEUMS: tuple[str, ...] = TEXTS["MUSEUMS"]
PARKS: tuple[str, ...] = TEXTS["PARKS"]
PHARMACY_BRANDS: tuple[str, ...] = TEXTS["PHARMACY_BRANDS"]
GAS_BRANDS: tuple[str, ...] = TEXTS["GAS_BRANDS"]
SUPERMARKET_BRANDS: tuple[str, ...] = TEXTS["SUPERMARKET_BRANDS"]
GYM_BRANDS: tuple[str, ...] = TEXTS["GYM_BRANDS"]

# How many places of each kind a neighborhood gets: (min, max).
PLACE_COUNTS: dict[str, tuple[int, int]] = {
    "restaurant": (3, 4), "cafe": (1, 3), "bakery": (0, 1), "bar": (1, 2), "pharmacy": (1, 2),
    "gas_station": (0, 1), "supermarket": (1, 1), "gym": (0, 1), "park": (0, 1), "museum": (0, 1),
    "library": (0, 1),
}

REVIEW_TEXT: dict[str, dict[int, tuple[str, ...]]] = {
    kind: {int(stars): texts for stars, texts in by_stars.items()} for kind, by_stars in TEXTS["REVIEW_TEXT"].items()
}
REVIEW_KIND = TEXTS["REVIEW_KIND"]

# Custom saved lists and the categories they collect.
CUSTOM_LISTS: dict[str, tuple[str, ...]] = TEXTS["CUSTOM_LISTS"]
LIST_NOTES: tuple[str, ...] = TEXTS["LIST_NOTES"]
