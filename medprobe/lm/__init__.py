"""Language-model probers (masked LM, causal LM, seq2seq) and the Trainer-based probers, with their model loading."""
