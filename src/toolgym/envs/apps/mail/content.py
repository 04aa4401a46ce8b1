"""Text pools the seed draws realistic mail and calendar content from.

Each topic's subjects contain its `keyword`, and no topic's text contains another topic's keyword,
so "the latest email about the <keyword>" has one clear meaning (tests/test_app_mail.py checks it).
Placeholders in braces are filled by the seed: {first} recipient first name, {me} sender first
name, {company}, {city}, {amount}, {date}, {day}, {num}, {q}, {product}, {role}, {team}, {pct}, {v}.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    keyword: str
    subjects: tuple[str, ...]
    openers: tuple[str, ...]
    replies: tuple[str, ...]
    attachments: tuple[str, ...]


TOPICS: tuple[Topic, ...] = (
    Topic(
        "budget",
        ("Q{q} budget review", "Budget check for {team}", "Updated budget numbers"),
        (
            "Hi {first},\n\nAttached are the updated budget numbers for {team}. We are at ${amount} against "
            "the plan, mostly because of contractor spend. Could you look over the travel line before {day}?"
            "\n\nThanks,\n{me}",
            "Hi {first},\n\nFinance wants the Q{q} budget locked by {date}. Can you confirm your headcount "
            "assumptions so I can finish the sheet?\n\nBest,\n{me}",
        ),
        ("The travel line looks high to me; can we trim it by {pct}%?",
         "Headcount assumptions are unchanged from last quarter."),
        ("Q{q}_budget_v{v}.xlsx", "budget_summary_{num}.pdf"),
    ),
    Topic(
        "offsite",
        ("Team offsite in {city}", "Offsite agenda draft", "Offsite logistics"),
        (
            "Hi {first},\n\nWe're planning the team offsite in {city} for the week of {date}. I've blocked "
            "rooms at the hotel near the venue; please tell me about any dietary needs by {day}.\n\n{me}",
            "Hi {first},\n\nHere is a first cut of the offsite agenda. Day one is strategy, day two is "
            "workshops. Anything you'd like to add?\n\nCheers,\n{me}",
        ),
        ("I'd like a slot on day two for the customer panel.",
         "No dietary restrictions for me. Looking forward to it!"),
        ("offsite_agenda_v{v}.docx", "{city}_venue_map.pdf"),
    ),
    Topic(
        "invoice",
        ("Invoice #{num} from {company}", "Overdue invoice #{num}", "Question about invoice #{num}"),
        (
            "Hello {first},\n\nPlease find attached invoice #{num} for ${amount}, due on {date}. Payment "
            "details are on the second page.\n\nKind regards,\n{me}\n{company}",
            "Hi {first},\n\nOur records show invoice #{num} (${amount}) is now 14 days past due. Could you "
            "check on its status with accounts payable?\n\nThank you,\n{me}",
        ),
        ("Accounts payable confirmed it is scheduled for the next payment run.",
         "I've forwarded this to our AP team for approval."),
        ("invoice_{num}.pdf",),
    ),
    Topic(
        "contract renewal",
        ("{company} contract renewal", "Contract renewal terms", "Re-negotiating the contract renewal"),
        (
            "Hi {first},\n\nOur agreement with {company} expires on {date}. They proposed a {pct}% increase "
            "for the contract renewal; I think we can push back to half that. Thoughts?\n\n{me}",
            "Hi {first},\n\nLegal has reviewed the contract renewal redlines. Two clauses on liability are "
            "still open. Can you join a call on {day}?\n\nBest,\n{me}",
        ),
        ("Let's counter at a two-year term with a smaller increase.",
         "I can join the call; please send the redlines beforehand."),
        ("{company_file}_renewal_redlines.docx", "msa_{num}.pdf"),
    ),
    Topic(
        "onboarding",
        ("Onboarding plan for {newhire}", "Onboarding checklist", "First week onboarding"),
        (
            "Hi {first},\n\n{newhire} starts on {date}. I've drafted the onboarding plan: laptop setup, "
            "buddy intro and the first project. Could you be the buddy for week one?\n\n{me}",
            "Hi {first},\n\nSharing the onboarding checklist for new starters. Please tick off the "
            "access requests your team owns by {day}.\n\nThanks,\n{me}",
        ),
        ("Happy to be the buddy. I'll set up a welcome lunch.",
         "Access requests for our team are done."),
        ("onboarding_checklist.xlsx", "welcome_pack_{num}.pdf"),
    ),
    Topic(
        "security training",
        ("Reminder: security training due {date}", "Annual security training", "Security training completion"),
        (
            "Hi {first},\n\nOur records show you haven't finished the annual security training yet. It "
            "takes about 40 minutes and is due on {date}.\n\nThanks,\n{me}\nInformation Security",
            "Hi {first},\n\nThe new security training module on phishing is live. Please have your team "
            "complete it by {day}.\n\nRegards,\n{me}",
        ),
        ("Done, I completed the module this morning.", "My team will finish it by the deadline."),
        ("phishing_quick_guide.pdf",),
    ),
    Topic(
        "performance review",
        ("Performance review schedule", "Your performance review", "Mid-year performance review"),
        (
            "Hi {first},\n\nMid-year performance review conversations run from {date} for two weeks. "
            "Please submit your self-assessment before then.\n\nBest,\n{me}",
            "Hi {first},\n\nI've booked time for your performance review on {day}. Come with two wins "
            "and one area you want to grow in.\n\n{me}",
        ),
        ("Self-assessment submitted.", "Thanks, {day} works for me."),
        ("self_assessment_template.docx",),
    ),
    Topic(
        "product launch",
        ("{product} product launch checklist", "Product launch date for {product}",
         "Go-to-market for the {product} product launch"),
        (
            "Hi {first},\n\nWe're targeting {date} for the {product} product launch. The checklist is "
            "attached; owners are listed next to each item.\n\nThanks,\n{me}",
            "Hi {first},\n\nMarketing needs final screenshots for the product launch by {day}. Can "
            "your team deliver them?\n\n{me}",
        ),
        ("Screenshots will be ready on time.", "Can we move the date by a week to finish QA?"),
        ("{product_file}_launch_checklist.xlsx", "{product_file}_one_pager.pdf"),
    ),
    Topic(
        "hackathon",
        ("Hackathon sign-ups are open", "Hackathon teams", "Hackathon judging"),
        (
            "Hi {first},\n\nSign-ups for the summer hackathon close on {date}. Teams of up to four; "
            "prizes for the best demo.\n\nCheers,\n{me}",
            "Hi {first},\n\nWould you be a judge at the hackathon demos on {day}? It's about two hours."
            "\n\nThanks,\n{me}",
        ),
        ("Count me in as a judge.", "I've signed up with two people from my team."),
        ("hackathon_rules.pdf",),
    ),
    Topic(
        "database migration",
        ("Database migration weekend", "Database migration runbook", "Postponing the database migration"),
        (
            "Hi {first},\n\nThe database migration is scheduled for the weekend of {date}. Expect "
            "30 minutes of read-only time on Saturday night.\n\n{me}",
            "Hi {first},\n\nI've updated the database migration runbook with the rollback steps. "
            "Please review it before {day}.\n\nThanks,\n{me}",
        ),
        ("Runbook reviewed; the rollback steps look right.", "Can we keep the read-only window under 20 minutes?"),
        ("migration_runbook_v{v}.md",),
    ),
    Topic(
        "roadmap",
        ("H2 roadmap draft", "Roadmap priorities for {team}", "Roadmap feedback"),
        (
            "Hi {first},\n\nHere is the draft H2 roadmap. The top three bets are reliability, the "
            "{product} integration and self-serve billing. Feedback by {day}, please.\n\n{me}",
            "Hi {first},\n\nLeadership reviews the roadmap on {date}. Can you send me your team's "
            "priorities in one slide?\n\n{me}",
        ),
        ("My slide is attached.", "I'd move self-serve billing ahead of the integration."),
        ("H2_roadmap_v{v}.pptx",),
    ),
    Topic(
        "expense report",
        ("Expense report for the {city} trip", "Missing receipts on your expense report", "Expense report approval"),
        (
            "Hi {first},\n\nI submitted my expense report for the {city} trip (${amount}). Could you "
            "approve it before the cutoff on {date}?\n\nThanks,\n{me}",
            "Hi {first},\n\nTwo receipts are missing from your expense report: the hotel and one taxi. "
            "Please upload them by {day}.\n\n{me}",
        ),
        ("Approved.", "Receipts uploaded, sorry about that."),
        ("receipts_{city_file}.pdf",),
    ),
    Topic(
        "customer feedback",
        ("Customer feedback from {company}", "Summary of customer feedback", "Customer feedback session"),
        (
            "Hi {first},\n\nI met with {company} yesterday. Their customer feedback: setup is slow "
            "and the reporting export times out. Notes attached.\n\n{me}",
            "Hi {first},\n\nWe collected customer feedback from 12 accounts this month. NPS moved up "
            "{pct} points. Want to walk through it on {day}?\n\n{me}",
        ),
        ("The export timeout is a known bug; a fix ships next sprint.", "Yes, {day} works for a walkthrough."),
        ("{company_file}_feedback_notes.docx",),
    ),
    Topic(
        "interview",
        ("Interview loop for the {role} candidate", "Interview feedback needed", "Interview schedule for {day}"),
        (
            "Hi {first},\n\nCould you run the system design interview for the {role} candidate on {date}? "
            "The resume is attached.\n\nThanks,\n{me}",
            "Hi {first},\n\nPlease submit your interview feedback in the hiring tool by end of day {day}."
            "\n\n{me}",
        ),
        ("Feedback submitted: strong hire.", "I can take the {date} slot."),
        ("candidate_resume_{num}.pdf",),
    ),
    Topic(
        "office move",
        ("Office move to floor {n}", "Office move: packing crates", "Office move weekend"),
        (
            "Hi all,\n\nThe office move to floor {n} happens on {date}. Please pack your desk into the "
            "crates by Friday noon and label them with your name.\n\nFacilities\n{me}",
            "Hi {first},\n\nYour new desk after the office move is {n}-{num}. Badge access stays the "
            "same.\n\n{me}",
        ),
        ("Thanks, I'll pack on Thursday.", "Could my team sit together near the windows?"),
        ("floor_{n}_seating_plan.pdf",),
    ),
    Topic(
        "summer party",
        ("Summer party RSVP", "Summer party planning", "Summer party venue"),
        (
            "Hi {first},\n\nThe summer party is on {date} at the rooftop in {city}. Please RSVP by {day} "
            "and bring a plus-one if you like!\n\n{me}",
            "Hi {first},\n\nWe need two more volunteers for the summer party planning committee. "
            "Interested?\n\n{me}",
        ),
        ("RSVP yes, plus one.", "I can help with decorations."),
        ("summer_party_flyer.png",),
    ),
    Topic(
        "press release",
        ("Press release draft for {product}", "Press release approval", "Press release timing"),
        (
            "Hi {first},\n\nAttached is the press release draft announcing {product}. Legal approved "
            "the quotes; we need your sign-off by {day}.\n\n{me}",
            "Hi {first},\n\nThe press release goes out on {date} at 9am ET. Please hold any social "
            "posts until then.\n\n{me}",
        ),
        ("Signed off with one small edit to the second paragraph.", "Understood, we'll hold our posts."),
        ("{product_file}_press_release_v{v}.docx",),
    ),
    Topic(
        "website redesign",
        ("Website redesign mockups", "Website redesign timeline", "Website redesign: homepage copy"),
        (
            "Hi {first},\n\nNew mockups for the website redesign are in the shared folder. The homepage "
            "hero changed the most. Comments by {day}?\n\n{me}",
            "Hi {first},\n\nThe website redesign is slipping by two weeks; the new launch is {date}."
            "\n\n{me}",
        ),
        ("I like the new hero; the plans page feels busy.", "Thanks for the heads-up on the timeline."),
        ("homepage_mockup_v{v}.png", "site_map_v{v}.pdf"),
    ),
    Topic(
        "sales forecast",
        ("Q{q} sales forecast", "Sales forecast update", "Sales forecast call"),
        (
            "Hi {first},\n\nThe Q{q} sales forecast is at ${amount}, {pct}% above plan. Two large deals "
            "still need legal review.\n\n{me}",
            "Hi {first},\n\nPlease update your pipeline before the sales forecast call on {day}.\n\n{me}",
        ),
        ("Pipeline updated.", "The {company} deal may slip to next quarter."),
        ("Q{q}_forecast.xlsx",),
    ),
    Topic(
        "vendor proposal",
        ("Vendor proposal from {company}", "Comparing vendor proposals", "Vendor proposal questions"),
        (
            "Hi {first},\n\n{company} sent their vendor proposal: ${amount} per year with a 99.9% SLA. "
            "It's attached; I'd like your view before {day}.\n\n{me}",
            "Hi {first},\n\nI put the three vendor proposals side by side in a sheet. {company} is "
            "cheapest but has the weakest support.\n\n{me}",
        ),
        ("Their support terms worry me; let's ask for a 24/7 option.", "Agreed, let's shortlist two."),
        ("{company_file}_proposal.pdf",),
    ),
    Topic(
        "team lunch",
        ("Team lunch on {day}", "Team lunch poll", "Team lunch reservation"),
        (
            "Hi {first},\n\nTeam lunch on {day} at 12:30 — I booked a table at the Thai place near the "
            "office. Let me know if you can't make it.\n\n{me}",
            "Hi {first},\n\nWhere should we go for the team lunch on {date}? Vote in the poll.\n\n{me}",
        ),
        ("I'll be there.", "Voted for tacos."),
        (),
    ),
    Topic(
        "parking",
        ("Parking permits for {date}", "Parking garage closure", "New parking rules"),
        (
            "Hi {first},\n\nThe garage is closed for repairs on {date}. Temporary parking is available "
            "at the lot on Fifth Street.\n\nFacilities\n{me}",
            "Hi {first},\n\nNew parking permits are ready for pickup at reception.\n\n{me}",
        ),
        ("Thanks for letting us know.", "Can I get a second permit for a visitor?"),
        ("parking_map.pdf",),
    ),
    Topic(
        "audit",
        ("Internal audit fieldwork", "Audit evidence request", "Audit findings"),
        (
            "Hi {first},\n\nInternal audit fieldwork starts on {date}. We need access logs for the last "
            "two quarters and the change tickets sample.\n\n{me}",
            "Hi {first},\n\nThe audit findings draft has two medium items. Please send management "
            "responses by {day}.\n\n{me}",
        ),
        ("Evidence uploaded to the audit folder.", "Our response for item two is attached."),
        ("audit_request_list.xlsx", "audit_findings_draft.pdf"),
    ),
    Topic(
        "pricing",
        ("New pricing tiers", "Pricing change for {company}", "Pricing page update"),
        (
            "Hi {first},\n\nWe're introducing new pricing tiers on {date}: Starter, Team and Enterprise. "
            "Existing customers keep their plan for 12 months.\n\n{me}",
            "Hi {first},\n\n{company} asked for a pricing exception: {pct}% off for a three-year commit. "
            "Can we approve it?\n\n{me}",
        ),
        ("Approved up to {pct}% if they sign this quarter.", "Let's keep Enterprise at the current price."),
        ("pricing_tiers_v{v}.pdf",),
    ),
    Topic(
        "conference",
        ("{conf} conference registration", "Speaking at {conf} conference", "Conference travel approval"),
        (
            "Hi {first},\n\nEarly-bird registration for {conf} conference in {city} ends {date}. "
            "Should we send two people this year?\n\n{me}",
            "Hi {first},\n\nOur talk was accepted at the {conf} conference! Slides are due on {date}."
            "\n\n{me}",
        ),
        ("Yes, let's send two.", "Great news, I'll start on the slides."),
        ("{conf_file}_agenda.pdf",),
    ),
    Topic(
        "server outage",
        ("Postmortem: server outage on {date}", "Server outage follow-ups", "Server outage status"),
        (
            "Hi {first},\n\nThe postmortem for the server outage on {date} is attached. Root cause was an "
            "expired certificate; five action items.\n\n{me}",
            "Hi {first},\n\nQuick status: the server outage is resolved and all services are green since "
            "14:20.\n\n{me}",
        ),
        ("I'll own the certificate monitoring action item.", "Thanks for the quick fix."),
        ("postmortem_{num}.pdf",),
    ),
    Topic(
        "referral",
        ("Referral for the {role} role", "Referral bonus question", "Candidate referral"),
        (
            "Hi {first},\n\nI'd like to submit a referral for the {role} role: a former colleague with "
            "eight years of experience. Resume attached.\n\n{me}",
            "Hi {first},\n\nWhen is the referral bonus paid out — at the start date or after 90 days?"
            "\n\n{me}",
        ),
        ("Thanks! I'll pass the referral to the recruiter.", "It's paid after 90 days."),
        ("referral_resume_{num}.pdf",),
    ),
    Topic(
        "benefits enrollment",
        ("Benefits enrollment closes {date}", "Benefits enrollment questions", "Open benefits enrollment"),
        (
            "Hi {first},\n\nOpen benefits enrollment runs until {date}. If you do nothing, your current "
            "plan rolls over.\n\nPeople Team\n{me}",
            "Hi {first},\n\nCan dependents be added during benefits enrollment or only after a life "
            "event?\n\n{me}",
        ),
        ("Dependents can be added during the window.", "Thanks, I've made my selections."),
        ("benefits_guide_2026.pdf",),
    ),
    Topic(
        "board deck",
        ("Board deck for Q{q}", "Board deck review", "Board deck: final numbers"),
        (
            "Hi {first},\n\nThe board deck is due to the CEO on {date}. I need your section (three "
            "slides max) by {day}.\n\n{me}",
            "Hi {first},\n\nFinal numbers for the board deck are in. Revenue slide updated to "
            "${amount}.\n\n{me}",
        ),
        ("My slides are in the shared folder.", "Looks good; one typo on slide 7."),
        ("board_deck_Q{q}_v{v}.pptx",),
    ),
)

GENERIC_REPLIES: tuple[str, ...] = (
    "Thanks {first}, this looks good to me.",
    "Got it, I'll take a look today and come back to you.",
    "Can we go over this in our next 1:1?",
    "Sounds good. Let me know if you need anything else from me.",
    "I'm out until {day}; I'll follow up when I'm back.",
    "Thanks for sending this over.",
)

# (sender name, address, subject templates, body template): notifications, never from contacts.
AUTOMATED: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("IT Service Desk", "servicedesk@example.com",
     ("Your password expires in {n} days", "Ticket INC{num} has been resolved"),
     "This is an automated message from the IT Service Desk. Reply to this address if you need help."),
    ("Zoom", "no-reply@zoom.us", ("Cloud recording is now available", "Your Zoom plan renews on {date}"),
     "Hi {first}, your cloud recording is ready to view and share. This link expires in 30 days."),
    ("Expensify", "notifications@expensify.com", ("Reimbursement of ${amount} approved",),
     "Good news! Your reimbursement of ${amount} was approved and will be paid in the next payroll run."),
    ("LinkedIn", "messages-noreply@linkedin.com", ("You appeared in {n} searches this week",),
     "See who's looking at your profile. Unsubscribe from these emails in your settings."),
    ("GitHub", "noreply@github.com", ("[platform/api] Pull request #{num} was merged",),
     "Merged #{num} into main. You are receiving this because you were requested to review."),
    ("Delta Air Lines", "deltaairlines@t.delta.com", ("Your trip confirmation: {city}",),
     "Thank you for booking with Delta. Confirmation number {code}. Check in opens 24 hours before departure."),
    ("Workday", "workday@myworkday.com", ("Timesheet reminder for the week of {date}",),
     "Please submit your timesheet by Friday 5pm. This is an automated reminder."),
)

SPAM: tuple[tuple[str, str, str, str], ...] = (
    ("Prize Center", "winner@promo-rewards.biz", "Congratulations! You've won a $500 gift card",
     "Click the link below within 24 hours to claim your gift card. Limited time offer!"),
    ("Crypto Alerts", "alerts@fastcoin-profits.net", "Turn $250 into $5,000 this week",
     "Our members doubled their money in days. Join now, spots are limited."),
    ("Account Security", "security@paypa1-support.com", "Unusual sign-in activity - verify now",
     "We detected unusual activity. Verify your account immediately or it will be suspended."),
    ("Pharmacy Deals", "deals@rx-discount-online.info", "Up to 80% off, no prescription needed",
     "Best prices online. Discreet shipping worldwide."),
)

EVENT_TITLES: tuple[str, ...] = (
    "Weekly team sync", "1:1 with {first}", "Design review: {product}", "Sprint planning",
    "Customer call: {company}", "Roadmap review", "Interview: {role}", "Lunch & learn: {product}",
    "Quarterly business review", "Vendor demo: {company}", "All-hands prep", "Sprint retro",
    "Hiring committee", "Architecture review", "Coffee chat with {first}", "Budget check-in",
    "Marketing standup", "Release go/no-go: {product}", "Pipeline review", "Incident review",
    "Data council", "Security office hours", "Partner sync: {company}", "Planning poker",
    "Demo day rehearsal", "Board prep", "Analytics deep dive", "Support escalation review",
)

LOCATIONS: tuple[str, ...] = (
    "Room 4A", "Room 2C", "Room 5B", "Boardroom", "Huddle room 3", "Zoom", "Microsoft Teams",
    "Cafeteria", "Main lobby", "Training room",
)

PRODUCTS: tuple[str, ...] = ("Atlas", "Nimbus", "Orion", "Beacon", "Helix", "Summit", "Lumen", "Pioneer")
ROLES: tuple[str, ...] = (
    "Senior Data Engineer", "Product Designer", "Account Executive", "Staff Engineer",
    "Engineering Manager", "Financial Analyst", "Support Lead", "Marketing Manager",
)
TEAMS: tuple[str, ...] = ("the platform team", "marketing", "customer success", "the sales org", "design", "finance")
CONFERENCES: tuple[str, ...] = ("DataWeek", "CloudSummit", "SaaStr", "DevCon", "RetailTech", "FinOps Live")
CUSTOM_FOLDERS: tuple[str, ...] = (
    "Projects", "Clients", "Receipts", "Travel", "Team", "Finance", "Hiring", "Vendors", "Personal", "Reports",
)
SYSTEM_FOLDERS: tuple[str, ...] = ("Inbox", "Sent", "Archive", "Deleted Items", "Junk Email")

DEPARTMENTS: dict[str, tuple[str, ...]] = {
    "Engineering": ("Software Engineer", "Senior Software Engineer", "Engineering Manager", "SRE"),
    "Product": ("Product Manager", "Senior Product Manager"),
    "Design": ("Product Designer", "UX Researcher"),
    "Finance": ("Financial Analyst", "Controller", "Accountant"),
    "Marketing": ("Marketing Manager", "Content Strategist"),
    "Sales": ("Account Executive", "Sales Manager", "Sales Engineer"),
    "People": ("HR Business Partner", "Recruiter"),
    "Operations": ("Operations Manager", "Facilities Coordinator"),
    "Legal": ("Counsel", "Paralegal"),
    "Customer Success": ("Customer Success Manager", "Support Lead"),
}

CONTENT_TYPES: dict[str, str] = {
    "pdf": "application/pdf",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "png": "image/png",
    "md": "text/markdown",
}
