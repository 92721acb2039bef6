"""The benches' input rows: the demo's 48 rows, then templated pairs (cities, chemical elements,
animals x on-topic / partial / off-topic / noncommittal answers, about 900 distinct), then
numbered copies. Every response is distinct, so the cache never hides work."""

from __future__ import annotations

import csv
import random

from bench.harness import ROOT

DEMO_CSV = ROOT / "relevancy" / "data" / "demo.csv"

# (city, country, landmark, food)
_CITIES = (
    ("Lisbon", "Portugal", "the Belem Tower", "custard tarts"),
    ("Kyoto", "Japan", "the Fushimi Inari shrine", "tofu dishes"),
    ("Cairo", "Egypt", "the Great Pyramid of Giza", "koshari"),
    ("Toronto", "Canada", "the CN Tower", "peameal bacon"),
    ("Sydney", "Australia", "the Opera House", "meat pies"),
    ("Rome", "Italy", "the Colosseum", "carbonara"),
    ("Istanbul", "Turkey", "the Hagia Sophia", "kebabs"),
    ("Mumbai", "India", "the Gateway of India", "vada pav"),
    ("Mexico City", "Mexico", "the Zocalo", "tacos al pastor"),
    ("Buenos Aires", "Argentina", "the Obelisk", "empanadas"),
    ("Nairobi", "Kenya", "Nairobi National Park", "nyama choma"),
    ("Prague", "Czechia", "the Charles Bridge", "goulash"),
    ("Seoul", "South Korea", "Gyeongbokgung Palace", "kimchi stew"),
    ("Vienna", "Austria", "Schonbrunn Palace", "apple strudel"),
    ("Lima", "Peru", "the Plaza Mayor", "ceviche"),
    ("Edinburgh", "Scotland", "Edinburgh Castle", "haggis"),
    ("Hanoi", "Vietnam", "Hoan Kiem Lake", "pho"),
    ("Marrakesh", "Morocco", "the Jemaa el-Fnaa square", "tagine"),
    ("Oslo", "Norway", "the Viking Ship Museum", "brown cheese"),
    ("Athens", "Greece", "the Acropolis", "souvlaki"),
    ("Havana", "Cuba", "the Malecon", "ropa vieja"),
    ("Bangkok", "Thailand", "the Grand Palace", "pad thai"),
    ("Barcelona", "Spain", "the Sagrada Familia", "paella"),
    ("Moscow", "Russia", "Red Square", "borscht"),
    ("Dublin", "Ireland", "Trinity College", "Irish stew"),
    ("Reykjavik", "Iceland", "the Hallgrimskirkja church", "lamb soup"),
    ("Cape Town", "South Africa", "Table Mountain", "bobotie"),
    ("Amsterdam", "the Netherlands", "the Rijksmuseum", "stroopwafels"),
    ("Berlin", "Germany", "the Brandenburg Gate", "currywurst"),
    ("Budapest", "Hungary", "the Parliament building", "langos"),
    ("Santiago", "Chile", "the San Cristobal Hill", "pastel de choclo"),
    ("Helsinki", "Finland", "the Suomenlinna fortress", "salmon soup"),
)
# (element, symbol, use)
_ELEMENTS = (
    ("hydrogen", "H", "fuel cells"),
    ("helium", "He", "party balloons"),
    ("carbon", "C", "steel making"),
    ("nitrogen", "N", "fertilisers"),
    ("oxygen", "O", "hospital breathing support"),
    ("sodium", "Na", "table salt"),
    ("magnesium", "Mg", "light alloys"),
    ("aluminium", "Al", "drink cans"),
    ("silicon", "Si", "computer chips"),
    ("chlorine", "Cl", "water treatment"),
    ("calcium", "Ca", "cement"),
    ("titanium", "Ti", "aircraft frames"),
    ("iron", "Fe", "construction steel"),
    ("copper", "Cu", "electrical wiring"),
    ("zinc", "Zn", "galvanising steel"),
    ("silver", "Ag", "jewellery"),
    ("tin", "Sn", "solder"),
    ("iodine", "I", "disinfectants"),
    ("tungsten", "W", "light bulb filaments"),
    ("platinum", "Pt", "catalytic converters"),
    ("gold", "Au", "electronics contacts"),
    ("mercury", "Hg", "old thermometers"),
    ("lead", "Pb", "car batteries"),
    ("uranium", "U", "nuclear power"),
)
# (animal, habitat, diet)
_ANIMALS = (
    ("the polar bear", "the Arctic sea ice", "seals"),
    ("the giant panda", "the bamboo forests of China", "bamboo"),
    ("the koala", "the eucalyptus forests of Australia", "eucalyptus leaves"),
    ("the emperor penguin", "Antarctica", "fish and krill"),
    ("the red fox", "forests and farmland of the northern hemisphere", "small rodents"),
    ("the African elephant", "the savannas of Africa", "grasses and bark"),
    ("the snow leopard", "the mountains of Central Asia", "wild sheep and goats"),
    ("the blue whale", "the open oceans", "krill"),
    ("the honey bee", "hives in meadows and gardens", "nectar and pollen"),
    ("the bald eagle", "North American lakes and rivers", "fish"),
    ("the orangutan", "the rainforests of Borneo and Sumatra", "fruit"),
    ("the cheetah", "the grasslands of Africa", "gazelles"),
    ("the sea otter", "the coasts of the North Pacific", "sea urchins"),
    ("the camel", "the deserts of Africa and Asia", "desert plants"),
    ("the hedgehog", "gardens and hedgerows of Europe", "insects and worms"),
    ("the gorilla", "the forests of central Africa", "leaves and stems"),
    ("the kangaroo", "the grasslands of Australia", "grasses"),
    ("the octopus", "rocky sea floors", "crabs and shellfish"),
    ("the wolf", "forests and tundra", "deer and elk"),
    ("the flamingo", "salty lagoons and lakes", "algae and shrimp"),
)

