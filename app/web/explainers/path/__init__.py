"""Web half of the packet-path explainer."""
