"""`ContrastiveProbe`: the two stages of Contrastive-Probe behind the ranking-prober contract.

    probe = ContrastiveProbe.from_pretrained("minilm")          # any BERT-style encoder
    probe.rewire("sentences.txt")                               # optional: stage 1, paper settings
    probe.rank(["Aspirin might treat [Y] ."], names, k=10)      # stage 2: retrieval
    probe.score_candidates(["Aspirin might treat [Y] ."], [["fever", "pain"]])  # one score per name

`ContrastiveProbe.create(model, device=..., seed=..., **options)` builds it from the `medprobe probe --prober
contrastive` options (medprobe.registry), rewiring first when a corpus is given.

Retrieval: each query's [Y] becomes the tokenizer's mask token and the query (at most 50
tokens, mask kept) is encoded to its last-layer [CLS] vector; every candidate name (at most 25
tokens) is encoded once, and the names closest to a query are its predictions.

A probe loaded from files keeps its embeddings on disk (medprobe.contrastive.embedding_cache), so
another run of the same model reads them instead of encoding again; `cache=False` (`--no-cache`)
turns that off. A probe built from an in-memory model, or rewired, uses no disk cache, unless the
rewired model was saved (`--save-rewired`): then its vectors are keyed by the saved files, and a probe
of that folder reads them. A warm probe (`from_pretrained`, every token id and vector in the cache)
neither loads the model and its tokenizer nor imports transformers: they load at the first text or
vector the cache does not hold (`Deferred`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

import medprobe.contrastive.embedding_cache as embedding_cache
from medprobe import distributed, timeline
from medprobe.contracts import Prober, Ranked, UserError, fill_mask_slot
from medprobe.contrastive.corpora import MASK_RATIO, MAX_LENGTH, PAPER_SETTINGS, TEMPERATURE, RewiringReport, corpus_path
from medprobe.contrastive.encoding import check_layers, encode_cls, tokenize_keeping_mask, tokenize_truncated
from medprobe.contrastive.pairs import build_pairs, read_sentences
from medprobe.contrastive.search import SIMILARITIES, prepare_candidates, scores, search_scored
from medprobe.digests import json_digest, sha256_file
from medprobe.lm.candidate_scoring import check_candidate_lists
from medprobe.models import (
    check_model,
    dtype_name,
    load_tokenizer,
    require_mask_token,
    resolve_device,
    resolve_dtype,
    resolve_model,
)

if TYPE_CHECKING:  # transformers' model code takes seconds to import: a warm probe (every vector cached) never needs it
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, TrainingArguments

QUERY_MAX_LENGTH = 50
NAME_MAX_LENGTH = 25
# a warning when float rounding picks the top k of at least this share of the queries (MiniLM --layers 3 on MedLAMA:
# all of them; --layers 5: 2%; all layers: none)
ROUNDING_WARN_SHARE = 0.25
SCORE_CHUNK = 512  # queries scored against every distinct name at once (512 x 22,923 floats = 47 MB)


@dataclass
class Deferred:
    """A model or tokenizer to load on first use: `from_pretrained` with a warm embedding cache reads every
    token id and vector from disk, and then neither imports transformers' model code nor loads the weights
    or the tokenizer."""

    load: Callable[[], Any]


class ContrastiveProbe(Prober):
    """Rank candidate names for cloze queries by [CLS] similarity (Meng, Liu et al., ACL 2022).

    Args:
        model: an encoder (`AutoModel`, no MLM head needed).
        tokenizer: its tokenizer; it must have a mask token.
        similarity: "cos" (default; what rewiring trains for) or "l2" (L2 distance on the raw
            [CLS] vectors, as the released code searched).
        layers: probe with only the first `layers` transformer layers (None: all).
        batch_size: texts per forward pass.
        device: "auto", "cpu", "cuda", ...
        cache: keep embeddings in the on-disk cache (medprobe.contrastive.embedding_cache) when the
            model was loaded from files (`from_pretrained`); False: encode everything every run.
    """

    name = "contrastive"
    kinds = ("ranking", "candidate-scoring")
    # under a launch it spreads its own encoding (encode_cls splits the batches over the
    # processes), so the tasks call it with every query on every process (medprobe.distributed)
    collective = True

    def __init__(
        self,
        model: PreTrainedModel | Deferred,
        tokenizer: PreTrainedTokenizerBase | Deferred,
        *,
        similarity: str = "cos",
        layers: int | None = None,
        batch_size: int = 128,
        query_max_length: int = QUERY_MAX_LENGTH,
        name_max_length: int = NAME_MAX_LENGTH,
        device: str | torch.device = "auto",
        show_progress: bool = True,
        model_name: str | None = None,
        dtype: str = "auto",
        cache: bool = True,
    ):
        if similarity not in SIMILARITIES:
            raise UserError(f"unknown similarity {similarity!r}; expected one of {', '.join(SIMILARITIES)}")
        if batch_size < 1:
            raise UserError(f"batch size must be positive, got {batch_size}")
        if isinstance(model, Deferred) and not model_name:
            raise ValueError("a Deferred model needs model_name")
        self.model_name = model_name or getattr(model, "name_or_path", type(model).__name__)
        self._deferred_tokenizer = tokenizer if isinstance(tokenizer, Deferred) else None
        self._tokenizer = None if isinstance(tokenizer, Deferred) else self._checked(tokenizer)
        self.device = device if isinstance(device, torch.device) else resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.similarity = similarity
        self.layers = layers
        self._deferred = model if isinstance(model, Deferred) else None
        self._model = None if isinstance(model, Deferred) else self._ready(model)  # layers checked now, not after a rewiring
        self.batch_size = batch_size
        self.query_max_length = query_max_length
        self.name_max_length = name_max_length
        self.show_progress = show_progress
        self.rewiring: RewiringReport | None = None
        self.seed: int | None = None  # the seed of the rewiring (masked spans, data order), once rewired
        self.timings: dict[str, float] = {}
        # name embeddings by probed layer count: blocks of rows (float32, CPU) and each token-id key's (block, row)
        self._name_embeddings: dict[int | None, tuple[list[np.ndarray], dict[tuple[int, ...], tuple[int, int]]]] = {}
        self.cache = cache
        # the content hash of the weight files the model was loaded from (from_pretrained), None while
        # the weights are not known to be those files' (an in-memory model, a rewired one)
        self.weights_digest: str | None = None
        self._cache_off = "off: --no-cache" if not cache else "off: the model was not loaded from files"
        self._spaces: dict[str, embedding_cache.Space] = {}
        # what identifies this model as probed without loading it (`space_identity`), and the space parts
        # remembered for that identity by an earlier run that loaded it: set by from_pretrained
        self._identity: str | None = None
        self._remembered_parts: dict | None = None
        # what the token ids of a text depend on besides the text (`tokenizer_identity`), None: not remembered
        self._tokens_identity: str | None = None
        # how a later process can load this model again (a packaged name, a Hub id or an absolute folder): recorded
        # beside its vectors for `medprobe cache verify`; None while the weights are not that model's files
        self._source: str | None = None

    def _checked(self, tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
        require_mask_token(tokenizer, self.model_name)
        if tokenizer.pad_token_id is None:
            raise UserError(f"the tokenizer of {self.model_name!r} has no padding token; batched encoding needs one")
        return tokenizer

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer; a probe made by `from_pretrained` with a warm cache loads it at the first text it has
        no remembered token ids for."""
        if self._tokenizer is None:
            assert self._deferred_tokenizer is not None  # __init__ sets one of the two
            start = time.perf_counter()
            self._tokenizer, self._deferred_tokenizer = self._checked(self._deferred_tokenizer.load()), None
            self._add_time("load_model", start)
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self._tokenizer, self._deferred_tokenizer = self._checked(tokenizer), None

    @property
    def mask_token(self) -> str:
        return require_mask_token(self.tokenizer, self.model_name)

    def _ready(self, model: PreTrainedModel) -> PreTrainedModel:
        model = model.to(self.device, dtype=self.dtype).eval()
        check_layers(model, self.layers)
        return model

    @property
    def model(self) -> PreTrainedModel:
        """The encoder; a probe made by `from_pretrained` with a warm cache loads it at the first vector it misses."""
        if self._model is None:
            assert self._deferred is not None  # __init__ sets one of the two
            start = time.perf_counter()
            self._model, self._deferred = self._ready(self._deferred.load()), None
            self._add_time("load_model", start)
            timeline.mark("model weights loaded")
        return self._model

    @model.setter
    def model(self, model: PreTrainedModel) -> None:
        self._model, self._deferred = model, None

    @classmethod
    def from_pretrained(cls, name_or_path: str, **kwargs) -> ContrastiveProbe:
        """Load an encoder by folder, Hub id or packaged name (`minilm`)."""
        start = time.perf_counter()
        path, extra = resolve_model(name_or_path)
        folder = model_folder(path) if kwargs.get("cache", True) else None
        tokenizer = Deferred(lambda: load_tokenizer(name_or_path)) if folder is not None else load_tokenizer(name_or_path)

        def load() -> PreTrainedModel:
            from transformers import AutoModel

            check_model(name_or_path)  # a cached Hub model without a network: offline at once, as load_tokenizer does
            try:
                return AutoModel.from_pretrained(path, **extra)
            except OSError as err:
                raise FileNotFoundError(f"could not load an encoder from {name_or_path!r}: {err}") from err

        probe = cls(Deferred(load), tokenizer, model_name=name_or_path, **kwargs)
        if probe.cache:
            embedding_cache.max_bytes()  # a bad MEDPROBE_EMBEDDING_CACHE_MAX_GB fails now, not after encoding
            probe.weights_digest = model_files_digest(path)
            if probe.weights_digest is None:
                probe._cache_off = f"off: no weight files found for {name_or_path}"
            elif folder is not None:
                probe._identity = space_identity(folder, extra, probe.weights_digest, probe.layers, probe.dtype, probe.device)
                probe._remembered_parts = embedding_cache.remembered_space(embedding_cache.cache_root(), probe._identity)
                probe._tokens_identity = tokenizer_identity(folder, extra, probe.weights_digest)
                probe._source = model_source(name_or_path, path)
        # loaded now without remembered space parts (the cache cannot be read without the model), and under a
        # launch (every process must take the same path through _encode's collective steps)
        if probe._remembered_parts is None or distributed.launched():
            probe.tokenizer  # noqa: B018 (loaded now, as the model: a probe that encodes anyway fails early on a bad one)
            probe.model  # noqa: B018
        probe.timings["load_model"] = time.perf_counter() - start
        return probe

    @classmethod
    def create(
        cls,
        model: str,
        *,
        device: str = "auto",
        seed: int | None = None,
        batch_size: int = 128,
        similarity: str = "cos",
        layers: int | None = None,
        rewire_corpus: str | None = None,
        rewire_steps: int = PAPER_SETTINGS["max_steps"],
        rewire_batch_size: int = PAPER_SETTINGS["per_device_train_batch_size"],
        temperature: float = TEMPERATURE,
        dtype: str = "auto",
        rewire_learning_rate: float = PAPER_SETTINGS["learning_rate"],
        rewire_max_length: int = MAX_LENGTH,
        rewire_mask_ratio: float = MASK_RATIO,
        checkpoint_every: int | None = None,
        save_rewired: str | None = None,
        cache: bool = True,
    ) -> ContrastiveProbe:
        """The prober of `medprobe probe --prober contrastive` (the registry's options as keywords):
        loaded from `model`, then rewired on `rewire_corpus` when one is given (seeded with `seed`,
        by default the paper's, exposed as `probe.seed` for the results file)."""
        corpus = check_rewiring_options(
            rewire_corpus, checkpoint_every, save_rewired, rewire_steps, rewire_batch_size, rewire_max_length
        )
        # rewiring trains in float32 (half-precision weights would lose the small updates);
        # the rewired model is then cast to `dtype` for probing
        load_dtype = dtype if corpus is None else "float32"
        probe = cls.from_pretrained(
            model,
            similarity=similarity,
            layers=layers,
            batch_size=batch_size,
            device=device,
            dtype=load_dtype,
            cache=cache,
        )
        if corpus is None:
            return probe
        from medprobe.contrastive.rewiring import rewiring_arguments

        probing_dtype = resolve_dtype(dtype, probe.device)  # a bad --dtype fails before the rewiring
        seed = PAPER_SETTINGS["seed"] if seed is None else seed
        with tempfile.TemporaryDirectory(prefix="medprobe-rewire-") as scratch:
            training_args = rewiring_arguments(
                save_rewired or scratch,
                checkpoint_every=checkpoint_every,
                max_steps=rewire_steps,
                per_device_train_batch_size=rewire_batch_size,
                learning_rate=rewire_learning_rate,
                seed=seed,
                use_cpu=probe.device.type == "cpu",
            )
            report = probe.rewire(
                corpus,
                training_args,
                temperature=temperature,
                max_length=rewire_max_length,
                mask_ratio=rewire_mask_ratio,
                save_to=save_rewired,
            )
        print(f"rewired for {report.steps} steps in {report.seconds:.1f} s ({report.steps_per_second:.3f} steps/s)")
        if save_rewired:
            print(f"wrote the rewired model to {save_rewired} (probe it with --model {save_rewired})")
        probe.dtype, probe.model = probing_dtype, probe.model.to(dtype=probing_dtype)
        if save_rewired and cache:  # the weights are now the saved files': a probe of that folder reads these vectors
            distributed.wait_for_everyone()  # the main process saved them: every process keys its cache by the same files
            probe.cache_as_files(save_rewired)
        return probe

    def cache_as_files(self, folder: str | Path) -> None:
        """Key the disk cache by the weight files in `folder` (where this model was just saved), so that a
        later probe loading that folder reads the embeddings encoded now instead of encoding them again
        (the demo probes a rewired model twice, the second time from its --save-rewired folder)."""
        digest = model_files_digest(str(folder))
        if digest is not None:
            embedding_cache.max_bytes()  # a bad MEDPROBE_EMBEDDING_CACHE_MAX_GB fails now, as in from_pretrained
            self.weights_digest = digest
            # remembered (at the next _space) as that folder's: a probe of it reads these vectors without loading it
            self._identity = space_identity(Path(folder), {}, digest, self.layers, self.dtype, self.device)
            self._source = model_source(str(folder), str(folder))
            self._remembered_parts = None
            self._spaces.clear()

    # --- stage 1: rewiring ---------------------------------------------------------------------

    def rewire(
        self,
        corpus: str | Path | Iterable[str],
        args: TrainingArguments | None = None,
        *,
        temperature: float = TEMPERATURE,
        max_length: int = MAX_LENGTH,
        mask_ratio: float = MASK_RATIO,
        save_to: str | Path | None = None,
    ) -> RewiringReport:
        """Rewire the encoder in place on raw sentences (a text file, one a line, a MedLAMA release
        corpus by name such as "pubmed_sents_no_punkt_10k_0" (see `corpus_path`), or strings).

        `args` are the `TrainingArguments` (default: `rewiring_arguments()`, the paper's
        settings); their `seed` also draws the masked spans. With `save_to`, the rewired model
        and tokenizer are saved there, ready for `from_pretrained`.
        """
        from medprobe.contrastive.rewiring import logged_losses, rewiring_arguments, train_pairs

        start = time.perf_counter()
        if isinstance(corpus, (str, Path)):  # a file, or a MedLAMA release corpus by name (found or downloaded)
            corpus = corpus_path(corpus)
        sentences = read_sentences(corpus) if isinstance(corpus, Path) else list(corpus)
        source = str(corpus) if isinstance(corpus, Path) else "rewiring corpus"
        with tempfile.TemporaryDirectory(prefix="medprobe-rewire-") as scratch:
            if args is None:
                args = rewiring_arguments(str(save_to or scratch), use_cpu=self.device.type == "cpu")
            pairs, stats = build_pairs(sentences, self.mask_token, seed=args.seed, mask_ratio=mask_ratio)
            print(stats.summary(source))
            if not pairs:
                raise UserError(
                    f"{source} has no sentence of at least two words to rewire on "
                    f"({stats.lines:,} lines: {stats.blank:,} blank, {stats.too_short:,} too short)"
                )
            trainer, seconds = train_pairs(
                self.model,
                self.tokenizer,
                pairs,
                args,
                temperature=temperature,
                max_length=max_length,
                forward_batch_size=self.batch_size,
            )
            if save_to:
                trainer.save_model(str(save_to))
        self.model = trainer.model.to(self.device).eval()
        self._name_embeddings.clear()  # the encoder changed: cached names are stale
        if self.weights_digest is not None:  # and the weights are no longer the files': no disk cache
            self.weights_digest, self._cache_off = None, "off: rewired (the weights are not the model files')"
        self._identity = self._remembered_parts = self._source = None
        self._spaces.clear()
        self.seed = args.seed
        self.rewiring = RewiringReport(
            corpus=stats,
            steps=trainer.state.global_step,
            seconds=seconds,
            losses=logged_losses(trainer),
            settings={
                "corpus": source,
                "steps": args.max_steps,
                "batch_size": args.per_device_train_batch_size * args.world_size,  # a step's, over all processes
                "learning_rate": args.learning_rate,
                "weight_decay": args.weight_decay,
                "lr_scheduler": str(
                    args.lr_scheduler_type.value if hasattr(args.lr_scheduler_type, "value") else args.lr_scheduler_type
                ),
                "seed": args.seed,
                "temperature": temperature,
                "max_length": max_length,
                "mask_ratio": mask_ratio,
                "saved_to": str(save_to) if save_to else None,
            },
        )
        self.timings["rewire"] = time.perf_counter() - start
        return self.rewiring

    # --- stage 2: retrieval --------------------------------------------------------------------

    def encode_queries(self, queries: Sequence[str]) -> torch.Tensor:
        """[CLS] embeddings of cloze queries whose [Y] slot becomes the mask token."""
        sequences = self._token_ids(
            queries,
            f"queries, [Y] as the mask token, the mask kept within {self.query_max_length}",
            lambda: tokenize_keeping_mask(
                self.tokenizer, [fill_mask_slot(query, self.mask_token) for query in queries], self.query_max_length
            ),
        )
        return self._encode(sequences, "encoding queries")

    def _token_ids(self, texts: Sequence[str], how: str, tokenize: Callable[[], list[list[int]]]) -> Sequence[Sequence[int]]:
        """`tokenize()`, or the token ids remembered in the disk cache for these texts tokenized this way
        (`how`, with the tokenizer's identity): a warm run loads no tokenizer and tokenizes nothing."""
        if self._tokens_identity is None or self.weights_digest is None or not texts:
            return tokenize()
        root = embedding_cache.cache_root()
        key = embedding_cache.tokens_key(self._tokens_identity, how, texts)
        remembered = embedding_cache.read_tokens(root, key, len(texts))
        if remembered is not None:
            return remembered
        sequences = tokenize()
        if distributed.is_main_process():  # one process writes
            embedding_cache.write_tokens(root, key, sequences)
        return sequences

    def encode_names(self, names: Sequence[str]) -> torch.Tensor:
        """[CLS] embeddings of candidate names (one row per name)."""
        distinct, rows = self._encode_distinct_names(names)
        return distinct[torch.tensor(rows, dtype=torch.long)]

    def _encode_distinct_names(self, names: Sequence[str]) -> tuple[torch.Tensor, list[int]]:
        """Embeddings of the distinct tokenizations of `names` (first-seen order), and each name's row.

        Names that tokenize identically (e.g. differing only in case under an uncased
        vocabulary) share one embedding, so their scores tie exactly and the tie goes to the
        earlier name. Embeddings are cached by token ids until the encoder changes.
        """
        sequences = [
            tuple(ids)
            for ids in self._token_ids(
                names,
                f"names, cut at {self.name_max_length}",
                lambda: tokenize_truncated(self.tokenizer, names, self.name_max_length),
            )
        ]
        distinct = list(dict.fromkeys(sequences))
        blocks, where = self._name_embeddings.setdefault(self.layers, ([], {}))
        missing = [ids for ids in distinct if ids not in where]
        if missing:
            blocks.append(self._encode(missing, "encoding names").numpy())
            where.update((ids, (len(blocks) - 1, row)) for row, ids in enumerate(missing))
        row_of = {ids: row for row, ids in enumerate(distinct)}
        embeddings = embedding_cache.gather_rows(blocks, [where[ids] for ids in distinct])
        return torch.from_numpy(embeddings), [row_of[ids] for ids in sequences]

    def _encode(self, sequences: Sequence[Sequence[int]], desc: str) -> torch.Tensor:
        """[CLS] embeddings of token-id sequences: from the disk cache where it has them, the rest
        encoded in one `encode_cls` call and stored."""
        space = self._space()
        if space is None or not sequences:
            return self._encode_all(sequences, desc)
        keys = [tuple(ids) for ids in sequences]
        distinct = list(dict.fromkeys(keys))
        found = agreed_hits(distinct, space.positions(distinct))
        missing = [key for key in distinct if key not in found]
        if missing and self._model is None:  # the space came from remembered parts: check them against the model
            self.model  # noqa: B018 (loads it)
            if self._space() is not space:  # remembered parts that no longer fit (never expected): read again
                return self._encode(sequences, desc)
        blocks = list(space.chunks)
        if missing:
            fresh = self._encode_all(missing, desc).numpy()
            found.update((key, (len(blocks), row)) for row, key in enumerate(missing))
            blocks.append(fresh)
            space.add(missing, fresh, write=distributed.is_main_process())  # one process writes
        self._report_cache(space, len(found) - len(missing), len(found), desc)
        return torch.from_numpy(embedding_cache.gather_rows(blocks, [found[key] for key in keys]))

    def _space(self) -> embedding_cache.Space | None:
        """The disk-cache space of this model as it is probed now, or None when the disk cache is off."""
        if self.weights_digest is None:
            return None
        parts = self._remembered_parts if self._model is None else self._space_parts()
        assert parts is not None  # from_pretrained loads the model when it remembers no parts
        key = embedding_cache.space_key(parts)
        if key not in self._spaces:
            self._spaces[key] = embedding_cache.open_space(embedding_cache.cache_root(), parts)
            if self._source is not None:
                embedding_cache.remember_source(self._spaces[key].folder, self._source)
        return self._spaces[key]

    def _space_parts(self) -> dict:
        """What the space key is made of, from the loaded model (remembered for `space_identity` when there is one)."""
        import transformers

        config = self.model.config.to_dict()
        config.pop("_name_or_path", None)
        parts = {
            "weights": self.weights_digest,
            "model_class": type(self.model).__name__,
            "config": embedding_cache.space_key(config),
            "layers": self.layers,
            "dtype": dtype_name(self.dtype),
            "device": self.device.type,
            "embedding": "[CLS] of the last probed layer",
            "width": self.model.config.hidden_size,  # each chunk's embeddings are checked against it on read
            "stored_dtype": "float32",
            "chunk_format": embedding_cache.CHUNK_FORMAT,
            "encoding_version": embedding_cache.ENCODING_VERSION,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        }
        if self._identity is not None and parts != self._remembered_parts:
            embedding_cache.remember_space(embedding_cache.cache_root(), self._identity, parts)
            self._remembered_parts = parts
        return parts

    def _report_cache(self, space: embedding_cache.Space, hits: int, total: int, desc: str) -> None:
        self.timings["embedding_cache_hits"] = self.timings.get("embedding_cache_hits", 0) + hits
        self.timings["embedding_cache_misses"] = self.timings.get("embedding_cache_misses", 0) + total - hits
        root = space.folder.parent
        size, bound = embedding_cache.cache_size(root), embedding_cache.max_bytes()
        print(
            f"embedding cache: {hits:,} of {total:,} {desc.split()[-1]} from {root} (space {space.key[:8]}…, "
            f"{embedding_cache.describe_size(size)} of {embedding_cache.describe_size(bound)})"
        )

    def _encode_all(self, sequences: Sequence[Sequence[int]], desc: str) -> torch.Tensor:
        return encode_cls(
            self.model,
            sequences,
            pad_id=self.tokenizer.pad_token_id,
            batch_size=self.batch_size,
            device=self.device,
            layers=self.layers,
            desc=desc,
            show_progress=self.show_progress,
        )

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[Ranked]:
        """The `k` candidates closest to each query with their similarity, best first; ties go to the earlier
        candidate."""
        if not candidates:
            raise UserError("the answer space is empty: there are no candidate names to rank")
        start = time.perf_counter()
        distinct, rows = self._encode_distinct_names(candidates)
        names_of_row: list[list[str]] = [[] for _ in range(len(distinct))]  # names that tokenize alike share a row
        for name, row in zip(candidates, rows):
            names_of_row[row].append(name)
        self._add_time("encode_candidates", start)
        timeline.mark("candidate names encoded")
        start = time.perf_counter()
        query_embeddings = self.encode_queries(queries)
        self._add_time("encode_queries", start)
        timeline.mark("queries encoded; search starts")
        start = time.perf_counter()
        top, found, misses = search_scored(query_embeddings, distinct, k, similarity=self.similarity)
        ranked = [first_names(best, names_of_row, k, row) for best, row in zip(top.tolist(), found.tolist())]
        self._add_time("search", start)
        self.warn_if_rounding_ranks(misses, len(queries), k)
        timeline.mark("search done")
        return ranked

    def score_candidates(self, queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One score per candidate of each query, higher = closer: the cosine similarity of the
        [CLS] vectors, or with `similarity="l2"` the negative squared L2 distance.

        Every distinct name is encoded once (and cached), however many lists hold it; a chunk of
        queries is scored against all of them at once and each query keeps its own candidates'
        scores, so `rank` and ranking by these scores agree.
        """
        check_candidate_lists(queries, candidates)
        lists = [list(names) for names in candidates]
        names = list(dict.fromkeys(name for names in lists for name in names))
        if not names:
            return [np.zeros(0, dtype=np.float32) for _ in lists]
        start = time.perf_counter()
        distinct, rows = self._encode_distinct_names(names)
        row_of = dict(zip(names, rows))
        self._add_time("encode_candidates", start)
        start = time.perf_counter()
        query_embeddings = self.encode_queries(queries)
        self._add_time("encode_queries", start)
        start = time.perf_counter()
        prepared, squared_norms = prepare_candidates(distinct, self.similarity)
        results: list[np.ndarray] = []
        with torch.inference_mode():
            for first in range(0, len(lists), SCORE_CHUNK):
                chunk = query_embeddings[first : first + SCORE_CHUNK]
                block = scores(chunk, prepared, squared_norms, self.similarity)
                if self.similarity == "l2":  # scores() leaves out -||q||^2, which orders nothing within a row
                    block = block - (chunk * chunk).sum(-1, keepdim=True)
                block = block.float().cpu().numpy()
                for row_scores, names_of_query in zip(block, lists[first : first + SCORE_CHUNK]):
                    results.append(row_scores[[row_of[name] for name in names_of_query]])
        self._add_time("score_candidates", start)
        return results

    def warn_if_rounding_ranks(self, misses: int, queries: int, k: int) -> None:
        """Say so when float rounding, not the model, picks the top k of many queries (`search.below_resolution`):
        such a ranking, and its acc@k, changes with the CPU's matrix kernels, the library versions and the dtype."""
        self.timings["queries_ranked_below_float32_resolution"] = (
            self.timings.get("queries_ranked_below_float32_resolution", 0) + misses
        )
        if queries and misses / queries >= ROUNDING_WARN_SHARE:
            layers = f" with its first {self.layers} layers" if self.layers else ""
            warnings.warn(
                f"{self.model_name}{layers}: for {misses:,} of {queries:,} queries the {k}th and {k + 1}th best names score "
                "less than one float32 step apart, so rounding, not the model, picks their top "
                f"{k}; acc@{k} will differ on another CPU or library version (the [CLS] vectors barely differ between texts)",
                stacklevel=2,
            )

    def _add_time(self, phase: str, start: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - start

    @property
    def settings(self) -> dict:
        """What the results file records about this prober."""
        settings = {
            "similarity": self.similarity,
            "layers": self.layers,
            "embedding": "[CLS] of the last (probed) layer",
            "query_max_length": self.query_max_length,
            "name_max_length": self.name_max_length,
            "rewired": self.rewiring is not None,
            "batch_size": self.batch_size,
            "dtype": dtype_name(self.dtype),
            "embedding_cache": "on" if self.weights_digest is not None else self._cache_off,
        }
        if self.rewiring is not None:
            settings["rewiring"] = {
                **self.rewiring.settings,
                "steps_done": self.rewiring.steps,
                "corpus_counts": self.rewiring.corpus.as_dict(),
                "losses": self.rewiring.losses,
                "steps_per_second": round(self.rewiring.steps_per_second, 4),
            }
        return settings


def first_names(rows: list[int], names_of_row: list[list[str]], k: int, scores: list[float]) -> Ranked:
    """The first `k` names of the rows found, in order, each with its row's score (a row holds every name that
    tokenizes alike: they share one embedding, hence one score)."""
    names: Ranked = []
    for row, score in zip(rows, scores):
        names += [(name, score) for name in names_of_row[row]]
        if len(names) >= k:
            break
    return names[:k]


def agreed_hits(keys: list[tuple[int, ...]], found: dict) -> dict:
    """Under a launch, the hits every process has: encode_cls is collective, so all processes must
    encode the same missing texts (their caches can differ when another run writes meanwhile)."""
    if not distributed.launched():
        return found
    hit_everywhere = [all(flags) for flags in zip(*distributed.gather([[key in found for key in keys]]))]
    return {key: found[key] for key, hit in zip(keys, hit_everywhere) if hit}


def model_files_digest(path: str) -> str | None:
    """The content hash of the weight files of a model folder or of a Hub model's cached snapshot
    (`resolve_model`'s path), None when there are none to hash (then the disk cache stays off)."""
    folder = model_folder(path)
    return None if folder is None else embedding_cache.weights_digest(folder, embedding_cache.cache_root())


def model_source(name_or_path: str, path: str) -> str:
    """How to name a model (`path`: what resolve_model made of `name_or_path`) so that another process, in another
    folder, loads it again: a local folder as an absolute path, a packaged name or a Hub id as given."""
    folder = Path(path)
    local = folder == Path(name_or_path).expanduser() and folder.is_dir()  # not a packaged model's folder
    return str(folder.resolve()) if local else name_or_path


def model_folder(path: str) -> Path | None:
    """A model folder, or the Hub cache's snapshot of a Hub id (None: not cached)."""
    folder = Path(path).expanduser()
    if not folder.is_dir():  # a Hub id: the snapshot transformers loaded from the Hub cache
        from huggingface_hub import try_to_load_from_cache

        config = try_to_load_from_cache(path, "config.json")
        if not isinstance(config, str):
            return None
        folder = Path(config).parent
    return folder


TOKENIZATION_VERSION = 1  # bump when tokenize_keeping_mask / tokenize_truncated change the ids of a text


def tokenizer_identity(folder: Path, extra: dict, weights: str) -> str:
    """A digest of what the tokenizer loaded from `folder` depends on: every file of the folder but the
    weights (the tokenizer files and the configs, whatever the tokenizer class reads), the weights digest
    (a GGUF file holds its tokenizer), the load options and the versions of transformers, tokenizers and
    medprobe's tokenization."""
    digest = hashlib.sha256(f"{weights}\n".encode())
    weight_files = set(embedding_cache.weight_files(folder))
    others = [path for path in folder.iterdir() if path.is_file() and path not in weight_files]
    # remembered per file as the weights are: a folder that also holds other formats' weights (tf_model.h5) is read once
    files = embedding_cache.file_digests(others, embedding_cache.cache_root())
    digest.update(json.dumps(files, sort_keys=True).encode())
    versions = {name: importlib.metadata.version(name) for name in ("transformers", "tokenizers")}
    digest.update(json.dumps([extra, versions, TOKENIZATION_VERSION], sort_keys=True, default=str).encode())
    return digest.hexdigest()


def space_identity(folder: Path, extra: dict, weights: str, layers: int | None, dtype: torch.dtype, device: torch.device) -> str:
    """A digest of everything the embedding space of `AutoModel.from_pretrained(folder, **extra)` depends on,
    read without loading it: the weights digest, the config file's bytes (AutoModel picks the class from
    it), the probed layers, dtype, device type and library versions. A run that loaded the model remembers
    the space parts under it (embedding_cache.remember_space), so a later run reads its vectors unloaded."""
    config = folder / "config.json"
    parts = {
        "weights": weights,
        "config_sha256": sha256_file(config) if config.is_file() else None,
        "load_options": extra,
        "layers": layers,
        "dtype": dtype_name(dtype),
        "device": device.type,
        "torch": torch.__version__,
        "transformers": importlib.metadata.version("transformers"),
        "encoding_version": embedding_cache.ENCODING_VERSION,
        "chunk_format": embedding_cache.CHUNK_FORMAT,
    }
    return json_digest(parts)


def check_rewiring_options(
    corpus: str | None,
    checkpoint_every: int | None,
    save_rewired: str | None,
    steps: int,
    batch_size: int,
    max_length: int,
) -> Path | None:
    """Option errors that must stop the run before the model is loaded; the corpus file to rewire on
    (a release corpus given by name is found or downloaded now, also before the model loads)."""
    if checkpoint_every and not save_rewired:
        raise UserError("--checkpoint-every needs --save-rewired DIR: the checkpoints are written under DIR")
    if not corpus:
        given = [flag for flag, value in (("--save-rewired", save_rewired), ("--checkpoint-every", checkpoint_every)) if value]
        if given:
            raise UserError(f"{' and '.join(given)} need(s) --rewire-corpus FILE: there is nothing to rewire without a corpus")
        return None
    for flag, value in (("--rewire-steps", steps), ("--rewire-batch-size", batch_size), ("--rewire-max-length", max_length)):
        if value < 1:
            raise UserError(f"{flag} must be a positive integer, got {value}")
    return corpus_path(corpus)
