"""Write tests/data/hf_qa (a DatasetDict saved with ``save_to_disk``) and hf_qa_train.parquet.

Run with the ``datasets`` package installed in a throwaway virtual environment (the library
itself never needs it: it reads the folder with pyarrow)::

    python -m venv /tmp/hf && /tmp/hf/bin/pip install datasets
    /tmp/hf/bin/python tests/data/make_hf_sample.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

from datasets import Dataset, DatasetDict

HERE = Path(__file__).resolve().parent

TRAIN = {
    "question": [
        "How long should pasta rest after draining?",
        "What does a sourdough starter need each day?",
        "Why do onions make your eyes water?",
        "Can I freeze cooked rice?",
        "What temperature kills bacteria in chicken?",
        "How do I keep avocados from browning?",
    ],
    "answer": [
        "It does not need to rest: toss it with the sauce straight away so it stays loose.",
        "Feed it equal weights of flour and water once a day and keep it at room temperature.",
        "Cutting them releases a sulfur compound that turns into a mild irritant in your eyes.",
        "Yes. Cool it quickly, freeze it in flat bags and use it within a month.",
        "Cook it until the thickest part reaches 74 °C (165 °F).",
        "Our store opens at nine and has a wide range of kitchen tools.",
    ],
    "model": ["chef-small", "chef-large", "chef-small", "chef-large", "chef-small", "chef-large"],
    "source": ["faq", "forum", "faq", "forum", "faq", "forum"],
}
TEST = {
    "question": ["Is it safe to wash raw chicken?", "How do I soften hard brown sugar?"],
    "answer": [
        "No: washing spreads bacteria around the sink; cooking it through makes it safe.",
        "Seal it in a container with a slice of bread overnight and it softens again.",
    ],
    "model": ["chef-small", "chef-large"],
    "source": ["faq", "faq"],
}


def main() -> None:
    folder = HERE / "hf_qa"
    shutil.rmtree(folder, ignore_errors=True)
    splits = DatasetDict({"train": Dataset.from_dict(TRAIN), "test": Dataset.from_dict(TEST)})
    splits.save_to_disk(str(folder))
    splits["train"].to_parquet(str(HERE / "hf_qa_train.parquet"))


if __name__ == "__main__":
    main()
