"""Write ``longmemeval_synthetic.json``: a small synthetic data set in the official LongMemEval format.

Run from the repository root::

    python sample_traces/longmemeval/generate.py            # seed 20240611, writes the file beside this script
    python sample_traces/longmemeval/generate.py --seed 7 --out /tmp/lme.json --filler 20

Every question has a haystack of ``--filler`` filler chat sessions (everyday topics, some sharing
words with the questions so that lexical retrieval is not trivial) plus its evidence sessions,
dated in increasing order before the question date; evidence turns sit inside an ordinary
filler conversation. Evidence turns carry ``has_answer: true`` and
their sessions are listed in ``answer_session_ids``. Covered: all six question types, knowledge
updates (an old and a new value in two sessions; the answer is the new one), multi-session evidence
(counts spread over three sessions), temporal reasoning (dates), integer answers, and ``_abs``
abstention questions (the haystack holds a related but different fact; no evidence). Only numpy is
used; a rerun with the same arguments writes a byte-identical file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "longmemeval_synthetic.json"
SEED = 20240611

# Filler conversations: (user, assistant) pairs with {n} (a number) and {x} (a pick from the list).
FILLER = [
    ("gardening", ["tomatoes", "basil", "roses", "peppers"], [
        ("My {x} plants look a bit yellow this week, any idea why?",
         "Yellow leaves on {x} often mean overwatering or a lack of nitrogen; check that the soil drains well."),
        ("I water them about {n} times a week.",
         "That may be a little much; let the top inch of soil dry out before watering again."),
        ("Should I add fertiliser to the pots?",
         "A balanced, slow-release fertiliser every few weeks is usually enough for {x} and for houseplants."),
    ]),
    ("cooking", ["risotto", "lasagna", "curry", "paella"], [
        ("I want to cook {x} for {n} friends on Saturday.",
         "Good choice; {x} scales well. Plan on roughly one generous cup of the main ingredient per person."),
        ("How far ahead can I prepare it?",
         "You can prepare the base a day ahead and finish it just before your guests arrive."),
        ("Any side dish you would suggest?",
         "A crisp green salad with a lemon dressing balances a rich {x} nicely."),
    ]),
    ("programming", ["pandas", "regex", "asyncio", "SQL"], [
        ("My {x} code is throwing an error on line {n}.",
         "Could you paste the traceback? With {x}, the message usually points at the exact call that failed."),
        ("It says the index is out of range.",
         "Then a list is shorter than you expect; print its length just before that line to confirm."),
        ("That was it, thanks!",
         "Glad it works. Adding a small test for that case will stop it from coming back."),
    ]),
    ("travel", ["Lisbon", "Kyoto", "Oaxaca", "Tallinn"], [
        ("I am thinking about a {n}-day trip to {x} in the autumn.",
         "{x} is lovely in the autumn: mild weather and fewer crowds than in summer."),
        ("What should I not miss there?",
         "Walk the old town early in the morning, try the local market, and book one guided food tour."),
        ("Is public transport easy to use?",
         "Yes, a day pass covers most of what visitors need in {x}."),
    ]),
    ("fitness", ["running", "cycling", "swimming", "yoga"], [
        ("I started {x} again and my legs are sore after {n} sessions.",
         "Soreness after restarting {x} is normal; keep the first weeks easy and sleep well."),
        ("How often should I train?",
         "Three sessions a week with a rest day in between is a good start, even before a race."),
        ("Should I stretch before or after?",
         "A light warm-up before and gentle stretching after works for most people."),
    ]),
    ("money", ["groceries", "rent", "subscriptions", "holidays"], [
        ("I spend about {n} hundred a month on {x}; how can I cut that?",
         "Track {x} for a month first; most savings come from two or three habits you can change."),
        ("Is a spreadsheet good enough for budgeting?",
         "A simple spreadsheet with one row per expense and a monthly total is plenty to start with."),
        ("Thanks, I will try that.",
         "Good luck; review it at the end of the month and adjust the categories."),
    ]),
    ("music", ["guitar", "piano", "ukulele", "drums"], [
        ("I practise {x} for {n} minutes a day but I feel stuck.",
         "Plateaus are common on {x}; pick one short passage and play it slowly until it is clean."),
        ("Should I learn music theory?",
         "A little theory helps you understand why chords fit together; start with the major scale."),
        ("Any song you would suggest for practice?",
         "Pick a song you love that is slightly too hard, or one you heard at a concert; it keeps practice fun."),
    ]),
    ("language", ["Spanish", "Japanese", "German", "Italian"], [
        ("I have been learning {x} for {n} months.",
         "Nice progress; after a few months of {x}, speaking practice becomes the most useful thing."),
        ("How can I find someone to talk to?",
         "Language exchange apps and local meetups both work; fifteen minutes a day adds up."),
        ("What about grammar drills?",
         "Keep them short and mix them with reading simple texts you enjoy."),
    ]),
    ("home", ["kitchen", "balcony", "bedroom", "hallway"], [
        ("I want to repaint the {x} this month.",
         "Pick a washable paint for the {x}; it is worth the small extra cost."),
        ("How many coats do I need?",
         "Usually two coats, and a primer first if the old colour is dark."),
        ("I have about {n} square metres of wall.",
         "Then one large can should be enough for two coats, with a little to spare."),
    ]),
    ("movies", ["thrillers", "documentaries", "comedies", "animated films"], [
        ("Can you recommend some {x} for the weekend?",
         "Happy to; do you prefer recent {x} or classics?"),
        ("Recent ones, ideally under {n} minutes.",
         "Then look at this year's festival favourites; many of them are short and well reviewed."),
        ("Great, I will make a list.",
         "Enjoy your weekend of {x}!"),
    ]),
    ("pets", ["aquarium", "bird cage", "hamster", "cat tree"], [
        ("I am setting up a {x} at home, what do I need first?",
         "For a {x}, start with the basics and add extras once you see what is really used."),
        ("How much space does it take?",
         "Plan on roughly {n} square feet, away from direct sunlight and drafts."),
        ("Thanks, that helps a lot.",
         "You are welcome; enjoy setting it up."),
    ]),
    ("work", ["presentation", "report", "interview", "deadline"], [
        ("I have a {x} coming up in {n} days and I feel nervous.",
         "That is normal; break the {x} into small steps and schedule them day by day."),
        ("How do I stay focused?",
         "Short focused blocks of work with breaks in between help most people."),
        ("I will try that tomorrow.",
         "Good plan; you can tell me how it went."),
    ]),
]

# Evidence scenarios. Each yields (question, answer, evidence sessions, abstention variant or None).
# An evidence session is (offset in days before the question date, list of (role, text, has_answer)).


def _scenarios():
    return [
        # --- single-session-user
        dict(type="single-session-user", question="What is the name of the dog I adopted?", answer="Biscuit",
             sessions=[(40, [("user", "Big news: I adopted a beagle puppy and named him Biscuit.", True),
                             ("assistant", "Congratulations! Beagles are friendly and curious dogs.", False)])],
             abs_question="What is the name of the cat I adopted?",
             abs_answer="You did not mention adopting a cat; you mentioned a beagle puppy named Biscuit."),
        dict(type="single-session-user", question="Which city did I say my grandmother lives in?", answer="Porto",
             sessions=[(25, [("user", "I am visiting my grandmother next month; she lives in Porto.", True),
                             ("assistant", "That sounds like a lovely visit; Porto is beautiful in spring.", False)])]),
        dict(type="single-session-user", question="What colour did I choose for my new bicycle?", answer="dark green",
             sessions=[(12, [("user", "I finally ordered the new bicycle, in dark green.", True),
                             ("assistant", "Dark green is a classic choice for a bicycle.", False)])]),
        # --- single-session-assistant
        dict(type="single-session-assistant",
             question="Which novel did you recommend when I asked for a book about trees?", answer="The Overstory",
             sessions=[(33, [("user", "Can you recommend a novel about trees and forests?", False),
                             ("assistant", "I recommend The Overstory by Richard Powers; it is a novel about trees.",
                              True)])]),
        dict(type="single-session-assistant",
             question="What temperature did you tell me to bake the sourdough bread at?", answer="250 degrees Celsius",
             sessions=[(18, [("user", "How hot should the oven be for my sourdough bread?", False),
                             ("assistant", "Bake the sourdough bread at 250 degrees Celsius with steam for the "
                                           "first twenty minutes.", True)])]),
        dict(type="single-session-assistant",
             question="What stretch did you suggest for my lower back?", answer="the cat-cow stretch",
             sessions=[(9, [("user", "My lower back hurts after sitting all day.", False),
                            ("assistant", "Try the cat-cow stretch for your lower back, ten slow repetitions.",
                             True)])]),
        # --- single-session-preference
        dict(type="single-session-preference", question="Can you suggest a dinner recipe for tonight?",
             answer="The user would prefer a spicy vegetarian recipe, since they said they eat vegetarian and love "
                    "spicy food.",
             sessions=[(21, [("user", "For the record, I eat vegetarian and I love really spicy food.", True),
                             ("assistant", "Noted, I will keep spicy vegetarian dishes in mind for recipe ideas.",
                              False)])]),
        dict(type="single-session-preference", question="Any podcast suggestions for my commute?",
             answer="The user would prefer history podcasts with long episodes, as they said they love history and "
                    "long-form shows.",
             sessions=[(15, [("user", "I love history podcasts, the long-form ones with two-hour episodes.", True),
                             ("assistant", "Long-form history podcasts are great for deep dives.", False)])]),
        dict(type="single-session-preference", question="What should I read on my holiday?",
             answer="The user would prefer science fiction with strong world-building, as they told me.",
             sessions=[(28, [("user", "My favourite books are science fiction with strong world-building.", True),
                             ("assistant", "Science fiction with rich world-building is a great genre.", False)])]),
        # --- multi-session (integer answers)
        dict(type="multi-session", question="How many houseplants did I get in total?", answer=8,
             sessions=[(50, [("user", "I bought 2 houseplants at the weekend market.", True),
                             ("assistant", "Nice, houseplants brighten a room.", False)]),
                       (30, [("user", "I picked up 3 more houseplants from the nursery today.", True),
                             ("assistant", "Your collection is growing!", False)]),
                       (10, [("user", "My sister gave me 1 houseplant for my birthday.", True),
                             ("assistant", "What a thoughtful gift.", False)]),
                       (4, [("user", "A neighbour moving away left me 2 of her houseplants.", True),
                            ("assistant", "Lucky you, free plants!", False)])],
             abs_question="How many cacti did I get in total?",
             abs_answer="You did not mention getting any cacti; you mentioned houseplants."),
        dict(type="multi-session", question="How many concerts did I attend this year?", answer=5,
             sessions=[(60, [("user", "Back from a jazz concert, my first concert this year!", True),
                             ("assistant", "Jazz live is special; glad you enjoyed it.", False)]),
                       (35, [("user", "I went to two rock concerts this month.", True),
                             ("assistant", "Two concerts in a month, you are busy!", False)]),
                       (8, [("user", "Tonight I saw the orchestra play, another concert for my list.", True),
                            ("assistant", "Orchestras are wonderful live.", False)]),
                       (3, [("user", "My friend had a spare ticket so I went to a folk concert too.", True),
                            ("assistant", "Folk music live is lovely.", False)])]),
        dict(type="multi-session", question="How many kilometres did I run across my three races?", answer=36,
             sessions=[(70, [("user", "I finished a 5 kilometre race this morning.", True),
                             ("assistant", "Well done on the race!", False)]),
                       (40, [("user", "Completed a 10 kilometre race today, new personal best.", True),
                             ("assistant", "A personal best, congratulations.", False)]),
                       (14, [("user", "I ran the 21 kilometre half marathon race yesterday.", True),
                             ("assistant", "A half marathon is a big achievement.", False)])]),
        # --- knowledge-update
        dict(type="knowledge-update", question="How long is my commute now?", answer="45 minutes",
             sessions=[(80, [("user", "My commute to the office takes 30 minutes by train.", True),
                             ("assistant", "Thirty minutes is a manageable commute.", False)]),
                       (12, [("user", "Since we moved, my commute is now 45 minutes each way.", True),
                             ("assistant", "That is longer; maybe podcasts can help.", False)])],
             abs_question="How long is my partner's commute now?",
             abs_answer="You only mentioned your own commute, not your partner's."),
        dict(type="knowledge-update", question="Which gym am I a member of?", answer="Peak Fitness",
             sessions=[(90, [("user", "I signed up at City Gym near my flat.", True),
                             ("assistant", "Great, a gym nearby makes it easier to go.", False)]),
                       (20, [("user", "I cancelled City Gym and joined Peak Fitness, it has a pool.", True),
                             ("assistant", "A pool is a great bonus.", False)])]),
        dict(type="knowledge-update", question="What is my current personal best in the 5k?",
             answer="24 minutes",
             sessions=[(75, [("user", "My 5k personal best is 27 minutes.", True),
                             ("assistant", "A solid time.", False)]),
                       (16, [("user", "New 5k personal best today: 24 minutes!", True),
                             ("assistant", "Three minutes faster, impressive.", False)])]),
        # --- temporal-reasoning (integer answers in weeks/days)
        dict(type="temporal-reasoning", question="How many weeks ago did I start my pottery class?", answer=3,
             sessions=[(21, [("user", "Today I started my pottery class at the community centre.", True),
                             ("assistant", "Enjoy it; pottery is very relaxing.", False)])]),
        dict(type="temporal-reasoning", question="How many days before my dentist appointment did I book the "
                                                  "flight to Rome?", answer=10,
             sessions=[(40, [("user", "I just booked my flight to Rome.", True),
                             ("assistant", "Exciting! Rome is wonderful.", False)]),
                       (30, [("user", "I had my dentist appointment today, all fine.", True),
                             ("assistant", "Good to hear.", False)])]),
        dict(type="temporal-reasoning", question="Which did I do first, repaint the fence or fix the bike?",
             answer="repaint the fence",
             sessions=[(45, [("user", "Spent the afternoon repainting the fence white.", True),
                             ("assistant", "A fresh fence makes a garden look new.", False)]),
                       (22, [("user", "Finally fixed the bike's flat tyre.", True),
                             ("assistant", "Good, now you can ride again.", False)])]),
    ]


def _fmt(d: dt.datetime) -> str:
    return d.strftime("%Y/%m/%d (%a) %H:%M")


def _filler_session(rng: np.random.Generator) -> list[dict]:
    _topic, picks, pairs = FILLER[int(rng.integers(len(FILLER)))]
    x = picks[int(rng.integers(len(picks)))]
    n = int(rng.integers(2, 12))
    turns = []
    for u, a in pairs:
        turns.append({"role": "user", "content": u.format(x=x, n=n)})
        turns.append({"role": "assistant", "content": a.format(x=x, n=n)})
    return turns


def _question(idx: int, sc: dict, rng: np.random.Generator, filler: int, *, abstention: bool) -> dict:
    qdate = dt.datetime(2023, 5, 1, 9, 0) + dt.timedelta(days=int(rng.integers(0, 200)),
                                                         minutes=int(rng.integers(0, 600)))
    span = 120
    sessions = []  # (datetime, id, turns, is_evidence)
    for f in range(filler):
        when = qdate - dt.timedelta(days=int(rng.integers(1, span)), minutes=int(rng.integers(0, 1440)))
        sessions.append((when, f"s{idx:03d}_{f:02d}", _filler_session(rng), False))
    for e, (days, turns) in enumerate(sc["sessions"]):
        when = qdate - dt.timedelta(days=days, hours=1)
        pad = _filler_session(rng)  # the evidence sits inside an ordinary conversation
        cut = 2 * int(rng.integers(0, len(pad) // 2 + 1))
        body = pad[:cut]
        for role, text, has in turns:
            t = {"role": role, "content": text}
            if has and not abstention:
                t["has_answer"] = True
            body.append(t)
        body.extend(pad[cut:])
        sessions.append((when, f"answer_{idx:03d}_{e}", body, not abstention))
    sessions.sort(key=lambda s: (s[0], s[1]))
    qid = f"syn_{idx:03d}" + ("_abs" if abstention else "")
    return {
        "question_id": qid,
        "question_type": sc["type"],
        "question": sc["abs_question"] if abstention else sc["question"],
        "answer": sc["abs_answer"] if abstention else sc["answer"],
        "question_date": _fmt(qdate),
        "haystack_session_ids": [s[1] for s in sessions],
        "haystack_dates": [_fmt(s[0]) for s in sessions],
        "haystack_sessions": [s[2] for s in sessions],
        "answer_session_ids": [s[1] for s in sessions if s[3]],
    }


def generate(seed: int = SEED, filler: int = 14) -> list[dict]:
    """The synthetic questions (a JSON-ready list), one question per scenario plus its ``_abs`` variants."""
    rng = np.random.default_rng(seed)
    out = []
    for i, sc in enumerate(_scenarios()):
        out.append(_question(i, sc, rng, filler, abstention=False))
        if "abs_question" in sc:
            out.append(_question(i, sc, rng, filler, abstention=True))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=SEED, help="seed of every random choice")
    ap.add_argument("--filler", type=int, default=14, help="filler sessions per question")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSON file")
    args = ap.parse_args()
    data = generate(args.seed, args.filler)
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    types: dict[str, int] = {}
    for q in data:
        types[q["question_type"]] = types.get(q["question_type"], 0) + 1
    n_abs = sum(q["question_id"].endswith("_abs") for q in data)
    n_int = sum(isinstance(q["answer"], int) for q in data)
    print(f"wrote {args.out}: {len(data)} questions ({n_abs} abstention, {n_int} integer answers); "
          + ", ".join(f"{k} {v}" for k, v in types.items()))


if __name__ == "__main__":
    main()
