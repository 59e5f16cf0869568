"""``stepscope record``: record a real kernel's tracepoints (tracefs, a private instance) into
one JSON file the app imports (docs/recording-format.md). Generic: names no explainer."""
