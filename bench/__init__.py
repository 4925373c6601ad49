"""``make bench``: attnlib measured side by side with PyTorch and d2l 1.0.3.

``python -m bench`` runs every part and writes ``results/bench.json`` and
``results/bench.md``; ``python -m bench --quick`` is a fast partial run (small
sizes, no notebooks). The parts, each a module with a ``run(...)`` function:

==================  ==============================================================
:mod:`.attention`   attention core and full multi-head modules, forward and
                    forward+backward, n = 16 .. 4096, no mask / padding / causal
:mod:`.training`    training steps/s and tokens/s at the book's model sizes
:mod:`.notebooks`   wall time of every chapter notebook, executed headless
:mod:`.limit`       achieved GFLOP/s of the attention core against a large matmul
==================  ==============================================================

Two scripts of their own: ``python -m bench.gpu_kernels`` (the kernels one forward launches on
a GPU) and ``python -m bench.contract_cost`` (what two rules of attnlib's masking contract cost).

Candidates are measured alternately in one loop (one call each per round, in a balanced
order: :func:`.common.turn_orders`), so that load from other processes hits all of them alike and the
ratios stay fair even when absolute times are noisy.
"""
