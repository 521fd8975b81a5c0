"""The sharpening paper (Vashisht & Ramaswamy, ICML 2026): model, data, theory, experiments.

- ``model``       one-layer self-attention, CACO / CAFO / FACO / FAFO, QK and OV parameter groups; the
                  one output type ``Output`` and the one W_QK/W_OV collapse ``effective_circuits``
- ``data``        distinct/common-token task: sampled datasets and the exact population
- ``reduction``   the full model's two-scalar manifold (a, b), its constants, full vs reduced flow
- ``reduced``     the reduced (a, b) ODE, potentials Φ, Ψ (Theorem 3), growth laws (Theorem 4)
- ``growth``      fitted growth rates of long reduced trajectories
- ``mechanism``   attention mass at matched loss on three levels (Corollary 5)
- ``symbolic``    sympy derivations (Lemma 1, Proposition 2, Theorems 3–4, Corollary 5)
- ``rescaling``   Lemma 1 numerics
- ``stack``       P models with stacked parameters, one batched forward (``ModelStack``, ``ModelSpec``)
- ``metrics``     attention-interpretability metrics: relevant attention, confidence, DTAP, AC/ACMC, ERASER
- ``experiments`` synthetic sweeps: build, train together (``attnflow.sweep``), evaluate (spec §7.1, §8.2)
- ``realdata``    the model on real data (learned embeddings), its sweeps, test metrics and paired changes
                  over r (spec §7.2–7.3)
- ``figures``     figure functions of the pages, each taking run records
- ``contracts``   every page's parameter contract
- ``targets``     every spec number a page or test compares with
"""
