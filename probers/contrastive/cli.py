"""`medprobe probe --prober contrastive`: build the prober from the command line, rewiring first if asked."""

from __future__ import annotations

import argparse
import tempfile

from probers.contrastive.rewiring import PAPER_SETTINGS, rewiring_arguments
from probers.api import UserError


def check_rewiring_arguments(args: argparse.Namespace) -> None:
    """Argument errors that must stop the run before the model is loaded."""
    if args.checkpoint_every and not args.save_rewired:
        raise UserError("--checkpoint-every needs --save-rewired DIR: the checkpoints are written under DIR")
    if not args.rewire_corpus:
        given = [flag for flag, value in (("--save-rewired", args.save_rewired), ("--checkpoint-every", args.checkpoint_every)) if value]
        if given:
            raise UserError(f"{' and '.join(given)} need(s) --rewire-corpus FILE: there is nothing to rewire without a corpus")
        return
    for flag, value in (("--rewire-steps", args.rewire_steps), ("--rewire-batch-size", args.rewire_batch_size),
                        ("--rewire-max-length", args.rewire_max_length)):  # fmt: skip
        if value < 1:
            raise UserError(f"{flag} must be a positive integer, got {value}")


def prober_from_args(args: argparse.Namespace):
    from probers.contrastive.prober import ContrastiveProbe

    if not args.model:
        raise UserError("--prober contrastive needs --model (a model folder, a Hub id, or 'minilm')")
    check_rewiring_arguments(args)
    probe = ContrastiveProbe.from_pretrained(
        args.model, similarity=args.similarity, layers=args.layers, batch_size=args.batch_size, device=args.device
    )
    if args.rewire_corpus:
        if args.seed is None:
            args.seed = PAPER_SETTINGS["seed"]  # recorded in the results file: rewiring is seeded
        with tempfile.TemporaryDirectory(prefix="medprobe-rewire-") as scratch:
            training_args = rewiring_arguments(
                args.save_rewired or scratch,
                checkpoint_every=args.checkpoint_every,
                max_steps=args.rewire_steps,
                per_device_train_batch_size=args.rewire_batch_size,
                learning_rate=args.rewire_learning_rate,
                seed=args.seed,
                use_cpu=probe.device.type == "cpu",
            )
            report = probe.rewire(
                args.rewire_corpus, training_args, temperature=args.temperature, max_length=args.rewire_max_length,
                mask_ratio=args.rewire_mask_ratio, save_to=args.save_rewired,
            )  # fmt: skip
        print(f"rewired for {report.steps} steps in {report.seconds:.1f} s ({report.steps_per_second:.3f} steps/s)")
        if args.save_rewired:
            print(f"wrote the rewired model to {args.save_rewired} (probe it with --model {args.save_rewired})")
    return probe
