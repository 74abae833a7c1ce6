"""The toy_facts builder: cloze facts in two groups, generated (no source files)."""

from dataclasses import dataclass

import datasets

FACTS = {
    "colour": [("grass is [Y] .", "green"), ("the sky is [Y] .", "blue"), ("blood is [Y] .", "red"), ("snow is [Y] .", "white")],
    "taste": [("sugar tastes [Y] .", "sweet"), ("lemons taste [Y] .", "sour"), ("coffee tastes [Y] .", "bitter")],
}
FIELD_DESCRIPTIONS = {"query": "the fact with [Y] for its answer", "answers": "the gold answers", "group": "colour or taste"}


@dataclass
class ToyFactsConfig(datasets.BuilderConfig):
    per_group: int = 4  # the first N facts of each group


class ToyFacts(datasets.GeneratorBasedBuilder):
    BUILDER_CONFIG_CLASS = ToyFactsConfig
    BUILDER_CONFIGS = [ToyFactsConfig(name="facts", description="every fact, one test split")]
    DEFAULT_CONFIG_NAME = "facts"

    def _info(self) -> datasets.DatasetInfo:
        features = {
            "id": datasets.Value("string"),
            "group": datasets.Value("string"),
            "query": datasets.Value("string"),
            "answers": datasets.List(datasets.Value("string")),
        }
        return datasets.DatasetInfo(features=datasets.Features(features))

    def _split_generators(self, dl_manager):
        return [datasets.SplitGenerator(name=datasets.Split.TEST)]

    def _generate_examples(self):
        for group, facts in FACTS.items():
            for number, (query, answer) in enumerate(facts[: self.config.per_group]):
                key = f"{group}-{number}"
                yield key, {"id": key, "group": group, "query": query, "answers": [answer]}
