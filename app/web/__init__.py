"""HTTP layer: pages, htmx fragments and the JSON API over the pure simulations."""
