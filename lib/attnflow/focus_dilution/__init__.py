"""Focus–dilution chapter (Chen, Lin, Xu, Luo; spec ``shared/papers/focus_dilution.md``).

Theory modules:

- ``chain``         Markov chains: the hub + low-frequency family (§5.2), Dirichlet and user chains
                    with validation, stationary distribution, sampled sequences.
- ``model``         the one-layer transformer (W0, WQ, WK, W1): exact population loss (torch,
                    float64), its closed-form gradient (§4.3), finite-sequence forward and loss.
- ``closed_forms``  σ0, θ_c¹, g, ∂κA, M⊥, L(θ_c²) (R1–R5).
- ``symbolic``      the sympy derivations behind them, returned with their residuals.
- ``measure``       stage quantities along a trajectory and stage-detection helpers.
- ``spectrum``      the flow's Jacobian at a critical point, by block; the redistribution drive.
- ``runs``          population gradient flows (BDF + autograd Jacobian), Euler, projections.
- ``escape``        escape statistics of the δ-sweep and the Lyapunov–Schmidt limit.
- ``transverse``    R5's transverse forecast from a named earlier state (drive, growing mode, gain to the
                    horizon) and the domains it gives the escape claims.
- ``contracts``, ``pagesetup``, ``targets``  page parameters (every page's schema), the pages' set-up
  (one seeding policy) and the spec's regression targets.

Training, data and analysis modules:

- ``samples``       training data: sampled sequences of a chain (``MarkovSequences``, count-only
                    ``MarkovContexts``), their sufficient statistics and the example rows.
- ``training``      finite-sample training of the model on those data (batched runs, full-batch GD or Adam).
- ``fused``         the counts-form loss with its gradient in one written-out pass (what ``training`` trains
                    through; autograd of ``training.run_losses`` is the reference).
- ``stages``        the stage detector of the focus–dilution cycle (no hand-picked times).
- ``pca``           PCA of the embedding trajectories h_k(t).
- ``realtext``      the model on real text and its Markov (bigram) approximation.
- ``figures``       figure functions of the pages, taking run records (first: ``condensation_stage``).
"""
