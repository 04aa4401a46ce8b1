"""Text pools the drive seed draws folder trees, file names and comments from.

File-name templates follow the attachment names of the mail app (Q2_budget_v3.xlsx, invoice_4821_...,
board_deck_Q3_v2.pptx), so later multi-app tasks can ask for "the file X mentioned in an email".
Placeholders: {q} quarter of the file's creation date, {month} its month name (lowercase), {mmdd},
{day} its ISO date, {num} a 4-digit number, {v} a version number, {company} a company slug,
{city} a city slug, {product} a project/product name, {role} a job-title slug, {team} a team slug.
Only invoice files contain the word 'invoice' and only files of a Reports folder contain 'report'.
The pools are data, in texts/content.json.
"""

from __future__ import annotations

from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)

# extension -> (MIME type, kind shown by the tools, (min, max) size in KB)
FILE_TYPES: dict[str, tuple[str, str, tuple[int, int]]] = TEXTS["FILE_TYPES"]

# folder kind -> file-name templates
FILE_TEMPLATES: dict[str, tuple[str, ...]] = TEXTS["FILE_TEMPLATES"]

# (path, folder kind) per profile; a path's parents must come first. Kind None: folder holds no files.
PROFILES: dict[str, tuple[tuple[str, str | None], ...]] = TEXTS["PROFILES"]

# folders every Drive user has, besides the profile's
COMMON_FOLDERS: tuple[tuple[str, str | None], ...] = TEXTS["COMMON_FOLDERS"]

# how many files a folder of each kind gets
FILES_PER_FOLDER: dict[str, tuple[int, int]] = {
    "invoices": (5, 8), "reports": (3, 6), "videos": (1, 3), "project": (4, 7), "backups": (1, 2),
}
DEFAULT_FILES_PER_FOLDER = (2, 4)

PROJECTS: tuple[str, ...] = TEXTS["PROJECTS"]
TEAMS: tuple[str, ...] = TEXTS["TEAMS"]
ROLES: tuple[str, ...] = TEXTS["ROLES"]

COMMENTS: tuple[str, ...] = TEXTS["COMMENTS"]
