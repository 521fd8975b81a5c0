"""The sharpening paper (Vashisht & Ramaswamy, ICML 2026): model, data, theory.

- ``model``      one-layer self-attention, CACO / CAFO / FACO / FAFO, QK and OV parameter groups
- ``data``       distinct/common-token task: sampled datasets and the exact population
- ``reduction``  the full model's two-scalar manifold (a, b), its constants, full vs reduced flow
- ``reduced``    the reduced (a, b) ODE, potentials Φ, Ψ (Theorem 3), growth laws (Theorem 4)
- ``growth``     fitted growth rates of long reduced trajectories
- ``mechanism``  attention mass at matched loss on three levels (Corollary 5)
- ``symbolic``   sympy derivations (Lemma 1, Proposition 2, Theorems 3–4, Corollary 5)
- ``rescaling``  Lemma 1 numerics;  ``contracts``  every page's parameter contract
- ``targets``    every spec number a page or test compares with
"""
