"""Pure, deterministic simulations (stdlib only), one package per explainer; the contract they
implement is in :mod:`app.sim.core`. ``app/explainers.py`` pairs each with its web view."""
