"""Pure, deterministic simulations (stdlib only). See app/sim/registry.py for the explainer list."""
