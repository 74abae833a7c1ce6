"""toy_facts: each query ranks the answer space of the split (every gold answer); acc@1 per group
(the evaluate module acc_at_k that medprobe ships), micro and macro, with per-fact outcomes."""

import numpy as np

from medprobe.records.tables import format_table
from medprobe.resources import metric_path
from medprobe.stats import Estimator, Outcomes
from medprobe.tasks import Scored


class ToyFactsTask:
    FIELDS = ("id", "group", "query", "answers")  # what the task reads, its evaluate metric and its groups
    METRIC = "acc_at_k"
    GROUP_BY = "group"
    plot_metric = "acc@1"
    outcome_unit = "fact"
    outcome_fields = {"rank": "the rank of the gold answer among the answer space (1 = first)"}

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self.timings: dict[str, float] = {}
        self.loaded: list = []
        self.subset_of: dict | None = None

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]:
        return {
            "acc@1": Estimator(lambda sample: (sample["rank"] <= 1).mean(axis=1), "fact"),
            "macro_acc@1": Estimator(lambda sample: sample.group_mean(sample["rank"] <= 1).mean(axis=1), "fact", stratified=True),
        }

    def load(self, dataset: str, config: str | None, split: str):
        import datasets

        data = datasets.load_dataset(dataset, config, split=split)
        self.loaded = [(config, split)]
        if self.limit:
            self.subset_of = {"probed": min(self.limit, data.num_rows), "total": data.num_rows, "unit": "facts"}
            data = data.select(range(min(self.limit, data.num_rows)))
        return data

    def predict(self, prober, data, seed: int | None) -> list[list[str]]:
        space = sorted({answer for answers in data["answers"] for answer in answers})
        return prober.rank(data["query"], space, k=len(space))

    def score(self, data, outputs: list[list[str]]) -> Scored:
        import evaluate

        result = evaluate.load(metric_path("acc_at_k")).compute(
            predictions=outputs, references=data["answers"], groups=data["group"], k=[1]
        )
        per_group = result.pop("per_group")
        ranks = [
            next((i + 1 for i, name in enumerate(ranked) if name in gold), len(ranked) + 1)
            for ranked, gold in zip(outputs, data["answers"])
        ]
        outcomes = Outcomes.build(data["id"], data["group"], {"rank": ranks})
        space = len(outputs[0]) if outputs else 1
        chance = {
            "acc@1": {"value": float(np.mean([len(gold) / space for gold in data["answers"]])), "method": "1/|answer space|"}
        }
        return Scored(
            metrics=result,
            per_group=per_group,
            counts={"facts": len(outputs)},
            settings={"answer_space": space},
            outcomes=outcomes,
            chance=chance,
        )

    def table(self, record) -> str:
        return format_table(record, ["acc@1"], group_label="group")

    def writers(self, data, outputs) -> list:
        return []