_TEMPLATES: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "city",
        "In which country is {0}?",
        (
            ("on-topic", "{0} is a city in {1}."),
            ("partial", "{0} is a large and busy city."),
            ("off-topic", "{2} attracts many visitors every year."),
            ("noncommittal", "I'm not sure where {0} is."),
        ),
    ),
    (
        "city",
        "What is a famous landmark in {0}?",
        (
            ("on-topic", "{2} is the best-known landmark in {0}."),
            ("partial", "{0} has several old buildings."),
            ("off-topic", "People in {0} like to eat {3}."),
            ("noncommittal", "It depends on what you like to see in {0}."),
        ),
    ),
    (
        "city",
        "What food is {0} known for?",
        (
            ("on-topic", "{0} is known for {3}."),
            ("partial", "{0} has many restaurants and cafes."),
            ("off-topic", "{0} is the capital of {1}."),
            ("noncommittal", "That's hard to say, tastes in {0} differ."),
        ),
    ),
    (
        "element",
        "What is the chemical symbol of {0}?",
        (
            ("on-topic", "The chemical symbol of {0} is {1}."),
            ("partial", "{0} is a chemical element."),
            ("off-topic", "{0} is widely used for {2}."),
            ("noncommittal", "I don't remember the symbol of {0}."),
        ),
    ),
    (
        "element",
        "What is {0} used for?",
        (
            ("on-topic", "{0} is used for {2}."),
            ("partial", "{0} has some industrial uses."),
            ("off-topic", "Its chemical symbol is {1}."),
            ("noncommittal", "I have no idea what {0} is used for, sorry."),
        ),
    ),
    (
        "animal",
        "Where does {0} live?",
        (
            ("on-topic", "{0} lives in {1}."),
            ("partial", "{0} lives in the wild."),
            ("off-topic", "{0} mostly eats {2}."),
            ("noncommittal", "Nobody really knows where {0} lives."),
        ),
    ),
    (
        "animal",
        "What does {0} eat?",
        (
            ("on-topic", "{0} eats mainly {2}."),
            ("partial", "{0} eats other living things."),
            ("off-topic", "{0} can be found in {1}."),
            ("noncommittal", "I cannot say what {0} eats."),
        ),
    ),
)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _synthetic() -> list[dict[str, str]]:
    facts = {"city": _CITIES, "element": _ELEMENTS, "animal": _ANIMALS}
    rows = []
    for t, (kind, question, answers) in enumerate(_TEMPLATES):
        for f, fact in enumerate(facts[kind]):
            for label, answer in answers:
                rows.append(
                    {
                        "id": f"syn-{t}-{f}",
                        "variant": label,
                        "user_input": _cap(question.format(*fact)),
                        "response": _cap(answer.format(*fact)),
                        "answer_type": label,
                    }
                )
    return rows


def demo_rows() -> list[dict[str, str]]:
    with DEMO_CSV.open(encoding="utf-8", newline="") as fh:
        return [
            {k: row[k] for k in ("id", "variant", "user_input", "response", "answer_type")}
            for row in csv.DictReader(fh)
        ]


def make_rows(n: int, *, seed: int = 0) -> list[dict[str, str]]:
    """``n`` distinct (user_input, response) rows: the 48 demo rows, then shuffled templated
    variants (cities, elements, animals x on-topic/partial/off-topic/noncommittal answers).

    Beyond the ~900 distinct templated rows, rows repeat with a numbered suffix so every
    response stays distinct (the cache must not hide work).
    """
    base = demo_rows()
    syn = _synthetic()
    random.Random(seed).shuffle(syn)
    pool = base + syn
    seen = set()
    unique = []
    for row in pool:
        key = (row["user_input"], row["response"])
        if key not in seen:
            seen.add(key)
            unique.append(row)
    out = []
    k = 0
    while len(out) < n:
        row = dict(unique[len(out) % len(unique)])
        if len(out) >= len(unique):
            k = len(out) // len(unique)
            row["response"] = f"{row['response']} (Source {k}.)"
            row["id"] = f"{row['id']}-r{k}"
        out.append(row)
    return out
