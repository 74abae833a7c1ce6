"""Generative probing with a sequence-to-sequence model (T5, SciFive, BART).

The [Y] slot gets the model's blank: T5's first sentinel `<extra_id_0>` when the tokenizer has
one, otherwise its mask token (BART's `<mask>`). Beam search (10 beams) returns 10 sequences;
the answer is read off each:
- sentinel models generate "<extra_id_0> answer <extra_id_1> ...": the span after the first
  sentinel, up to the next sentinel or the end;
- mask models (BART) regenerate the whole sentence: the answer is what stands between the
  query's text before and after the slot (when the output keeps them).

Ranking score: transformers' beam score, the sum of the generated tokens' log-probabilities
divided by (number of generated tokens) ** length_penalty (default 1.0, i.e. the mean
token log-probability). Sequences come back best first; answers equal after normalisation are
merged (`medprobe.lm.answer_pooling`), keeping the first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from medprobe.contracts import MASK_SLOT, Prober, Ranked, UserError, fill_mask_slot
from medprobe.lm.answer_pooling import pool_predictions
from medprobe.lm.loading import FromPretrained, check_model, model_device
from medprobe.models import dtype_name
from medprobe.progress import progress_bar

SENTINEL = re.compile(r"^<extra_id_\d+>$")


class GenerativeProbe(FromPretrained, Prober):
    """Beam-search answers from an encoder-decoder; `candidates` only name answers (see generated_answers)."""

    name = "generative"
    kinds = ("ranking",)
    model_kind = "seq2seq"

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        model_name: str = "model",
        beam_size: int = 10,
        num_return: int = 10,
        max_new_tokens: int = 24,
        length_penalty: float = 1.0,
        only_candidates: bool = False,
        batch_size: int = 16,
        progress: bool = True,
    ):
        check_model(model, "seq2seq", model_name)
        if not 1 <= num_return <= beam_size:
            raise UserError(f"num_return ({num_return}) must be between 1 and beam_size ({beam_size})")
        self.model, self.tokenizer, self.model_name = model.eval(), tokenizer, model_name
        self.sentinels = {i for token, i in tokenizer.get_vocab().items() if SENTINEL.match(token)}
        if self.sentinels:
            self.blank = "<extra_id_0>"
        elif tokenizer.mask_token is not None:
            self.blank = tokenizer.mask_token
        else:
            raise UserError(
                f"the tokenizer of {model_name!r} has neither a T5 sentinel (<extra_id_0>) nor a mask token; "
                "GenerativeProbe needs one of them for the [Y] slot"
            )
        self.beam_size, self.num_return, self.max_new_tokens = beam_size, num_return, max_new_tokens
        self.length_penalty, self.only_candidates = length_penalty, only_candidates
        self.batch_size, self.progress = batch_size, progress
        self.timings: dict[str, float] = {}

    @property
    def settings(self) -> dict:
        return {
            "blank": self.blank,
            "beam_size": self.beam_size,
            "num_return": self.num_return,
            "max_new_tokens": self.max_new_tokens,
            "length_penalty": self.length_penalty,
            "only_candidates": self.only_candidates,
            "batch_size": self.batch_size,
            "dtype": dtype_name(self.model.dtype),
            "scoring": "beam score: sum of token log-probabilities / length ** length_penalty",
        }

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
        """The k best merged (answer, beam score) pairs of each query (beam scores are not probabilities)."""
        return [answers[:k] for answers in self.generate_answers(queries, candidates)]

    def generate_answers(self, queries: Sequence[str], candidates: Sequence[str] = ()) -> list[list[tuple[str, float]]]:
        """Per query, the merged (answer, beam score) pairs, best first."""
        return [pool_predictions(answers, candidates, self.only_candidates) for answers in self.generate(queries)]

    def generate(self, queries: Sequence[str]) -> list[list[tuple[str, float]]]:
        """Per query, the `num_return` (answer, beam score) pairs as beam search returns them."""
        results = []
        for start in progress_bar(
            range(0, len(queries), self.batch_size), desc="generate", unit="batch", disable=not self.progress
        ):
            chunk = list(queries[start : start + self.batch_size])
            sequences, scores = self.beam_search(chunk)
            for i, query in enumerate(chunk):
                rows = range(i * self.num_return, (i + 1) * self.num_return)
                results.append([(self.answer_text(sequences[r], query), float(scores[r])) for r in rows])
        return results

    @torch.inference_mode()
    def beam_search(self, queries: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Generated ids [q * num_return, T] and their beam scores, best first within each query."""
        inputs = self.tokenizer([fill_mask_slot(q, self.blank) for q in queries], padding=True, return_tensors="pt")
        output = self.model.generate(
            **inputs.to(model_device(self.model)),
            num_beams=self.beam_size,
            num_return_sequences=self.num_return,
            max_new_tokens=self.max_new_tokens,
            length_penalty=self.length_penalty,
            do_sample=False,
            early_stopping=True,
            output_scores=True,
            return_dict_in_generate=True,
        )
        return output.sequences.cpu(), output.sequences_scores.cpu()

    def answer_text(self, sequence: torch.Tensor, query: str) -> str:
        ids = sequence.tolist()
        if self.sentinels:
            if ids and ids[0] == self.model.config.decoder_start_token_id:
                ids = ids[1:]
            if ids and ids[0] in self.sentinels:
                ids = ids[1:]
            cut = next((i for i, token in enumerate(ids) if token in self.sentinels), len(ids))
            return self.tokenizer.decode(ids[:cut], skip_special_tokens=True).strip()
        text = " ".join(self.tokenizer.decode(ids, skip_special_tokens=True).split())
        before, after = (" ".join(part.split()) for part in query.split(MASK_SLOT, 1))
        if before and text.startswith(before):
            text = text[len(before) :]
        if after and text.endswith(after):
            text = text[: -len(after)]
        return text.strip()
