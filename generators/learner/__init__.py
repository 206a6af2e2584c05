"""A reference learner: fine-tune a small model on an export, serve it, measure it in the phone.

Optional: it needs the ``train`` extra (torch, transformers, TRL, PEFT). Nothing else in the
project imports it.
"""
