"""The forum's communities and the text they are written in: rules, flairs, and post/comment templates.

Seed data and task generators both draw from here, so a generated "create a post" task reads like
the posts already in the community. Templates use `{slot}` fields filled from the community's slots.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommunitySpec:
    """One community: who it is for, its rules and flairs, and how its posts and comments read."""

    name: str
    description: str
    visibility: str  # "public" | "private"
    flairs: tuple[str, ...]
    rules: tuple[tuple[str, str], ...]  # (title, description); numbered from 1
    slots: dict[str, tuple[str, ...]]
    titles: tuple[str, ...]
    bodies: tuple[str, ...]
    comments: tuple[str, ...]
    flair_required: bool = False
    spam_rule: int = 2  # number of the "no self-promotion" rule (public communities)
    question_flair: str = "Question"


CIVIL = ("Be civil", "No insults, harassment or personal attacks. Disagree with ideas, not people.")
NO_PROMO = ("No self-promotion or spam", "No advertising, referral codes, affiliate links or channel plugs.")
SEARCH_FIRST = ("Search before asking", "Common questions are answered in the wiki and FAQ; low-effort repeats are removed.")
ON_TOPIC = ("Stay on topic", "Posts must be about the community's subject.")

COMMUNITIES: tuple[CommunitySpec, ...] = (
    CommunitySpec(
        name="homebrewing",
        description="Brewing beer, cider and mead at home: recipes, brew days and troubleshooting.",
        visibility="public",
        flairs=("Recipe", "Question", "Brew Day", "Troubleshooting"),
        rules=(CIVIL, NO_PROMO, SEARCH_FIRST, ("No distilling", "Home distillation is illegal in many places; do not discuss it here.")),
        slots={
            "style": ("hazy IPA", "dry stout", "saison", "Czech pilsner", "brown ale", "kolsch", "dry cider", "traditional mead", "Belgian dubbel", "porter"),
            "issue": ("stuck fermentation", "off flavors", "low carbonation", "a cloudy finish", "too much sweetness", "a sour smell", "gushing bottles", "a thin body"),
            "gear": ("a new conical fermenter", "a plate chiller", "an all-in-one system", "a kegerator", "a refractometer", "a grain mill"),
        },
        titles=(
            "First attempt at a {style} and I'm impressed",
            "Help: {issue} in my {style}",
            "Is {gear} worth it for a {style} brewer?",
            "Brew day log: {style} with {gear}",
            "Why does my {style} have {issue}?",
            "Recipe feedback wanted for a {style}",
            "Finally fixed {issue} after switching to {gear}",
            "Three batches of {style} in, here's what I learned",
        ),
        bodies=(
            "OG was 1.058 and it has been sitting at 1.020 for a week. I pitched one packet of dry yeast at 19C. Any ideas?",
            "Sharing my notes in case they help someone: mash at 66C for an hour, 60 minute boil, fermented at 18C.",
            "I've been brewing for about a year and want to step up my process. Budget is around $300.",
            "Tasted it tonight after two weeks in the bottle. Happy with the aroma but the finish could be cleaner.",
        ),
        comments=(
            "Check your fermentation temperature first, that fixes most of these.",
            "Give it another week before you touch it. Patience is half of brewing.",
            "I had the same problem with a {style}; a fresh yeast starter sorted it out.",
            "Looks great! What was your mash temperature?",
            "Sanitation, sanitation, sanitation.",
            "I would skip {gear} until you have temperature control sorted.",
        ),
    ),
    CommunitySpec(
        name="sourdough",
        description="Starters, crumb shots and baking schedules for naturally leavened bread.",
        visibility="public",
        flairs=("Crumb Shot", "Question", "Starter Help", "Recipe"),
        rules=(CIVIL, NO_PROMO, ("Post your recipe", "Crumb shots need the recipe and method in a comment or the body.")),
        slots={
            "bread": ("country loaf", "rye boule", "seeded batard", "spelt loaf", "focaccia", "whole wheat sandwich loaf", "olive and rosemary loaf", "honey oat loaf"),
            "issue": ("a gummy crumb", "no oven spring", "a flat loaf", "huge tunnels", "a pale crust", "a dense bottom"),
            "starter_issue": ("a starter that smells like acetone", "hooch on top", "no rise at all", "a runny starter"),
            "flour": ("bread flour", "a 20% rye blend", "freshly milled wheat", "high-extraction flour", "Italian 00 flour"),
        },
        titles=(
            "My {bread} finally has an open crumb",
            "Why does my {bread} end up with {issue}?",
            "Switched to {flour} for my {bread}",
            "Starter rescue: {starter_issue} after a week away",
            "Weekend bake: {bread} with {flour}",
            "Two years of {bread} attempts, from bricks to this",
            "Is {issue} a shaping problem or a proofing problem?",
        ),
        bodies=(
            "75% hydration, 2% salt, 20% levain. Bulk for 5 hours at 24C and an overnight cold retard.",
            "My starter doubles in about six hours but the loaf still spreads in the oven. What am I missing?",
            "Baked in a Dutch oven at 250C for 20 minutes lid on, then 25 minutes lid off.",
            "Feeding 1:1:1 twice a day with {flour}. Kitchen is around 21C.",
        ),
        comments=(
            "That crumb looks well fermented to me. Nice work!",
            "Try a longer bulk ferment; it sounds underproofed.",
            "Shaping tighter made the biggest difference for me.",
            "What hydration is this? It looks higher than 75%.",
            "A little rye in the starter feed wakes it right up.",
            "Let it cool fully before cutting, otherwise it will look gummy.",
        ),
    ),
    CommunitySpec(
        name="bikecommuting",
        description="Getting to work and around town by bike: routes, gear, safety and the occasional rant.",
        visibility="public",
        flairs=("Gear", "Route", "Question", "Safety", "Rant"),
        rules=(CIVIL, NO_PROMO, ON_TOPIC),
        slots={
            "gear": ("panniers", "a rear radar light", "fenders", "an e-bike conversion kit", "studded tires", "a dynamo hub", "rain pants"),
            "place": ("downtown", "the river path", "a hilly suburb", "the industrial park", "the university campus", "the bridge crossing"),
            "distance": ("6 km", "12 km", "15 km", "20 km", "25 km"),
        },
        titles=(
            "Is {gear} worth it for a {distance} commute?",
            "Safest way to get through {place} in rush hour?",
            "One year of commuting {distance} each way",
            "Finally added {gear} and it changed everything",
            "Near miss near {place} this morning",
            "Winter commuting through {place}: what do you wear?",
            "Bought {gear} for my {distance} ride to work",
        ),
        bodies=(
            "I ride year-round and my current setup is starting to show its age. Looking for real-world opinions.",
            "The painted lane ends right where traffic merges. Does anyone have a calmer alternative route?",
            "Saved about $140 a month on parking and transit since I started. Legs are happier too.",
            "A driver pulled out without looking. I'm fine, but I want to make myself more visible.",
        ),
        comments=(
            "Daytime running lights made drivers notice me a lot more.",
            "I use {gear} every day and would not go back.",
            "Try the side streets one block over; far less traffic.",
            "Glad you're okay. Report the intersection to the city, they do respond.",
            "Merino layers are worth every penny for winter riding.",
            "Fenders are the most underrated upgrade, full stop.",
        ),
    ),
    CommunitySpec(
        name="boardgames",
        description="Reviews, session reports and questions about tabletop and board games.",
        visibility="public",
        flairs=("Review", "Question", "Session Report", "Discussion"),
        rules=(CIVIL, NO_PROMO, ("No sales outside the weekly thread", "Buying, selling and trading only in the pinned weekly thread.")),
        slots={
            "game": ("Wingspan", "Terraforming Mars", "Azul", "Spirit Island", "Cascadia", "Brass: Birmingham", "Root", "Ticket to Ride", "Everdell", "Heat"),
            "group": ("two players", "my family", "a group of six", "new players", "my partner", "a solo session"),
        },
        titles=(
            "{game} with {group}: how did it go?",
            "Is {game} good for {group}?",
            "Session report: {game} with {group}",
            "Just finished my first game of {game}",
            "Rules question about {game}",
            "What to play after {game}?",
            "{game} after 50 plays: a long-term review",
        ),
        bodies=(
            "We played three rounds and everyone wanted a rematch. Setup takes a while but it's worth it.",
            "Looking for something with similar weight but less downtime between turns.",
            "Our table argued for ten minutes about this rule. The rulebook is unclear on the timing.",
            "Scores were close all game and the final round decided it. Great tension.",
        ),
        comments=(
            "The expansion fixes most of the issues you mention.",
            "That rule only applies at the end of the round.",
            "{game} shines at two players in my experience.",
            "Great write-up, thanks for sharing.",
            "Try the variant in the back of the rulebook.",
            "Sleeve the cards, they wear out fast.",
        ),
    ),
    CommunitySpec(
        name="learnpython",
        description="Learning Python together: questions, resources and small projects. Flair every post.",
        visibility="public",
        flairs=("Help", "Discussion", "Resource", "Showcase"),
        flair_required=True,
        question_flair="Help",
        rules=(CIVIL, NO_PROMO, ("Show your code", "Help requests must include the code and the full error message."), ("No homework dumps", "Ask about what you tried, not for complete solutions.")),
        slots={
            "topic": ("list comprehensions", "decorators", "async functions", "dataclasses", "pandas groupby", "virtual environments", "type hints", "recursion", "regular expressions", "unit tests"),
            "project": ("a budget tracker", "a weather CLI", "a Discord bot", "a web scraper", "a todo app", "a flashcard game"),
        },
        titles=(
            "Finally understood {topic}",
            "Confused about {topic} in {project}",
            "I built {project} as my first project",
            "Best resource for learning {topic}?",
            "Code review for {project} using {topic}",
            "Why is {topic} so hard to get right?",
            "How do you test {project}?",
        ),
        bodies=(
            "I've been learning for three months. Here's the part that clicked for me after a lot of trial and error.",
            "I get a TypeError on line 12 and I don't understand why the value is None there.",
            "Sharing the repo in case it helps someone else starting out. Feedback welcome.",
            "The official docs are dense. Is there a gentler explanation with examples?",
        ),
        comments=(
            "Print the value right before the error; it's probably not what you expect.",
            "The official tutorial covers {topic} well, section 9.",
            "Nice project! Consider splitting it into functions.",
            "Use a virtual environment per project, it saves headaches.",
            "Read the traceback from the bottom up.",
            "Great progress for three months.",
        ),
    ),
    CommunitySpec(
        name="houseplants",
        description="Care, propagation and pest help for indoor plants.",
        visibility="public",
        flairs=("Help", "Propagation", "Plant Haul", "Pest ID"),
        question_flair="Help",
        rules=(CIVIL, NO_PROMO, ("Include care details", "Help posts need light, watering and soil details.")),
        slots={
            "plant": ("monstera", "pothos", "fiddle leaf fig", "snake plant", "calathea", "string of pearls", "ZZ plant", "peace lily", "hoya", "rubber plant"),
            "issue": ("yellow leaves", "brown crispy edges", "drooping stems", "tiny white bugs", "root rot", "leggy growth", "stunted growth"),
        },
        titles=(
            "My {plant} has {issue}, help!",
            "Propagated my {plant} in water",
            "Is {issue} normal for a {plant}?",
            "Plant haul: a {plant} for $5",
            "Six months of progress on my {plant}",
            "Saved a {plant} from {issue}",
            "What causes {issue} on a {plant}?",
        ),
        bodies=(
            "It sits about a meter from an east window. I water when the top few centimeters are dry.",
            "Repotted into a chunky aroid mix last month and it has been sulking since.",
            "Found it in the clearance section and couldn't leave it behind.",
            "Cuttings rooted in about three weeks. Potting them up this weekend.",
        ),
        comments=(
            "Sounds like overwatering; let it dry out more between waterings.",
            "More light will fix the leggy growth.",
            "Those look like mealybugs. Wipe them with rubbing alcohol.",
            "Beautiful plant! That's a great find.",
            "Check the roots; mushy and brown means rot.",
            "Calatheas hate tap water, try filtered.",
        ),
    ),
    CommunitySpec(
        name="hiking",
        description="Trip reports, trail questions and gear for day hikes and backpacking.",
        visibility="public",
        flairs=("Trip Report", "Gear", "Question", "Photo"),
        rules=(CIVIL, NO_PROMO, ("Leave no trace", "No posts encouraging off-trail damage, fires where banned, or geotagging fragile sites.")),
        slots={
            "trail": ("the ridge loop", "Eagle Lake trail", "the canyon rim", "Pine Hollow", "the coastal path", "Bear Creek falls", "the north summit"),
            "gear": ("trail runners", "a 40 liter pack", "trekking poles", "a water filter", "a rain shell", "a bivy sack"),
            "season": ("early spring", "midsummer", "late fall", "the shoulder season"),
        },
        titles=(
            "Trip report: {trail} in {season}",
            "Is {trail} doable in {season}?",
            "Finally tried {gear} on {trail}",
            "Sunrise at {trail}",
            "Do I really need {gear} for {trail}?",
            "Lost the path near {trail}, lessons learned",
            "First solo hike: {trail}",
        ),
        bodies=(
            "About 14 km with 900 m of climbing. The last stretch is steep but the view is worth it.",
            "Trail was muddy after the rain; gaiters would have helped. Parking filled up by 8am.",
            "Planning an overnight trip and trying to keep my base weight under 8 kg.",
            "Saw two deer and a lot of wildflowers. No cell signal past the first junction.",
        ),
        comments=(
            "Start early, the parking lot fills fast on weekends.",
            "Trekking poles save your knees on the descent.",
            "Great photos! Which camera?",
            "Always tell someone your route, especially solo.",
            "The water source at the lake is reliable until August.",
            "{gear} is worth it for that trail.",
        ),
    ),
    CommunitySpec(
        name="mechkeyboards",
        description="Builds, switches, keycaps and help with mechanical keyboards. Flair every post.",
        visibility="public",
        flairs=("Build", "Help", "Photos", "Discussion"),
        flair_required=True,
        question_flair="Help",
        rules=(CIVIL, NO_PROMO, ("Photos need details", "Build photos need board, switches and keycaps in the body.")),
        slots={
            "board": ("a 65% aluminum board", "a TKL", "a 40% ortholinear", "a split ergo board", "a 75% gasket mount", "a numpad"),
            "switch": ("linear switches", "tactile switches", "silent reds", "clicky blues", "lubed browns", "magnetic switches"),
        },
        titles=(
            "My first build: {board} with {switch}",
            "Help: chatter on {board} with {switch}",
            "Are {switch} worth it for typing all day?",
            "Endgame? {board} with {switch}",
            "Lubing {switch} for {board}: worth the time?",
            "Switched from {switch} and I regret nothing",
        ),
        bodies=(
            "Board: aluminum case, brass plate. Switches lubed with 205g0. Keycaps are PBT cherry profile.",
            "Some keys double-register after a few weeks. Already tried reseating the switches.",
            "I type about eight hours a day and want something quieter for the office.",
            "Took about four hours including lubing. The stabilizers were the hardest part.",
        ),
        comments=(
            "Clean looking build! What keycaps are those?",
            "Double typing is usually a dirty switch; try compressed air.",
            "Tape mod on the PCB makes a big sound difference.",
            "Silent linears are great for offices.",
            "Did you band-aid mod the stabs? They sound clean.",
            "Welcome to the rabbit hole.",
        ),
    ),
    CommunitySpec(
        name="personalfinance",
        description="Budgeting, saving, debt and investing basics. No referral links.",
        visibility="public",
        flairs=("Budgeting", "Investing", "Debt", "Taxes", "Question"),
        rules=(CIVIL, ("No referral links or promotion", "No referral codes, affiliate links or selling services."), ("No get-rich-quick schemes", "Posts promoting crypto pumps, MLMs or guaranteed returns are removed.")),
        slots={
            "goal": ("an emergency fund", "a house down payment", "paying off student loans", "retiring early", "a new car", "a wedding"),
            "amount": ("$5,000", "$12,000", "$20,000", "$35,000", "$60,000"),
            "tool": ("a high-yield savings account", "an S&P 500 index fund", "the debt avalanche method", "zero-based budgeting", "a Roth IRA"),
        },
        titles=(
            "Saving {amount} for {goal}: should I use {tool}?",
            "Finally paid off {amount} of debt",
            "How I budget for {goal} with {tool}",
            "Should I use {tool} or pay off debt first?",
            "Just got a raise, how do I prioritize {goal}?",
            "{amount} windfall: what would you do?",
            "Is {tool} still a good idea this year?",
        ),
        bodies=(
            "I'm 29, earn about $62k, no debt except a small car loan. Trying to be smarter with money.",
            "We track everything in a spreadsheet and still feel like money disappears each month.",
            "Paid it off 14 months early by throwing every bonus at it. Posting for accountability.",
            "My employer matches 4% and I currently contribute 6%. Not sure where extra money should go.",
        ),
        comments=(
            "Emergency fund first, then the employer match, then high-interest debt.",
            "Check the wiki's prime directive flowchart.",
            "Congrats! That's a huge milestone.",
            "{tool} works well if you actually stick with it.",
            "Don't invest money you'll need within five years.",
            "Low-cost index funds beat most active strategies over time.",
        ),
    ),
    CommunitySpec(
        name="photography",
        description="Gear, technique and critique for photographers of every level.",
        visibility="public",
        flairs=("Critique", "Gear", "Question", "Showcase"),
        rules=(CIVIL, NO_PROMO, ("Critique needs context", "Say what you were going for and the settings you used.")),
        slots={
            "subject": ("street portraits", "night skylines", "birds in flight", "foggy forests", "wedding candids", "product shots", "the milky way"),
            "gear": ("a 50mm prime", "a used full-frame body", "a travel tripod", "an ND filter", "a 70-200mm zoom", "a speedlight"),
        },
        titles=(
            "Critique my {subject}, please",
            "Is {gear} enough for {subject}?",
            "Tried {subject} with {gear} for the first time",
            "How do you light {subject}?",
            "Upgraded to {gear} and my {subject} improved",
            "A year of shooting {subject}",
        ),
        bodies=(
            "Shot at f/2.8, 1/250s, ISO 800. I wanted a moody look but it feels flat to me.",
            "Budget is around $600 and I mostly shoot outdoors in the evening.",
            "Edited in Lightroom, only basic adjustments. Be brutal.",
            "I keep missing focus on moving subjects. Is it me or the camera?",
        ),
        comments=(
            "The composition is strong; I'd crop a little tighter.",
            "Try back-button focus for moving subjects.",
            "The highlights are clipped on the left side.",
            "Lovely light. What time of day was this?",
            "{gear} is the best value upgrade you can make.",
            "Shoot in RAW if you aren't already.",
        ),
    ),
    CommunitySpec(
        name="nightshiftnurses",
        description="A private space for nurses working nights. Members are approved by the moderators.",
        visibility="private",
        flairs=("Vent", "Advice", "Humor"),
        question_flair="Advice",
        rules=(CIVIL, ("Protect patient privacy", "Never share identifying patient details."), ON_TOPIC),
        slots={
            "topic": ("sleeping during the day", "meal prep for 12-hour shifts", "staying awake at 4am", "switching back to days", "charting backlogs", "float pool assignments"),
            "unit": ("the ICU", "the ER", "med-surg", "labor and delivery", "the step-down unit"),
        },
        titles=(
            "Tips for {topic} on {unit}?",
            "Three years of nights on {unit}",
            "How do you handle {topic}?",
            "Finally got used to {topic}",
            "Rough night on {unit}",
        ),
        bodies=(
            "Blackout curtains and a white noise machine helped, but I still wake up at noon.",
            "Our unit was short two nurses again. Looking for ways to not burn out.",
            "Sharing what finally worked for me after a lot of trial and error.",
        ),
        comments=(
            "Melatonin and a strict wind-down routine saved me.",
            "Hang in there, nights get easier.",
            "Meal prep on your first day off makes the week so much better.",
            "Talk to your manager about the staffing; document everything.",
        ),
    ),
    CommunitySpec(
        name="oakridgetenants",
        description="Private board of the Oakridge Apartments tenants association. Residents only.",
        visibility="private",
        flairs=("Maintenance", "Meeting", "Notice"),
        question_flair="Maintenance",
        rules=(CIVIL, ("Residents only", "Do not share association documents outside this community."), ON_TOPIC),
        slots={
            "thing": ("the elevator in building B", "the laundry room", "the parking gate", "hot water on the third floor", "the bike storage", "the mailbox keys"),
            "month": ("April", "May", "June", "July", "August"),
        },
        titles=(
            "Problem with {thing} again",
            "Meeting notes from {month}",
            "Who do we contact about {thing}?",
            "Notice: {thing} work scheduled",
            "Rent increase letter for {month}",
        ),
        bodies=(
            "Management said it would be fixed within a week. That was three weeks ago.",
            "Next meeting is in the community room at 7pm. Bring your lease questions.",
            "Please log every complaint in writing so we have a record.",
        ),
        comments=(
            "Same here, I filed a ticket on Monday.",
            "Thanks for organizing this.",
            "I can bring the sign-in sheet to the next meeting.",
            "Document it with photos and dates.",
        ),
    ),
    CommunitySpec(
        name="indiedevs",
        description="Invite-only workshop for independent game developers: devlogs, feedback and launch notes.",
        visibility="private",
        flairs=("Devlog", "Feedback", "Marketing"),
        question_flair="Feedback",
        rules=(CIVIL, ("Give feedback to get feedback", "Comment on two other posts before asking for feedback."), ON_TOPIC),
        slots={
            "game": ("my roguelike", "a cozy farming sim", "a puzzle platformer", "my tower defense game", "a narrative adventure"),
            "milestone": ("the first playable build", "the Steam page launch", "the demo", "the trailer", "the vertical slice"),
        },
        titles=(
            "Devlog: {milestone} for {game}",
            "Feedback wanted on {milestone} of {game}",
            "Wishlists after {milestone}",
            "What I'd do differently on {game}",
            "Scope creep is killing {game}",
        ),
        bodies=(
            "Six months in, solo, evenings only. Here's where things stand.",
            "Got about 300 wishlists in the first week. Is that good for a niche genre?",
            "The core loop is fun for ten minutes and then it isn't. Ideas welcome.",
        ),
        comments=(
            "Cut features until it hurts, then cut one more.",
            "The trailer needs gameplay in the first three seconds.",
            "That art style is really charming.",
            "Post it in the feedback thread too.",
        ),
    ),
)

GENERIC_COMMENTS = (
    "Thanks for posting this, really helpful.",
    "Following, I have the same question.",
    "Great write-up!",
    "This is the way.",
    "Came here to say this.",
    "Underrated post.",
    "Can you share an update later?",
    "Saving this for later.",
)

# Posts that break the "no self-promotion" rule: the seed's reported content.
SPAM_TITLES = (
    "Use my code {code} for 20% off at my {topic} shop",
    "I started a YouTube channel about {topic}, please subscribe",
    "DM me for cheap {topic} supplies, shipping worldwide",
    "Free {topic} giveaway, just follow my page",
    "My {topic} course is 50% off this week only",
    "Check out my new {topic} blog (link inside)",
)
SPAM_BODIES = (
    "Link in my profile. Limited time offer!",
    "Like and subscribe, new videos every Tuesday.",
    "Serious buyers only, message me directly.",
)
SPAM_TOPICS = {
    "homebrewing": "brewing", "sourdough": "baking", "bikecommuting": "cycling", "boardgames": "board game",
    "learnpython": "Python", "houseplants": "plant", "hiking": "hiking", "mechkeyboards": "keyboard",
    "personalfinance": "investing", "photography": "photography", "nightshiftnurses": "scrubs",
    "oakridgetenants": "moving", "indiedevs": "game asset",
}
SPAM_REPORT_REASONS = ("Spam / self-promotion", "Advertising their own shop", "Referral code spam", "Channel plug")
# Report reasons by rule title; a rule not listed gets "Breaks the '<title>' rule".
REASONS_BY_RULE = {
    "Be civil": ("Rude and insulting tone", "Personal attack on another user"),
    "Search before asking": ("Asked many times before", "Answered in the FAQ"),
    "Stay on topic": ("Off topic", "Not related to this community"),
}
