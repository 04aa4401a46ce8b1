"""Word lists the tracker seed and task generators draw ticket text from.

Kept apart from the seed logic so generators can build new, realistic summaries with the same
vocabulary (a created ticket reads like the seeded ones).
"""

from __future__ import annotations

# key, name, description, workflow, areas (the components its tickets are about)
PROJECTS: list[tuple[str, str, str, str, list[str]]] = [
    ("PLAT", "Platform", "Shared services, authentication and the internal API platform.", "software",
     ["auth service", "API gateway", "rate limiter", "session store", "feature flags", "config service"]),
    ("MOB", "Mobile App", "The iOS and Android apps customers use every day.", "qa",
     ["login screen", "push notifications", "offline sync", "settings page", "onboarding flow", "image cache"]),
    ("WEB", "Web Storefront", "The customer-facing web shop: catalog, cart and checkout.", "software",
     ["checkout page", "product catalog", "shopping cart", "order history", "search bar", "promo banner"]),
    ("DATA", "Data Pipeline", "Ingestion jobs, ETL and the analytics warehouse.", "software",
     ["ingestion job", "warehouse loader", "dedup step", "daily export", "schema registry", "metrics rollup"]),
    ("PAY", "Payments", "Billing, invoices, refunds and payment providers.", "qa",
     ["invoice generator", "refund flow", "card vault", "payout scheduler", "tax calculator", "billing portal"]),
    ("SEC", "Security", "Security reviews, hardening and compliance work.", "basic",
     ["SSO integration", "audit log", "secret rotation", "access reviews", "WAF rules", "password policy"]),
    ("OPS", "Operations", "Infrastructure, on-call tooling and the release pipeline.", "basic",
     ["deploy pipeline", "on-call rota", "log shipping", "backup job", "Kubernetes cluster", "status page"]),
    ("SRCH", "Search", "The search index, ranking and query APIs.", "software",
     ["query parser", "ranking model", "index builder", "autocomplete", "synonym list", "search API"]),
    ("GROW", "Growth", "Onboarding, experiments, referrals and notifications.", "software",
     ["signup funnel", "referral program", "email digest", "A/B test framework", "welcome tour", "pricing page"]),
    ("INT", "Integrations", "Webhooks, partner APIs and third-party connectors.", "qa",
     ["webhook sender", "Slack connector", "Salesforce sync", "partner API", "CSV importer", "OAuth app"]),
]

JOB_TITLES = [
    "Software Engineer",
    "Senior Software Engineer",
    "Staff Engineer",
    "QA Engineer",
    "Product Manager",
    "Engineering Manager",
    "Designer",
    "Data Engineer",
    "Site Reliability Engineer",
    "Security Engineer",
]

CONDITIONS = [
    "the cart is empty",
    "the user has no email",
    "the token has expired",
    "two requests arrive at once",
    "the locale is de_DE",
    "the payload is over 10 MB",
    "the network drops",
    "the account was just created",
    "a field contains emoji",
    "the time zone changes",
]
FEATURES = [
    "dark mode",
    "CSV export",
    "bulk edit",
    "saved filters",
    "audit history",
    "SSO login",
    "retry with backoff",
    "usage alerts",
    "pagination",
    "keyboard shortcuts",
    "a health check",
    "per-team quotas",
]
DEPENDENCIES = ["the HTTP client", "the ORM", "the logging library", "Node 22", "Python 3.13", "the TLS library"]
TARGETS = ["the new queue", "Postgres 17", "the shared cluster", "managed secrets", "the v2 API"]

TEMPLATES: dict[str, list[str]] = {
    "bug": [
        "{area} returns 500 when {cond}",
        "{area} times out under load",
        "Crash in {area} when {cond}",
        "{area} shows stale data after a refresh",
        "Wrong totals in {area}",
        "{area} ignores the retry setting",
        "Memory leak in {area}",
        "{area} fails on Safari",
        "Duplicate events from {area}",
        "{area} breaks when {cond}",
    ],
    "story": [
        "Add {feat} to {area}",
        "Support {feat} in {area}",
        "Let admins configure {area}",
        "Show {feat} in {area}",
        "Redesign {area}",
        "Track usage of {area}",
    ],
    "task": [
        "Upgrade {dep} in {area}",
        "Write a runbook for {area}",
        "Add monitoring for {area}",
        "Migrate {area} to {target}",
        "Load test {area}",
        "Remove dead code from {area}",
        "Document the {area} API",
    ],
    "epic": [
        "{area} revamp",
        "{area} reliability push",
        "{area} v2",
    ],
}

DESCRIPTIONS: dict[str, list[str]] = {
    "bug": [
        "Seen in production since the last release. Steps to reproduce are in the linked log.",
        "Reported by two customers this week; support has a workaround for now.",
        "Happens about once an hour on staging. Started after the dependency bump.",
        "QA found this during regression testing.",
    ],
    "story": [
        "Customers keep asking for this in feedback calls.",
        "Part of the quarterly roadmap; design is attached to the epic.",
        "Product wants this behind a feature flag first.",
        "Needed before the partner launch.",
    ],
    "task": [
        "Housekeeping that keeps the on-call load down.",
        "Follow-up from the last incident review.",
        "Required by the platform team before the next upgrade window.",
        "Small, self-contained; good for a new joiner.",
    ],
    "epic": [
        "Umbrella for the work planned this quarter.",
        "Groups the stories and tasks of this initiative.",
    ],
}

GOALS = [
    "Ship {feat} for {area}",
    "Stabilise {area}",
    "Finish the {area} migration",
    "Burn down {area} bugs",
    "Prepare {area} for launch",
]

COMMENTS = [
    "I can reproduce this on staging.",
    "Picking this up after standup.",
    "Blocked on a review from the platform team.",
    "Added a test case that covers this.",
    "Can we split this into two tickets?",
    "Design signed off, good to go.",
    "Pushed a first draft, feedback welcome.",
    "This needs a product decision before we continue.",
    "Moved the due date after the planning call.",
    "Pairing with QA on this tomorrow.",
]

WORKLOG_NOTES = [
    "Investigation",
    "Implementation",
    "Code review fixes",
    "Writing tests",
    "Pairing session",
    "Debugging on staging",
    "",
]
