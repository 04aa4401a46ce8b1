"""Text pools the drive seed draws folder trees, file names and comments from.

File-name templates follow the attachment names of the mail app (Q2_budget_v3.xlsx, invoice_4821_...,
board_deck_Q3_v2.pptx), so later multi-app tasks can ask for "the file X mentioned in an email".
Placeholders: {q} quarter of the file's creation date, {month} its month name (lowercase), {mmdd},
{day} its ISO date, {num} a 4-digit number, {v} a version number, {company} a company slug,
{city} a city slug, {product} a project/product name, {role} a job-title slug, {team} a team slug.
Only invoice files contain the word 'invoice' and only files of a Reports folder contain 'report'.
"""

from __future__ import annotations

# extension -> (MIME type, kind shown by the tools, (min, max) size in KB)
FILE_TYPES: dict[str, tuple[str, str, tuple[int, int]]] = {
    "pdf": ("application/pdf", "pdf", (40, 6000)),
    "docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "document", (18, 1500)),
    "md": ("text/markdown", "document", (2, 60)),
    "txt": ("text/plain", "document", (1, 20)),
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "spreadsheet", (12, 3000)),
    "csv": ("text/csv", "spreadsheet", (5, 4000)),
    "pptx": ("application/vnd.openxmlformats-officedocument.presentationml.presentation", "presentation",
             (800, 30000)),
    "png": ("image/png", "image", (80, 5000)),
    "jpg": ("image/jpeg", "image", (900, 7000)),
    "svg": ("image/svg+xml", "image", (4, 300)),
    "mp4": ("video/mp4", "video", (40_000, 700_000)),
    "zip": ("application/zip", "archive", (5_000, 400_000)),
}

# folder kind -> file-name templates
FILE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "invoices": ("invoice_{num}_Q{q}_{company}.pdf",),
    "budgets": ("Q{q}_budget_v{v}.xlsx", "{team}_budget_2026.xlsx", "headcount_plan_2026.xlsx",
                "expense_forecast_H2.xlsx", "budget_summary_{num}.pdf"),
    "expenses": ("expense_claim_{month}_2026.xlsx", "receipts_{city}_trip.pdf", "mileage_log_2026.xlsx",
                 "card_statement_{month}.pdf"),
    "reports": ("{month}_sales_report.pdf", "Q{q}_performance_report.pdf", "weekly_metrics_report_{mmdd}.xlsx",
                "{product}_usage_report.pdf", "customer_churn_report_{month}.xlsx", "{month}_marketing_report.pptx",
                "pipeline_report_{mmdd}.xlsx", "support_tickets_report_{month}.csv"),
    "presentations": ("board_deck_Q{q}_v{v}.pptx", "H2_roadmap_v{v}.pptx", "{product}_launch_plan.pptx",
                      "all_hands_{month}.pptx", "customer_pitch_{company}.pptx", "quarterly_business_review_Q{q}.pptx"),
    "proposals": ("{company}_proposal_v{v}.pdf", "{company}_pricing_quote.xlsx", "{company}_statement_of_work.docx"),
    "contracts": ("msa_{company}_signed.pdf", "{company}_renewal_redlines.docx", "nda_{company}.pdf",
                  "{company}_order_form_{num}.pdf"),
    "campaigns": ("{product}_campaign_brief.docx", "social_calendar_{month}.xlsx", "{product}_press_release_v{v}.docx",
                  "newsletter_{month}_draft.docx", "webinar_plan_{product}.docx"),
    "assets": ("summer_party_flyer.png", "banner_{product}_1200x628.png", "{product}_logo.svg",
               "brand_video_{month}.mp4", "event_photos_{city}.zip"),
    "runbooks": ("migration_runbook_v{v}.md", "oncall_handbook.md", "deploy_checklist.md", "{product}_failover_steps.md"),
    "postmortems": ("postmortem_{num}.pdf", "incident_{num}_timeline.docx"),
    "specs": ("{product}_api_spec_v{v}.docx", "{product}_architecture.pdf", "data_model_{product}.xlsx"),
    "onboarding": ("onboarding_checklist.xlsx", "welcome_pack_{num}.pdf", "benefits_guide_2026.pdf",
                   "first_week_schedule.docx"),
    "policies": ("travel_policy_2026.pdf", "remote_work_policy.pdf", "security_policy_v{v}.pdf",
                 "expense_policy_2026.pdf"),
    "recruiting": ("candidate_resume_{num}.pdf", "interview_scorecard_{role}.xlsx", "job_description_{role}.docx",
                   "offer_letter_{num}.docx"),
    "mockups": ("homepage_mockup_v{v}.png", "{product}_wireframes_v{v}.pdf", "mobile_app_mockup_v{v}.png",
                "checkout_flow_v{v}.png"),
    "brand": ("brand_guidelines_2026.pdf", "logo_final.svg", "color_palette.png", "typography_specimen.pdf"),
    "photos": ("IMG_{num}.jpg", "team_offsite_{city}.jpg", "office_party_{month}.jpg", "whiteboard_{mmdd}.jpg"),
    "vendors": ("{company}_vendor_agreement.pdf", "vendor_list_2026.xlsx", "{company}_security_questionnaire.xlsx"),
    "notes": ("meeting_notes_{day}.docx", "{team}_sync_notes_{mmdd}.docx", "1on1_notes_{month}.docx",
              "retro_notes_{mmdd}.md"),
    "documents": ("offsite_agenda_v{v}.docx", "project_plan_{product}.docx", "team_directory.xlsx", "ideas.txt",
                  "okrs_2026_H2.docx", "org_chart_{month}.pdf"),
    "personal": ("tax_return_2025.pdf", "vacation_itinerary_{city}.pdf", "resume_2026.docx", "passport_scan.jpg",
                 "gym_membership.pdf"),
    "videos": ("all_hands_recording_{month}.mp4", "{product}_demo_recording.mp4", "training_session_{num}.mp4",
               "customer_call_{company}.mp4"),
    "project": ("{product}_project_plan.docx", "{product}_timeline.xlsx", "{product}_kickoff_deck.pptx",
                "{product}_requirements_v{v}.docx", "{product}_risk_register.xlsx", "{product}_status_update_{mmdd}.pdf",
                "{product}_budget_tracker.xlsx", "{product}_launch_checklist.xlsx"),
    "backups": ("laptop_backup_{day}.zip", "photo_archive_2025.zip", "mailbox_export_{month}.zip"),
}

