"""toy_order: a ranking prober that ignores its model and ranks the candidates alphabetically."""

from collections.abc import Sequence

from medprobe.contracts import Prober


class ToyOrderProbe(Prober):
    name = "toy_order"
    kinds = ("ranking",)

    def __init__(self, model: str, *, reverse: bool = False):
        self.model, self.reverse = str(model), reverse

    @classmethod
    def create(cls, model: str, *, device: str = "auto", seed: int | None = None, **options) -> "ToyOrderProbe":
        """How medprobe builds a prober (`Prober.create`): nothing to load, no randomness."""
        return cls(model, **options)

    @property
    def settings(self) -> dict:
        return {"reverse": self.reverse}

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[list[str]]:
        return [sorted(candidates, reverse=self.reverse)[:k] for _ in queries]