# (path, folder kind) per profile; a path's parents must come first. Kind None: folder holds no files.
PROFILES: dict[str, tuple[tuple[str, str | None], ...]] = {
    "finance": (("Finance", "budgets"), ("Finance/Invoices", "invoices"), ("Finance/Expenses", "expenses"),
                ("Reports", "reports"), ("Documents", "documents")),
    "sales": (("Sales", None), ("Sales/Proposals", "proposals"), ("Sales/Contracts", "contracts"),
              ("Sales/Invoices", "invoices"), ("Reports", "reports"), ("Presentations", "presentations")),
    "marketing": (("Marketing", None), ("Marketing/Campaigns", "campaigns"), ("Marketing/Assets", "assets"),
                  ("Reports", "reports"), ("Presentations", "presentations"), ("Photos", "photos")),
    "engineering": (("Engineering", None), ("Engineering/Runbooks", "runbooks"),
                    ("Engineering/Postmortems", "postmortems"), ("Engineering/Specs", "specs"),
                    ("Reports", "reports"), ("Recordings", "videos")),
    "people": (("People", None), ("People/Onboarding", "onboarding"), ("People/Policies", "policies"),
               ("People/Recruiting", "recruiting"), ("Reports", "reports"), ("Documents", "documents")),
    "design": (("Design", None), ("Design/Mockups", "mockups"), ("Design/Brand", "brand"),
               ("Presentations", "presentations"), ("Photos", "photos"), ("Recordings", "videos")),
    "operations": (("Operations", None), ("Operations/Vendors", "vendors"), ("Operations/Invoices", "invoices"),
                   ("Reports", "reports"), ("Documents", "documents")),
}

# folders every Drive user has, besides the profile's
COMMON_FOLDERS: tuple[tuple[str, str | None], ...] = (("Meeting Notes", "notes"), ("Personal", "personal"))

# how many files a folder of each kind gets
FILES_PER_FOLDER: dict[str, tuple[int, int]] = {
    "invoices": (5, 8), "reports": (3, 6), "videos": (1, 3), "project": (4, 7), "backups": (1, 2),
}
DEFAULT_FILES_PER_FOLDER = (2, 4)

PROJECTS: tuple[str, ...] = ("Atlas", "Nimbus", "Orion", "Beacon", "Helix", "Summit", "Lumen", "Pioneer")
TEAMS: tuple[str, ...] = ("platform", "growth", "finance_ops", "customer_success", "analytics", "design")
ROLES: tuple[str, ...] = ("data_engineer", "product_designer", "account_executive", "staff_engineer",
                          "financial_analyst", "support_lead", "marketing_manager")

COMMENTS: tuple[str, ...] = (
    "Can we double-check the numbers on page 2?",
    "Looks good to me.",
    "Please update the totals before Friday.",
    "I added my notes in section 3.",
    "Which version is the final one?",
    "Approved from my side.",
    "The chart on slide 4 uses last quarter's data.",
    "Could you add the source for these figures?",
    "Small typo in the title.",
    "Let's discuss this at the next sync.",
    "I think the timeline is too aggressive.",
    "Thanks, this is really helpful!",
    "Can you share the raw data behind this?",
    "We should loop in legal before sending this out.",
)
